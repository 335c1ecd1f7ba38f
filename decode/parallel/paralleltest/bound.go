package paralleltest

import (
	"io"
	"testing"

	"github.com/rvtrace/rvtrace/decode/parallel"
)

// Bound checks the pieces a protocol's split emits (use Emit as its emit
// function, reading the trace through R): each piece holds at most Max
// bytes, the split has read at most Max+Ahead bytes past the start of a
// piece when it emits it, and the pieces tile the trace, overlapping by
// their primers only (a Cont piece has none; the first piece starts at
// byte 0 and is not a Cont piece). End checks that they cover the trace.
type Bound struct {
	T     testing.TB
	What  string // what the failures name
	R     *CountingReader
	Max   int // the bytes a piece may hold
	Ahead int // the bytes the split's reader may buffer beyond that

	Pieces, Cont int // pieces emitted, Cont pieces among them

	end int64 // the end of the last piece's bytes
}

// Emit checks piece p.
func (b *Bound) Emit(p *parallel.Piece) error {
	b.T.Helper()
	own := p.Offset + int64(p.Prime) // (where the piece's own bytes start)
	if p.Cont && p.Prime != 0 || p.Seq == 0 && (p.Cont || p.Offset != 0) || own != b.end && p.Seq > 0 {
		b.T.Errorf("%s: piece %d (cont %v) at byte %d, primer %d bytes, after a piece ending at byte %d", b.What, p.Seq,
			p.Cont, p.Offset, p.Prime, b.end)
	}
	b.end = p.Offset + int64(len(p.Data))
	if len(p.Data) > b.Max {
		b.T.Errorf("%s: piece %d at byte %d holds %d bytes (bound %d)", b.What, p.Seq, p.Offset, len(p.Data), b.Max)
	}
	if ahead := b.R.N - p.Offset; ahead > int64(b.Max+b.Ahead) {
		b.T.Errorf("%s: piece %d at byte %d emitted after reading up to byte %d", b.What, p.Seq, p.Offset, b.R.N)
	}
	b.Pieces++
	if p.Cont {
		b.Cont++
	}
	return nil
}

// End checks that the pieces ended at byte size, the end of the trace.
func (b *Bound) End(size int) {
	b.T.Helper()
	if b.end != int64(size) {
		b.T.Errorf("%s: the pieces end at byte %d of %d", b.What, b.end, size)
	}
}

// CountingReader counts the bytes read through it.
type CountingReader struct {
	R io.Reader
	N int64
}

// Read reads from R.
func (c *CountingReader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	return n, err
}
