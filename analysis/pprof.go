package analysis

import (
	"cmp"
	"io"
	"path/filepath"
	"slices"

	"github.com/google/pprof/profile"

	"github.com/rvtrace/rvtrace/image"
)

// FramesFunc appends the source frames of the instruction at addr to buf,
// innermost first, as [image.Set.Frames] does.
type FramesFunc func(addr uint64, buf []image.Frame) []image.Frame

// ImageFrames returns the FramesFunc of img: its DWARF frames (inlined
// functions included), with the outermost frame named by name(addr) when
// name gives a name (so that pprof shows the symbol names the other views
// of rvtrace show) and "?" when neither DWARF nor name knows the function.
func ImageFrames(img *image.Set, name func(addr uint64) string) FramesFunc {
	return func(addr uint64, buf []image.Frame) []image.Frame {
		n := len(buf)
		if img != nil {
			buf = img.Frames(addr, buf)
		} else {
			buf = append(buf, image.Frame{})
		}
		outer := &buf[len(buf)-1]
		if len(buf) > n {
			if s := name(addr); s != "" {
				outer.Func = s
			}
			if outer.Func == "" {
				outer.Func = "?"
			}
		}
		return buf
	}
}

// PprofBuilder builds a pprof profile with one location per instruction
// address, so that "go tool pprof -list", "-disasm" and the source view
// of "-http" show per-line and per-instruction costs. Each location
// carries the address's source frames, inlined functions included
// (innermost first, as pprof wants them), and the mapping of the ELF file
// it is in: the file's path and build ID, so that pprof finds the binary
// for -disasm. The profile writers of this package and of package pmu
// share it.
type PprofBuilder struct {
	p      *profile.Profile
	frames FramesFunc
	maps   []*profile.Mapping // sorted by Start
	locs   map[uint64]*profile.Location
	noLine map[*profile.Function]*profile.Location
	funcs  map[funcKey]*profile.Function
	buf    []image.Frame
}

type funcKey struct{ name, file string }

// NewPprofBuilder returns a builder of a profile with the given sample
// types (unit "count"; the first is the default), locating addresses with
// frames and mapping them to files (from [image.Set.Files]; a relative
// path is made absolute, as pprof runs objdump on it).
func NewPprofBuilder(sampleTypes []string, frames FramesFunc, files []image.File) *PprofBuilder {
	pp := &profile.Profile{
		PeriodType: &profile.ValueType{Type: sampleTypes[0], Unit: "count"},
		Period:     1,
	}
	for _, t := range sampleTypes {
		pp.SampleType = append(pp.SampleType, &profile.ValueType{Type: t, Unit: "count"})
	}
	pp.DefaultSampleType = sampleTypes[0]
	b := &PprofBuilder{p: pp, frames: frames, locs: map[uint64]*profile.Location{},
		noLine: map[*profile.Function]*profile.Location{}, funcs: map[funcKey]*profile.Function{}}
	for _, f := range files {
		if f.Limit <= f.Start {
			continue
		}
		path := f.Path
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		b.maps = append(b.maps, &profile.Mapping{Start: f.Start, Limit: f.Limit, Offset: f.Offset,
			File: path, BuildID: f.BuildID, HasFunctions: true, HasFilenames: true,
			HasLineNumbers: true, HasInlineFrames: true})
	}
	// Later files hide earlier ones where they overlap, as in the image:
	// keep the last of overlapping mappings.
	var kept []*profile.Mapping
	for i := len(b.maps) - 1; i >= 0; i-- {
		m := b.maps[i]
		if !slices.ContainsFunc(kept, func(k *profile.Mapping) bool { return m.Start < k.Limit && k.Start < m.Limit }) {
			kept = append(kept, m)
		}
	}
	slices.SortFunc(kept, func(a, b *profile.Mapping) int { return cmp.Compare(a.Start, b.Start) })
	for i, m := range kept {
		m.ID = uint64(i + 1)
	}
	b.maps = kept
	pp.Mapping = kept
	return b
}

func (b *PprofBuilder) mapping(addr uint64) *profile.Mapping {
	for _, m := range b.maps {
		if addr >= m.Start && addr < m.Limit {
			return m
		}
	}
	return nil
}

func (b *PprofBuilder) function(name, file string) *profile.Function {
	k := funcKey{name, file}
	if f := b.funcs[k]; f != nil {
		return f
	}
	f := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: name, Filename: file}
	b.p.Function = append(b.p.Function, f)
	b.funcs[k] = f
	return f
}

// Location returns the location of the instruction at addr.
func (b *PprofBuilder) Location(addr uint64) *profile.Location {
	if l := b.locs[addr]; l != nil {
		return l
	}
	b.buf = b.frames(addr, b.buf[:0])
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Mapping: b.mapping(addr), Address: addr}
	for _, fr := range b.buf {
		name := fr.Func
		if name == "" {
			name = "?"
		}
		l.Line = append(l.Line, profile.Line{Function: b.function(name, fr.File), Line: int64(fr.Line)})
	}
	b.p.Location = append(b.p.Location, l)
	b.locs[addr] = l
	return l
}

