package decode

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// TestBlocks builds the blocks of a hand-encoded program and checks them
// against what the instructions mean:
//
//	0x1000 nop
//	0x1004 beq  x0, x0, 0x100c
//	0x1008 nop
//	0x100c auipc t1, 0
//	0x1010 jalr x0, 8(t1)   (sequentially inferable: 0x1014)
//	0x1014 ret
func TestBlocks(t *testing.T) {
	var code []byte
	for _, w := range []uint32{0x00000013, 0x00000463, 0x00000013, 0x00000317, 0x00830067, 0x00008067} {
		code = binary.LittleEndian.AppendUint32(code, w)
	}
	img := image.NewSet()
	img.AddBytes("prog", 0x1000, code)
	c := NewBlocks(img)

	b, err := c.At(0x1000)
	if err != nil {
		t.Fatal(err)
	}
	if b.Start != 0x1000 || b.Last != 0x1004 || b.End != 0x1008 || b.N != 2 || b.Halfwords != 4 ||
		b.Inst.Class != riscv.ClassBranch || b.Target != 0x100c {
		t.Fatalf("block at 0x1000: %+v", *b)
	}
	if again, _ := c.At(0x1000); again != b {
		t.Error("At builds the block twice")
	}
	tgt, err := c.Follow(b, 0x100c)
	if err != nil {
		t.Fatal(err)
	}
	if b.Tgt != tgt || b.Seq != nil {
		t.Errorf("Follow to the target links Tgt %p Seq %p, want Tgt %p", b.Tgt, b.Seq, tgt)
	}
	if tgt.Start != 0x100c || tgt.Last != 0x1010 || tgt.N != 2 || tgt.Inst.Class != riscv.ClassIndirect ||
		tgt.Prev != 0x100c || tgt.Target != 0 {
		t.Fatalf("block at 0x100c: %+v", *tgt)
	}
	if a, ok := ingress.SeqTarget(tgt.PrevInst, tgt.Prev, tgt.Inst, 64); !ok || a != 0x1014 {
		t.Errorf("sequential target from Prev: %#x, %v; want 0x1014", a, ok)
	}
	seq, err := c.Follow(b, 0x1008)
	if err != nil {
		t.Fatal(err)
	}
	if b.Seq != seq || seq.Start != 0x1008 || seq.Last != 0x1010 || seq.N != 3 || seq.Halfwords != 6 || seq.Prev != 0x100c {
		t.Fatalf("fall-through block: %+v (linked %v)", *seq, b.Seq == seq)
	}
	if again, _ := c.Follow(b, 0x1008); again != seq {
		t.Error("Follow does not use the link")
	}
	if n, prev, err := c.CountTo(seq, 0x100c); n != 2 || prev != 0x1008 || err != nil {
		t.Errorf("CountTo(0x100c) = %d, %#x, %v; want 2, 0x1008", n, prev, err)
	}
	if _, _, err := c.CountTo(seq, 0x100e); err == nil {
		t.Error("CountTo accepts the middle of an instruction")
	}
	if _, err := c.At(0x3000); !errors.Is(err, ErrOutsideImage) {
		t.Errorf("At outside the image: %v", err)
	}
}
