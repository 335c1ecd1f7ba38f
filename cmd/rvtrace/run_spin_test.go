package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rvtrace/rvtrace/image"
)

// rvWithin is rv that fails the test instead of hanging when the command
// has not returned within d.
func rvWithin(t *testing.T, d time.Duration, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.code, r.out, r.err = rv(t, args...)
		done <- r
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err
	case <-time.After(d):
		t.Fatalf("rvtrace %s: still running after %v", strings.Join(args, " "), d)
		return 0, "", ""
	}
}

// spinNoTohost never exits: it has no tohost symbol and ends in j . with
// interrupts disabled.
const spinNoTohost = `
	.section .text.init
	.globl _start
_start:
	li	a0, 5
	addi	a0, a0, 1
	.globl spin
spin:
	j	spin
`

// spinUser drops to U mode with mret and spins there with no interrupt
// enabled (mie is 0): nothing can end the loop, although the program
// could exit through tohost.
const spinUser = `
	.section .text.init
	.globl _start
_start:
	li	t0, -1
	csrw	pmpaddr0, t0
	li	t0, 0x1f
	csrw	pmpcfg0, t0
	la	t0, spin
	csrw	mepc, t0
	li	t0, 0x1800
	csrc	mstatus, t0
	mret
	.globl spin
spin:
	j	spin
	.section .tohost, "aw"
	.align 3
	.globl tohost, fromhost
tohost:	.dword 0
fromhost: .dword 0
`

// spinTimer spins in j . with the machine timer enabled and due soon: its
// interrupt ends the loop, and the handler exits with code 0.
const spinTimer = `
	.section .text.init
	.globl _start
_start:
	la	t0, handler
	csrw	mtvec, t0
	li	t1, 0x200bff8
	ld	t2, 0(t1)
	addi	t2, t2, 20
	li	t1, 0x2004000
	sd	t2, 0(t1)
	li	t0, 0x80
	csrs	mie, t0
	csrsi	mstatus, 8
	.globl spin
spin:
	j	spin
	.align 2
handler:
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

// TestRunSpinForever: a bare-metal program that cannot end its run does
// not hang rvtrace run. Without a tohost symbol it is told at the start
// (a warning, but with -q); a hart spinning in j . that no interrupt it
// enables can leave (M mode with interrupts off; U mode with mie 0) ends
// the run with exit status 1 and a message naming the reason and the PC
// (the loop's symbol), whether or not outputs watch every instruction
// (--pcs, whose last line is the loop's address); with --max-instret the
// run stops at exactly that count. A j . that an enabled interrupt ends
// (the machine timer) is not stopped: the program exits with code 0.
func TestRunSpinForever(t *testing.T) {
	dir := t.TempDir()
	noTohost, user, timer := buildGuest(t, spinNoTohost), buildGuest(t, spinUser), buildGuest(t, spinTimer)
	const warn = "has no tohost symbol"
	for _, c := range []struct {
		name, elf string
		warn      bool
	}{{"no tohost, M mode", noTohost, true}, {"U mode, mie 0", user, false}} {
		for _, extra := range [][]string{nil, {"--pcs", filepath.Join(dir, "p.pcs")}} {
			args := append(append([]string{"run"}, extra...), c.elf)
			code, _, e := rvWithin(t, time.Minute, args...)
			if code != 1 || !strings.Contains(e, "spins forever in j .") || !strings.Contains(e, "did not exit") ||
				!strings.Contains(e, "pc 0x") || !strings.Contains(e, "<spin>") {
				t.Errorf("%s %v: exit %d, stderr %q; want 1 and the spin at <spin>", c.name, extra, code, e)
			}
			if strings.Contains(e, warn) != c.warn {
				t.Errorf("%s: warning %q given: %v, want %v (stderr %q)", c.name, warn, !c.warn, c.warn, e)
			}
			// -q: the error alone, one line
			if code, _, e := rvWithin(t, time.Minute, append([]string{"run", "-q"}, args[1:]...)...); code != 1 ||
				strings.Count(e, "\n") != 1 || !strings.Contains(e, "spins forever in j .") {
				t.Errorf("%s %v -q: exit %d, stderr %q; want 1 and one line", c.name, extra, code, e)
			}
			if extra == nil {
				continue
			}
			pcs := readLines(t, filepath.Join(dir, "p.pcs"))
			if len(pcs) == 0 || pcs[len(pcs)-1] != spinAddr(t, c.elf) {
				t.Errorf("%s: --pcs has %d lines, the last %v; want the loop's address %s", c.name, len(pcs), pcs[max(len(pcs)-1, 0):], spinAddr(t, c.elf))
			}
		}
		for _, extra := range [][]string{nil, {"--pcs", filepath.Join(dir, "p.pcs")}} {
			args := append(append([]string{"run", "--max-instret", "30000"}, extra...), c.elf)
			code, _, e := rvWithin(t, time.Minute, args...)
			if code != 1 || !strings.Contains(e, "instruction limit 30000 reached") || !strings.Contains(e, " 30000 instructions,") {
				t.Errorf("%s %v: exit %d, stderr %q; want 1 at exactly 30000 instructions", c.name, extra, code, e)
			}
		}
	}
	for _, extra := range [][]string{nil, {"--pcs", filepath.Join(dir, "p.pcs")}} {
		args := append(append([]string{"run"}, extra...), timer)
		code, _, e := rvWithin(t, time.Minute, args...)
		if code != 0 || strings.Contains(e, warn) || !strings.Contains(e, "exit code 0") {
			t.Errorf("timer %v: exit %d, stderr %q; want 0", extra, code, e)
		}
	}
}

// spinAddr returns the address of the symbol spin as a PC list writes it.
func spinAddr(t *testing.T, elf string) string {
	t.Helper()
	img := image.NewSet()
	if err := img.AddELF(elf); err != nil {
		t.Fatal(err)
	}
	for _, s := range img.Symbols() {
		if s.Name == "spin" {
			return fmt.Sprintf("%#x", s.Addr)
		}
	}
	t.Fatalf("%s: no symbol spin", elf)
	return ""
}
