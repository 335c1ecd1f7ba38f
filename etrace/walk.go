package etrace

import (
	"fmt"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// node returns the run starting at a.
func (d *Decoder) node(a uint64) (*node, error) {
	if d.emitted+d.rN >= d.epoch {
		d.nextEpoch()
	}
	h := (a >> 1) & uint64(len(d.cache)-1)
	if nd := d.cache[h]; nd != nil && nd.start == a {
		return nd, nil
	}
	nd := d.nodes[a]
	if nd == nil {
		if d.img == nil {
			return nil, fmt.Errorf("%w: no program image", decode.ErrOutsideImage)
		}
		r, err := d.img.Run(a)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", decode.ErrOutsideImage, err)
		}
		nd = &node{start: a, last: r.LastAddr, end: r.End(), n: r.N, in: r.Last}
		if r.Last.Class == riscv.ClassBranch || r.Last.Class == riscv.ClassJump {
			nd.target = r.Last.Target(r.LastAddr)
		}
		if r.N >= 2 && r.Last.Class == riscv.ClassIndirect {
			_, nd.prev, _ = d.countTo(nd, nd.last)
			nd.prevIn, _ = d.img.Inst(nd.prev)
		}
		d.nodes[a] = nd
	}
	d.cache[h] = nd
	return nd, nil
}

// countTo counts the instructions of nd from its start up to and including
// a, and returns the address of the instruction before a.
func (d *Decoder) countTo(nd *node, a uint64) (n uint64, prev uint64, err error) {
	x := nd.start
	for {
		in, ok := d.img.Inst(x)
		if !ok || in.Len == 0 {
			return 0, 0, fmt.Errorf("%w: no instruction at %#x", decode.ErrOutsideImage, x)
		}
		n++
		if x == a {
			return n, prev, nil
		}
		prev = x
		x += uint64(in.Len)
		if x > a {
			return 0, 0, fmt.Errorf("address %#x is not an instruction boundary (run from %#x)", a, nd.start)
		}
	}
}

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
	// rev is only ever used for ranges: set the fields that change.
	ev := &d.rev
	ev.Kind, ev.Start, ev.Last, ev.N, ev.End = flow.KindRange, d.rStart, d.pc, d.rN, end
	ev.Image = nil
	if d.img != d.base {
		ev.Image = d.img
	}
	ev.Target, ev.HasTarget, ev.Priv, ev.Offset = target, hasTarget, d.priv, d.off
	d.emitted += d.rN
	d.rN = 0
	if err := d.sink.Event(ev); err != nil {
		return errSink{err}
	}
	return nil
}

// sijumpTarget returns the target of the indirect jump in at pc when the
// instruction before it (at prev) loads its register with lui, c.lui or
// auipc.
func (d *Decoder) sijumpTarget(in *riscv.Inst) (uint64, bool) {
	if !d.prevOK || in.Rs1 == 0 {
		return 0, false
	}
	var p riscv.Inst
	if d.pcNode != nil && d.pcNode.n >= 2 && d.prev == d.pcNode.prev {
		p = d.pcNode.prevIn
	} else {
		var ok bool
		if p, ok = d.img.Inst(d.prev); !ok {
			return 0, false
		}
	}
	if p.Rd != in.Rs1 {
		return 0, false
	}
	var t uint64
	switch p.Op.String() {
	case "lui":
		t = uint64(int64(int32(p.Raw & 0xfffff000)))
	case "auipc":
		t = d.prev + uint64(int64(int32(p.Raw&0xfffff000)))
	case "c.lui":
		v := int64(p.Raw>>2&0x1f) | int64(p.Raw>>12&1)<<5
		v = v << 58 >> 58 // sign-extend 6 bits
		t = uint64(v << 12)
	default:
		return 0, false
	}
	t += uint64(in.Imm)
	t &^= 1
	if in.XLen() == 32 {
		t &= 0xffffffff
	}
	return t, true
}

