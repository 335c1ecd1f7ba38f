package image

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// SymbolFileError is an error in a symbol map file, at a line.
type SymbolFileError struct {
	File string
	Line int
	Msg  string
}

// Error formats the error as FILE:LINE: MSG.
func (e *SymbolFileError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// ReadSymbolMap reads a kernel symbol map: System.map or the text of
// /proc/kallsyms, one symbol a line as "ADDRESS TYPE NAME" (hexadecimal
// address without 0x, nm's one-letter type, and for kallsyms an optional
// "[module]" after the name). Types t/T/w/W (text, weak) are functions,
// d/D/b/B/r/R/g/G/s/S data objects, a/A absolute values; the other types
// (u, U, v, V, n, N, ?) name nothing in memory and are skipped, as are
// symbols at address 0 (kallsyms hides addresses that way: read it as
// root with kernel.kptr_restrict=0). Sizes are not known: a symbol ends
// where the next one starts. Upper-case types are global. Errors name
// the line.
func ReadSymbolMap(r io.Reader, name string) ([]Symbol, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	var syms []Symbol
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(s) == "" {
			continue
		}
		f := strings.Fields(s)
		if len(f) == 2 && len(f[0]) == 1 && strings.ContainsRune("UwvV", rune(f[0][0])) {
			continue // nm's undefined symbol: no address
		}
		if len(f) < 3 || len(f) > 4 || len(f[1]) != 1 || (len(f) == 4 && !(strings.HasPrefix(f[3], "[") && strings.HasSuffix(f[3], "]"))) {
			return nil, &SymbolFileError{name, line, fmt.Sprintf("want ADDRESS TYPE NAME [[module]], got %q", clip(s))}
		}
		addr, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			return nil, &SymbolFileError{name, line, fmt.Sprintf("invalid hexadecimal address %q", clip(f[0]))}
		}
		t := f[1][0]
		sym := Symbol{Name: f[2], Addr: addr, Global: t >= 'A' && t <= 'Z'}
		switch t | 0x20 {
		case 't', 'w':
			sym.Kind = Func
		case 'd', 'b', 'r', 'g', 's':
			sym.Kind = Object
		case 'a':
			sym.Abs = true
		case 'u', 'v', 'n', 'i', 'p':
			continue
		default:
			if t == '?' || t == '-' {
				continue
			}
			return nil, &SymbolFileError{name, line, fmt.Sprintf("unknown symbol type %q", f[1])}
		}
		if addr == 0 && !sym.Abs {
			continue
		}
		syms = append(syms, sym)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: line %d: %w", name, line+1, err)
	}
	return syms, nil
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// AddSymbols adds symbols (from [ReadSymbolMap], for example) to the
// Set, as if an image had them: [Set.Symbolize] and [Set.Lookup] find
// them. Like the other Add methods it must not run concurrently with any
// other method.
func (s *Set) AddSymbols(syms []Symbol) {
	if len(syms) == 0 {
		return
	}
	e := make([]symEntry, len(syms))
	for i, sym := range syms {
		e[i] = symEntry{Symbol: sym, addressable: !sym.Abs}
	}
	s.addSymbols(e)
	s.buildSymRanges()
	if s.ctx != nil {
		clear(s.ctx.views)
	}
}

// Unmoved is the base [Set.AddELFAt] takes to keep an ELF file where it
// was linked.
const Unmoved = ^uint64(0)

// AddELFAt loads an ELF file moved to base: every PT_LOAD segment and
// every symbol moves by base minus the address of the file's lowest
// segment (rounded down to 4 KiB), as the kernel loads a position
// independent program (busybox-static is one) at a base of its choice.
// The file's DWARF lines are not loaded (they describe the unmoved
// addresses). base [Unmoved] keeps the file's addresses. With ctx not nil the code is valid in that context only
// ([Set.AddContextBytes]; the symbols are global). Errors name the file;
// on error the Set is left unchanged.
func (s *Set) AddELFAt(path string, base uint64, ctx *uint64) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	defer f.Close()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("image: %s: malformed ELF file (%v)", path, p)
		}
	}()
	img, err := loadELF(path, f)
	if err != nil {
		return err
	}
	if len(img.segs) == 0 {
		return fmt.Errorf("image: %s: no PT_LOAD segment to place at %#x", path, base)
	}
	low := img.segs[0].Addr
	for _, sg := range img.segs {
		low = min(low, sg.Addr)
	}
	delta := base - low&^(pageBytes-1)
	if base == Unmoved {
		delta = 0
	}
	for i := range img.segs {
		img.segs[i].Addr += delta
	}
	for i := range img.syms {
		if !img.syms[i].Abs {
			img.syms[i].Addr += delta
		}
	}
	img.entry += delta
	img.lines, img.elf = nil, nil
	if ctx == nil {
		s.commit(img)
		return nil
	}
	for _, sg := range img.segs {
		data := sg.data
		if sg.MemSize > uint64(len(data)) && sg.Exec {
			data = append(bytes.Clone(data), make([]byte, sg.MemSize-uint64(len(data)))...)
		}
		s.AddContextBytes(*ctx, path, sg.Addr, data)
	}
	if img.xlen != 0 {
		s.setXLEN(img.xlen, img.from)
	}
	if len(img.syms) > 0 {
		s.addSymbols(img.syms)
		s.buildSymRanges()
	}
	return nil
}
