package tracectl

import (
	"bytes"
	"io"
	"testing"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/ntrace"
)

// TestBlockFastPathExact drives two encoder components with the same
// blocks and the same register writes and triggers between them: one as
// it runs (fast path whenever refresh chose it), the other forced through
// the general path before every block. Their bytes, timestamp units and
// registers must be equal, and the first must have taken both paths and
// lost trace on the fast path (a sink failing), then restarted. With a
// funnel (as in a System), each component is linked to its own funnel,
// whose timestamp unit counts (Internal System) and which the component
// ticks on both paths; the encoders also switch to its time (Shared).
func TestBlockFastPathExact(t *testing.T) {
	t.Run("alone", func(t *testing.T) { blockFastPathExact(t, false) })
	t.Run("funnel", func(t *testing.T) { blockFastPathExact(t, true) })
}

func blockFastPathExact(t *testing.T, funnel bool) {
	img, _, _ := loadT1(t)
	blks := loadBlocks(t)
	if len(blks) < 200 {
		t.Fatalf("t1 gives %d blocks, want at least 200", len(blks))
	}
	cfg := ntrace.Config{Mode: ntrace.HTM, ImplicitReturn: ntrace.ReturnFull, RepeatedHistory: true, Timestamps: true, XLEN: 64}
	// writes fail while failing is set: trace lost, then the restart
	// after it
	var outA, outB bytes.Buffer
	wa, wb := &lossyWriter{w: &outA}, &lossyWriter{w: &outB}
	a, ref := NewEncoder(img, wa), NewEncoder(img, wb)
	ts := func(active, count bool, mode, prescale uint32) uint32 {
		v := mode<<4 | prescale<<8 | 1<<15
		if active {
			v |= 1
		}
		if count {
			v |= 2
		}
		return v
	}
	for _, e := range []*Encoder{a, ref} {
		if funnel {
			f := NewFunnel(1, io.Discard)
			f.WriteReg(FunnelControl, 1) // trFunnelActive
			f.WriteReg(TsControl, ts(true, true, TsModeInternalSystem, 0))
			e.shared = f
			e.refresh()
		}
		if err := e.Configure(Settings{Format: FormatNTrace, NTrace: cfg}); err != nil {
			t.Fatal(err)
		}
		// the debug triggers below turn tracing off and on
		if err := e.setFields(TeControl, fv{"trTeInstTrigEnable", 1}); err != nil {
			t.Fatal(err)
		}
	}
	// register writes and triggers before block i (i%period == at)
	ops := []struct {
		period, at int
		do         func(e *Encoder) error
	}{
		{97, 10, func(e *Encoder) error { return e.WriteReg(TsControl, ts(true, true, TsModeInternalCore, 1)) }},
		{97, 40, func(e *Encoder) error { return e.WriteReg(TsControl, ts(true, false, TsModeNone, 0)) }},
		{97, 60, func(e *Encoder) error { return e.WriteReg(TsControl, ts(true, true, TsModeExternal, 0)) }},
		{97, 80, func(e *Encoder) error { return e.WriteReg(TsControl, ts(false, false, TsModeInternalCore, 0)) }},
		{131, 20, func(e *Encoder) error { return e.WriteReg(TeControl, e.ReadReg(TeControl)&^4) }}, // trTeInstTracing off
		{131, 50, func(e *Encoder) error { return e.WriteReg(TeControl, e.ReadReg(TeControl)|4) }},
		{61, 30, func(e *Encoder) error { return e.DebugTrigger(4) }},                                // notify
		{151, 70, func(e *Encoder) error { return e.DebugTrigger(3) }},                               // trace-off
		{151, 90, func(e *Encoder) error { return e.DebugTrigger(2) }},                               // trace-on
		{173, 100, func(e *Encoder) error { return e.WriteReg(TeControl, e.ReadReg(TeControl)&^2) }}, // disable
		{173, 120, func(e *Encoder) error { return e.WriteReg(TeControl, e.ReadReg(TeControl)|2) }},
	}
	if funnel {
		ops = append(ops, struct {
			period, at int
			do         func(e *Encoder) error
		}{97, 45, func(e *Encoder) error { return e.WriteReg(TsControl, ts(true, true, TsModeShared, 0)) }})
	}
	fast, slow, lostFast := 0, 0, 0
	// t1's blocks with the writes and triggers, then 39 times without
	// (all on the fast path), the writes of the first 38 failing
	n := len(blks)
	for i := 0; i < 40*n; i++ {
		for _, op := range ops {
			if i < n && i%op.period == op.at {
				for _, e := range []*Encoder{a, ref} {
					if err := op.do(e); err != nil {
						t.Fatalf("block %d: %v", i, err)
					}
				}
			}
		}
		if i == n {
			for _, e := range []*Encoder{a, ref} {
				if err := e.WriteReg(TsControl, ts(true, false, TsModeNone, 0)); err != nil {
					t.Fatal(err)
				}
				if err := e.WriteReg(TeControl, e.ReadReg(TeControl)|6); err != nil { // enabled, tracing
					t.Fatal(err)
				}
			}
		}
		wasFast := a.fast
		if wasFast {
			fast++
		} else {
			slow++
		}
		wa.failing = i >= n && i < 39*n
		wb.failing = wa.failing
		ref.fast = false
		b := blks[i%n]
		b.Time = uint64(i) * 13
		if err := a.Block(&b); err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
		b = blks[i%n]
		b.Time = uint64(i) * 13
		if err := ref.Block(&b); err != nil {
			t.Fatalf("block %d (general path): %v", i, err)
		}
		if wasFast && a.out.discard {
			lostFast++
		}
		if a.tsRaw != ref.tsRaw || a.tsLast != ref.tsLast || a.tsSeen != ref.tsSeen || a.passed != ref.passed {
			t.Fatalf("block %d: timestamp unit %d/%d/%v/%v, general path %d/%d/%v/%v", i,
				a.tsRaw, a.tsLast, a.tsSeen, a.passed, ref.tsRaw, ref.tsLast, ref.tsSeen, ref.passed)
		}
		if f, g := a.shared, ref.shared; funnel && (f.tsRaw != g.tsRaw || f.tsLast != g.tsLast || f.tsSeen != g.tsSeen) {
			t.Fatalf("block %d: funnel's timestamp unit %d/%d/%v, general path %d/%d/%v", i,
				f.tsRaw, f.tsLast, f.tsSeen, g.tsRaw, g.tsLast, g.tsSeen)
		}
	}
	if fast == 0 || slow == 0 || lostFast == 0 {
		t.Fatalf("fast path taken for %d blocks, general path for %d, trace lost on the fast path %d times (%d bytes): want all", fast, slow, lostFast, outA.Len())
	}
	for _, e := range []*Encoder{a, ref} {
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(outA.Bytes(), outB.Bytes()) {
		n := 0
		for n < outA.Len() && n < outB.Len() && outA.Bytes()[n] == outB.Bytes()[n] {
			n++
		}
		t.Fatalf("bytes differ at offset %d (%d and %d bytes)", n, outA.Len(), outB.Len())
	}
	for off := uint32(0); off < 0x1000; off += 4 {
		if x, y := a.ReadReg(off), ref.ReadReg(off); x != y {
			t.Errorf("register %#x: %#x, general path %#x", off, x, y)
		}
	}
	t.Logf("%d blocks: %d on the fast path, %d bytes", 40*n, fast, outA.Len())
}

// lossyWriter fails every write while failing is set, as a sink that
// cannot take the bytes.
type lossyWriter struct {
	w       io.Writer
	failing bool
}

func (l *lossyWriter) Write(p []byte) (int, error) {
	if l.failing {
		return 0, io.ErrShortWrite
	}
	return l.w.Write(p)
}

// TestBlockFastPathData: data accesses held for the next block take it
// off the fast path (the accesses go before it), and the blocks after
// it are back on the fast path; the bytes are those of the general path.
func TestBlockFastPathData(t *testing.T) {
	var outA, outB bytes.Buffer
	a, ref := NewEncoder(image.NewSet(), &outA), NewEncoder(image.NewSet(), &outB)
	for _, e := range []*Encoder{a, ref} {
		im := DefaultImpl(64)
		im.ETrace.Data = &etrace.DataConfig{SrcID: 1}
		if err := e.SetImpl(im); err != nil {
			t.Fatal(err)
		}
		c := etrace.DefaultConfig()
		c.Encap, c.SrcBits = etrace.EncapUTDD, 1
		c.Data = &etrace.DataConfig{}
		if err := e.Configure(Settings{Format: FormatETrace, ETrace: c}); err != nil {
			t.Fatal(err)
		}
	}
	fast, held := 0, 0
	for i := 0; i < 3000; i++ {
		for _, e := range []*Encoder{a, ref} {
			if i%3 == 0 {
				acc := ingress.Access{IAddr: 0x1000, DAddr: 0x8000 + uint64(i)*8, DType: ingress.DTypeStore, DSize: 3, Data: uint64(i)}
				if err := e.DataSink().Access(&acc); err != nil {
					t.Fatal(err)
				}
			}
		}
		if a.fast {
			fast++
		}
		if len(a.dheld) > 0 {
			held++
		}
		ref.fast = false
		for _, e := range []*Encoder{a, ref} {
			if err := e.Block(&ingress.Block{IAddr: 0x1000, IRetire: 2, ILastSize: 1}); err != nil {
				t.Fatalf("block %d: %v", i, err)
			}
		}
	}
	for _, e := range []*Encoder{a, ref} {
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if fast != 2000 || held != 1000 {
		t.Errorf("%d blocks on the fast path, %d with accesses held: want 2000 and 1000", fast, held)
	}
	if st := a.DataStats(); st != ref.DataStats() {
		t.Errorf("data stats %+v, general path %+v", st, ref.DataStats())
	}
	if !bytes.Equal(outA.Bytes(), outB.Bytes()) || outA.Len() == 0 {
		t.Fatalf("bytes differ or none (%d and %d bytes)", outA.Len(), outB.Len())
	}
}
