// Package parallel decodes a trace on several cores: a protocol cuts its
// trace into pieces that each start at a sync message or packet, decoders
// start afresh on every piece at once (speculatively, on several
// goroutines), and the results are joined in order. A piece's result is used only when the state its decoder
// started from equals the state the serial decoder reaches at the piece's
// start, in everything that decides what comes after; otherwise the
// decoder that decoded the pieces before it goes on through that piece
// itself (a sequential hand-off). Either way the events, gaps, warnings,
// counts and errors are those of a serial decode.
//
// A trace may have few syncs (a single-sync capture has one): so that the
// bytes a split holds stay bounded, it cuts the trace where no sync
// turns up within HoldPieces pieces' worth of bytes, at a place its
// framing allows (Cutter.Force). Such a piece (Piece.Cont) is never
// decoded afresh: the decoder of the pieces before it goes on through it,
// in sequence, in the state it stopped in.
//
// Pieces overlap by their primer: piece k decodes its own bytes and then
// the primer of piece k+1 (the sync message it starts with, and what
// belongs with it), so that the flow up to that sync and the checkpoint it
// makes are decoded with the state of piece k; the decoder of piece k+1
// decodes its primer with its events dropped, to reach the state after it
// from which it goes on. Equality is checked at the end of the primer.
//
// A decoder whose images change with the instruction count (code rewritten
// while the traced system ran) needs the number of instructions before a
// piece, which is known only once the pieces before it are decoded. Run
// guesses it (Piece.Base): from the count the pieces joined so far reached
// and, for the pieces between, their speculative decodes' counts or their
// size times the instructions per byte seen so far. The protocol's
// Follows accepts a speculation made with a wrong guess only when no
// change of the images lies where the difference could matter.
package parallel

