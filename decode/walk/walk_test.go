package walk

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

type recorder struct{ ev []flow.Event }

func (r *recorder) Event(e *flow.Event) error { r.ev = append(r.ev, *e); return nil }
func (r *recorder) Close() error              { return nil }

func words(ws ...uint32) []byte {
	var b []byte
	for _, w := range ws {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}

// TestWalkerViews follows code overwritten at instruction 10 and code of
// context 7: the walker switches address space as the image says, with
// the blocks of each, and ranges name the view they were decoded in.
func TestWalkerViews(t *testing.T) {
	img := image.NewSet()
	img.AddBytes("prog", 0x1000, words(0x00000013, 0x00000463))                       // nop; beq x0,x0,+8
	img.AddTimedBytes(true, 0, 10, "patch", 0x1000, words(0x0000006f))                // j . (from instruction 10)
	img.AddContextBytes(7, "ctx7", 0x1000, words(0x00000013, 0x00000013, 0x00008067)) // nop; nop; ret
	var rec recorder
	var w Walker
	w.Init(img, &rec)
	b, err := w.Block(0x1000)
	if err != nil {
		t.Fatal(err)
	}
	if b.N != 2 || b.Last != 0x1004 {
		t.Fatalf("block at 0x1000 before the patch: %+v", *b)
	}
	if w.Due(9) || !w.Due(10) {
		t.Fatalf("Due(9) %v, Due(10) %v: the memory changes at instruction 10", w.Due(9), w.Due(10))
	}
	w.Advance(10)
	if w.Due(1 << 40) {
		t.Error("Due after the last epoch")
	}
	before := w.Img
	w.View(0, 10)
	if w.Img == before || !w.Changed {
		t.Fatal("View at the epoch keeps the old address space")
	}
	if nb, err := w.Follow(b, 0x1000); err != nil || nb.N != 1 || nb.Last != 0x1000 || w.Changed {
		t.Fatalf("Follow after the patch: %+v, %v (Changed %v); want the 1-instruction block of j .", nb, err, w.Changed)
	}
	var tally decode.Tally
	ev := w.Range()
	ev.Src, ev.Start, ev.Last, ev.N, ev.End, ev.Target, ev.HasTarget, ev.Offset = 2, 0x1000, 0x1000, 1,
		ingress.ITypeDirectJump, 0x1000, true, 5
	if err := w.Send(&tally); err != nil {
		t.Fatal(err)
	}
	if e := rec.ev[0]; e.Kind != flow.KindRange || e.Src != 2 || e.Image != w.Img || e.N != 1 || e.Offset != 5 ||
		tally.Emitted() != 1 {
		t.Errorf("range in the patched view: %+v, tally %d", e, tally.Emitted())
	}
	w.View(7, 0)
	if b, err := w.Block(0x1000); err != nil || b.N != 3 {
		t.Fatalf("context 7: %+v, %v; want its 3-instruction block", b, err)
	}
	w.View(0, 10)
	if w.BlocksOf(w.Img) != w.Blocks {
		t.Error("BlocksOf does not return the blocks of the address space followed")
	}
	var other Walker
	other.Init(img, &rec)
	other.View(7, 0)
	if !other.Share(&w) || other.Blocks != w.BlocksOf(other.Img) {
		t.Error("Share does not take the blocks built for the same address space")
	}
	if _, err := w.Block(0x3000); !errors.Is(err, decode.ErrOutsideImage) {
		t.Errorf("Block outside the image: %v", err)
	}
}

// TestWalkerGap reports a gap after 5 instructions of which the last 3 are
// unverified: the event carries the error, its position and Suspect 3,
// and the point known good moves to the gap.
func TestWalkerGap(t *testing.T) {
	img := image.NewSet()
	img.AddBytes("prog", 0x1000, words(0x00000013))
	var rec recorder
	var w Walker
	w.Init(img, &rec)
	var tally decode.Tally
	tally.Emit(2)
	tally.Good()
	tally.Emit(3)
	e := &decode.Error{Offset: 40, Index: 6, What: "DirectBranch", Err: decode.ErrCheckpoint}
	if err := w.Gap(1, ingress.PrivS, e, tally.Suspect(), 0, &tally); err != nil {
		t.Fatal(err)
	}
	g := rec.ev[0]
	if g.Kind != flow.KindGap || g.Src != 1 || g.Offset != 40 || g.Index != 6 || g.Suspect != 3 || g.Err != e ||
		g.Priv != ingress.PrivS {
		t.Errorf("gap event %+v", g)
	}
	if tally.Suspect() != 0 || tally.Mark() != 5 {
		t.Errorf("after the gap: suspect %d, known good %d; want 0, 5", tally.Suspect(), tally.Mark())
	}
	if err := w.Warn(1, ingress.PrivU, &decode.Error{Offset: 50, Index: 7, Err: decode.ErrSkipped}); err != nil {
		t.Fatal(err)
	}
	if v := rec.ev[1]; v.Kind != flow.KindWarn || v.Offset != 50 || v.Index != 7 || v.Suspect != 0 ||
		!errors.Is(v.Err, decode.ErrSkipped) {
		t.Errorf("warning event %+v", v)
	}
}
