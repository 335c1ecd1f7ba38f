package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/ntrace"
	"github.com/rvtrace/rvtrace/sim"
)

var benchCmd = &command{
	name:    "bench",
	summary: "trace every corpus program on the simulator and tabulate trace sizes against the reference",
	usage: `Usage: rvtrace bench [--corpus DIR] [--presets LIST] [--etrace LIST] [--only NAME,...]

Runs each ELF of DIR/elf once on the simulator, feeding every configuration's
encoder from the same run, and prints a Markdown table of bits per
instruction beside the N-Trace reference code's published figures
(DIR/results-all0..4.txt). The N-Trace presets and the E-Trace mode sets
(columns "etrace-SET", E-Trace 2.0 with the raw .te_inst_raw framing) see
exactly the same instructions: the reference's window of each program.

E-Trace mode sets: baseline, full-address, sijump, return-stack,
return-counter, predictor, jump-cache, all (sijump, implicit return with an
8-entry stack, 64-entry branch predictor, 16-entry jump target cache).

rvtrace bench --sim times the simulator as whole processes instead
(rvtrace bench --sim --help).

Examples:
  rvtrace bench --corpus ../shared/corpus/ntrace-refcode
  rvtrace bench --only coremark,dhrystone
  rvtrace bench --presets ref-htm-best --etrace baseline,return-stack,predictor,all
`,
}

func init() {
	benchCmd.run = runBench
	register(benchCmd)
}

// refFigures maps program name -> [5]bits/instr and instruction counts.
type refFigures struct {
	bits  [5]float64
	bytes [5]int64
	instr int64
}

var refLine = regexp.MustCompile(`^(\S+)-report\.txt:Stat: (\d+) bytes, .* (\d+) instr, ([0-9.]+) bits/instr`)

func readRefFigures(dir string) (map[string]*refFigures, error) {
	out := map[string]*refFigures{}
	for i := 0; i < 5; i++ {
		f, err := os.Open(filepath.Join(dir, fmt.Sprintf("results-all%d.txt", i)))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			m := refLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
			if m == nil {
				continue
			}
			r := out[m[1]]
			if r == nil {
				r = &refFigures{}
				out[m[1]] = r
			}
			r.bytes[i], _ = strconv.ParseInt(m[2], 10, 64)
			r.instr, _ = strconv.ParseInt(m[3], 10, 64)
			r.bits[i], _ = strconv.ParseFloat(m[4], 64)
		}
		f.Close()
	}
	return out, nil
}

// fanout feeds every block to several sinks.
type fanout []ingress.Sink

// sink returns f, or its only sink (one call less per block).
func (f fanout) sink() ingress.Sink {
	if len(f) == 1 {
		return f[0]
	}
	return f
}

func (f fanout) Block(b *ingress.Block) error {
	for _, s := range f {
		if err := s.Block(b); err != nil {
			return err
		}
	}
	return nil
}
func (f fanout) Close() error {
	for _, s := range f {
		if err := s.Close(); err != nil {
			return err
		}
	}
	return nil
}

// window passes the blocks (of one instruction each) of a part of a run:
// from the first block at start (or from the beginning when on), up to n
// instructions or up to the block at stop.
type window struct {
	next        ingress.Sink
	on, hasStop bool
	done        bool
	start, stop uint64
	n, seen     uint64
}

func (w *window) Block(b *ingress.Block) error {
	if w.done {
		return nil
	}
	if !w.on {
		if b.IAddr != w.start {
			return nil
		}
		w.on = true
	}
	if w.seen >= w.n || w.hasStop && b.IAddr == w.stop {
		w.done = true
		return nil
	}
	if b.IRetire > 0 {
		w.seen++
	}
	return w.next.Block(b)
}
func (w *window) Close() error { return w.next.Close() }

func loadImageFile(path string) (*image.Set, error) {
	img := image.NewSet()
	return img, img.AddELF(path)
}

func hasSymbol(img *image.Set, name string) bool {
	_, ok := img.Lookup(name)
	return ok
}

