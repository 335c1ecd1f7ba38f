package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCLIDataTraceCSR runs the CSR test program with E-Trace data trace
// of CSR accesses (--data-csr), decodes it to Tarmac and checks its R
// records of the Zicsr instructions' rd (the value read from the CSR)
// and its MR/MW records against the simulator's own full Tarmac; checks that the JSON lines carry the CSR accesses; encodes the
// run again from its ingress and data ingress CSV files and checks the
// trace is identical; checks that the trace announces CSR data trace in
// its support packet, so that a decode without --data-csr gives the same
// Tarmac and JSON lines, and that a trace whose announcement is damaged
// (cleared on a CSR trace, set on one without CSR packets) is flagged;
// and checks what is refused: --data-csr without --data-trace or with
// data-only packets.
func TestCLIDataTraceCSR(t *testing.T) {
	elf := filepath.Join("..", "..", "etrace", "testdata", "csrdata", "csrdata.elf")
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	if code, _, e := rv(t, "run", "--trace", "etrace", "--data-trace", "--data-csr", "--max-instret", "100000", "-o", p("t.te"),
		"--tarmac-full", p("sim.tarmac"), "--ingress", p("i.csv"), "--data-ingress", p("d.csv"), elf); code != 0 {
		t.Fatalf("run: exit %d: %s", code, e)
	}
	opts := []string{"--protocol", "etrace", "--data-trace", "--data-csr", "--image", elf}
	if code, _, e := rv(t, append(append([]string{"decode"}, opts...), p("t.te"), "--tarmac", p("dec.tarmac"), "--jsonl", p("f.jsonl"))...); code != 0 {
		t.Fatalf("decode: exit %d: %s", code, e)
	}
	// the simulator's R records of the destination registers of Zicsr
	// instructions: the decoded Tarmac has those, with the value read
	// from the CSR, and no R record of a CSR (the simulator's R records
	// of CSRs written are not in the trace)
	want, _ := csrInstRecords(t, p("sim.tarmac"))
	got, other := csrInstRecords(t, p("dec.tarmac"))
	if len(want) != 48*12 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%d R records of rd decoded, the simulator wrote %d (want 576: twelve with rd not x0 an iteration), or they differ", len(got), len(want))
	}
	if other != 0 {
		t.Errorf("decoded Tarmac: %d R records that are not of a Zicsr instruction's rd", other)
	}
	if w, g := memRecords(t, p("sim.tarmac")), memRecords(t, p("dec.tarmac")); len(w) == 0 || strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Errorf("%d MR/MW records decoded, the simulator wrote %d, or they differ", len(g), len(w))
	}
	js, _ := os.ReadFile(p("f.jsonl"))
	// the first access: csrrw t1, mscratch, t0 reads mscratch's reset
	// value 0 and writes 48 * 0x0123456789abcdef
	first := fmt.Sprintf(`"dtype":"csr-rw","size":8,"csr":"0x340","value":"0x0","operand":"%#x"`, uint64(48)*0x0123456789abcdef)
	for _, s := range []string{first, `"dtype":"csr-rs","size":8,"csr":"0xc00"`, `"dtype":"csr-rc","size":8,"csr":"0x300"`} {
		if !bytes.Contains(js, []byte(s)) {
			t.Errorf("JSON lines: no %s", s)
		}
	}
	if bytes.Contains(js, []byte(`"kind":"warn"`)) || bytes.Contains(js, []byte(`"kind":"gap"`)) {
		t.Errorf("JSON lines: a warning or a gap")
	}
	if code, _, e := rv(t, append(append([]string{"encode"}, opts...), "--ingress-in", p("i.csv"), "--data-ingress-in", p("d.csv"), "-o", p("t2.te"))...); code != 0 {
		t.Fatalf("encode: exit %d: %s", code, e)
	}
	a, _ := os.ReadFile(p("t.te"))
	b, _ := os.ReadFile(p("t2.te"))
	if !bytes.Equal(a, b) {
		t.Errorf("trace encoded from the CSV files differs from the live one (%d, %d bytes)", len(b), len(a))
	}
	// through the trace system (encoder component, funnel, RAM sink): the
	// decode command the run prints leaves out --data-csr (an override:
	// the support packet announces the CSR packets), and gives the same
	// CSR records
	code, _, e := rv(t, "run", "--trace", "etrace", "--data-trace", "--data-csr", "--encap", "utdd", "--src-bits", "1",
		"--trace-base", "0x40000000000", "--trace-capture", p("cap.te"), "--max-instret", "100000", elf)
	if code != 0 || !strings.Contains(e, "--data-trace --data-src-id 1") || strings.Contains(e, "--data-csr") {
		t.Fatalf("run --trace-capture: exit %d: %s", code, e)
	}
	if code, _, e := rv(t, "decode", "--protocol", "etrace", "--encap", "utdd", "--src-bits", "1", "--data-trace", "--data-src-id", "1",
		"--image", elf, p("cap.te"), "--tarmac", p("cap.tarmac")); code != 0 {
		t.Fatalf("decode the capture: exit %d: %s", code, e)
	}
	if g, _ := csrInstRecords(t, p("cap.tarmac")); strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("capture: %d R records of rd decoded, the simulator wrote %d, or they differ", len(g), len(want))
	}
	// RV32 (32-bit CSRs, negative values): the R records of rd in 8
	// digits, as the simulator's
	elf32 := filepath.Join("..", "..", "etrace", "testdata", "csrdata", "csrdata32.elf")
	if code, _, e := rv(t, "run", "--trace", "etrace", "--data-trace", "--data-csr", "--data-csr-width", "32", "--max-instret", "100000",
		"-o", p("t32.te"), "--tarmac-full", p("sim32.tarmac"), elf32); code != 0 {
		t.Fatalf("run RV32: exit %d: %s", code, e)
	}
	if code, _, e := rv(t, "decode", "--protocol", "etrace", "--data-trace", "--data-csr", "--data-csr-width", "32",
		"--image", elf32, p("t32.te"), "--tarmac", p("dec32.tarmac")); code != 0 {
		t.Fatalf("decode RV32: exit %d: %s", code, e)
	}
	w32, _ := csrInstRecords(t, p("sim32.tarmac"))
	g32, o32 := csrInstRecords(t, p("dec32.tarmac"))
	if len(w32) != 40*6 || o32 != 0 || strings.Join(g32, "\n") != strings.Join(w32, "\n") {
		t.Errorf("RV32: %d R records of rd decoded (%d others), the simulator wrote %d (want 240), or they differ", len(g32), o32, len(w32))
	}
	// decoded without --data-csr: the support packet announces the CSR
	// accesses, and the outputs are the same
	if code, _, e := rv(t, "decode", "--protocol", "etrace", "--data-trace", "--image", elf, p("t.te"), "--jsonl", p("g.jsonl"), "--tarmac", p("g.tarmac")); code != 0 || strings.Contains(e, "warning") {
		t.Errorf("decode without --data-csr: exit %d: %s", code, e)
	}
	sameFile(t, p("f.jsonl"), p("g.jsonl"))
	sameFile(t, p("dec.tarmac"), p("g.tarmac"))
	if code, _, e := rv(t, "decode", "--protocol", "etrace", "--data-trace", "--data-csr-width", "32", "--image", elf32, p("t32.te"), "--tarmac", p("g32.tarmac")); code != 0 || strings.Contains(e, "warning") {
		t.Errorf("decode RV32 without --data-csr: exit %d: %s", code, e)
	}
	sameFile(t, p("dec32.tarmac"), p("g32.tarmac"))
	code, out, e := rv(t, "dump", "--protocol", "etrace", "--data-trace", p("t.te"))
	if code != 0 || strings.Contains(out, "error:") || !strings.Contains(out, "-> csr-rw csr 0x340") {
		t.Errorf("dump without --data-csr: exit %d: %s", code, e)
	}
	// the byte offset of the first CSR packet, from the dump
	firstCSR := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "data format=5 ") {
			firstCSR, _, _ = strings.Cut(strings.TrimSpace(l), ":")
			break
		}
	}
	// the announcement damaged: the support packet (raw header byte 0x43,
	// type 2 and length 3,
	// then 3 bytes) has doptions in payload bits 16..20, the CSR bit
	// 20, and bits 21..23 repeat it; a packet with those four bits
	// flipped is well formed
	damage := func(in, out string) {
		b, err := os.ReadFile(p(in))
		if err != nil {
			t.Fatal(err)
		}
		if b[0] != 0x43 || b[1] != 0x1f {
			t.Fatalf("%s does not start with a support packet of 3 bytes: % x", in, b[:4])
		}
		b[3] ^= 0xf0
		if err := os.WriteFile(p(out), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	damage("t.te", "bad.te")
	if _, _, e := rv(t, "decode", "--protocol", "etrace", "--data-trace", "--image", elf, p("bad.te"), "--jsonl", p("bad.jsonl")); firstCSR == "" || !strings.Contains(e, "warning at byte "+firstCSR+" ") || !strings.Contains(e, "doptions bit 4 clear") {
		t.Errorf("decode of a CSR trace whose support packet announces none: no warning naming the CSR packet and doptions: %s", e)
	}
	// with --data-csr the damaged announcement does not matter
	if _, _, e := rv(t, "decode", "--protocol", "etrace", "--data-trace", "--data-csr", "--image", elf, p("bad.te"), "--jsonl", p("bad2.jsonl")); strings.Contains(e, "warning") {
		t.Errorf("decode --data-csr of a trace that does not announce its CSR accesses: %s", e)
	}
	sameFile(t, p("f.jsonl"), p("bad2.jsonl"))
	if code, _, e := rv(t, "run", "--trace", "etrace", "--data-trace", "--max-instret", "100000", "-o", p("n.te"), elf); code != 0 {
		t.Fatalf("run without --data-csr: exit %d: %s", code, e)
	}
	damage("n.te", "nbad.te")
	if _, _, e := rv(t, "decode", "--protocol", "etrace", "--data-trace", "--image", elf, p("nbad.te"), "--jsonl", p("nbad.jsonl")); !strings.Contains(e, "does not fit the csr-rw of CSR 0x340") {
		t.Errorf("decode of a trace without CSR packets that announces them: no warning naming the first CSR instruction: %s", e)
	}
	if code, _, e := rv(t, "run", "--trace", "etrace", "--data-csr", "-o", p("x.te"), elf); code == 0 || !strings.Contains(e, "need --data-trace") {
		t.Errorf("--data-csr without --data-trace: exit %d: %s", code, e)
	}
	if code, _, e := rv(t, "run", "--trace", "etrace", "--data-trace", "--data-csr", "--data-fields", "data", "-o", p("x.te"), elf); code == 0 || !strings.Contains(e, "CSR") {
		t.Errorf("--data-csr --data-fields data: exit %d: %s", code, e)
	}
}

// csrInstRecords returns the R records of integer registers that follow
// the IT records of Zicsr instructions in Tarmac file path, each as "pc
// register value", and how many other R records the file has, of
// integer registers or not (CSRs).
func csrInstRecords(t *testing.T, path string) (recs []string, other int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	isInt := func(n string) bool {
		switch {
		case n == "zero" || n == "ra" || n == "sp" || n == "gp" || n == "tp" || n == "fp":
			return true
		case len(n) >= 2 && strings.ContainsRune("xtsa", rune(n[0])) && strings.Trim(n[1:], "0123456789") == "":
			return true
		}
		return false
	}
	pc, zicsr := "", false
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 7 && f[3] == "IT":
			enc, err := strconv.ParseUint(f[6], 16, 32)
			if err != nil {
				t.Fatalf("%s: %q: %v", path, l, err)
			}
			pc, zicsr = f[5], enc&0x7f == 0x73 && enc>>12&3 != 0
		case len(f) > 5 && f[3] == "E":
			zicsr = false
		case len(f) == 6 && f[3] == "R":
			if zicsr && isInt(f[4]) {
				recs = append(recs, pc+" "+f[4]+" "+f[5])
			} else {
				other++
			}
		}
	}
	return recs, other
}

// sameFile reports an error when files a and b differ or a is empty.
func sameFile(t *testing.T, a, b string) {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(x) == 0 || !bytes.Equal(x, y) {
		t.Errorf("%s (%d bytes) and %s (%d bytes) differ, or are empty", filepath.Base(a), len(x), filepath.Base(b), len(y))
	}
}
