package main

import (
	"os"
	"path/filepath"
	"testing"
)

// sijumpProg calls through auipc+jalr pairs (sequentially inferable
// jumps), through an auipc whose jalr reads the register only after an
// addi (not inferable), and jumps through an auipc+jalr x0 pair.
const sijumpProg = `
	.section .text.init
	.globl _start
_start:
	li	s4, 0
1:	.option push
	.option norelax
	auipc	ra, %pcrel_hi(f)
	jalr	ra, %pcrel_lo(1b)(ra)
	.option pop
2:	auipc	t1, %pcrel_hi(g)
	addi	t1, t1, %pcrel_lo(2b)
	jalr	ra, 0(t1)
	call	h
	addi	s4, s4, 1
	li	t0, 40
	blt	s4, t0, 1b
	la	t0, tohost
	li	t1, 1
	sd	t1, 0(t0)
3:	j	3b
f:	andi	t0, s4, 3
	beqz	t0, 4f
	ret
4:	addi	t0, t0, 1
	ret
g:	ret
h:	.option push
	.option norvc
	auipc	t3, 0
	jalr	x0, 12(t3)
	nop
	ret
	.option pop
	.section .tohost, "aw"
	.align 3
	.globl tohost, fromhost
tohost:	.dword 0
fromhost: .dword 0
`

// A live trace with sequentially inferable jumps on decodes to exactly the
// executed PCs: the simulator's ingress port sets sijump exactly when the
// constant load retired just before the jump (the E-Trace decoder infers
// every such jump, so a jump the port did not mark would be reported and
// the decoder would lose the flow), in both block modes.
func TestLiveSequentialJumps(t *testing.T) {
	elf := buildGuest(t, sijumpProg)
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		enc  []string
		dec  []string
	}{
		{"etrace-sijump", []string{"--trace", "etrace", "--sijump"}, []string{"--protocol", "etrace", "--sijump"}},
		{"etrace-all-modes", []string{"--trace", "etrace", "--all-modes"}, []string{"--protocol", "etrace", "--all-modes"}},
		{"ntrace-best", []string{"--trace", "ntrace", "--preset", "best"}, []string{"--protocol", "ntrace", "--preset", "best"}},
	} {
		for _, per := range []bool{false, true} {
			name := c.name
			args := append([]string{"run", "-q"}, c.enc...)
			if per {
				name += "-per-instruction"
				args = append(args, "--per-instruction")
			}
			tr := filepath.Join(dir, name+".bin")
			want := filepath.Join(dir, name+".pcs")
			got := filepath.Join(dir, name+"-decoded.pcs")
			if code, _, e := rv(t, append(args, "-o", tr, "--pcs", want, elf)...); code != 0 {
				t.Fatalf("%s: run: exit %d: %s", name, code, e)
			}
			if code, _, e := rv(t, append(append([]string{"decode", "--image", elf}, c.dec...), "--pcs", got, tr)...); code != 0 {
				t.Errorf("%s: decode: exit %d: %s", name, code, e)
				continue
			}
			w, _ := os.ReadFile(want)
			g, _ := os.ReadFile(got)
			if len(w) == 0 || string(w) != string(g) {
				t.Errorf("%s: decoded %d bytes of PCs, executed %d", name, len(g), len(w))
			}
		}
	}
}
