package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rvtrace/rvtrace/analysis"
	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/filter"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/sideband"
	"github.com/rvtrace/rvtrace/sim"
	"github.com/rvtrace/rvtrace/tracectl"
)

var runCmd = &command{
	name:    "run",
	summary: "run a RISC-V program on the simulator, optionally tracing it live",
	usage: `Usage: rvtrace run [options] PROG.elf [args...]

Runs a bare-metal (HTIF) or a static Linux user-mode program, telling them
apart from the ELF: a tohost symbol makes it bare-metal; the Linux OS ABI,
a GNU ABI-tag note, an interpreter or dynamic section, or an entry point
below the simulator's RAM make it Linux (a note on stderr says so).
--linux forces Linux user mode, --linux=false bare metal.
The console goes to stdout, a summary to stderr, and the exit code is the
program's.

A bare-metal program exits by writing its exit code to tohost (HTIF); a
warning at the start (but with -q) says when it has no tohost symbol, so
cannot exit (an S-mode payload runs with --machine sbi or virt and exits
through SBI system reset). A lone hart spinning in a jump to itself (j .)
that no interrupt it enables can leave ends the run there, with exit
code 1 and the PC of the loop: the program did not exit (with
--max-instret, the run ends at the limit as usual). Any other endless
loop runs until --max-instret or a signal.

SIGINT (Ctrl-C) or SIGTERM stops the run within a few thousand
instructions: the trace encoders write their end message (N-Trace
ProgTraceCorrelation, E-Trace's final packet) and every output is flushed,
so the files decode cleanly up to where the run stopped; the exit code is
then 130 (SIGINT) or 143 (SIGTERM), as shells report it. A second signal
kills at once. --max-instret N stops the same way after exactly N
instructions, with exit code 1. A failed write to any output, standard
output included, is an error naming it (exit code 1).

Examples:
  rvtrace run prog.elf
  rvtrace run --pcs prog.pcs prog.elf
  rvtrace run --ingress prog.csv prog.elf
  rvtrace run --harts 2 --ingress 'mt{hart}.csv' --data-ingress 'mt{hart}.dcsv' mt-shared.elf
  rvtrace run --trace ntrace --preset best -o prog.nex prog.elf
  rvtrace run --trace ntrace -o hello.nex hello arg1 arg2
  rvtrace run --linux=false prog.elf
  rvtrace run --harts 4 --trace ntrace -o mt.nex mt-matmul.riscv
  rvtrace run --pmu coremark.riscv
  rvtrace run --pmu-json counts.json --pmu-model l1d=16K/4/64,prefetch prog.elf
  rvtrace run --pmu-events
  rvtrace run --pmu-pprof pmu.pb.gz prog.elf   # then go tool pprof -top -sample_index=l1d_miss pmu.pb.gz
  rvtrace run --tarmac-full prog.tarmac prog.elf
  rvtrace run --trace-capture self.nex examples/trace-self/trace-self.elf
  rvtrace run --trace etrace --data-trace --trace-capture d.te -o whole.te prog.elf
  rvtrace run --harts 2 --trace etrace --data-trace -o mt.te examples/mt-shared/mt-shared.elf
  rvtrace run --trace-script examples/trace-self/probe.txt --trace-capture fib.nex examples/demo/demo.elf
  rvtrace run --harts 2 --trace ntrace --preset best --trace-capture mt.nex --pcs 'mt.{hart}.pcs' mt-vvadd.riscv
  rvtrace run --machine sbi --pmu examples/pmu/pmutest.elf
  rvtrace run --machine virt --pmu examples/pmu/pmutest.elf
  rvtrace run --machine virt --kernel Image --initrd initramfs.cpio.gz --append "console=ttyS0 rdinit=/init"
`,
}

func init() {
	runCmd.run = runRun
	register(runCmd)
}

// traceFromArgs finds --trace PROTOCOL before flags are parsed (fs
// defines the run's flags but the encoder's).
func traceFromArgs(fs *flag.FlagSet, args []string) string {
	for _, f := range scanFlags(fs, args) {
		if f.name == "trace" {
			return f.value
		}
	}
	return ""
}

