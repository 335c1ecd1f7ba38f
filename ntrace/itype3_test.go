package ntrace

import (
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/internal/corpus"
)

// threeBitBlocks returns blocks as an ingress port with a 3-bit itype
// may report them: a direct jump or call has itype 0 there, and the block
// it ends in blocks goes on with the next one (of the same privilege and
// context, not a trap).
func threeBitBlocks(blocks []ingress.Block) (out []ingress.Block, merged int) {
	for i := 0; i < len(blocks); i++ {
		b := blocks[i]
		for (b.IType == ingress.ITypeDirectJump || b.IType == ingress.ITypeDirectCall || b.IType == ingress.ITypeOtherDirect) &&
			i+1 < len(blocks) && !blocks[i+1].IType.IsTrap() && blocks[i+1].IRetire > 0 &&
			blocks[i+1].Priv == b.Priv && blocks[i+1].Context == b.Context {
			n := blocks[i+1]
			n.IAddr, n.IRetire = b.IAddr, n.IRetire+b.IRetire
			b = n
			i++
			merged++
		}
		out = append(out, b)
	}
	return out, merged
}

// With a 3-bit ingress itype a block may go on past a direct jump or
// call, where the decoder's walk ends a range: the check that a sync due
// after the sync period ran out (counting messages) covers one block
// counted ranges, and made a gap of such an intact BTM trace (the first
// config) before it was limited to 4-bit ports as its HTM counterpart
// (checkDueBlock) is. The trace decodes to every PC, with no gap.
func TestDueWalkThreeBitPort(t *testing.T) {
	img := image.NewSet()
	if err := img.AddELF(corpus.Path(t, "ntrace-refcode/elf/coremark.riscv")); err != nil {
		t.Fatal(err)
	}
	pcs := synthFlow(img, 3, 60000, true)
	blocks, merged := threeBitBlocks(synthBlocks(t, img, pcs, false, 3))
	if merged < 1000 {
		t.Fatalf("%d blocks go on past a direct jump: the test lost its case", merged)
	}
	for _, cfg := range []Config{
		{Mode: BTM, SyncMode: SyncMessages, SyncMax: 0, ITypeWidth: 3},
		{Mode: BTM, SyncMode: SyncMessages, SyncMax: 1, ITypeWidth: 3, RepeatBranch: true},
		{Mode: HTM, SyncMode: SyncMessages, SyncMax: 0, ITypeWidth: 3},
	} {
		roundTrip(t, img, blocks, pcs, cfg)
	}
}
