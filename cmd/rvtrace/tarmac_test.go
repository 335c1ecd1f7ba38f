package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/internal/corpus"
)

// recordRows parses the table of 'rvtrace tarmac --records': tag and kind
// to records.
func recordRows(t *testing.T, out string) map[string]int {
	t.Helper()
	rows := map[string]int{}
	for i, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if i == 0 {
			if strings.Join(f, " ") != "tag kind records" {
				t.Fatalf("header %q", l)
			}
			continue
		}
		n, err := strconv.Atoi(f[2])
		if len(f) != 3 || err != nil {
			t.Fatalf("row %q", l)
		}
		rows[f[0]+" "+f[1]] += n
	}
	return rows
}

func grepLines(t *testing.T, path, pat string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return len(regexp.MustCompile(`(?m)`+pat).FindAll(b, -1))
}

// TestCLITarmacRecords checks that --records reports each record under its
// own kind: the ES tag holds instructions and "ES EXC" events, counted
// apart, as grep counts them.
func TestCLITarmacRecords(t *testing.T) {
	path := corpus.Path(t, "tarmac/calculator-aarch32-es-ld-st-style.tarmac")
	code, out, errOut := rv(t, "tarmac", "--records", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := recordRows(t, out)
	want := map[string]int{
		"ES inst":      grepLines(t, path, `^ +\d+ tic +ES +\([0-9a-f]+:[0-9a-f]+\) `),
		"ES event":     grepLines(t, path, `^ +\d+ tic +ES +EXC `),
		"LD mem":       grepLines(t, path, `^ +LD [0-9a-f]+ `),
		"ST mem":       grepLines(t, path, `^ +ST [0-9a-f]+ `),
		"R reg":        grepLines(t, path, `^ +R [A-Za-z]`),
		"BR flow":      grepLines(t, path, `^ +BR \(`),
		"Tarmac other": grepLines(t, path, `^Tarmac Text`),
	}
	if len(rows) != len(want) {
		t.Errorf("rows %v, want %v", rows, want)
	}
	for k, n := range want {
		if n == 0 || rows[k] != n {
			t.Errorf("%s: %d records, grep counts %d", k, rows[k], n)
		}
	}
	// An aborted access is a memory record.
	crash := corpus.Path(t, "tarmac/truncate/crash32.tarmac")
	_, out, _ = rv(t, "tarmac", "--records", crash)
	if n := grepLines(t, crash, ` MR4 `); n == 0 || recordRows(t, out)["MR4 mem"] != n {
		t.Errorf("crash32 MR4 records: %v, grep counts %d", recordRows(t, out), n)
	}
}

// TestCLITarmacLenient puts a garbage line into a real trace: without
// --lenient the command fails naming FILE:LINE; with it, it goes on,
// reports the count and the lines on stderr and exits with 3 (lines were
// skipped), for both the decode and --records.
func TestCLITarmacLenient(t *testing.T) {
	src, err := os.ReadFile(corpus.Path(t, "tarmac/calltest64.tarmac"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(src), "\n")
	bad := strings.Join(lines[:199], "") + "garbage here\n" + strings.Join(lines[199:], "") + "R X0 zz\n"
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.tarmac")
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	lastLine := len(lines) + 1
	if lines[len(lines)-1] != "" {
		lastLine++
	}
	for _, extra := range [][]string{nil, {"--records"}} {
		args := append([]string{"tarmac"}, extra...)
		code, _, errOut := rv(t, append(args, path)...)
		if code == 0 || !strings.Contains(errOut, path+":200: ") {
			t.Errorf("%v strict: exit %d, stderr %q", extra, code, errOut)
		}
		code, _, errOut = rv(t, append(args, "--lenient", path)...)
		if code != 3 || !strings.Contains(errOut, "2 malformed lines skipped") ||
			!strings.Contains(errOut, path+":200: ") || !strings.Contains(errOut, path+":"+strconv.Itoa(lastLine)+": ") {
			t.Errorf("%v lenient: exit %d, stderr %q", extra, code, errOut)
		}
	}
}

// TestCLITarmacTimestamps decodes an N-Trace trace encoded with
// timestamps to Tarmac: every record carries the time of the last
// timestamp decoded before it (none is left at 0), so the times of the
// records, in order, are exactly the decoded timestamps (--jsonl time
// events) that records follow, and they increase; and every timestamp is a time of the simulator's
// clock at which a block was retired (the --ingress CSV of the same run).
func TestCLITarmacTimestamps(t *testing.T) {
	elf := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	nex, csv := filepath.Join(dir, "t.nex"), filepath.Join(dir, "t.csv")
	if code, _, e := rv(t, "run", "--trace", "ntrace", "--timestamps", "-o", nex, "--ingress", csv, elf); code != 0 {
		t.Fatalf("run: exit %d: %s", code, e)
	}
	tm, js := filepath.Join(dir, "t.tarmac"), filepath.Join(dir, "t.jsonl")
	if code, _, e := rv(t, "decode", "--image", elf, nex, "--tarmac", tm, "--jsonl", js); code != 0 {
		t.Fatalf("decode: exit %d: %s", code, e)
	}
	// the simulator's block times
	data, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(data)), "\n")
	col := -1
	for i, h := range strings.Split(rows[0], ",") {
		if h == "time" {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("no time column in %q", rows[0])
	}
	simTimes := map[uint64]bool{}
	for _, r := range rows[1:] {
		v, err := strconv.ParseUint(strings.Split(r, ",")[col], 16, 64) // hex, as the CSV writes every number
		if err != nil {
			t.Fatalf("ingress row %q: %v", r, err)
		}
		simTimes[v] = true
	}
	// the decoded timestamps
	data, err = os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	// A timestamp counts when a record follows it (an instruction, a trap
	// or a gap) before the next one: the last one, at the end of the
	// trace, has none.
	var decoded []uint64
	pending, hasPending := uint64(0), false
	timeRe := regexp.MustCompile(`^\{"kind":"time","time":(\d+),`)
	for _, l := range strings.Split(string(data), "\n") {
		if m := timeRe.FindStringSubmatch(l); m != nil {
			v, _ := strconv.ParseUint(m[1], 10, 64)
			if !simTimes[v] {
				t.Errorf("decoded timestamp %d is no block time of the run", v)
			}
			pending, hasPending = v, true
		} else if hasPending && (strings.HasPrefix(l, `{"kind":"range"`) || strings.HasPrefix(l, `{"kind":"trap"`) ||
			strings.HasPrefix(l, `{"kind":"gap"`)) {
			decoded = append(decoded, pending)
			hasPending = false
		}
	}
	if len(decoded) < 10 {
		t.Fatalf("%d timestamps decoded, want many", len(decoded))
	}
	// the Tarmac times
	data, err = os.ReadFile(tm)
	if err != nil {
		t.Fatal(err)
	}
	var times []uint64
	lines := 0
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || f[1] != "clk" {
			t.Fatalf("Tarmac line %q: no time", l)
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || v == 0 {
			t.Fatalf("Tarmac line %q: time %q", l, f[0])
		}
		lines++
		if len(times) == 0 || times[len(times)-1] != v {
			if len(times) > 0 && v < times[len(times)-1] {
				t.Fatalf("Tarmac line %q: time goes back from %d", l, times[len(times)-1])
			}
			times = append(times, v)
		}
	}
	if len(times) != len(decoded) {
		t.Fatalf("Tarmac has %d distinct times over %d lines, the trace %d timestamps", len(times), lines, len(decoded))
	}
	for i := range times {
		if times[i] != decoded[i] {
			t.Fatalf("Tarmac time #%d is %d, decoded timestamp %d", i, times[i], decoded[i])
		}
	}
}

// TestCLITarmacPrivilege decodes N-Trace traces of the M-mode demo to
// Tarmac: without Ownership messages (no --context) the trace never
// states the privilege, so every instruction record's mode is "-"
// (unknown), never a guessed U; with them, it is M, the simulator's
// privilege (the --tarmac-full of the run says M for every instruction).
// The "-" file reads back as a flow without privilege, and converting it
// to ingress blocks is refused with the line.
func TestCLITarmacPrivilege(t *testing.T) {
	elf := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	full := filepath.Join(dir, "full.tarmac")
	modes := func(path string) map[string]int {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for _, l := range strings.Split(string(data), "\n") {
			f := strings.Fields(l)
			if len(f) > 9 && f[3] == "IT" {
				m[f[8]]++
			}
		}
		return m
	}
	for _, c := range []struct {
		extra []string
		want  string
	}{{nil, "-"}, {[]string{"--context"}, "M"}} {
		nex, tm := filepath.Join(dir, "t.nex"), filepath.Join(dir, "t.tarmac")
		args := append([]string{"run", "-q", "--trace", "ntrace", "-o", nex, "--tarmac-full", full}, c.extra...)
		if code, _, e := rv(t, append(args, elf)...); code != 0 {
			t.Fatalf("run %v: exit %d: %s", c.extra, code, e)
		}
		if m := modes(full); len(m) != 1 || m["M"] == 0 {
			t.Fatalf("simulator's modes %v, want M only", m)
		}
		if code, _, e := rv(t, "decode", "--image", elf, nex, "--tarmac", tm); code != 0 {
			t.Fatalf("decode: exit %d: %s", code, e)
		}
		if m := modes(tm); len(m) != 1 || m[c.want] != modes(full)["M"] {
			t.Errorf("%v: decoded modes %v, want %d records of %s", c.extra, m, modes(full)["M"], c.want)
		}
		if c.want != "-" {
			continue
		}
		// read back: a flow without privilege (--priv selects nothing
		// of unknown privilege), and no ingress blocks
		code, _, e := rv(t, "tarmac", "--image", elf, tm, "--priv", "M")
		if code != 0 || !strings.Contains(e, "unknown privilege") && !strings.Contains(e, "0 instructions") {
			t.Errorf("tarmac --priv M of a '-' file: exit %d, %q", code, e)
		}
		code, _, e = rv(t, "tarmac", "--image", elf, tm, "--blocks", filepath.Join(dir, "b.csv"))
		if code == 0 || !strings.Contains(e, "privilege unknown") || !strings.Contains(e, "line ") {
			t.Errorf("tarmac --blocks of a '-' file: exit %d, %q", code, e)
		}
	}
}

// privModeProg runs in M, S and U mode, each in code of its own between
// symbols, so that the address of an instruction tells the privilege it
// executes in: M makes its timer interrupt pending and drops to S with
// mret, where the interrupt is taken at once (at the target of the trap
// return, before any S-mode instruction); S then traps with an ecall,
// drops to U with sret onto another ecall, and U loops on two ecalls. M's
// handler disables the timer interrupt, or steps over each ecall, and
// returns with mret to where it came from; after 8 ecalls it ends the
// run.
const privModeProg = `
	.section .text.init
	.globl _start
_start:
	li	t0, -1
	csrw	pmpaddr0, t0
	li	t0, 0x1f
	csrw	pmpcfg0, t0
	la	t0, mhandler
	csrw	mtvec, t0
	li	t1, 0x2004000
	sd	zero, 0(t1)
	li	t0, 0x80
	csrs	mie, t0
	li	s0, 0
	la	t0, scode
	csrw	mepc, t0
	li	t0, 0x1800
	csrc	mstatus, t0
	li	t0, 0x0800
	csrs	mstatus, t0
	mret
	.globl scode
scode:
	ecall
	la	t0, ucode
	csrw	sepc, t0
	li	t0, 0x100
	csrc	sstatus, t0
	sret
	.globl ucode
ucode:
	ecall
	addi	a1, a1, 1
	ecall
	j	ucode
	.align 2
	.globl mhandler
mhandler:
	csrr	t0, mcause
	bgez	t0, 1f
	li	t0, 0x80
	csrc	mie, t0
	mret
1:	addi	s0, s0, 1
	li	t0, 8
	beq	s0, t0, done
	csrr	t0, mepc
	addi	t0, t0, 4
	csrw	mepc, t0
	mret
done:
	la	t0, tohost
	li	t1, 1
	sd	t1, 0(t0)
1:	j	1b
	.section .tohost, "aw"
	.align 3
	.globl tohost, fromhost
tohost:	.dword 0
fromhost: .dword 0
`

// tarmacModes returns "addr mode" for each IT record and "E epc mode desc"
// for each E record of a Tarmac file.
func tarmacModes(t *testing.T, path string) (its, es []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 8 && f[3] == "IT":
			its = append(its, f[5]+" "+f[8])
		case len(f) > 6 && f[3] == "E":
			es = append(es, f[4]+" "+f[5]+" "+f[len(f)-1])
		}
	}
	return its, es
}

