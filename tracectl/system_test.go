package tracectl

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"testing"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/filter"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/ntrace"
)

// sysMem is system memory at base for the SMEM mode.
type sysMem struct {
	base uint64
	b    []byte
}

func (m *sysMem) ReadAt(p []byte, off int64) (int, error) {
	a := uint64(off) - m.base
	if uint64(off) < m.base || a+uint64(len(p)) > uint64(len(m.b)) {
		return 0, fmt.Errorf("read outside memory at %#x", off)
	}
	return copy(p, m.b[a:]), nil
}

func (m *sysMem) WriteAt(p []byte, off int64) (int, error) {
	a := uint64(off) - m.base
	if uint64(off) < m.base || a+uint64(len(p)) > uint64(len(m.b)) {
		return 0, fmt.Errorf("write outside memory at %#x", off)
	}
	return copy(m.b[a:], p), nil
}

// SMEM mode: the trace goes to a circular buffer in system memory between
// trRamStart and trRamLimit, set by the tool, and is read with memory
// reads.
func TestRoundTripSMEM(t *testing.T) {
	img, pcData, want := loadT1(t)
	mem := &sysMem{base: 0x1_8000_0000, b: make([]byte, 64<<10)}
	s, err := NewSystem(1, img, 0, mem)
	if err != nil {
		t.Fatal(err)
	}
	b := bus{t, s}
	releaseAll(t, b, 1)
	if v := b.r(ram + 4); v>>12&3 != 2 {
		t.Fatalf("trRamHasSRAM/HasSMEM = %d, want 2 (SMEM only)", v>>12&3)
	}
	if b.r(ram)>>4&1 != 1 {
		t.Fatal("trRamMode is not SMEM in an SMEM-only sink")
	}
	start := mem.base + 0x1000
	limit := start + 32<<10 - 4
	b.w(ram+0x14, uint32(start>>32))
	b.w(ram+0x10, uint32(start))
	b.w(ram+0x1C, uint32(limit>>32))
	b.w(ram+0x18, uint32(limit))
	// "the tool should try to set trRamRP?? to the same value as
	// trRamLimit??. If it is settable, it means that the trRamData register
	// should be used": not settable in SMEM mode.
	b.w(ram+0x28, uint32(limit))
	if b.r(ram+0x28) == uint32(limit) {
		t.Error("trRamRPLow settable in SMEM mode")
	}
	// trRamWP accepts any aligned value in trRamStart..trRamLimit and keeps
	// its value otherwise.
	b.w(ram+0x24, uint32(start>>32))
	b.w(ram+0x20, uint32(start))
	b.w(ram+0x20, uint32(limit+8))
	if got := uint64(b.r(ram+0x24))<<32 | uint64(b.r(ram+0x20)); got != start {
		t.Fatalf("trRamWP = %#x after writing outside the buffer, want %#x", got, start)
	}
	b.w(ram, b.r(ram)|2)
	b.w(fun, 3)
	b.w(enc0+8, 1<<3|3<<6)
	ec := uint32(1 | 3<<4 | 1<<24) // BTM
	b.w(enc0, ec)
	b.w(enc0, ec|2|4)
	set, err := s.Encoders[0].Settings()
	if err != nil {
		t.Fatal(err)
	}
	feed(t, img, pcData, s.Encoders[0])
	disableAll(t, b)
	if s.Sink.Err() != nil {
		t.Fatal(s.Sink.Err())
	}
	capture, err := ReadTrace(s, ram, mem)
	if err != nil {
		t.Fatal(err)
	}
	var ref bytes.Buffer
	enc, _ := ntrace.NewEncoder(&ref, set.NTrace)
	feed(t, img, pcData, enc)
	enc.Close()
	if !bytes.Equal(capture, append(ref.Bytes(), bytes.Repeat([]byte{0xFF}, (4-ref.Len()%4)%4)...)) {
		t.Errorf("SMEM capture (%d bytes) is not the encoder's trace (%d bytes)", len(capture), ref.Len())
	}
	if got := uint64(b.r(ram+0x24))<<32 | uint64(b.r(ram+0x20)) - start; got != uint64(len(capture)) {
		t.Errorf("trRamWP advanced by %d bytes for %d bytes of trace", got, len(capture))
	}
	got := decodeNTrace(t, img, capture, set.NTrace)
	if len(got.gaps) > 0 || !equalPCs(got.pcs, want) {
		t.Errorf("SMEM round trip: %d instructions, gaps %v", len(got.pcs), got.gaps)
	}
}

