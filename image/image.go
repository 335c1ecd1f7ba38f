// Package image holds program images for trace decoders and analysis: the
// memory contents of one address space (built from ELF files and raw
// binaries), its symbols and its DWARF line table.
//
// Trace decoders reconstruct the executed instruction stream from trace
// messages plus the program image, so the lookups they make on every
// message are built to be fast and allocation free once warm:
//
//   - [Set.Inst] (and [Set.InstPtr], which saves copying the result)
//     returns the decoded instruction at an address. Decoded instructions
//     are cached per halfword in pages (one page per 4 KiB of memory) that
//     are built lazily, the first time an address in them is asked for, so
//     only code that is actually looked up costs memory (about 57 KiB per
//     4 KiB page touched).
//   - [Set.Run] returns the straight-line run of instructions from an
//     address up to and including the next control-flow instruction,
//     cached per start address.
//   - [Set.Symbolize] and [Set.Line] map an address to a symbol or a source
//     line by binary search in sorted tables.
//
// A Set is filled with [Set.AddELF], [Set.AddELFReader], [Set.AddRaw] and
// [Set.AddBytes], which (like [Set.SetXLEN]) must not run concurrently with
// any other method. Once loading is done, every other method is safe for
// concurrent use by any number of goroutines.
package image

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/rvtrace/rvtrace/riscv"
)

// Set is a collection of program images (several ELF files and raw
// binaries) forming one address space.
//
// Where images overlap, the bytes of the image added later replace those of
// the earlier ones. The zero value is not usable; create a Set with
// [NewSet].
type Set struct {
	xlen     int
	xlenFrom source // what decided xlen
	// zc is the choice between Zcd and Zcmp/Zcmt (they share encodings)
	// of the first RISC-V ELF file (hasZc): what its Tag_RISCV_arch
	// attribute names, else Zcd; it replaces riscv.DefaultExt's. ext is
	// what instructions are decoded with then.
	zc      riscv.Ext
	hasZc   bool
	ext     riscv.Ext
	entry   uint64
	entryOK source // what decided entry

	segs  []Segment // in the order they were added
	spans []span    // visible memory: sorted, non-overlapping

	mu   sync.Mutex // serialises the building of instruction pages
	zero riscv.Inst // the decoding of zero-filled memory

	syms      []symEntry     // sorted by address, then name
	byName    map[string]int // index into syms of the preferred symbol per name
	symRanges []symRange     // flattened address ranges for Symbolize

	lines []lineRow // sorted by address
	files []string  // file names referenced by lines

	elves []*elfFile // the ELF files added, for Files and Frames

	ctx *ctxImages // memory valid in one context only (context.go)

	gen uint64 // bumped whenever the cached decodings are dropped (see Generation)
}

// source ranks what set a property of the Set (XLEN, entry point), so that
// the first RISC-V ELF wins over another machine's ELF, and an explicit
// setting over both.
type source uint8

const (
	fromDefault source = iota
	fromRaw
	fromForeignELF
	fromELF
	fromUser
)

// Segment describes one loaded piece of memory, as added: a PT_LOAD segment
// of an ELF file or a raw image.
type Segment struct {
	Image    string // the file (or name) the segment came from
	Addr     uint64 // virtual address of the first byte
	MemSize  uint64 // size in memory
	FileSize uint64 // bytes taken from the file; the rest, up to MemSize, is zero
	Read     bool   // readable (PF_R); always true for raw images
	Write    bool   // writable (PF_W); always true for raw images
	Exec     bool   // executable (PF_X); always true for raw images
}

// span is a piece of visible memory: [start, end), of which the first
// len(data) bytes come from data and the rest is zero. pages caches decoded
// instructions for the data part, one page per pageBytes.
type span struct {
	start, end uint64
	data       []byte
	pages      []atomic.Pointer[instPage]
}

// NewSet returns an empty Set with XLEN 64.
func NewSet() *Set {
	s := &Set{xlen: 64, byName: map[string]int{}}
	s.setExt()
	return s
}

// XLEN returns the base integer register width used to decode instructions:
// 32 or 64. It comes from the class (ELFCLASS32 or ELFCLASS64) of the first
// RISC-V ELF file added (or of the first ELF file, when none is RISC-V), or
// from [Set.SetXLEN]; the default is 64.
func (s *Set) XLEN() int { return s.xlen }

// SetXLEN overrides the register width used to decode instructions. Values
// other than 32 and 64 are ignored. Later ELF files do not change it.
// Cached decodings are dropped, so SetXLEN must not run concurrently with
// other methods.
func (s *Set) SetXLEN(xlen int) {
	if xlen != 32 && xlen != 64 {
		return
	}
	s.setXLEN(xlen, fromUser)
}

