package main

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// tracesysProg is a bare-metal guest with symbols to start and stop
// tracing at: some work (warm), a loop calling f from loop to done, more
// work, exit.
const tracesysProg = `
	.section .text.init
	.globl _start
_start:
	li	s3, 0
	li	s4, 0
	call	warm
loop:
	mv	a0, s4
	call	f
	add	s3, s3, a0
	addi	s4, s4, 1
	li	t0, 300
	blt	s4, t0, loop
done:
	call	warm
	la	t0, tohost
	li	t1, 1
	sd	t1, 0(t0)
1:	j	1b
f:	andi	t0, a0, 3
	beqz	t0, 2f
	slli	a0, a0, 1
	ret
2:	addi	a0, a0, 7
	ret
warm:	li	t0, 50
3:	addi	t0, t0, -1
	bnez	t0, 3b
	ret
	.section .tohost, "aw"
	.align 3
	.globl tohost, fromhost
tohost:	.dword 0
fromhost: .dword 0
`

// tracesysScript programs the trace system from the host: the sink
// (SRAM, LIMIT), the funnel and an HTM encoder with implicit return
// before the first instruction, tracing on at loop and off at done.
const tracesysScript = `# trace loop..done from the host
write ram.trRamControl trRamActive=1
LIMIT
write trRamWPLow 0
write trRamControl trRamActive=1,trRamEnable=1
write trFunnelControl trFunnelActive=1
write trFunnelControl trFunnelActive=1,trFunnelEnable=1
write trTeControl trTeActive=1
write trTeControl trTeActive=1,trTeInstMode=6,trTeFormat=FMT
write trTeInstFeatures trTeInstEnImplicitReturn=1,trTeInstImplicitReturnMode=3FEAT
write trTeControl trTeActive=1,trTeEnable=1,trTeInstMode=6,trTeFormat=FMT,trTeInstSyncMode=1,trTeInstSyncMax=0
at sym:loop write trTeControl trTeActive=1,trTeEnable=1,trTeInstTracing=1,trTeInstMode=6,trTeFormat=FMT,trTeInstSyncMode=1,trTeInstSyncMax=0
at sym:done
write trTeControl trTeActive=1,trTeInstMode=6,trTeFormat=FMT   # disable: flushes the encoder
expect trTeControl trTeEmpty=1 mask trTeEmpty=1
read trRamWPLow
at end expect ram.trRamControl trRamEnable=1 mask trRamEnable=1
`

