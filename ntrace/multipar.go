package ntrace

import (
	"errors"
	"io"
	"slices"
	"sync"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/decode/parallel"
	"github.com/rvtrace/rvtrace/flow"
)

// Parallel decoding of a trace of several sources (messages with a SRC
// field: DecoderConfig.Wire.SrcBits > 0), as package etrace decodes one
// (etrace/multipar.go). Each source has its own sync messages, and the
// messages of the sources interleave: no one message resets every
// source. A piece therefore starts at a sync message of one source (at
// byte C) and its primer runs on to the end of a sync message (and the
// Ownership message right after it) of every other source the piece
// needs (at byte P): every source with a message in the last
// parallel.HoldPieces pieces' worth of bytes whose last message is not a
// ProgTraceCorrelation (a source that stopped). The split picks C after
// the fact: at each sync message it takes the earliest of the last sync
// messages of those sources, and cuts there when the piece before holds
// PieceBytes and the primer no more.
//
// The decoder of a piece starts with the sources the split saw before C,
// in the order a serial decoder made them, each with the trace mode and
// B-TYPE style learned up to the pieces joined. In the primer a source
// waits for its sync message: its messages before it are counted (their
// indexes, the statistics) but not decoded. From its sync message on it
// is decoded, the events of the primer dropped. At P the state of each
// source that synchronised is compared with the serial decoder's there:
// everything that decides what comes after (sameState, the return stack
// included), and what the decoder shares between sources (the address
// space followed, the source of the last message, the last range, which
// a check of the next message may read: Decoder.revDep). A source with no
// sync message in the primer (a hart that stopped, or was silent for
// long) has no state in the piece: a message of it after the primer sends
// the piece to be decoded in sequence, and it keeps the serial decoder's
// state, moved into the piece's decoder when the piece is joined.
//
// Whatever a serial decoder does across sources (a malformed message,
// one with a SRC none of the configured sources has, idle bytes from an
// encoder that sends none, a message of a source before its first sync:
// gaps in every source) is a gap, and a piece with a gap is decoded again
// in sequence: its Suspect counts depend on the instructions before the
// piece, and a gap in every source reaches the sources the piece holds no
// state of. Images that change at instruction counts are not followed in
// pieces here: the instruction count a piece starts from cannot be
// guessed when the primer decodes some sources' instructions and not
// others' (Decoder.SerialReason).

// errSpecLost: a piece's decoder met a message of a source it holds no
// state of, or reported a gap; the piece is decoded in sequence.
var errSpecLost = errors.New("ntrace: a piece of a trace of several sources involves sources whose state it does not hold")

// multiSpec is the state of the decoder of a piece of a trace of several
// sources started afresh.
type multiSpec struct {
	primer bool // decoding the primer
}

// multiState is what the split of a trace of several sources learned
// before a piece (parallel.Piece.State): the sources, in the order of
// their first message.
type multiState struct {
	order []uint32
	modes []Mode // the trace mode of each, as the messages before showed it (0: not shown)
}

// srcHints keeps the trace mode and B-TYPE style each source learned, as
// the decoders that decoded the pieces joined so far publish them.
type srcHints struct {
	mu sync.Mutex
	m  map[uint32]uint16
}

// publish records the mode and B-TYPE style of the sources of order.
func (h *srcHints) publish(order []*srcState) {
	h.mu.Lock()
	if h.m == nil {
		h.m = map[uint32]uint16{}
	}
	for _, s := range order {
		h.m[s.id] = uint16(s.mode)&0xff | uint16(s.btype)<<8
	}
	h.mu.Unlock()
}

// seed gives s the mode and B-TYPE style its source learned, where the
// configuration does not set them.
func (h *srcHints) seed(s *srcState) {
	h.mu.Lock()
	v, ok := h.m[s.id]
	h.mu.Unlock()
	if !ok {
		return
	}
	if s.mode == 0 {
		s.mode = Mode(v & 0xff)
	}
	if s.btype == 0 {
		s.btype = int(v >> 8)
	}
}

// waiting handles message m of source s, which has had no sync message in
// the piece (Decoder.Message decodes it when s.wait is cleared): in the
// primer a sync message starts the source's decode, and other messages
// are skipped (the serial decoder decodes them as the last of the piece
// before); after the primer, the piece cannot be decoded afresh.
func (d *Decoder) waiting(s *srcState, m *Message) error {
	if d.spec == nil || !d.spec.primer {
		return errSpecLost
	}
	if m.TCode.IsSync() {
		s.wait = false
	}
	return nil
}

