package parallel

// Sources is what the split of a trace of several sources (each with its
// own syncs, their messages or packets interleaved) knows of each source:
// where it was last heard from and where its last sync lies. A piece of
// such a trace starts at a sync of one source and its primer runs on to
// a sync of every other source the piece needs: those heard from in the
// last Cutter.Max bytes that did not stop (a source silent longer, or
// stopped, is left to the serial decoder's state). The split picks the
// start after the fact: after each sync it calls Cut, which starts a
// piece at the earliest of the last syncs of those sources when the
// piece before holds Cutter.Size bytes and the primer no more.
type Sources struct {
	// C is the split's Cutter.
	C    *Cutter
	srcs map[uint32]*srcSyncs
}

// srcSyncs is what Sources knows of one source.
type srcSyncs struct {
	last    int64 // the offset of its last message or packet heard (-1: none)
	stopped bool  // it stopped there
	sync    int64 // the offset of its last sync (-1: none)
	idx     int64 // and its message or packet index
	state   any   // the state a piece starting there starts with
}

// Add registers source id (a split may know of a source before it hears
// from it: only some of its packets count, Heard). It does nothing when
// id is known.
func (s *Sources) Add(id uint32) {
	if s.srcs == nil {
		s.srcs = map[uint32]*srcSyncs{}
	}
	if s.srcs[id] == nil {
		s.srcs[id] = &srcSyncs{last: -1, sync: -1}
	}
}

// Heard records a message or packet of source id at byte offset off;
// stopped says that the source's trace stops with it (a piece needs no
// sync of it until it is heard from again).
func (s *Sources) Heard(id uint32, off int64, stopped bool) {
	s.Add(id)
	o := s.srcs[id]
	o.last, o.stopped = off, stopped
}

// Sync records a sync of source id at byte offset off, message or packet
// index idx: a piece that starts there starts with state (Piece.State).
func (s *Sources) Sync(id uint32, off, idx int64, state any) {
	s.Add(id)
	o := s.srcs[id]
	o.sync, o.idx, o.state = off, idx, state
}

// Cut starts a piece at the earliest of the last syncs of the sources
// heard from in the last C.Max bytes before end that did not stop, its
// primer ending at end, when each of them has had a sync since the
// current piece started, after that piece's primer, the current piece
// holds C.Size bytes before it, and the primer at most C.Size bytes; it
// reports whether it did.
func (s *Sources) Cut(end int64) (bool, error) {
	c := s.C
	var first *srcSyncs
	for _, o := range s.srcs {
		if o.stopped || o.last < end-int64(c.Max) {
			continue
		}
		if o.sync < c.start {
			return false, nil
		}
		if first == nil || o.sync < first.sync {
			first = o
		}
	}
	if first == nil || first.sync < c.prime || !c.AtSync(first.sync) || end-first.sync > int64(c.Size) {
		return false, nil
	}
	return true, c.SyncState(first.sync, first.idx, end, 0, first.state)
}
