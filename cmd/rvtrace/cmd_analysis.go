package main

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/rvtrace/rvtrace/analysis"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/tarmac"
)

// The analysis outputs: each is a flow sink that builds an
// analysis.Profile and writes its view of it when the flow ends.
func init() {
	registerOutput(&output{flag: "profile", help: "write a flat profile (functions, source lines) and call tree as text to `file`",
		open: profileOutput(func(w io.Writer, p *analysis.Profile) error {
			return analysis.WriteText(w, p, analysis.TextOptions{Tree: true})
		})})
	registerOutput(&output{flag: "folded", help: "write folded call stacks (flamegraph.pl, speedscope) weighted by instructions to `file`",
		open: profileOutput(func(w io.Writer, p *analysis.Profile) error { return analysis.WriteFolded(w, p, false) })})
	registerOutput(&output{flag: "pprof", help: "write a pprof profile, per instruction address with DWARF lines and inlined frames (go tool pprof -http, -list FUNC, -disasm FUNC), to `file`, e.g. OUT.pb.gz",
		open: profileOutput(func(w io.Writer, p *analysis.Profile) error { return analysis.WritePprof(w, p) })})
	registerOutput(&output{flag: "lcov", help: "write code coverage (functions and lines executed) in lcov format to `file`",
		open: profileOutput(func(w io.Writer, p *analysis.Profile) error { return analysis.WriteLcov(w, p, "rvtrace") })})
	registerOutput(&output{flag: "html", help: "write the self-contained HTML report to `file`",
		open: profileOutput(func(w io.Writer, p *analysis.Profile) error {
			return analysis.WriteHTML(w, p, analysis.ReportOptions{})
		})})
	registerOutput(&output{flag: "chrome", help: "write function spans as Chrome trace-event JSON (Perfetto) to `file`; time: 1 µs = 1 instruction executed by the hart (displayTimeUnit ns)",
		open: func(path string, img *image.Set, opt outputOpts) (flow.Sink, error) {
			w, err := createOutput(path)
			if err != nil {
				return nil, err
			}
			c := analysis.NewChrome(w, img, analysis.Options{}, analysis.ChromeOptions{})
			c.SetCloser(w)
			return c, nil
		}})
	registerOutput(&output{flag: "perfetto", help: "write function spans as a native Perfetto protobuf trace (ui.perfetto.dev; scales to long traces) to `file`; time: 1 µs = 1 instruction executed by the hart",
		open: func(path string, img *image.Set, opt outputOpts) (flow.Sink, error) {
			w, err := createOutput(path)
			if err != nil {
				return nil, err
			}
			c := analysis.NewPerfetto(w, img, analysis.Options{}, analysis.PerfettoOptions{})
			c.SetCloser(w)
			return c, nil
		}})
	register(profileCmd)
	register(reportCmd)
	profileCmd.run = runProfile
	reportCmd.run = runReport
}

// profileSink is a Profile that writes an output when closed.
type profileSink struct {
	*analysis.Profile
	path  string
	w     io.WriteCloser
	write func(io.Writer, *analysis.Profile) error
}

func profileOutput(write func(io.Writer, *analysis.Profile) error) func(string, *image.Set, outputOpts) (flow.Sink, error) {
	return func(path string, img *image.Set, _ outputOpts) (flow.Sink, error) {
		// Fail now, not at the end of a long run, if the file cannot be
		// created.
		w, err := createOutput(path)
		if err != nil {
			return nil, err
		}
		return &profileSink{Profile: analysis.New(img, analysis.Options{}), path: path, w: w, write: write}, nil
	}
}

func (s *profileSink) Close() error {
	s.Profile.Close()
	w := s.w
	bw := bufio.NewWriterSize(w, 1<<20)
	err := s.write(bw, s.Profile)
	if e := bw.Flush(); err == nil {
		err = e
	}
	if e := w.Close(); err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	return nil
}