// SetProgramXLEN sets the register width as a RISC-V ELF file does: a
// SetXLEN call and the first RISC-V ELF file added decide over it. A
// description of the program other than its ELF file (a sideband) gives
// it. Values other than 32 and 64 are ignored.
func (s *Set) SetProgramXLEN(xlen int) {
	if xlen != 32 && xlen != 64 {
		return
	}
	s.setXLEN(xlen, fromELF)
}

func (s *Set) setXLEN(xlen int, from source) {
	if from <= s.xlenFrom {
		return
	}
	s.xlenFrom = from
	if xlen == s.xlen {
		return
	}
	s.xlen = xlen
	s.setExt()
	s.resetCaches()
}

// Ext returns the extensions instructions are decoded with:
// riscv.DefaultExt(XLEN), with Zcd or Zcmp/Zcmt (which share encodings)
// as the first RISC-V ELF file has them: those its Tag_RISCV_arch
// attribute names, else Zcd (what the simulator runs such a program
// with). A set of raw images alone keeps riscv.DefaultExt's choice.
func (s *Set) Ext() riscv.Ext { return s.ext }

// Zc returns which of the compressed extensions that share c.fsdsp's
// encodings (riscv.ExtZcd, or riscv.ExtZcmp and riscv.ExtZcmt) the
// first RISC-V ELF file of the set has, as [Set.Ext] uses them; ok is
// false when the set holds no RISC-V ELF file.
func (s *Set) Zc() (zc riscv.Ext, ok bool) { return s.zc, s.hasZc }

// zcGroup is the extensions that share the encodings of c.fsdsp.
const zcGroup = riscv.ExtZcd | riscv.ExtZcmp | riscv.ExtZcmt

// setExt sets what instructions are decoded with: riscv.DefaultExt,
// with the compressed extensions of an ELF file's Tag_RISCV_arch.
func (s *Set) setExt() {
	s.ext = riscv.DefaultExt(s.xlen)
	if s.hasZc {
		s.ext = s.ext&^zcGroup | s.zc
	}
	s.zero = riscv.DecodeExt(0, s.xlen, s.ext)
}

// Generation returns a number that changes whenever what [Set.Inst] and
// [Set.Run] return may change: when an image is added or the XLEN
// changes. A caller that caches what it derives from them (as the E-Trace
// encoder does per ingress block) drops its cache when the number is not
// the one it cached with. Like the other methods, it must not run
// concurrently with the Add methods.
func (s *Set) Generation() uint64 { return s.gen }

// Entry returns the entry point: e_entry of the first RISC-V ELF file added
// (or of the first ELF file, when none is RISC-V), else the load address of
// the first raw image, else 0.
func (s *Set) Entry() uint64 { return s.entry }

func (s *Set) setEntry(entry uint64, from source) {
	if from > s.entryOK {
		s.entry = entry
		s.entryOK = from
	}
}

// Segments returns the loaded segments of all images, in the order they
// were added. Where segments overlap, later ones hide earlier ones.
func (s *Set) Segments() []Segment {
	return append([]Segment(nil), s.segs...)
}

// AddELF loads an ELF file: every PT_LOAD segment at its virtual address
// (p_vaddr), the file bytes followed by zero fill up to p_memsz; its
// symbols (see [Set.Symbols]); and its DWARF line table when it has one
// (malformed debug information is ignored); a stripped file's symbols
// and line table come from its separate debug file, found by its GNU
// build ID (see [DebugDirs]). ELF32 and ELF64 files of any
// machine are accepted, so that symbols can be taken from them, but only
// RISC-V files decide [Set.XLEN] when there is one. Errors name the file
// and what is wrong with it; on error the Set is left unchanged.
func (s *Set) AddELF(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	defer f.Close()
	return s.AddELFReader(path, f)
}

// AddELFReader is [Set.AddELF] for an ELF image read from r; name is used
// for messages and in [Segment.Image].
func (s *Set) AddELFReader(name string, r io.ReaderAt) (err error) {
	// debug/elf and debug/dwarf are meant to return errors on malformed
	// input; this guards the promise that bad input never panics.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("image: %s: malformed ELF file (%v)", name, p)
		}
	}()
	img, err := loadELF(name, r)
	if err != nil {
		return err
	}
	s.commit(img)
	return nil
}

// AddRaw loads the contents of a raw binary file at addr.
func (s *Set) AddRaw(path string, addr uint64) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	if uint64(len(data)) > ^uint64(0)-addr {
		return fmt.Errorf("image: %s: %d bytes at %#x run past the end of the address space", path, len(data), addr)
	}
	s.addRaw(path, addr, data)
	return nil
}

