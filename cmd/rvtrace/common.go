package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/rvtrace/rvtrace/analysis"
	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/sideband"
)

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

// imageFlags registers --image, --raw and --xlen and returns a loader.
func imageFlags(fs *flag.FlagSet) func() (*image.Set, error) {
	var elfs, raws multiFlag
	fs.Var(&elfs, "image", "program ELF `file` (repeatable: several images form one address space); FILE@ADDR loads an ELF moved to ADDR (a position-independent program where the kernel put it) or a raw binary (a kernel Image) at ADDR; ctx=N:FILE[@ADDR] makes it valid in trace context N only")
	fs.Var(&raws, "raw", "raw binary loaded at an address, as `FILE@ADDR` (repeatable)")
	xlen := fs.Int("xlen", 0, "XLEN of the traced hart, 32 or 64 (default: from the first ELF, else 64)")
	var symFiles multiFlag
	fs.Var(&symFiles, "symbols", "kernel symbol map `file`: System.map or the text of /proc/kallsyms (repeatable), for images without symbols such as a raw kernel Image")
	sb := fs.String("sideband-in", "", "sideband `file` written by run --sideband: the code of every context of a system trace, from the images it names")
	return func() (*image.Set, error) {
		img := image.NewSet()
		if *sb != "" {
			if err := loadSideband(img, *sb); err != nil {
				return nil, err
			}
		}
		for _, e := range elfs {
			if err := addImageArg(img, e); err != nil {
				return nil, err
			}
		}
		for _, r := range raws {
			i := strings.LastIndexByte(r, '@')
			if i < 0 {
				return nil, fmt.Errorf("--raw %s: want FILE@ADDR", r)
			}
			addr, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(r[i+1:], "0x"), "0X"), 16, 64)
			if err != nil {
				return nil, fmt.Errorf("--raw %s: invalid hex address %q", r, r[i+1:])
			}
			if err := noteInput(r[:i]); err != nil {
				return nil, err
			}
			if err := img.AddRaw(r[:i], addr); err != nil {
				return nil, err
			}
		}
		for _, p := range symFiles {
			if err := noteInput(p); err != nil {
				return nil, err
			}
			f, err := os.Open(p)
			if err != nil {
				return nil, err
			}
			syms, err := image.ReadSymbolMap(bufio.NewReader(f), p)
			f.Close()
			if err != nil {
				return nil, err
			}
			img.AddSymbols(syms)
		}
		if *xlen != 0 {
			if *xlen != 32 && *xlen != 64 {
				return nil, fmt.Errorf("--xlen must be 32 or 64")
			}
			img.SetXLEN(*xlen)
		}
		return img, nil
	}
}

// addImageArg loads one --image: FILE, FILE@ADDR or ctx=N:FILE[@ADDR].
func addImageArg(img *image.Set, arg string) error {
	spec := arg
	var ctx *uint64
	if rest, ok := strings.CutPrefix(spec, "ctx="); ok {
		n, file, ok := strings.Cut(rest, ":")
		v, err := strconv.ParseUint(n, 0, 64)
		if !ok || err != nil {
			return fmt.Errorf("--image %s: want ctx=N:FILE[@ADDR] with a number N", arg)
		}
		ctx, spec = &v, file
	}
	path, base := spec, image.Unmoved
	if i := strings.LastIndexByte(spec, '@'); i >= 0 {
		a, err := strconv.ParseUint(spec[i+1:], 0, 64)
		if _, serr := os.Stat(spec); err != nil && serr == nil {
			a, err = image.Unmoved, nil // a file name with an @
			i = len(spec)
		}
		if err != nil {
			return fmt.Errorf("--image %s: invalid address %q after @ (want a number such as 0xffffffff80000000)", arg, spec[i+1:])
		}
		path, base = spec[:i], a
	}
	if err := noteInput(path); err != nil {
		return err
	}
	if !isELF(path) && base != image.Unmoved {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if ctx != nil {
			img.AddContextBytes(*ctx, path, base, data)
		} else {
			img.AddBytes(path, base, data)
		}
		return nil
	}
	if ctx == nil && base == image.Unmoved {
		return img.AddELF(path)
	}
	return img.AddELFAt(path, base, ctx)
}

