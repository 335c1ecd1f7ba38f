package etrace

import (
	"fmt"
	"math/bits"
	"sort"
)

// Data trace of several harts. Each hart's encoder writes its te_inst
// packets with its own source ID and its data packets with another, so
// that one UTDD-framed stream (a Funnel's) carries both kinds for every
// hart. The rule mapping one to the other is DataConfig.Harts = N: hart
// h's instruction packets carry source ID h (Config.SrcID) and its data
// packets N + h (DataConfig.SrcID). The source ID field (trTeSrcBits) must
// hold 2N-1. With N = 1 this is the single-source default (instruction
// source 0, data source 1), whose bytes DataConfig.Harts = 0 also gives.
//
// A Demux given a configuration with DataConfig.Harts = N (and SrcID 0,
// DataConfig.SrcID N) reads every source ID below N as a hart's te_inst
// packets and N + h as hart h's data packets, joined to hart h's flow by a
// DataJoiner of its own: a damaged data packet costs that hart's accesses
// only. A frame whose source ID is 2N or more belongs to no hart (its
// source ID is damaged): it is a gap in every hart following its program,
// as a frame whose header cannot be read is.

// checkHarts checks the multi-source rule of d (Harts > 1) against c.
func (d *DataConfig) checkHarts(c *Config) error {
	if d.Harts < 0 || d.Harts > 1<<15 {
		return fmt.Errorf("etrace: data trace of %d harts out of range", d.Harts)
	}
	if d.Harts < 2 {
		return nil
	}
	n := uint32(d.Harts)
	if c.Encap != EncapUTDD {
		return fmt.Errorf("etrace: data trace of %d harts needs the UTDD framing (a source ID per hart and kind)", n)
	}
	if uint64(2*n-1)&^mask(c.SrcBits) != 0 {
		return fmt.Errorf("etrace: data trace of %d harts needs source IDs up to %d: trTeSrcBits %d is too narrow", n, 2*n-1, c.SrcBits)
	}
	if c.SrcID >= n || d.SrcID != n+c.SrcID {
		return fmt.Errorf("etrace: data trace of %d harts: the instruction source ID (%d) must be a hart's (below %d) and the data source ID (%d) %d more",
			n, c.SrcID, n, d.SrcID, n)
	}
	return nil
}

// isDataSrc reports whether frames of source ID id are data packets.
func (d *DataConfig) isDataSrc(id uint32) bool {
	if d.Harts > 1 {
		return id >= uint32(d.Harts)
	}
	return id == d.SrcID
}

// sourceOf returns the instruction source a frame belongs to, and false
// for a data frame of no hart (a source ID of 2N or more).
func (m *Demux) sourceOf(fr *Frame) (uint32, bool) {
	if !fr.Data || m.cfg.Data == nil {
		return fr.SrcID, true
	}
	n := uint32(m.cfg.Data.Harts)
	if fr.SrcID-n >= n {
		return 0, false
	}
	return fr.SrcID - n, true
}

// newSourceDecoder returns the decoder of source s (configured with c,
// whose SrcID is the source's): with data trace, a DataJoiner of its own
// between the decoder and the source's tagging sink, taking the data
// packets of source ID Harts + s.
func (m *Demux) newSourceDecoder(s *source, c Config) (*Decoder, error) {
	if c.Data == nil {
		return NewDecoder(m.img, &s.tag, c)
	}
	d := *c.Data
	d.SrcID = uint32(d.Harts) + c.SrcID
	c.Data = &d
	j, err := NewDataJoiner(&s.tag, m.img, &c)
	if err != nil {
		return nil, err
	}
	dec, err := NewDecoder(m.img, j, c)
	if err != nil {
		return nil, err
	}
	dec.Data = j
	s.join = j
	return dec, nil
}

// flushData ends the data join of source s (after its decoder's Flush):
// the packets left over, the instructions left without their access.
func (s *source) flushData() error {
	if s.join == nil {
		return nil
	}
	return s.join.Flush()
}

// Joiner returns the data joiner of source id (nil without data trace or
// if the stream had none of its frames).
func (m *Demux) Joiner(id uint32) *DataJoiner {
	if s := m.decs[id]; s != nil {
		return s.join
	}
	return nil
}

// strayData handles a data frame whose source ID is no hart's.
func (m *Demux) strayData(fr *Frame) error {
	n := m.cfg.Data.Harts
	if m.stray == nil {
		m.stray = map[uint32]bool{}
	}
	if len(m.stray) < 64 {
		m.stray[fr.SrcID] = true
	}
	return m.lost(&FramingError{Offset: fr.Offset,
		Msg: fmt.Sprintf("source ID %d is no hart's: %d harts have instruction sources 0..%d and data sources %d..%d", fr.SrcID, n, n-1, n, 2*n-1)})
}

// ForeignSources returns, in increasing order, the source IDs of the
// frames that belong to no source: data frames of no hart
// (DataConfig.Harts; the first 64 such IDs met) and the sources refused
// past MaxSources (the lowest, up to 128 IDs in all).
// Each such frame was a gap. A source that has frames but no sync packet
// (Source(id).Stats().Sync) is another sign of a source ID that is not
// what the configuration says (data packets decoded as instruction
// packets when DataConfig.Harts is missing).
func (m *Demux) ForeignSources() []uint32 {
	set := map[uint32]bool{}
	for id := range m.stray {
		set[id] = true
	}
	for i, w := range m.refused {
		for ; w != 0 && len(set) < 128; w &= w - 1 {
			set[uint32(i*64+bits.TrailingZeros64(w))] = true
		}
	}
	ids := make([]uint32, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// dataDumpers holds the data packet listers of a dump: one per data
// source, as each hart's data packets are compressed against that hart's
// earlier ones (DataConfig.Harts > 1), else one.
type dataDumpers struct {
	harts uint32
	dc    *DataConfig
	one   *dataDumper
	by    map[uint32]*dataDumper
}

// newDataDumpers returns the listers for data configuration d (nil
// without data trace).
func newDataDumpers(d *DataConfig) *dataDumpers {
	if d == nil {
		return nil
	}
	if d.Harts > 1 {
		return &dataDumpers{harts: uint32(d.Harts), dc: d, by: map[uint32]*dataDumper{}}
	}
	return &dataDumpers{dc: d, one: &dataDumper{dc: newDataCodec(d)}}
}

// get returns the lister of the data packets of source ID src.
func (s *dataDumpers) get(src uint32) *dataDumper {
	if s.one != nil {
		return s.one
	}
	d := s.by[src]
	if d == nil {
		d = &dataDumper{dc: newDataCodec(s.dc)}
		s.by[src] = d
	}
	return d
}

// sync restarts the compression of the data packets of instruction
// source src (its sync packet).
func (s *dataDumpers) sync(src uint32) {
	if s.one != nil {
		s.one.st.reset()
	} else if d := s.by[s.harts+src]; d != nil {
		d.st.reset()
	}
}

// announce applies doptions dopt of the support packet of instruction
// source src to the lister of its data packets: whether CSR packets are
// traced.
func (s *dataDumpers) announce(src uint32, dopt uint8) {
	if s.one != nil {
		s.one.dc.announce(dopt)
	} else {
		s.get(s.harts + src).dc.announce(dopt)
	}
}

// srcPrefix returns the source ID column of a data packet's line: only
// for several harts (one source's lines stay as they were).
func (s *dataDumpers) srcPrefix(fr *Frame) string {
	if s.one != nil {
		return ""
	}
	return fmt.Sprintf("src=%d ts=%d ", fr.SrcID, fr.Timestamp)
}