import (
	"errors"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// A Piece is a span of a trace that a decoder may start on afresh.
type Piece struct {
	// Seq is the position of the piece in the trace, from 0.
	Seq int
	// Offset is the byte offset of Data[0] in the trace.
	Offset int64
	// Index is the index of the first message or packet of Data.
	Index int64
	// Prime is the size of the primer at the start of Data: the messages
	// or packets that the previous piece decodes as its last, and that a
	// decoder starting afresh on this piece decodes without events to
	// reach the state after them. 0 for the first piece and a Cont
	// piece.
	Prime int
	// Cont marks a piece that does not start at a sync: the split cut
	// the trace there only to bound the bytes it holds (no sync turned
	// up, Cutter.Max). No decoder can start on it afresh: Run never
	// speculates it, and the decoder of the pieces before it goes on
	// through it (Part.Continue; its bytes follow those of the piece
	// before, without overlap). The first piece is never one.
	Cont bool
	// Data holds the piece's bytes: its primer, its own messages, and the
	// primer of the next piece (none when the next is a Cont piece).
	Data []byte
	// Base is Run's guess of the instructions decoded before the
	// piece's own messages (after its primer), all sources together:
	// exact when the pieces before are joined, else an estimate. A Part
	// whose images change with the instruction count starts from it.
	Base uint64
	// Seed is protocol state that survives syncs and that the split
	// learned from the trace before the piece, in the protocol's own
	// encoding: a decoder starting on the piece starts with it (0 for a
	// Cont piece).
	Seed uint64
	// State is more such state, when a uint64 cannot hold it (the
	// sources of a multi-source trace and what the split learned of
	// each), in the protocol's own type (nil for a Cont piece).
	State any
}

// A Counter is a Part that counts the instructions decoded from the start
// of the trace (all sources together). Run uses the counts to guess the
// Base of the pieces it hands out.
type Counter interface {
	// Instructions returns the count: after Speculate, the piece's Base
	// plus the instructions decoded after its primer (its own and the
	// next piece's primer's); after Follows or Continue, the serial
	// decoder's count there.
	Instructions() uint64
}

// Part is one protocol decoder taking part in a parallel decode.
type Part interface {
	// Speculate decodes p starting afresh: its primer with the events
	// dropped, then the rest into sink. On an error (the sink's
	// ErrTooManyEvents among them) the piece is decoded in sequence.
	Speculate(p *Piece, sink flow.Sink) error
	// Follows reports whether this part's speculation of its piece is
	// what prev, which decoded everything before the piece, its primer
	// included, produces from there: the state prev reached equals the
	// state this part started from after the primer in everything that
	// decides the decoding of the rest. When it does, carry returns, for
	// each source, the instructions prev holds suspect (see
	// decode.Tally.Open): a gap of this part whose Suspect has
	// decode.OpenSuspect set gets them added. permanent says that no later piece can follow
	// either (the trace's sources outnumber what a piece can start
	// with). On true, this part takes over prev's counts: it is the
	// serial decoder's state after the piece.
	Follows(prev Part) (carry func(src uint32) uint64, ok, permanent bool)
	// Continue decodes the bytes of p after its primer into sink, going
	// on from the state reached (this part decoded everything before,
	// the primer included).
	Continue(p *Piece, sink flow.Sink) error
}

// Parallel decodes a trace's pieces on several goroutines and joins the
// results in order into Sink.
type Parallel struct {
	// Jobs is the number of pieces decoded at once (at least 1).
	Jobs int
	// Fresh returns a new decoder for a piece.
	Fresh func() Part
	// Split reads the trace and calls emit with each piece in order; it
	// stops when emit returns an error and returns that error.
	Split func(emit func(*Piece) error) error
	// Sink receives the flow events, in trace order.
	Sink flow.Sink
	// Observe records the message observations (flow.MessageObserver) of
	// the speculative decoders for Sink; set it when Sink is one.
	Observe bool

	// Stats, after Run: pieces decoded, pieces whose speculation could
	// not be used (decoded again in sequence), and Cont pieces (decoded
	// in sequence only, not counted in Redone).
	Pieces, Redone, Cont int
}

// MaxPieceEvents bounds the events a piece's speculative decode keeps
// (about 30 MB): a few bytes of trace can describe billions of
// instructions (repeat counts), so a piece that holds more is decoded in
// sequence instead, its events passed on as they come. (A variable for
// tests.)
var MaxPieceEvents = 1 << 19

// ErrTooManyEvents is returned by a Recorder's Event beyond its Max.
var ErrTooManyEvents = errors.New("decode/parallel: a piece has more events than MaxPieceEvents")

// recorders keeps the recorders of the pieces joined, whose memory (some
// megabytes each) the next pieces reuse.
var recorders sync.Pool

// Reuser is a Part that can be reused for another piece once the
// decode no longer needs it (it keeps caches worth keeping): Reuse
// resets it to a fresh part, or reports false.
type Reuser interface {
	Reuse() bool
}

// bases guesses the instruction count before each piece (Piece.Base).
type bases struct {
	mu     sync.Mutex
	next   int    // the next piece to join
	base   uint64 // the count before it (after its primer), exact
	pieces map[int]*counted
	insts  uint64 // instructions and bytes of the pieces speculated, for the ratio
	bytes  uint64
}

// counted is what bases knows of a piece not joined yet.
type counted struct {
	size  int
	delta uint64 // instructions decoded after the primer
	done  bool   // delta is known
}

// add registers piece p, in trace order.
func (b *bases) add(p *Piece) {
	b.mu.Lock()
	b.pieces[p.Seq] = &counted{size: len(p.Data)}
	b.mu.Unlock()
}

// guess returns the count before piece seq: the count before the next
// piece to join plus, for each piece between, its speculated count or its
// size times the instructions per byte seen so far.
func (b *bases) guess(seq int) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.base
	for i := b.next; i < seq; i++ {
		c := b.pieces[i]
		switch {
		case c == nil:
		case c.done:
			n += c.delta
		case b.bytes > 0:
			n += uint64(float64(c.size) * float64(b.insts) / float64(b.bytes))
		}
	}
	return n
}

// speculated records the instructions piece seq decoded after its primer.
func (b *bases) speculated(seq int, delta uint64) {
	b.mu.Lock()
	if c := b.pieces[seq]; c != nil {
		c.delta, c.done = delta, true
		b.insts += delta
		b.bytes += uint64(c.size)
	}
	b.mu.Unlock()
}

// joined records that piece seq is joined, the serial count then being n.
func (b *bases) joined(seq int, n uint64) {
	b.mu.Lock()
	delete(b.pieces, seq)
	b.next, b.base = seq+1, n
	b.mu.Unlock()
}