func runRun(args []string) error {
	fs := newFlagSet(runCmd)
	trace := fs.String("trace", "", "encode the run live with this protocol: "+protocolNames())
	out := fs.String("o", "", "trace output `file` (with --trace); with --trace-capture too, the trace system's funnel output, as a trace tap on it records it (the whole trace, where the capture holds what the RAM sink kept)")
	pcsOut := fs.String("pcs", "", "write the retired PCs (all harts, all privilege levels) to `file`; a name holding {hart} makes one file per hart, {hart} replaced by its number")
	csvOut := fs.String("ingress", "", "write the ingress port records as an ingress CSV `file`, one hart's per file: with --harts N > 1 the name must hold {hart}, replaced by the hart's number")
	maxInstret := fs.Uint64("max-instret", 0, "stop after exactly N retired instructions, all harts together, and exit 1 (0: no limit); the outputs are complete up to there")
	harts := fs.Int("harts", 1, "number of harts")
	xlen := fs.Int("xlen", 0, "32 or 64 (default: from the ELF)")
	ram := fs.String("ram", "", "size of each RAM bank, e.g. 64M or 1G (default 64M)")
	maxRAM := fs.String("max-ram", "16G", "refuse guest RAM (all banks together) above this size: a guard against corrupt ELF segments and typing mistakes (RAM is reserved lazily, only what the guest writes is used)")
	linux := fs.Bool("linux", false, "run as a static Linux user-mode program (system calls emulated); --linux=false runs it bare-metal (default: told from the ELF)")
	pmpEntries := fs.Int("pmp-entries", 0, "PMP entries: 0 for 16 (as Spike), -1 for none (the PMP CSRs are then illegal, as Spike --pmpregions=0)")
	misaligned := fs.String("misaligned", "", "misaligned loads and stores: hardware (performed, as Linux expects; the default except with --machine sbi/virt, whose firmware emulates them) or trap (address-misaligned exceptions, as Spike without misaligned support)")
	per := fs.Bool("per-instruction", false, "one ingress block per instruction (single-retirement port)")
	dataCSV := fs.String("data-ingress", "", "write the data trace interface's accesses (one per load, store and atomic) as a data ingress CSV `file`, one hart's per file: with --harts N > 1 the name must hold {hart}, replaced by the hart's number")
	quiet := fs.Bool("q", false, "no summary on stderr")
	progress := progressFlags(fs)
	asyncEnc := fs.String("async", "auto", "encode on another goroutine than the simulator's, using a second core: true, false, or auto (on for the costly --preset best / --hist-patterns)")
	pp := pmuFlags(fs)
	kf := kernelFlags(fs)
	sidebandOut := fs.String("sideband", "", "write the sideband to `file`: where each context's code came from (context, virtual range → --image file and offset, or the bytes when no image holds them), for decode --sideband-in")
	var sbImages multiFlag
	fs.Var(&sbImages, "image", "with --sideband: an image `file` (ELF or raw, e.g. the kernel Image and busybox) the pages run are matched against (repeatable)")
	ctxSource := fs.String("context-source", "", "what the trace's context (process ID) carries: asid (the ASID of satp: the default with --kernel) or scontext (writes of the scontext CSR: the default otherwise, and for kernels that write it)")
	openOutputs := outputFlags(fs, "pcs")
	ts := traceSysFlags(fs)
	var newEnc encoderFn
	var p *protocol
	name := traceFromArgs(fs, args)
	if name != "" {
		var err error
		if p, err = lookupProtocol(name); err != nil {
			return err
		}
		newEnc = p.encoder(fs)
	}
	filterCfg := filter.ConfigFlags(fs)
	if f := dataTraceArg(fs, args); f != "" && name != "" && name != "etrace" {
		return fmt.Errorf("%s: %s has no data trace in rvtrace (its trace encoder's trTeDataImplemented reads 0): data trace is E-Trace's, --trace etrace --data-trace", f, name)
	}
	// Flags stop at the program: what follows is its arguments.
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return errUsage
	}
	rest := fs.Args()
	if *pp.events {
		return listEvents(stdout)
	}
	if *kf.kernel != "" {
		rest = append([]string{*kf.kernel}, rest...)
	}
	if len(rest) == 0 {
		fs.Usage()
		return errUsage
	}
	prog, progArgs := rest[0], rest[1:]
	showProg := progress.on() // before stderr is wrapped
	if showProg {
		// the progress reporter writes from its own goroutine while the
		// guest and the simulator write too
		stderr = &syncWriter{w: stderr}
	}
	// --trace with --trace-capture: the trace system's encoders, funnel
	// and RAM sink, programmed as a debugger would; -o then receives the
	// funnel's output as well, as a trace tap on it would (the whole
	// trace, where the capture holds what the sink kept)
	sysTrace := *trace != "" && *ts.capture != ""
	if *out != "" && *ts.capture != "" && sameFileName(*out, *ts.capture) {
		return fmt.Errorf("-o %s and --trace-capture %s name the same file: -o receives the funnel's output, the capture what the RAM sink holds", *out, *ts.capture)
	}
	if *trace != "" && *out == "" && !sysTrace {
		return fmt.Errorf("--trace needs -o OUT, or --trace-capture FILE to trace through the trace system's funnel and RAM sink")
	}
	if *out != "" && *trace == "" {
		return fmt.Errorf("-o %s: the trace output needs --trace PROTOCOL (%s)", *out, protocolNames())
	}
	if *trace == "" {
		// (a --trace-script programs the trace system's filters itself)
		var f string
		fs.Visit(func(fl *flag.Flag) {
			if f == "" && (fl.Name == "filter" || fl.Name == "trigger" || fl.Name == "data-filter") {
				f = fl.Name
			}
		})
		if f != "" {
			return fmt.Errorf("--%s filters the trace that --trace PROTOCOL encodes: give --trace", f)
		}
	}
	cfg := sim.Config{XLEN: *xlen, Harts: *harts, MaxInstret: *maxInstret, Stdout: stdout, Stderr: stderr, Diagnostics: stderr,
		PMPEntries: *pmpEntries}
	switch *ctxSource {
	case "asid":
		cfg.ContextSource = sim.ContextASID
	case "scontext":
	case "":
		if *kf.kernel != "" {
			cfg.ContextSource = sim.ContextASID
		}
	default:
		return fmt.Errorf("--context-source %q: want asid or scontext", *ctxSource)
	}
	if *kf.kernel != "" && *trace != "" && fs.Lookup("context") != nil {
		// A system trace names the process of every instruction: context
		// reporting (N-Trace Ownership messages, E-Trace context fields)
		// is on unless --context=false says otherwise.
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "context" })
		if !set {
			if err := fs.Set("context", "true"); err != nil {
				return err
			}
		}
	}
	switch *misaligned {
	case "":
	case "hardware":
		cfg.Misaligned = true
	case "trap":
		cfg.MisalignedTrap = true
	default:
		return fmt.Errorf("--misaligned %q: want hardware or trap", *misaligned)
	}
	if *per || *csvOut != "" {
		// The ingress CSV is written in the reference flow's
		// single-retirement form, one instruction per line.
		cfg.Mode = sim.PerInstruction
		*per = true
	}
	if *ram != "" {
		n, err := parseSize(*ram)
		if err != nil {
			return fmt.Errorf("--ram: %v", err)
		}
		cfg.RAMSize = n
	}
	if n, err := parseSize(*maxRAM); err != nil {
		return fmt.Errorf("--max-ram: %v", err)
	} else {
		cfg.MaxRAM = n
	}
	if err := noteInput(prog); err != nil {
		return err
	}
	if err := ts.setup(fs, *pp.machine, *kf.kernel != "", &cfg); err != nil {
		return err
	}
	linuxSet := false
	fs.Visit(func(f *flag.Flag) { linuxSet = linuxSet || f.Name == "linux" || f.Name == "machine" })
	if !linuxSet && *kf.kernel == "" {
		kind, why, err := sim.ClassifyELF(prog)
		if err != nil {
			return err
		}
		if kind == sim.LinuxUser {
			*linux = true
			if !*quiet {
				fmt.Fprintf(stderr, "rvtrace run: %s: Linux user-mode program (%s); --linux=false runs it bare-metal\n", prog, why)
			}
		}
	}
	if !*linux {
		cfg.Args = progArgs
	}
	m, err := sim.New(cfg)
	if err != nil {
		return err
	}
	if *kf.kernel != "" {
		err = kf.load(m, fs, *pp.machine, *pp.fw, progArgs, cfg.RAMSize)
	} else if *linux {
		err = m.LoadLinuxELF(prog, append([]string{prog}, progArgs...), nil)
	} else if fw, ferr := pp.load(m, prog); fw || ferr != nil {
		err = ferr
	} else if err = m.LoadELF(prog); err == nil && !m.HasHTIF() && !*quiet {
		// Without a limit, such a run ends only at a j . loop nothing
		// can leave, or never.
		limit := "no --max-instret is given: it runs until it spins in a j . loop nothing can leave (exit 1) or is interrupted"
		if *maxInstret != 0 {
			limit = fmt.Sprintf("it runs until --max-instret %d", *maxInstret)
		}
		fmt.Fprintf(stderr, "rvtrace run: warning: %s has no tohost symbol: a bare-metal program exits only through HTIF, so this one cannot exit; %s (an S-mode payload exits through SBI system reset with --machine sbi or virt)\n",
			prog, limit)
	}
	if err != nil {
		return err
	}
	img := image.NewSet()
	if err := kf.addImage(img, prog); err != nil {
		return err
	}
	pp.linux = *linux
	if err := pp.attach(m, img); err != nil {
		return err
	}
	if err := ts.attach(m, img); err != nil {
		return err
	}
	encImg := portImage(img) // what the trace encoders are given
	// --ingress and --data-ingress: one file per hart
	csvNames, err := perHartNames("--ingress", *csvOut, m.NumHarts())
	if err != nil {
		return err
	}
	dataNames, err := perHartNames("--data-ingress", *dataCSV, m.NumHarts())
	if err != nil {
		return err
	}
	var closers []func() error
	srcBits := 0 // SRC width chosen for a multi-hart trace
	var traceCount *countWriter
	tapClose := func() error { return nil } // -o with --trace-capture
	var rawEncs []ingress.Sink              // the encoders, for their loss summary
	var hart0 fanout                        // ingress sinks of hart 0 (closed by the simulator)
	hartN := map[int]ingress.Sink{}         // the ingress sink given to each other hart
	var dport *sim.DataPort                 // data trace interface of hart 0
	// the sinks of each hart's data trace interface, and --data-harts
	// (data trace of several harts: run_data.go)
	dsinks := make([]dataFanout, m.NumHarts())
	dataHarts := 0
	framingNote := "" // E-Trace framing chosen for the trace system (etraceSystemFraming)
	if *trace != "" {
		srcBitsSet := false
		fs.Visit(func(f *flag.Flag) { srcBitsSet = srcBitsSet || f.Name == "src-bits" })
		var err error
		if dataHarts, err = runDataHarts(fs, m.NumHarts()); err != nil {
			return err
		}
		if *trace == "etrace" && sysTrace {
			// the trace system's funnel and RAM sink take UTDD frames
			if framingNote, err = etraceSystemFraming(fs, m.NumHarts()); err != nil {
				return err
			}
		}
		if *trace == "etrace" && m.NumHarts() > 1 {
			// E-Trace: one source ID per hart, which only the UTDD
			// framing carries
			if err := etraceMultiHart(fs); err != nil {
				return err
			}
		}
		if m.NumHarts() > 1 && !srcBitsSet && fs.Lookup("src-bits") != nil {
			srcBits = 1
			for 1<<srcBits < m.NumHarts()+dataHarts {
				srcBits++
			}
			if err := fs.Set("src-bits", strconv.Itoa(srcBits)); err != nil {
				return err
			}
		}
		if sysTrace {
			if *out != "" {
				// the tap on the funnel's output, set before the
				// encoders are enabled
				f, err := createOutput(*out)
				if err != nil {
					return err
				}
				bw := bufio.NewWriterSize(f, 1<<20)
				traceCount = &countWriter{w: bw}
				ts.sys.SetTap(traceCount)
				tapClose = func() error {
					err := ts.sys.TapErr()
					if e := bw.Flush(); err == nil {
						err = e
					}
					if e := f.Close(); err == nil {
						err = e
					}
					if err != nil {
						return fmt.Errorf("-o %s: %w", *out, err)
					}
					// (also when the capture failed: -o holds the
					// whole trace)
					ts.tapHint(hintImage(prog, *sidebandOut), *out)
					return nil
				}
			}
			if err := traceThroughSystem(ts.sys, newEnc, filterCfg, encImg, &rawEncs); err != nil {
				return err
			}
			ts.folds = make([]*ingress.Folder, len(rawEncs))
			for h, e := range rawEncs {
				if ds := dataSinkOf(e); ds != nil {
					// (sysSink returns it from now on)
					ts.folds[h] = dataFolder(ts.sysSink(h), ds, liveMulti(m, h, img))
					dsinks[h] = append(dsinks[h], ts.folds[h])
				}
			}
		}
	}
	var csvWs []ingress.Sink // each hart's ingress CSV writer
	for _, n := range csvNames {
		w, err := createOutput(n)
		if err != nil {
			return err
		}
		csvWs = append(csvWs, ingress.NewCSVWriter(w, ingress.CSVOptions{Halfwords: !*per, Time: true, SIJump: true}))
	}
	etraceN := *trace == "etrace" && m.NumHarts() > 1
	if *trace != "" && !sysTrace {
		f, err := createOutput(*out)
		if err != nil {
			return err
		}
		bw := bufio.NewWriterSize(f, 1<<20)
		traceCount = &countWriter{w: bw}
		fc, err := filterCfg()
		if err != nil {
			f.Close()
			return err
		}
		var traceW io.Writer = traceCount // what the encoders write to
		if etraceN {
			traceW = etrace.NewFunnel(traceCount) // whole frames, as made
		}
		var encs []ingress.Sink
		for h := 0; h < m.NumHarts(); h++ {
			// the hart's trace encoder component, programmed through
			// its registers, with the filters and triggers
			enc, err := newEnc(traceW, encImg, h, &fc, nil)
			if err != nil {
				f.Close()
				return err
			}
			rawEncs = append(rawEncs, enc)
			ds := dataSinkOf(enc)
			data := ds != nil
			if data {
				// The data trace interface: the hart's accesses, from
				// its observer (chained with --tarmac-full's), through
				// the filter stage if there is one (it passes the
				// accesses of the blocks it traces that the data
				// filters let through), a multi-access instruction
				// retired once per access, folded back in front of
				// the encoder component (run_data.go).
				// Zcmt table jumps, from the bytes the hart ran
				// (withTableJumps), between the folder and the encoder:
				// the data port gives the folder the retirements
				f := dataFolder(withTableJumps(enc, m, h, img, nil), ds, liveMulti(m, h, img))
				dsinks[h] = append(dsinks[h], f)
				enc = f
			} else {
				if useAsync(*asyncEnc, fs) {
					// (the data port calls the encoder from the simulator's
					// goroutine: no second one with data trace)
					// Encode on the second core while the simulator runs.
					enc = ingress.Async(enc)
				}
				if *trace == "etrace" {
					// Zcmt table jumps, from the bytes the hart ran (in
					// the simulator's goroutine)
					enc = withTableJumps(enc, m, h, img, nil)
				}
			}
			encs = append(encs, enc)
		}
		if fc.HasData() && len(dsinks[0]) == 0 {
			f.Close()
			return fmt.Errorf("--data-filter filters the data trace interface's accesses: it needs --trace etrace --data-trace")
		}
		for h, enc := range encs {
			if h == 0 {
				hart0 = append(hart0, enc)
				if csvWs != nil {
					hart0 = append(hart0, csvWs[0])
				}
				continue
			}
			s := enc
			if csvWs != nil {
				s = fanout{enc, csvWs[h]}
			}
			hartN[h] = ts.with(h, s)
			if err := m.SetIngress(h, hartN[h]); err != nil {
				return err
			}
		}
		// The simulator closes each hart's ingress sink at the end of
		// the run; what is left is the shared output file.
		closers = append(closers, func() error {
			if err := bw.Flush(); err != nil {
				return err
			}
			return f.Close()
		})
	} else if csvWs != nil {
		hart0 = append(hart0, csvWs[0])
		for h := 1; h < m.NumHarts(); h++ {
			// (with the trace system, after its encoder)
			hartN[h] = ts.with(h, csvWs[h])
			if err := m.SetIngress(h, hartN[h]); err != nil {
				return err
			}
		}
	}
	for h, n := range dataNames {
		w, err := createOutput(n)
		if err != nil {
			return err
		}
		dw := ingress.NewDataCSVWriter(w)
		dsinks[h] = append(dsinks[h], dw)
		closers = append(closers, func() error {
			err := dw.Close()
			if e := w.Close(); err == nil {
				err = e
			}
			return err
		})
	}
	// The data trace interface of each hart: its accesses, from its
	// observer (chained with --tarmac-full's).
	dports, err := dataPorts(m, dsinks, pp.tw, splitLRIDWidth(rawEncs))
	if err != nil {
		return err
	}
	setTraceCSR(dports, rawEncs)
	dport = dports[0]
	for h := 1; h < m.NumHarts(); h++ {
		if dports[h] == nil {
			continue
		}
		// hart h's ingress sink, closed after its data port delivered
		// what it holds
		next := hartN[h]
		if next == nil && ts.sys != nil {
			next = ts.sysSink(h)
		}
		if next == nil {
			// no ingress sink (--data-ingress alone): the port is
			// flushed when the run ends
			continue
		}
		hartN[h] = withPort(dports[h], next)
		if err := m.SetIngress(h, hartN[h]); err != nil {
			return err
		}
	}
	// Flow outputs (profiles, Tarmac, ...) from hart 0's retirements.
	if flowSink, err := openOutputs(img); err != nil {
		return err
	} else if flowSink != nil {
		hart0 = append(hart0, analysis.NewBlockFlow(img, flowSink)) // closes flowSink
	}
	if len(hart0) > 0 {
		if ts.sys != nil {
			hart0 = append(fanout{ts.sysSink(0)}, hart0...)
		}
		if err := m.SetIngress(0, withPort(dport, hart0.sink())); err != nil {
			return err
		}
	} else if dport != nil && ts.sys != nil {
		// the trace system's encoder alone, closed after the data port
		// delivered what it holds
		if err := m.SetIngress(0, withPort(dport, ts.sysSink(0))); err != nil {
			return err
		}
	}
	var sbRec *sideband.Recorder
	if *sidebandOut != "" {
		for _, p := range sbImages {
			if err := noteInput(p); err != nil {
				return err
			}
		}
		w, err := createOutput(*sidebandOut)
		if err != nil {
			return err
		}
		instret := func(h int) uint64 { return m.Hart(h).Instret() }
		if sbRec, err = sideband.NewRecorder(w, m, m.NumHarts(), instret, sbImages); err != nil {
			w.Close()
			return err
		}
		// the recorder reads the hart's memory as each block retires: it
		// goes first, before any encoder running on its own goroutine
		if len(hart0) == 0 && ts.sys != nil {
			// the trace system's encoder, connected alone so far
			hart0 = fanout{ts.sysSink(0)}
		}
		hart0 = append(fanout{sbRec.Hart(0)}, hart0...)
		m.SetCodeWriteHook(sbRec.CodeWritten)
		if err := m.SetIngress(0, withPort(dport, hart0.sink())); err != nil {
			return err
		}
		for h := 1; h < m.NumHarts(); h++ {
			next := hartN[h]
			if next == nil && ts.sys != nil {
				next = ts.sysSink(h)
			}
			s := ingress.Sink(sbRec.Hart(h))
			if next != nil {
				s = fanout{s, next}
			}
			if err := m.SetIngress(h, s); err != nil {
				return err
			}
		}
	} else if len(sbImages) > 0 {
		return fmt.Errorf("--image: run takes images only to match the pages of a --sideband against")
	}
	if *pcsOut != "" {
		perHart := strings.Contains(*pcsOut, "{hart}")
		var pw *ingress.PCWriter
		for h := 0; h < m.NumHarts(); h++ {
			if pw == nil || perHart {
				w, err := createOutput(strings.ReplaceAll(*pcsOut, "{hart}", strconv.Itoa(h)))
				if err != nil {
					return err
				}
				this := ingress.NewPCWriter(w)
				pw = this
				closers = append(closers, func() error {
					if err := this.Flush(); err != nil {
						return err
					}
					return w.Close()
				})
			}
			hw := pw // this hart's writer
			// in batches: the simulator need not stop at every instruction
			// (a write error is Flush's, when the file is closed)
			if err := m.SetPCList(h, func(pcs []uint64) { hw.WritePCs(pcs) }); err != nil {
				return err
			}
		}
	}
	// SIGINT and SIGTERM stop the simulator at the next quantum, so that
	// the encoders write their end message and every output is flushed:
	// the trace decodes cleanly up to there. A second signal kills.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var got atomic.Value // the signal that stopped the run
	stopWatch := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			got.Store(s)
			signal.Reset(os.Interrupt, syscall.SIGTERM)
			m.Stop()
		case <-stopWatch:
		}
	}()
	start := time.Now()
	stopProgress := func() {}
	if showProg {
		// the total is known when --max-instret bounds the run
		stopProgress = countProgress(filepath.Base(prog), m.Retired, "instructions", *maxInstret)
	}
	res, runErr := m.Run()
	stopProgress()
	for _, p := range dports {
		if p == nil {
			continue
		}
		if err := p.Flush(); err != nil && runErr == nil {
			runErr = err
		}
	}
	var guestErr *sim.GuestError
	if errors.As(runErr, &guestErr) {
		guestErr.FormatAddr = img.FormatAddr
	}
	elapsed := time.Since(start)
	signal.Stop(sigs)
	close(stopWatch)
	if s, ok := got.Load().(os.Signal); ok && errors.Is(runErr, sim.ErrStopped) {
		code := 128 + int(s.(syscall.Signal))
		runErr = codeError{code, fmt.Errorf("stopped by %v after %d instructions; the outputs hold everything up to there", s, res.Instret)}
	} else if errors.Is(runErr, sim.ErrInstructionLimit) {
		runErr = fmt.Errorf("%w; the outputs hold the first %d instructions", runErr, res.Instret)
	}
	for _, c := range closers {
		if err := c(); err != nil && runErr == nil {
			runErr = err
		}
	}
	if err := pp.finish(m, res, elapsed.Seconds(), img); err != nil && runErr == nil {
		runErr = err
	}
	for _, f := range []func() error{func() error { return ts.finish(hintImage(prog, *sidebandOut), *quiet) }, tapClose} {
		var oe *OutputError
		switch err := f(); {
		case err == nil:
		case runErr == nil:
			runErr = err
		case errors.As(err, &oe):
			// a write error of an output: said with the others after the
			// command (finishFiles), once
		default:
			// the run ended with an error of its own (--max-instret, a
			// signal...): the capture's is said too
			fmt.Fprintf(stderr, "rvtrace run: %v\n", err)
		}
	}
	if !*quiet {
		var cycles uint64
		for _, h := range res.Harts {
			if h.Cycles > cycles {
				cycles = h.Cycles
			}
		}
		line := fmt.Sprintf("rvtrace run: %d instructions, %d cycles, %.1f M instructions/s", res.Instret, cycles,
			float64(res.Instret)/elapsed.Seconds()/1e6)
		if traceCount != nil && res.Instret > 0 {
			line += fmt.Sprintf(", %s trace %d bytes (%.3f bits/instruction)", *trace, traceCount.n,
				float64(traceCount.n*8)/float64(res.Instret))
			if srcBits > 0 {
				enc := ""
				if *trace == "etrace" {
					enc = " --encap utdd"
					if etraceContext(rawEncs[0]) {
						enc += " --context"
					}
				}
				note := ""
				if dataHarts > 1 {
					enc += fmt.Sprintf(" --data-trace --data-harts %d", dataHarts)
					note = " (and the run's other --data-* options)"
				}
				line += fmt.Sprintf(", one source per hart: decode with%s --src-bits %d --src N%s", enc, srcBits, note)
			}
			if ds, ok := dataStats(rawEncs, dports); ok {
				line += fmt.Sprintf(", of which data trace %d bytes for %d accesses (%.2f bytes/access)", ds.Bytes, ds.Accesses,
					float64(ds.Bytes)/float64(max(ds.Accesses, 1)))
			}
			for h, e := range rawEncs {
				if l, ok := e.(interface{ LossSummary() string }); ok && l.LossSummary() != "" {
					line += fmt.Sprintf("; hart %d: %s", h, l.LossSummary())
				}
			}
		}
		if runErr == nil {
			line += fmt.Sprintf(", exit code %d", res.ExitCode)
		}
		fmt.Fprintln(stderr, line)
		if framingNote != "" {
			fmt.Fprintf(stderr, "rvtrace run: %s\n", framingNote)
		}
		if m.NumHarts() > 1 {
			for _, f := range []struct {
				what  string
				names []string
			}{{"ingress CSV", csvNames}, {"data ingress CSV", dataNames}} {
				if f.names != nil {
					fmt.Fprintf(stderr, "rvtrace run: %s of each hart: %s\n", f.what, hartFiles(f.names))
				}
			}
		}
		if sbRec != nil {
			st := sbRec.Stats()
			fmt.Fprintf(stderr, "rvtrace run: sideband %s: %d pages matched to images, %d to images with a few bytes changed, %d recorded as bytes (no image holds them); %d recorded again after their code changed (%d remapped to other physical pages)\n",
				*sidebandOut, st.Matched, st.Patched, st.Literal, st.Changed, st.Remapped)
		}
	}
	if sbRec != nil && sbRec.Stats().Unmapped > 0 {
		fmt.Fprintf(stderr, "rvtrace run: warning: sideband %s: %d pages a hart ran from were unmapped before their block was reported (nothing recorded: a decoder reports a gap there)\n",
			*sidebandOut, sbRec.Stats().Unmapped)
	}
	for h, e := range rawEncs {
		// Said even with -q: what the encoder could not trace as asked.
		if w, ok := e.(interface{ Warning() string }); ok && w.Warning() != "" {
			fmt.Fprintf(stderr, "rvtrace run: warning: hart %d: %s: %s\n", h, *trace, w.Warning())
		}
	}
	for h, p := range dports {
		if p != nil && p.Inexact > 0 {
			// Said even with -q: those packets may carry a wrong address.
			who := ""
			if len(dports) > 1 {
				who = fmt.Sprintf("hart %d: ", h)
			}
			fmt.Fprintf(stderr, "rvtrace run: warning: data trace: %s%d failed sc with rd = rs1: their address is the last lr's, not read back\n", who, p.Inexact)
		}
	}
	if cw := res.CodeWrites; cw.Count > 0 && sbRec == nil {
		// Said even with -q: a trace of this run decodes wrongly.
		fmt.Fprintf(stderr, "rvtrace run: warning: self-modifying code: %d stores overwrote instructions the program had executed, the first by the instruction at %#x (hart %d) writing %#x; a trace decoded against the ELF image is wrong where the new instructions ran\n",
			cw.Count, cw.PC, cw.Hart, cw.Addr)
	}
	if runErr != nil {
		return runErr
	}
	if res.ExitCode != 0 {
		if res.ExitCode&0xff == 0 && !*linux {
			// A process exit status keeps 8 bits: 256 would read as 0.
			// (A Linux program's exit(256) is 0 on Linux too.)
			fmt.Fprintf(stderr, "rvtrace run: the program's exit code %d is a multiple of 256; exiting with 1\n", res.ExitCode)
			return exitError{1}
		}
		return exitError{res.ExitCode}
	}
	return nil
}