// AddBytes loads a copy of data at addr, as an image called name. Bytes
// that would lie beyond the end of the 64-bit address space are dropped.
func (s *Set) AddBytes(name string, addr uint64, data []byte) {
	if room := ^uint64(0) - addr; uint64(len(data)) > room {
		data = data[:room]
	}
	s.addRaw(name, addr, bytes.Clone(data))
}

func (s *Set) addRaw(name string, addr uint64, data []byte) {
	img := &loaded{name: name, entry: addr, from: fromRaw}
	if len(data) > 0 {
		img.segs = append(img.segs, loadedSeg{
			Segment: Segment{Image: name, Addr: addr, MemSize: uint64(len(data)), FileSize: uint64(len(data)), Read: true, Write: true, Exec: true},
			data:    data,
		})
	}
	s.commit(img)
}

// loaded is a parsed image waiting to be added to a Set.
type loaded struct {
	name  string
	from  source
	xlen  int
	zc    riscv.Ext // Zcd, Zcmp, Zcmt of Tag_RISCV_arch, else Zcd (hasZc)
	hasZc bool
	entry uint64
	segs  []loadedSeg
	syms  []symEntry
	lines []seqRows
	elf   *elfFile // nil for raw images
}

type loadedSeg struct {
	Segment
	data []byte
}

// maxSegments bounds the PT_LOAD segments taken from one file, so that a
// malformed file cannot make loading quadratic in time.
const maxSegments = 4096

func loadELF(name string, r io.ReaderAt) (*loaded, error) {
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("image: %s: not a valid ELF file: %w", name, err)
	}
	img := &loaded{name: name, entry: f.Entry, from: fromELF}
	if f.Machine != elf.EM_RISCV {
		img.from = fromForeignELF
	} else if arch, err := riscv.ELFArch(f); err == nil {
		// which of Zcd and Zcmp/Zcmt the program has: those its
		// Tag_RISCV_arch names, else Zcd, as the simulator runs a
		// program that names neither or has no attribute
		// (sim.Machine.setArch; an rv32gc core). A malformed
		// attribute section leaves riscv.DefaultExt's choice.
		img.zc, img.hasZc = riscv.ExtZcd, true
		if arch != "" {
			if _, ext, err := riscv.ParseArch(arch); err == nil && ext&zcGroup != 0 {
				img.zc = ext & zcGroup
			}
		}
	}
	switch f.Class {
	case elf.ELFCLASS32:
		img.xlen = 32
	case elf.ELFCLASS64:
		img.xlen = 64
	default:
		return nil, fmt.Errorf("image: %s: unsupported ELF class %v", name, f.Class)
	}
	for i, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Memsz == 0 {
			continue
		}
		if len(img.segs) == maxSegments {
			return nil, fmt.Errorf("image: %s: more than %d PT_LOAD segments", name, maxSegments)
		}
		if p.Filesz > p.Memsz {
			return nil, fmt.Errorf("image: %s: program header %d: p_filesz %#x is larger than p_memsz %#x", name, i, p.Filesz, p.Memsz)
		}
		if p.Memsz > ^uint64(0)-p.Vaddr {
			return nil, fmt.Errorf("image: %s: program header %d: segment at %#x of %#x bytes runs past the end of the address space", name, i, p.Vaddr, p.Memsz)
		}
		var data []byte
		if p.Off > 1<<62 || p.Filesz > 1<<62 {
			err = errors.New("offset out of range")
		} else {
			// ReadAll grows its buffer as data arrives, so a lying
			// p_filesz cannot make us allocate more than the file holds.
			data, err = io.ReadAll(io.NewSectionReader(r, int64(p.Off), int64(p.Filesz)))
		}
		if err == nil && uint64(len(data)) != p.Filesz {
			err = fmt.Errorf("file ends after %d of %d bytes", len(data), p.Filesz)
		}
		if err != nil {
			return nil, fmt.Errorf("image: %s: program header %d (%#x bytes at file offset %#x): %v", name, i, p.Filesz, p.Off, err)
		}
		img.segs = append(img.segs, loadedSeg{
			Segment: Segment{
				Image: name, Addr: p.Vaddr, MemSize: p.Memsz, FileSize: p.Filesz,
				Read: p.Flags&elf.PF_R != 0, Write: p.Flags&elf.PF_W != 0, Exec: p.Flags&elf.PF_X != 0,
			},
			data: data,
		})
	}
	img.syms, err = elfSymbols(f)
	if err != nil {
		return nil, fmt.Errorf("image: %s: %v", name, err)
	}
	var d *dwarf.Data
	img.lines, d = elfLines(f, img.segs)
	if f.Section(".symtab") == nil && f.Section(".debug_info") == nil {
		// stripped: its symbols and lines may be in a separate debug file
		syms, lines, dd, err := loadDebugFile(name, f, img.segs)
		if err != nil {
			return nil, err
		}
		if len(syms) > 0 || len(lines) > 0 {
			img.syms, img.lines, d = syms, lines, dd
		}
	}
	img.elf = newELFFile(name, f, img.segs, d)
	return img, nil
}

