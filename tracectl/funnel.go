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
// always reads 1) and has no timestamp unit.
type Funnel struct {
	b      bank
	inputs int
	out    io.Writer
}

// NewFunnel returns a funnel with n inputs (1..16), held in reset, whose
// output is out.
func NewFunnel(n int, out io.Writer) *Funnel {
	if n < 1 || n > MaxInputs {
		panic("tracectl: funnel inputs must be 1..16")
	}
	return &Funnel{b: newBank(funnelRegs), inputs: n, out: out}
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
	return f.b.read(off)
}

// WriteReg writes the register at byte offset off.
func (f *Funnel) WriteReg(off, v uint32) {
	active := f.b.val[0]&1 != 0
	switch {
	case off == FunnelControl && v&1 == 0:
		f.b.reset()
	case off == FunnelControl && !active:
		f.b.reset()
		f.b.val[0] |= 1
	case active:
		f.b.write(off, v)
		if off == FunnelDisInput {
			f.b.val[f.b.reg(off)] &= 1<<f.inputs - 1
		}
	}
}

// Dump writes every register, as mapped at base.
func (f *Funnel) Dump(w io.Writer, base uint64) error { return f.b.dump(w, base) }