// traceThroughSystem programs the trace system as a debugger does for
// --trace with --trace-capture: the RAM sink and the funnel enabled, then
// each hart's encoder component configured from the options through its
// registers (source ID = hart number when there is a SRC field) and
// enabled; the encoders are appended to encs.
func traceThroughSystem(sys *tracectl.System, newEnc encoderFn, filterCfg func() (filter.Config, error), img *image.Set, encs *[]ingress.Sink) error {
	fc, err := filterCfg()
	if err != nil {
		return err
	}
	if err := sys.EnableSinkAndFunnel(); err != nil {
		return err
	}
	for h, e := range sys.Encoders {
		enc, err := newEnc(nil, img, h, &fc, e)
		if err != nil {
			return err
		}
		*encs = append(*encs, enc)
	}
	return nil
}

// hintImage returns the decode options that give a decoder the program a
// run traced, for the decode commands run prints: --image PROG, or the
// sideband the run wrote (--sideband-in FILE), which describes all the
// code the harts ran (the ELF does not, for code run at virtual addresses
// or changed while the system ran).
func hintImage(prog, sidebandOut string) string {
	if sidebandOut != "" {
		return "--sideband-in " + sidebandOut
	}
	return "--image " + prog
}

// portImage returns the image the trace encoders of a live run are
// given: the program's XLEN, and no code. The simulator's ingress port
// ends a block at each control-flow instruction it retires (taken or
// not) and reports it with its 4-bit itype, so the E-Trace encoder needs
// no instruction bytes: like a hardware encoder, which has no image, it
// follows the port alone (given an image without code,
// tracectl.Encoder runs etrace.NewEncoder with none). The program's own
// image would describe the code wrongly wherever the hart does not run
// the ELF's bytes at the ELF's addresses: code run at virtual addresses
// (examples/sim-tests/vm, a kernel's processes) or code the program
// wrote. A 3-bit itype port (itype_width_p = 3) is modelled by folding
// the port's itypes (ingress.IType.To3Bit), as the encoder does without
// an image.
func portImage(img *image.Set) *image.Set {
	p := image.NewSet()
	p.SetXLEN(img.XLEN())
	return p
}