// isELF tells whether the file starts with the ELF magic.
func isELF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var m [4]byte
	_, err = io.ReadFull(f, m[:])
	return err == nil && string(m[:]) == "\x7fELF"
}

// loadSideband adds the code a sideband describes to img, saying on
// stderr where it is not exact.
func loadSideband(img *image.Set, path string) error {
	if err := noteInput(path); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sf, err := sideband.Read(bufio.NewReader(f), path)
	if err != nil {
		return err
	}
	return sf.Apply(img, nil)
}

// counted is an ingress source that can say how many instructions it read.
type counted interface {
	ingress.Source
	Instructions() uint64
}

// sourceFlags registers the flags that choose an ingress input and returns
// an opener.
func sourceFlags(fs *flag.FlagSet) func(img *image.Set) (ingress.Source, io.Closer, error) {
	pcs := fs.String("pcs-in", "", "input: retired PCs, one hex address per `file` line (needs --image)")
	inputAlias(fs, "pcs")
	pcseq := fs.String("pcseq", "", "input: the N-Trace reference code's PCSEQ `file` (0x...,TAGn per line)")
	csv := fs.String("ingress-in", "", "input: ingress-port CSV `file` (E-Trace reference flow columns)")
	inputAlias(fs, "ingress")
	spike := fs.String("spike-csv", "", "input: spike CSV `file` (VALID,ADDRESS,INSN,PRIVILEGE,EXCEPTION,ECAUSE,TVAL,INTERRUPT)")
	per := fs.Bool("per-instruction", false, "one ingress block per instruction (single-retirement port) instead of merged straight-line blocks")
	half := fs.Bool("iretire-halfwords", false, "ingress CSV iretire counts halfwords (multiple-retirement form), not instructions")
	lenient := lenientFlag(fs)
	return func(img *image.Set) (ingress.Source, io.Closer, error) {
		src, c, err := openSource(img, *pcs, *pcseq, *csv, *spike, *per, *half, *lenient)
		if err != nil {
			return nil, nil, err
		}
		if sk, ok := src.(ingress.Skipper); ok {
			c = skipReporter{c, sk}
		}
		if cs, ok := src.(*ingress.CSVSource); ok {
			// an ingress CSV written with data trace retires a
			// multi-access instruction once per access: each
			// instruction executed is read once
			fs := ingress.NewFoldSource(cs)
			if img != nil && len(img.Segments()) > 0 {
				// a 3-bit port's "j ." repeats its block too
				fs.Single = func(iaddr uint64) bool {
					in := img.InstPtr(iaddr)
					return in != nil && etrace.DataAccesses(in) < 2
				}
			}
			src = fs
		}
		return src, c, nil
	}
}

// boolFlag is a flag.Value for a bool that several registrations share.
type boolFlag bool

func (b *boolFlag) String() string {
	if b == nil {
		return "false"
	}
	return strconv.FormatBool(bool(*b))
}

func (b *boolFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	*b = boolFlag(v)
	return err
}

func (b *boolFlag) IsBoolFlag() bool { return true }

// lenientFlag registers --lenient on fs, or returns the one already
// registered: one flag serves every text reader of a command (Tarmac, PC
// list, PCSEQ, ingress CSV, spike CSV).
func lenientFlag(fs *flag.FlagSet) *bool {
	if f := fs.Lookup("lenient"); f != nil {
		if b, ok := f.Value.(*boolFlag); ok {
			return (*bool)(b)
		}
	}
	b := new(bool)
	fs.Var((*boolFlag)(b), "lenient", "skip malformed lines of text inputs (Tarmac, PC list, PCSEQ, ingress CSV, spike CSV) instead of stopping "+
		"at the first with FILE:LINE; the number skipped and the first few are reported on stderr")
	return b
}