// TestCLITarmacModeAcrossPrivileges checks the mode field of Tarmac
// records at every privilege change against the program's layout (the
// privilege each code range runs in): every instruction record of the
// simulator's full Tarmac (--tarmac-full) has the mode the instruction
// executed in (mret and sret that of the code they are in, not the one
// they return to; a handler's first instruction M), and every event
// record the mode the trap was taken from, also where the trap is at the
// target of a trap return. The Tarmac of the run's flow (--tarmac), the
// Tarmac decoded from the run's N-Trace with Ownership messages
// (--context), and the Tarmac decoded from an E-Trace of the same run in
// the default mode and with every optional mode (--all-modes: implicit
// return, sequentially inferable jumps, implicit exception...) agree with
// it on the address and mode of every record, the first instructions
// after each mret and sret included (E-Trace states the privilege in the
// sync packet reporting the first of them); the decoded N-Trace, whose
// trace carries no cause, says Exception_Unknown, the decoded E-Trace
// gives the cause the run's --tarmac gives.
func TestCLITarmacModeAcrossPrivileges(t *testing.T) {
	elf := buildGuest(t, privModeProg)
	img := image.NewSet()
	if err := img.AddELF(elf); err != nil {
		t.Fatal(err)
	}
	sym := func(name string) uint64 {
		for _, s := range img.Symbols() {
			if s.Name == name {
				return s.Addr
			}
		}
		t.Fatalf("no symbol %s", name)
		return 0
	}
	scode, ucode, mhandler := sym("scode"), sym("ucode"), sym("mhandler")
	modeAt := func(addr string) string {
		a, err := strconv.ParseUint(addr, 16, 64)
		if err != nil {
			t.Fatalf("address %q: %v", addr, err)
		}
		switch {
		case a >= scode && a < ucode:
			return "S"
		case a >= ucode && a < mhandler:
			return "U"
		}
		return "M"
	}
	dir := t.TempDir()
	full, flowT, nex, dec := filepath.Join(dir, "full.tarmac"), filepath.Join(dir, "flow.tarmac"),
		filepath.Join(dir, "t.nex"), filepath.Join(dir, "dec.tarmac")
	if code, _, e := rv(t, "run", "-q", "--max-instret", "10000", "--tarmac-full", full, "--tarmac", flowT,
		"--trace", "ntrace", "--context", "-o", nex, elf); code != 0 {
		t.Fatalf("run: exit %d: %s", code, e)
	}
	if code, _, e := rv(t, "decode", "--protocol", "ntrace", "--context", "--image", elf, nex, "--tarmac", dec); code != 0 {
		t.Fatalf("decode: exit %d: %s", code, e)
	}
	type output struct {
		name, path   string
		unknownCause bool // a decoded trace that carries no cause
	}
	outs := []output{{"--tarmac", flowT, false}, {"decode --tarmac", dec, true}}
	for _, mode := range []string{"--implicit-exception=false", "--all-modes"} {
		ete, etFlow, etDec := filepath.Join(dir, "t"+mode+".ete"), filepath.Join(dir, "flow"+mode+".tarmac"),
			filepath.Join(dir, "dec"+mode+".tarmac")
		if code, _, e := rv(t, "run", "-q", "--max-instret", "10000", "--tarmac", etFlow,
			"--trace", "etrace", mode, "-o", ete, elf); code != 0 {
			t.Fatalf("run --trace etrace %s: exit %d: %s", mode, code, e)
		}
		if code, _, e := rv(t, "decode", "--protocol", "etrace", mode, "--image", elf, ete, "--tarmac", etDec); code != 0 {
			t.Fatalf("decode --protocol etrace %s: exit %d: %s", mode, code, e)
		}
		outs = append(outs, output{"run --trace etrace " + mode + " --tarmac", etFlow, false},
			output{"decode --protocol etrace " + mode + " --tarmac", etDec, false})
	}
	its, es := tarmacModes(t, full)
	rets := map[string]int{}
	for _, r := range its {
		addr, mode, _ := strings.Cut(r, " ")
		if want := modeAt(addr); mode != want {
			t.Errorf("--tarmac-full: instruction at %s in mode %s, executed in %s", addr, mode, want)
		}
		if a, _ := strconv.ParseUint(addr, 16, 64); a == mhandler {
			rets["handler "+mode]++
		}
	}
	for _, r := range es {
		f := strings.Fields(r)
		if want := modeAt(f[0]); f[1] != want {
			t.Errorf("--tarmac-full: trap at %s taken from %s, recorded %s", f[0], want, f[1])
		}
		rets["E "+f[1]]++
	}
	// the interrupt and 1 ecall from S, 7 ecalls from U; the handler runs 9
	// times
	if len(es) != 9 || rets["E S"] != 2 || rets["E U"] != 7 || rets["handler M"] != 9 {
		t.Fatalf("--tarmac-full: %d event records, counts %v", len(es), rets)
	}
	if want := fmt.Sprintf("%016x S Interrupt_MachineTimer", scode); es[0] != want {
		t.Errorf("--tarmac-full: first event record %q, want %q", es[0], want)
	}
	for _, o := range outs {
		gotIT, gotE := tarmacModes(t, o.path)
		if strings.Join(gotIT, "\n") != strings.Join(its, "\n") {
			for i := range min(len(gotIT), len(its)) {
				if gotIT[i] != its[i] {
					t.Errorf("%s: instruction record %d is %q, --tarmac-full %q", o.name, i+1, gotIT[i], its[i])
					break
				}
			}
			t.Errorf("%s: %d instruction records, --tarmac-full %d", o.name, len(gotIT), len(its))
		}
		if len(gotE) != len(es) {
			t.Errorf("%s: %d event records, --tarmac-full %d", o.name, len(gotE), len(es))
			continue
		}
		for i := range es {
			g, w := strings.Fields(gotE[i]), strings.Fields(es[i])
			if g[0] != w[0] || g[1] != w[1] {
				t.Errorf("%s: event record %d at %s mode %s, --tarmac-full at %s mode %s", o.name, i+1, g[0], g[1], w[0], w[1])
			}
			want := w[2] // the trace's cause, or none in N-Trace
			if o.unknownCause {
				want, _, _ = strings.Cut(w[2], "_")
				want += "_Unknown"
			}
			if g[2] != want {
				t.Errorf("%s: event record %d is %s, want %s", o.name, i+1, g[2], want)
			}
		}
	}
}
