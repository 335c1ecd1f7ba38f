package image

import (
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"slices"
	"sync"
)

// File describes one ELF file added to a Set, for tools that refer back
// to the file (a pprof mapping, objdump).
type File struct {
	// Path is the name the file was added under (its path for AddELF).
	Path string
	// BuildID is the hexadecimal GNU build ID (the NT_GNU_BUILD_ID note,
	// as "readelf -n" prints it); "" when the file has none.
	BuildID string
	// Start and Limit bound the file's executable PT_LOAD segments in
	// memory; Offset is the file offset of the first of them (as in a
	// /proc/PID/maps line). Start == Limit when it has none.
	Start, Limit, Offset uint64
}

// Files returns the ELF files added, in the order they were added.
func (s *Set) Files() []File {
	out := make([]File, len(s.elves))
	for i, e := range s.elves {
		out[i] = e.File
	}
	return out
}

// Frame is one source-level frame of an instruction address: the
// function and the source position in it. Where the compiler inlined
// code, one address has several frames.
type Frame struct {
	// Func is the function's name from DWARF ("" when unknown).
	Func string
	// File and Line are the source position: for the innermost frame the
	// line of the address (as [Set.Line] gives it), for an outer frame the
	// call site of the inlined function it contains. File is "" when
	// unknown.
	File string
	Line int
}

// Frames appends the source frames of the instruction at addr to buf,
// innermost first, as "addr2line -i -f" lists them: the inlined functions
// the address belongs to (DW_TAG_inlined_subroutine), each with the
// position in it, then the function (DW_TAG_subprogram) that contains
// them with the position of the outermost call. Without DWARF debug
// information about the address it appends one frame with the line of
// the address and Func "". The debug information of an ELF file is
// indexed the first time it is asked about, and the inlining tree of each
// function the first time one of its addresses is; lookups after that do
// not allocate beyond buf. Frames is safe for concurrent use.
func (s *Set) Frames(addr uint64, buf []Frame) []Frame {
	file, line, _ := s.Line(addr)
	for i := len(s.elves) - 1; i >= 0; i-- {
		e := s.elves[i]
		if e.dwarf == nil || !e.covers(addr) {
			continue
		}
		if out, ok := e.frames(addr, file, line, buf); ok {
			return out
		}
	}
	return append(buf, Frame{File: file, Line: line})
}

// elfFile is what a Set keeps of an ELF file for Files and Frames.
type elfFile struct {
	File
	segs  [][2]uint64 // loaded [start, end)
	dwarf *dwarf.Data

	mu    sync.Mutex
	once  sync.Once
	subs  []subRange // sorted by low
	fns   []*fnInline
	cus   []*cuInfo
	bad   bool // the debug information is malformed
	names map[dwarf.Offset]string
}

func (e *elfFile) covers(addr uint64) bool {
	for _, sg := range e.segs {
		if addr >= sg[0] && addr < sg[1] {
			return true
		}
	}
	return false
}

// subRange is one PC range of a subprogram.
type subRange struct {
	low, high uint64
	fn        int32 // index into fns
}

// fnInline is one subprogram and, once built, its inlining tree.
type fnInline struct {
	off   dwarf.Offset
	cu    *cuInfo
	name  string
	built bool
	nodes []inlNode // parents before children
}

// cuInfo is a compilation unit: its entry, for the file table.
type cuInfo struct {
	entry *dwarf.Entry
	files []*dwarf.LineFile
	read  bool
}

// inlNode is one inlined subroutine.
type inlNode struct {
	ranges   [][2]uint64
	depth    int32 // 1 for a subroutine inlined directly into the function
	name     string
	callFile string
	callLine int
}

// newELFFile collects what Files and Frames need from f.
func newELFFile(name string, f *elf.File, segs []loadedSeg, d *dwarf.Data) *elfFile {
	e := &elfFile{File: File{Path: name, BuildID: buildID(f)}, dwarf: d}
	first := true
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 || p.Memsz == 0 {
			continue
		}
		if first || p.Vaddr < e.Start {
			e.Start, e.Offset = p.Vaddr, p.Off
		}
		e.Limit = max(e.Limit, p.Vaddr+p.Memsz)
		first = false
	}
	for _, sg := range segs {
		e.segs = append(e.segs, [2]uint64{sg.Addr, sg.Addr + sg.MemSize})
	}
	return e
}

// buildID returns the GNU build ID note of f in hexadecimal, or "".
func buildID(f *elf.File) string {
	for _, sec := range f.Sections {
		if sec.Type != elf.SHT_NOTE {
			continue
		}
		data, err := sec.Data()
		if err != nil {
			continue
		}
		for len(data) >= 12 {
			namesz := uint64(f.ByteOrder.Uint32(data))
			descsz := uint64(f.ByteOrder.Uint32(data[4:]))
			typ := f.ByteOrder.Uint32(data[8:])
			nameEnd := 12 + (namesz+3)&^3
			descEnd := nameEnd + (descsz+3)&^3
			if namesz > 1<<20 || descsz > 1<<20 || uint64(len(data)) < nameEnd+descsz {
				break
			}
			if typ == 3 && namesz == 4 && string(data[12:15]) == "GNU" {
				return fmt.Sprintf("%x", data[nameEnd:nameEnd+descsz])
			}
			if uint64(len(data)) < descEnd {
				break
			}
			data = data[descEnd:]
		}
	}
	return ""
}

