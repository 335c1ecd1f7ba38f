package analysis

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Coverage is the code coverage of a flow: which functions and source
// lines executed.
type Coverage struct {
	// Funcs lists every function of the image with its coverage, by
	// address (the [unknown] stand-in is not included).
	Funcs []FuncCov
	// Files lists the source files (from DWARF) of the functions, by
	// name.
	Files []*FileCov
	// FuncsHit and LinesFound/LinesHit summarise.
	FuncsHit, LinesFound, LinesHit int
}

// FuncCov is the coverage of one function.
type FuncCov struct {
	Func *Function
	// Insts is the number of instructions executed in the function,
	// Calls the number of entries; a function executed without being
	// entered (the trace started in it) has Calls 0 but Insts > 0.
	Insts, Calls uint64
}

// Hit reports whether the function executed.
func (f FuncCov) Hit() bool { return f.Insts > 0 }

// FileCov is the coverage of one source file.
type FileCov struct {
	File  string
	Funcs []FuncCov
	// Lines holds every line with code, by number; Hits is the number of
	// executions of the line's most executed instruction.
	Lines []LineCov
}

// LineCov is the coverage of one source line.
type LineCov struct {
	Line int
	Hits uint64
}

// Coverage computes the code coverage. Lines with code are found by
// walking the instructions of every function that has DWARF line
// information. It closes the profile.
func (p *Profile) Coverage() *Coverage {
	r := p.results()
	c := &Coverage{}
	files := map[string]*FileCov{}
	file := func(name string) *FileCov {
		f := files[name]
		if f == nil {
			f = &FileCov{File: name}
			files[name] = f
		}
		return f
	}
	for _, fn := range p.syms.all[1:] {
		fs := r.funcs[fn.ID]
		fc := FuncCov{Func: fn, Insts: fs.Self, Calls: fs.Calls}
		c.Funcs = append(c.Funcs, fc)
		if fc.Hit() {
			c.FuncsHit++
		}
		if fn.File != "" {
			f := file(fn.File)
			f.Funcs = append(f.Funcs, fc)
		}
	}
	// Lines with code, and their hits.
	if p.img != nil {
		type lk struct {
			file string
			line int
		}
		lines := map[lk]uint64{}
		hits := map[uint64]uint64{}
		for _, a := range r.addrs {
			hits[a.Addr] = a.Insts
		}
		for _, fn := range p.syms.all[1:] {
			if fn.File == "" {
				continue
			}
			for a := fn.Start; a < fn.End; {
				size := uint64(p.opt.FixedInstSize)
				if size == 0 {
					in, ok := p.img.Inst(a)
					if !ok || in.Len == 0 {
						break
					}
					size = uint64(in.Len)
				}
				if fl, ln, ok := p.img.Line(a); ok && ln > 0 {
					k := lk{fl, ln}
					h := hits[a]
					if old, seen := lines[k]; !seen || h > old {
						lines[k] = h
					}
				}
				a += size
			}
		}
		for k, h := range lines {
			f := file(k.file)
			f.Lines = append(f.Lines, LineCov{k.line, h})
			c.LinesFound++
			if h > 0 {
				c.LinesHit++
			}
		}
	}
	for _, f := range files {
		slices.SortFunc(f.Lines, func(a, b LineCov) int { return cmp.Compare(a.Line, b.Line) })
		c.Files = append(c.Files, f)
	}
	slices.SortFunc(c.Files, func(a, b *FileCov) int { return strings.Compare(a.File, b.File) })
	return c
}

// WriteLcov writes the coverage in the lcov tracefile format (geninfo(1)):
// per source file the functions (FN, FNDA, FNF, FNH) and lines (DA, LF,
// LH). genhtml renders it.
func WriteLcov(w io.Writer, p *Profile, testName string) error {
	c := p.Coverage()
	bw := bufio.NewWriter(w)
	if testName != "" {
		fmt.Fprintf(bw, "TN:%s\n", testName)
	}
	for _, f := range c.Files {
		fmt.Fprintf(bw, "SF:%s\n", f.File)
		hit := 0
		for _, fc := range f.Funcs {
			fmt.Fprintf(bw, "FN:%d,%s\n", fc.Func.Line, fc.Func.Name)
		}
		for _, fc := range f.Funcs {
			n := fc.Calls
			if n == 0 && fc.Hit() {
				n = 1
			}
			fmt.Fprintf(bw, "FNDA:%d,%s\n", n, fc.Func.Name)
			if fc.Hit() {
				hit++
			}
		}
		fmt.Fprintf(bw, "FNF:%d\nFNH:%d\n", len(f.Funcs), hit)
		lh := 0
		for _, l := range f.Lines {
			fmt.Fprintf(bw, "DA:%d,%d\n", l.Line, l.Hits)
			if l.Hits > 0 {
				lh++
			}
		}
		fmt.Fprintf(bw, "LF:%d\nLH:%d\nend_of_record\n", len(f.Lines), lh)
	}
	return bw.Flush()
}
