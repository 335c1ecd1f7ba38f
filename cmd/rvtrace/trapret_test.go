package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// trapRetProg drops from M to U mode with mret onto an ecall, so the
// exception is at the target of the trap return, in the privilege it
// returned to; the handler counts, steps over the ecall and returns again,
// 20 times.
const trapRetProg = `
	.section .text.init
	.globl _start
_start:
	li	t0, -1
	csrw	pmpaddr0, t0
	li	t0, 0x1f
	csrw	pmpcfg0, t0
	la	t0, handler
	csrw	mtvec, t0
	li	s0, 0
	la	t0, user
	csrw	mepc, t0
	li	t0, 0x1800
	csrc	mstatus, t0
	mret
user:
	ecall
	j	user
	.align 2
handler:
	addi	s0, s0, 1
	li	t0, 20
	beq	s0, t0, done
	la	t0, user
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

// An exception at the target of mret is reported in E-Trace with
// thaddr=0 and the privilege mret returned to, not that of the mret: the
// decoder's check of the trap packet's privilege allows it, and the trace
// decodes to exactly the executed PCs with no gap.
func TestETraceTrapAtTrapReturnTarget(t *testing.T) {
	elf := buildGuest(t, trapRetProg)
	dir := t.TempDir()
	for _, mode := range []string{"--implicit-exception=false", "--all-modes"} {
		tr := filepath.Join(dir, "t.te")
		want := filepath.Join(dir, "run.pcs")
		got := filepath.Join(dir, "dec.pcs")
		if code, _, e := rv(t, "run", "-q", "--max-instret", "100000", "--trace", "etrace", mode, "--context", "-o", tr, "--pcs", want, elf); code != 0 {
			t.Fatalf("%s: run: exit %d: %s", mode, code, e)
		}
		if code, _, e := rv(t, "decode", "--protocol", "etrace", mode, "--context", "--image", elf, "--pcs", got, tr); code != 0 {
			t.Errorf("%s: decode: exit %d: %s", mode, code, e)
			continue
		}
		w, _ := os.ReadFile(want)
		g, _ := os.ReadFile(got)
		if len(w) == 0 || string(w) != string(g) {
			t.Errorf("%s: decoded %d bytes of PCs, executed %d", mode, len(g), len(w))
		}
	}
}

// TestETraceTrapReturnRangeEnd checks the kinds of the decoded ranges'
// ends against N-Trace's on the same program: a range that ends at an
// mret whose target traps (an E-Trace trap packet with thaddr=0) ends as
// a trap return, as N-Trace's does, not with "none". N-Trace also ends a
// range at each not-taken branch, which E-Trace's ranges run through:
// those are left out of the comparison.
func TestETraceTrapReturnRangeEnd(t *testing.T) {
	elf := buildGuest(t, trapRetProg)
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	if code, _, e := rv(t, "run", "-q", "--max-instret", "100000", "--trace", "ntrace", "-o", p("t.nex"), elf); code != 0 {
		t.Fatalf("run ntrace: exit %d: %s", code, e)
	}
	if code, _, e := rv(t, "decode", "--image", elf, p("t.nex"), "--jsonl", p("n.jsonl")); code != 0 {
		t.Fatalf("decode ntrace: exit %d: %s", code, e)
	}
	want := rangeEnds(t, p("n.jsonl"))
	if n := strings.Count(strings.Join(want, "\n"), "trap-return"); n != 20 {
		t.Fatalf("N-Trace: %d ranges end with a trap return, want 20 (the mret to user and 19 from the handler)", n)
	}
	for _, mode := range []string{"--implicit-exception=false", "--all-modes"} {
		if code, _, e := rv(t, "run", "-q", "--max-instret", "100000", "--trace", "etrace", mode, "--context", "-o", p("t.te"), elf); code != 0 {
			t.Fatalf("%s: run: exit %d: %s", mode, code, e)
		}
		if code, _, e := rv(t, "decode", "--protocol", "etrace", mode, "--context", "--image", elf, p("t.te"), "--jsonl", p("e.jsonl")); code != 0 {
			t.Fatalf("%s: decode: exit %d: %s", mode, code, e)
		}
		if got := rangeEnds(t, p("e.jsonl")); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: E-Trace range ends\n%s\nN-Trace's\n%s", mode, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// rangeEnds returns the last instruction and end kind of each range of
// JSON lines file path, but those ending at a not-taken branch.
func rangeEnds(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		var e struct{ Kind, Last, End string }
		if l == "" {
			continue
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("%s: %q: %v", path, l, err)
		}
		if e.Kind == "range" && e.End != "not-taken" {
			out = append(out, e.Last+" "+e.End)
		}
	}
	return out
}