// multiSnap is the state of the decoder of a piece of a trace of several
// sources at the end of its primer.
type multiSnap struct {
	ids           []uint32             // the sources (Decoder.order)
	held          map[uint32]*srcState // copies of those that synchronised in the primer
	one           uint64               // Decoder.oneID
	hasOne        bool
	ranges, joins uint64
}

// speculateMulti decodes p, a piece of a trace of several sources that
// starts after the first, afresh into rec, reading it with rd.
func (pt *part) speculateMulti(p *parallel.Piece, rec *parallel.Recorder, rd *Reader) error {
	d := pt.d
	st, _ := p.State.(*multiState)
	if st == nil {
		return errSpecLost
	}
	d.spec = &multiSpec{primer: true}
	d.seedMode, d.seedBType = 0, 0 // (a source first seen in the piece starts as serially)
	for i, id := range st.order {
		s := d.newState(uint64(id))
		s.wait = true
		pt.parent.hints.seed(s)
		if s.mode == 0 {
			// (the pieces before, which would publish it, may not be
			// joined yet)
			s.mode = st.modes[i]
		}
	}
	rec.Drop = true
	if err := d.loop(rd, p.Offset+int64(p.Prime)); err != nil {
		return err
	}
	rec.Drop = false
	if d.st.Gaps > 0 {
		return errSpecLost
	}
	d.spec.primer = false
	sn := &multiSnap{held: map[uint32]*srcState{}, one: d.oneID, hasOne: d.one != nil, ranges: d.ranges,
		joins: d.joins}
	for _, s := range d.order {
		sn.ids = append(sn.ids, s.id)
		if s.wait {
			continue
		}
		c := *s
		c.stack, c.rfPts = s.stack.Clone(), slices.Clone(s.rfPts)
		sn.held[s.id] = &c
		s.tally = decode.Tally{}
		s.tally.Open()
	}
	pt.multi = sn
	pt.snapSt, pt.snapImg, pt.snapAny, pt.snapOutside = d.st, d.w.Img, d.anySync, d.outsideSyncs
	pt.snapSt.Idles = rd.Idles()
	// the last range: another source's, maybe, and not the serial
	// decoder's (which may be of a source waiting here); a check that
	// reads it before the piece emits one depends on the serial one
	*d.w.LastRange() = flow.Event{}
	d.revDep, d.openDep = false, false
	err := d.loop(rd, -1)
	d.st.Idles += rd.Idles()
	if err == nil && d.st.Gaps > 0 {
		err = errSpecLost
	}
	return err
}

// followsMulti is Follows for a piece of a trace of several sources: it
// compares the serial decoder a's state with the piece's at the end of
// its primer, and takes over a's counts and the sources the piece did not
// touch when they are the same.
func (pt *part) followsMulti(a *Decoder) (func(uint32) uint64, bool, bool) {
	b, sn := pt.d, pt.multi
	if sn == nil || b.openDep || b.revDep && a.w.LastRange().N != 0 {
		return nil, false, false
	}
	if len(a.order) != len(sn.ids) || a.w.Img != pt.snapImg || a.anySync != pt.snapAny ||
		(a.one != nil) != sn.hasOne || a.oneID != sn.one {
		return nil, false, false
	}
	for i, sa := range a.order {
		if sa.id != sn.ids[i] {
			return nil, false, false
		}
		h := sn.held[sa.id]
		if h == nil {
			continue
		}
		// (dueRanges counts the ranges of every source since the message
		// that completed the sync period)
		if !sameState(sa, h) || sa.dueExact && a.ranges-a.joins-sa.dueRanges != sn.ranges-sn.joins-h.dueRanges {
			return nil, false, false
		}
	}
	// Take over a's counts and the sources the piece holds no state of.
	shift := sn.ranges - sn.joins - (a.ranges - a.joins)
	for i, sa := range a.order {
		if sn.held[sa.id] != nil {
			s := b.order[i]
			s.tally = s.tally.After(sa.tally)
			continue
		}
		sa.dueRanges += shift
		if b.one == b.order[i] {
			b.one = sa
		}
		b.srcs[uint64(sa.id)], b.order[i] = sa, sa
	}
	b.spec = nil
	pt.takeCounts(a)
	return nil, true, false
}

// mode returns the trace mode message m, just read, shows (0: none), as
// Decoder.checkMode learns it.
func (sr *splitReader) mode(m *Message) Mode {
	want, fixed := tcodeMode(m.TCode)
	if fixed || !sr.parse() {
		return want
	}
	switch m.TCode {
	case TCodeResourceFull:
		if rc := sr.full.Get(FieldRCODE); rc == RCodeHist || rc == RCodeHistRepeat {
			return HTM
		}
	case TCodeProgTraceCorrelation:
		switch sr.full.Get(FieldCDF) {
		case 0:
			return BTM
		case 1:
			return HTM
		}
	}
	return 0
}