// errStopped is returned by a piece's emit after the decode stopped.
var errStopped = errors.New("decode/parallel: decode stopped")

// result is a piece with its speculative decode.
type result struct {
	p    *Piece
	part Part      // nil: not speculated
	rec  *Recorder // its events
	err  error
	done chan struct{}
}

// Run decodes every piece and returns the decoder holding the state at
// the end of the trace (for the protocol's end-of-trace checks), or the
// first error of the sink, the split or a serial continuation. Memory is
// bounded: at most 2*Jobs pieces are read ahead of the one being joined
// (and a split holds at most about HoldPieces pieces' worth of bytes:
// Cutter). A Cont piece is decoded only in sequence, by the decoder of
// the pieces before it.
func (pp *Parallel) Run() (Part, error) {
	jobs := max(pp.Jobs, 1)
	work := make(chan *result, jobs)
	order := make(chan *result, jobs)
	stop := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	var serial atomic.Bool // speculation abandoned: pieces go in sequence
	// recorders and parts to reuse (their memory, a part's caches)
	parts := make(chan Part, 2*jobs+4)
	tally := flow.TalliesRanges(pp.Sink)
	newRec := func() *Recorder {
		r, _ := recorders.Get().(*Recorder)
		if r == nil {
			r = &Recorder{}
		}
		r.Observe, r.Max, r.Tally = pp.Observe, MaxPieceEvents, tally
		return r
	}
	fresh := func() Part {
		select {
		case p := <-parts:
			return p
		default:
			return pp.Fresh()
		}
	}
	release := func(p Part) {
		if rp, ok := p.(Reuser); ok && rp.Reuse() {
			select {
			case parts <- p:
			default:
			}
		}
	}

	guesses := &bases{pieces: map[int]*counted{}}

	var splitErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(work)
		defer close(order)
		splitErr = pp.Split(func(p *Piece) error {
			r := &result{p: p, done: make(chan struct{})}
			guesses.add(p)
			select {
			case order <- r:
			case <-stop:
				return errStopped
			}
			select {
			case work <- r:
			case <-stop:
				return errStopped
			}
			return nil
		})
		if splitErr == errStopped {
			splitErr = nil
		}
	}()
	for i := 0; i < jobs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				if !serial.Load() && !r.p.Cont {
					r.part = fresh()
					r.rec = newRec()
					if !tally {
						// (a guess: a few ranges per byte of trace;
						// tallied, they take a record between other
						// events only)
						r.rec.rec = slices.Grow(r.rec.rec, min(4*len(r.p.Data), MaxPieceEvents))
					}
					r.p.Base = guesses.guess(r.p.Seq)
					r.err = r.part.Speculate(r.p, r.rec)
					if c, ok := r.part.(Counter); ok && r.err == nil {
						guesses.speculated(r.p.Seq, c.Instructions()-r.p.Base)
					}
				}
				close(r.done)
			}
		}()
	}

	var prev Part
	var err error
	for r := range order {
		<-r.done
		pp.Pieces++
		if err != nil {
			continue // drain
		}
		used := false
		if r.part != nil && r.err == nil {
			if prev == nil {
				used = true
				err = r.rec.Replay(pp.Sink, nil)
			} else if carry, ok, perm := r.part.Follows(prev); ok {
				used = true
				err = r.rec.Replay(pp.Sink, carry)
			} else if perm {
				serial.Store(true)
			}
		}
		if used {
			if prev != nil {
				release(prev)
			}
			prev = r.part
		} else {
			if r.p.Cont {
				pp.Cont++
			} else {
				pp.Redone++
			}
			if prev == nil {
				prev = fresh()
			}
			err = prev.Continue(r.p, pp.Sink)
			if r.part != nil {
				release(r.part)
			}
		}
		if r.rec != nil {
			r.rec.Reset()
			recorders.Put(r.rec)
		}
		r.part, r.rec = nil, nil
		if c, ok := prev.(Counter); ok {
			guesses.joined(r.p.Seq, c.Instructions())
		}
		if err != nil {
			halt()
		}
	}
	halt()
	wg.Wait()
	if err == nil {
		err = splitErr
	}
	return prev, err
}