// skipReporter reports on stderr the lines a lenient reader skipped when
// the input is closed.
type skipReporter struct {
	io.Closer
	sk ingress.Skipper
}

func (r skipReporter) Close() error {
	if n := r.sk.Skipped(); n > 0 {
		first := r.sk.FirstSkipped()
		fmt.Fprintf(stderr, "rvtrace: --lenient: %d malformed lines skipped; the first %d:\n", n, len(first))
		for _, e := range first {
			fmt.Fprintf(stderr, "  %v\n", e)
		}
	}
	return r.Closer.Close()
}

// openSource opens the one ingress input given.
func openSource(img *image.Set, pcs, pcseq, csv, spike string, per, half, lenient bool) (ingress.Source, io.Closer, error) {
	n := 0
	for _, s := range []string{pcs, pcseq, csv, spike} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return nil, nil, fmt.Errorf("give exactly one input: --pcs-in, --pcseq, --ingress-in or --spike-csv")
	}
	opt := ingress.PCOptions{PerInstruction: per, Lenient: lenient}
	var name string
	for _, s := range []string{pcs, pcseq, csv, spike} {
		if s != "" {
			name = s
		}
	}
	f, err := openInput(name)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case pcs != "":
		if len(img.Segments()) == 0 && !img.HasContexts() {
			f.Close()
			return nil, nil, fmt.Errorf("--pcs-in needs the program image (--image PROG.elf)")
		}
		return ingress.NewPCSource(f, name, img, opt), f, nil
	case pcseq != "":
		return ingress.NewPCSeqSource(f, name, opt), f, nil
	case csv != "":
		s, err := ingress.NewCSVSource(f, name, ingress.CSVOptions{Halfwords: half, Lenient: lenient})
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		return s, f, nil
	}
	var im *image.Set
	if len(img.Segments()) > 0 {
		im = img
	}
	s, err := ingress.NewSpikeSource(f, name, im, opt)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return s, f, nil
}

// pump feeds every block of src to sink and returns how many there were.
// With prog on, it reports on stderr, under name, the blocks done and
// their rate.
// It does not close sink.
func pump(src ingress.Source, sink ingress.Sink, prog *progressFlag, name string) (uint64, error) {
	var n uint64
	var p *analysis.Progress
	if prog != nil && prog.on() {
		p = newProgress(nil, name, 0)
		p.Count, p.Unit = func() uint64 { return n }, "ingress blocks"
		p.Poll() // starts the clock
		defer p.Done()
	}
	for {
		b, err := src.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
		if p != nil && n&1023 == 0 {
			p.Poll()
		}
		if err := sink.Block(b); err != nil {
			return n, err
		}
	}
}

func init() {
	registerOutput(&output{flag: "pcs", help: "write the decoded instruction addresses, one per line, to `file`",
		open: func(path string, img *image.Set, opt outputOpts) (flow.Sink, error) {
			w, err := createOutput(path)
			if err != nil {
				return nil, err
			}
			pw := flow.NewPCWriter(w, img)
			pw.NoGapMarks = opt.noGapMarks
			return pw, nil
		}})
	registerOutput(&output{flag: "flow", help: "write a readable listing of the decoded flow to `file`",
		open: func(path string, img *image.Set, opt outputOpts) (flow.Sink, error) {
			w, err := createOutput(path)
			if err != nil {
				return nil, err
			}
			return flow.NewListing(w, img), nil
		}})
	registerOutput(&output{flag: "jsonl", help: "write the decoded flow as JSON lines to `file`",
		open: func(path string, img *image.Set, opt outputOpts) (flow.Sink, error) {
			w, err := createOutput(path)
			if err != nil {
				return nil, err
			}
			j := flow.NewJSONLines(w)
			j.SetImage(img)
			return j, nil
		}})
}