// walk follows the program from the current position (pc, the last
// instruction known to have executed) as mode says, towards a.
func (d *Decoder) walk(mode int, a uint64) error {
	// The 0.026 layout reports an instruction twice to pin the decoder on
	// it (see the package documentation); 2.0 never does.
	if d.v026 && d.zeroOK && (mode == modeLast || mode == modeSync) && d.pc == a {
		isBr := d.pcNode != nil && d.pcNode.in.Class == riscv.ClassBranch
		if d.arrived(a, isBr) {
			d.settle()
			d.arrivedAt, d.arrivedOK = d.emitted+d.rN, true
			return nil
		}
	}
	steps, total := 0, 0
	for {
		var (
			next uint64
			nn   *node
			stop bool
		)
		if nd := d.pcNode; nd == nil {
			in, ok := d.img.Inst(d.pc)
			if !ok || in.Len == 0 {
				return fmt.Errorf("%w: no instruction at %#x", decode.ErrOutsideImage, d.pc)
			}
			next = in.Next(d.pc)
		} else {
			in := &nd.in
			taken := false
			switch in.Class {
			case riscv.ClassBranch:
				var err error
				if taken, err = d.outcome(d.pc); err != nil {
					return err
				}
				steps = 0
				if taken {
					next, nn = nd.target, nd.tgt
				} else {
					next, nn = nd.end, nd.seq
				}
			case riscv.ClassJump:
				next, nn = nd.target, nd.tgt
			case riscv.ClassIndirect, riscv.ClassTableJump, riscv.ClassPopRet, riscv.ClassTrapReturn:
				t, ok := uint64(0), false
				if in.Class == riscv.ClassIndirect && d.opt.SIJump {
					t, ok = d.sijumpTarget(in)
				}
				switch {
				case ok:
					next = t
				case in.Link == riscv.LinkReturn && d.opt.ImplicitReturn && d.stack.depth > 0 &&
					!(d.irActive && d.irDepth == d.stack.depth):
					next = d.stack.pop()
					d.irAt = d.emitted + d.rN + 1
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
				next, nn = nd.end, nd.seq
			}
			if (in.Link == riscv.LinkCall || in.Link == riscv.LinkCoSwap) && d.opt.ImplicitReturn && in.Class != riscv.ClassBranch {
				d.stack.push(nd.end)
			}
			if next != nd.end {
				if err := d.closeRange(itypeOf(in, taken), next, true); err != nil {
					return err
				}
				d.rStart = next
			}
			if nn == nil || nn.start != next {
				var err error
				if nn, err = d.node(next); err != nil {
					return err
				}
				if next == nd.end {
					nd.seq = nn
				} else if next == nd.target && (in.Class == riscv.ClassBranch || in.Class == riscv.ClassJump) {
					nd.tgt = nn
				}
			}
		}
		if nn == nil {
			var err error
			if nn, err = d.node(next); err != nil {
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
			if nn.n == 1 {
				d.pcNode = nn
			}
			d.settle()
			want := uint64(0)
			if nn.n == 1 && nn.in.Class == riscv.ClassBranch {
				want = 1
			}
			if d.remaining() != want {
				return fmt.Errorf("%d unprocessed branches at %#x", d.remaining(), next)
			}
			return nil
		}
		if (mode == modeLast || mode == modeSync) && a >= nn.start && a <= nn.last {
			isBr := a == nn.last && nn.in.Class == riscv.ClassBranch
			if d.arrived(a, isBr) {
				cnt, prev, err := d.countTo(nn, a)
				if err != nil {
					return err
				}
				d.rN += cnt
				d.pc = a
				d.pcNode = nil
				if a == nn.last {
					d.pcNode = nn
				}
				if cnt >= 2 {
					d.prev = prev
				}
				d.settle()
				// a checkpoint when the caller's checks pass: the address
				// and the outcomes agree
				d.arrivedAt, d.arrivedOK = d.emitted+d.rN, true
				return nil
			}
		}
		d.rN += uint64(nn.n)
		d.pc, d.pcNode = nn.last, nn
		if nn.n >= 2 {
			d.prev = nn.prev
			if nn.in.Class != riscv.ClassIndirect {
				d.prevOK = false // not needed
			}
		}
		if nn.in.Class == riscv.ClassBranch {
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
