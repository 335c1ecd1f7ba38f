package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

const benchSimUsage = `Usage: rvtrace bench --sim [--corpus DIR] [--runs N] [--spike PATH] [--qemu PATH]
                     [--linux-prog ELF | --linux-src FILE.c] [--rvtrace PATH]

Times whole "rvtrace run" processes, as a user sees them: coremark, three
embench programs and median (15 K instructions: start-up and exit cost)
from DIR/elf, a bare-metal program running under Sv39 (examples/bench/
sv39bench.elf) and a static Linux user-mode program (examples/bench/
simbench.c, built with riscv64-linux-gnu-gcc when no --linux-prog is
given). It prints, per program and tool, the median CPU time (user+sys)
and wall time of N runs and the instructions per second (the instruction
count is rvtrace's). With --spike (bare-metal programs) and --qemu
(qemu-riscv64, the Linux program) the peers run interleaved with rvtrace,
round by round, so that both see the same machine load; their output must
equal rvtrace's, or the row says so.

Examples:
  rvtrace bench --sim
  rvtrace bench --sim --runs 7 --spike /opt/spike/bin/spike --qemu qemu-riscv64
`

// benchProg is one program of the simulator benchmark.
type benchProg struct {
	name  string
	path  string
	linux bool
	args  []string
	xlen  int
	instr uint64 // retired instructions (rvtrace's count)
	out   []byte // rvtrace's stdout, to compare the peers' with
}

// benchTool is one simulator of the benchmark.
type benchTool struct {
	name string
	cmd  func(p *benchProg) []string // nil: does not run p
}

// benchTiming is what one process cost.
type benchTiming struct {
	cpu, wall time.Duration
}

var summaryInstr = regexp.MustCompile(`rvtrace run: (\d+) instructions`)