// srcCollector sorts decoded PCs by trace source.
type srcCollector map[uint32]*pcCollector

func (c srcCollector) Event(e *flow.Event) error {
	p := c[e.Src]
	if p == nil {
		return fmt.Errorf("event of unknown source %d", e.Src)
	}
	return p.Event(e)
}
func (c srcCollector) Close() error { return nil }

// Two harts' encoders with trace source IDs share the funnel and the sink;
// the decoder separates them. Disabling a funnel input discards its trace.
func TestFunnelTwoHarts(t *testing.T) {
	img, pcData, want := loadT1(t)
	for _, disable := range []bool{false, true} {
		s, err := NewSystem(2, img, 64<<10, nil)
		if err != nil {
			t.Fatal(err)
		}
		b := bus{t, s}
		releaseAll(t, b, 2)
		b.w(ram+0x20, 0)
		b.w(ram, 3)
		if disable {
			b.w(fun+8, 1<<1)
		}
		b.w(fun, 3)
		var cfg ntrace.Config
		for h := uint64(0); h < 2; h++ {
			a := enc0 + h*0x1000
			b.w(a+8, 1<<28|uint32(h)<<16) // trTeSrcBits 1, trTeSrcID h
			b.w(a, 1|3<<4|1<<24|2|4)
			set, err := s.Encoders[h].Settings()
			if err != nil {
				t.Fatal(err)
			}
			cfg = set.NTrace
		}
		// interleave the harts' blocks
		srcs := []*ingress.PCSource{
			ingress.NewPCSource(bytes.NewReader(pcData), "pcs", img, ingress.PCOptions{}),
			ingress.NewPCSource(bytes.NewReader(pcData), "pcs", img, ingress.PCOptions{}),
		}
		for done := 0; done < 2; {
			done = 0
			for h, src := range srcs {
				blk, err := src.Next()
				if err == io.EOF {
					done++
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Encoders[h].Block(blk); err != nil {
					t.Fatal(err)
				}
			}
		}
		b.w(enc0+0x1000, b.r(enc0+0x1000)&^2) // hart 1 first
		b.w(enc0, b.r(enc0)&^2)
		b.w(fun, 1)
		b.w(ram, 1)
		capture, err := ReadTrace(s, ram, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := srcCollector{0: {img: img}, 1: {img: img}}
		d, err := ntrace.NewDecoder(img, c, ntrace.DecoderConfigFrom(cfg))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Decode(bytes.NewReader(capture)); err != nil {
			t.Fatal(err)
		}
		for h := uint32(0); h < 2; h++ {
			if len(c[h].gaps) > 0 {
				t.Errorf("disable=%v hart %d: gaps %v", disable, h, c[h].gaps)
			}
			if h == 1 && disable {
				if len(c[h].pcs) != 0 {
					t.Errorf("disabled input 1: %d instructions decoded", len(c[h].pcs))
				}
				continue
			}
			if !equalPCs(c[h].pcs, want) {
				t.Errorf("disable=%v hart %d: %d instructions decoded, want %d", disable, h, len(c[h].pcs), len(want))
			}
		}
	}
}

// The registers map onto the encoders' configurations field by field.
func TestSettings(t *testing.T) {
	img := image.NewSet()
	s, err := NewSystem(1, img, 4096, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := bus{t, s}
	releaseAll(t, b, 1)
	// N-Trace BTM, context, sync every 2^(5+4) halfwords, src 3 of 4 bits,
	// sequential jumps, implicit return mode 2, all jumps, extended MSB
	b.w(enc0, 1|3<<4|1<<9|3<<16|5<<20|1<<24)
	b.w(enc0+8, 1<<2|1<<3|2<<6|1<<9|1<<10|3<<16|4<<28)
	b.w(enc0+0x40, 1|1<<1|3<<4|1<<15) // timestamps: active, counting, internal core, enabled
	set, err := s.Encoders[0].Settings()
	if err != nil {
		t.Fatal(err)
	}
	want := ntrace.Config{Mode: ntrace.BTM, SrcBits: 4, SrcID: 3, ImplicitReturn: ntrace.ReturnPartial,
		SequentialJump: true, ExtendAddrMSB: true, AllJumps: true, Timestamps: true, Context: true,
		SyncMode: ntrace.SyncHalfwords, SyncMax: 5, XLEN: img.XLEN()}
	if set.Format != FormatNTrace || !reflect.DeepEqual(set.NTrace, want) {
		t.Errorf("N-Trace settings\n got %+v\nwant %+v", set.NTrace, want)
	}
	// trTeInhibitSrc drops the source field.
	b.w(enc0, b.r(enc0)|1<<15)
	if set, _ := s.Encoders[0].Settings(); set.NTrace.SrcBits != 0 {
		t.Errorf("trTeInhibitSrc: SrcBits %d", set.NTrace.SrcBits)
	}
	// E-Trace: the N-Trace-only features read back 0, the E-Trace ones are kept.
	b.w(enc0, 1|6<<4|1<<16|2<<20|0<<24)
	if v := b.r(enc0); v>>16&3 != 1 || v>>24&7 != 0 {
		t.Fatalf("trTeControl %#x: want E-Trace with packet-counting sync", v)
	}
	if v := b.r(enc0 + 4); v>>16&0xFF != 2 {
		t.Errorf("E-Trace: trTeProtocolMajor/Minor = %#x, want 2.0", v>>16&0xFF)
	}
	if v := b.r(enc0 + 8); v&(1<<9|1<<10) != 0 {
		t.Errorf("E-Trace keeps N-Trace-only features: %#x", v)
	}
	b.w(enc0+8, 0x3F|3<<6)
	if v := b.r(enc0 + 8); v&0xFF != 0xFF {
		t.Errorf("E-Trace features %#x, want 0xff", v&0xFF)
	}
	b.w(enc0, b.r(enc0)|1<<17) // sync mode 3: not E-Trace's
	if v := b.r(enc0) >> 16 & 3; v != 1 {
		t.Errorf("E-Trace trTeInstSyncMode 3 read back as %d", v)
	}
	set, err = s.Encoders[0].Settings()
	if err != nil {
		t.Fatal(err)
	}
	if set.Format != FormatETrace {
		t.Fatalf("format %d", set.Format)
	}
	wo := etrace.Options{FullAddress: true, ImplicitException: true, SIJump: true, ImplicitReturn: true, BranchPrediction: true, JumpTargetCache: true}
	if set.ETrace.Options != wo || set.ETrace.ResyncPeriod != 1<<6 || set.ETrace.Params.NoTime || !set.ETrace.Params.NoContext {
		t.Errorf("E-Trace settings %+v", set.ETrace)
	}
}

// Filters and comparators map onto the filter stage.
func TestFilterSettings(t *testing.T) {
	s, b := newTestSystem(t, 1, 4096)
	releaseAll(t, b, 1)
	// comparator 2: iaddr in [0x1000, 0x2000): P >= 0x1000 and S < 0x2000
	c2 := uint64(enc0 + 0x600 + 2*0x20)
	b.w(c2, 0|0<<2|5<<4|2<<8|1<<12)
	b.w(c2+0x10, 0x1000)
	b.w(c2+0x18, 0x2000)
	b.w(c2+0x1C, 0x1)
	// filter 1: privilege U or M, comparator 2
	f1 := uint64(enc0 + 0x400 + 1*0x20)
	b.w(f1+4, 1|1<<3)
	b.w(f1, 1|1<<1|1<<4|2<<5)
	// filter 0 is enabled but not selected
	b.w(enc0+0x400, 1|1<<3)
	b.w(enc0+0xC, 1<<1)
	set, err := s.Encoders[0].Settings()
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Filter.Filters) != 1 || len(set.Filter.Comparators) != NumComparators {
		t.Fatalf("filter config %+v", set.Filter)
	}
	f := set.Filter.Filters[0]
	if !f.MatchPrivilege || f.Privileges != 0x9 || f.MatchEcause || f.MatchInterrupt || !reflect.DeepEqual(f.Comp, []int{2}) {
		t.Errorf("filter %+v", f)
	}
	c := set.Filter.Comparators[2]
	if c.PInput != filter.InAddr || c.PFunc != filter.Gte || c.SFunc != filter.Lt || c.Mode != filter.MatchPS ||
		c.PMatch != 0x1000 || c.SMatch != 0x1_0000_2000 {
		t.Errorf("comparator %+v", c)
	}
	// trTeCompSFunction 6 (mask) is not implemented: the old value stays.
	b.w(c2, 5<<4|6<<8|1<<12)
	if v := b.r(c2) >> 8 & 7; v != 2 {
		t.Errorf("trTeCompSFunction 6 read back as %d", v)
	}
	// No filter selected: every instruction is traced.
	b.w(enc0+0xC, 0)
	if set, _ := s.Encoders[0].Settings(); len(set.Filter.Filters) != 0 {
		t.Errorf("filters without trTeInstFilters: %+v", set.Filter.Filters)
	}
}

// The encoder's timestamp unit counts the hart's clock (Internal Core),
// prescaled, and trTsReset clears it.
func TestTimestampUnit(t *testing.T) {
	s, b := newTestSystem(t, 1, 4096)
	releaseAll(t, b, 1)
	e := s.Encoders[0]
	blk := func(time uint64) {
		if err := e.Block(&ingress.Block{IAddr: 0x1000, Time: time}); err != nil {
			t.Fatal(err)
		}
	}
	b.w(enc0+0x40, 1|1<<1|3<<4) // active, count, internal core, prescale 1
	blk(100)
	blk(1100)
	if v := b.r(enc0 + 0x48); v != 1000 {
		t.Errorf("trTsCounterLow %d after 1000 cycles", v)
	}
	b.w(enc0+0x40, 1|1<<1|3<<4|1<<8) // prescale by 4
	if v := b.r(enc0 + 0x48); v != 250 {
		t.Errorf("trTsCounterLow %d with trTsPrescale 1, want 250", v)
	}
	b.w(enc0+0x40, 1|3<<4|1<<8) // stopped
	blk(5100)
	if v := b.r(enc0 + 0x48); v != 250 {
		t.Errorf("stopped counter moved to %d", v)
	}
	b.w(enc0+0x40, 1|1<<1|1<<2|3<<4) // reset
	if v := b.r(enc0 + 0x48); v != 0 {
		t.Errorf("trTsCounterLow %d after trTsReset", v)
	}
	blk(5100 + 1<<33)
	if v := b.r(enc0 + 0x4C); v != 2 {
		t.Errorf("trTsCounterHigh %d, want 2", v)
	}
}

// External trigger input 0 turns tracing on and off when
// trTeInstTrigEnable is 1.
func TestExtTrigger(t *testing.T) {
	s, b := newTestSystem(t, 1, 4096)
	releaseAll(t, b, 1)
	e := s.Encoders[0]
	for _, a := range []uint32{1, 5, 15} {
		b.w(enc0+0x54, a)
		if v := b.r(enc0 + 0x54); v != 0 {
			t.Errorf("reserved trigger action %d read back as %d", a, v)
		}
	}
	b.w(enc0+0x54, 0xFFFFFFF2) // inputs 1..7 do not exist
	if v := b.r(enc0 + 0x54); v != 2 {
		t.Errorf("trTeTrigExtInControl = %#x, want 2", v)
	}
	if err := e.ExtTrigger(0); err != nil || b.r(enc0)&4 != 0 {
		t.Errorf("trace-on without trTeInstTrigEnable changed trTeInstTracing")
	}
	b.w(enc0, b.r(enc0)|1<<11)
	if err := e.ExtTrigger(0); err != nil || b.r(enc0)&4 == 0 {
		t.Errorf("trace-on did not set trTeInstTracing")
	}
	b.w(enc0+0x54, 3)
	if err := e.ExtTrigger(0); err != nil || b.r(enc0)&4 != 0 {
		t.Errorf("trace-off did not clear trTeInstTracing")
	}
}

// E-Trace chosen by trTeFormat = 0: the capture decodes with the E-Trace
// decoder to the executed flow.
func TestRoundTripETrace(t *testing.T) {
	img, pcData, want := loadT1(t)
	s, err := NewSystem(1, img, 64<<10, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := bus{t, s}
	releaseAll(t, b, 1)
	b.w(ram+0x20, 0)
	b.w(ram, 3)
	b.w(fun, 3)
	ec := uint32(1 | 6<<4 | 0<<24) // E-Trace
	b.w(enc0, ec)
	b.w(enc0+8, 1<<2|1<<3|3<<6) // sequential jumps, implicit return
	b.w(enc0, ec|2|4)
	if b.r(enc0)&2 == 0 {
		t.Fatalf("not enabled: %v", s.Encoders[0].Err())
	}
	set, err := s.Encoders[0].Settings()
	if err != nil {
		t.Fatal(err)
	}
	feed(t, img, pcData, s.Encoders[0])
	disableAll(t, b)
	capture, err := ReadTrace(s, ram, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := &pcCollector{img: img}
	d, err := etrace.NewDecoder(img, got, set.ETrace)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Decode(bytes.NewReader(capture)); err != nil {
		t.Fatal(err)
	}
	if len(got.gaps) > 0 {
		t.Errorf("gaps: %v", got.gaps)
	}
	if !equalPCs(got.pcs, want) {
		t.Errorf("decoded %d instructions, executed %d; first difference at %d", len(got.pcs), len(want), firstDiff(got.pcs, want))
	}
}

// The funnel's timestamp unit counts the system clock (the latest hart
// time seen); encoders in the Shared mode read and stamp with its value,
// so two harts' messages are time-correlated, and the trace still decodes.
func TestSharedTimestamp(t *testing.T) {
	img, pcData, want := loadT1(t)
	s, err := NewSystem(2, img, 64<<10, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := bus{t, s}
	releaseAll(t, b, 2)
	// trTsMode of the funnel: None or Internal System (2); 3 (core) is an
	// encoder's mode only
	b.w(fun+0x40, 1|1<<1|3<<4)
	if v := b.r(fun+0x40) >> 4 & 7; v == 3 {
		t.Errorf("funnel kept trTsMode 3")
	}
	b.w(fun+0x40, 1|1<<1|2<<4)
	if v := b.r(fun + 0x40); v>>4&7 != 2 || v>>24&0x3F == 0 {
		t.Fatalf("funnel trTsControl %#x", v)
	}
	for h := uint64(0); h < 2; h++ {
		b.w(enc0+h*0x1000+0x40, 1|4<<4|1<<15) // Shared, timestamps in messages
		if v := b.r(enc0+h*0x1000+0x40) >> 4 & 7; v != 4 {
			t.Fatalf("encoder %d: trTsMode Shared read back as %d", h, v)
		}
	}
	e0, e1 := s.Encoders[0], s.Encoders[1]
	e0.Block(&ingress.Block{IAddr: 0x1000, Time: 100})
	e1.Block(&ingress.Block{IAddr: 0x1000, Time: 350})
	e0.Block(&ingress.Block{IAddr: 0x1000, Time: 300}) // hart 0 behind: the clock does not go back
	for _, a := range []uint64{fun, enc0, enc0 + 0x1000} {
		if v := b.r(a + 0x48); v != 250 {
			t.Errorf("%#x: trTsCounterLow %d, want 250", a, v)
		}
	}
	// a traced round trip with shared timestamps
	b.w(ram+0x20, 0)
	b.w(ram, 3)
	b.w(fun, 3)
	b.w(enc0, 1|6<<4|1<<24|2|4)
	if b.r(enc0)&2 == 0 {
		t.Fatalf("not enabled: %v", e0.Err())
	}
	set, _ := e0.Settings()
	if !set.NTrace.Timestamps {
		t.Fatal("timestamps not enabled in the N-Trace configuration")
	}
	feed(t, img, pcData, e0)
	disableAll(t, b)
	capture, err := ReadTrace(s, ram, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := decodeNTrace(t, img, capture, set.NTrace)
	if len(got.gaps) > 0 || !equalPCs(got.pcs, want) {
		t.Errorf("round trip with shared timestamps: %d instructions, gaps %v", len(got.pcs), got.gaps)
	}
	// without a running funnel unit the Shared mode cannot be enabled
	b.w(fun+0x40, 0)
	b.w(enc0, 1|6<<4|1<<24)
	b.w(enc0, 1|6<<4|1<<24|2)
	if b.r(enc0)&2 != 0 || e0.Err() == nil {
		t.Errorf("encoder enabled with a Shared timestamp and no funnel unit")
	}
}
