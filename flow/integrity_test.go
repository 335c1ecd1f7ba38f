package flow

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// recorder keeps copies of the events it is given.
type recorder struct {
	ev     []Event
	msgs   []string
	closed bool
}

func (r *recorder) Event(e *Event) error { r.ev = append(r.ev, *e); return nil }
func (r *recorder) Close() error         { r.closed = true; return nil }
func (r *recorder) Message(kind string, offset int64, bits int) {
	r.msgs = append(r.msgs, fmt.Sprintf("%s@%d/%d", kind, offset, bits))
}

// testImage maps 64 instructions at 0x1000 alternating 4-byte and 2-byte
// ones (addi x0,x0,0 and c.nop), so that cutting a range needs their sizes.
func testImage() (*image.Set, []uint64) {
	var code []byte
	var pcs []uint64
	pc := uint64(0x1000)
	for i := 0; i < 64; i++ {
		pcs = append(pcs, pc)
		if i%2 == 0 {
			code = append(code, 0x13, 0, 0, 0)
			pc += 4
		} else {
			code = append(code, 0x01, 0)
			pc += 2
		}
	}
	img := image.NewSet()
	img.AddBytes("test", 0x1000, code)
	return img, pcs
}

func rng(pcs []uint64, from, n int) Event {
	return Event{Kind: KindRange, Start: pcs[from], Last: pcs[from+n-1], N: uint64(n), End: ingress.ITypeDirectJump,
		HasTarget: true, Target: 0x9999, Offset: -1}
}

func gapEv(off int64, suspect uint64) Event {
	return Event{Kind: KindGap, Offset: off, Index: 3, Suspect: suspect,
		Err: &decode.Error{Offset: off, Index: 3, What: "ProgTraceSync", Err: fmt.Errorf("%w: at 0x1234", decode.ErrCheckpoint)}}
}

// The flow of the Strict tests: two synced stretches, the first ending in
// a gap that calls its last 7 instructions suspect.
func strictInput(pcs []uint64) []Event {
	return []Event{
		{Kind: KindSync, Addr: pcs[0]},
		rng(pcs, 0, 10),
		{Kind: KindTime, Time: 5},
		{Kind: KindTrap, Addr: pcs[10], Target: pcs[20]},
		rng(pcs, 20, 5),
		gapEv(100, 7),
		{Kind: KindSync, Addr: pcs[30]},
		rng(pcs, 30, 3),
		gapEv(200, 0),
		rng(pcs, 40, 4),
	}
}

