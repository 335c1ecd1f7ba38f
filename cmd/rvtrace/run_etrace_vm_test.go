package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/corpus"
)

// traceModes are the trace configurations the live-trace round trips
// below run, each given to run and to decode alike: E-Trace in its
// default mode, with branch prediction (format 0 branch counts), in the
// 0.026 layout, with a 3-bit itype port (a --config file) and with every
// optional mode; N-Trace as the control.
func traceModes(t *testing.T, dir string) [][]string {
	t.Helper()
	cfg := filepath.Join(dir, "itype3.cfg")
	if err := os.WriteFile(cfg, []byte("itype_width_p = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return [][]string{
		{"etrace"},
		{"etrace", "--branch-prediction"},
		{"etrace", "--etrace-version", "0.026"},
		{"etrace", "--config", cfg},
		{"etrace", "--all-modes"},
		{"ntrace"},
		{"ntrace", "--preset", "best"},
	}
}

// roundTrip runs prog traced live with mode (run's extra arguments
// before it) and a sideband, decodes the trace with the sideband alone
// and compares the decoded PCs with the ones the simulator retired. It
// returns decode's stderr when the decode failed, for the caller to
// judge, and "" when the PCs are exactly the simulator's with no gap.
func roundTrip(t *testing.T, dir string, mode, extra []string, prog string, runCode int) string {
	t.Helper()
	tr, sb := filepath.Join(dir, "t.trace"), filepath.Join(dir, "t.side")
	runPCs, decPCs := filepath.Join(dir, "run.pcs"), filepath.Join(dir, "dec.pcs")
	args := append([]string{"run", "-q", "--trace"}, mode...)
	args = append(args, extra...)
	args = append(args, "-o", tr, "--sideband", sb, "--pcs", runPCs, prog)
	if code, _, e := rv(t, args...); code != runCode {
		t.Fatalf("%s: exit %d (want %d): %s", strings.Join(args, " "), code, runCode, e)
	}
	dec := append([]string{"decode", "--protocol"}, mode...)
	dec = append(dec, "--sideband-in", sb, tr, "--pcs", decPCs)
	code, _, e := rv(t, dec...)
	if code != 0 {
		return e
	}
	if !strings.Contains(e, " 0 gaps") {
		t.Fatalf("%s: %s", strings.Join(dec, " "), e)
	}
	a, err := os.ReadFile(runPCs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(decPCs)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("%s: decoded %d PCs, the simulator retired %d (or they differ)", strings.Join(dec, " "),
			bytes.Count(b, []byte("\n")), bytes.Count(a, []byte("\n")))
	}
	return ""
}

// TestRunETraceVirtual traces programs that run at virtual addresses
// (Sv32, Sv39, Svpbmt and the Sv39 benchmark, the last bounded) live in
// every E-Trace mode and N-Trace: decoded with the sideband the run
// wrote, each trace gives exactly the PCs the simulator retired, with no
// gap. The E-Trace encoder follows the ingress port, not the ELF's image
// (which has no code at the virtual addresses: the run failed with
// "image: run at 0xc0002000: unmapped"). The trace system's encoder
// (--trace-system, E-Trace captured from the RAM sink) does the same.
func TestRunETraceVirtual(t *testing.T) {
	dir := t.TempDir()
	vm := filepath.Join("..", "..", "examples", "sim-tests", "vm")
	for _, p := range []struct {
		elf   string
		extra []string
		code  int
	}{
		{filepath.Join(vm, "sv32.elf"), nil, 0},
		{filepath.Join(vm, "sv39.elf"), nil, 0},
		{filepath.Join(vm, "svpbmt.elf"), nil, 0},
		{filepath.Join("..", "..", "examples", "bench", "sv39bench.elf"), []string{"--max-instret", "300000"}, 1},
	} {
		for _, mode := range traceModes(t, dir) {
			t.Run(filepath.Base(p.elf)+"/"+strings.Join(mode, " "), func(t *testing.T) {
				e := roundTrip(t, dir, mode, p.extra, p.elf, p.code)
				if e == "" {
					return
				}
				t.Fatalf("decode: %s", e)
			})
		}
	}
	t.Run("trace-system", func(t *testing.T) {
		capture := filepath.Join(dir, "capture.te")
		sb, runPCs, decPCs := filepath.Join(dir, "ts.side"), filepath.Join(dir, "ts.pcs"), filepath.Join(dir, "tsdec.pcs")
		elf := filepath.Join(vm, "sv39.elf")
		code, _, e := rv(t, "run", "-q", "--trace-system", "--trace", "etrace", "--encap", "utdd", "--trace-capture", capture,
			"--sideband", sb, "--pcs", runPCs, elf)
		if code != 0 {
			t.Fatalf("run: exit %d: %s", code, e)
		}
		if code, _, e := rv(t, "decode", "--protocol", "etrace", "--encap", "utdd", "--sideband-in", sb, capture, "--pcs", decPCs); code != 0 {
			t.Fatalf("decode: exit %d: %s", code, e)
		}
		a, _ := os.ReadFile(runPCs)
		b, _ := os.ReadFile(decPCs)
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("decoded %d bytes of PCs, the simulator retired %d", len(b), len(a))
		}
		// the command the run printed names the sideband, not the ELF
		// (which has no code at the addresses the program ran at)
		got, de := decodeHinted(t, e, filepath.Join(dir, "hinted.pcs"))
		if !strings.Contains(e, "--sideband-in "+sb) || !strings.Contains(de, " 0 gaps") || !bytes.Equal([]byte(strings.Join(got, "\n")+"\n"), a) {
			t.Errorf("the printed decode command: %d PCs: %s%s", len(got), e, de)
		}
	})
}

