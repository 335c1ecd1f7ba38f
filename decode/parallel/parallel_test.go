package parallel

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
)

// A toy protocol: each byte is a message; the decoder's state is the sum
// of the bytes so far modulo 3, and each byte b at offset o gives a range
// of b+state instructions at o. A byte 0xff is a gap whose Suspect counts
// the instructions since the last byte 0 (a checkpoint). The serial
// decoder's output is the truth the parallel one must give.
type toy struct {
	state   int
	emitted uint64
	good    uint64
	open    bool
	sink    flow.Sink
	snap    int
}

func (d *toy) byte(b byte, off int64) error {
	if b == 0xff {
		n := d.emitted - d.good
		if d.open {
			n |= decode.OpenSuspect
		}
		d.good, d.open = d.emitted, false
		return d.sink.Event(&flow.Event{Kind: flow.KindGap, Offset: off, Suspect: n})
	}
	if b == 0 {
		d.good, d.open = d.emitted, false
	}
	d.state = (d.state + int(b)) % 3
	n := uint64(b) + uint64(d.state)
	d.emitted += n
	return d.sink.Event(&flow.Event{Kind: flow.KindRange, Start: uint64(off), N: n})
}

func (d *toy) Speculate(p *Piece, sink flow.Sink) error {
	rec := sink.(*Recorder)
	d.sink = rec
	rec.Drop = true
	for i := 0; i < p.Prime; i++ {
		d.byte(p.Data[i], p.Offset+int64(i))
	}
	rec.Drop = false
	d.snap = d.state
	d.emitted, d.good, d.open = 0, 0, p.Prime > 0
	for i := p.Prime; i < len(p.Data); i++ {
		if err := d.byte(p.Data[i], p.Offset+int64(i)); err != nil {
			return err
		}
	}
	return nil
}

func (d *toy) Follows(prev Part) (func(uint32) uint64, bool, bool) {
	a := prev.(*toy)
	if a.state != d.snap {
		return nil, false, false
	}
	carry := a.emitted - a.good
	d.emitted += a.emitted
	if d.open {
		d.good = a.good
	} else {
		d.good += a.emitted
	}
	d.open = false
	return func(uint32) uint64 { return carry }, true, false
}

func (d *toy) Continue(p *Piece, sink flow.Sink) error {
	d.sink = sink
	for i := p.Prime; i < len(p.Data); i++ {
		if err := d.byte(p.Data[i], p.Offset+int64(i)); err != nil {
			return err
		}
	}
	return nil
}

// toySplit cuts data into pieces of size bytes whose primer is their
// first byte.
func toySplit(data []byte, size int) func(func(*Piece) error) error {
	return func(emit func(*Piece) error) error {
		seq, start, prime := 0, 0, 0
		for at := size; ; at += size {
			if at >= len(data) {
				return emit(&Piece{Seq: seq, Offset: int64(start), Prime: prime, Data: data[start:]})
			}
			if err := emit(&Piece{Seq: seq, Offset: int64(start), Prime: prime, Data: data[start : at+1]}); err != nil {
				return err
			}
			seq, start, prime = seq+1, at, 1
		}
	}
}

type lines []string

func (l *lines) Event(e *flow.Event) error {
	*l = append(*l, fmt.Sprintf("%v %d %d %d", e.Kind, e.Start, e.N, e.Suspect))
	return nil
}
func (l *lines) Close() error { return nil }

// Run gives the serial decoder's events, in order, whichever pieces
// follow and whichever are decoded again in sequence, with the suspect
// counts carried across pieces.
func TestRunMatchesSerial(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	pieces, redone := 0, 0
	for k := 0; k < 50; k++ {
		data := make([]byte, 50+rng.Intn(400))
		for i := range data {
			data[i] = byte(rng.Intn(6))
			if rng.Intn(40) == 0 {
				data[i] = 0xff
			}
		}
		var want lines
		s := &toy{sink: &want}
		for i, b := range data {
			s.byte(b, int64(i))
		}
		for _, jobs := range []int{1, 2, 5} {
			var got lines
			pp := &Parallel{Jobs: jobs, Fresh: func() Part { return &toy{} }, Split: toySplit(data, 1+rng.Intn(30)),
				Sink: &got}
			last, err := pp.Run()
			if err != nil || last == nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("case %d, %d jobs (%d pieces, %d redone):\n got %v\nwant %v", k, jobs, pp.Pieces, pp.Redone,
					got, want)
			}
			pieces, redone = pieces+pp.Pieces, redone+pp.Redone
			if l := last.(*toy); l.state != s.state || l.emitted != s.emitted || l.good != s.good {
				t.Errorf("case %d: final state %+v, want %+v", k, *l, *s)
			}
		}
	}
	if redone == 0 || redone > pieces*3/4 {
		t.Errorf("%d pieces, %d decoded again: the test does not exercise both paths", pieces, redone)
	}
}