func runStrict(t *testing.T, hold int, in []Event, img *image.Set) *recorder {
	t.Helper()
	rec := &recorder{}
	s := Strict(rec, img).(*strict)
	s.max = hold
	for i := range in {
		if err := s.Event(&in[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !rec.closed {
		t.Errorf("Close did not close next")
	}
	return rec
}

// Strict drops exactly the suspect instructions: the last 7 before the
// first gap are the 5 of the second range and the last 2 of the first,
// which is cut to 8 instructions ending at the 8th instruction's address;
// the trap between them goes with them; time, syncs, gaps and the clean
// stretches pass unchanged. Spilling to a file (hold 1 and 2) gives the
// same result as holding in memory.
func TestStrictDropsSuspect(t *testing.T) {
	img, pcs := testImage()
	in := strictInput(pcs)
	cut := rng(pcs, 0, 8)
	cut.End, cut.HasTarget, cut.Target = 0, false, 0
	want := []Event{in[0], cut, in[2], in[5], in[6], in[7], in[8], in[9]}
	for _, hold := range []int{DefaultStrictHold, 1, 2} {
		rec := runStrict(t, hold, in, img)
		if len(rec.ev) != len(want) {
			t.Fatalf("hold %d: %d events, want %d:\n%v", hold, len(rec.ev), len(want), rec.ev)
		}
		for i := range want {
			g, w := rec.ev[i], want[i]
			if g.Err != nil && w.Err != nil && g.Err.Error() == w.Err.Error() {
				g.Err, w.Err = nil, nil
			}
			if g != w {
				t.Errorf("hold %d: event %d = %v, want %v", hold, i, &g, &w)
			}
		}
		var n uint64
		for _, e := range rec.ev {
			n += e.N
		}
		if n != 10+5+3+4-7 {
			t.Errorf("hold %d: %d instructions passed, want %d", hold, n, 10+5+3+4-7)
		}
	}
}

// A suspect count larger than what is held drops all that is held and no
// more; a suspect count on the first instruction of a range drops it whole.
func TestStrictSuspectBeyondHold(t *testing.T) {
	img, pcs := testImage()
	in := []Event{rng(pcs, 0, 4), {Kind: KindSync, Addr: pcs[10]}, rng(pcs, 10, 3), rng(pcs, 13, 2), gapEv(9, 100)}
	rec := runStrict(t, 1, in, img)
	if len(rec.ev) != 3 || rec.ev[0] != in[0] || rec.ev[1].Kind != KindSync || rec.ev[2].Kind != KindGap {
		t.Errorf("got %v", rec.ev)
	}
	// Message statistics pass through at once.
	rec = &recorder{}
	s := Strict(rec, img)
	s.(MessageObserver).Message("ProgTraceSync", 7, 40)
	if len(rec.msgs) != 1 || rec.msgs[0] != "ProgTraceSync@7/40" {
		t.Errorf("messages passed on: %v", rec.msgs)
	}
	in = []Event{{Kind: KindSync}, rng(pcs, 0, 4), rng(pcs, 4, 2), gapEv(9, 2)}
	rec = runStrict(t, 8, in, img)
	if len(rec.ev) != 3 || rec.ev[1] != in[1] {
		t.Errorf("got %v", rec.ev)
	}
}

func TestIntegritySummary(t *testing.T) {
	var g Integrity
	g.MaxFirst = 2
	evs := []Event{
		{Kind: KindRange, N: 100},
		gapEv(10, 4),
		{Kind: KindRange, N: 50},
		{Kind: KindGap, Offset: 20, Index: 7, Err: &decode.Error{Offset: 20, Index: 7, Err: decode.ErrOverflow}},
		{Kind: KindGap, Offset: 30, Index: 9, Err: &decode.Error{Offset: 30, Index: 9, Err: decode.ErrTruncated}},
		{Kind: KindWarn, Offset: 40, Index: 11, Err: &decode.Error{Offset: 40, Index: 11, Err: fmt.Errorf("I-CNT beyond its maximum")}},
	}
	for i := range evs {
		g.Event(&evs[i])
	}
	if g.Clean() {
		t.Errorf("a flow with gaps is clean")
	}
	want := "150 instructions, 3 gaps, 4 suspect instructions, 2 lost spans, 1 warning"
	if s := g.Summary(false); s != want {
		t.Errorf("summary %q, want %q", s, want)
	}
	if s := g.Summary(true); !strings.Contains(s, "4 suspect instructions withheld") {
		t.Errorf("strict summary %q", s)
	}
	d := g.Details()
	wantD := []string{
		"gap at byte 10 (message 3): ProgTraceSync: checkpoint address differs from the decoded flow: at 0x1234; the 4 instructions before it are suspect",
		"gap at byte 20 (message 7): trace lost by the encoder",
		"... and 1 more gap",
		"warning at byte 40 (message 11): I-CNT beyond its maximum",
	}
	if strings.Join(d, "\n") != strings.Join(wantD, "\n") {
		t.Errorf("details:\n%s\nwant:\n%s", strings.Join(d, "\n"), strings.Join(wantD, "\n"))
	}
	var clean Integrity
	clean.Event(&evs[0])
	if !clean.Clean() || clean.Summary(false) != "100 instructions, 0 gaps, 0 suspect instructions, 0 lost spans" {
		t.Errorf("clean summary %q", clean.Summary(false))
	}
}

// The PC list has a comment line where the flow has a gap, and none with
// NoGapMarks.
func TestPCWriterGapMarks(t *testing.T) {
	img, pcs := testImage()
	evs := []Event{rng(pcs, 0, 2), gapEv(77, 1), rng(pcs, 5, 1)}
	for _, marks := range []bool{true, false} {
		var b bytes.Buffer
		w := NewPCWriter(&b, img)
		w.NoGapMarks = !marks
		for i := range evs {
			if err := w.Event(&evs[i]); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		want := "0x1000\n0x1004\n"
		if marks {
			want += "# gap at byte 77 (message 3): ProgTraceSync: checkpoint address differs from the decoded flow: at 0x1234; the instruction before it is suspect\n"
		}
		want += fmt.Sprintf("%#x\n", pcs[5])
		if b.String() != want {
			t.Errorf("marks %v:\n%s\nwant:\n%s", marks, b.String(), want)
		}
		if w.Gaps() != 1 {
			t.Errorf("Gaps() = %d", w.Gaps())
		}
	}
}