// srcOf returns the SRC field of the message whose bytes are raw, false
// when the message is too short to hold one (its parse fails: a serial
// decoder makes it a gap in every source).
func (d *Decoder) srcOf(raw []byte) (uint64, bool) {
	if d.cfg.Wire.SrcBits == 0 {
		return 0, true
	}
	fr := fieldReader{b: raw}
	if _, err := fr.fixed(6); err != nil {
		return 0, false
	}
	v, err := fr.fixed(uint(d.cfg.Wire.SrcBits))
	return v, err == nil
}

// splitMulti is split for a trace of several sources: it cuts the trace
// into pieces of about size bytes, each starting with a sync message that
// parses of one source, and whose primer ends after a sync message (and
// the Ownership message of the same source right after it) of each
// source with a message in the last parallel.HoldPieces*size bytes whose
// last message is not a ProgTraceCorrelation (a source silent longer, or
// stopped, is left to the serial decoder's state: see above;
// parallel.Sources picks the place); and where
// no such place turns up within parallel.HoldPieces*size bytes, at the
// end of a message or inside a run of skipped bytes, with no sync (a
// parallel.Piece.Cont piece), as split does. It returns the size of the
// trace.
func (d *Decoder) splitMulti(r io.Reader, size int, emit func(*parallel.Piece) error) (int64, error) {
	sr := d.newSplitReader(r, size, emit)
	// the sources in the order of their first message, and their syncs
	var order []uint32
	seen := make([]bool, 1<<d.cfg.Wire.SrcBits)
	// the trace mode each source's messages showed by their TCODE, as
	// Decoder.checkMode learns it when the configuration does not give
	// it (forgotten at a sync after the source's trace stopped); whether
	// its last message stopped it
	modes := make([]Mode, 1<<d.cfg.Wire.SrcBits)
	ended := make([]bool, 1<<d.cfg.Wire.SrcBits)
	syncs := &parallel.Sources{C: sr.c}
	// pend: a sync message of source pendSrc ended at pendEnd, and the
	// primer of a piece starting at the earliest of the last sync
	// messages may take the next message (its Ownership message)
	pend, pendSrc, pendEnd := false, uint64(0), int64(0)
	settle := func(end int64) error {
		if !pend {
			return nil
		}
		pend = false
		cut, err := syncs.Cut(end)
		if cut {
			sr.rd.pause = sr.c.Limit()
		}
		return err
	}
	var m Message
	var readErr error
	for {
		if sr.c.Due(sr.rd.Offset()) {
			if err := settle(pendEnd); err != nil {
				return 0, err
			}
		}
		if err := sr.force(); err != nil {
			return 0, err
		}
		i, err := sr.next(&m)
		if err == io.EOF {
			break
		}
		if err != nil {
			if readErr = sr.readErr(err); readErr != nil {
				break
			}
			if err := settle(pendEnd); err != nil {
				return 0, err
			}
			continue
		}
		id, ok := d.srcOf(sr.rd.raw)
		if pend {
			end := pendEnd
			if m.TCode == TCodeOwnership && m.Offset == end && ok && id == pendSrc && sr.parse() {
				end += int64(m.Size)
			}
			if err := settle(end); err != nil {
				return 0, err
			}
		}
		if !ok || d.cfg.Sources != nil && !d.knownSource(id) {
			continue // (a gap in every source)
		}
		if !seen[id] {
			seen[id] = true
			order = append(order, uint32(id))
		}
		if m.TCode.IsSync() && ended[id] {
			modes[id] = 0
		}
		if modes[id] == 0 {
			modes[id] = sr.mode(&m)
		}
		ended[id] = m.TCode == TCodeProgTraceCorrelation
		syncs.Heard(uint32(id), m.Offset, ended[id])
		if !m.TCode.IsSync() || !sr.parse() {
			continue
		}
		st := &multiState{order: order[:len(order):len(order)], modes: make([]Mode, len(order))}
		for k, o := range st.order {
			st.modes[k] = modes[o]
		}
		syncs.Sync(uint32(id), m.Offset, i, st)
		pend, pendSrc, pendEnd = true, id, m.Offset+int64(m.Size)
	}
	if err := settle(pendEnd); err != nil {
		return 0, err
	}
	return sr.end(readErr)
}