// TestRunETraceProxyKernel traces the corpus's proxy kernel (bbl with
// pk, which maps itself at 0xffffffc000000000 and, given no program to
// load, exits with -1) live in every E-Trace mode and N-Trace, with a
// sideband matching the pages run against the ELF (map records, where
// the sv*.elf programs above give bytes records): each trace decodes to
// exactly the PCs the simulator retired. (The run failed with "image:
// run at 0xffffffc0000002e8: unmapped".)
func TestRunETraceProxyKernel(t *testing.T) {
	pk := corpus.Path(t, "ntrace-refcode/elf/pk.riscv")
	dir := t.TempDir()
	for _, mode := range traceModes(t, dir) {
		t.Run(strings.Join(mode, " "), func(t *testing.T) {
			if e := roundTrip(t, dir, mode, []string{"--max-instret", "1000000", "--image", pk}, pk, -1); e != "" {
				t.Fatalf("decode: %s", e)
			}
			if sb, err := os.ReadFile(filepath.Join(dir, "t.side")); err != nil || !bytes.Contains(sb, []byte(" 0xffffffc000000000 0xffffffc000001000 0x0 0x1000 ")) {
				t.Fatalf("the sideband does not map 0xffffffc000000000 to pk at offset 0x1000 (%v):\n%.500s", err, sb)
			}
		})
	}
}

// TestRunETraceSelfModifying traces live a program that overwrites a
// branch it has run with a nop and runs it again: decoded with the
// sideband (which holds the page's new bytes from the write on), each
// trace gives exactly the PCs the simulator retired. An encoder
// following the ELF's image would find the branch inside the block that
// now runs through the nop, and count a branch the hart never retired.
func TestRunETraceSelfModifying(t *testing.T) {
	dir := t.TempDir()
	elf := tinyELF(t, 64, 0x80000000, []uint32{
		0x00000297, // auipc t0,0
		0x00000593, // li a1,0
		0x00b59263, // target: bne a1,a1,next (never taken; patched into nop)
		0x00158593, // next: addi a1,a1,1
		0x0242a303, // lw t1,36(t0) (the nop below)
		0x0062a423, // sw t1,8(t0) (the patch)
		0x00200393, // li t2,2
		0xfe75c6e3, // blt a1,t2,target
		0x0000006f, // j .
		0x00000013, // nop
	}, false)
	for _, mode := range traceModes(t, dir) {
		t.Run(strings.Join(mode, " "), func(t *testing.T) {
			// (the program ends spinning in j .: exit 1)
			if e := roundTrip(t, dir, mode, []string{"--max-instret", "1000"}, elf, 1); e != "" {
				t.Fatalf("decode: %s", e)
			}
		})
	}
}

// TestRunETraceLinuxBoot traces the first 50 M instructions of the
// kit's Linux booting (OpenSBI, then the kernel at its virtual
// addresses) live in every E-Trace mode and N-Trace, with a sideband
// matching the pages run against the kernel Image: decoded with the
// sideband alone, each trace gives exactly the PCs the simulator
// retired (compared by SHA-256 through named pipes).
func TestRunETraceLinuxBoot(t *testing.T) {
	if testing.Short() {
		t.Skip("traces 50 M instructions of a Linux boot in 7 configurations")
	}
	kit := linuxKitDir(t)
	dir := t.TempDir()
	kernel := filepath.Join(kit, "Image")
	for i, mode := range traceModes(t, dir) {
		name := strings.ReplaceAll(strings.Join(mode, "_"), "/", "_")
		tr, sb := filepath.Join(dir, "boot.trace"), filepath.Join(dir, "boot.side")
		fifo, wait := pcHash(t, dir, name+"-run.pcs")
		args := append([]string{"run", "-q", "--machine", "virt", "--kernel", kernel, "--initrd", filepath.Join(kit, "initramfs-busybox.cpio.gz"),
			"--append", "console=ttyS0 rdinit=/init quiet", "--max-instret", "50000000", "--trace"}, mode...)
		args = append(args, "-o", tr, "--sideband", sb, "--image", kernel, "--pcs", fifo)
		code, _, e := rv(t, args...)
		sum, n := wait()
		if code != 1 || !strings.Contains(e, "instruction limit 50000000 reached") {
			t.Fatalf("%s: run: exit %d: %s", mode, code, e)
		}
		dec := append([]string{"decode", "--protocol"}, mode...)
		if mode[0] == "etrace" {
			dec = append(dec, "--context") // (run --kernel traces the ASID)
		}
		fifo2, wait2 := pcHash(t, dir, name+"-dec.pcs")
		code, _, e = rv(t, append(dec, "--sideband-in", sb, tr, "--pcs", fifo2)...)
		dsum, dn := wait2()
		if code != 0 || !strings.Contains(e, " 0 gaps") {
			t.Fatalf("%s: decode: exit %d: %s", mode, code, e)
		}
		if n != 50000000 || dsum != sum || dn != n {
			t.Fatalf("%s: decoded %d instructions (%s), the simulator ran %d (%s)", mode, dn, dsum, n, sum)
		}
		if i == 0 {
			t.Logf("%s: %d instructions decoded exactly", mode, n)
		}
	}
}