var profileCmd = &command{
	name:    "profile",
	summary: "profile a trace: flat profile by function and source line, call tree, trace cost",
	usage: `Usage: rvtrace profile [--image PROG.elf] INPUT [options] [outputs]

INPUT is one of:
  TRACE.tarmac        a Tarmac trace (RISC-V dialect, or Arm: IT/IS/ES, R, MR/MW, E...),
                      optionally gzipped (.gz); --protocol tarmac forces it
  TRACE               an N-Trace or E-Trace capture (--protocol, default auto:
                      told from the trace's first bytes, as for rvtrace decode)
  --pcs-in FILE, --pcseq FILE, --ingress-in FILE.csv, --spike-csv FILE
                      an instruction trace (PC list, ingress port capture)

The text profile goes to standard output (or -o FILE); the analysis outputs
(--folded, --pprof, --chrome, --lcov, --html, --tarmac ...) can be added.
Every address is shown with its symbol; line numbers need DWARF (-g).
The "lost" row gives the gaps of the trace and the suspect instructions.
With a selector, the profile is of the selection (said on its "selection"
line) and has no trace cost; with --sample N every count is a number of
samples, each standing for N instructions.
` + selectUsage + integrityUsage + `
Examples:
  rvtrace profile --image prog.elf prog.nex
  rvtrace profile --image prog.elf prog.nex --tree --funcs 50 --pprof prog.pb.gz
  rvtrace profile --image fvp.axf fvp.tarmac --folded fvp.folded
  rvtrace profile --image prog.elf --pcs-in prog.pcs --lcov prog.info
  rvtrace profile --image prog.elf prog.nex --port-bits 1,2,4,8,16 --port-mhz 100 --core-mhz 1000
`,
}

var reportCmd = &command{
	name:    "report",
	summary: "write a self-contained HTML report: summary, hot functions, flame graph, trace statistics",
	usage: `Usage: rvtrace report [--image PROG.elf] INPUT -o REPORT.html [options]

INPUT is as for rvtrace profile: a Tarmac file, an N-Trace/E-Trace capture
(--protocol) or --pcs-in/--pcseq/--ingress-in/--spike-csv. The report needs no
network: open it in any browser. Its summary has a "lost" card and, when the
trace has gaps, a list of them. With a selector, the report is of the
selection, which its title says.
` + selectUsage + integrityUsage + `
Examples:
  rvtrace report --image prog.elf prog.nex -o prog.html
  rvtrace report --image prog.elf prog.tarmac -o prog.html --title "prog on core 0"
  rvtrace report --image prog.elf prog.nex -o prog.html --port-bits 4,8,16 --port-mhz 200 --core-mhz 1500
`,
}

// analysisArgs are the flags profile and report share.
type analysisArgs struct {
	pc         *protoChoice
	config     decoderConfigFn
	df         *decodeFlags
	check      flowCheck
	skipped    int
	loadImage  func() (*image.Set, error)
	openSource func(img *image.Set, rest []string) (flowSourceFn, error)
	outputs    func(img *image.Set) (flow.Sink, error)
	out        *string
	progress   *progressFlag
	portBits   *string
	portMHz    *float64
	coreMHz    *float64
	ipc        *float64
	sel        *selectOpts
	selection  *selection
}

// flowSourceFn runs a whole input into a sink; size is the input's size in
// bytes (0 when unknown), name its description.
type flowSourceFn struct {
	run  func(sink flow.Sink, prof *analysis.Profile) error
	name string
	arm  bool // the input is an Arm Tarmac trace
}