// sameFileName reports whether two output names are the same file, as
// createOutput judges (the capture is created at the end of the run, too
// late to refuse it then).
func sameFileName(a, b string) bool {
	ref := func(name string) fileRef {
		info, _ := os.Stat(name)
		return newFileRef(name, info)
	}
	return ref(a).same(ref(b))
}

// dataTraceArg returns the first data trace option among the run's
// options (before the program), or "".
func dataTraceArg(fs *flag.FlagSet, args []string) string {
	for _, f := range scanFlags(fs, args) {
		if f.name == "data-trace" || slices.Contains(dataFlags, f.name) {
			return "--" + f.name
		}
	}
	return ""
}

// isBoolFlag reports whether f is a boolean flag (-f alone sets it).
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// flagArg is a flag on the command line and its value.
type flagArg struct{ name, value string }

// scanFlags returns the flags fs.Parse(args) meets, up to the program
// (the first argument that is neither a flag nor a flag's value) or
// "--": a flag fs defines takes the next argument as its value unless it
// is a boolean or has "=value"; one fs does not define (yet: the
// encoder's) is taken to have the next argument as its value unless that
// starts with "-".
func scanFlags(fs *flag.FlagSet, args []string) []flagArg {
	var out []flagArg
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		name, value, ok := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if !ok && i+1 < len(args) {
			switch f := fs.Lookup(name); {
			case f != nil && isBoolFlag(f):
			case f != nil || !strings.HasPrefix(args[i+1], "-"):
				i++
				value = args[i]
			}
		}
		out = append(out, flagArg{name, value})
	}
	return out
}

