// Command gen generates random RISC-V test programs (package rvgen),
// builds them with riscv64-linux-gnu-gcc and compares the simulator's
// output with qemu-riscv64's (or qemu-riscv32's) byte for byte.
//
// Usage:
//
//	go run ./examples/difftest/gen [-xlen 64] [-seed 1] [-n 100] [-cases 10] [-insts 200] [-ext] [-minimize]
//	go run ./examples/difftest/gen -record examples/difftest -seed 1 -n 3   # write .elf and .qemu files
//	go run ./examples/difftest/gen -S -seed 7                                # print a program's source
//
// A mismatch is reported with the differing registers; -minimize then
// shortens the failing case to the first instruction whose result differs.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rvtrace/rvtrace/internal/rvgen"
	"github.com/rvtrace/rvtrace/sim"
)

func main() {
	xlen := flag.Int("xlen", 64, "32 or 64")
	seed := flag.Uint64("seed", 1, "first program seed")
	n := flag.Int("n", 1, "number of programs (seeds seed, seed+1, ...)")
	cases := flag.Int("cases", 10, "cases per program")
	insts := flag.Int("insts", 200, "random instructions per case")
	printSrc := flag.Bool("S", false, "print the source of the first program and exit")
	record := flag.String("record", "", "write each program's ELF and qemu output to `dir` (no comparison)")
	minimize := flag.Bool("minimize", false, "shorten a failing case to the first instruction that differs")
	keep := flag.String("keep", "", "copy the sources of failing programs to `dir`")
	ext := flag.Bool("ext", false, "also generate Zbc, Zbkb, Zbkx and Zfh instructions (qemu -cpu with those extensions)")
	flag.Parse()
	if *printSrc {
		fmt.Print(rvgen.Generate(rvgen.Config{XLEN: *xlen, Seed: *seed, Cases: *cases, Insts: *insts, Ext: *ext}))
		return
	}
	cc, qemu, err := rvgen.Tools(*xlen)
	if err != nil {
		fatal(err)
	}
	tmp, err := os.MkdirTemp("", "difftest")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(tmp)
	failures := 0
	for s := *seed; s < *seed+uint64(*n); s++ {
		cfg := rvgen.Config{XLEN: *xlen, Seed: s, Cases: *cases, Insts: *insts, Ext: *ext}
		if *record != "" {
			if err := recordProgram(*record, tmp, cc, qemu, cfg); err != nil {
				fatal(err)
			}
			continue
		}
		msg, src, err := compare(tmp, cc, qemu, cfg)
		if err != nil {
			fatal(err)
		}
		if msg == "" {
			continue
		}
		failures++
		fmt.Printf("seed %d: %s", s, msg)
		if *keep != "" {
			os.MkdirAll(*keep, 0o755)
			p := filepath.Join(*keep, fmt.Sprintf("rv%d-seed%d.S", *xlen, s))
			os.WriteFile(p, []byte(src), 0o644)
			fmt.Printf("  source kept in %s\n", p)
		}
		if *minimize {
			minimizeCase(tmp, cc, qemu, cfg, msg)
		}
	}
	if *record == "" {
		fmt.Printf("RV%d: %d programs × %d cases × %d instructions: %d mismatching programs\n",
			*xlen, *n, *cases, *insts, failures)
	}
	if failures > 0 {
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "gen:", err)
	os.Exit(2)
}

// compare builds and runs one program; msg describes the first
// difference ("" when the outputs are equal).
func compare(dir, cc, qemu string, cfg rvgen.Config) (msg, src string, err error) {
	src = rvgen.Generate(cfg)
	base := filepath.Join(dir, fmt.Sprintf("p%d", cfg.Seed))
	if err := os.WriteFile(base+".S", []byte(src), 0o644); err != nil {
		return "", src, err
	}
	if err := rvgen.BuildConfig(cc, base+".S", base, cfg); err != nil {
		return "", src, err
	}
	want, wantCode, err := rvgen.QEMUConfig(qemu, base, cfg)
	if err != nil {
		return "", src, err
	}
	var got bytes.Buffer
	res, simErr := sim.RunLinuxELF(base, []string{base}, []string{}, sim.Config{Stdout: &got, Stderr: &got, MaxInstret: 50e6})
	return describe(cfg, got.Bytes(), res.ExitCode, simErr, want, wantCode), src, nil
}

