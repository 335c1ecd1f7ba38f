package analysis

import (
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// BlockFlow is an ingress.Sink that turns ingress-port blocks (from a
// simulator, a PC list or an ingress capture) into the decoded flow, so
// the analyses run on them without encoding and decoding a trace: a
// context event when the privilege or context changes, a time event when
// the block time changes, a range per block (its instructions counted by
// decoding the image) and a trap event for blocks that end in an
// exception or interrupt. Close closes the flow sink.
type BlockFlow struct {
	img      *image.Set
	sink     flow.Sink
	ev       flow.Event
	init     bool
	priv     ingress.Priv
	ctx      uint64
	time     uint64
	timed    bool
	trap     flow.Event
	haveTrap bool
}

// NewBlockFlow returns a BlockFlow over img writing to sink.
func NewBlockFlow(img *image.Set, sink flow.Sink) *BlockFlow {
	return &BlockFlow{img: img, sink: sink}
}

// Block converts one block.
func (f *BlockFlow) Block(b *ingress.Block) error {
	if f.haveTrap {
		f.haveTrap = false
		f.trap.Target, f.trap.HasTarget = b.IAddr, true
		if err := f.sink.Event(&f.trap); err != nil {
			return err
		}
	}
	if !f.init || b.Priv != f.priv || b.Context != f.ctx {
		f.ev = flow.Event{Kind: flow.KindContext, Priv: b.Priv, Context: b.Context, Offset: -1}
		if err := f.sink.Event(&f.ev); err != nil {
			return err
		}
		f.priv, f.ctx = b.Priv, b.Context
	}
	if b.Time != f.time || (f.timed && !f.init) {
		f.timed = true
		f.ev = flow.Event{Kind: flow.KindTime, Time: b.Time, Priv: b.Priv, Offset: -1}
		if err := f.sink.Event(&f.ev); err != nil {
			return err
		}
		f.time = b.Time
	}
	f.init = true
	if b.IRetire > 0 {
		n, last := f.count(b)
		end := b.IType
		if end.IsTrap() {
			end = ingress.ITypeNone
		}
		f.ev = flow.Event{Kind: flow.KindRange, Start: b.IAddr, Last: last, N: n, End: end, Priv: b.Priv, Offset: -1}
		if err := f.sink.Event(&f.ev); err != nil {
			return err
		}
	}
	if b.IType.IsTrap() {
		epc := b.NextAddr()
		if b.IRetire == 0 {
			epc = b.IAddr
		}
		f.trap = flow.Event{Kind: flow.KindTrap, Interrupt: b.IType == ingress.ITypeInterrupt, HasCause: true,
			Cause: b.Cause, TVal: b.TVal, Addr: epc, Priv: b.Priv, Offset: -1}
		f.haveTrap = true
	}
	return nil
}

// count returns the number of instructions of a block and the address of
// its last one.
func (f *BlockFlow) count(b *ingress.Block) (uint64, uint64) {
	last := b.LastAddr()
	if f.img == nil {
		size := uint64(b.LastSize())
		return max(1, uint64(b.IRetire)*2/size), last
	}
	var n uint64
	for a := b.IAddr; a < last; {
		in, ok := f.img.Inst(a)
		if !ok || in.Len == 0 {
			// unknown memory: count the rest as instructions of the
			// last one's size
			return n + (last-a)/uint64(b.LastSize()) + 1, last
		}
		a += uint64(in.Len)
		n++
	}
	return n + 1, last
}

// Close flushes a pending trap and closes the flow sink.
func (f *BlockFlow) Close() error {
	if f.haveTrap {
		f.haveTrap = false
		if err := f.sink.Event(&f.trap); err != nil {
			f.sink.Close()
			return err
		}
	}
	return f.sink.Close()
}
