package etrace

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/sim"
)

// encodeBlocks encodes blocks with the encoder's per-block shortcuts (the
// block cache and the quiet step) on, or off when slow; between blocks,
// before(i) may change the image (it runs before block i).
func encodeBlocks(t testing.TB, cfg Config, img *image.Set, blocks []ingress.Block, slow bool, before func(i int)) ([]byte, *Stats, *Encoder) {
	t.Helper()
	var buf bytes.Buffer
	e, err := NewEncoder(&buf, cfg, img)
	if err != nil {
		t.Fatal(err)
	}
	e.blocks.off, e.noQuiet = slow, slow
	for i := range blocks {
		if before != nil {
			before(i)
		}
		if err := e.Block(&blocks[i]); err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), e.Stats(), e
}

// mergeNotTaken joins each block ending in a not-taken branch with the
// block after it, as a port retiring several branches per block (ntkn)
// reports them: blocks with control-flow instructions inside, which the
// encoder finds by walking the image and does not cache.
func mergeNotTaken(blocks []ingress.Block) []ingress.Block {
	var out []ingress.Block
	for i := 0; i < len(blocks); i++ {
		b := blocks[i]
		for b.IType == ingress.ITypeNotTaken && b.IRetire > 0 && i+1 < len(blocks) {
			n := &blocks[i+1]
			if n.IRetire == 0 || n.IAddr != b.NextAddr() || n.Priv != b.Priv || n.CType != 0 {
				break
			}
			b.IRetire += n.IRetire
			b.IType, b.ILastSize, b.Time, b.SIJump = n.IType, n.ILastSize, n.Time, n.SIJump
			b.Cause, b.TVal = n.Cause, n.TVal
			i++
		}
		out = append(out, b)
	}
	return out
}

// cachedBlocks counts the blocks the encoder's cache holds.
func cachedBlocks(e *Encoder) int {
	n := 0
	if e.blocks.t == nil {
		return 0
	}
	for i := range e.blocks.t {
		if e.blocks.t[i].shape != 0 {
			n++
		}
	}
	return n
}

// TestBlockCacheSameBytes: the encoder writes the same bytes and counts
// the same instructions with its block cache and quiet steps as when it
// walks the image for every block and takes doInst for every instruction
// step (with an image, and without one for 4-bit itypes), on the simulator's blocks of programs with traps,
// interrupts and trap returns (coalesced and one per instruction), on the
// same blocks with 3-bit itypes (which the image refines), on the same
// blocks merged across not-taken branches (blocks with branches inside,
// which take the walk), in every mode and both layouts; and the cache is
// used.
func TestBlockCacheSameBytes(t *testing.T) {
	progs := simPrograms
	if testing.Short() {
		progs = progs[:4]
	}
	for _, prog := range progs {
		for _, bm := range []sim.BlockMode{sim.Coalesced, sim.PerInstruction} {
			img, simBlocks := runSim(t, prog, bm, 1_000_000)
			threeBit := append([]ingress.Block(nil), simBlocks...)
			for i := range threeBit {
				threeBit[i].IType = threeBit[i].IType.To3Bit()
			}
			inputs := [][]ingress.Block{simBlocks, threeBit}
			if bm == sim.Coalesced {
				merged := mergeNotTaken(simBlocks)
				if len(merged) == len(simBlocks) {
					t.Fatalf("%s: no blocks merged", prog)
				}
				inputs = append(inputs, merged)
			}
			for k, blocks := range inputs {
				for _, v := range []Version{V2, V026} {
					for _, m := range modes {
						cfg := DefaultConfig()
						cfg.Version = v
						m.set(&cfg)
						if m.name == "implicit-exception" || m.name == "all" {
							cfg.Params.TVec = trapVector(blocks)
						}
						name := fmt.Sprintf("%s/%v/%s/%s/%s", prog, bm, [...]string{"sim", "3-bit", "merged"}[k], v, m.name)
						got, gst, e := encodeBlocks(t, cfg, img, blocks, false, nil)
						want, wst, _ := encodeBlocks(t, cfg, img, blocks, true, nil)
						if !bytes.Equal(got, want) {
							t.Errorf("%s: %d bytes with the block cache and quiet steps, %d without; they differ", name, len(got), len(want))
						}
						if *gst != *wst {
							t.Errorf("%s: stats %+v with the block cache and quiet steps, %+v without", name, gst, wst)
						}
						if c := cachedBlocks(e); c == 0 {
							t.Errorf("%s: no block cached", name)
						}
						if k == 0 {
							got, gst, _ := encodeBlocks(t, cfg, nil, blocks, false, nil)
							want, wst, _ := encodeBlocks(t, cfg, nil, blocks, true, nil)
							if !bytes.Equal(got, want) || *gst != *wst {
								t.Errorf("%s, no image: %d bytes (stats %+v) with quiet steps, %d (%+v) without; they differ", name, len(got), gst, len(want), wst)
							}
						}
					}
				}
			}
		}
	}
}

