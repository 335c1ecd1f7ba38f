package etrace

import (
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/decode/walk"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
)

// Several harts are traced by one encoder each; their packets share one
// byte stream, told apart by the source ID of the UTDD encapsulation
// (Config.SrcBits, Config.SrcID: trTeSrcBits, trTeSrcID, one ID per
// encoder). The raw framing has no source ID, so a multi-source trace is
// always UTDD-framed. A Funnel merges the encoders' frames one by one, in
// the order they are made, as a trace funnel does; a Demux reads such a
// stream with one Decoder per source.

// Funnel merges the frames of several encoders into one stream: each
// encoder's Writer (NewWriter, NewEncoder) given a Funnel writes every
// frame to it as soon as the frame is made, so the stream interleaves
// whole frames in the order the encoders produce them. A Funnel is safe
// for use by encoders on several goroutines.
type Funnel struct {
	mu sync.Mutex
	w  io.Writer
}

// NewFunnel returns a funnel writing to w.
func NewFunnel(w io.Writer) *Funnel { return &Funnel{w: w} }

// FramesAsMade reports true: a Funnel takes each frame as it is made
// (FrameWriter).
func (f *Funnel) FramesAsMade() bool { return true }

// Write writes the frames in p (a Writer's flush) in one piece.
func (f *Funnel) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.w.Write(p)
}

// Demux decodes a UTDD-framed stream carrying the packets of several
// encoders: each source ID gets a Decoder of its own (its own state,
// image views and statistics), created when the source's first frame
// comes, and the flow events of each are tagged with the source ID
// (flow.Event.Src). Create one with NewDemux.
type Demux struct {
	cfg   Config
	img   *image.Set
	sink  flow.Sink
	decs  map[uint32]*source
	order []uint32 // sources, in order of their first frame
	// MaxSteps and MaxWalk are given to each source's Decoder.
	MaxSteps, MaxWalk int
	// MaxSources bounds the decoders (each holds tens of KiB): the frames
	// of the source IDs past it are gaps of their own (a trace damaged
	// where a 16-bit source ID field could otherwise name 65536).
	MaxSources int
	idx        int64           // index of the next frame (all sources)
	refused    []uint64        // bit set of the source IDs refused (MaxSources)
	stray      map[uint32]bool // data frames' source IDs of no hart (the first 64)
	ev         flow.Event

	// a parallel decode (multipar.go): spec, when not nil, marks the
	// decoder of a piece started afresh; share holds the blocks built
	// by the decoders of an earlier piece, by source
	spec  *demuxSpec
	share map[uint32]*walk.Walker
	jobs  jobsState
}

// DefaultMaxSources is the default Demux.MaxSources.
const DefaultMaxSources = 256

// source is one source's decoder and the sink that tags its events.
type source struct {
	d        *Decoder
	tag      srcSink
	first    int64 // offset of its first frame
	firstIdx int64 // and its index

	join *DataJoiner // data trace (multidata.go)

	// wait: the decoder of a piece of a parallel decode has not seen
	// the source's sync packet in the piece (multipar.go)
	wait bool
}

// srcSink tags the events of one source with its ID.
type srcSink struct {
	next flow.Sink
	src  uint32
}

func (s *srcSink) Event(e *flow.Event) error {
	e.Src = s.src
	return s.next.Event(e)
}

func (s *srcSink) Close() error { return nil }

