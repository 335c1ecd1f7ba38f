package etrace

import (
	"bytes"
	"errors"
	"io"
	"slices"

	"github.com/rvtrace/rvtrace/decode/parallel"
	"github.com/rvtrace/rvtrace/decode/walk"
	"github.com/rvtrace/rvtrace/flow"
)

// Parallel decoding of a trace of several sources (Demux.DecodeJobs).
// Each source has a decoder of its own and its own sync packets, and the
// frames of the sources interleave: no one packet resets every source.
// A piece therefore starts at a sync packet of one source (at byte C) and
// its primer runs on to the end of a sync packet of every other source
// the piece needs (at byte P): every source with a te_inst frame in the
// last parallel.HoldPieces pieces' worth of bytes. The split picks C
// after the fact: at each sync packet it takes the earliest of the last
// sync packets of those sources, and cuts there when the piece before
// holds PieceBytes and the primer no more.
//
// The decoder of a piece starts with the sources the split saw before C,
// in the order a serial Demux made them, each with what survives its
// syncs (the options of its last support packet, its data trace state,
// Piece.State). In the primer, a source waits for its sync packet:
// its frames before it are counted (their indexes) but not decoded; its
// support packets are. From its sync packet on it is decoded as a
// single-source piece's decoder decodes after its primer (parallel.go),
// the events of the primer dropped. At P the piece's state of each
// source that synchronised is compared with the serial decoder's there,
// as for one source: what survives a sync must be equal, the open range
// of the serial decoder may run from before the source's sync packet
// (when the piece's range that started there is still open: its first
// range event is extended, parallel.Recorder.ExtendFirstRangeOf) and the
// counts are the serial ones shifted. A source with no frame in the
// primer (a hart that stopped) has no state in the piece: the piece may
// not touch it (a frame of it after the primer, unless it changes
// nothing, sends the piece to be decoded in sequence), and it keeps the
// serial decoder's state, moved into the piece's decoder when the piece
// is joined.
//
// Whatever a serial Demux does across sources (a frame whose header
// cannot be read, a malformed frame or one of a source with no sync
// packet, which may be another source's, a source past MaxSources) makes
// the piece's decode fail: the piece is decoded again in sequence. So is
// a piece with a gap, as for one source. Images that change at
// instruction counts are not followed in pieces here: each source counts
// its own instructions, which a piece cannot know (Demux.SerialReason).

// errSpecLost: a piece's decoder met a frame that a serial Demux reports
// in every source, or one of a source it holds no state of; the piece is
// decoded in sequence.
var errSpecLost = errors.New("etrace: a frame of a piece involves sources whose state the piece does not hold")

// demuxSpec is the state of the decoder of a piece started afresh.
type demuxSpec struct {
	primer bool // decoding the primer
}

// splitState is what the split of a trace of several sources learned
// before a piece (parallel.Piece.State): the sources, in the order of
// their first frame, and the seed of each (Decoder.seed).
type splitState struct {
	order []uint32
	seeds []uint64
}

// SerialReason returns why DecodeJobs would decode the trace serially
// whatever the number of jobs, or "" when it can split it.
func (m *Demux) SerialReason() string {
	switch {
	case m.cfg.Data != nil:
		return "data trace packets are joined with the instruction trace"
	case len(m.img.Epochs()) > 0:
		return "the images of a trace of several sources change at instruction counts (a sideband)"
	case m.idx > 0 || len(m.order) > 0:
		return "the decoder has already decoded packets"
	}
	return ""
}

// DecodeJobs decodes r as Decode does, with the same events in the same
// order, gaps and warnings at the same offsets, the same statistics and
// the same error, decoding up to jobs pieces of the trace at once (see
// parallel.Parallel). With jobs <= 1, or when SerialReason is not "", it
// is Decode. Memory stays bounded by about 2*jobs pieces and their
// events.
func (m *Demux) DecodeJobs(r io.Reader, jobs int) error {
	return m.decodeJobs(r, jobs, PieceBytes)
}

// ParallelStats returns the pieces of the last DecodeJobs and how many of
// them were decoded again in sequence (Decoder.ParallelStats).
func (m *Demux) ParallelStats() (pieces, redone int) { return m.jobs.pieces, m.jobs.redone }