// useAsync decides whether encoders run on their own goroutine: it pays
// when encoding costs as much as simulating (the record planner of
// --preset best), and costs a copy per block otherwise.
func useAsync(v string, fs *flag.FlagSet) bool {
	switch v {
	case "true", "1", "on":
		return true
	case "false", "0", "off":
		return false
	}
	costly := false
	fs.Visit(func(f *flag.Flag) {
		costly = costly || f.Name == "preset" && f.Value.String() == "best" || f.Name == "hist-patterns"
	})
	return costly
}

// parseSize parses 64M, 1G, 1T, 4096, 0x1000.
func parseSize(s string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("empty size")
	}
	mult, num := uint64(1), s
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		mult, num = 1<<10, s[:len(s)-1]
	case "M":
		mult, num = 1<<20, s[:len(s)-1]
	case "G":
		mult, num = 1<<30, s[:len(s)-1]
	case "T":
		mult, num = 1<<40, s[:len(s)-1]
	}
	n, err := strconv.ParseUint(num, 0, 64)
	if err != nil || n > ^uint64(0)/mult {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return n * mult, nil
}

// perHartNames returns the file of each of n harts that the option opt
// (--ingress, --data-ingress) names with name, or nil when name is "": {hart} in
// name is replaced by the hart's number. Such a CSV file has no hart
// column: a name without {hart} is refused for several harts, which
// would have to share one file, rather than writing one hart's records
// and dropping the others'.
func perHartNames(opt, name string, n int) ([]string, error) {
	if name == "" {
		return nil, nil
	}
	per := strings.Contains(name, "{hart}")
	if n > 1 && !per {
		return nil, fmt.Errorf("%s %s: the file holds one hart's records (it has no hart column), and this run has %d harts: give a name holding {hart}, replaced by the hart's number (e.g. %s), for one file per hart",
			opt, name, n, hartExample(name))
	}
	names := make([]string, n)
	for h := range names {
		names[h] = strings.ReplaceAll(name, "{hart}", strconv.Itoa(h))
	}
	return names, nil
}

