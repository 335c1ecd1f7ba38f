package decode

import (
	"encoding/binary"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// infer program, hand-encoded:
//
//	0x2000 beq  x0, x0, 0x2008
//	0x2004 jal  ra, 0x2010      (a call)
//	0x2008 auipc t1, 0
//	0x200c jalr x0, 12(t1)      (sequentially inferable: 0x2014)
//	0x2010 jalr x0, 0(t1)       (alone in its block: its constant load is elsewhere)
//	0x2014 ret
//	0x2018 mret
func inferProg(t *testing.T) *Blocks {
	t.Helper()
	var code []byte
	for _, w := range []uint32{0x00000463, 0x00c000ef, 0x00000317, 0x00c30067, 0x00030067, 0x00008067, 0x30200073} {
		code = binary.LittleEndian.AppendUint32(code, w)
	}
	img := image.NewSet()
	img.AddBytes("prog", 0x2000, code)
	return NewBlocks(img)
}

// TestExit checks where each kind of block leads, from the meaning of the
// instructions above.
func TestExit(t *testing.T) {
	c := inferProg(t)
	br, err := c.At(0x2000)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		b     *Block
		taken bool
		next  uint64
		it    ingress.IType
	}{
		{br, true, 0x2008, ingress.ITypeTaken},
		{br, false, 0x2004, ingress.ITypeNotTaken},
	} {
		next, nb, it := tc.b.Exit(tc.taken)
		if next != tc.next || it != tc.it || nb != nil {
			t.Errorf("Exit(%v) of the branch = %#x, %v, %p; want %#x, %v, nil", tc.taken, next, it, nb, tc.next, tc.it)
		}
	}
	call, _ := c.At(0x2004)
	for _, taken := range []bool{false, true} {
		if next, _, it := call.Exit(taken); next != 0x2010 || it != ingress.ITypeDirectCall {
			t.Errorf("Exit(%v) of jal ra = %#x, %v; want 0x2010, direct call", taken, next, it)
		}
	}
	tgt, err := c.Follow(br, 0x2008)
	if err != nil {
		t.Fatal(err)
	}
	if next, nb, _ := br.Exit(true); next != 0x2008 || nb != tgt {
		t.Errorf("Exit after Follow: %#x, %p; want the linked block %p", next, nb, tgt)
	}
}

// TestUninferable checks the classification against the jumps the image
// cannot give a target for.
func TestUninferable(t *testing.T) {
	want := map[riscv.Class]bool{riscv.ClassIndirect: true, riscv.ClassTableJump: true, riscv.ClassPopRet: true,
		riscv.ClassTrapReturn: true}
	for _, c := range []riscv.Class{riscv.ClassLinear, riscv.ClassBranch, riscv.ClassJump, riscv.ClassIndirect,
		riscv.ClassTableJump, riscv.ClassPopRet, riscv.ClassTrapReturn, riscv.ClassECall, riscv.ClassEBreak,
		riscv.ClassIllegal} {
		if Uninferable(c) != want[c] {
			t.Errorf("Uninferable(%v) = %v", c, !want[c])
		}
	}
	c := inferProg(t)
	for a, w := range map[uint64]bool{0x2014: true, 0x2018: true, 0x2000: false, 0x2004: false} {
		b, err := c.At(a)
		if err != nil {
			t.Fatal(err)
		}
		if Uninferable(b.Inst.Class) != w {
			t.Errorf("the instruction at %#x: Uninferable %v", b.Last, !w)
		}
	}
}

// TestSeqTarget infers the jalr after auipc from the block, and the lone
// jalr only from the instruction given as retired before it.
func TestSeqTarget(t *testing.T) {
	c := inferProg(t)
	b, err := c.At(0x2008)
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := SeqTarget(b, &b.Inst, nil, 0, 64); !ok || a != 0x2014 {
		t.Errorf("SeqTarget in the block = %#x, %v; want 0x2014", a, ok)
	}
	lone, err := c.At(0x2010)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := SeqTarget(lone, &lone.Inst, nil, 0, 64); ok {
		t.Error("SeqTarget of a lone jalr with no instruction before it")
	}
	auipc, _ := c.img.Inst(0x2008)
	// as if the auipc at 0x2008 had retired just before: t1 = 0x2008
	if a, ok := SeqTarget(lone, &lone.Inst, &auipc, 0x2008, 64); !ok || a != 0x2008 {
		t.Errorf("SeqTarget after auipc = %#x, %v; want 0x2008", a, ok)
	}
	ret, _ := c.At(0x2014)
	if _, ok := SeqTarget(ret, &ret.Inst, &auipc, 0x2008, 64); ok {
		t.Error("SeqTarget infers ret from an auipc of another register")
	}
	jal, _ := c.At(0x2004)
	if _, ok := SeqTarget(jal, &jal.Inst, &auipc, 0x2008, 64); ok {
		t.Error("SeqTarget of a direct jump")
	}
}