// addAnalysisFlags registers the flags profile and report share, with the
// decoder flags of protocol p (none when p is nil: --protocol tarmac).
func addAnalysisFlags(fs *flag.FlagSet, args []string, pc *protoChoice) *analysisArgs {
	a := &analysisArgs{pc: pc}
	protocolFlag(fs, "tarmac, ")
	a.loadImage = imageFlags(fs)
	openIngress := sourceFlags(fs)
	if pc.p != nil {
		a.df = addDecodeFlags(fs)
		a.config = pc.p.decoder(fs)
	}
	xlen := fs.Int("tarmac-xlen", 64, "XLEN for RISC-V Tarmac records whose iset does not say")
	lenient := lenientFlag(fs) // shared with the ingress inputs
	a.out = fs.String("o", "-", "output `file`")
	a.progress = progressFlags(fs)
	a.portBits = fs.String("port-bits", "1,2,4,8,16,32", "trace port widths for the bandwidth table, comma separated")
	a.portMHz = fs.Float64("port-mhz", 100, "trace port clock in MHz")
	a.coreMHz = fs.Float64("core-mhz", 1000, "core clock in MHz (bandwidth needed)")
	a.ipc = fs.Float64("ipc", 0, "instructions per core cycle for the bandwidth (default: from timestamps, else 1)")
	a.sel = selectFlags(fs)
	a.outputs = extraOutputFlags(fs)
	given := protocolGiven(args)
	a.openSource = func(img *image.Set, rest []string) (flowSourceFn, error) {
		ingressGiven := false
		ingressName := "ingress input"
		for _, n := range []string{"pcs-in", "pcseq", "ingress-in", "spike-csv"} {
			if f := fs.Lookup(n); f != nil && f.Value.String() != "" {
				ingressGiven = true
				ingressName = f.Value.String()
			}
		}
		switch {
		case ingressGiven && len(rest) == 0:
			src, closer, err := openIngress(img)
			if err != nil {
				return flowSourceFn{}, err
			}
			return flowSourceFn{name: ingressName, run: func(sink flow.Sink, _ *analysis.Profile) error {
				defer closer.Close()
				bf := analysis.NewBlockFlow(img, nopCloseSink{sink})
				for {
					b, err := src.Next()
					if err == io.EOF {
						return bf.Close()
					}
					if err != nil {
						return err
					}
					if err := bf.Block(b); err != nil {
						return err
					}
				}
			}}, nil
		case len(rest) != 1 || ingressGiven:
			return flowSourceFn{}, fmt.Errorf("give one input: a trace file, or one of --pcs-in, --pcseq, --ingress-in, --spike-csv")
		}
		name := rest[0]
		if err := noteInput(name); err != nil { // before any output is created
			return flowSourceFn{}, err
		}
		isTarmac := pc.p == nil || strings.Contains(strings.ToLower(name), ".tarmac") ||
			((given == "" || given == "auto") && sniffTarmac(name))
		if !isTarmac && len(img.Segments()) == 0 && !img.HasContexts() {
			return flowSourceFn{}, fmt.Errorf("decoding %s needs the program image (--image PROG.elf)", name)
		}
		fsrc := flowSourceFn{name: name}
		if isTarmac {
			fsrc.arm = sniffArm(name)
		}
		fsrc.run = func(sink flow.Sink, prof *analysis.Profile) error {
			in, err := openInput(name)
			if err != nil {
				return err
			}
			defer in.Close()
			var size int64
			if st, err := os.Stat(name); err == nil && st.Mode().IsRegular() {
				size = st.Size()
			}
			var r io.Reader = in
			var prog *analysis.Progress
			if a.progress.on() {
				prog = newProgress(in, name, size)
				if prof != nil {
					prog.Count, prog.Unit = prof.Instructions, "instructions"
				}
				r = prog
				defer prog.Done()
			}
			if isTarmac {
				if strings.HasSuffix(name, ".gz") {
					zr, err := gzip.NewReader(r)
					if err != nil {
						return fmt.Errorf("%s: %w", name, err)
					}
					r = zr
				}
				d := tarmac.NewDecoder(tarmac.NewReader(r, name), tarmacOptions(*xlen, *lenient, img))
				err := d.Flow(sink)
				a.skipped = d.Skipped()
				reportSkipped(name, d.Skipped(), d.Errors())
				return err
			}
			// Trace bytes per instruction only mean something for the
			// whole flow, not a selection of it.
			if prof != nil && size > 0 && !isGzipFile(name) && a.selection == nil {
				prof.SetTraceSize(size)
			}
			return decodeTrace(pc, a.config, a.df, name, r, img, sink)
		}
		return fsrc, nil
	}
	return a
}

// analysisProtocol resolves --protocol for profile and report: tarmac
// (no decoder flags), a trace protocol, or auto.
func analysisProtocol(args []string, register func(fs *flag.FlagSet, pc *protoChoice) *analysisArgs) (*protoChoice, error) {
	if protocolGiven(args) == "tarmac" {
		return &protoChoice{}, nil
	}
	return resolveProtocol(args, func(fs *flag.FlagSet, p *protocol) decoderConfigFn {
		return register(fs, &protoChoice{p: p}).config
	})
}

// isGzipFile reports whether the file starts with the gzip magic bytes.
func isGzipFile(name string) bool {
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [2]byte
	n, _ := io.ReadFull(f, b[:])
	return n == 2 && b[0] == 0x1f && b[1] == 0x8b
}