func (m *Demux) decodeJobs(r io.Reader, jobs, size int) error {
	if jobs <= 1 || m.SerialReason() != "" {
		return m.Decode(r)
	}
	last, total, readErr, err := m.jobs.run(jobs, m.sink, func() parallel.Part { return m.freshPart() },
		func(emit func(*parallel.Piece) error) (int64, error, error) { return m.split(r, size, emit) })
	if last == nil {
		return err
	}
	lm := last.(*demuxPart).m
	m.decs, m.order, m.idx, m.refused, m.stray = lm.decs, lm.order, lm.idx, lm.refused, lm.stray
	m.setSink(m.sink)
	if err != nil {
		return err
	}
	return m.end(total, readErr)
}

// setSink sends the events of every source to sink.
func (m *Demux) setSink(sink flow.Sink) {
	m.sink = sink
	for _, s := range m.decs {
		s.tag.next = sink
	}
}

// demuxPart is a decoder of pieces of a trace of several sources
// (parallel.Part).
type demuxPart struct {
	m      *Demux
	parent *Demux
	rec    *parallel.Recorder
	order  []uint32             // the sources at the end of the primer
	snaps  map[uint32]*srcStart // the sources that synchronised in the primer, at its end
}

// srcStart is a source's decoder at the end of a piece's primer.
type srcStart struct {
	snap    snapshot
	st      Stats
	off     int64
	emitted uint64 // instructions sent in ranges (0: the range the sync packet started is open)
	rN      uint64
}

// freshPart returns a decoder of pieces with m's configuration.
func (m *Demux) freshPart() *demuxPart {
	nm := &Demux{cfg: m.cfg, img: m.img, sink: m.sink, decs: map[uint32]*source{}, MaxSteps: m.MaxSteps,
		MaxWalk: m.MaxWalk, MaxSources: m.MaxSources}
	return &demuxPart{m: nm, parent: m}
}

// Reuse makes pt a fresh part whose sources' decoders use the blocks of
// pt's (parallel.Reuser).
func (pt *demuxPart) Reuse() bool {
	np := pt.parent.freshPart()
	np.m.share = make(map[uint32]*walk.Walker, len(pt.m.decs))
	for id, s := range pt.m.decs {
		np.m.share[id] = &s.d.w
	}
	*pt = *np
	return true
}

// frames decodes the frames of data, which starts at byte offset off.
func (m *Demux) frames(data []byte, off int64, obs flow.MessageObserver) error {
	sc := NewScanner(bytes.NewReader(data), &m.cfg)
	sc.base = off
	_, err := m.scan(sc, obs)
	return err
}

// Speculate decodes p afresh into sink, a *parallel.Recorder.
func (pt *demuxPart) Speculate(p *parallel.Piece, sink flow.Sink) error {
	m := pt.m
	rec := sink.(*parallel.Recorder)
	pt.rec = rec
	m.setSink(rec)
	var obs flow.MessageObserver
	if _, ok := pt.parent.sink.(flow.MessageObserver); ok {
		obs = rec
	}
	m.idx = p.Index
	if p.Prime == 0 {
		// the first piece: as Decode
		return m.frames(p.Data, p.Offset, obs)
	}
	st, _ := p.State.(*splitState)
	if st == nil {
		return errSpecLost
	}
	m.spec = &demuxSpec{primer: true}
	for i, id := range st.order {
		s, err := m.get(id, p.Offset)
		if err != nil || s == nil {
			return errSpecLost
		}
		s.wait = true
		s.d.seed(st.seeds[i])
	}
	rec.Drop = true
	if err := m.frames(p.Data[:p.Prime], p.Offset, obs); err != nil {
		return err
	}
	rec.Drop = false
	m.spec.primer = false
	pt.order = slices.Clone(m.order)
	pt.snaps = make(map[uint32]*srcStart, len(m.order))
	for _, id := range m.order {
		s := m.decs[id]
		if s.wait {
			continue
		}
		d := s.d
		if d.st.Gaps > 0 {
			return errNoStart
		}
		pt.snaps[id] = &srcStart{snap: d.snapshot(), st: d.st, off: d.off, emitted: d.tally.Emitted(), rN: d.rN}
		d.tally.Open()
		d.gapAt, d.irAt, d.optSince, d.arrivedAt = unset, unset, unset, unset
	}
	return m.frames(p.Data[p.Prime:], p.Offset+int64(p.Prime), obs)
}

