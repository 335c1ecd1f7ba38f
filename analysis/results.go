package analysis

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
)

// FuncStat is the flat profile of one function.
type FuncStat struct {
	Func *Function
	// Self counts the instructions executed in the function itself;
	// SelfCycles the time attributed to them.
	Self       uint64
	SelfCycles uint64
	// Inclusive adds the instructions of everything the function called
	// (recursion counted once); InclCycles likewise.
	Inclusive  uint64
	InclCycles uint64
	// Calls counts entries into the function (calls, tail calls, traps).
	Calls uint64
	// TraceBytes is the trace cost attributed to the function.
	TraceBytes uint64
}

// LineStat is the flat profile of one source line.
type LineStat struct {
	File   string
	Line   int
	Func   *Function // the function of the line's first executed address
	Insts  uint64
	Cycles uint64
}

// AddrStat counts the executions of one instruction address.
type AddrStat struct {
	Addr   uint64
	Insts  uint64
	Cycles uint64
}

// results are the tables computed from a closed Profile.
type results struct {
	addrs []AddrStat // sorted by address
	funcs []FuncStat // by function ID
	lines []LineStat
	// first and last address of the instructions outside every symbol
	unknownLo, unknownHi uint64
}

func (p *Profile) results() *results {
	if p.res != nil {
		return p.res
	}
	p.Close()
	r := &results{}
	// Per address, from the distinct ranges.
	acc := map[uint64]*AddrStat{}
	for si := range p.ranges.slots {
		sl := &p.ranges.slots[si]
		var i uint64
		p.forEachInst(sl.start, sl.last, sl.n, func(addr, count uint64) {
			a := acc[addr]
			if a == nil {
				a = &AddrStat{Addr: addr}
				acc[addr] = a
			}
			a.Insts += count * sl.count
			if sl.cycles > 0 {
				a.Cycles += share(sl.cycles, i, i+count, sl.n)
			}
			i += count
		})
	}
	r.addrs = make([]AddrStat, 0, len(acc))
	for _, a := range acc {
		r.addrs = append(r.addrs, *a)
	}
	slices.SortFunc(r.addrs, func(a, b AddrStat) int { return cmp.Compare(a.Addr, b.Addr) })

	// Per function: self from the addresses, inclusive and calls from
	// the tree.
	r.funcs = make([]FuncStat, len(p.syms.all))
	for i, f := range p.syms.all {
		r.funcs[i].Func = f
		r.funcs[i].TraceBytes = p.FuncTraceBytes(f)
	}
	for _, a := range r.addrs {
		fs := &r.funcs[p.syms.lookup(a.Addr).ID]
		if fs.Func.ID == 0 {
			if fs.Self == 0 {
				r.unknownLo = a.Addr
			}
			r.unknownHi = a.Addr
		}
		fs.Self += a.Insts
		fs.SelfCycles += a.Cycles
	}
	active := make([]int, len(p.syms.all))
	walkTree(p.root, func(n *Node, enter bool) {
		if n.Func == nil {
			return
		}
		id := n.Func.ID
		if enter {
			fs := &r.funcs[id]
			fs.Calls += n.Calls
			if active[id] == 0 {
				fs.Inclusive += n.Inclusive
				fs.InclCycles += n.InclCycles
			}
			active[id]++
		} else {
			active[id]--
		}
	})

	// Per source line.
	if p.img != nil {
		type lk struct {
			file string
			line int
		}
		lines := map[lk]*LineStat{}
		for _, a := range r.addrs {
			file, line, ok := p.img.Line(a.Addr)
			if !ok {
				continue
			}
			k := lk{file, line}
			l := lines[k]
			if l == nil {
				l = &LineStat{File: file, Line: line, Func: p.syms.lookup(a.Addr)}
				lines[k] = l
			}
			l.Insts += a.Insts
			l.Cycles += a.Cycles
		}
		for _, l := range lines {
			r.lines = append(r.lines, *l)
		}
		slices.SortFunc(r.lines, func(a, b LineStat) int {
			if c := cmp.Compare(b.Insts, a.Insts); c != 0 {
				return c
			}
			if c := cmp.Compare(a.File, b.File); c != 0 {
				return c
			}
			return cmp.Compare(a.Line, b.Line)
		})
	}
	p.res = r
	return r
}

// share returns the part of total that falls to items [from, to) of n
// equal items, such that the parts of all items add up to total.
func share(total, from, to, n uint64) uint64 {
	f := func(i uint64) uint64 {
		hi, lo := bits.Mul64(total, i)
		q, _ := bits.Div64(hi, lo, n)
		return q
	}
	return f(to) - f(from)
}

// walkTree calls f(n, true) before and f(n, false) after the subtree of
// each node under (and including) root, without recursion.
func walkTree(root *Node, f func(n *Node, enter bool)) {
	type item struct {
		n    *Node
		next int
	}
	f(root, true)
	stack := []item{{root, 0}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next < len(top.n.Children) {
			c := top.n.Children[top.next]
			top.next++
			f(c, true)
			stack = append(stack, item{c, 0})
			continue
		}
		f(top.n, false)
		stack = stack[:len(stack)-1]
	}
}

// FuncStats returns the flat profile of the functions that executed,
// most instructions (self) first. It closes the profile.
func (p *Profile) FuncStats() []FuncStat {
	r := p.results()
	var out []FuncStat
	for _, f := range r.funcs {
		if f.Self > 0 || f.Inclusive > 0 || f.Calls > 0 {
			out = append(out, f)
		}
	}
	slices.SortStableFunc(out, func(a, b FuncStat) int {
		if c := cmp.Compare(b.Self, a.Self); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Inclusive, a.Inclusive); c != 0 {
			return c
		}
		return cmp.Compare(a.Func.Name, b.Func.Name)
	})
	return out
}

// UnknownSpan returns the first and the last address of the
// instructions outside every symbol (the [unknown] stand-in), ok false
// when there are none. The addresses between need not all have run.
func (p *Profile) UnknownSpan() (first, last uint64, ok bool) {
	r := p.results()
	return r.unknownLo, r.unknownHi, r.funcs[0].Self > 0
}

// UnknownLabel is "[unknown]" followed by the span of its addresses, as
// the reports show the stand-in ("[unknown] 0x100-0x1fe"), or just
// "[unknown]" when nothing ran outside the symbols.
func (p *Profile) UnknownLabel() string {
	lo, hi, ok := p.UnknownSpan()
	if !ok {
		return unknownName
	}
	return fmt.Sprintf("%s %#x-%#x", unknownName, lo, hi)
}

// FuncLabel is f's name as the reports show it: UnknownLabel for the
// [unknown] stand-in, else the name.
func (p *Profile) FuncLabel(f *Function) string {
	if f != nil && f == p.syms.unknown {
		return p.UnknownLabel()
	}
	if f == nil {
		return ""
	}
	return f.Name
}

// FuncStat returns the flat profile of one function.
func (p *Profile) FuncStat(fn *Function) FuncStat {
	r := p.results()
	if fn.ID < len(r.funcs) {
		return r.funcs[fn.ID]
	}
	return FuncStat{Func: fn}
}

// FuncByName returns the function called name, or nil.
func (p *Profile) FuncByName(name string) *Function {
	for _, f := range p.syms.all {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// LineStats returns the flat profile per source line (DWARF), most
// instructions first. It closes the profile.
func (p *Profile) LineStats() []LineStat { return p.results().lines }

// AddrStats returns the executions of each instruction address, by
// address. It closes the profile.
func (p *Profile) AddrStats() []AddrStat { return p.results().addrs }
