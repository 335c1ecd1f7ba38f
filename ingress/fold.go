package ingress

import "fmt"

// Folder is the first stage of an encoder fed live by the instruction trace
// interface of a hart with data trace. E-Trace 2.0 ("Data Trace Interface
// requirements") has a multi-memory-access instruction (a Zcmp push or
// pop, a cbo.zero's stores) retire once per access, with the same
// address: the first retirement ends a block with itype 0, the next ones
// are single retirements with itype 0, and the last carries the
// instruction's natural itype (a cm.popret's is 13), each coming with
// its access (see sim.DataPort). Folder folds such retirements back into
// one, so that what follows it (filters, the instruction trace encoder
// and its statistics, which count instructions executed) sees each
// execution of an instruction once, all its accesses coming before the
// block that retires it: what a hart that reports the instruction once
// gives, and what the trace says (the te_inst packets report
// instructions executed; a decoder gives a push or pop its accesses from
// its register list). A stream without repeated retirements (a hart
// without data trace, ingress CSV files made before rvtrace followed the
// rule) passes unchanged.
//
// A block repeats the retirement before when the block before ended with
// itype 0 at the instruction where this one begins, and an access of that
// instruction came before it: a block ending with itype 0 cannot
// otherwise be followed by its own last instruction (a jump to itself
// has a non-zero itype). A block ending with itype 0 at an instruction
// with an access is therefore held until it is known whether a repeat
// follows: until the next block or the end of tracing, or, with Multi,
// until the instruction's last retirement (a hart's port sends the
// retirements of one instruction together: nothing waits then); with
// Multi, a block whose last instruction had all its accesses already
// (retired once) is not held. An instruction's last retirement may begin
// a block that ends with another's first (a push and a pop in one block
// of the hart): the folded block is then held in turn. The accesses and responses that come
// meanwhile are held too, and passed on in their order before the block
// they come before: the folded block, or the next one (but the held
// block's own, which come first: the late ones of a file made by a port
// that retired the instruction once, see DataMerger).
type Folder struct {
	// Multi, if not nil, returns how many accesses (retirements) one
	// execution of the instruction at iaddr makes, 0 if it does not
	// know.
	Multi func(iaddr uint64) int

	next    Sink
	data    DataSink
	held    Block
	holding bool
	x       uint64 // the instruction repeated (held.LastAddr())
	n, want int    // retirements folded into held, and expected (0: unknown)
	accAddr uint64 // iaddr of the last access since the last block
	nacc    int    // accesses of accAddr in a row since the last block
	folded  uint64
	evs     []foldEv // accesses and responses held with the block
}

// foldEv is an access or (resp) a load response held by a Folder.
type foldEv struct {
	a    Access
	r    LoadResponse
	resp bool
}

// maxFoldEvs bounds the accesses a Folder holds.
const maxFoldEvs = 1 << 16

// NewFolder returns a folder passing blocks to next and accesses (and
// split load responses, if data is a SplitDataSink) to data.
func NewFolder(next Sink, data DataSink) *Folder {
	return &Folder{next: next, data: data}
}

// Folded returns the number of retirements folded into the one before.
func (f *Folder) Folded() uint64 { return f.folded }

// release passes the block held on, then the accesses held; those of its
// last instruction that come first (with the responses among them) before
// it (a file made by a port that retired the instruction once, whose
// block ended with itype 0 there: DataMerger delivers its other accesses
// late).
func (f *Folder) release() error {
	if !f.holding {
		return nil
	}
	f.holding = false
	k := 0 // (the responses among them too)
	for i := range f.evs {
		if e := &f.evs[i]; !e.resp {
			if e.a.IAddr != f.x {
				break
			}
			k = i + 1
		}
	}
	if err := f.passTo(k); err != nil {
		return err
	}
	if err := f.next.Block(&f.held); err != nil {
		return err
	}
	return f.pass()
}

// pass passes the accesses and responses held on.
func (f *Folder) pass() error { return f.passTo(len(f.evs)) }

// passTo passes the first k accesses and responses held on.
func (f *Folder) passTo(k int) error {
	for i := range f.evs[:k] {
		var err error
		if e := &f.evs[i]; e.resp {
			err = f.data.(SplitDataSink).Response(&e.r)
		} else {
			err = f.data.Access(&e.a)
		}
		if err != nil {
			return err
		}
	}
	f.evs = f.evs[:copy(f.evs, f.evs[k:])]
	return nil
}

// hold holds an access or a response while a block is held.
func (f *Folder) hold(e foldEv) error {
	if len(f.evs) >= maxFoldEvs {
		return fmt.Errorf("ingress: %d data accesses without an ingress block", len(f.evs))
	}
	f.evs = append(f.evs, e)
	return nil
}

// repeats reports whether b is a retirement of the held block's last
// instruction.
func (f *Folder) repeats(b *Block) bool {
	h := &f.held
	size := uint32(h.LastSize() / 2)
	return b.IRetire >= size && b.IAddr == f.x && b.Priv == h.Priv && b.Context == h.Context &&
		(b.IRetire > size || b.ILastSize == h.ILastSize)
}