// NewDemux returns a demultiplexing decoder for traces written with cfg
// (which must be UTDD-framed with a source ID field; with data trace,
// DataConfig.Harts says which source IDs are each hart's data packets,
// multidata.go), following the program in img (each source sees it
// through its own context and views), sending every source's flow to
// sink.
func NewDemux(img *image.Set, sink flow.Sink, cfg Config) (*Demux, error) {
	if cfg.Encap != EncapUTDD || cfg.SrcBits == 0 {
		return nil, fmt.Errorf("etrace: several sources need the UTDD framing with a source ID field (trTeSrcBits > 0)")
	}
	if cfg.Data != nil && cfg.Data.Harts < 2 {
		return nil, fmt.Errorf("etrace: data trace of several sources needs the source IDs of each hart's data packets (DataConfig.Harts)")
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	return &Demux{cfg: cfg, img: img, sink: sink, decs: map[uint32]*source{}, MaxSteps: 1 << 20,
		MaxSources: DefaultMaxSources}, nil
}

// Sources returns the source IDs seen so far, in order of their first
// frame.
func (m *Demux) Sources() []uint32 { return m.order }

// Source returns the decoder of source id (nil if the stream had none of
// its frames).
func (m *Demux) Source(id uint32) *Decoder {
	if s := m.decs[id]; s != nil {
		return s.d
	}
	return nil
}

// Stats returns the sum of the sources' statistics.
func (m *Demux) Stats() *Stats {
	var t Stats
	for _, id := range m.order {
		st := m.decs[id].d.Stats()
		t.Packets += st.Packets
		for i := range t.ByFormat {
			t.ByFormat[i] += st.ByFormat[i]
			t.Sync[i] += st.Sync[i]
		}
		t.Instructions += st.Instructions
		t.Gaps += st.Gaps
		t.Bytes = st.Bytes
	}
	return &t
}

// get returns the decoder of source id, creating it at its first frame
// (at byte off); nil when there are MaxSources already.
func (m *Demux) get(id uint32, off int64) (*source, error) {
	if s := m.decs[id]; s != nil {
		return s, nil
	}
	if len(m.order) >= m.MaxSources {
		return nil, nil
	}
	s := &source{tag: srcSink{next: m.sink, src: id}, first: off, firstIdx: m.idx}
	c := m.cfg
	c.SrcID = id
	d, err := m.newSourceDecoder(s, c)
	if err != nil {
		return nil, err
	}
	d.MaxSteps, d.MaxWalk = m.MaxSteps, m.MaxWalk
	if w := m.share[id]; w != nil {
		d.w.Share(w)
	}
	s.d = d
	m.decs[id] = s
	m.order = append(m.order, id)
	return s, nil
}

// Decode decodes the stream read from r, holding only a small buffer of
// it at a time, and ends every source's trace (Decoder.Flush). Each
// source is decoded as Decoder.Decode decodes a single-source stream: its
// malformed packets and inconsistencies are gaps of its flow, with the
// stream's byte offsets and frame indexes. A frame whose header cannot be
// read may have belonged to any source: it is a gap in every source that
// is following its program. So may a frame whose packet its source
// cannot read (its length byte may be the damaged part, and then it
// covers frames of other sources), and a te_inst frame of a source that has
// had no sync packet (a source's trace starts with one; unless
// cfg.Decode.AllowTruncated): its source ID may be damaged. A source that
// has frames but no sync packet is a gap of its own. Decode returns an error only when reading fails, a
// sink returns one, or the stream is empty or no source has a sync packet
// (a *decode.Error wrapping decode.ErrEmpty or decode.ErrNoSync). The
// sink is not closed.
func (m *Demux) Decode(r io.Reader) error {
	sc := NewScanner(r, &m.cfg)
	obs, _ := m.sink.(flow.MessageObserver)
	readErr, err := m.scan(sc, obs)
	if err != nil {
		return err
	}
	return m.end(sc.Offset(), readErr)
}

// scan decodes the frames sc reads, sending the packets to obs when it
// is not nil. It returns the read error that ended the stream (nil at
// its end), or the error that stops decoding.
func (m *Demux) scan(sc *Scanner, obs flow.MessageObserver) (readErr, err error) {
	for {
		if !sc.Scan() {
			err := sc.Err()
			if err == nil {
				return nil, nil
			}
			fe, ok := err.(*FramingError)
			if !ok {
				return err, nil // end the trace here
			}
			// Whose frame it was is unknown: every source may have lost it.
			if gerr := m.lost(fe); gerr != nil {
				return nil, gerr
			}
			if sc.Done() {
				return nil, nil
			}
			continue
		}
		if err := m.frame(sc.Frame(), sc.Offset(), obs); err != nil {
			return nil, err
		}
	}
}

// frame decodes the frame fr, which ends at byte end.
func (m *Demux) frame(fr *Frame, end int64, obs flow.MessageObserver) error {
	id, ok := m.sourceOf(fr)
	if !ok {
		return m.strayData(fr)
	}
	s, err := m.get(id, fr.Offset)
	if err != nil {
		return err
	}
	if s == nil {
		return m.refuse(fr)
	}
	if s.wait {
		return m.waitFrame(s, fr, end, obs)
	}
	idx := m.idx
	s.d.nextIdx = idx
	if err := s.d.frame(fr, end, obs); err != nil {
		return err
	}
	m.idx = s.d.nextIdx
	if s.d.malformed {
		// The frame's length byte may be what is damaged: the frame
		// may hold frames of other sources.
		return m.malformed(fr, idx)
	}
	if p := &s.d.pkt; !s.d.sawSync && !m.cfg.Decode.AllowTruncated && !fr.Data &&
		!(p.Format == FormatSync && p.Subformat == SubSupport) {
		// A source's trace starts with a sync packet: this frame's
		// source ID may be damaged, and another source lost it.
		return m.foreign(fr, idx)
	}
	return nil
}

// end ends the trace, end bytes long, whose reading ended with readErr
// (nil at its end): every source's decoder and data join is flushed.
func (m *Demux) end(end int64, readErr error) error {
	if readErr == nil && end == 0 {
		return &decode.Error{Offset: 0, Index: 0, Err: decode.ErrEmpty}
	}
	synced := false
	for _, id := range m.order {
		synced = synced || m.decs[id].d.sawSync
	}
	if readErr == nil && !synced {
		return &decode.Error{Offset: 0, Index: 0, Err: fmt.Errorf("%w (format 3 subformat 0 or 1) in any source", decode.ErrNoSync)}
	}
	ids := append([]uint32(nil), m.order...)
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		s := m.decs[id]
		d := s.d
		d.st.Bytes = uint64(end)
		d.nextIdx = m.idx
		if !d.sawSync && d.preErr == nil {
			// (AllowTruncated: packets before the first sync are not
			// gaps, but a source that never synchronised has lost all)
			d.preErr, d.preOff, d.preIdx, d.preWhat = fmt.Errorf("%w (format 3 subformat 0 or 1) for source %d", decode.ErrNoSync, id), s.first, s.firstIdx, "source"
		}
		if err := d.Flush(); err != nil {
			return err
		}
		if err := s.flushData(); err != nil {
			return err
		}
	}
	return readErr
}