// A piece with more events than MaxPieceEvents is decoded in sequence,
// with the same result.
func TestRunPieceTooLarge(t *testing.T) {
	old := MaxPieceEvents
	MaxPieceEvents = 5
	defer func() { MaxPieceEvents = old }()
	data := make([]byte, 300)
	for i := range data {
		data[i] = byte(i % 5)
	}
	var want, got lines
	s := &toy{sink: &want}
	for i, b := range data {
		s.byte(b, int64(i))
	}
	pp := &Parallel{Jobs: 2, Fresh: func() Part { return &toy{} }, Split: toySplit(data, 10), Sink: &got}
	if _, err := pp.Run(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || pp.Redone != pp.Pieces {
		t.Errorf("%d of %d pieces decoded again; output equal: %v", pp.Redone, pp.Pieces, fmt.Sprint(got) == fmt.Sprint(want))
	}
}

// A sink error stops the decode and is returned.
func TestRunSinkError(t *testing.T) {
	data := make([]byte, 1000)
	for i := range data {
		data[i] = 1
	}
	pp := &Parallel{Jobs: 3, Fresh: func() Part { return &toy{} }, Split: toySplit(data, 10), Sink: failing{}}
	if _, err := pp.Run(); err == nil || err.Error() != "full" {
		t.Errorf("error %v, want the sink's", err)
	}
}

type failing struct{}

func (failing) Event(*flow.Event) error { return fmt.Errorf("full") }
func (failing) Close() error            { return nil }

// The recorder replays events and message observations in their order.
func TestRecorderReplay(t *testing.T) {
	r := &Recorder{Observe: true}
	r.Message("a", 0, 8)
	r.Event(&flow.Event{Kind: flow.KindRange, Start: 4, N: 2, Offset: 0})
	r.Message("b", 1, 16)
	r.Event(&flow.Event{Kind: flow.KindSync, Addr: 8, Offset: 1})
	r.Event(&flow.Event{Kind: flow.KindGap, Suspect: 3 | decode.OpenSuspect})
	r.Message("c", 3, 8)
	var o obsLog
	if err := r.Replay(&o, func(uint32) uint64 { return 10 }); err != nil {
		t.Fatal(err)
	}
	want := "[msg a range 4 2 0 msg b sync 0 0 0 gap 0 0 13 msg c]"
	if got := fmt.Sprint(o); got != want {
		t.Errorf("replay %s, want %s", got, want)
	}
	r.Reset()
	if r.Len() != 0 {
		t.Errorf("%d events after Reset", r.Len())
	}
}

type obsLog []string

func (l *obsLog) Event(e *flow.Event) error {
	*l = append(*l, fmt.Sprintf("%v %d %d %d", e.Kind, e.Start, e.N, e.Suspect))
	return nil
}
func (l *obsLog) Message(kind string, off int64, bits int) { *l = append(*l, "msg "+kind) }
func (l *obsLog) Close() error                             { return nil }

// EpochsAgree: the address spaces of two counts agree over n
// instructions when no epoch lies between them (one below included).
func TestEpochsAgree(t *testing.T) {
	e := []uint64{100, 200}
	for _, c := range []struct {
		t, s, n uint64
		want    bool
	}{
		{50, 50, 1000, true},  // exact guess
		{50, 60, 30, true},    // (49, 90]
		{50, 60, 40, false},   // (49, 100]
		{60, 50, 40, false},   // the same, the guess below
		{101, 120, 50, true},  // (100, 170]
		{100, 120, 50, false}, // (99, 170]
		{150, 140, 59, false}, // (139, 209]: 200 is in
		{150, 140, 49, true},  // (139, 199]
		{210, 300, 1e6, true}, // after the last
		{0, 7, 50, true},      // (0, 57]
	} {
		if got := EpochsAgree(e, c.t, c.s, c.n); got != c.want {
			t.Errorf("EpochsAgree(%v, t=%d, s=%d, n=%d) = %v", e, c.t, c.s, c.n, got)
		}
	}
	if !EpochsAgree(nil, 1, 2, 3) {
		t.Error("no epochs: not agreeing")
	}
}

// countToy is a part whose events depend on the instruction count from
// the start of the trace (as with code that changes over time): each
// byte b is a range of b+1 instructions starting at the count reached.
// A piece starts counting from its Base and follows only when that was
// the count of the decoder before it.
type countToy struct {
	count, snap uint64
	sink        flow.Sink
}

func (d *countToy) byte(b byte) error {
	n := uint64(b) + 1
	d.count += n
	return d.sink.Event(&flow.Event{Kind: flow.KindRange, Start: d.count - n, N: n})
}

func (d *countToy) Speculate(p *Piece, sink flow.Sink) error {
	rec := sink.(*Recorder)
	d.sink = rec
	rec.Drop = true
	for i := 0; i < p.Prime; i++ {
		d.byte(p.Data[i])
	}
	rec.Drop = false
	d.count, d.snap = p.Base, p.Base
	for i := p.Prime; i < len(p.Data); i++ {
		if err := d.byte(p.Data[i]); err != nil {
			return err
		}
	}
	return nil
}

func (d *countToy) Follows(prev Part) (func(uint32) uint64, bool, bool) {
	return nil, prev.(*countToy).count == d.snap, false
}

func (d *countToy) Continue(p *Piece, sink flow.Sink) error {
	d.sink = sink
	for i := p.Prime; i < len(p.Data); i++ {
		if err := d.byte(p.Data[i]); err != nil {
			return err
		}
	}
	return nil
}

func (d *countToy) Instructions() uint64 { return d.count }

// Run guesses each piece's instruction count (Piece.Base) from the pieces
// before: exactly when those are all decoded (one job), and the result is
// the serial one whatever the guesses.
func TestRunGuessesBase(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	data := make([]byte, 3000)
	for i := range data {
		data[i] = byte(rng.Intn(8))
	}
	var want lines
	s := &countToy{sink: &want}
	for _, b := range data {
		s.byte(b)
	}
	for _, jobs := range []int{1, 2, 4} {
		var got lines
		pp := &Parallel{Jobs: jobs, Fresh: func() Part { return &countToy{} }, Split: toySplit(data, 50), Sink: &got}
		last, err := pp.Run()
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || last.(*countToy).count != s.count {
			t.Fatalf("%d jobs (%d pieces, %d redone): not the serial result", jobs, pp.Pieces, pp.Redone)
		}
		t.Logf("%d jobs: %d pieces, %d decoded again", jobs, pp.Pieces, pp.Redone)
		if jobs == 1 && pp.Redone != 0 {
			t.Errorf("one job: %d of %d pieces decoded again: the guesses are not exact", pp.Redone, pp.Pieces)
		}
	}
}

// ExtendFirstRangeOf extends the first range event of the source named
// (a plain record or a full event: one with a trap cause), not another
// source's; it reports false for a source with no range; with Tally the
// instructions go to the first tally.
func TestExtendFirstRangeOf(t *testing.T) {
	r := &Recorder{}
	r.Event(&flow.Event{Kind: flow.KindRange, Src: 1, Start: 100, N: 2})
	r.Event(&flow.Event{Kind: flow.KindRange, Src: 2, Start: 200, N: 3, HasCause: true, Cause: 5})
	r.Event(&flow.Event{Kind: flow.KindRange, Src: 1, Start: 300, N: 4})
	if !r.ExtendFirstRangeOf(2, 190, 5) || !r.ExtendFirstRangeOf(1, 90, 7) || r.ExtendFirstRangeOf(3, 0, 1) {
		t.Fatal("ExtendFirstRangeOf reported wrongly")
	}
	var o obsLog
	if err := r.Replay(&o, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(o), "[range 90 9 0 range 190 8 0 range 300 4 0]"; got != want {
		t.Errorf("replay %s, want %s", got, want)
	}
	var c flow.Counter
	r = &Recorder{Tally: true}
	r.Event(&flow.Event{Kind: flow.KindRange, Src: 1, N: 2})
	r.Event(&flow.Event{Kind: flow.KindRange, Src: 2, N: 3})
	if !r.ExtendFirstRangeOf(2, 0, 10) {
		t.Fatal("ExtendFirstRangeOf: no tally")
	}
	if err := r.Replay(&c, nil); err != nil {
		t.Fatal(err)
	}
	if c.Ranges != 2 || c.Instructions != 15 {
		t.Errorf("tally: %+v, want 2 ranges of 15 instructions", c)
	}
}
