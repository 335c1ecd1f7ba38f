package flow

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// selCode is a program of mixed 2- and 4-byte instructions at 0x1000;
// sizes maps each instruction address to its size, as built (the test's
// truth, independent of the image's decoding).
func selCode() (*image.Set, []uint64, map[uint64]uint64) {
	var code []byte
	var addrs []uint64
	sizes := map[uint64]uint64{}
	a := uint64(0x1000)
	for i := 0; i < 200; i++ {
		addrs = append(addrs, a)
		if i%3 == 0 {
			code = append(code, 0x01, 0x00) // c.nop
			sizes[a] = 2
		} else {
			code = append(code, 0x13, 0, 0, 0) // addi x0,x0,0
			sizes[a] = 4
		}
		a += sizes[a]
	}
	img := image.NewSet()
	img.AddBytes("code", 0x1000, code)
	return img, addrs, sizes
}

// selInst is one executed instruction with what the selector tests.
type selInst struct {
	pc      uint64
	src     uint32
	priv    ingress.Priv
	ctx     uint64
	known   bool
	time    uint64
	hasTime bool
}

type selRecorder struct{ evs []Event }

func (r *selRecorder) Event(e *Event) error { r.evs = append(r.evs, *e); return nil }
func (r *selRecorder) Close() error         { return nil }

// expand lists the instructions of the ranges of evs, with sizes.
func expand(t *testing.T, evs []Event, sizes map[uint64]uint64) []uint64 {
	t.Helper()
	var out []uint64
	for _, e := range evs {
		if e.Kind != KindRange {
			continue
		}
		pc := e.Start
		for i := uint64(0); i < e.N; i++ {
			out = append(out, pc)
			if i+1 < e.N {
				pc += sizes[pc]
			}
		}
		if pc != e.Last {
			t.Fatalf("range %v: last instruction is %#x", e.String(), pc)
		}
	}
	return out
}

// selFlow builds a two-source flow with context, time, trap and gap
// events, and the per-instruction truth.
//
// trapPrev is the index in insts of the instruction before the trap.
func selFlow(addrs []uint64) (evs []Event, insts []selInst, trapPrev int) {
	type st struct {
		priv  ingress.Priv
		ctx   uint64
		known bool
	}
	state := map[uint32]*st{0: {}, 1: {}}
	var tm uint64
	hasTime := false
	rng := func(src uint32, from, n int) {
		evs = append(evs, Event{Kind: KindRange, Src: src, Start: addrs[from], Last: addrs[from+n-1], N: uint64(n),
			End: ingress.ITypeTaken, HasTarget: true, Target: addrs[0], Offset: -1, Index: -1})
		s := state[src]
		for i := from; i < from+n; i++ {
			insts = append(insts, selInst{pc: addrs[i], src: src, priv: s.priv, ctx: s.ctx, known: s.known, time: tm, hasTime: hasTime})
		}
	}
	ctx := func(src uint32, p ingress.Priv, c uint64) {
		evs = append(evs, Event{Kind: KindContext, Src: src, Priv: p, Context: c, Offset: -1, Index: -1})
		*state[src] = st{p, c, true}
	}
	clock := func(v uint64) {
		evs = append(evs, Event{Kind: KindTime, Time: v, Offset: -1, Index: -1})
		tm, hasTime = v, true
	}
	rng(0, 0, 6) // before any context
	ctx(0, ingress.PrivM, 1)
	ctx(1, ingress.PrivS, 7)
	rng(0, 3, 20)
	rng(1, 10, 9)
	clock(100)
	trapPrev = len(insts) - 9 - 1 // before src 1's range
	evs = append(evs, Event{Kind: KindTrap, Src: 0, Addr: addrs[30], Target: addrs[50], HasTarget: true, Offset: -1, Index: -1})
	ctx(0, ingress.PrivU, 2)
	rng(0, 50, 31)
	rng(1, 20, 5)
	clock(200)
	evs = append(evs, Event{Kind: KindGap, Src: 1, Offset: 99, Index: 4, Err: errors.New("lost")})
	rng(1, 40, 12)
	ctx(0, ingress.PrivM, 1)
	rng(0, 100, 40)
	clock(300)
	rng(0, 7, 70)
	return evs, insts, trapPrev
}