// extraOutputFlags registers the registered outputs whose flag names are
// still free on fs (the deprecated spelling --pcs of the ingress input
// --pcs-in takes precedence over the --pcs output) and returns their opener.
func extraOutputFlags(fs *flag.FlagSet) func(img *image.Set) (flow.Sink, error) {
	type opt struct {
		o    *output
		path *string
	}
	var opts []opt
	var noMarks *bool
	for _, o := range outputs {
		if fs.Lookup(o.flag) != nil {
			continue
		}
		opts = append(opts, opt{o, fs.String(o.flag, "", o.help)})
		if o.flag == "pcs" {
			noMarks = gapMarksFlag(fs)
		}
	}
	return func(img *image.Set) (flow.Sink, error) {
		var sinks []flow.Sink
		var oo outputOpts
		if noMarks != nil {
			oo.noGapMarks = *noMarks
		}
		for _, x := range opts {
			if *x.path == "" {
				continue
			}
			s, err := x.o.open(*x.path, img, oo)
			if err != nil {
				for _, s := range sinks {
					s.Close()
				}
				return nil, fmt.Errorf("--%s %s: %w", x.o.flag, *x.path, err)
			}
			sinks = append(sinks, s)
		}
		switch len(sinks) {
		case 0:
			return nil, nil
		case 1:
			return sinks[0], nil
		}
		return flow.Multi(sinks...), nil
	}
}

// nopCloseSink hides Close, for sources that close what they are given.
type nopCloseSink struct{ flow.Sink }

func (nopCloseSink) Close() error { return nil }

// analyse runs the input into a Profile (and the extra outputs) and
// returns the profile.
func (a *analysisArgs) analyse(rest []string) (*analysis.Profile, *image.Set, string, error) {
	img, err := a.loadImage()
	if err != nil {
		return nil, nil, "", err
	}
	src, err := a.openSource(img, rest)
	if err != nil {
		return nil, nil, "", err
	}
	popt := analysis.Options{}
	if src.arm {
		popt.FixedInstSize = 4
	}
	prof := analysis.New(img, popt)
	extra, err := a.outputs(img)
	if err != nil {
		return nil, nil, "", err
	}
	sink := flow.Sink(prof)
	if extra != nil {
		sink = flow.Multi(prof, extra)
	}
	if sink, a.selection, err = a.sel.wrap(sink, img); err != nil {
		sink.Close()
		return nil, nil, "", err
	}
	sink = a.check.wrap(sink, img, a.df)
	rerr := src.run(sink, prof)
	cerr := sink.Close()
	if rerr != nil {
		return nil, nil, "", rerr
	}
	if cerr != nil {
		return nil, nil, "", cerr
	}
	if prof.Instructions() == 0 && a.check.integ.Gaps == 0 && a.skipped == 0 && a.selection == nil {
		return nil, nil, "", fmt.Errorf("%s: no instructions: an empty input, or not a trace", src.name)
	}
	return prof, img, src.name, nil
}

// bandwidth computes the bandwidth table for the flags.
func (a *analysisArgs) bandwidth(p *analysis.Profile) ([]analysis.Bandwidth, string, error) {
	bpi := p.BitsPerInstruction()
	if bpi == 0 {
		return nil, "", nil
	}
	ipc := *a.ipc
	how := "given"
	if ipc == 0 {
		ipc, how = 1, "assumed"
		if p.HasCycles() && p.IPC() > 0 {
			ipc, how = p.IPC(), "from the timestamps"
		}
	}
	var out []analysis.Bandwidth
	for _, s := range strings.Split(*a.portBits, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		w, err := strconv.Atoi(s)
		if err != nil || w <= 0 {
			return nil, "", fmt.Errorf("--port-bits: bad width %q", s)
		}
		out = append(out, analysis.BandwidthFor(bpi, *a.coreMHz*1e6, ipc, w, *a.portMHz*1e6))
	}
	note := fmt.Sprintf("%.3f bits per instruction, core at %.0f MHz, %.3f instructions per cycle (%s), port at %.0f MHz",
		bpi, *a.coreMHz, ipc, how, *a.portMHz)
	return out, note, nil
}

// profileOpts are the flags of the profile command.
type profileOpts struct {
	*analysisArgs
	funcs, lines *int
	tree         *bool
	treeMin      *float64
}

func profileCmdFlags(fs *flag.FlagSet, args []string, pc *protoChoice) *profileOpts {
	o := &profileOpts{analysisArgs: addAnalysisFlags(fs, args, pc)}
	o.funcs = fs.Int("funcs", 30, "functions in the flat profile (-1: all)")
	o.lines = fs.Int("lines", 20, "source lines in the line profile (-1: none)")
	o.tree = fs.Bool("tree", false, "print the call tree")
	o.treeMin = fs.Float64("tree-min", 0.5, "leave call tree nodes under this percentage of the instructions out")
	return o
}

