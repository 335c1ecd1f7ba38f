package etrace

import (
	"fmt"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// itypeOf returns the itype of instruction in leaving its range: the
// ingress table's, except that E-Trace counts a Zcmt table jump as
// uninferable (its target comes from the jump table in memory, not from
// the opcode).
func itypeOf(in *riscv.Inst, taken bool) ingress.IType {
	if in.Class == riscv.ClassTableJump {
		if in.Link == riscv.LinkCall {
			return ingress.ITypeIndirectCall
		}
		return ingress.ITypeIndirectJump
	}
	return ingress.ITypeOf(*in, taken)
}

// closeRange sends the open range, ending at pc.
func (d *Decoder) closeRange(end ingress.IType, target uint64, hasTarget bool) error {
	if d.rN == 0 {
		return nil
	}
	ev := d.w.Range()
	ev.Start, ev.Last, ev.N, ev.End = d.rStart, d.pc, d.rN, end
	ev.Target, ev.HasTarget, ev.Priv, ev.Offset = target, hasTarget, d.priv, d.off
	d.rN = 0
	if err := d.w.Send(&d.tally); err != nil {
		return errSink{err}
	}
	return nil
}

// sijumpTarget returns the target of the indirect jump in at pc when the
// instruction retired before it (at prev) loads its register with lui,
// c.lui or auipc (ingress.SeqTarget, which the encoders use too).
func (d *Decoder) sijumpTarget(in *riscv.Inst) (uint64, bool) {
	if !d.prevOK {
		return 0, false
	}
	b, p := d.pcNode, (*riscv.Inst)(nil)
	if b == nil || b.N < 2 || d.prev != b.Prev {
		b = nil
		if p = d.w.Img.InstPtr(d.prev); p == nil {
			return 0, false
		}
	}
	return decode.SeqTarget(b, in, p, d.prev, in.XLen())
}

// walk follows the program from the current position (pc, the last
// instruction known to have executed) as mode says, towards a.
func (d *Decoder) walk(mode int, a uint64) error {
	// The 0.026 layout reports an instruction twice to pin the decoder on
	// it (see the package documentation); 2.0 never does.
	if d.v026 && d.zeroOK && (mode == modeLast || mode == modeSync) && d.pc == a {
		isBr := d.pcNode != nil && d.pcNode.Inst.Class == riscv.ClassBranch
		if d.arrived(a, isBr) {
			if mode == modeSync && d.enter && d.enterPriv != d.priv {
				// The instruction was sent already, in the old privilege:
				// the encoder changes it with a sync packet alone, on the
				// first instruction that has it. (A context reported
				// imprecisely can come with a sync packet that pins the
				// decoder on the instruction; it applies after it.)
				return fmt.Errorf("%w: the sync packet states privilege %d for the instruction at %#x, which the packet before it reported at privilege %d",
					decode.ErrInconsistent, d.enterPriv, a, d.priv)
			}
			d.settle()
			d.arrivedAt, d.arrivedOK = d.tally.Emitted()+d.rN, true
			return nil
		}
	}
	steps, total := 0, 0
	for {
		var (
			next uint64
			nn   *decode.Block
			stop bool
		)
		if nd := d.pcNode; nd == nil {
			in, ok := d.w.Img.Inst(d.pc)
			if !ok || in.Len == 0 {
				return fmt.Errorf("%w: no instruction at %#x", decode.ErrOutsideImage, d.pc)
			}
			next = in.Next(d.pc)
		} else {
			in := &nd.Inst
			taken := false
			// (the cases spell out Block.Exit and decode.Uninferable: a
			// switch on the class is measurably faster on this path)
			switch in.Class {
			case riscv.ClassBranch:
				var err error
				if taken, err = d.outcome(d.pc); err != nil {
					return err
				}
				steps = 0
				if taken {
					next, nn = nd.Target, nd.Tgt
				} else {
					next, nn = nd.End, nd.Seq
				}
			case riscv.ClassJump:
				next, nn = nd.Target, nd.Tgt
			case riscv.ClassIndirect, riscv.ClassTableJump, riscv.ClassPopRet, riscv.ClassTrapReturn:
				t, ok := uint64(0), false
				if in.Class == riscv.ClassIndirect && d.opt.SIJump {
					t, ok = d.sijumpTarget(in)
				}
				switch {
				case ok:
					next = t
				case in.Link == riscv.LinkReturn && d.opt.ImplicitReturn && d.stack.Depth() > 0 &&
					!(d.irActive && d.irDepth == d.stack.Depth()):
					next, _ = d.stack.Pop()
					d.irAt = d.tally.Emitted() + d.rN + 1
				default:
					if mode == modeLastBranch || mode == modeFail {
						return fmt.Errorf("uninferable discontinuity at %#x before the last branch", d.pc)
					}
					if mode == modeLast && !d.v026 {
						// 2.0 reports its target with updiscon or ended_ntr
						return fmt.Errorf("uninferable discontinuity at %#x before the reported instruction", d.pc)
					}
					next, stop = a, true
					if d.storeTarget {
						d.jtc.store(a)
					}
				}
			default:
				next, nn = nd.End, nd.Seq
			}
			if (in.Link == riscv.LinkCall || in.Link == riscv.LinkCoSwap) && d.opt.ImplicitReturn && in.Class != riscv.ClassBranch {
				d.stack.Push(nd.End)
			}
			if d.w.Changed || d.w.Due(d.tally.Emitted()+d.rN) {
				nn = nil // the links are those of the address space left
			}
			if next != nd.End {
				if err := d.closeRange(itypeOf(in, taken), next, true); err != nil {
					return err
				}
				d.rStart = next
			}
			if stop && d.enter {
				// the target of the trap return (or of another
				// uninferable jump) has the sync packet's privilege and
				// context, and is looked up in their address space
				if err := d.enterAt(next, itypeOf(in, taken)); err != nil {
					return err
				}
				nn = nil
			}
			if nn == nil || nn.Start != next {
				var err error
				if nn, err = d.followBlock(nd, next); err != nil {
					return err
				}
			}
		}
		if nn == nil {
			var err error
			if nn, err = d.block(next); err != nil {
				return err
			}
		}
		d.prev, d.prevOK = d.pc, true
		if d.rN == 0 {
			d.rStart = next
		}
		if stop {
			d.pc = next
			d.rN++
			d.pcNode = nil
			if nn.N == 1 {
				d.pcNode = nn
			}
			d.settle()
			want := uint64(0)
			if nn.N == 1 && nn.Inst.Class == riscv.ClassBranch {
				want = 1
			}
			if d.remaining() != want {
				return fmt.Errorf("%d unprocessed branches at %#x", d.remaining(), next)
			}
			return nil
		}
		if (mode == modeLast || mode == modeSync) && a >= nn.Start && a <= nn.Last {
			isBr := a == nn.Last && nn.Inst.Class == riscv.ClassBranch
			if d.arrived(a, isBr) {
				cnt, prev, err := d.w.Blocks.CountTo(nn, a)
				if err != nil {
					return err
				}
				if mode == modeSync && d.enter {
					// the instructions before a ran in the old privilege
					// and context, a in the sync packet's (a precise
					// context change reached in sequence)
					if cnt >= 2 {
						d.rN += cnt - 1
						d.pc, d.prev = prev, prev
					}
					if err := d.enterAt(a, ingress.ITypeNone); err != nil {
						return err
					}
					if nn, err = d.block(a); err != nil {
						return err
					}
					cnt = 1
				}
				d.rN += cnt
				d.pc = a
				d.pcNode = nil
				if a == nn.Last {
					d.pcNode = nn
				}
				if cnt >= 2 {
					d.prev = prev
				}
				d.settle()
				// a checkpoint when the caller's checks pass: the address
				// and the outcomes agree
				d.arrivedAt, d.arrivedOK = d.tally.Emitted()+d.rN, true
				return nil
			}
		}
		d.rN += uint64(nn.N)
		d.pc, d.pcNode = nn.Last, nn
		if nn.N >= 2 {
			d.prev = nn.Prev
			if nn.Inst.Class != riscv.ClassIndirect {
				d.prevOK = false // not needed
			}
		}
		if nn.Inst.Class == riscv.ClassBranch {
			switch mode {
			case modeLastBranch:
				if d.qn == 1 && d.pbcLeft == 0 && !d.fail {
					return nil
				}
			case modeFail:
				if d.qn == 0 && d.pbcLeft == 0 && d.fail {
					d.settle()
					return nil
				}
			}
		}
		if total++; d.MaxWalk > 0 && total > d.MaxWalk {
			return fmt.Errorf("walk longer than %d runs", d.MaxWalk)
		}
		if steps++; steps > d.MaxSteps {
			return fmt.Errorf("no packet target after %d runs from %#x", steps, d.pc)
		}
	}
}