// Recorder is a flow.Sink that keeps the events (and, with Observe, the
// message observations) of a speculative decode for Replay. A range event
// (most of a flow) is kept in a compact record of a third of its size.
type Recorder struct {
	// Drop discards the events while set (a primer).
	Drop bool
	// Observe records message observations.
	Observe bool
	// Max, when not 0, is the number of events recorded after which
	// Event returns ErrTooManyEvents.
	Max int
	// Tally keeps only the number of range events and their instructions
	// between other events, for a sink that tallies ranges
	// (flow.RangeTally).
	Tally         bool
	pendN, pendIn uint64 // ranges tallied since the last record
	rec           []record
	full          []flow.Event // the events that are not plain ranges
	msgs          []recMsg
	imgs          []*image.Set // the images of the ranges (record.img indexes it)
}

// Reset empties the recorder, keeping its memory.
func (r *Recorder) Reset() {
	clear(r.full)
	r.rec, r.full, r.msgs, r.imgs = r.rec[:0], r.full[:0], r.msgs[:0], r.imgs[:0]
	r.Drop, r.pendN, r.pendIn = false, 0, 0
}

// flush records the ranges tallied since the last record.
func (r *Recorder) flush() {
	if r.pendN > 0 {
		r.rec = append(r.rec, record{n: r.pendN, target: r.pendIn, batch: true})
		r.pendN, r.pendIn = 0, 0
	}
}

// record is a range event, or (full) the index in Recorder.full of
// another event (in start).
type record struct {
	start, last, n, target uint64
	offset                 int64
	src                    uint32
	img                    uint16 // Recorder.imgs[img-1], or nil when 0
	end                    ingress.IType
	priv                   ingress.Priv
	hasTarget, full        bool
	batch                  bool // n ranges of target instructions (Recorder.Tally)
}

// recMsg is a message observation made before record at.
type recMsg struct {
	kind string
	off  int64
	bits int
	at   int
}

// plainRange reports whether e is a range event with no field set but
// those a record keeps.
func plainRange(e *flow.Event) bool {
	return e.Kind == flow.KindRange && !e.Interrupt && !e.HasCause && e.Reason == 0 && e.Addr == 0 &&
		e.Cause == 0 && e.TVal == 0 && e.Context == 0 && e.Time == 0 && e.Index == 0 && e.Suspect == 0 &&
		e.Err == nil && e.AccessHas == 0 && e.Access == (ingress.Access{})
}

// Event records e.
func (r *Recorder) Event(e *flow.Event) error {
	if r.Drop {
		return nil
	}
	if r.Max > 0 && len(r.rec) >= r.Max {
		return ErrTooManyEvents
	}
	if r.Tally && e.Kind == flow.KindRange {
		r.pendN++
		r.pendIn += e.N
		return nil
	}
	r.flush()
	if plainRange(e) {
		img, ok := r.imgIndex(e.Image)
		if ok {
			r.rec = append(r.rec, record{start: e.Start, last: e.Last, n: e.N, target: e.Target, offset: e.Offset,
				img: img, src: e.Src, end: e.End, priv: e.Priv, hasTarget: e.HasTarget})
			return nil
		}
	}
	r.rec = append(r.rec, record{start: uint64(len(r.full)), full: true})
	r.full = append(r.full, *e)
	return nil
}

// imgIndex returns the index of img in r.imgs plus 1 (0 for nil),
// adding it; false when there are too many.
func (r *Recorder) imgIndex(img *image.Set) (uint16, bool) {
	if img == nil {
		return 0, true
	}
	if n := len(r.imgs); n > 0 && r.imgs[n-1] == img {
		return uint16(n), true
	}
	for i, m := range r.imgs {
		if m == img {
			return uint16(i + 1), true
		}
	}
	if len(r.imgs) >= 1<<16-1 {
		return 0, false
	}
	r.imgs = append(r.imgs, img)
	return uint16(len(r.imgs)), true
}

// Message records a message observation (flow.MessageObserver).
func (r *Recorder) Message(kind string, offset int64, bits int) {
	if !r.Drop && r.Observe {
		// (not flushing the ranges tallied: their order does not matter)
		r.msgs = append(r.msgs, recMsg{kind, offset, bits, len(r.rec)})
	}
}

