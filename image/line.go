package image

import (
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"slices"
)

// lineRow says that the addresses from addr up to the next row's address
// come from line of files[file]; a row with file == noFile ends a sequence
// (the addresses after it have no line information).
type lineRow struct {
	addr uint64
	file uint32
	line uint32
}

const noFile = ^uint32(0)

// seqRows is one line-number sequence of a DWARF line program.
type seqRows struct {
	rows []dwarf.LineEntry // ends with the end_sequence row
}

// elfLines reads the DWARF line tables of f. Sequences that do not start
// inside one of the file's loaded segments (such as those of functions the
// linker discarded, left at address 0) are dropped. Malformed or missing
// debug information gives no lines. It also returns the DWARF data (nil
// when there is none), for Frames.
func elfLines(f *elf.File, segs []loadedSeg) ([]seqRows, *dwarf.Data) {
	if f.Section(".debug_line") == nil && f.Section(".zdebug_line") == nil {
		return nil, nil
	}
	d, err := f.DWARF()
	if err != nil {
		return nil, nil
	}
	mapped := func(addr uint64) bool {
		for _, sg := range segs {
			if addr >= sg.Addr && addr-sg.Addr < sg.MemSize {
				return true
			}
		}
		return false
	}
	var out []seqRows
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagCompileUnit && e.Tag != dwarf.TagPartialUnit {
			r.SkipChildren()
			continue
		}
		r.SkipChildren()
		lr, err := d.LineReader(e)
		if err != nil || lr == nil {
			continue
		}
		var (
			rows  []dwarf.LineEntry
			entry dwarf.LineEntry
		)
		for lr.Next(&entry) == nil {
			rows = append(rows, entry)
			if !entry.EndSequence {
				continue
			}
			if len(rows) > 1 && mapped(rows[0].Address) {
				out = append(out, seqRows{rows: rows})
			}
			rows = nil
		}
	}
	return out, d
}

// addLines merges line sequences into the table.
func (s *Set) addLines(seqs []seqRows) {
	index := make(map[string]uint32, len(s.files))
	for i, f := range s.files {
		index[f] = uint32(i)
	}
	intern := func(f *dwarf.LineFile) uint32 {
		name := "??"
		if f != nil {
			name = f.Name
		}
		i, ok := index[name]
		if !ok {
			i = uint32(len(s.files))
			s.files = append(s.files, name)
			index[name] = i
		}
		return i
	}
	type keyed struct {
		lineRow
		order int // later rows at one address replace earlier ones
	}
	var rows []keyed
	for _, r := range s.lines {
		rows = append(rows, keyed{r, len(rows)})
	}
	for _, sq := range seqs {
		for i, e := range sq.rows {
			r := lineRow{addr: e.Address, file: noFile}
			if !e.EndSequence {
				if e.Address == sq.rows[i+1].Address {
					continue // the last row at an address wins
				}
				if e.Address > sq.rows[i+1].Address {
					continue // malformed: addresses go backwards
				}
				r.file, r.line = intern(e.File), uint32(min(e.Line, 1<<31))
			}
			rows = append(rows, keyed{r, len(rows)})
		}
	}
	// At one address a sequence's first row beats another's end; otherwise
	// the row loaded first (an earlier image's) wins.
	slices.SortFunc(rows, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.addr, b.addr), endLast(a.lineRow, b.lineRow), cmp.Compare(a.order, b.order))
	})
	s.lines = s.lines[:0]
	for i, r := range rows {
		if i > 0 && r.addr == rows[i-1].addr {
			continue
		}
		s.lines = append(s.lines, r.lineRow)
	}
}

// endLast orders sequence ends after line rows at the same address.
func endLast(a, b lineRow) int {
	ae, be := a.file == noFile, b.file == noFile
	switch {
	case ae == be:
		return 0
	case ae:
		return 1
	}
	return -1
}

// Line returns the source file and line of the instruction at addr, from
// the DWARF line tables (.debug_line) of the ELF files loaded. The file is
// the full path the compiler recorded. Line 0 means the compiler marked
// the code as belonging to no particular line. It is a binary search and
// does not allocate.
func (s *Set) Line(addr uint64) (file string, line int, ok bool) {
	r := s.lines
	lo, hi := 0, len(r)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r[m].addr <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 || r[lo-1].file == noFile {
		return "", 0, false
	}
	return s.files[r[lo-1].file], int(r[lo-1].line), true
}
