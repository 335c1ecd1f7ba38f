package analysis

import (
	"path/filepath"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/internal/testprog"
	"github.com/rvtrace/rvtrace/riscv"
)

// examples is the directory of the test programs.
var examples = filepath.Join("..", "examples", "analysis")

// loadProgram loads examples/analysis/NAME.elf and the PCs qemu executed
// for it.
func loadProgram(t testing.TB, name string) (*image.Set, []uint64) {
	t.Helper()
	return testprog.Load(t, name)
}

// pcsToFlow turns an executed PC sequence into flow ranges, the way a
// decoder reports them: a range ends at every instruction that is not
// linear (branches taken or not, jumps, calls, returns) and wherever the
// next PC is not the next instruction. The end type comes from the
// instruction's decoding, as the N-Trace itype table defines it.
func pcsToFlow(t testing.TB, img *image.Set, pcs []uint64) []flow.Event {
	t.Helper()
	var out []flow.Event
	var cur flow.Event
	open := false
	for i, pc := range pcs {
		in, ok := img.Inst(pc)
		if !ok {
			t.Fatalf("no instruction at %#x", pc)
		}
		if !open {
			cur = flow.Event{Kind: flow.KindRange, Start: pc, Offset: -1}
			open = true
		}
		cur.N++
		cur.Last = pc
		hasNext := i+1 < len(pcs)
		var next uint64
		if hasNext {
			next = pcs[i+1]
		}
		end, stop := itypeFor(in, pc, next, hasNext)
		if stop || (hasNext && next != pc+uint64(in.Len)) || !hasNext {
			cur.End = end
			if hasNext {
				cur.Target, cur.HasTarget = next, true
			}
			out = append(out, cur)
			open = false
		}
	}
	return out
}

// itypeFor gives the itype of an instruction and whether it ends a range.
func itypeFor(in riscv.Inst, pc, next uint64, hasNext bool) (ingress.IType, bool) {
	switch in.Class {
	case riscv.ClassBranch:
		if hasNext && next != pc+uint64(in.Len) {
			return ingress.ITypeTaken, true
		}
		return ingress.ITypeNotTaken, true
	case riscv.ClassJump:
		switch in.Link {
		case riscv.LinkCall:
			return ingress.ITypeDirectCall, true
		case riscv.LinkOther:
			return ingress.ITypeOtherDirect, true
		}
		return ingress.ITypeDirectJump, true
	case riscv.ClassIndirect, riscv.ClassTableJump:
		switch in.Link {
		case riscv.LinkCall:
			return ingress.ITypeIndirectCall, true
		case riscv.LinkReturn:
			return ingress.ITypeReturn, true
		case riscv.LinkCoSwap:
			return ingress.ITypeCoSwap, true
		case riscv.LinkOther:
			return ingress.ITypeOtherIndirect, true
		}
		return ingress.ITypeIndirectJump, true
	case riscv.ClassPopRet:
		return ingress.ITypeReturn, true
	case riscv.ClassTrapReturn:
		return ingress.ITypeTrapReturn, true
	}
	return ingress.ITypeNone, false
}

// feed sends events to a sink and closes it.
func feed(t testing.TB, s flow.Sink, evs []flow.Event) {
	t.Helper()
	for i := range evs {
		if err := s.Event(&evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
