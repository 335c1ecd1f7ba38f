package image

import (
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Kind is the kind of a symbol.
type Kind uint8

// Symbol kinds.
const (
	// Other is any other symbol: an untyped label, in code (such as an
	// assembly entry point or trap vector) or in data (such as tohost), or
	// an absolute value.
	Other Kind = iota
	// Func is a function (STT_FUNC, STT_GNU_IFUNC).
	Func
	// Object is a data object (STT_OBJECT, STT_COMMON, STT_TLS).
	Object
)

// String returns "func", "object" or "other".
func (k Kind) String() string {
	switch k {
	case Func:
		return "func"
	case Object:
		return "object"
	}
	return "other"
}

// Symbol is a named address from an image's symbol table.
type Symbol struct {
	Name   string
	Addr   uint64 // the symbol's value: its address, or a number when Abs
	Size   uint64 // size in bytes; 0 when unknown
	Kind   Kind
	Global bool // global or weak binding, rather than local
	Abs    bool // an absolute value (SHN_ABS), not the address of something in a section
}

// symEntry is a Symbol with what the Set needs to know about it.
type symEntry struct {
	Symbol
	addressable bool // names memory (not absolute, not a TLS offset)
	seq         int  // order of loading, for stable tie-breaks
}

// symRange is an address range whose addresses Symbolize maps to sym.
type symRange struct {
	start, end uint64
	sym        int
}

// elfSymbols reads the symbol table (or, without one, the dynamic symbol
// table) of f. Section, file, undefined and mapping symbols ($x, $d) are
// left out.
func elfSymbols(f *elf.File) ([]symEntry, error) {
	syms, err := f.Symbols()
	if errors.Is(err, elf.ErrNoSymbols) {
		syms, err = f.DynamicSymbols()
		if errors.Is(err, elf.ErrNoSymbols) {
			return nil, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading symbols: %v", err)
	}
	out := make([]symEntry, 0, len(syms))
	for _, sy := range syms {
		typ := elf.ST_TYPE(sy.Info)
		if sy.Name == "" || sy.Section == elf.SHN_UNDEF || typ == elf.STT_SECTION || typ == elf.STT_FILE || isMappingSymbol(sy.Name) {
			continue
		}
		e := symEntry{Symbol: Symbol{Name: sy.Name, Addr: sy.Value, Size: sy.Size}}
		switch typ {
		case elf.STT_FUNC, elf.STT_GNU_IFUNC:
			e.Kind = Func
		case elf.STT_OBJECT, elf.STT_COMMON, elf.STT_TLS:
			e.Kind = Object
		}
		switch elf.ST_BIND(sy.Info) {
		case elf.STB_GLOBAL, elf.STB_WEAK:
			e.Global = true
		}
		e.Abs = sy.Section == elf.SHN_ABS
		e.addressable = !e.Abs && sy.Section != elf.SHN_COMMON && typ != elf.STT_TLS
		out = append(out, e)
	}
	return out, nil
}

// isMappingSymbol reports whether name is a RISC-V (or Arm) mapping symbol:
// $d, $x, $x<ISA string>, optionally with a .<suffix>.
func isMappingSymbol(name string) bool {
	if len(name) < 2 || name[0] != '$' || (name[1] != 'x' && name[1] != 'd' && name[1] != 'a' && name[1] != 't') {
		return false
	}
	rest := name[2:]
	return rest == "" || rest[0] == '.' || name[1] == 'x' && strings.HasPrefix(rest, "rv")
}

// addSymbols merges syms into the table and rebuilds the name index.
func (s *Set) addSymbols(syms []symEntry) {
	base := len(s.syms)
	for i := range syms {
		syms[i].seq = base + i
	}
	s.syms = append(s.syms, syms...)
	slices.SortFunc(s.syms, func(a, b symEntry) int {
		return cmp.Or(cmp.Compare(a.Addr, b.Addr), strings.Compare(a.Name, b.Name), cmp.Compare(a.seq, b.seq))
	})
	clear(s.byName)
	for i := range s.syms {
		e := &s.syms[i]
		if j, ok := s.byName[e.Name]; !ok || preferByName(e, &s.syms[j]) {
			s.byName[e.Name] = i
		}
	}
}

// preferByName reports whether Lookup should return a rather than b.
func preferByName(a, b *symEntry) bool {
	if a.Global != b.Global {
		return a.Global
	}
	if a.Kind != b.Kind {
		return kindOrder(a.Kind) < kindOrder(b.Kind)
	}
	return a.seq < b.seq
}

func kindOrder(k Kind) int {
	switch k {
	case Func:
		return 0
	case Object:
		return 1
	}
	return 2
}

// rank orders the candidate ranges covering an address for Symbolize: a
// sized function beats a sized object or label, which beats the nearest
// preceding symbol (a guess: sizes may be missing, or stale after linker
// relaxation shrank the code). A range's sym is the symbol's index, or
// -1-index for its nearest-preceding range.
func (s *Set) rank(sym int) (int, *symEntry) {
	if sym < 0 {
		return 0, &s.syms[-1-sym]
	}
	if e := &s.syms[sym]; e.Kind == Func {
		return 2, e
	}
	return 1, &s.syms[sym]
}

// preferForAddr reports whether Symbolize should name candidate x rather
// than y for an address both cover.
func (s *Set) preferForAddr(x, y int) bool {
	ra, a := s.rank(x)
	rb, b := s.rank(y)
	if ra != rb {
		return ra > rb
	}
	if a.Addr != b.Addr {
		return a.Addr > b.Addr // the innermost
	}
	if a.Kind != b.Kind {
		return kindOrder(a.Kind) < kindOrder(b.Kind)
	}
	if a.Global != b.Global {
		return a.Global
	}
	ua, ub := len(a.Name)-len(strings.TrimLeft(a.Name, "_")), len(b.Name)-len(strings.TrimLeft(b.Name, "_"))
	if ua != ub {
		return ua < ub
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.seq < b.seq
}

// buildSymRanges flattens the symbols into non-overlapping address ranges,
// each naming the symbol Symbolize reports there. A sized symbol covers
// [Addr, Addr+Size) with its rank. Every symbol also covers, with the
// lowest rank, the addresses from its own up to the next symbol's, but not
// past the end of the mapped memory it is in.
func (s *Set) buildSymRanges() {
	var cands []symRange
	for i := range s.syms {
		e := &s.syms[i]
		if !e.addressable {
			continue
		}
		if e.Size > 0 {
			end := e.Addr + e.Size
			if end < e.Addr {
				end = ^uint64(0)
			}
			cands = append(cands, symRange{e.Addr, end, i})
		}
		if end := s.nearestEnd(i); end > e.Addr {
			cands = append(cands, symRange{e.Addr, end, -1 - i})
		}
	}
	s.symRanges = s.symRanges[:0]
	if len(cands) == 0 {
		return
	}
	bounds := make([]uint64, 0, 2*len(cands))
	for _, c := range cands {
		bounds = append(bounds, c.start, c.end)
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	// cands is sorted by start, as s.syms is sorted by address.
	var active []symRange
	j := 0
	for k, b := range bounds[:len(bounds)-1] {
		active = slices.DeleteFunc(active, func(c symRange) bool { return c.end <= b })
		for j < len(cands) && cands[j].start == b {
			active = append(active, cands[j])
			j++
		}
		if len(active) == 0 {
			continue
		}
		best := active[0].sym
		for _, c := range active[1:] {
			if s.preferForAddr(c.sym, best) {
				best = c.sym
			}
		}
		if best < 0 {
			best = -1 - best
		}
		next := bounds[k+1]
		if n := len(s.symRanges); n > 0 && s.symRanges[n-1].sym == best && s.symRanges[n-1].end == b {
			s.symRanges[n-1].end = next
		} else {
			s.symRanges = append(s.symRanges, symRange{b, next, best})
		}
	}
}

// nearestEnd returns the end of the range where symbol i is the nearest
// preceding symbol: the next greater symbol address, capped at the end of
// the mapped memory holding the symbol (or just the symbol's own address
// when it is not mapped).
func (s *Set) nearestEnd(i int) uint64 {
	addr := s.syms[i].Addr
	end := addr + 1
	if sp := s.locate(addr); sp >= 0 {
		end = s.spans[sp].end
	}
	if end < addr {
		end = ^uint64(0)
	}
	for j := i + 1; j < len(s.syms); j++ {
		if a := s.syms[j].Addr; a > addr && s.syms[j].addressable {
			return min(a, end)
		}
	}
	return end
}

// Symbols returns all symbols of all images, sorted by address and then
// name. Section, file, undefined and mapping symbols ($x, $d) are not
// included.
func (s *Set) Symbols() []Symbol {
	out := make([]Symbol, len(s.syms))
	for i := range s.syms {
		out[i] = s.syms[i].Symbol
	}
	return out
}

// Lookup returns the value of the symbol called name. When several symbols
// have the name, a global one is preferred over a local one, then a
// function over an object over another symbol, then the one loaded first.
func (s *Set) Lookup(name string) (addr uint64, ok bool) {
	i, ok := s.byName[name]
	if !ok {
		return 0, false
	}
	return s.syms[i].Addr, true
}

// Symbolize returns the symbol containing addr and the offset of addr from
// its start. The symbol is the function whose extent (address and size)
// contains addr; else a sized data object or label containing it; else the
// nearest preceding symbol in the same mapped memory (sizes can be missing,
// as for assembly labels, or too small: linker relaxation shrinks code
// without always updating them). Where several symbols qualify, the one
// starting last wins, then a function over an object over a label, a
// global over a local, and a name with fewer leading underscores. Absolute
// and TLS symbols are never used. It is a binary search and does not
// allocate.
func (s *Set) Symbolize(addr uint64) (name string, off uint64, ok bool) {
	r := s.symRanges
	lo, hi := 0, len(r)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r[m].start <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 || addr >= r[lo-1].end {
		return "", 0, false
	}
	e := &s.syms[r[lo-1].sym]
	return e.Name, addr - e.Addr, true
}

// FormatAddr formats addr with its symbol, as objdump does:
// "0x80000010 <main+0x10>", "0x80000000 <main>", or just "0x80000000"
// when no symbol contains the address.
func (s *Set) FormatAddr(addr uint64) string {
	name, off, ok := s.Symbolize(addr)
	switch {
	case !ok:
		return fmt.Sprintf("%#x", addr)
	case off == 0:
		return fmt.Sprintf("%#x <%s>", addr, name)
	}
	return fmt.Sprintf("%#x <%s+%#x>", addr, name, off)
}