func runProfile(args []string) error {
	pc, err := analysisProtocol(args, func(fs *flag.FlagSet, pc *protoChoice) *analysisArgs {
		return profileCmdFlags(fs, args, pc).analysisArgs
	})
	if err != nil {
		return err
	}
	fs := newFlagSet(profileCmd)
	o := profileCmdFlags(fs, args, pc)
	a, funcs, lines, tree, treeMin := o.analysisArgs, o.funcs, o.lines, o.tree, o.treeMin
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	p, _, name, err := a.analyse(rest)
	if err != nil {
		return err
	}
	w, err := createOutput(*a.out)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "input         %s\n", name)
	if a.selection != nil {
		fmt.Fprintf(bw, "selection     %s\n", a.selection.note())
	}
	err = analysis.WriteText(bw, p, analysis.TextOptions{Funcs: *funcs, Lines: *lines, Tree: *tree, TreeMin: *treeMin})
	if err == nil {
		if rows, note, e := a.bandwidth(p); e != nil {
			err = e
		} else if len(rows) > 0 {
			fmt.Fprintf(bw, "\nbandwidth: %s\n  port bits  needed Mbit/s  port Mbit/s  utilisation  lowest port MHz\n", note)
			for _, r := range rows {
				fmt.Fprintf(bw, "  %9d  %13.1f  %11.1f  %10.0f%%  %15.1f\n", r.PortBits, r.NeedBitsPerSec/1e6,
					r.PortBitsPerSec/1e6, 100*r.Utilization, r.MinPortHz/1e6)
			}
		}
	}
	if e := bw.Flush(); err == nil {
		err = e
	}
	if e := w.Close(); err == nil {
		err = e
	}
	if err != nil {
		return err
	}
	return a.report(name)
}

// report prints the integrity summary of the input and returns
// exitError{3} when the flow had gaps or skipped lines.
func (a *analysisArgs) report(name string) error {
	a.selection.report(name)
	err := a.check.report(name)
	if err == nil && a.skipped > 0 {
		return exitError{3}
	}
	return err
}

// reportOpts are the flags of the report command.
type reportOpts struct {
	*analysisArgs
	title      *string
	funcs      *int
	flameOrder *string
}

func reportCmdFlags(fs *flag.FlagSet, args []string, pc *protoChoice) *reportOpts {
	// -o names the report: --html, the HTML output of the other
	// commands, is here its deprecated spelling.
	deprecatedAlias(fs, "html", "o", "--html names the report file of rvtrace report with -o: --html is deprecated here")
	o := &reportOpts{analysisArgs: addAnalysisFlags(fs, args, pc)}
	o.title = fs.String("title", "", "report title (default: the input's name)")
	o.funcs = fs.Int("funcs", 25, "hot functions listed")
	o.flameOrder = fs.String("flame-order", "weight", "flame graph callees: weight (heaviest first) or time (call order: an icicle of time)")
	return o
}

func runReport(args []string) error {
	pc, err := analysisProtocol(args, func(fs *flag.FlagSet, pc *protoChoice) *analysisArgs {
		return reportCmdFlags(fs, args, pc).analysisArgs
	})
	if err != nil {
		return err
	}
	fs := newFlagSet(reportCmd)
	o := reportCmdFlags(fs, args, pc)
	a, title, funcs := o.analysisArgs, o.title, o.funcs
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *a.out == "-" {
		return fmt.Errorf("give the report file with -o REPORT.html")
	}
	if *o.flameOrder != "weight" && *o.flameOrder != "time" {
		return fmt.Errorf("--flame-order %q: want weight or time", *o.flameOrder)
	}
	p, img, name, err := a.analyse(rest)
	if err != nil {
		return err
	}
	rows, note, err := a.bandwidth(p)
	if err != nil {
		return err
	}
	input := name
	if segs := img.Segments(); len(segs) > 0 {
		input += " with " + segs[0].Image
	}
	t := *title
	if t == "" {
		t = "rvtrace report: " + name
	}
	if a.selection != nil {
		t += " (" + a.selection.note() + ")"
	}
	w, err := createOutput(*a.out)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	err = analysis.WriteHTML(bw, p, analysis.ReportOptions{Title: t, Input: input, Funcs: *funcs, Bandwidth: rows, BandwidthNote: note,
		FlameCallOrder: *o.flameOrder == "time"})
	if e := bw.Flush(); err == nil {
		err = e
	}
	if e := w.Close(); err == nil {
		err = e
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: %d instructions, %d functions\n", *a.out, p.Instructions(), len(p.FuncStats()))
	return a.report(name)
}
