package tracectl

import (
	"errors"
	"io"
)

// ErrDropped is returned by a funnel input or a sink that did not take
// the bytes written to it (component disabled, input disabled, or a sink
// stopped on wrap).
var ErrDropped = errors.New("trace dropped")

// Funnel is the trace funnel: it passes the bytes of its enabled inputs
// to its output. Each write of an encoder is a whole number of
// messages/packets, so the funnel interleaves its inputs on message
// boundaries, one write at a time. It buffers nothing (trFunnelEmpty
// always reads 1). Its timestamp unit (Internal System) counts the system
// clock, which is the latest hart time any encoder has seen; encoders in
// the Shared mode stamp their messages with it, so that the traces of
// several harts are time-correlated.
type Funnel struct {
	b      bank
	inputs int
	out    io.Writer
	tsIdx  int
	tsRaw  uint64 // system clock cycles counted
	tsLast uint64 // latest time seen
	tsSeen bool
}

// NewFunnel returns a funnel with n inputs (1..16), held in reset, whose
// output is out.
func NewFunnel(n int, out io.Writer) *Funnel {
	if n < 1 || n > MaxInputs {
		panic("tracectl: funnel inputs must be 1..16")
	}
	f := &Funnel{b: newBank(funnelRegs), inputs: n, out: out}
	f.tsIdx = f.b.reg(TsControl)
	return f
}

// tick advances the system clock to time t (times that go back, from a
// hart behind another, do not move it).
func (f *Funnel) tick(t uint64) {
	ts := f.b.val[f.tsIdx]
	running := f.b.val[0]&1 != 0 && ts&3 == 3 && ts>>4&7 == TsModeInternalSystem // trTsActive, trTsCount
	if f.tsSeen && t <= f.tsLast {
		return
	}
	if running && f.tsSeen {
		f.tsRaw += t - f.tsLast
	}
	f.tsLast, f.tsSeen = t, true
}

// tsCounter is the timestamp counter after the prescaler.
func (f *Funnel) tsCounter() uint64 {
	return f.tsRaw >> (2 * (f.b.val[f.tsIdx] >> 8 & 3)) // trTsPrescale
}

// sharing reports whether the funnel's timestamp unit runs, for encoders
// in the Shared mode.
func (f *Funnel) sharing() bool {
	return f.b.val[0]&1 != 0 && f.b.val[f.tsIdx]&1 != 0 && f.b.val[f.tsIdx]>>4&7 == TsModeInternalSystem
}

// Input returns the writer of input n.
func (f *Funnel) Input(n int) io.Writer { return funnelInput{f, n} }

type funnelInput struct {
	f *Funnel
	n int
}

// Write passes p on when the funnel is active and enabled; on a disabled
// input p is read and discarded. Otherwise p is lost and ErrDropped
// returned.
func (in funnelInput) Write(p []byte) (int, error) {
	f := in.f
	if f.b.val[0]&3 != 3 {
		return 0, ErrDropped
	}
	if f.b.field(FunnelDisInput, "trFunnelDisInput")&(1<<in.n) != 0 {
		return len(p), nil
	}
	return f.out.Write(p)
}

// ReadReg returns the register at byte offset off.
func (f *Funnel) ReadReg(off uint32) uint32 {
	if off != FunnelControl && f.b.val[0]&1 == 0 {
		return 0
	}
	c := f.tsCounter()
	f.b.setField(TsCounterLow, "trTsCounterLow", uint32(c))
	f.b.setField(TsCounterHigh, "trTsCounterHigh", uint32(c>>32))
	return f.b.read(off)
}

// WriteReg writes the register at byte offset off.
func (f *Funnel) WriteReg(off, v uint32) {
	active := f.b.val[0]&1 != 0
	switch {
	case off == FunnelControl && v&1 == 0:
		f.b.reset()
		f.tsRaw = 0
	case off == FunnelControl && !active:
		f.b.reset()
		f.b.val[0] |= 1
	case active:
		f.b.write(off, v)
		if off == FunnelDisInput {
			f.b.val[f.b.reg(off)] &= 1<<f.inputs - 1
		}
		if off == TsControl && v&4 != 0 { // trTsReset
			f.tsRaw = 0
		}
	}
}

// Dump writes every register, as mapped at base.
func (f *Funnel) Dump(w io.Writer, base uint64) error { return f.b.dump(w, base) }
