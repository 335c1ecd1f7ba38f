package ingress

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// foldLog records what reaches the encoder behind a Folder.
type foldLog struct{ calls []string }

func (l *foldLog) Block(b *Block) error {
	l.calls = append(l.calls, fmt.Sprintf("block %#x+%d %s", b.IAddr, b.IRetire, b.IType))
	return nil
}
func (l *foldLog) Close() error { l.calls = append(l.calls, "close"); return nil }
func (l *foldLog) Access(a *Access) error {
	l.calls = append(l.calls, fmt.Sprintf("access %#x %#x", a.IAddr, a.DAddr))
	return nil
}

// event is a block or an access of a test stream.
type event struct {
	b *Block
	a *Access
}

func acc(iaddr, daddr uint64) event { return event{a: &Access{IAddr: iaddr, DAddr: daddr, DSize: 3}} }
func blk(addr uint64, halfwords uint32, it IType) event {
	return event{b: &Block{IAddr: addr, IRetire: halfwords, IType: it}}
}

// blk4 is a 4-byte instruction alone, itype 0.
func blk4(addr uint64) event { return event{b: &Block{IAddr: addr, IRetire: 2, ILastSize: 1}} }

// The specification's illustrations ("Data Trace Interface requirements"):
// a cm.push of four registers at 0x104 after a 4-byte instruction at 0x100,
// followed by two instructions ending in a taken branch at 0x10a, and a
// cm.popret of four registers at 0x204 after an instruction at 0x200 with
// a load.
var (
	pushSpec = []event{
		acc(0x104, 0x1ff8), blk(0x100, 3, ITypeNone), // Block - last instruction is cm.push, itype 0 (1st store)
		acc(0x104, 0x1ff0), blk(0x104, 1, ITypeNone), // Single - cm.push, itype 0 (2nd store)
		acc(0x104, 0x1fe8), blk(0x104, 1, ITypeNone), // Single - cm.push, itype 0 (3rd store)
		acc(0x104, 0x1fe0), acc(0x106, 0x3000), blk(0x104, 4, ITypeTaken), // Block - 1st instruction is cm.push (4th store)
	}
	pushOnce = []event{
		acc(0x104, 0x1ff8), acc(0x104, 0x1ff0), acc(0x104, 0x1fe8), acc(0x104, 0x1fe0), acc(0x106, 0x3000),
		blk(0x100, 6, ITypeTaken),
	}
	popretSpec = []event{
		acc(0x200, 0x4000), acc(0x204, 0x1fe0), blk(0x200, 3, ITypeNone), // Block - last instruction is cm.popret, itype 0 (1st load)
		acc(0x204, 0x1fe8), blk(0x204, 1, ITypeNone), // Single, itype 0 (2nd load)
		acc(0x204, 0x1ff0), blk(0x204, 1, ITypeNone), // Single, itype 0 (3rd load)
		acc(0x204, 0x1ff8), blk(0x204, 1, ITypeReturn), // Single - cm.popret, itype 13 (4th load)
	}
	popretOnce = []event{
		acc(0x200, 0x4000), acc(0x204, 0x1fe0), acc(0x204, 0x1fe8), acc(0x204, 0x1ff0), acc(0x204, 0x1ff8),
		blk(0x200, 3, ITypeReturn),
	}
	// one instruction per block: the push retired four times with
	// itype 0, then a load at 0x106 (itype 0 too) and a jump
	pushPerInst = []event{
		acc(0x104, 0x1ff8), blk(0x104, 1, ITypeNone),
		acc(0x104, 0x1ff0), blk(0x104, 1, ITypeNone),
		acc(0x104, 0x1fe8), blk(0x104, 1, ITypeNone),
		acc(0x104, 0x1fe0), blk(0x104, 1, ITypeNone),
		acc(0x106, 0x3000), blk4(0x106),
		blk(0x10a, 1, ITypeDirectJump),
	}
	pushPerInstOnce = []event{
		acc(0x104, 0x1ff8), acc(0x104, 0x1ff0), acc(0x104, 0x1fe8), acc(0x104, 0x1fe0), blk(0x104, 1, ITypeNone),
		acc(0x106, 0x3000), blk4(0x106),
		blk(0x10a, 1, ITypeDirectJump),
	}
)