func runBenchSim(args []string) error {
	fs := flag.NewFlagSet("bench --sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, benchSimUsage, "\nOptions:\n"); fs.PrintDefaults() }
	dir := fs.String("corpus", "../shared/corpus/ntrace-refcode", "corpus `directory` (with elf/)")
	runs := fs.Int("runs", 5, "timed runs of each program and tool")
	spike := fs.String("spike", "", "Spike `binary` to time on the bare-metal programs")
	qemu := fs.String("qemu", "", "qemu-riscv64 `binary` to time on the Linux program")
	linuxProg := fs.String("linux-prog", "", "static riscv64 Linux `ELF` to time (default: build --linux-src)")
	sv39 := fs.String("sv39-prog", "examples/bench/sv39bench.elf", "bare-metal Sv39 `ELF` to time (user code under Sv39, a system call every 580 instructions); empty for none")
	linuxSrc := fs.String("linux-src", "examples/bench/simbench.c", "C `source` of the Linux program, built with riscv64-linux-gnu-gcc -static -O2")
	self := fs.String("rvtrace", "", "rvtrace `binary` to time (default: this one)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return errUsage
	}
	if fs.NArg() != 0 || *runs < 1 {
		fs.Usage()
		return errUsage
	}
	exe := *self
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return err
		}
	}
	var progs []*benchProg
	for _, n := range []string{"coremark", "embench-cubic", "embench-nbody", "embench-aha-mont64", "median"} {
		path := filepath.Join(*dir, "elf", n+".riscv")
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("%v (give the corpus with --corpus)", err)
		}
		progs = append(progs, &benchProg{name: n, path: path})
	}
	if *sv39 != "" {
		if _, err := os.Stat(*sv39); err != nil {
			fmt.Fprintf(stderr, "rvtrace bench: no Sv39 program: %v\n", err)
		} else {
			progs = append(progs, &benchProg{name: "sv39bench (Sv39)", path: *sv39})
		}
	}
	lp := *linuxProg
	if lp == "" && *linuxSrc != "" {
		tmp, err := os.MkdirTemp("", "rvtrace-bench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		lp = filepath.Join(tmp, strings.TrimSuffix(filepath.Base(*linuxSrc), ".c"))
		if out, err := exec.Command("riscv64-linux-gnu-gcc", "-static", "-O2", "-o", lp, *linuxSrc).CombinedOutput(); err != nil {
			fmt.Fprintf(stderr, "rvtrace bench: no Linux program (riscv64-linux-gnu-gcc %s: %v %s); give one with --linux-prog\n",
				*linuxSrc, err, bytes.TrimSpace(out))
			lp = ""
		}
	}
	if lp != "" {
		progs = append(progs, &benchProg{name: filepath.Base(lp) + " (Linux)", path: lp, linux: true})
	}
	for _, p := range progs {
		f, err := elf.Open(p.path)
		if err != nil {
			return err
		}
		p.xlen = 64
		if f.Class == elf.ELFCLASS32 {
			p.xlen = 32
		}
		f.Close()
	}
	tools := []benchTool{{"rvtrace", func(p *benchProg) []string {
		c := []string{exe, "run", "-q"}
		if p.linux {
			c = append(c, "--linux")
		}
		return append(append(c, p.path), p.args...)
	}}}
	if *spike != "" {
		tools = append(tools, benchTool{"spike", func(p *benchProg) []string {
			if p.linux {
				return nil
			}
			isa := "--isa=rv64gc"
			if p.xlen == 32 {
				isa = "--isa=rv32gc"
			}
			// the two RAM banks of rvtrace's bare-metal machine
			return []string{*spike, isa, "-m0x20000000:0x4000000,0x80000000:0x4000000", p.path}
		}})
	}
	if *qemu != "" {
		tools = append(tools, benchTool{"qemu-riscv64", func(p *benchProg) []string {
			if !p.linux {
				return nil
			}
			return append([]string{*qemu, p.path}, p.args...)
		}})
	}
	// one untimed run for the instruction count and the reference output
	for _, p := range progs {
		c := []string{exe, "run"}
		if p.linux {
			c = append(c, "--linux")
		}
		c = append(append(c, p.path), p.args...)
		out, errOut, _, err := benchRun(c)
		if err != nil {
			return fmt.Errorf("%s: %v\n%s", strings.Join(c, " "), err, errOut)
		}
		m := summaryInstr.FindSubmatch(errOut)
		if m == nil {
			return fmt.Errorf("%s: no instruction count in %q", strings.Join(c, " "), errOut)
		}
		p.instr, _ = strconv.ParseUint(string(m[1]), 10, 64)
		p.out = out
	}
	// timed runs, interleaved: round by round, program by program, tool by tool
	times := map[[2]int][]benchTiming{}
	bad := map[[2]int]string{}
	for r := 0; r < *runs; r++ {
		for pi, p := range progs {
			for ti, t := range tools {
				c := t.cmd(p)
				if c == nil {
					continue
				}
				k := [2]int{pi, ti}
				if bad[k] != "" {
					continue
				}
				out, errOut, tm, err := benchRun(c)
				switch {
				case err != nil:
					bad[k] = fmt.Sprintf("failed: %v %s", err, firstLine(errOut))
				case ti > 0 && !bytes.Equal(out, p.out):
					bad[k] = "output differs from rvtrace's"
				}
				times[k] = append(times[k], tm)
			}
		}
	}
	fmt.Fprintf(stdout, "%d runs of each, interleaved; medians. CPU is user+sys time of the whole process.\n\n", *runs)
	fmt.Fprintln(stdout, "| program | instructions | tool | CPU s | wall s | M instr/CPU s | M instr/wall s | CPU time / rvtrace's |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|")
	for pi, p := range progs {
		var base time.Duration
		for ti, t := range tools {
			k := [2]int{pi, ti}
			ts, ok := times[k]
			if !ok {
				continue
			}
			if msg := bad[k]; msg != "" {
				fmt.Fprintf(stdout, "| %s | %d | %s | %s | | | | |\n", p.name, p.instr, t.name, msg)
				continue
			}
			cpu, wall := medianDur(ts, func(x benchTiming) time.Duration { return x.cpu }),
				medianDur(ts, func(x benchTiming) time.Duration { return x.wall })
			ratio := ""
			if ti == 0 {
				base = cpu
				ratio = "1"
			} else if base > 0 {
				ratio = fmt.Sprintf("%.2f", cpu.Seconds()/base.Seconds())
			}
			fmt.Fprintf(stdout, "| %s | %d | %s | %.3f | %.3f | %.1f | %.1f | %s |\n", p.name, p.instr, t.name,
				cpu.Seconds(), wall.Seconds(), float64(p.instr)/cpu.Seconds()/1e6, float64(p.instr)/wall.Seconds()/1e6, ratio)
		}
	}
	return nil
}

// benchRun runs a command with stdin empty and returns its output and
// what it cost.
func benchRun(c []string) (out, errOut []byte, t benchTiming, err error) {
	cmd := exec.Command(c[0], c[1:]...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err = cmd.Run()
	t.wall = time.Since(start)
	if cmd.ProcessState != nil {
		t.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		err = fmt.Errorf("exit code %d", ee.ExitCode())
	}
	return o.Bytes(), e.Bytes(), t, err
}

func medianDur(ts []benchTiming, f func(benchTiming) time.Duration) time.Duration {
	v := make([]time.Duration, len(ts))
	for i, t := range ts {
		v[i] = f(t)
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