// waitFrame handles the frame fr (ending at byte end) of source s, which
// has had no sync packet in the piece: in the primer, a sync packet
// starts the source's decode, a support packet is decoded (it changes
// only what survives syncs while the source is not synchronised), other
// frames are counted as a serial decoder counts them; after the primer,
// only a frame that changes nothing is accepted.
func (m *Demux) waitFrame(s *source, fr *Frame, end int64, obs flow.MessageObserver) error {
	d := s.d
	if fr.Data {
		// (no data trace joined: Demux.SerialReason)
		switch {
		case d.dataKnown && !d.dataOn:
			// a gap, or not, as the source's state says
			if !m.spec.primer {
				return errSpecLost
			}
			m.idx++
			d.nextIdx = m.idx
		case !d.dataSkipped:
			// a warning, with the privilege of the source
			if !m.spec.primer {
				return errSpecLost
			}
			d.dataSkipped = true
		}
		return nil
	}
	pl := fr.Payload
	if !m.spec.primer || overlong(pl) {
		return errSpecLost
	}
	p := &d.pkt
	if d.codec.Parse(pl, fr.Support, p) != nil {
		return errSpecLost
	}
	if p.Format != FormatSync || p.Subformat != SubStart && p.Subformat != SubSupport {
		m.idx++
		d.nextIdx = m.idx
		return nil
	}
	s.wait = p.Subformat == SubSupport
	d.nextIdx = m.idx
	if err := d.frame(fr, end, obs); err != nil {
		return err
	}
	m.idx = d.nextIdx
	if d.malformed {
		return errSpecLost
	}
	return nil
}

// Continue decodes p after its primer into sink from the state reached.
func (pt *demuxPart) Continue(p *parallel.Piece, sink flow.Sink) error {
	m := pt.m
	m.spec = nil
	m.setSink(sink)
	obs, _ := sink.(flow.MessageObserver)
	return m.frames(p.Data[p.Prime:], p.Offset+int64(p.Prime), obs)
}

// Follows compares prev's state with the state pt started from after its
// primer, source by source, and takes over prev's counts, and the
// decoders of the sources the piece holds no state of, when they are the
// same.
func (pt *demuxPart) Follows(prevPart parallel.Part) (func(uint32) uint64, bool, bool) {
	pa := prevPart.(*demuxPart)
	a, b := pa.m, pt.m
	if a.refused != nil {
		// (the sources are more than a piece may start with)
		return nil, false, true
	}
	if !slices.Equal(a.order, pt.order) {
		return nil, false, false
	}
	for _, id := range a.order {
		if sn := pt.snaps[id]; sn != nil && !sn.follows(a.decs[id].d, b.decs[id].d) {
			return nil, false, false
		}
	}
	// the first range of each source: the serial one, continued
	for _, id := range a.order {
		sn := pt.snaps[id]
		if sn == nil {
			continue
		}
		ad, bd := a.decs[id].d, b.decs[id].d
		if k := sn.extra(ad); k > 0 && bd.tally.Emitted() != sn.emitted && !pt.rec.ExtendFirstRangeOf(id, ad.rStart, k) {
			return nil, false, false
		}
	}
	for _, id := range a.order {
		sa, sb := a.decs[id], b.decs[id]
		if sn := pt.snaps[id]; sn != nil {
			sn.takeOver(sa.d, sb.d)
			sb.first, sb.firstIdx = sa.first, sa.firstIdx
			continue
		}
		// a source the piece did not touch: the serial decoder's
		b.decs[id] = sa
		delete(a.decs, id)
	}
	if b.stray == nil {
		b.stray = a.stray
	}
	b.spec = nil
	return nil, true, false
}

// extra returns the instructions of the serial decoder a's open range
// before the piece's when the range the source's sync packet started in
// the piece is still open at the end of the primer.
func (sn *srcStart) extra(a *Decoder) uint64 {
	if sn.emitted != 0 {
		return 0
	}
	return a.rN - sn.rN
}

// follows reports whether the piece's decoder b of a source, in state sn
// at the end of the primer, decodes what follows as the serial decoder
// a, there now, does.
func (sn *srcStart) follows(a, b *Decoder) bool {
	as, s := a.snapshot(), sn.snap
	if sn.emitted == 0 {
		// the piece's range starts at the instruction the sync packet
		// reports; the serial one may run from before it
		if a.rN < sn.rN {
			return false
		}
		as.rStart, as.rN = s.rStart, s.rN
	}
	// data packets skipped: the serial decoder warned before, the
	// piece's did not (and must not have in the piece)
	if as.dataSkipped && !s.dataSkipped && !b.dataSkipped {
		as.dataSkipped = false
	}
	return as == s && b.st.Gaps == sn.st.Gaps
}