// TestBlockCacheImageChange: code added to the image between two blocks
// (an instruction inside the program's most frequent block replaced by a
// branch, just before the block runs again) is seen by the blocks after
// it as when the encoder walks the image for every block: the cache is
// dropped when the image's generation changes.
func TestBlockCacheImageChange(t *testing.T) {
	const prog = "median.riscv"
	_, blocks := runSim(t, prog, sim.Coalesced, 1_000_000)
	count := map[[2]uint64]int{}
	var hot ingress.Block
	for _, b := range blocks {
		if b.IRetire < 8 || b.IType.IsTrap() {
			continue
		}
		k := [2]uint64{b.IAddr, b.LastAddr()}
		count[k]++
		if count[k] > count[[2]uint64{hot.IAddr, hot.LastAddr()}] {
			hot = b
		}
	}
	load := func() *image.Set {
		img := image.NewSet()
		if err := img.AddELF(filepath.Join(corpus, "elf", prog)); err != nil {
			t.Fatal(err)
		}
		return img
	}
	img := load()
	// the block's second instruction becomes a branch of its size
	first, ok := img.Inst(hot.IAddr)
	if !ok {
		t.Fatalf("no instruction at %#x", hot.IAddr)
	}
	at := hot.IAddr + uint64(first.Len)
	in, ok := img.Inst(at)
	if !ok || at >= hot.LastAddr() {
		t.Fatalf("block %#x-%#x: no second instruction", hot.IAddr, hot.LastAddr())
	}
	patch := binary.LittleEndian.AppendUint16(nil, 0xc011) // c.beqz s0,+4
	if in.Len == 4 {
		patch = binary.LittleEndian.AppendUint32(nil, 0x00100463) // beq zero,ra,+8
	}
	// the image changes just before the middle execution of the block,
	// which the encoder has cached by then
	var runs []int
	for i, b := range blocks {
		if b.IAddr == hot.IAddr && b.LastAddr() == hot.LastAddr() {
			runs = append(runs, i)
		}
	}
	if len(runs) < 10 {
		t.Fatalf("block %#x-%#x runs %d times", hot.IAddr, hot.LastAddr(), len(runs))
	}
	half := runs[len(runs)/2]
	cfg := DefaultConfig()
	var out [2][]byte
	for k, off := range []bool{false, true} {
		img := load()
		change := func(i int) {
			if i == half {
				img.AddBytes("patch", at, patch)
			}
		}
		data, _, e := encodeBlocks(t, cfg, img, blocks, off, change)
		if !off && cachedBlocks(e) == 0 {
			t.Error("no block cached")
		}
		out[k] = data
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Errorf("after the image changed: %d bytes with the block cache, %d without; they differ", len(out[0]), len(out[1]))
	}
	same, _, _ := encodeBlocks(t, cfg, load(), blocks, true, nil)
	if bytes.Equal(same, out[1]) {
		t.Error("the patch did not change the trace: the test proves nothing")
	}
}
