package tracectl

import (
	"bytes"
	"testing"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/ntrace"
)

// A wrapped N-Trace buffer captured as a debugger does starts at its first
// sync message and decodes, without --allow-truncated, to exactly the end
// of the executed flow; the sink counts the bytes lost.
func TestStopAndCaptureWrappedNTrace(t *testing.T) {
	img, pcData, want := loadT1(t)
	s, err := NewSystem(1, img, 64<<10, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := bus{t, s}
	const limit = 0x3FC // a 1 KiB buffer
	program(t, b, limit, false, 0)
	feed(t, img, pcData, s.Encoders[0])
	var ref bytes.Buffer
	set, _ := s.Encoders[0].Settings()
	enc, _ := ntrace.NewEncoder(&ref, set.NTrace)
	feed(t, img, pcData, enc)
	enc.Close()
	total := (ref.Len() + 3) &^ 3
	c, err := s.StopAndCapture()
	if err != nil {
		t.Fatal(err)
	}
	if !c.Wrapped {
		t.Fatal("not wrapped")
	}
	if want := uint64(total - (limit + 4)); c.Overwritten != want {
		t.Errorf("Overwritten = %d, want %d (%d bytes of trace, a %d-byte buffer)", c.Overwritten, want, total, limit+4)
	}
	if c.Skipped == 0 || c.Skipped+len(c.Bytes) != limit+4 {
		t.Errorf("skipped %d and kept %d bytes of a %d-byte buffer", c.Skipped, len(c.Bytes), limit+4)
	}
	got := decodeNTrace(t, img, c.Bytes, c.Settings.NTrace)
	if len(got.gaps) > 0 || len(got.pcs) == 0 {
		t.Fatalf("%d instructions, gaps %v", len(got.pcs), got.gaps)
	}
	if tail := want[len(want)-len(got.pcs):]; !equalPCs(got.pcs, tail) {
		t.Errorf("decoded %d instructions are not the end of the executed flow (first difference at %d)", len(got.pcs), firstDiff(got.pcs, tail))
	}
}

// E-Trace packets carry no boundary marker: FirstSync finds the start
// from which the wrapped buffer splits into packets.
func TestStopAndCaptureWrappedETrace(t *testing.T) {
	img, pcData, want := loadT1(t)
	s, err := NewSystem(1, img, 64<<10, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := bus{t, s}
	releaseAll(t, b, 1)
	b.w(ram+0x18, 0x7FC) // a 2 KiB buffer
	b.w(ram+0x20, 0)
	b.w(ram, 3)
	b.w(fun, 3)
	ec := uint32(1 | 6<<4 | 1<<16 | 2<<20) // E-Trace, a sync every 64 packets
	b.w(enc0, ec)
	b.w(enc0+8, 1<<2|1<<3|3<<6)
	b.w(enc0, ec|2|4)
	feed(t, img, pcData, s.Encoders[0])
	c, err := s.StopAndCapture()
	if err != nil {
		t.Fatal(err)
	}
	if !c.Wrapped || c.Overwritten == 0 {
		t.Fatalf("wrapped %v, %d bytes overwritten", c.Wrapped, c.Overwritten)
	}
	got := &pcCollector{img: img}
	d, err := etrace.NewDecoder(img, got, c.Settings.ETrace)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Decode(bytes.NewReader(c.Bytes)); err != nil {
		t.Fatal(err)
	}
	if len(got.gaps) > 0 || len(got.pcs) == 0 {
		t.Fatalf("%d instructions, gaps %v", len(got.pcs), got.gaps)
	}
	if tail := want[len(want)-len(got.pcs):]; !equalPCs(got.pcs, tail) {
		t.Errorf("decoded %d instructions are not the end of the executed flow (first difference at %d)", len(got.pcs), firstDiff(got.pcs, tail))
	}
}

// DrainTo empties the buffer at each wrap: with a 256-byte buffer the
// drained stream is the whole trace and decodes to the executed flow.
func TestDrainAtWrap(t *testing.T) {
	img, pcData, want := loadT1(t)
	s, err := NewSystem(1, img, 64<<10, nil)
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	s.Sink.DrainTo(&all)
	b := bus{t, s}
	program(t, b, 0xFC, false, -1)
	set, _ := s.Encoders[0].Settings()
	feed(t, img, pcData, s.Encoders[0])
	disableAll(t, b)
	if s.Sink.Wraps() < 2 {
		t.Fatalf("%d wraps", s.Sink.Wraps())
	}
	if n, err := s.Sink.Drained(); err != nil || n != int64(all.Len()) {
		t.Fatalf("Drained %d, %v; buffer %d", n, err, all.Len())
	}
	got := decodeNTrace(t, img, all.Bytes(), set.NTrace)
	if len(got.gaps) > 0 || !equalPCs(got.pcs, want) {
		t.Errorf("drained trace (%d bytes, %d wraps): %d instructions of %d, gaps %v", all.Len(), s.Sink.Wraps(), len(got.pcs), len(want), got.gaps)
	}
}

// SetBase moves the whole block; Discover finds it there and nothing
// answers at the old addresses.
func TestSetBase(t *testing.T) {
	s, err := NewSystem(2, nil, 4096, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetBase(0x1000_0800); err == nil {
		t.Error("unaligned base accepted")
	}
	const base = 0x4000_0000
	if err := s.SetBase(base); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Read32(EncoderBase); ok {
		t.Error("a register answers at the default address")
	}
	comps, err := DiscoverAt(s, base)
	if err != nil {
		t.Fatal(err)
	}
	wantAt := []uint64{base, base + 0x1000, base + 0x18000, base + 0x19000}
	if len(comps) != len(wantAt) {
		t.Fatalf("found %v", comps)
	}
	for i, c := range comps {
		if c.Base != wantAt[i] {
			t.Errorf("component %d at %#x, want %#x", i, c.Base, wantAt[i])
		}
	}
	if s.SinkAddr() != base+0x19000 || s.FunnelAddr() != base+0x18000 || s.End() != base+0x1A000 {
		t.Errorf("addresses %#x %#x %#x", s.FunnelAddr(), s.SinkAddr(), s.End())
	}
}