// lost handles a frame that may have belonged to any source (its header
// or source ID is damaged): a gap in every source following its program.
func (m *Demux) lost(fe *FramingError) error {
	if m.spec != nil {
		return errSpecLost
	}
	idx := m.idx
	m.idx++
	for _, id := range m.order {
		d := m.decs[id].d
		d.nextIdx = idx
		if err := d.framingError(fe); err != nil {
			return err
		}
	}
	return nil
}

// refuse reports, once per source ID, a frame of a source past
// MaxSources as a gap of that source.
func (m *Demux) refuse(fr *Frame) error {
	if m.spec != nil {
		return errSpecLost
	}
	idx := m.idx
	m.idx++
	if m.refused == nil {
		m.refused = make([]uint64, (1<<16)/64)
	}
	id := fr.SrcID & 0xffff
	if m.refused[id/64]&(1<<(id%64)) != 0 {
		return nil
	}
	m.refused[id/64] |= 1 << (id % 64)
	e := &decode.Error{Offset: fr.Offset, Index: idx, What: "frame",
		Err: fmt.Errorf("%w: source ID %d after %d sources (Demux.MaxSources): its frames are not decoded", decode.ErrUnknownSource, fr.SrcID, m.MaxSources)}
	m.ev = flow.Event{Kind: flow.KindGap, Src: fr.SrcID, Offset: fr.Offset, Index: idx, Err: e}
	return m.sink.Event(&m.ev)
}

// malformed handles the frame fr (index idx) whose packet its source
// could not read: its length byte may be damaged, so the bytes it covers
// may hold frames of any source (a length grown from 2 to 18 swallows
// the next frames whole).
func (m *Demux) malformed(fr *Frame, idx int64) error {
	return m.othersLost(fr, idx, fmt.Errorf("%w: a malformed frame of source %d: its length byte may be damaged, and its bytes this source's frames",
		decode.ErrMalformed, fr.SrcID))
}

// foreign handles the frame fr (index idx) of a source that has had no
// sync packet, which is no packet a source's trace starts with: it may be
// the frame of another source, with a damaged source ID.
func (m *Demux) foreign(fr *Frame, idx int64) error {
	return m.othersLost(fr, idx, fmt.Errorf("%w: a frame of source %d, which has had no sync packet: its source ID may be damaged, and the frame this source's",
		decode.ErrUnknownSource, fr.SrcID))
}

// othersLost reports a frame fr (index idx) that may have been one of
// another source's, as cause says, as a gap in every other source that
// is following its program.
func (m *Demux) othersLost(fr *Frame, idx int64, cause error) error {
	if m.spec != nil {
		return errSpecLost
	}
	for _, id := range m.order {
		d := m.decs[id].d
		if id == fr.SrcID || d.phase != phaseSynced {
			continue
		}
		if err := d.gap(&decode.Error{Offset: fr.Offset, Index: idx, What: "frame", Err: cause}); err != nil {
			return err
		}
	}
	return nil
}