// describe compares the simulator's output with qemu's.
func describe(cfg rvgen.Config, got []byte, code int, simErr error, want []byte, wantCode int) string {
	if bytes.Equal(got, want) && code == wantCode && simErr == nil {
		return ""
	}
	var sb strings.Builder
	if simErr != nil {
		fmt.Fprintf(&sb, "simulator: %v\n", simErr)
	}
	if code != wantCode {
		fmt.Fprintf(&sb, "exit code %d, qemu %d\n", code, wantCode)
	}
	gs, _ := rvgen.ParseDump(got, cfg.XLEN)
	ws, _ := rvgen.ParseDump(want, cfg.XLEN)
	for i := range ws {
		if i >= len(gs) {
			fmt.Fprintf(&sb, "case %d: no output from the simulator\n", cfg.First+i)
			break
		}
		if d := rvgen.Diff(gs[i], ws[i]); d != "" {
			fmt.Fprintf(&sb, "case %d differs:\n%s", cfg.First+i, d)
			break
		}
	}
	if len(gs) > len(ws) {
		fmt.Fprintf(&sb, "the simulator wrote %d cases, qemu %d\n", len(gs), len(ws))
	}
	if sb.Len() == 0 {
		sb.WriteString("outputs differ\n")
	}
	return sb.String()
}

// minimizeCase finds the failing case and the shortest prefix of it that
// still fails.
func minimizeCase(dir, cc, qemu string, cfg rvgen.Config, _ string) {
	for c := cfg.First; c < cfg.First+cfg.Cases; c++ {
		one := cfg
		one.First, one.Cases = c, 1
		if msg, _, err := compare(dir, cc, qemu, one); err != nil || msg == "" {
			continue
		}
		lo, hi := 0, cfg.Insts // prefix lo passes (0: assumed), hi fails
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			one.Insts = mid
			msg, _, err := compare(dir, cc, qemu, one)
			if err != nil {
				fatal(err)
			}
			if msg != "" {
				hi = mid
			} else {
				lo = mid
			}
		}
		one.Insts = hi
		msg, src, _ := compare(dir, cc, qemu, one)
		fmt.Printf("  minimized: case %d fails after %d instructions; the last one:\n%s  %s",
			c, hi, indent(rvgen.Item(src, c, hi-1)), strings.ReplaceAll(msg, "\n", "\n  "))
		fmt.Println()
		return
	}
	fmt.Println("  minimize: no single case fails on its own")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") + "\n"
}

// recordProgram writes NAME.elf and NAME.qemu (qemu's output) to dir
// (the source, which gen -S prints again, to tmp).
func recordProgram(dir, tmp, cc, qemu string, cfg rvgen.Config) error {
	base := fmt.Sprintf("rv%d-seed%d", cfg.XLEN, cfg.Seed)
	name := filepath.Join(dir, base)
	src := filepath.Join(tmp, base+".S")
	if err := os.WriteFile(src, []byte(rvgen.Generate(cfg)), 0o644); err != nil {
		return err
	}
	if err := rvgen.BuildConfig(cc, src, name+".elf", cfg); err != nil {
		return err
	}
	out, code, err := rvgen.QEMUConfig(qemu, name+".elf", cfg)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("%s.elf: qemu exit code %d", name, code)
	}
	fmt.Printf("%s.elf: %d bytes of qemu output\n", name, len(out))
	return os.WriteFile(name+".qemu", out, 0o644)
}