// Close does nothing.
func (r *Recorder) Close() error { return nil }

// Len returns the number of events recorded.
func (r *Recorder) Len() int { return len(r.rec) }

// Replay sends the events recorded to sink, in order, with the message
// observations when sink is a flow.MessageObserver. A gap whose Suspect
// has decode.OpenSuspect set gets carry(its source) added instead (carry
// nil: 0).
func (r *Recorder) Replay(sink flow.Sink, carry func(src uint32) uint64) error {
	obs, _ := sink.(flow.MessageObserver)
	r.flush()
	m := 0
	var ev flow.Event
	for i := range r.rec {
		for ; obs != nil && m < len(r.msgs) && r.msgs[m].at <= i; m++ {
			obs.Message(r.msgs[m].kind, r.msgs[m].off, r.msgs[m].bits)
		}
		c := &r.rec[i]
		e := &ev
		if c.batch {
			sink.(flow.RangeTally).TallyRanges(c.n, c.target)
			continue
		}
		if c.full {
			e = &r.full[c.start]
			if e.Kind == flow.KindGap && e.Suspect&decode.OpenSuspect != 0 {
				e.Suspect &^= decode.OpenSuspect
				if carry != nil {
					e.Suspect += carry(e.Src)
				}
			}
		} else {
			ev = flow.Event{Kind: flow.KindRange, Start: c.start, Last: c.last, N: c.n, Target: c.target,
				Offset: c.offset, Src: c.src, End: c.end, Priv: c.priv, HasTarget: c.hasTarget}
			if c.img > 0 {
				ev.Image = r.imgs[c.img-1]
			}
		}
		if err := sink.Event(e); err != nil {
			return err
		}
	}
	for ; obs != nil && m < len(r.msgs); m++ {
		obs.Message(r.msgs[m].kind, r.msgs[m].off, r.msgs[m].bits)
	}
	return nil
}

// EpochsAgree reports whether a decoder whose instruction count was s and
// one whose count was t, decoding the same n instructions from there,
// follow the same address spaces at every instruction count they look
// them up at (image.Set.View: the memory changes at the sorted counts
// epochs): no epoch lies in (min(s,t)-1, max(s,t)+n]. (One below min:
// a decoder may look up the run of an instruction just before counting
// it.)
func EpochsAgree(epochs []uint64, t, s, n uint64) bool {
	if s == t || len(epochs) == 0 {
		return true
	}
	lo, hi := min(s, t), max(s, t)+n
	if lo > 0 {
		lo--
	}
	i := sort.Search(len(epochs), func(i int) bool { return epochs[i] > lo })
	return i == len(epochs) || epochs[i] > hi
}

// ExtendFirstRange makes the first range event recorded start at start
// and count n more instructions: a protocol whose ranges run across the
// sync a piece starts at (E-Trace closes a range at a discontinuity, not
// at a sync) continues there the range the piece before left open. With
// Tally, the n instructions go to the first tally. It reports false when
// no range was recorded.
func (r *Recorder) ExtendFirstRange(start, n uint64) bool {
	return r.extendFirst(start, n, false, 0)
}

// ExtendFirstRangeOf is ExtendFirstRange for the first range event of
// source src (flow.Event.Src) in a trace of several sources, each with
// its own range running across the syncs. With Tally (which does not
// keep the sources), the n instructions go to the first tally: the
// tallies only count.
func (r *Recorder) ExtendFirstRangeOf(src uint32, start, n uint64) bool {
	return r.extendFirst(start, n, true, src)
}

// extendFirst extends the first range recorded (of source src when bySrc).
func (r *Recorder) extendFirst(start, n uint64, bySrc bool, src uint32) bool {
	r.flush()
	for i := range r.rec {
		c := &r.rec[i]
		switch {
		case c.batch:
			c.target += n
			return true
		case c.full:
			e := &r.full[c.start]
			if e.Kind == flow.KindRange && (!bySrc || e.Src == src) {
				e.Start, e.N = start, e.N+n
				return true
			}
		case !bySrc || c.src == src:
			c.start, c.n = start, c.n+n
			return true
		}
	}
	return false
}