// Block implements Sink.
func (f *Folder) Block(b *Block) error {
	nacc := f.nacc
	f.nacc = 0
	if f.holding {
		if f.repeats(b) {
			if err := f.pass(); err != nil {
				return err
			}
			h := &f.held
			size := uint32(h.LastSize() / 2)
			h.IRetire += b.IRetire - size
			h.ILastSize, h.IType, h.Time = b.ILastSize, b.IType, b.Time
			h.Cause, h.TVal, h.SIJump = b.Cause, b.TVal, b.SIJump
			f.n++
			f.folded++
			if b.IRetire == size {
				if h.IType == ITypeNone && (f.want == 0 || f.n < f.want) {
					return nil // more may come
				}
			} else if f.first(h, nacc) {
				// the instruction's last retirement began a block that
				// ends with another's first (held on: f.first)
				return nil
			}
			return f.release()
		}
		if err := f.release(); err != nil {
			return err
		}
	}
	if f.first(b, nacc) {
		f.held, f.holding = *b, true
		return nil
	}
	return f.next.Block(b)
}

// first reports whether block b, which came after nacc accesses of
// f.accAddr, is the first retirement of several of its last instruction
// (as far as f can tell: see Folder), and if so makes it the instruction
// whose retirements f folds.
func (f *Folder) first(b *Block, nacc int) bool {
	if b.IType != ITypeNone || b.IRetire == 0 || nacc == 0 || f.accAddr != b.LastAddr() {
		return false
	}
	want := 0
	if f.Multi != nil {
		want = f.Multi(f.accAddr)
	}
	if want != 0 && nacc >= want {
		return false // (retired once, after all its accesses)
	}
	f.x, f.n, f.want = f.accAddr, 1, want
	return true
}

// Access implements DataSink.
func (f *Folder) Access(a *Access) error {
	if f.nacc > 0 && a.IAddr == f.accAddr {
		f.nacc++
	} else {
		f.accAddr, f.nacc = a.IAddr, 1
	}
	if f.holding {
		return f.hold(foldEv{a: *a})
	}
	return f.data.Access(a)
}

// Response implements SplitDataSink.
func (f *Folder) Response(r *LoadResponse) error {
	s, ok := f.data.(SplitDataSink)
	if !ok {
		return fmt.Errorf("ingress: load response (lid %d) to a data sink of the unified protocol", r.LID)
	}
	if f.holding {
		return f.hold(foldEv{r: *r, resp: true})
	}
	return s.Response(r)
}

// TraceOff implements Gated (when the next sink does).
func (f *Folder) TraceOff() error {
	if err := f.release(); err != nil {
		return err
	}
	if g, ok := f.next.(Gated); ok {
		return g.TraceOff()
	}
	return nil
}

// Notify implements Gated (when the next sink does).
func (f *Folder) Notify() error {
	if err := f.release(); err != nil {
		return err
	}
	if g, ok := f.next.(Gated); ok {
		return g.Notify()
	}
	return nil
}

// Flush passes on the block held.
func (f *Folder) Flush() error { return f.release() }

// Close passes on the block held and closes the next sink.
func (f *Folder) Close() error {
	err := f.release()
	if e := f.next.Close(); err == nil {
		err = e
	}
	return err
}

// FoldSource reads a Source whose blocks may hold the repeated
// retirements of multi-access instructions (an ingress CSV file written
// with data trace: see Folder) and returns each instruction execution
// once: a block that begins at the last instruction of a block ending
// with itype 0 is folded into it. Reading ahead, it needs neither the
// accesses nor the image. A stream without repeats passes unchanged.
//
// A port with 3-bit itypes reports an inferable jump with itype 0
// (IType.To3Bit): a jump to itself ("j .", a spin loop) then has the
// shape of a multi-access instruction's retirements. Set Single to tell
// the two apart; without it, such a loop's executions are folded.
type FoldSource struct {
	// Single, if not nil, reports whether the instruction at iaddr is
	// known to retire once per execution (it makes at most one access):
	// a block beginning there is never folded into the one before.
	Single func(iaddr uint64) bool

	src     Source
	cur     Block
	next    Block
	hasNext bool
	err     error // of the block after cur, returned next
	folded  uint64
}

// NewFoldSource returns src with the repeated retirements folded.
func NewFoldSource(src Source) *FoldSource { return &FoldSource{src: src} }

// Folded returns the number of retirements folded into the one before.
func (f *FoldSource) Folded() uint64 { return f.folded }

// Unwrap returns the source read (for its own counts and reports).
func (f *FoldSource) Unwrap() Source { return f.src }

// Next implements Source. The block is valid until the next call.
func (f *FoldSource) Next() (*Block, error) {
	switch {
	case f.hasNext:
		f.cur, f.hasNext = f.next, false
	case f.err != nil:
		return nil, f.err
	default:
		b, err := f.src.Next()
		if err != nil {
			return nil, err
		}
		f.cur = *b
	}
	for f.cur.IType == ITypeNone && f.cur.IRetire > 0 {
		b, err := f.src.Next()
		if err != nil {
			f.err = err
			break
		}
		size := uint32(f.cur.LastSize() / 2)
		if b.IRetire < size || b.IAddr != f.cur.LastAddr() || b.Priv != f.cur.Priv || b.Context != f.cur.Context ||
			b.IRetire == size && b.ILastSize != f.cur.ILastSize || f.Single != nil && f.Single(b.IAddr) {
			f.next, f.hasNext = *b, true
			break
		}
		h := &f.cur
		h.IRetire += b.IRetire - size
		h.ILastSize, h.IType, h.Time = b.ILastSize, b.IType, b.Time
		h.Cause, h.TVal, h.SIJump = b.Cause, b.TVal, b.SIJump
		f.folded++
	}
	return &f.cur, nil
}
