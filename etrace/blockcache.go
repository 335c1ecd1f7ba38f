package etrace

import (
	"github.com/rvtrace/rvtrace/ingress"
)

// blockCacheBits sets the size of the encoder's block cache: 1<<12
// entries of 24 bytes, enough for the distinct blocks of the hot code of
// a benchmark (coremark has about 900) at a cost of 96 KiB per encoder
// that has an image.
const blockCacheBits = 12

// blockEntry is what the walk through the program image found for a
// block that is one straight-line run (see Encoder.interior): the
// block's first instruction address and shape (the key), how many
// instructions it holds, and the lastRefinement of its last instruction.
type blockEntry struct {
	start uint64
	shape uint64 // blockShape; 0: no entry
	n     uint32
	ref   ingress.IType
}

// blockShape returns the key of block b besides its first address: its
// halfwords retired and the size of its last instruction, which give its
// last instruction address. It is not 0 for a block that retired
// instructions.
func blockShape(b *ingress.Block) uint64 {
	return uint64(b.IRetire)<<8 | uint64(b.ILastSize)
}

// blockCache remembers blockEntry values per block start address, direct
// mapped, so that a block the encoder has seen before costs a table lookup
// instead of a walk through the image (a run lookup, and an instruction by
// instruction count when the block ends before the run does) and a lookup
// of its last instruction. Blocks with a control-flow instruction before
// their last one (ntkn ports, code the image does not hold as it ran)
// and blocks the walk rejects are not cached: they take the walk each
// time. The entries hold for one [image.Set.Generation] of the image:
// the cache is emptied when it changes. The zero value is an empty cache
// that allocates its table on the first store.
type blockCache struct {
	t   *[1 << blockCacheBits]blockEntry
	gen uint64
	off bool // never store: every block takes the walk (tests)
}

// blockSlot returns the index of the entry of the block starting at start.
func blockSlot(start uint64) uint64 {
	return (start * 0x9e3779b97f4a7c15) >> (64 - blockCacheBits)
}

// noImageGen is the generation of the block cache of an encoder without
// an image (Encoder.imgGen): its entries are what Block counts for a
// block from the port alone (its halfwords retired over two
// instructions, the port's itype kept), so that Branches takes such
// blocks as it takes those an image describes.
const noImageGen = ^uint64(0)

// lookup returns the cached entry of block b (which retired instructions)
// of the image of generation gen, or nil.
func (c *blockCache) lookup(gen uint64, b *ingress.Block) *blockEntry {
	if c.t == nil || c.gen != gen {
		return nil
	}
	en := &c.t[blockSlot(b.IAddr)]
	if en.start != b.IAddr || en.shape != blockShape(b) {
		return nil
	}
	return en
}

// store caches what the walk found for block b (which retired
// instructions) of the image of generation gen: n instructions, the last
// refined by ref.
func (c *blockCache) store(gen uint64, b *ingress.Block, n uint32, ref ingress.IType) {
	if c.off {
		return
	}
	if c.t == nil || c.gen != gen {
		if c.t == nil {
			c.t = new([1 << blockCacheBits]blockEntry)
		} else {
			clear(c.t[:])
		}
		c.gen = gen
	}
	c.t[blockSlot(b.IAddr)] = blockEntry{start: b.IAddr, shape: blockShape(b), n: n, ref: ref}
}