// hartExample returns name with {hart} before its extension.
func hartExample(name string) string {
	ext := filepath.Ext(name)
	return strings.TrimSuffix(name, ext) + "{hart}" + ext
}

// hartFiles lists the files of the harts: "a0.csv (hart 0), a1.csv (hart 1)".
func hartFiles(names []string) string {
	l := make([]string, len(names))
	for h, n := range names {
		l[h] = fmt.Sprintf("%s (hart %d)", n, h)
	}
	return strings.Join(l, ", ")
}

// withPort returns a hart's ingress sink s, closed after the data port
// delivered what it holds (the split protocol's last responses). The
// sinks of s that take the retirements of the data trace interface (a
// multi-access instruction once per access: the encoders tracing data,
// through their Folder, and the ingress CSV writer) get them, the others
// the hart's own blocks (run_data.go).
func withPort(p *sim.DataPort, s ingress.Sink) ingress.Sink {
	if p == nil {
		return s
	}
	return portSinks(p, s)
}

// dataFanout sends each data access to several sinks.
type dataFanout []ingress.DataSink

// Response sends a split load response to every sink (each must take
// them: SetSplit is only called when they do).
func (f dataFanout) Response(r *ingress.LoadResponse) error {
	for _, s := range f {
		if err := s.(ingress.SplitDataSink).Response(r); err != nil {
			return err
		}
	}
	return nil
}