func runBench(args []string) error {
	if len(args) > 0 && (args[0] == "--sim" || args[0] == "-sim") {
		return runBenchSim(args[1:]) // bench_sim.go
	}
	fs := newFlagSet(benchCmd)
	dir := fs.String("corpus", "../shared/corpus/ntrace-refcode", "corpus `directory` (with elf/ and results-all*.txt)")
	presets := fs.String("presets", "ref-btm,ref-htm,ref-htm-rpt,ref-htm-cs8,ref-htm-best,best", "N-Trace presets to tabulate")
	etraceSets := fs.String("etrace", "baseline,all", "E-Trace mode sets to tabulate ("+strings.Join(etrace.ModeSets, ", ")+"); empty for none")
	only := fs.String("only", "", "comma-separated program names to run (default all)")
	progress := progressFlags(fs)
	out := fs.String("o", "-", "output `file` (the table)")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	refs, err := readRefFigures(*dir)
	if err != nil {
		return err
	}
	// columns: the N-Trace presets, then the E-Trace mode sets
	var names []string
	var etraceCfg = map[string]etrace.Config{}
	for _, n := range strings.Split(*presets, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if _, ok := ntrace.Presets[n]; !ok {
			return fmt.Errorf("unknown preset %q", n)
		}
		names = append(names, n)
	}
	for _, n := range strings.Split(*etraceSets, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		cfg, err := etrace.ModeSet(n)
		if err != nil {
			return err
		}
		etraceCfg["etrace-"+n] = cfg
		names = append(names, "etrace-"+n)
	}
	if len(names) == 0 {
		return fmt.Errorf("no preset and no E-Trace mode set to tabulate")
	}
	elfs, _ := filepath.Glob(filepath.Join(*dir, "elf", "*.riscv"))
	sort.Strings(elfs)
	want := map[string]bool{}
	for _, n := range strings.Split(*only, ",") {
		if n != "" {
			want[n] = true
		}
	}
	w, err := createOutput(*out) // closed, and its errors reported, by main
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "| program | instructions (Spike) |")
	for _, n := range names {
		fmt.Fprintf(w, " %s |", n)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "|---|---|")
	for range names {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	refIdx := map[string]int{"ref-btm": 0, "ref-htm": 1, "ref-htm-rpt": 2, "ref-htm-cs8": 3, "ref-htm-best": 4}
	var sum = make([]float64, len(names))
	var sumRef = make([]float64, len(names))
	var nProg int
	var worst = make([]float64, len(names))
	var worstProg = make([]string, len(names))
	for _, elf := range elfs {
		prog := strings.TrimSuffix(filepath.Base(elf), ".riscv")
		ref := refs[prog]
		if len(want) > 0 && !want[prog] || len(want) == 0 && ref == nil {
			continue
		}
		img, imgErr := loadImageFile(elf)
		if imgErr != nil {
			img = nil
		}
		counts := make([]*countWriter, len(names))
		var sinks fanout
		for i, n := range names {
			counts[i] = &countWriter{w: io.Discard}
			if cfg, ok := etraceCfg[n]; ok {
				enc, err := etrace.NewEncoder(counts[i], cfg, img)
				if err != nil {
					return err
				}
				sinks = append(sinks, enc)
				continue
			}
			enc, err := ntrace.NewEncoder(counts[i], ntrace.Presets[n])
			if err != nil {
				return err
			}
			sinks = append(sinks, enc)
		}
		limit := uint64(2e9)
		if ref != nil {
			limit = uint64(ref.instr)*2 + 1e6
		}
		var err error
		win := &window{next: sinks, n: ^uint64(0), on: true}
		var res sim.Result
		if img != nil && !hasSymbol(img, "tohost") {
			// No host interface: the program (the reference's t1) is
			// traced from main to its call of myExit, an endless loop.
			mainPC, ok1 := img.Lookup("main")
			stopPC, ok2 := img.Lookup("myExit")
			if !ok1 || !ok2 {
				fmt.Fprintf(stderr, "%s: no tohost and no main/myExit: skipped\n", prog)
				continue
			}
			win.on, win.start, win.stop, win.hasStop = false, mainPC, stopPC, true
		} else {
			// Pass 1: how many instructions retire up to the exit (the
			// host polls tohost between quanta, as Spike, so a few more
			// run after it; the reference traces end at the exit).
			res, err = sim.RunELF(elf, sim.Config{MaxInstret: limit})
			if err != nil {
				return fmt.Errorf("%s: %w", prog, err)
			}
			win.n = res.ExitInstret
		}
		// Pass 2: trace exactly those instructions.
		m, err := sim.New(sim.Config{MaxInstret: limit, Mode: sim.PerInstruction})
		if err != nil {
			return err
		}
		if err := m.LoadELF(elf); err != nil {
			return err
		}
		if err := m.SetIngress(0, win); err != nil {
			return err
		}
		start := time.Now()
		stopProgress := func() {}
		if progress.on() {
			var total uint64 // pass 1's count, else the reference's
			if win.n != ^uint64(0) {
				total = win.n
			} else if ref != nil {
				total = uint64(ref.instr)
			}
			stopProgress = countProgress(prog, m.Retired, "instructions", total)
		}
		_, err = m.Run()
		stopProgress()
		if err != nil && !(win.hasStop && win.done) {
			return fmt.Errorf("%s: %w", prog, err)
		}
		instr := win.seen
		if len(res.Harts) > 0 {
			instr += res.Harts[0].Exceptions // trapping ecalls are in Spike's log
		}
		line := fmt.Sprintf("| %s | %d", prog, instr)
		if ref != nil && ref.instr != int64(instr) {
			line += fmt.Sprintf(" (%d)", ref.instr)
		}
		line += " |"
		for i, n := range names {
			bits := float64(counts[i].n*8) / float64(instr)
			sum[i] += bits
			cell := fmt.Sprintf(" %.3f", bits)
			if k, ok := refIdx[n]; ok && ref != nil {
				cell += fmt.Sprintf(" (%.3f)", ref.bits[k])
				sumRef[i] += ref.bits[k]
				if ref.bytes[k] > 0 {
					if d := float64(counts[i].n-ref.bytes[k]) / float64(ref.bytes[k]); d > worst[i] {
						worst[i], worstProg[i] = d, prog
					}
				}
			} else if ref != nil {
				sumRef[i] += ref.bits[4]
			}
			line += cell + " |"
		}
		nProg++
		fmt.Fprintln(w, line)
		fmt.Fprintf(stderr, "%s: %d instructions in %v\n", prog, instr, time.Since(start).Round(time.Millisecond))
	}
	if nProg > 0 {
		line := fmt.Sprintf("| **average of %d** | |", nProg)
		for i, n := range names {
			if _, ok := refIdx[n]; ok {
				line += fmt.Sprintf(" **%.3f** (%.3f) |", sum[i]/float64(nProg), sumRef[i]/float64(nProg))
			} else {
				line += fmt.Sprintf(" **%.3f** |", sum[i]/float64(nProg))
			}
		}
		fmt.Fprintln(w, line)
		line = "| largest excess over the reference's bytes | |"
		for i, n := range names {
			if _, ok := refIdx[n]; ok {
				line += fmt.Sprintf(" %+.1f%% (%s) |", 100*worst[i], worstProg[i])
			} else {
				line += " |"
			}
		}
		fmt.Fprintln(w, line)
	}
	return nil
}
