package etrace

import (
	"fmt"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// noteTrap records trap packet p, reported with thaddr=0, for the trap
// packet after it (nestedEPC).
func (d *Decoder) noteTrap(p *Packet) {
	d.nestNext, d.nestOff = true, d.off
	d.nestInt, d.nestFrom = p.Interrupt != 0, ingress.Priv(p.Privilege)
}

// Exception causes whose trap value is the address of the instruction
// that trapped (when the hart writes it) and which can be taken on the
// first instruction of a handler.
const (
	causeFetchAccess    = 1  // instruction access fault
	causeBreakpoint     = 3  // breakpoint (EBREAK, or an address trigger)
	causeFetchPage      = 12 // instruction page fault
	causeFetchGuestPage = 20 // instruction guest-page fault
)

// nestedEPC returns the EPC of the trap packet p reports with thaddr=1
// (its handler at handler) right after a trap packet with thaddr=0: the
// trap was taken before the handler of that earlier trap ran, so its EPC
// is the address of that handler's first instruction, which no packet
// states (the specification: when a second trap occurs before the
// handler's first instruction retires, thaddr is 0 for the first, and
// "the reason for not reporting the EPC ... is that it can be inferred by
// the decoder using the exception cause"). The trace determines it when
//   - p is an instruction fetch fault (access, page or guest-page fault)
//     with a trap value: a handler starts on a 4-byte boundary (xtvec),
//     so its first instruction lies in one naturally aligned word and the
//     faulting address the hart writes to xtval is the instruction's own;
//     or p is a breakpoint whose trap value is the address of an EBREAK
//     (an EBREAK's trap value is its address; a breakpoint trigger on a
//     load or store writes the data address instead, which is then
//     trusted only if the program holds an EBREAK there);
//   - or both traps are exceptions taken to the same privilege:
//     exceptions enter at the base of that privilege's xtvec, which
//     nothing retired between the two could change, so the earlier
//     handler is this one. A trap goes to S or M and never below the
//     privilege it is taken from, so the earlier one, taken from the
//     privilege its packet states, went to the privilege p states for
//     this handler when it was taken from M or when this handler runs
//     in S.
//
// Otherwise (an interrupt, whose handler may be vectored; a trap to M
// taken from S or U when the earlier one may have gone to S; a breakpoint
// trigger; or the two ways disagreeing) it returns 0, and nestedWarn says so.
func (d *Decoder) nestedEPC(p *Packet, handler uint64) uint64 {
	var fromTval, fromPriv uint64
	if p.Interrupt == 0 && p.Tval != 0 && p.Tval&3 == 0 {
		switch p.Ecause {
		case causeFetchAccess, causeFetchPage, causeFetchGuestPage:
			fromTval = p.Tval & d.amask
		case causeBreakpoint:
			if in, ok := d.w.Img.Inst(p.Tval & d.amask); ok && in.Class == riscv.ClassEBreak {
				fromTval = p.Tval & d.amask
			}
		}
	}
	to := ingress.Priv(p.Privilege)
	if p.Interrupt == 0 && !d.nestInt && (d.nestFrom == ingress.PrivM && to == ingress.PrivM || to == ingress.PrivS && d.nestFrom <= ingress.PrivS) {
		fromPriv = handler
	}
	switch {
	case fromTval != 0 && fromPriv != 0 && fromTval != fromPriv:
		return 0
	case fromTval != 0:
		return fromTval
	}
	return fromPriv
}

// nestedWarn warns that the EPC of the trap packet p reports (after a
// trap packet with thaddr=0) is not known: see nestedEPC.
func (d *Decoder) nestedWarn(p *Packet) error {
	what := "exception"
	if p.Interrupt != 0 {
		what = "interrupt"
	}
	d.ev = flow.Event{Kind: flow.KindWarn, Offset: d.off, Index: d.idx, Priv: d.priv,
		Err: &decode.Error{Offset: d.off, Index: d.idx, What: "trap packet",
			Err: fmt.Errorf("the EPC of this trap (%s, cause %d) is not stated by the trace: it was taken before the handler of the trap reported at byte %d ran, at that handler's first instruction, whose address neither this trap's cause and tval nor the privileges of the two traps determine", what, p.Ecause, d.nestOff)}}
	return d.emit(&d.ev)
}
