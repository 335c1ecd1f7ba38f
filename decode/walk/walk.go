// Package walk is the walker both trace decoders (ntrace, etrace) follow
// the program with and report the flow through: the address space
// followed and the blocks of each (decode.Blocks), the instruction count
// at which the image's memory changes, and the builders of range, gap and
// warning events (flow.Event) with the integrity bookkeeping of
// decode.Tally. It is a package of its own, below the protocols and above
// package flow, because package flow reads decode.Error.
package walk

import (
	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// Walker is what a decoder follows the program with and reports the flow
// through, whatever its protocol: the address space followed (a view of
// the program image for one context and instruction count, see
// image.Set.View), the blocks of every address space followed, the
// instruction count at which the image's memory changes next, and the
// sink that receives the ranges, gaps and warnings it builds. A decoder
// embeds one (by value: its hot path reads Img and Blocks directly) and
// calls Init before use. It is not safe for concurrent use.
type Walker struct {
	// Base is the program image as given; Img is the view of it followed
	// now, whose blocks are Blocks.
	Base, Img *image.Set
	Blocks    *decode.Blocks
	// Changed says that the address space changed (Use) since the walk
	// last took a block: a link of a block of the old one must not be
	// followed. Block and Follow clear it.
	Changed bool
	// the blocks of each address space followed
	blocksBy map[*image.Set]*decode.Blocks
	// the instruction count at which Base's memory changes next
	// (image.Set.Epochs), ^0 when it never does
	epoch uint64
	// Sink receives the events; a decoder sends its other events there
	// too.
	Sink flow.Sink
	// rev is the last range event sent (only the range fields are ever
	// set); ev holds the other events.
	rev, ev flow.Event
}

// Init makes w follow img from instruction 0 in context 0, reporting to
// sink.
func (w *Walker) Init(img *image.Set, sink flow.Sink) {
	view := img.View(0, 0)
	*w = Walker{Base: img, Img: view, Blocks: decode.NewBlocks(view), epoch: ^uint64(0), Sink: sink}
	w.blocksBy = map[*image.Set]*decode.Blocks{view: w.Blocks}
	if e := img.Epochs(); len(e) > 0 {
		w.epoch = e[0]
	}
}

// Share makes w use the blocks other built, for the address spaces both
// follow (a decoder of a piece of a trace starting where another
// stopped). It returns false, changing nothing, when other has none for
// the address space w follows now.
func (w *Walker) Share(other *Walker) bool {
	b := other.blocksBy[w.Img]
	if b == nil {
		return false
	}
	w.blocksBy, w.Blocks = other.blocksBy, b
	return true
}

// Use follows the address space v (a view of Base), with its own blocks,
// and reports whether it differs from the one followed before (Changed is
// then set).
func (w *Walker) Use(v *image.Set) bool {
	if v == w.Img {
		return false
	}
	w.Img = v
	w.Blocks, w.Changed = w.BlocksOf(v), true
	return true
}

// View follows the address space of context ctx after n instructions and
// returns it.
func (w *Walker) View(ctx, n uint64) *image.Set {
	v := w.Base.View(ctx, n)
	w.Use(v)
	return v
}

// BlocksOf returns the blocks of the address space v, created empty on
// the first call.
func (w *Walker) BlocksOf(v *image.Set) *decode.Blocks {
	b := w.blocksBy[v]
	if b == nil {
		b = decode.NewBlocks(v)
		w.blocksBy[v] = b
	}
	return b
}

// Due reports whether the image's memory changes at the instruction
// count n (code overwritten while the traced system ran:
// image.Set.AddTimedBytes): the decoder then calls Advance and follows
// the view of its context at n.
func (w *Walker) Due(n uint64) bool { return n >= w.epoch }

// Advance sets the next instruction count at which the image's memory
// changes after n.
func (w *Walker) Advance(n uint64) {
	w.epoch = ^uint64(0)
	for _, e := range w.Base.Epochs() {
		if e > n {
			w.epoch = e
			break
		}
	}
}

// Block returns the block at a in the address space followed.
func (w *Walker) Block(a uint64) (*decode.Block, error) {
	w.Changed = false
	return w.Blocks.At(a)
}

// Follow returns the block at next, a successor of b, by b's links while
// the address space is the one b belongs to (Blocks.Follow).
func (w *Walker) Follow(b *decode.Block, next uint64) (*decode.Block, error) {
	if w.Changed {
		w.Changed = false
		return w.Blocks.At(next)
	}
	return w.Blocks.Follow(b, next)
}

// Contains reports whether a is in the address space followed, looking
// in the block cache first.
func (w *Walker) Contains(a uint64) bool { return w.Blocks.Cached(a) || w.Img.Contains(a) }

// Range returns the range event to fill before Send: its Kind is
// flow.KindRange and its Image the address space followed (nil when it
// is Base); the decoder sets the other range fields (Src, Start, Last,
// N, End, Target, HasTarget, Priv, Offset), as no other event uses it.
// It stays readable with LastRange until the next Range.
func (w *Walker) Range() *flow.Event {
	ev := &w.rev
	ev.Kind, ev.Image = flow.KindRange, nil
	if w.Img != w.Base {
		ev.Image = w.Img
	}
	return ev
}

// Send sends the range event filled after Range, counting its
// instructions into t. (Range and Send are two calls, both inlined, for
// the hot path of a decoder: one range every few instructions.)
func (w *Walker) Send(t *decode.Tally) error {
	t.Emit(w.rev.N)
	return w.Sink.Event(&w.rev)
}

// LastRange returns the last range event filled (its zero value
// before the first).
func (w *Walker) LastRange() *flow.Event { return &w.rev }

// Gap reports the loss e found in the trace of source src as a
// flow.KindGap event: Suspect n counts the instructions emitted since the
// last point known good that may be wrong (the last n of the ranges sent
// before; flow.Strict withholds them), addr is the address of a sync that
// lies outside every image (0 for other gaps). The point known good
// moves to the gap: t (nil when the gap belongs to no source) is marked
// good, as decoding resumes at a verified point.
func (w *Walker) Gap(src uint32, priv ingress.Priv, e *decode.Error, n, addr uint64, t *decode.Tally) error {
	if t != nil {
		t.Good()
	}
	w.ev = flow.Event{Kind: flow.KindGap, Src: src, Offset: e.Offset, Index: e.Index, Suspect: n, Err: e,
		Priv: priv, Addr: addr}
	return w.Sink.Event(&w.ev)
}

// Warn reports e, something the user should know that lost no trace, as
// a flow.KindWarn event at e's offset and index.
func (w *Walker) Warn(src uint32, priv ingress.Priv, e *decode.Error) error {
	w.ev = flow.Event{Kind: flow.KindWarn, Src: src, Offset: e.Offset, Index: e.Index, Err: e, Priv: priv}
	return w.Sink.Event(&w.ev)
}