// takeOver makes b, the piece's decoder of a source, hold the counts of
// the serial decoder a followed by its own.
func (sn *srcStart) takeOver(a, b *Decoder) {
	t := a.tally.Emitted() + a.rN
	base := sn.emitted + sn.rN
	shift := func(v uint64) uint64 { return v + t - base }
	emitted := a.tally.Emitted()
	if b.tally.Emitted() != sn.emitted {
		emitted = shift(b.tally.Emitted())
	} else if k := sn.extra(a); k > 0 {
		// the range the sync packet started, still open
		b.rStart, b.rN = a.rStart, b.rN+k
	}
	b.takeCounts(a, shift, emitted, sn.off, &sn.st)
}

// splitSrc is what the split knows of one source (and, of its te_inst
// frames and sync packets, parallel.Sources).
type splitSrc struct {
	codec *Codec
	seed  uint64 // Decoder.seed
}

// split reads the trace and cuts it into pieces of about size bytes,
// each starting with a sync packet of one source (format 3 subformat 0,
// that parses) and whose primer ends after a sync packet of each source
// with a te_inst frame in the last parallel.HoldPieces*size bytes (a
// source silent longer, such as a hart that stopped, is left to the
// serial decoder's state: multipar.go), found with the framing a
// serial decode reads; and, where no such place turns up within
// parallel.HoldPieces*size bytes, at the end of a frame (or inside a run
// of UTDD null packets) with no sync (a parallel.Piece.Cont piece). It
// returns the size of the trace and the read error that ended it, if
// any.
func (m *Demux) split(r io.Reader, size int, emit func(*parallel.Piece) error) (int64, error, error) {
	t := &parallel.Tee{R: r}
	c := &parallel.Cutter{Tee: t, Size: size, Max: parallel.HoldPieces * size, Emit: emit}
	sc := NewScanner(t, &m.cfg)
	sc.pause = c.Limit()
	v026 := m.cfg.Version == V026
	var order []uint32
	srcs := map[uint32]*splitSrc{}
	syncs := &parallel.Sources{C: c}
	var p Packet
	var idx int64
	var readErr error
	for {
		ok, rerr, err := nextFrame(sc, c, &idx)
		if err != nil {
			return 0, nil, err
		}
		if !ok {
			readErr = rerr
			break
		}
		fr := sc.Frame()
		id, ok := m.sourceOf(fr)
		s := srcs[id]
		if ok && s == nil && len(order) < m.MaxSources {
			s = &splitSrc{codec: NewCodec(&m.cfg)}
			srcs[id] = s
			order = append(order, id)
			syncs.Add(id)
		}
		if s == nil {
			idx++ // (Demux.strayData, Demux.refuse)
			continue
		}
		if fr.Data {
			if s.seed&(1<<33) != 0 && s.seed&(1<<34) == 0 {
				idx++
			} else {
				s.seed |= 1 << 35
			}
			continue
		}
		i := idx
		idx++
		syncs.Heard(id, fr.Offset, false)
		pl := fr.Payload
		if overlong(pl) {
			continue // (malformed)
		}
		isSupport := fr.Support || !v026 && pl[0]&3 == FormatSync && pl[0]>>2&3 == SubSupport
		sync := !fr.Support && pl[0]&3 == FormatSync && pl[0]>>2&3 == SubStart
		if !isSupport && !sync || s.codec.Parse(pl, fr.Support, &p) != nil {
			continue
		}
		if isSupport {
			s.seed = s.seed&(1<<35) | 1<<32 | 1<<33
			if p.DEnable != 0 {
				s.seed |= 1 << 34
			}
			if !v026 {
				s.codec.Options = OptionsFromBits(p.IOptions)
			}
			s.seed |= uint64(s.codec.Options.Bits())
			continue
		}
		st := &splitState{order: order[:len(order):len(order)], seeds: make([]uint64, len(order))}
		for k, id := range order {
			st.seeds[k] = srcs[id].seed
		}
		// a piece at the earliest of the last sync packets of the
		// sources with a te_inst frame in the last c.Max bytes
		syncs.Sync(id, fr.Offset, i, st)
		if cut, err := syncs.Cut(sc.Offset()); err != nil {
			return 0, nil, err
		} else if cut {
			sc.pause = c.Limit()
		}
	}
	total := sc.Offset()
	if err := c.End(); err != nil {
		return 0, nil, err
	}
	return total, readErr, nil
}
