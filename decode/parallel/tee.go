package parallel

import "io"

// Tee is an io.Reader that keeps the bytes read through it, so that a
// split (Parallel.Split) can read a trace once, with the framing of a
// serial decode, and cut the pieces out of what it read. The zero value
// with R set keeps everything from offset 0.
type Tee struct {
	// R is the reader read through.
	R    io.Reader
	buf  []byte
	base int64 // the offset of buf[0]
}

// Read reads from R and keeps what it read.
func (t *Tee) Read(p []byte) (int, error) {
	n, err := t.R.Read(p)
	t.buf = append(t.buf, p[:n]...)
	return n, err
}

// Bytes returns a copy of the bytes kept from offset from to offset to
// (from at or after the last Drop, to at most End).
func (t *Tee) Bytes(from, to int64) []byte {
	return append([]byte(nil), t.buf[from-t.base:to-t.base]...)
}

// Drop forgets the bytes before offset off, keeping the memory.
func (t *Tee) Drop(off int64) {
	n := copy(t.buf, t.buf[off-t.base:])
	t.buf = t.buf[:n]
	t.base = off
}

// End returns the offset after the last byte read.
func (t *Tee) End() int64 { return t.base + int64(len(t.buf)) }

// HoldPieces is the number of pieces' worth of bytes (Cutter.Size) a
// split holds at most before it cuts the trace where there is no sync
// (Cutter.Max). Pieces are held (read ahead, speculated, joined) about
// 3*jobs at a time, so this bounds the trace bytes in memory to about
// 3*jobs*HoldPieces*Size (a few MiB at N-Trace's and E-Trace's 16 KiB
// pieces), next to the events the speculated pieces hold
// (MaxPieceEvents); and syncs up to (HoldPieces-1)*Size bytes apart (48
// KiB: every periodic-sync setting measured in PERFORMANCE.md has them
// closer) still start every piece, so that the pieces are decoded in
// parallel. A trace with fewer syncs (a single-sync capture) is decoded
// in sequence, in bounded memory.
const HoldPieces = 4

// A Cutter cuts a trace that a split reads through Tee into pieces and
// emits them: before a sync once the piece holds Size bytes (Sync), and,
// once it holds Max bytes with no sync, at the next place where the
// framing allows (Force), so that the bytes held stay bounded. The split
// calls Due after each message, packet or framing error (and where its
// reader stops skipping bytes at Limit) and Force when Due says so.
type Cutter struct {
	// Tee is the reader the split reads through.
	Tee *Tee
	// Size is the size of a piece aimed at: a sync this far or further
	// after the start of a piece starts the next one.
	Size int
	// Max is the bytes a piece holds after which Due reports a cut
	// without a sync (HoldPieces*Size).
	Max int
	// Emit is the split's emit (Parallel.Split).
	Emit func(*Piece) error

	seq          int
	start, index int64 // the offset and index of the piece's first byte and message
	prime        int64 // the end of its primer
	cont         bool
	seed         uint64
	state        any
}

// AtSync reports whether a sync message or packet at offset at starts a
// new piece: the piece holds Size bytes before it.
func (c *Cutter) AtSync(at int64) bool { return at-c.start >= int64(c.Size) }

// Sync emits the piece, up to end (it includes the next piece's primer),
// and starts the next at the sync at offset at, message index idx, its
// primer ending at end, with seed (Piece.Seed).
func (c *Cutter) Sync(at, idx, end int64, seed uint64) error {
	return c.SyncState(at, idx, end, seed, nil)
}

// SyncState is Sync for a protocol that starts the next piece with more
// state than a seed (Piece.State).
func (c *Cutter) SyncState(at, idx, end int64, seed uint64, state any) error {
	if err := c.emit(end); err != nil {
		return err
	}
	c.start, c.index, c.prime, c.cont, c.seed, c.state = at, idx, end, false, seed, state
	c.Tee.Drop(at)
	return nil
}

// Due reports whether the piece must be cut at offset off (a place where
// the framing allows a cut, after the piece's primer) without a sync: it
// holds Max bytes.
func (c *Cutter) Due(off int64) bool { return off > c.prime && off-c.start >= int64(c.Max) }

// Limit returns the offset from which Due holds: a reader skipping bytes
// (idle bytes, bytes after an error) stops there to let the split cut.
func (c *Cutter) Limit() int64 { return max(c.start+int64(c.Max), c.prime+1) }

// Force emits the piece up to offset off, and starts the next there
// (message index idx), with no sync to start from (Piece.Cont).
func (c *Cutter) Force(off, idx int64) error {
	if err := c.emit(off); err != nil {
		return err
	}
	c.start, c.index, c.prime, c.cont, c.seed, c.state = off, idx, off, true, 0, nil
	c.Tee.Drop(off)
	return nil
}

// End emits the last piece, up to the end of the bytes read.
func (c *Cutter) End() error { return c.emit(c.Tee.End()) }

// emit emits the piece up to end.
func (c *Cutter) emit(end int64) error {
	p := &Piece{Seq: c.seq, Offset: c.start, Index: c.index, Prime: int(c.prime - c.start), Cont: c.cont,
		Data: c.Tee.Bytes(c.start, end), Seed: c.seed, State: c.state}
	c.seq++
	return c.Emit(p)
}
