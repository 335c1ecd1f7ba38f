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
