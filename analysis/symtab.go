package analysis

import (
	"slices"
	"strings"

	"github.com/rvtrace/rvtrace/image"
)

// Function is a function of the program image (or a stand-in for code
// without symbols) as the analyses report it.
type Function struct {
	ID    int    // index in Profile.Funcs
	Name  string // symbol name; "[unknown]" for code outside every symbol
	Start uint64 // first address
	End   uint64 // address after the last byte (Start+size)
	File  string // source file of the first instruction, when DWARF says
	Line  int    // source line of the first instruction, when DWARF says
}

// Contains reports whether addr is in the function.
func (f *Function) Contains(addr uint64) bool { return addr >= f.Start && addr < f.End }

// symtab maps addresses to functions.
type symtab struct {
	starts  []uint64 // sorted, non-overlapping ranges [starts[i], ends[i])
	ends    []uint64
	fns     []*Function
	all     []*Function // by ID
	unknown *Function
}

// unknownName is the name of the stand-in function for addresses that no
// symbol covers.
const unknownName = "[unknown]"

// newSymtab builds the function table of img: every function symbol, and
// untyped labels (assembly entry points, trap vectors) in executable
// memory, each covering its size, or when unsized up to the next symbol.
func newSymtab(img *image.Set) *symtab {
	t := &symtab{}
	t.unknown = &Function{ID: 0, Name: unknownName, Start: 0, End: 0}
	t.all = append(t.all, t.unknown)
	if img == nil {
		return t
	}
	var exec []image.Segment
	for _, sg := range img.Segments() {
		if sg.Exec {
			exec = append(exec, sg)
		}
	}
	inExec := func(a uint64) (uint64, bool) {
		for _, sg := range exec {
			if a >= sg.Addr && a < sg.Addr+sg.MemSize {
				return sg.Addr + sg.MemSize, true
			}
		}
		return 0, false
	}
	type cand struct {
		name       string
		start, end uint64
		sized      bool
		fn         bool
		global     bool
	}
	var cs []cand
	for _, s := range img.Symbols() {
		if s.Abs || s.Kind == image.Object {
			continue
		}
		segEnd, ok := inExec(s.Addr)
		if !ok {
			continue
		}
		if s.Kind == image.Other && (strings.HasPrefix(s.Name, ".L") || strings.HasPrefix(s.Name, "$")) {
			continue
		}
		c := cand{name: s.Name, start: s.Addr, end: s.Addr + s.Size, sized: s.Size > 0, fn: s.Kind == image.Func, global: s.Global}
		if !c.sized {
			c.end = segEnd
		}
		cs = append(cs, c)
	}
	// Prefer, at one address: a sized function, then a global name, then
	// the shorter name (memcpy over __memcpy_generic).
	slices.SortStableFunc(cs, func(a, b cand) int {
		if a.start != b.start {
			if a.start < b.start {
				return -1
			}
			return 1
		}
		rank := func(c cand) int {
			r := 0
			if c.sized {
				r += 4
			}
			if c.fn {
				r += 2
			}
			if c.global {
				r++
			}
			return -r
		}
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		if len(a.name) != len(b.name) {
			return len(a.name) - len(b.name)
		}
		return strings.Compare(a.name, b.name)
	})
	cs = slices.CompactFunc(cs, func(a, b cand) bool { return a.start == b.start })
	// Unsized symbols end at the next symbol; sized ones keep their size
	// but a label inside a sized function does not split it.
	var kept []cand
	for i, c := range cs {
		if !c.sized && i+1 < len(cs) && cs[i+1].start < c.end {
			c.end = cs[i+1].start
		}
		if n := len(kept); n > 0 && c.start < kept[n-1].end {
			if !c.sized || !c.fn {
				continue // inside the previous function
			}
			if !kept[n-1].sized {
				kept[n-1].end = c.start
			} else {
				continue // overlapping sized functions: keep the first
			}
		}
		if c.end <= c.start {
			continue
		}
		kept = append(kept, c)
	}
	for _, c := range kept {
		f := &Function{ID: len(t.all), Name: c.name, Start: c.start, End: c.end}
		if file, line, ok := img.Line(c.start); ok {
			f.File, f.Line = file, line
		}
		t.all = append(t.all, f)
		t.starts = append(t.starts, c.start)
		t.ends = append(t.ends, c.end)
		t.fns = append(t.fns, f)
	}
	return t
}

// lookup returns the function containing addr (the unknown stand-in when
// none does).
func (t *symtab) lookup(addr uint64) *Function {
	s := t.starts
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s[m] <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo > 0 && addr < t.ends[lo-1] {
		return t.fns[lo-1]
	}
	return t.unknown
}

// contains reports whether addr is in f (for the unknown stand-in: in no
// function).
func (t *symtab) contains(f *Function, addr uint64) bool {
	if f == t.unknown {
		return t.lookup(addr) == t.unknown
	}
	return addr >= f.Start && addr < f.End
}