// A push of three registers at 0x304, executed twice in a loop (a jump
// at 0x306 back to 0x300, or in the one block per instruction form to
// 0x304), its accesses the only ones: those of its second execution
// follow those of its first in the data file.
var (
	loop3Spec, loop3Once, loop3PerInst, loop3PerInstOnce []event
)

// Two multi-access instructions in one block of the hart: a push of
// three registers at 0x502 and a pop of three at 0x504, after an
// instruction at 0x500 and before a taken branch at 0x506. The push's
// last retirement is the block that ends with the pop's first.
var (
	pushPopSpec = []event{
		acc(0x502, 0x1ff8), blk(0x500, 2, ITypeNone),
		acc(0x502, 0x1ff0), blk(0x502, 1, ITypeNone),
		acc(0x502, 0x1fe8), acc(0x504, 0x1fe8), blk(0x502, 2, ITypeNone),
		acc(0x504, 0x1ff0), blk(0x504, 1, ITypeNone),
		acc(0x504, 0x1ff8), blk(0x504, 2, ITypeTaken),
	}
	pushPopOnce = []event{
		acc(0x502, 0x1ff8), acc(0x502, 0x1ff0), acc(0x502, 0x1fe8),
		acc(0x504, 0x1fe8), acc(0x504, 0x1ff0), acc(0x504, 0x1ff8),
		blk(0x500, 4, ITypeTaken),
	}
)

func init() {
	for i := uint64(0); i < 2; i++ {
		a, b, c := acc(0x304, 0x1ff8-i*0x100), acc(0x304, 0x1ff0-i*0x100), acc(0x304, 0x1fe8-i*0x100)
		loop3Spec = append(loop3Spec, a, blk(0x300, 3, ITypeNone), b, blk(0x304, 1, ITypeNone), c, blk(0x304, 2, ITypeDirectJump))
		loop3Once = append(loop3Once, a, b, c, blk(0x300, 4, ITypeDirectJump))
		loop3PerInst = append(loop3PerInst, a, blk(0x304, 1, ITypeNone), b, blk(0x304, 1, ITypeNone), c, blk(0x304, 1, ITypeNone), blk(0x306, 1, ITypeDirectJump))
		loop3PerInstOnce = append(loop3PerInstOnce, a, b, c, blk(0x304, 1, ITypeNone), blk(0x306, 1, ITypeDirectJump))
	}
}

// multi4 says the instructions at 0x104 and 0x204 make four accesses,
// those at 0x304, 0x502 and 0x504 three.
func multi4(iaddr uint64) int {
	switch iaddr {
	case 0x104, 0x204:
		return 4
	case 0x304, 0x502, 0x504:
		return 3
	}
	return 1
}