// frames looks addr up in the file's debug information.
func (e *elfFile) frames(addr uint64, file string, line int, buf []Frame) (out []Frame, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer func() {
		// debug/dwarf is meant to return errors on malformed input; this
		// guards the promise that bad input never panics.
		if p := recover(); p != nil {
			e.bad = true
			out, ok = buf, false
		}
	}()
	e.once.Do(e.index)
	if e.bad {
		return buf, false
	}
	i, _ := slices.BinarySearchFunc(e.subs, addr, func(r subRange, a uint64) int {
		if r.low <= a {
			return -1
		}
		return 1
	})
	// e.subs[i-1] is the last range starting at or before addr; nested or
	// overlapping ranges are rare, so look back a few.
	var fn *fnInline
	for j := i - 1; j >= 0 && j >= i-8; j-- {
		if r := e.subs[j]; addr >= r.low && addr < r.high {
			fn = e.fns[r.fn]
			break
		}
	}
	if fn == nil {
		return buf, false
	}
	if !fn.built {
		e.build(fn)
	}
	// The nodes containing addr form a chain, outermost first: each is
	// inlined into the function of the frame before it, whose position is
	// the call site.
	start := len(buf)
	out = append(buf, Frame{Func: fn.name})
	for k := range fn.nodes {
		n := &fn.nodes[k]
		if !n.contains(addr) {
			continue
		}
		last := &out[len(out)-1]
		last.File, last.Line = n.callFile, n.callLine
		out = append(out, Frame{Func: n.name})
	}
	in := &out[len(out)-1]
	in.File, in.Line = file, line
	slices.Reverse(out[start:])
	return out, true
}

func (n *inlNode) contains(addr uint64) bool {
	for _, r := range n.ranges {
		if addr >= r[0] && addr < r[1] {
			return true
		}
	}
	return false
}

// index lists the subprograms of every compilation unit with their PC
// ranges (not their children: a function's inlining tree is read when
// first needed).
func (e *elfFile) index() {
	defer func() {
		if p := recover(); p != nil {
			e.bad = true
		}
	}()
	e.names = map[dwarf.Offset]string{}
	r := e.dwarf.Reader()
	var cu *cuInfo
	for {
		ent, err := r.Next()
		if err != nil {
			e.bad = true
			return
		}
		if ent == nil {
			break
		}
		switch ent.Tag {
		case dwarf.TagCompileUnit, dwarf.TagPartialUnit:
			cu = &cuInfo{entry: ent}
			e.cus = append(e.cus, cu)
		case dwarf.TagSubprogram:
			rs, err := e.dwarf.Ranges(ent)
			if err == nil && len(rs) > 0 && cu != nil {
				fi := int32(len(e.fns))
				e.fns = append(e.fns, &fnInline{off: ent.Offset, cu: cu, name: e.nameOf(ent)})
				for _, rg := range rs {
					if rg[1] > rg[0] {
						e.subs = append(e.subs, subRange{low: rg[0], high: rg[1], fn: fi})
					}
				}
			}
			if ent.Children {
				r.SkipChildren()
			}
		}
	}
	slices.SortFunc(e.subs, func(a, b subRange) int { return cmp.Compare(a.low, b.low) })
}

// nameOf returns the name of a subprogram or inlined subroutine, following
// DW_AT_abstract_origin and DW_AT_specification.
func (e *elfFile) nameOf(ent *dwarf.Entry) string {
	for hop := 0; hop < 8 && ent != nil; hop++ {
		if n, ok := ent.Val(dwarf.AttrName).(string); ok {
			return n
		}
		ref, ok := ent.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
		if !ok {
			if ref, ok = ent.Val(dwarf.AttrSpecification).(dwarf.Offset); !ok {
				return ""
			}
		}
		if n, ok := e.names[ref]; ok {
			return n
		}
		r := e.dwarf.Reader()
		r.Seek(ref)
		next, err := r.Next()
		if err != nil || next == nil {
			return ""
		}
		if n, ok := next.Val(dwarf.AttrName).(string); ok {
			e.names[ref] = n
			return n
		}
		ent = next
	}
	return ""
}

// build reads fn's inlining tree.
func (e *elfFile) build(fn *fnInline) {
	fn.built = true
	cu := fn.cu
	if !cu.read {
		cu.read = true
		if lr, err := e.dwarf.LineReader(cu.entry); err == nil && lr != nil {
			cu.files = lr.Files()
		}
	}
	r := e.dwarf.Reader()
	r.Seek(fn.off)
	top, err := r.Next()
	if err != nil || top == nil || !top.Children {
		return
	}
	depth := int32(1) // of the next entry
	for depth > 0 {
		ent, err := r.Next()
		if err != nil || ent == nil {
			return
		}
		if ent.Tag == 0 {
			depth--
			continue
		}
		if ent.Tag == dwarf.TagInlinedSubroutine {
			rs, err := e.dwarf.Ranges(ent)
			if err == nil && len(rs) > 0 {
				n := inlNode{ranges: rs, depth: depth, name: e.nameOf(ent)}
				if f, ok := ent.Val(dwarf.AttrCallFile).(int64); ok && f >= 0 && f < int64(len(cu.files)) && cu.files[f] != nil {
					n.callFile = cu.files[f].Name
				}
				if l, ok := ent.Val(dwarf.AttrCallLine).(int64); ok && l >= 0 && l < 1<<31 {
					n.callLine = int(l)
				}
				fn.nodes = append(fn.nodes, n)
			}
		}
		if ent.Children {
			if ent.Tag == dwarf.TagSubprogram {
				r.SkipChildren() // a nested function has its own entry
				continue
			}
			depth++
		}
	}
	// The reader gives parents before children (depth-first), which
	// Frames relies on; a stable sort by depth keeps that order within a
	// depth and makes the chain outermost first.
	slices.SortStableFunc(fn.nodes, func(a, b inlNode) int { return cmp.Compare(a.depth, b.depth) })
}
