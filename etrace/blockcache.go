package etrace

import (
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// blockCacheBits sets the size of the encoder's block cache: 1<<12
// entries of 24 bytes, enough for the distinct blocks of the hot code of
// a benchmark (coremark has about 900) at a cost of 96 KiB per encoder
// that has an image.
const blockCacheBits = 12

// blockEntry is what the walk through the program image found for a
// block that is one straight-line run (see Encoder.interior): its first
// and last instruction addresses (the key), how many instructions it
// holds, and the lastRefinement of its last instruction.
type blockEntry struct {
	start, last uint64
	n           uint32
	ref         ingress.IType
	ok          bool
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
	t   []blockEntry
	gen uint64
	off bool // never store: every block takes the walk (tests)
}

// blockSlot returns the index of the entry of the block starting at start.
func blockSlot(start uint64) uint64 {
	return (start * 0x9e3779b97f4a7c15) >> (64 - blockCacheBits)
}

// lookup returns the cached entry of the block from start to last of
// image img, or nil.
func (c *blockCache) lookup(img *image.Set, start, last uint64) *blockEntry {
	if c.t == nil || c.gen != img.Generation() {
		return nil
	}
	b := &c.t[blockSlot(start)]
	if !b.ok || b.start != start || b.last != last {
		return nil
	}
	return b
}

// store caches what the walk found for the block from start to last of
// image img: n instructions, the last refined by ref.
func (c *blockCache) store(img *image.Set, start, last uint64, n uint32, ref ingress.IType) {
	if c.off {
		return
	}
	if c.t == nil || c.gen != img.Generation() {
		if c.t == nil {
			c.t = make([]blockEntry, 1<<blockCacheBits)
		} else {
			clear(c.t)
		}
		c.gen = img.Generation()
	}
	c.t[blockSlot(start)] = blockEntry{start: start, last: last, n: n, ref: ref, ok: true}
}
