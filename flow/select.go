package flow

import (
	"fmt"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// PointKind says what a Point of a Selector counts.
type PointKind uint8

// Point kinds.
const (
	// PointNone is no bound.
	PointNone PointKind = iota
	// PointIndex is an instruction index: instructions of the sources
	// the selector's Src keeps, counted from 0 in flow order.
	PointIndex
	// PointTime is a timestamp, in the flow's time units (KindTime).
	PointTime
	// PointAddr is the first execution of an instruction address (a
	// symbol's address, for example).
	PointAddr
)

// Point is where a --from or --to selection starts or ends.
type Point struct {
	Kind PointKind
	V    uint64
}

// AddrRange is the address range [Lo, Hi): Hi is excluded.
type AddrRange struct{ Lo, Hi uint64 }

// Contains reports whether a lies in the range.
func (r AddrRange) Contains(a uint64) bool { return a >= r.Lo && a < r.Hi }

// Selector is what Select keeps of a flow. Every field left zero keeps
// everything; the fields set must all hold for an instruction to be kept.
type Selector struct {
	// HasSrc keeps only the events of trace source Src (gaps excepted).
	HasSrc bool
	Src    uint32
	// Privs keeps only the instructions executed at a privilege level p
	// with bit 1<<p set (0: any).
	Privs uint16
	// HasContext keeps only the instructions executed in context Context.
	HasContext bool
	Context    uint64
	// From and To bound the selection in the flow: from the first
	// instruction at or after From (included) up to To (excluded for an
	// index or an address, included for a time).
	From, To Point
	// Ranges keeps only the instructions whose address is in one of
	// them (none: any address).
	Ranges []AddrRange
	// Sample, when above 1, keeps one instruction in Sample of those the
	// other fields keep (the Sample-th, the 2*Sample-th, ...), each
	// passed on as a range of one instruction that stands for Sample.
	Sample uint64
}

// Active reports whether the selector selects anything (some field set).
func (s *Selector) Active() bool {
	return s.HasSrc || s.Privs != 0 || s.HasContext || s.From.Kind != PointNone || s.To.Kind != PointNone ||
		len(s.Ranges) > 0 || s.Sample > 1
}

// Indexer is implemented by sinks that number the instructions they are
// given (script listings): Select calls SetIndex with the index in the
// whole flow (counted as for PointIndex) of the first instruction of each
// range it passes on, before passing it. Multi forwards it.
type Indexer interface {
	SetIndex(i uint64)
}

// Select returns a sink that passes to next only the part of the flow sel
// selects, splitting ranges exactly at the selection's boundaries (with
// img for instruction sizes). How each kind of event is treated:
//
//   - Gaps and warnings always pass, whatever the selector: a selection
//     never hides lost trace. A gap's Suspect still counts instructions
//     of the whole flow.
//   - Context, time and sync events of the selected sources always pass
//     (they are state later sinks need). The privilege and context of
//     the last context event of a source are what Privs and HasContext
//     test; an instruction before the first context event of its source
//     has an unknown privilege and context and is not kept when Privs or
//     HasContext is set (Unknown counts them).
//   - Traps, stops and notify events pass when the instruction before
//     them in their source was kept (with Sample: passed the other
//     selectors, sampled or not), or, with Ranges, when the address
//     they name (the trap's EPC or handler, the notify address) is in a
//     range.
//   - From and To are about position: instructions count from 0 in the
//     selected sources; a time bound tests the last timestamp seen
//     before the instruction (instructions before the first timestamp
//     are before any From time and within any To time); an address
//     bound is met at the first instruction executed there.
//   - A range cut by the selection is passed as the pieces kept; a piece
//     that does not end where the range ends has no end type and no
//     target.
//   - Ranges are passed without their byte offset (Offset -1), so that
//     sinks do not share the trace's bytes among the selected
//     instructions only: the trace cost of a part of a flow is unknown.
//
// With Sample, every sample is a range of one instruction with no end type
// and no target: flat counts stay right (times Sample) but call and
// return structure is lost between samples.
//
// Close closes next.
func Select(next Sink, sel Selector, img *image.Set) *Selection {
	s := &Selection{next: next, sel: sel, img: img}
	s.ix, _ = next.(Indexer)
	s.started = sel.From.Kind == PointNone
	return s
}

// Selection is the sink Select returns. It is not a MessageObserver:
// message statistics do not pass through it, since the trace cost per
// instruction of a selection would be wrong.
type Selection struct {
	next Sink
	ix   Indexer
	sel  Selector
	img  *image.Set

	srcs    []selSrc
	index   uint64 // instructions of the selected sources so far
	kept    uint64
	sampled uint64 // instructions that passed every selector but Sample
	unknown uint64 // instructions of unknown privilege and context

	time    uint64
	hasTime bool
	started bool // From met (or none)
	stopped bool // To met
	piece   Event
	err     error
}

type selSrc struct {
	src      uint32
	priv     ingress.Priv
	ctx      uint64
	known    bool // priv and ctx known
	prevKept bool // the last instruction of the source was kept
}

// Selected returns the number of instructions passed on (samples with
// Sample: each stands for Sample instructions).
func (s *Selection) Selected() uint64 { return s.kept }

// Unknown returns the number of instructions dropped because Privs or
// HasContext is set and their source had no context event before them.
func (s *Selection) Unknown() uint64 { return s.unknown }

func (s *Selection) state(src uint32) *selSrc {
	for i := range s.srcs {
		if s.srcs[i].src == src {
			return &s.srcs[i]
		}
	}
	s.srcs = append(s.srcs, selSrc{src: src})
	return &s.srcs[len(s.srcs)-1]
}

func (s *Selection) inRanges(a uint64) bool {
	for _, r := range s.sel.Ranges {
		if r.Contains(a) {
			return true
		}
	}
	return false
}

// Event selects.
func (s *Selection) Event(e *Event) error {
	if s.err != nil {
		return s.err
	}
	if e.Kind == KindGap || e.Kind == KindWarn {
		return s.next.Event(e)
	}
	if s.sel.HasSrc && e.Src != s.sel.Src {
		return nil
	}
	st := s.state(e.Src)
	switch e.Kind {
	case KindRange:
		return s.rangeEvent(e, st)
	case KindContext:
		st.priv, st.ctx, st.known = e.Priv, e.Context, true
		return s.next.Event(e)
	case KindTime:
		s.time, s.hasTime = e.Time, true
		return s.next.Event(e)
	case KindTrap:
		if st.prevKept || (len(s.sel.Ranges) > 0 && (s.inRanges(e.Addr) || (e.HasTarget && s.inRanges(e.Target)))) {
			return s.next.Event(e)
		}
		return nil
	case KindNotify:
		if st.prevKept || (len(s.sel.Ranges) > 0 && s.inRanges(e.Addr)) {
			return s.next.Event(e)
		}
		return nil
	case KindStop, KindData:
		// a data access belongs to the last instruction of the range
		// before it
		if st.prevKept {
			return s.next.Event(e)
		}
		return nil
	}
	return s.next.Event(e)
}

// wholeRange decides a range without walking it when it can: keep is
// whether all of it is kept, ok whether that holds for every instruction.
func (s *Selection) wholeRange(e *Event, st *selSrc) (keep, ok bool) {
	sel := &s.sel
	if sel.Privs != 0 || sel.HasContext {
		if !st.known {
			s.unknown += e.N
			return false, true
		}
		if sel.Privs != 0 && sel.Privs&(1<<st.priv) == 0 {
			return false, true
		}
		if sel.HasContext && st.ctx != sel.Context {
			return false, true
		}
	}
	if sel.From.Kind == PointTime && !s.started {
		if !s.hasTime || s.time < sel.From.V {
			return false, true
		}
		s.started = true
	}
	if sel.To.Kind == PointTime && s.hasTime && s.time > sel.To.V {
		s.stopped = true
	}
	if s.stopped {
		return false, true
	}
	if sel.Sample > 1 {
		return false, false
	}
	first, end := s.index, s.index+e.N
	if sel.From.Kind == PointIndex && !s.started {
		if end <= sel.From.V {
			return false, true
		}
		if first < sel.From.V {
			return false, false
		}
		s.started = true
	}
	if sel.To.Kind == PointIndex && end > sel.To.V {
		if first >= sel.To.V {
			s.stopped = true
			return false, true
		}
		return false, false
	}
	if sel.From.Kind == PointAddr && !s.started {
		if sel.From.V < e.Start || sel.From.V > e.Last {
			return false, true
		}
		return false, false
	}
	if sel.To.Kind == PointAddr && sel.To.V >= e.Start && sel.To.V <= e.Last {
		return false, false
	}
	if len(sel.Ranges) > 0 {
		for _, r := range sel.Ranges {
			if e.Start >= r.Lo && e.Last < r.Hi {
				return true, true
			}
		}
		for _, r := range sel.Ranges {
			if e.Last >= r.Lo && e.Start < r.Hi {
				return false, false // overlaps without containing
			}
		}
		return false, true
	}
	return true, true
}

func (s *Selection) rangeEvent(e *Event, st *selSrc) error {
	keep, ok := s.wholeRange(e, st)
	if ok {
		first := s.index
		s.index += e.N
		st.prevKept = keep
		if !keep {
			return nil
		}
		s.kept += e.N
		if s.ix != nil {
			s.ix.SetIndex(first)
		}
		s.piece = *e
		s.piece.Offset = -1
		return s.next.Event(&s.piece)
	}
	// Walk the range, one instruction at a time.
	sel := &s.sel
	pc := e.Start
	open := false
	var pieceFirst uint64
	for i := uint64(0); i < e.N; i++ {
		idx := s.index
		s.index++
		k := s.keepInst(pc, idx)
		// Traps and stops go with the instruction before them when it
		// passed the selectors, sampled or not.
		st.prevKept = k
		if k && sel.Sample > 1 {
			s.sampled++
			k = s.sampled%sel.Sample == 0
		}
		last := i+1 == e.N
		var next uint64
		if !last {
			in := e.ImageOr(s.img).InstPtr(pc)
			if in == nil || in.Len == 0 {
				s.err = fmt.Errorf("select: address %#x in a decoded range is not in the image", pc)
				return s.err
			}
			next = pc + uint64(in.Len)
		}
		if k {
			if !open {
				s.piece = *e
				s.piece.Start, s.piece.N, s.piece.Offset = pc, 0, -1
				pieceFirst = idx
				open = true
			}
			s.piece.N++
			s.piece.Last = pc
		}
		if open && (!k || last || sel.Sample > 1) {
			if !last || !k || sel.Sample > 1 {
				s.piece.End, s.piece.HasTarget, s.piece.Target = ingress.ITypeNone, false, 0
			}
			open = false
			s.kept += s.piece.N
			if s.ix != nil {
				s.ix.SetIndex(pieceFirst)
			}
			if err := s.next.Event(&s.piece); err != nil {
				return err
			}
		}
		pc = next
	}
	return nil
}

// keepInst tests the position and address selectors on the instruction
// at pc, index idx (privilege, context and time were tested for the
// whole range).
func (s *Selection) keepInst(pc, idx uint64) bool {
	sel := &s.sel
	if !s.started {
		switch sel.From.Kind {
		case PointIndex:
			if idx < sel.From.V {
				return false
			}
		case PointAddr:
			if pc != sel.From.V {
				return false
			}
		}
		s.started = true
	}
	if !s.stopped {
		switch sel.To.Kind {
		case PointIndex:
			s.stopped = idx >= sel.To.V
		case PointAddr:
			s.stopped = pc == sel.To.V
		}
	}
	if s.stopped {
		return false
	}
	return len(sel.Ranges) == 0 || s.inRanges(pc)
}

// Close closes next.
func (s *Selection) Close() error {
	err := s.next.Close()
	if s.err != nil {
		return s.err
	}
	return err
}