// buildGuest assembles src into an ELF linked at 0x80000000.
func buildGuest(t *testing.T, src string) string {
	t.Helper()
	cc, err := exec.LookPath("riscv64-linux-gnu-gcc")
	if err != nil {
		t.Skip("riscv64-linux-gnu-gcc not installed (Debian: gcc-riscv64-linux-gnu)")
	}
	dir := t.TempDir()
	s := filepath.Join(dir, "prog.S")
	ld := filepath.Join(dir, "prog.ld")
	elf := filepath.Join(dir, "prog.elf")
	if err := os.WriteFile(s, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	script := "OUTPUT_ARCH(riscv)\nENTRY(_start)\nSECTIONS\n{\n  . = 0x80000000;\n  .text.init : { *(.text.init) }\n  .tohost ALIGN(0x1000) : { *(.tohost) }\n}\n"
	if err := os.WriteFile(ld, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-march=rv64gc", "-mabi=lp64d", "-nostdlib", "-nostartfiles", "-static",
		"-T", ld, "-o", elf, s).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return elf
}

// readLines returns the lines of a file.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// decodeHinted runs the "decode with:" command rvtrace run printed, with
// --pcs, and returns the decoded PCs and decode's stderr.
func decodeHinted(t *testing.T, runStderr, pcs string) ([]string, string) {
	t.Helper()
	_, hint, ok := strings.Cut(runStderr, "decode with: rvtrace ")
	if !ok {
		t.Fatalf("no decode hint in %q", runStderr)
	}
	hint, _, _ = strings.Cut(hint, "\n")
	args := append(strings.Fields(hint), "--pcs", pcs)
	code, _, e := rv(t, args...)
	if code != 0 {
		t.Fatalf("rvtrace %s: exit %d: %s", strings.Join(args, " "), code, e)
	}
	return readLines(t, pcs), e
}

// segment returns the executed PCs from the first at (a hex address
// string) up to, not including, the first until after it.
func segment(t *testing.T, pcs []string, at, until string) []string {
	t.Helper()
	for i, pc := range pcs {
		if pc != at {
			continue
		}
		for j := i; j < len(pcs); j++ {
			if pcs[j] == until {
				return pcs[i:j]
			}
		}
	}
	t.Fatalf("no %s..%s in the executed PCs", at, until)
	return nil
}

// symAddr returns a symbol's address as the PC list writes it.
func symAddr(t *testing.T, elf, name string) string {
	t.Helper()
	out, err := exec.Command("riscv64-linux-gnu-nm", elf).Output()
	if err != nil {
		t.Skipf("riscv64-linux-gnu-nm: %v", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[2] == name {
			return "0x" + strings.TrimLeft(f[0], "0")
		}
	}
	t.Fatalf("no symbol %s", name)
	return ""
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A host script enables tracing at one symbol and disables it at another;
// the capture, decoded with the command rvtrace run prints, is exactly the
// part of the executed PC list (--pcs of the same run) between them. With
// a buffer that wraps, the capture starts at its first sync and decodes to
// the end of that part, and stderr says how much was lost; with
// --trace-capture-all nothing is lost.
func TestTraceScriptCapture(t *testing.T) {
	elf := buildGuest(t, tracesysProg)
	for _, c := range []struct {
		name  string
		limit string
		all   bool
		fmt   string
	}{{"whole", "", false, "1"}, {"wrapped", "write trRamLimitLow 0x1FC", false, "1"}, {"drained", "write trRamLimitLow 0x1FC", true, "1"},
		{"etrace", "", false, "0"}, {"etrace-wrapped", "write trRamLimitLow 0x3FC", false, "0"}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			script := filepath.Join(dir, "probe.txt")
			text := strings.ReplaceAll(strings.Replace(tracesysScript, "LIMIT", c.limit, 1), "FMT", c.fmt)
			feat := ",trTeInstEnSequentialJump=1"
			if c.fmt == "0" {
				feat = "" // E-Trace with sequential jumps has a decoder problem of its own
			}
			text = strings.Replace(text, "FEAT", feat, 1)
			if err := os.WriteFile(script, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			capture, pcs := filepath.Join(dir, "cap.nex"), filepath.Join(dir, "run.pcs")
			args := []string{"run", "--trace-script", script, "--trace-capture", capture, "--pcs", pcs}
			if c.all {
				args = append(args, "--trace-capture-all")
			}
			code, _, e := rv(t, append(args, elf)...)
			if code != 0 {
				t.Fatalf("exit %d, want the program's 0: %s", code, e)
			}
			want := segment(t, readLines(t, pcs), symAddr(t, elf, "loop"), symAddr(t, elf, "done"))
			got, de := decodeHinted(t, e, filepath.Join(dir, "dec.pcs"))
			if !strings.Contains(de, " 0 gaps") {
				t.Errorf("decode reports gaps: %s", de)
			}
			wrapped := strings.Contains(e, "wrapped")
			if wrapped != (c.limit != "" && !c.all) {
				t.Errorf("wrapped message %v: %s", wrapped, e)
			}
			if wrapped {
				if !strings.Contains(e, "bytes lost in all") {
					t.Errorf("no count of the bytes lost: %s", e)
				}
				if len(got) == 0 || len(got) >= len(want) || !equalStrings(got, want[len(want)-len(got):]) {
					t.Fatalf("wrapped capture: %d instructions decoded, not the end of the %d traced", len(got), len(want))
				}
				return
			}
			if !equalStrings(got, want) {
				t.Fatalf("decoded %d instructions, executed %d from loop to done", len(got), len(want))
			}
			if !strings.Contains(e, "probe.txt:16: at sym:done") {
				t.Errorf("the read at line 16 is not reported: %s", e)
			}
		})
	}
}

// Script errors name the file and line, and fail the run before it starts.
func TestTraceScriptErrors(t *testing.T) {
	elf := buildGuest(t, tracesysProg)
	dir := t.TempDir()
	for _, c := range []struct{ script, want string }{
		{"write trRamControl 1\nwrite trTeNoSuch 1\n", "bad.txt:2: no register \"trTeNoSuch\""},
		{"write trTsControl 1\n", "bad.txt:1: register \"trTsControl\": in which component?"},
		{"at sym:nosuch read trTeControl\n", "bad.txt:1: sym:nosuch: no symbol"},
		{"write trTeControl trTeBogus=1\n", "bad.txt:1: trTeControl has no field \"trTeBogus\""},
		{"read trTeControl 3\n", "bad.txt:1: read: want"},
		{"at end\nat 5 read trTeControl\n", "bad.txt:2: only \"at end\" can follow"},
		{"at 10 expect trTeControl 1\n", "bad.txt:1: at 10 (instruction 10): expect trTeControl"},
	} {
		bad := filepath.Join(dir, "bad.txt")
		if err := os.WriteFile(bad, []byte(c.script), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, e := rv(t, "run", "--trace-script", bad, elf)
		if code == 0 || !strings.Contains(e, c.want) {
			t.Errorf("script %q: exit %d, stderr %q; want an error with %q", c.script, code, e, c.want)
		}
	}
}

// examples/trace-self programs the trace system itself (discovery through
// tr??Impl, SMEM sink, HTM with implicit return and a range filter on
// work) and prints the bytes captured; rvtrace run --trace-capture writes
// exactly those bytes, and they decode to exactly the executed
// instructions inside work (--pcs of the same run).
//
// trace-self-s.elf does the same from S-mode, under the simulator's SBI
// (--machine sbi) and under OpenSBI (--machine virt, where the trace
// system is on by default).
func TestTraceSelfExample(t *testing.T) {
	for _, c := range []struct {
		elf  string
		args []string
	}{{"trace-self.elf", nil}, {"trace-self-s.elf", []string{"--machine", "sbi"}}, {"trace-self-s.elf", []string{"--machine", "virt"}}} {
		t.Run(c.elf+strings.Join(c.args, ""), func(t *testing.T) {
			if len(c.args) > 0 && c.args[1] == "virt" {
				if _, err := os.Stat(defaultOpenSBI); err != nil {
					t.Skipf("no OpenSBI firmware (%v)", err)
				}
			}
			testTraceSelf(t, filepath.Join("..", "..", "examples", "trace-self", c.elf), c.args)
		})
	}
}

func testTraceSelf(t *testing.T, elfPath string, extra []string) {
	f, err := elf.Open(elfPath)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var lo, hi uint64
	for _, s := range syms {
		switch s.Name {
		case "__work_start":
			lo = s.Value
		case "__work_end":
			hi = s.Value
		}
	}
	if lo == 0 || hi <= lo {
		t.Fatalf("work range %#x..%#x", lo, hi)
	}
	dir := t.TempDir()
	capture, pcs := filepath.Join(dir, "self.nex"), filepath.Join(dir, "self.pcs")
	code, out, e := rv(t, append(append([]string{"run"}, extra...), "--trace-capture", capture, "--pcs", pcs, elfPath)...)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, e)
	}
	for _, want := range []string{"trace encoder at 0x3000000, version 1.0", "trace funnel at 0x3018000, version 1.0", "trace RAM sink at 0x3019000, version 1.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("the guest did not discover %q: %s", want, out)
		}
	}
	b, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("captured %d bytes of trace", len(b)); !strings.Contains(out, want) {
		t.Errorf("the guest says %q, the capture has %d bytes", out, len(b))
	}
	var inWork []string
	for _, l := range readLines(t, pcs) {
		if pc, err := strconv.ParseUint(l, 0, 64); err == nil && pc >= lo && pc < hi {
			inWork = append(inWork, l)
		}
	}
	got, de := decodeHinted(t, e, filepath.Join(dir, "dec.pcs"))
	if !strings.Contains(de, " 0 gaps") {
		t.Errorf("decode reports gaps: %s", de)
	}
	if len(inWork) == 0 || !equalStrings(got, inWork) {
		t.Errorf("decoded %d instructions; %d executed in work", len(got), len(inWork))
	}
}