// splitLRIDWidth returns lrid_width_p if a data trace encoder among
// sinks (encoder components) traces the split protocol, else 0.
func splitLRIDWidth(sinks []ingress.Sink) int {
	for _, s := range sinks {
		e, ok := s.(interface {
			LastSettings() (tracectl.Settings, bool)
		})
		if !ok || dataSinkOf(s) == nil {
			continue
		}
		if set, ok := e.LastSettings(); ok && set.ETrace.Data != nil && set.ETrace.Data.Split {
			return set.ETrace.Data.LRIDWidth
		}
	}
	return 0
}

// dataSinkOf returns the data trace interface input of the encoder
// component enc when its hart has one and it traces data (--data-trace),
// else nil.
func dataSinkOf(enc ingress.Sink) ingress.SplitDataSink {
	e, ok := enc.(interface {
		DataSink() ingress.SplitDataSink
		LastSettings() (tracectl.Settings, bool)
	})
	if !ok {
		return nil
	}
	if set, ok := e.LastSettings(); !ok || set.Format != tracectl.FormatETrace || set.ETrace.Data == nil {
		return nil
	}
	return e.DataSink()
}

func (f dataFanout) Access(a *ingress.Access) error {
	for _, s := range f {
		if err := s.Access(a); err != nil {
			return err
		}
	}
	return nil
}

// etraceContext reports whether the E-Trace encoder enc (a trace encoder
// component, or an encoder built directly) put the context in its format
// 3 packets: its decoder needs --context.
func etraceContext(enc ingress.Sink) bool {
	switch e := enc.(type) {
	case *tracectl.Encoder:
		s, ok := e.LastSettings()
		return ok && !s.ETrace.Params.NoContext
	case interface{ Config() etrace.Config }:
		return !e.Config().Params.NoContext
	}
	return false
}