func TestSelect(t *testing.T) {
	img, addrs, sizes := selCode()
	evs, insts, trapPrev := selFlow(addrs)
	lo, hi := addrs[12], addrs[60] // cuts ranges
	for _, c := range []struct {
		name string
		sel  Selector
		keep func(in selInst, idx uint64) bool
		// sample: keep one in sample of those keep keeps
		sample int
	}{
		{"src", Selector{HasSrc: true, Src: 1}, func(in selInst, _ uint64) bool { return in.src == 1 }, 0},
		{"priv M", Selector{Privs: 1 << ingress.PrivM}, func(in selInst, _ uint64) bool { return in.known && in.priv == ingress.PrivM }, 0},
		{"priv U,S", Selector{Privs: 1<<ingress.PrivU | 1<<ingress.PrivS}, func(in selInst, _ uint64) bool {
			return in.known && (in.priv == ingress.PrivU || in.priv == ingress.PrivS)
		}, 0},
		{"context 2", Selector{HasContext: true, Context: 2}, func(in selInst, _ uint64) bool { return in.known && in.ctx == 2 }, 0},
		{"range", Selector{Ranges: []AddrRange{{lo, hi}}}, func(in selInst, _ uint64) bool { return in.pc >= lo && in.pc < hi }, 0},
		{"two ranges src 0", Selector{HasSrc: true, Ranges: []AddrRange{{addrs[1], addrs[5]}, {addrs[90], addrs[120]}}}, func(in selInst, _ uint64) bool {
			return in.src == 0 && ((in.pc >= addrs[1] && in.pc < addrs[5]) || (in.pc >= addrs[90] && in.pc < addrs[120]))
		}, 0},
		{"from/to index", Selector{From: Point{PointIndex, 17}, To: Point{PointIndex, 101}}, func(_ selInst, i uint64) bool { return i >= 17 && i < 101 }, 0},
		{"from/to index src 0", Selector{HasSrc: true, From: Point{PointIndex, 5}, To: Point{PointIndex, 60}}, func(in selInst, i uint64) bool {
			return in.src == 0 && i >= 5 && i < 60
		}, 0},
		{"from/to time", Selector{From: Point{PointTime, 150}, To: Point{PointTime, 250}}, func(in selInst, _ uint64) bool {
			return in.hasTime && in.time >= 150 && in.time <= 250
		}, 0},
		{"to time", Selector{To: Point{PointTime, 150}}, func(in selInst, _ uint64) bool { return !in.hasTime || in.time <= 150 }, 0},
		{"sample", Selector{Sample: 7}, func(selInst, uint64) bool { return true }, 7},
		{"sample priv M", Selector{Sample: 3, Privs: 1 << ingress.PrivM}, func(in selInst, _ uint64) bool { return in.known && in.priv == ingress.PrivM }, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Truth: index counts the instructions of the selected sources.
			var want []uint64
			var idx uint64
			n := 0
			wantTrap := false
			for i, in := range insts {
				if c.sel.HasSrc && in.src != c.sel.Src {
					continue
				}
				if i == trapPrev {
					wantTrap = c.keep(in, idx)
				}
				if c.keep(in, idx) {
					n++
					if c.sample == 0 || n%c.sample == 0 {
						want = append(want, in.pc)
					}
				}
				idx++
			}
			if len(want) == 0 || len(want) == len(insts) {
				t.Fatalf("expectation keeps %d of %d instructions: the case tests nothing", len(want), len(insts))
			}
			rec := &selRecorder{}
			s := Select(rec, c.sel, img)
			for i := range evs {
				if err := s.Event(&evs[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			got := expand(t, rec.evs, sizes)
			if !slices.Equal(got, want) {
				t.Fatalf("selected %d instructions %x\nwant %d: %x", len(got), got, len(want), want)
			}
			if s.Selected() != uint64(len(want)) {
				t.Errorf("Selected() = %d, want %d", s.Selected(), len(want))
			}
			for _, r := range c.sel.Ranges {
				wantTrap = wantTrap || r.Contains(addrs[30]) || r.Contains(addrs[50])
			}
			if c.sel.HasSrc && c.sel.Src != 0 {
				wantTrap = false
			}
			gaps, traps := 0, 0
			for _, e := range rec.evs {
				if e.Kind == KindGap {
					gaps++
				}
				if e.Kind == KindTrap {
					traps++
				}
				if e.Kind == KindRange && c.sample > 0 && (e.N != 1 || e.End != ingress.ITypeNone) {
					t.Errorf("sample %v is not one instruction without end type", e.String())
				}
			}
			if (traps == 1) != wantTrap || traps > 1 {
				t.Errorf("%d traps passed, want the trap to pass: %v", traps, wantTrap)
			}
			if gaps != 1 {
				t.Errorf("%d gaps passed, want 1 (gaps always pass)", gaps)
			}
		})
	}
}

// TestSelectCuts checks the pieces of a cut range: only the piece that
// ends where the range ends keeps its end type and target, and traps pass
// with the instruction before them.
func TestSelectCuts(t *testing.T) {
	img, addrs, _ := selCode()
	evs := []Event{
		{Kind: KindRange, Start: addrs[0], Last: addrs[9], N: 10, End: ingress.ITypeTaken, HasTarget: true, Target: addrs[50]},
		{Kind: KindTrap, Addr: addrs[10], Target: addrs[60], HasTarget: true},
		{Kind: KindRange, Start: addrs[50], Last: addrs[59], N: 10, End: ingress.ITypeReturn, HasTarget: true, Target: addrs[10]},
		{Kind: KindTrap, Addr: addrs[60], Target: addrs[70], HasTarget: true},
	}
	rec := &selRecorder{}
	s := Select(rec, Selector{Ranges: []AddrRange{{addrs[2], addrs[5]}, {addrs[8], addrs[12]}, {addrs[52], addrs[55]}}}, img)
	for i := range evs {
		s.Event(&evs[i])
	}
	s.Close()
	var got []string
	for _, e := range rec.evs {
		got = append(got, e.String())
	}
	want := []string{
		fmt.Sprintf("range %#x..%#x n=3 end=none", addrs[2], addrs[4]),
		fmt.Sprintf("range %#x..%#x n=2 end=taken next=%#x", addrs[8], addrs[9], addrs[50]),
		evs[1].String(), // after a kept instruction
		fmt.Sprintf("range %#x..%#x n=3 end=none", addrs[52], addrs[54]),
		// the last trap follows an instruction left out, and neither its
		// EPC nor its handler is in a range
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}