// The README's host-probe example: examples/trace-self/probe.txt traces
// fib of the demo program from its first call to the next call of puts_.
func TestTraceProbeExample(t *testing.T) {
	demo := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	capture, pcs := filepath.Join(dir, "fib.nex"), filepath.Join(dir, "demo.pcs")
	code, _, e := rv(t, "run", "--trace-script", filepath.Join("..", "..", "examples", "trace-self", "probe.txt"),
		"--trace-capture", capture, "--pcs", pcs, demo)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	f, err := elf.Open(demo)
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := f.Symbols()
	f.Close()
	addr := map[string]string{}
	for _, s := range syms {
		addr[s.Name] = fmt.Sprintf("%#x", s.Value)
	}
	want := segment(t, readLines(t, pcs), addr["fib"], addr["puts_"])
	got, de := decodeHinted(t, e, filepath.Join(dir, "fib.pcs"))
	if !strings.Contains(de, " 0 gaps") || !equalStrings(got, want) {
		t.Errorf("decoded %d instructions, %d executed from fib to puts_: %s", len(got), len(want), de)
	}
}

// --trace-base moves the components: the script's register names follow
// them, and nothing answers at the default address any more.
func TestTraceBase(t *testing.T) {
	elf := buildGuest(t, tracesysProg)
	dir := t.TempDir()
	script := filepath.Join(dir, "probe.txt")
	text := strings.ReplaceAll(strings.Replace(tracesysScript, "LIMIT", "", 1), "FMT", "1")
	text = strings.Replace(text, "FEAT", "", 1)
	if err := os.WriteFile(script, []byte(text+"at end read 0x4019000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	capture, pcs := filepath.Join(dir, "cap.nex"), filepath.Join(dir, "run.pcs")
	code, _, e := rv(t, "run", "--trace-base", "0x4000000", "--trace-script", script, "--trace-capture", capture, "--pcs", pcs, elf)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	if !strings.Contains(e, "trRamWPLow (0x4019020)") || !strings.Contains(e, "0x4019000 (0x4019000) = 0x0000000b") {
		t.Errorf("the registers are not at the new base: %s", e)
	}
	want := segment(t, readLines(t, pcs), symAddr(t, elf, "loop"), symAddr(t, elf, "done"))
	if got, _ := decodeHinted(t, e, filepath.Join(dir, "dec.pcs")); !equalStrings(got, want) {
		t.Errorf("decoded %d instructions, executed %d from loop to done", len(got), len(want))
	}
	if err := os.WriteFile(script, []byte("read 0x3000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, e = rv(t, "run", "--trace-base", "0x4000000", "--trace-script", script, elf)
	if code == 0 || !strings.Contains(e, "probe.txt:1: no trace register at 0x3000000") {
		t.Errorf("a register answers at the default address: exit %d, %s", code, e)
	}
	code, _, e = rv(t, "run", "--trace-base", "0x4000800", elf)
	if code == 0 || !strings.Contains(e, "--trace-base") {
		t.Errorf("an unaligned base: exit %d, %s", code, e)
	}
	code, _, e = rv(t, "run", "--trace-base", "0x80000000", elf)
	if code == 0 || !strings.Contains(e, "overlap memory at 0x80000000") {
		t.Errorf("a base in RAM: exit %d, %s", code, e)
	}
	code, _, e = rv(t, "run", "--trace-base", "0x1ff0000", elf)
	if code == 0 || !strings.Contains(e, "overlap the CLINT") {
		t.Errorf("a base over the CLINT: exit %d, %s", code, e)
	}
}
