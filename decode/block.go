package decode

import (
	"fmt"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// Block is a straight-line run of the program (an image.Run) with what a
// decoder needs to leave it, and links to the blocks it leads to, in the
// manner of libipt's block cache and OpenCSD's code follower: a decoder
// walks the program from block to block, asking the trace only at the
// control-flow instruction that ends each.
type Block struct {
	Start     uint64     // address of the first instruction
	Last      uint64     // address of the control-flow instruction that ends the block
	End       uint64     // address after Last: where a not-taken branch continues
	N         uint32     // instructions, Last included
	Halfwords uint32     // size in 16-bit units, Last included
	Inst      riscv.Inst // the instruction at Last
	// Target is the direct target of the branch or jump at Last (0 for
	// other classes).
	Target uint64
	// Prev and PrevInst are the instruction before Last when the block
	// ends with an indirect jump and has two instructions or more: a
	// sequentially inferable jump takes its target from it (see
	// ingress.SeqTarget).
	Prev     uint64
	PrevInst riscv.Inst
	// Seq and Tgt are the blocks at End and at Target once a walk went
	// there (nil before); see Blocks.Follow.
	Seq, Tgt *Block
}

// blockCacheSize is the number of entries of the direct-mapped cache in
// front of the map of every block built.
const blockCacheSize = 1 << 12

// Blocks builds and keeps the blocks of a program image for one decoder.
// A block is built once, on the first visit of its start address, and
// lookups after that are a direct-mapped cache hit or a map lookup; a walk
// that follows the links of the blocks it passed costs neither. It is not
// safe for concurrent use.
type Blocks struct {
	img   *image.Set
	cache [blockCacheSize]*Block
	all   map[uint64]*Block
}

// NewBlocks returns an empty block cache over img.
func NewBlocks(img *image.Set) *Blocks {
	return &Blocks{img: img, all: make(map[uint64]*Block)}
}

// At returns the block that starts at a. The error wraps ErrOutsideImage
// when a is not in the image or the block runs out of it.
func (c *Blocks) At(a uint64) (*Block, error) {
	h := (a >> 1) & (blockCacheSize - 1)
	if b := c.cache[h]; b != nil && b.Start == a {
		return b, nil
	}
	b := c.all[a]
	if b == nil {
		var err error
		if b, err = c.build(a); err != nil {
			return nil, err
		}
		c.all[a] = b
	}
	c.cache[h] = b
	return b, nil
}

// Cached reports whether the block that starts at a is in the cache in
// front of the map (then a is in the image): a check cheaper than the
// image's when it succeeds.
func (c *Blocks) Cached(a uint64) bool {
	b := c.cache[(a>>1)&(blockCacheSize-1)]
	return b != nil && b.Start == a
}

func (c *Blocks) build(a uint64) (*Block, error) {
	if c.img == nil {
		return nil, fmt.Errorf("%w: no program image", ErrOutsideImage)
	}
	r, err := c.img.Run(a)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOutsideImage, err)
	}
	b := &Block{Start: a, Last: r.LastAddr, End: r.End(), N: r.N, Halfwords: r.Halfwords, Inst: r.Last}
	if r.Last.Class == riscv.ClassBranch || r.Last.Class == riscv.ClassJump {
		b.Target = r.Last.Target(r.LastAddr)
	}
	if r.N >= 2 && r.Last.Class == riscv.ClassIndirect {
		_, b.Prev, _ = c.CountTo(b, b.Last)
		b.PrevInst, _ = c.img.Inst(b.Prev)
	}
	return b, nil
}

// Follow returns the block at next, where execution continues after the
// instruction that ends b, and links it to b when next is b's
// fall-through or direct target, so that the next walk through b finds it
// without a lookup.
func (c *Blocks) Follow(b *Block, next uint64) (*Block, error) {
	switch {
	case next == b.End:
		if b.Seq != nil && b.Seq.Start == next {
			return b.Seq, nil
		}
		nb, err := c.At(next)
		if err == nil {
			b.Seq = nb
		}
		return nb, err
	case next == b.Target && (b.Inst.Class == riscv.ClassBranch || b.Inst.Class == riscv.ClassJump):
		if b.Tgt != nil && b.Tgt.Start == next {
			return b.Tgt, nil
		}
		nb, err := c.At(next)
		if err == nil {
			b.Tgt = nb
		}
		return nb, err
	}
	return c.At(next)
}

// CountTo counts the instructions of b from its start up to and
// including the one at a, and returns the address of the instruction
// before a (0 when a is the first). The error says when a is not an
// instruction of b.
func (c *Blocks) CountTo(b *Block, a uint64) (n uint64, prev uint64, err error) {
	x := b.Start
	for {
		in := c.img.InstPtr(x)
		if in == nil || in.Len == 0 {
			return 0, 0, fmt.Errorf("%w: no instruction at %#x", ErrOutsideImage, x)
		}
		n++
		if x == a {
			return n, prev, nil
		}
		prev = x
		x += uint64(in.Len)
		if x > a {
			return 0, 0, fmt.Errorf("address %#x is not an instruction boundary (run from %#x)", a, b.Start)
		}
	}
}

// Uninferable reports whether an instruction of class c leaves for a
// target the image alone does not give: an indirect jump, a Zcmt table
// jump (its target is in a table in memory), a pop-and-return or a trap
// return. The trace reports such a target unless an optional mode lets
// the decoder infer it: a sequentially inferable jump (SeqTarget), an
// implicit return (ReturnStack), a table jump when the decoder knows the
// table.
func Uninferable(c riscv.Class) bool {
	switch c {
	case riscv.ClassIndirect, riscv.ClassTableJump, riscv.ClassPopRet, riscv.ClassTrapReturn:
		return true
	}
	return false
}

// SeqTarget returns the target of the indirect jump jmp when it is
// sequentially inferable (ingress.SeqTarget, which the encoders use) from
// the instruction retired before it: the one before it in b when b (nil
// if not known) is jmp's block and has two instructions or more, else
// prev (nil if not known), at prevPC.
func SeqTarget(b *Block, jmp *riscv.Inst, prev *riscv.Inst, prevPC uint64, xlen int) (uint64, bool) {
	if jmp.Class != riscv.ClassIndirect || jmp.Rs1 == 0 {
		return 0, false
	}
	if b != nil && b.N >= 2 {
		return ingress.SeqTarget(b.PrevInst, b.Prev, *jmp, xlen)
	}
	if prev == nil {
		return 0, false
	}
	return ingress.SeqTarget(*prev, prevPC, *jmp, xlen)
}

// Exit returns where execution continues after the instruction that ends
// b when the image tells it once the outcome of a conditional branch is
// known: the target of a branch taken or of a direct jump, else the
// instruction after it (a branch not taken, an instruction that does not
// jump). nb is the block there when a walk linked it already (it may
// start elsewhere when b's links are stale: check nb.Start), else nil;
// it is how execution leaves b. The target of an uninferable jump
// (Uninferable) is not the image's to give: the caller resolves it.
func (b *Block) Exit(taken bool) (next uint64, nb *Block, it ingress.IType) {
	switch b.Inst.Class {
	case riscv.ClassBranch:
		if taken {
			return b.Target, b.Tgt, ingress.ITypeTaken
		}
		return b.End, b.Seq, ingress.ITypeNotTaken
	case riscv.ClassJump:
		return b.Target, b.Tgt, ingress.ITypeOf(b.Inst, true)
	}
	return b.End, b.Seq, ingress.ITypeNone
}
