package parallel

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
)

// A Tee gives back the bytes read through it by offset, after dropping
// those before a piece.
func TestTee(t *testing.T) {
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	tee := &Tee{R: io.LimitReader(bytes.NewReader(data), 600)}
	buf := make([]byte, 256)
	for n := 0; n < 500; {
		k, err := tee.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		n += k
	}
	if tee.End() != 512 {
		t.Fatalf("End %d after reading 512 bytes", tee.End())
	}
	got := tee.Bytes(10, 300)
	tee.Drop(200)
	if !bytes.Equal(got, data[10:300]) || !bytes.Equal(tee.Bytes(200, 512), data[200:512]) {
		t.Error("bytes kept differ from those read")
	}
	if _, err := io.ReadAll(tee); err != nil || tee.End() != 600 || !bytes.Equal(tee.Bytes(200, 600), data[200:600]) {
		t.Errorf("after reading to the end: End %d, %v", tee.End(), err)
	}
	got[0] ^= 0xff // a copy: the Tee's bytes stay
	tee.Drop(250)
	if !bytes.Equal(tee.Bytes(250, 600), data[250:600]) {
		t.Error("bytes kept differ after a second Drop")
	}
}

// cutterSplit cuts data, whose bytes are messages and whose zero bytes
// are syncs (a piece's primer is its sync), with a Cutter of pieces of
// size bytes, reading it through a Tee as a protocol's split does.
func cutterSplit(data []byte, size int) func(func(*Piece) error) error {
	return func(emit func(*Piece) error) error {
		t := &Tee{R: bytes.NewReader(data)}
		c := &Cutter{Tee: t, Size: size, Max: HoldPieces * size, Emit: emit}
		var b [1]byte
		for off := int64(0); ; off++ {
			if c.Due(off) {
				if err := c.Force(off, off); err != nil {
					return err
				}
			}
			if _, err := io.ReadFull(t, b[:]); err != nil {
				break
			}
			if b[0] == 0 && c.AtSync(off) {
				if err := c.Sync(off, off, off+1, uint64(off)); err != nil {
					return err
				}
			}
		}
		return c.End()
	}
}

// A Cutter cuts before a sync once a piece holds Size bytes, and without
// one once it holds Max: its pieces tile the trace (overlapping by the
// primers), hold at most Max bytes and a primer, start at a sync (with
// its primer and seed) or are marked Cont, and Run decodes them, the Cont
// ones in sequence only, to the serial decoder's output.
func TestCutter(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	conts := 0
	for k := 0; k < 40; k++ {
		data := make([]byte, 100+rng.Intn(900))
		syncEvery := 2 + rng.Intn(200) // (some traces have none at all)
		for i := range data {
			data[i] = byte(1 + rng.Intn(5))
			if rng.Intn(syncEvery) == 0 {
				data[i] = 0
			}
			if rng.Intn(60) == 0 {
				data[i] = 0xff
			}
		}
		size := 2 + rng.Intn(20)
		var end int64
		var ps []*Piece
		err := cutterSplit(data, size)(func(p *Piece) error {
			switch {
			case p.Seq != len(ps):
				t.Fatalf("piece %d emitted as %d", len(ps), p.Seq)
			case p.Seq == 0 && (p.Cont || p.Offset != 0 || p.Prime != 0):
				t.Fatalf("first piece %+v", *p)
			case p.Cont && (p.Prime != 0 || p.Offset != end || p.Seed != 0):
				t.Fatalf("cont piece %d at %d, primer %d, seed %d, after a piece ending at %d", p.Seq, p.Offset, p.Prime,
					p.Seed, end)
			case p.Seq > 0 && !p.Cont && (p.Prime != 1 || data[p.Offset] != 0 || p.Offset+1 != end ||
				p.Seed != uint64(p.Offset)):
				t.Fatalf("piece %d at %d, primer %d, seed %d, after a piece ending at %d", p.Seq, p.Offset, p.Prime,
					p.Seed, end)
			case len(p.Data) > HoldPieces*size+1:
				t.Fatalf("piece %d holds %d bytes, Max %d", p.Seq, len(p.Data), HoldPieces*size)
			case string(p.Data) != string(data[p.Offset:p.Offset+int64(len(p.Data))]):
				t.Fatalf("piece %d: its bytes are not the trace's", p.Seq)
			}
			end = p.Offset + int64(len(p.Data))
			ps = append(ps, p)
			if p.Cont {
				conts++
			}
			return nil
		})
		if err != nil || end != int64(len(data)) {
			t.Fatalf("case %d: the pieces end at %d of %d (%v)", k, end, len(data), err)
		}
		var want lines
		s := &toy{sink: &want}
		for i, b := range data {
			s.byte(b, int64(i))
		}
		for _, jobs := range []int{1, 2, 5} {
			var got lines
			pp := &Parallel{Jobs: jobs, Fresh: func() Part { return &contToy{t: t} }, Split: cutterSplit(data, size),
				Sink: &got}
			if _, err := pp.Run(); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("case %d, %d jobs (%d pieces, %d redone, %d cont):\n got %v\nwant %v", k, jobs, pp.Pieces,
					pp.Redone, pp.Cont, got, want)
			}
			n := 0
			for _, p := range ps {
				if p.Cont {
					n++
				}
			}
			if pp.Pieces != len(ps) || pp.Cont != n {
				t.Errorf("case %d: Run counts %d pieces, %d cont; the split cut %d, %d", k, pp.Pieces, pp.Cont, len(ps), n)
			}
		}
	}
	if conts == 0 {
		t.Error("no piece cut without a sync")
	}
}

// contToy is the toy decoder, failing the test when a Cont piece is
// speculated.
type contToy struct {
	toy
	t *testing.T
}

func (d *contToy) Speculate(p *Piece, sink flow.Sink) error {
	if p.Cont {
		d.t.Errorf("cont piece %d speculated", p.Seq)
	}
	return d.toy.Speculate(p, sink)
}

func (d *contToy) Follows(prev Part) (func(uint32) uint64, bool, bool) {
	return d.toy.Follows(&prev.(*contToy).toy)
}

// SyncState gives the piece it starts its State (Piece.State); a piece
// cut with no sync (Force) has none.
func TestCutterState(t *testing.T) {
	data := make([]byte, 100)
	tee := &Tee{R: bytes.NewReader(data)}
	var got []*Piece
	c := &Cutter{Tee: tee, Size: 10, Max: 40, Emit: func(p *Piece) error { got = append(got, p); return nil }}
	if _, err := io.ReadFull(tee, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	st := &struct{ n int }{7}
	if err := c.SyncState(20, 3, 25, 9, st); err != nil {
		t.Fatal(err)
	}
	if err := c.Force(60, 8); err != nil {
		t.Fatal(err)
	}
	if err := c.End(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].State != nil || got[1].State != st || got[1].Seed != 9 || got[1].Prime != 5 ||
		got[2].State != nil || !got[2].Cont {
		t.Errorf("pieces %+v %+v %+v", got[0], got[1], got[2])
	}
}
