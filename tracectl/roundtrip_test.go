package tracectl

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/internal/corpus"
	"github.com/rvtrace/rvtrace/ntrace"
)

// loadT1 returns the image and executed PCs of the N-Trace reference
// code's t1 test.
func loadT1(t testing.TB) (*image.Set, []byte, []uint64) {
	img := image.NewSet()
	if err := img.AddELF(corpus.Path(t, "ntrace-refcode/t1/test.elf")); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(corpus.Path(t, "ntrace-refcode/t1/test-PCONLY.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var pcs []uint64
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		pc, err := ingress.ParsePC(string(line))
		if err != nil {
			t.Fatal(err)
		}
		pcs = append(pcs, pc)
	}
	return img, data, pcs
}

// feed drives the encoder with the ingress blocks of the PC list.
func feed(t testing.TB, img *image.Set, pcs []byte, sink interface {
	Block(*ingress.Block) error
}) {
	src := ingress.NewPCSource(bytes.NewReader(pcs), "test-PCONLY.txt", img, ingress.PCOptions{})
	for {
		b, err := src.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := sink.Block(b); err != nil {
			t.Fatal(err)
		}
	}
}

// pcCollector records the decoded PCs and the gaps.
type pcCollector struct {
	img   *image.Set
	pcs   []uint64
	gaps  []error
	gapAt []int // len(pcs) at each gap
}

func (c *pcCollector) Event(e *flow.Event) error {
	switch e.Kind {
	case flow.KindRange:
		for pc := e.Start; ; {
			c.pcs = append(c.pcs, pc)
			if pc == e.Last {
				break
			}
			in, ok := c.img.Inst(pc)
			if !ok {
				return errors.New("range outside the image")
			}
			pc += uint64(in.Len)
		}
	case flow.KindGap:
		c.gaps = append(c.gaps, e.Err)
		c.gapAt = append(c.gapAt, len(c.pcs))
	}
	return nil
}

func (c *pcCollector) Close() error { return nil }

func decodeNTrace(t testing.TB, img *image.Set, trace []byte, cfg ntrace.Config) *pcCollector {
	c := &pcCollector{img: img}
	if len(trace) == 0 {
		return c // nothing traced (the decoder refuses an empty trace)
	}
	d, err := ntrace.NewDecoder(img, c, ntrace.DecoderConfigFrom(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Decode(bytes.NewReader(trace)); err != nil {
		t.Fatal(err)
	}
	return c
}

// program sets up sink (SRAM, or SMEM when smem), funnel and encoder 0
// for N-Trace HTM with implicit return and repeated history through the
// registers, following "Enabling and Disabling", and returns the
// encoder's trTeControl value with tracing on.
func program(t testing.TB, b bus, sramLimit uint32, stopOnWrap bool, syncMax int) uint32 {
	releaseAll(t, b, len(b.s.Encoders))
	// RAM sink: SRAM mode, buffer trimmed to sramLimit, WP at the start.
	ctl := uint32(1)
	if stopOnWrap {
		ctl |= 1 << 8
	}
	b.w(ram, ctl)
	if b.r(ram)&(1<<8) == 0 && stopOnWrap {
		t.Fatal("trRamStopOnWrap not kept")
	}
	b.w(ram+0x18, sramLimit)
	b.w(ram+0x20, b.r(ram+0x10))
	b.w(ram, ctl|2)
	// funnel: all inputs
	b.w(fun+8, 0)
	b.w(fun, 3)
	// encoder: features, then mode and format, then enable, then tracing
	const features = 1<<3 | 3<<6 | 1<<8 // implicit return (full compare), repeated history
	b.w(enc0+8, features)
	if v := b.r(enc0 + 8); v != features {
		t.Fatalf("trTeInstFeatures = %#x, want %#x", v, features)
	}
	b.w(enc0+0xC, 0) // no filters
	ec := uint32(1 | 6<<4 | 1<<24)
	if syncMax >= 0 {
		ec |= 1<<16 | uint32(syncMax)<<20 // periodic sync counting messages
	}
	b.w(enc0, ec)
	b.w(enc0, ec|2)
	if b.r(enc0)&2 == 0 {
		t.Fatalf("trTeEnable not set: %v", b.s.Encoders[0].Err())
	}
	b.w(enc0, ec|2|4)
	return ec | 2 | 4
}

// disableAll disables encoder, funnel and sink in that order, waiting for
// Enable = 0 and Empty = 1.
func disableAll(t testing.TB, b bus) {
	for _, a := range []uint64{enc0, fun, ram} {
		b.w(a, b.r(a)&^2)
		if v := b.r(a); v&2 != 0 || v&8 == 0 {
			t.Fatalf("%#x: Enable=%d Empty=%d after disabling", a, v>>1&1, v>>3&1)
		}
	}
}

// Program encoder, funnel and SRAM sink through the registers, trace t1,
// read the capture back through trRamRPLow/trRamData and decode it to
// exactly the executed flow.
func TestRoundTripSRAM(t *testing.T) {
	img, pcData, want := loadT1(t)
	s, err := NewSystem(1, img, 64<<10, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := bus{t, s}
	program(t, b, 0xFFFFFFFF, false, -1)
	set, err := s.Encoders[0].Settings()
	if err != nil {
		t.Fatal(err)
	}
	if set.NTrace.Mode != ntrace.HTM || set.NTrace.ImplicitReturn != ntrace.ReturnFull || !set.NTrace.RepeatedHistory {
		t.Fatalf("settings %+v do not follow the registers", set.NTrace)
	}
	feed(t, img, pcData, s.Encoders[0])
	// The encoder still buffers its messages: trTeEmpty reads 0.
	if b.r(enc0)&8 != 0 {
		t.Errorf("trTeEmpty = 1 with messages buffered")
	}
	disableAll(t, b)
	if b.r(ram+0x20)&1 != 0 {
		t.Fatal("trRamWrap set: the buffer is too small for the test")
	}
	capture, err := ReadTrace(b.s, ram, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(capture) != int(b.r(ram+0x20)) || len(capture)%4 != 0 {
		t.Errorf("capture of %d bytes, trRamWP %#x", len(capture), b.r(ram+0x20))
	}
	direct, err := s.Sink.Capture()
	if err != nil || !bytes.Equal(direct, capture) {
		t.Errorf("Capture differs from the register read-back (err %v)", err)
	}
	// The capture is the trace the encoder writes on its own, padded to a
	// word with idle bytes.
	var ref bytes.Buffer
	enc, err := ntrace.NewEncoder(&ref, set.NTrace)
	if err != nil {
		t.Fatal(err)
	}
	feed(t, img, pcData, enc)
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	pad := bytes.Repeat([]byte{0xFF}, (4-ref.Len()%4)%4)
	if !bytes.Equal(capture, append(ref.Bytes(), pad...)) {
		t.Errorf("capture (%d bytes) is not the encoder's trace (%d bytes) padded to a word", len(capture), ref.Len())
	}
	got := decodeNTrace(t, img, capture, set.NTrace)
	if len(got.gaps) > 0 {
		t.Errorf("gaps: %v", got.gaps)
	}
	if !equalPCs(got.pcs, want) {
		t.Errorf("decoded %d instructions, executed %d; first difference at %d", len(got.pcs), len(want), firstDiff(got.pcs, want))
	}
}

func equalPCs(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func firstDiff(a, b []uint64) int {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

// A buffer smaller than the trace wraps: trRamWrap is set, the capture is
// the last buffer-size bytes of the trace, oldest first, and decoding from
// the first sync gives exactly the end of the executed flow.
func TestRoundTripWrapped(t *testing.T) {
	img, pcData, want := loadT1(t)
	s, err := NewSystem(1, img, 64<<10, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := bus{t, s}
	const limit = 0x3FC // a 1 KiB buffer
	program(t, b, limit, false, 0)
	set, _ := s.Encoders[0].Settings()
	feed(t, img, pcData, s.Encoders[0])
	disableAll(t, b)
	if b.r(ram+0x20)&1 == 0 {
		t.Fatal("trRamWrap not set")
	}
	capture, err := ReadTrace(b.s, ram, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(capture) != limit+4 {
		t.Fatalf("wrapped capture of %d bytes, want %d", len(capture), limit+4)
	}
	var ref bytes.Buffer
	enc, _ := ntrace.NewEncoder(&ref, set.NTrace)
	feed(t, img, pcData, enc)
	enc.Close()
	full := append(ref.Bytes(), bytes.Repeat([]byte{0xFF}, (4-ref.Len()%4)%4)...)
	if !bytes.Equal(capture, full[len(full)-len(capture):]) {
		t.Errorf("wrapped capture is not the last %d bytes of the trace", len(capture))
	}
	got := decodeNTrace(t, img, capture, set.NTrace)
	if len(got.pcs) == 0 {
		t.Fatal("nothing decoded from the wrapped capture")
	}
	for i, g := range got.gaps {
		if got.gapAt[i] > 0 {
			t.Errorf("gap after %d instructions: %v", got.gapAt[i], g)
		} else {
			// the oldest message is incomplete (the specification's note on trRamWrap)
			t.Logf("leading gap: %v", g)
		}
	}
	tail := want[len(want)-len(got.pcs):]
	if !equalPCs(got.pcs, tail) {
		t.Errorf("decoded %d instructions are not the end of the executed flow (first difference at %d)", len(got.pcs), firstDiff(got.pcs, tail))
	}
	t.Logf("wrapped 1 KiB capture decodes to the last %d of %d instructions", len(got.pcs), len(want))
}

// With trRamStopOnWrap the sink stops when the buffer is full: trRamEnable
// reads 0, the capture is the start of the trace, and the encoder reports
// the lost trace in trTeInstStallOrOverflow.
func TestStopOnWrap(t *testing.T) {
	img, pcData, _ := loadT1(t)
	s, err := NewSystem(1, img, 64<<10, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := bus{t, s}
	const limit = 0x1FC
	program(t, b, limit, true, -1)
	set, _ := s.Encoders[0].Settings()
	feed(t, img, pcData, s.Encoders[0])
	// flush the encoder: its bytes reach the stopped sink
	ec := b.r(enc0)
	b.w(enc0, ec&^2)
	if b.r(ram)&2 != 0 {
		t.Error("trRamEnable still 1 after the buffer filled")
	}
	if b.r(enc0)&(1<<12) == 0 {
		t.Error("trTeInstStallOrOverflow not set after the sink dropped trace")
	}
	b.w(fun, 1)
	b.w(ram, b.r(ram)&^2)
	capture, err := ReadTrace(b.s, ram, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ref bytes.Buffer
	enc, _ := ntrace.NewEncoder(&ref, set.NTrace)
	feed(t, img, pcData, enc)
	enc.Close()
	if len(capture) != limit+4 || !bytes.Equal(capture, ref.Bytes()[:limit+4]) {
		t.Errorf("stop-on-wrap capture (%d bytes) is not the first %d bytes of the trace", len(capture), limit+4)
	}
	// Re-enabling the encoder clears trTeInstStallOrOverflow.
	b.w(enc0, ec)
	if b.r(enc0)&(1<<12) != 0 {
		t.Error("trTeInstStallOrOverflow not cleared by trTeEnable = 1")
	}
}

// Clearing trTeInstTracing stops the trace (the encoder reports the stop)
// and setting it again restarts it with a sync: the capture decodes to
// the executed flow without the blocks given while tracing was off, with
// no gap.
func TestTracingOffOn(t *testing.T) {
	img, pcData, want := loadT1(t)
	s, err := NewSystem(1, img, 64<<10, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := bus{t, s}
	ec := program(t, b, 0xFFFFFFFF, false, -1)
	src := ingress.NewPCSource(bytes.NewReader(pcData), "pcs", img, ingress.PCOptions{})
	var traced []uint64
	for n := 0; ; n++ {
		blk, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch n {
		case 3000:
			b.w(enc0, ec&^4)
			if b.r(enc0)&4 != 0 {
				t.Fatal("trTeInstTracing still 1")
			}
		case 5000:
			b.w(enc0, ec)
		}
		if n < 3000 || n >= 5000 {
			for pc, i := blk.IAddr, uint32(0); i < blk.IRetire; {
				in, _ := img.Inst(pc)
				traced = append(traced, pc)
				pc += uint64(in.Len)
				i += uint32(in.Len / 2)
			}
		}
		if err := s.Encoders[0].Block(blk); err != nil {
			t.Fatal(err)
		}
	}
	disableAll(t, b)
	capture, err := ReadTrace(s, ram, nil)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := s.Encoders[0].Settings()
	got := decodeNTrace(t, img, capture, set.NTrace)
	if len(got.gaps) > 0 {
		t.Errorf("gaps: %v", got.gaps)
	}
	if len(traced) >= len(want) || !equalPCs(got.pcs, traced) {
		t.Errorf("decoded %d instructions, traced %d (of %d); first difference at %d", len(got.pcs), len(traced), len(want), firstDiff(got.pcs, traced))
	}
}

// trTeInstFilters qualifies the trace: a filter matching the hart's
// privilege (M) lets everything through, one matching only U nothing, and
// a selected filter that is not enabled matches nothing.
func TestFilterQualifies(t *testing.T) {
	img, pcData, want := loadT1(t)
	for _, c := range []struct {
		name   string
		ctl    uint32 // trTeFilter0Control
		privs  uint32 // trTeFilter0MatchInst
		traced bool
	}{
		{"priv M", 1 | 1<<1, 1 << 3, true},
		{"priv U", 1 | 1<<1, 1 << 0, false},
		{"not enabled", 1 << 1, 1 << 3, false},
	} {
		s, err := NewSystem(1, img, 64<<10, nil)
		if err != nil {
			t.Fatal(err)
		}
		b := bus{t, s}
		ec := program(t, b, 0xFFFFFFFF, false, -1)
		// filters are set up before enabling (Enabling and Disabling)
		b.w(enc0, ec&^6)
		b.w(enc0+0x404, c.privs)
		b.w(enc0+0x400, c.ctl)
		b.w(enc0+0xC, 1)
		b.w(enc0, ec)
		feed(t, img, pcData, s.Encoders[0])
		disableAll(t, b)
		capture, err := ReadTrace(s, ram, nil)
		if err != nil {
			t.Fatal(err)
		}
		set, _ := s.Encoders[0].Settings()
		got := decodeNTrace(t, img, capture, set.NTrace)
		if c.traced && !equalPCs(got.pcs, want) || !c.traced && len(got.pcs) != 0 {
			t.Errorf("%s: %d instructions traced of %d (%d bytes)", c.name, len(got.pcs), len(want), len(capture))
		}
	}
}

// Trace lost on the way to the sink (here the funnel is disabled while the
// encoder flushes, against the enabling order) is reported in the trace:
// the encoder discards the rest of its output, and when it can send again
// writes an Error message (FIFO overrun) and restarts with SYNC=7, so the
// decoder reports a gap instead of decoding across the hole.
func TestLostTraceReported(t *testing.T) {
	for _, format := range []uint32{FormatNTrace, FormatETrace} {
		t.Run(map[uint32]string{FormatNTrace: "ntrace", FormatETrace: "etrace"}[format], func(t *testing.T) {
			testLostTrace(t, format)
		})
	}
}

func testLostTrace(t *testing.T, format uint32) {
	img, pcData, _ := loadT1(t)
	s, err := NewSystem(1, img, 256<<10, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := bus{t, s}
	ec := program(t, b, 0xFFFFFFFF, false, -1)
	ec = ec&^(7<<4|7<<24) | 3<<4 | format<<24 // N-Trace BTM: about 13 KB per pass of t1
	b.w(enc0, ec&^6)
	b.w(enc0, ec)
	// t1 run 12 times in a row: one flow (the jumps back to the start are
	// reported as traps by the PC reader)
	all := bytes.Repeat(pcData, 12)
	var executed []uint64
	for _, line := range bytes.Split(all, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) > 0 {
			pc, _ := ingress.ParsePC(string(line))
			executed = append(executed, pc)
		}
	}
	src := ingress.NewPCSource(bytes.NewReader(all), "pcs", img, ingress.PCOptions{})
	e := s.Encoders[0]
	state := 0 // 0: until the first flush reached the sink; 1: funnel off until trace is lost; 2: funnel on again
	for {
		blk, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Block(blk); err != nil {
			t.Fatal(err)
		}
		switch {
		case state == 0 && b.r(ram+0x20) != 0:
			b.w(fun, 1)
			state = 1
		case state == 1 && b.r(enc0)&(1<<12) != 0:
			b.w(fun, 3)
			state = 2
		}
	}
	if state != 2 {
		t.Fatalf("state %d: the test needs a flush to reach the sink and one to be lost", state)
	}
	disableAll(t, b)
	capture, err := ReadTrace(s, ram, nil)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := s.Encoders[0].Settings()
	var got *pcCollector
	if format == FormatNTrace {
		got = decodeNTrace(t, img, capture, set.NTrace)
	} else {
		got = &pcCollector{img: img}
		d, err := etrace.NewDecoder(img, got, set.ETrace)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Decode(bytes.NewReader(capture)); err != nil {
			t.Fatal(err)
		}
	}
	if len(got.gaps) != 1 {
		t.Fatalf("gaps %v, want one", got.gaps)
	}
	t.Logf("reported after %d instructions: %v", got.gapAt[0], got.gaps[0])
	before, after := got.pcs[:got.gapAt[0]], got.pcs[got.gapAt[0]:]
	if len(before) == 0 || len(after) == 0 || !equalPCs(before, executed[:len(before)]) ||
		!equalPCs(after, executed[len(executed)-len(after):]) {
		t.Errorf("decoded %d instructions before the gap and %d after: not a prefix and a suffix of the %d executed",
			len(before), len(after), len(executed))
	}
	if len(before)+len(after) >= len(executed) {
		t.Errorf("nothing lost?")
	}
}