// commit adds a parsed image to the Set and rebuilds the lookup tables.
func (s *Set) commit(img *loaded) {
	for _, sg := range img.segs {
		s.segs = append(s.segs, sg.Segment)
		s.mapRegion(sg.Addr, sg.Addr+sg.MemSize, sg.data)
	}
	if img.from != fromRaw || len(img.segs) > 0 {
		s.setEntry(img.entry, img.from)
	}
	if img.xlen != 0 {
		s.setXLEN(img.xlen, img.from)
	}
	if img.hasZc && !s.hasZc {
		s.zc, s.hasZc = img.zc, true
		s.setExt()
	}
	s.resetCaches()
	if len(img.syms) > 0 {
		s.addSymbols(img.syms)
	}
	s.buildSymRanges() // depends on the memory map too
	if len(img.lines) > 0 {
		s.addLines(img.lines)
	}
	if img.elf != nil {
		s.elves = append(s.elves, img.elf)
	}
	if s.ctx != nil {
		clear(s.ctx.views)
	}
}

// mapRegion makes [start, end) show data followed by zeros, hiding whatever
// was mapped there before.
func (s *Set) mapRegion(start, end uint64, data []byte) {
	out := make([]span, 0, len(s.spans)+2)
	for _, sp := range s.spans {
		if sp.end <= start || sp.start >= end {
			out = append(out, sp)
			continue
		}
		// The pieces keep the pages of the instruction cache they still
		// hold whole (a cut on a page boundary), for the views of
		// context.go; commit rebuilds every cache anyway.
		if sp.start < start {
			left := sp
			left.end = start
			n := start - sp.start
			if uint64(len(left.data)) > n {
				left.data = left.data[:n]
			}
			left.pages = cutPages(sp.pages, 0, (uint64(len(left.data))+pageBytes-1)/pageBytes, n%pageBytes == 0)
			out = append(out, left)
		}
		if sp.end > end {
			right := sp
			right.start = end
			n := end - sp.start
			if uint64(len(right.data)) > n {
				right.data = right.data[n:]
			} else {
				right.data = nil
			}
			right.pages = cutPages(sp.pages, n/pageBytes, n/pageBytes+(uint64(len(right.data))+pageBytes-1)/pageBytes, n%pageBytes == 0)
			out = append(out, right)
		}
	}
	// Insert the new span in order; out is sorted and has nothing in
	// [start, end).
	i := 0
	for i < len(out) && out[i].start < start {
		i++
	}
	out = append(out, span{})
	copy(out[i+1:], out[i:])
	out[i] = span{start: start, end: end, data: data}
	s.spans = out
}

// cutPages returns pages[lo:hi] when the cut is page aligned and in
// range, else nil (the piece needs a cache of its own).
func cutPages(pages []atomic.Pointer[instPage], lo, hi uint64, aligned bool) []atomic.Pointer[instPage] {
	if !aligned || hi > uint64(len(pages)) || lo > hi {
		return nil
	}
	return pages[lo:hi:hi]
}

// resetCaches drops all decoded instructions and runs.
func (s *Set) resetCaches() {
	s.gen++
	for i := range s.spans {
		sp := &s.spans[i]
		sp.pages = make([]atomic.Pointer[instPage], (len(sp.data)+pageBytes-1)/pageBytes)
	}
}

// locate returns the index of the span containing addr, or -1.
func (s *Set) locate(addr uint64) int {
	sp := s.spans
	lo, hi := 0, len(sp)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if sp[m].start <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo > 0 && addr < sp[lo-1].end {
		return lo - 1
	}
	return -1
}

// Contains reports whether addr is mapped by some image.
func (s *Set) Contains(addr uint64) bool { return s.locate(addr) >= 0 }

// Read copies the memory at addr into p and returns how many bytes it
// copied: len(p), or fewer when the mapped memory starting at addr ends
// (reading continues across images that are adjacent in memory).
func (s *Set) Read(addr uint64, p []byte) int {
	i := s.locate(addr)
	if i < 0 {
		return 0
	}
	n := 0
	for n < len(p) {
		sp := &s.spans[i]
		if addr == sp.end {
			i++
			if i == len(s.spans) || s.spans[i].start != addr {
				break
			}
			continue
		}
		off := addr - sp.start
		var c int
		if off < uint64(len(sp.data)) {
			c = copy(p[n:], sp.data[off:])
		} else {
			z := sp.end - addr
			if rem := uint64(len(p) - n); z > rem {
				z = rem
			}
			c = int(z)
			clear(p[n : n+c])
		}
		n += c
		addr += uint64(c)
	}
	return n
}