// feed sends evs to s and d, and closes s.
func feed(t *testing.T, s Sink, d DataSink, evs []event) {
	t.Helper()
	for _, e := range evs {
		var err error
		if e.b != nil {
			err = s.Block(e.b)
		} else {
			err = d.Access(e.a)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFolder: the retirements of the specification's illustrations fold
// into one block per instruction execution, every access before it,
// with or without Multi; a stream with each instruction retired once
// (rvtrace's port before it followed the rule) passes unchanged.
func TestFolder(t *testing.T) {
	for _, c := range []struct {
		name       string
		spec, once []event
	}{
		{"push", pushSpec, pushOnce},
		{"popret", popretSpec, popretOnce},
		{"per-instruction push", pushPerInst, pushPerInstOnce},
		{"push loop", loop3Spec, loop3Once},
		{"per-instruction push loop", loop3PerInst, loop3PerInstOnce},
		{"push then pop in one block", pushPopSpec, pushPopOnce},
	} {
		want := &foldLog{}
		feed(t, want, want, c.once)
		for _, multi := range []func(uint64) int{nil, multi4} {
			for _, in := range [][]event{c.spec, c.once} {
				l := &foldLog{}
				f := NewFolder(l, l)
				f.Multi = multi
				feed(t, f, f, in)
				if g, w := strings.Join(l.calls, "\n"), strings.Join(want.calls, "\n"); g != w {
					t.Errorf("%s (Multi %v, %d events in): got\n%s\nwant\n%s", c.name, multi != nil, len(in), g, w)
				}
				folded := uint64(0)
				if len(in) == len(c.spec) {
					folded = uint64(len(c.spec) - len(c.once))
				}
				if f.Folded() != folded {
					t.Errorf("%s (Multi %v): %d retirements folded, want %d", c.name, multi != nil, f.Folded(), folded)
				}
			}
		}
	}
}

// TestFolderNoWait: with Multi, the folder passes the folded block on
// with the instruction's last retirement; a load ending a block with
// itype 0 is not held. Without Multi it waits for what comes next.
func TestFolderNoWait(t *testing.T) {
	l := &foldLog{}
	f := NewFolder(l, l)
	f.Multi = multi4
	for _, e := range pushPerInst[:8] {
		if e.b != nil {
			f.Block(e.b)
		} else {
			f.Access(e.a)
		}
	}
	if n := len(l.calls); n != 5 || l.calls[4] != "block 0x104+1 none" {
		t.Errorf("after the push's last retirement: %q", l.calls)
	}
	f.Access(&Access{IAddr: 0x106})
	f.Block(&Block{IAddr: 0x106, IRetire: 2, ILastSize: 1})
	if n := len(l.calls); n != 7 {
		t.Errorf("a load's block was held: %q", l.calls)
	}
	f = NewFolder(l, l)
	l.calls = nil
	f.Access(&Access{IAddr: 0x106})
	f.Block(&Block{IAddr: 0x106, IRetire: 2, ILastSize: 1})
	if len(l.calls) != 1 {
		t.Errorf("without Multi: %q", l.calls)
	}
	f.Block(&Block{IAddr: 0x10a, IRetire: 2, IType: ITypeTaken})
	if g := strings.Join(l.calls, ", "); g != "access 0x106 0x0, block 0x106+2 none, block 0x10a+2 taken" {
		t.Errorf("without Multi: %s", g)
	}
}

// TestDataMergerRepeats: a data ingress CSV written with the
// specification's retirements (one access per retirement of a push or
// pop) is delivered one access before each retirement, as the port made
// it; the same accesses with the instruction retired once (files made
// before) go all before its block, also when the block ends with itype 0
// there (delivered before the next block: a Folder gathers them).
func TestDataMergerRepeats(t *testing.T) {
	csvOf := func(evs []event) string {
		s := "iaddr,dtype,daddr,dsize,data\n"
		for _, e := range evs {
			if e.a != nil {
				s += fmt.Sprintf("%#x,1,%#x,3,0\n", e.a.IAddr, e.a.DAddr)
			}
		}
		return s
	}
	for _, c := range []struct {
		name       string
		spec, once []event
	}{
		{"push", pushSpec, pushOnce},
		{"popret", popretSpec, popretOnce},
		{"per-instruction push", pushPerInst, pushPerInstOnce},
		{"push loop", loop3Spec, loop3Once},
		{"per-instruction push loop", loop3PerInst, loop3PerInstOnce},
		{"push then pop in one block", pushPopSpec, pushPopOnce},
	} {
		for _, in := range [][]event{c.spec, c.once} {
			want := &foldLog{}
			feed(t, want, want, in)
			src, err := NewDataCSVSource(strings.NewReader(csvOf(in)), "d.csv")
			if err != nil {
				t.Fatal(err)
			}
			l := &foldLog{}
			m := NewDataMerger(l, src)
			m.PerInst = multi4
			for _, e := range in {
				if e.b != nil {
					if err := m.Block(e.b); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := m.Close(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if g, w := strings.Join(l.calls, "\n"), strings.Join(want.calls, "\n"); g != w {
				if len(in) == len(c.spec) || !strings.HasPrefix(c.name, "per-instruction") {
					t.Errorf("%s (%d events): got\n%s\nwant\n%s", c.name, len(in), g, w)
				}
			}
			// through a folder: one block per instruction execution
			src, _ = NewDataCSVSource(strings.NewReader(csvOf(in)), "d.csv")
			l = &foldLog{}
			f := NewFolder(l, l)
			f.Multi = multi4
			m = NewDataMerger(f, src)
			m.PerInst = multi4
			for _, e := range in {
				if e.b != nil {
					if err := m.Block(e.b); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			want = &foldLog{}
			feed(t, want, want, c.once)
			if g, w := strings.Join(l.calls, "\n"), strings.Join(want.calls, "\n"); g != w {
				t.Errorf("%s (%d events) folded: got\n%s\nwant\n%s", c.name, len(in), g, w)
			}
		}
	}
}

// sliceSource is a Source of a slice of blocks.
type sliceSource struct {
	bs []Block
	i  int
}

func (s *sliceSource) Next() (*Block, error) {
	if s.i == len(s.bs) {
		return nil, io.EOF
	}
	s.i++
	return &s.bs[s.i-1], nil
}

// TestFoldSource: the blocks of the specification's illustrations read
// from a source fold into the hart's blocks; blocks without repeats pass
// unchanged.
func TestFoldSource(t *testing.T) {
	blocksOf := func(evs []event) []Block {
		var bs []Block
		for _, e := range evs {
			if e.b != nil {
				bs = append(bs, *e.b)
			}
		}
		return bs
	}
	for _, c := range []struct {
		name       string
		spec, once []event
	}{
		{"push", pushSpec, pushOnce},
		{"popret", popretSpec, popretOnce},
		{"per-instruction push", pushPerInst, pushPerInstOnce},
		{"push loop", loop3Spec, loop3Once},
		{"per-instruction push loop", loop3PerInst, loop3PerInstOnce},
		{"push then pop in one block", pushPopSpec, pushPopOnce},
	} {
		want := blocksOf(c.once)
		for _, in := range [][]Block{blocksOf(c.spec), want} {
			s := NewFoldSource(&sliceSource{bs: in})
			var got []Block
			for {
				b, err := s.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, *b)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s (%d blocks in): got %v, want %v", c.name, len(in), got, want)
			}
			if s.Folded() != uint64(len(in)-len(want)) {
				t.Errorf("%s: %d folded, want %d", c.name, s.Folded(), len(in)-len(want))
			}
		}
	}
}

// TestFoldSourceSpinLoop: a 3-bit port reports an inferable jump with
// itype 0 (IType.To3Bit), so a spin loop "j ." at 0x104 is a block ending
// at the jump with itype 0 followed by single retirements of the jump,
// also itype 0: the shape of a multi-access instruction's retirements.
// Told that the instruction there retires once, the source folds nothing;
// every execution of the jump is read.
func TestFoldSourceSpinLoop(t *testing.T) {
	in := []Block{
		{IAddr: 0x100, IRetire: 3},
		{IAddr: 0x104, IRetire: 1},
		{IAddr: 0x104, IRetire: 1},
		{IAddr: 0x104, IRetire: 1, IType: ITypeInterrupt},
	}
	s := NewFoldSource(&sliceSource{bs: in})
	s.Single = func(iaddr uint64) bool { return iaddr == 0x104 }
	var got []Block
	for {
		b, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, *b)
	}
	if fmt.Sprint(got) != fmt.Sprint(in) || s.Folded() != 0 {
		t.Errorf("got %v (%d folded), want %v", got, s.Folded(), in)
	}
}