// TestRunTableJumpsTraceSystem traces the Zcmt program
// (examples/sim-tests/zcmp, RV32 and RV64) through the trace system's
// encoder, E-Trace and N-Trace: the port reports cm.jt and cm.jalt as
// direct jumps and calls (N-Trace's itype table); E-Trace reports them
// as uninferable from the bytes the hart ran (tableJumps), N-Trace as
// the port does, and each capture decodes to exactly the PCs the
// simulator retired (TestCLIZcmp does the same for run --trace).
func TestRunTableJumpsTraceSystem(t *testing.T) {
	dir := t.TempDir()
	for _, xlen := range []string{"32", "64"} {
		elf := filepath.Join("..", "..", "examples", "sim-tests", "zcmp", "zcmp"+xlen+".elf")
		for _, mode := range [][]string{{"etrace", "--encap", "utdd"}, {"etrace", "--encap", "utdd", "--all-modes"}, {"ntrace"}} {
			capture, runPCs, decPCs := filepath.Join(dir, "c.trace"), filepath.Join(dir, "run.pcs"), filepath.Join(dir, "dec.pcs")
			args := append([]string{"run", "-q", "--max-instret", "100000", "--trace-system", "--trace"}, mode...)
			if code, _, e := rv(t, append(args, "--trace-capture", capture, "--pcs", runPCs, elf)...); code != 0 {
				t.Fatalf("RV%s %s: run: exit %d: %s", xlen, mode, code, e)
			}
			dec := append([]string{"decode", "--protocol"}, mode...)
			if mode[0] == "ntrace" {
				dec = append(dec, "--encoder", "rvtrace")
			}
			if code, _, e := rv(t, append(dec, "--image", elf, capture, "--pcs", decPCs)...); code != 0 {
				t.Fatalf("RV%s %s: decode: exit %d: %s", xlen, mode, code, e)
			}
			a, _ := os.ReadFile(runPCs)
			b, _ := os.ReadFile(decPCs)
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Errorf("RV%s %s: decoded %d bytes of PCs, the simulator retired %d", xlen, mode, len(b), len(a))
			}
		}
	}
}

// TestRunDataSelfModifying traces live, with data trace, a program that
// runs a store (one access), overwrites it with a cbo.zero (eight
// accesses, retired once per access on the data trace interface) and
// runs that: the encoder's folder counts the accesses of the instruction
// the hart ran, not of the ELF's, so the trace decodes with the sideband
// (instruction trace: the data packets are skipped) to exactly the PCs
// the simulator retired, without a gap. Counted from the ELF (a store), the
// cbo.zero's eight retirements reached the encoder as eight executions
// and the decode had gaps and instructions the hart never ran.
func TestRunDataSelfModifying(t *testing.T) {
	dir := t.TempDir()
	elf := tinyELF(t, 64, 0x80000000, []uint32{
		0x00000297, // auipc t0,0
		0x00000593, // li a1,0
		0xf0028613, // addi a2,t0,-256 (a 64-byte block below the code)
		0x00062023, // X: sw zero,0(a2) (patched into cbo.zero 0(a2))
		0x00158593, // addi a1,a1,1
		0x0282a303, // lw t1,40(t0) (the cbo.zero below)
		0x0062a623, // sw t1,12(t0) (the patch)
		0x00300393, // li t2,3
		0xfe75c6e3, // blt a1,t2,X
		0x0000006f, // j .
		0x0046200f, // cbo.zero 0(a2)
	}, false)
	p := func(n string) string { return filepath.Join(dir, n) }
	run := []string{"run", "-q", "--trace", "etrace", "--data-trace", "--max-instret", "100", "--sideband", p("t.side"), "--pcs", p("run.pcs"), "-o", p("t.te"), elf}
	if code, _, e := rv(t, run...); code != 1 {
		t.Fatalf("run: exit %d (want 1: the program ends spinning): %s", code, e)
	}
	code, _, e := rv(t, "decode", "--protocol", "etrace", "--sideband-in", p("t.side"), p("t.te"), "--pcs", p("dec.pcs"))
	want, got := readLines(t, p("run.pcs")), hexPCs(readLines(t, p("dec.pcs")))
	if code != 0 || !strings.Contains(e, " 0 gaps") || len(want) != 100 || !equalStrings(got, want) {
		t.Errorf("decode: exit %d, %d PCs, the simulator retired %d: %s", code, len(got), len(want), e)
	}
}
