package main

import (
	"os"
	"path/filepath"
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