// FuncLocation returns a location in the function of the instruction at
// addr (its outermost frame) without a line or an address: the caller's
// frame of a call whose call site is not known.
func (b *PprofBuilder) FuncLocation(addr uint64) *profile.Location {
	at := b.Location(addr)
	fn := at.Line[len(at.Line)-1].Function
	if l := b.noLine[fn]; l != nil {
		return l
	}
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Line: []profile.Line{{Function: fn}}}
	b.p.Location = append(b.p.Location, l)
	b.noLine[fn] = l
	return l
}

// Add adds a sample: its stack (leaf first) and one value per sample
// type. Neither slice is kept.
func (b *PprofBuilder) Add(stack []*profile.Location, values []int64) {
	b.p.Sample = append(b.p.Sample, &profile.Sample{Location: slices.Clone(stack), Value: slices.Clone(values)})
}

// Profile returns the profile built.
func (b *PprofBuilder) Profile() *profile.Profile { return b.p }

// PprofProfile returns the profile as a pprof profile (see PprofBuilder):
// one sample per call path and instruction address, with the
// instructions executed at that address with that call path and, when the
// flow had timestamps, the cycles attributed to them (sample types
// "instructions" and "cycles"). Each caller's frame is located at the
// call instruction when all the calls of that path came from one call
// site; otherwise (a recursive function called from two places, a trap)
// at the caller's function without a line, so that pprof's per-line
// cumulative counts never credit the wrong line.
func PprofProfile(p *Profile) *profile.Profile {
	p.Close()
	types := []string{"instructions"}
	if p.HasCycles() {
		types = append(types, "cycles")
	}
	var files []image.File
	if p.img != nil {
		files = p.img.Files()
	}
	b := NewPprofBuilder(types, ImageFrames(p.img, func(addr uint64) string {
		return p.FuncLabel(p.syms.lookup(addr))
	}), files)

	// Per call path and address.
	type key struct {
		node *Node
		addr uint64
	}
	type val struct{ insts, cycles uint64 }
	acc := map[key]*val{}
	var keys []key
	for si := range p.ranges.slots {
		sl := &p.ranges.slots[si]
		var i uint64
		p.forEachInst(sl.start, sl.last, sl.n, func(addr, count uint64) {
			k := key{sl.node, addr}
			v := acc[k]
			if v == nil {
				v = &val{}
				acc[k] = v
				keys = append(keys, k)
			}
			v.insts += count * sl.count
			if sl.cycles > 0 {
				v.cycles += share(sl.cycles, i, i+count, sl.n)
			}
			i += count
		})
	}
	// Deterministic output: by call path (tree order), then address.
	order := map[*Node]int{}
	walkTree(p.root, func(n *Node, enter bool) {
		if enter {
			order[n] = len(order)
		}
	})
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(order[a.node], order[b.node]), cmp.Compare(a.addr, b.addr))
	})
	callers := map[*Node][]*profile.Location{}
	var stack []*profile.Location
	values := make([]int64, len(types))
	for _, k := range keys {
		v := acc[k]
		cs, ok := callers[k.node]
		if !ok {
			for c := k.node; c != nil && c.Parent != nil && c.Parent.Func != nil; c = c.Parent {
				if c.siteState == siteOne {
					cs = append(cs, b.Location(c.site))
				} else {
					cs = append(cs, b.FuncLocation(c.Parent.Func.Start))
				}
			}
			callers[k.node] = cs
		}
		stack = append(append(stack[:0], b.Location(k.addr)), cs...)
		values[0] = int64(v.insts)
		if len(values) > 1 {
			values[1] = int64(v.cycles)
		}
		b.Add(stack, values)
	}
	return b.Profile()
}

// WritePprof writes the profile as a gzipped pprof protocol buffer (see
// PprofProfile), for pprof:
//
//	go tool pprof -list FUNC OUT.pb.gz     # per source line (DWARF), inlined code included
//	go tool pprof -disasm FUNC OUT.pb.gz   # per instruction
//	go tool pprof -http :8080 OUT.pb.gz    # source view, flame graph
//
// -list reads the source files under the names DWARF gives them (run it
// where relative names resolve, or give -source_path and -trim_path).
// -disasm disassembles the ELF file the profile's mapping names (checked
// against its build ID): "go tool pprof" does it with Go's own RISC-V
// disassembler; the standalone pprof (github.com/google/pprof) runs
// objdump and nm, for which binutils' RISC-V ones must be found as
// "objdump" and "nm" in the directory given to -tools (or PPROF_TOOLS):
//
//	mkdir rvtools
//	ln -s /usr/bin/riscv64-linux-gnu-objdump rvtools/objdump
//	ln -s /usr/bin/riscv64-linux-gnu-nm rvtools/nm
//	pprof -tools rvtools -disasm FUNC OUT.pb.gz
//
// (llvm-objdump, which knows every target, is used when it is on PATH.)
func WritePprof(w io.Writer, p *Profile) error {
	return PprofProfile(p).Write(w)
}
