package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRunExitCodeMultipleOf256: a bare-metal program whose HTIF exit code
// is 256 makes rvtrace run exit with 1 (a process status keeps 8 bits, 256
// would read as success) and print the real code.
func TestRunExitCodeMultipleOf256(t *testing.T) {
	cc, err := exec.LookPath("riscv64-linux-gnu-gcc")
	if err != nil {
		t.Skip("riscv64-linux-gnu-gcc not installed (Debian: gcc-riscv64-linux-gnu)")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "exit.S")
	prog := `
	.section .text
	.globl _start
_start:
	la t0, tohost
	li t1, CODE << 1 | 1
	sd t1, 0(t0)
1:	j 1b
	.data
	.align 3
	.globl tohost, fromhost
tohost:	.dword 0
fromhost: .dword 0
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		code, want int
		msg        string
	}{{256, 1, "exit code 256 is a multiple of 256"}, {3, 3, "exit code 3"}} {
		elf := filepath.Join(dir, "exit.elf")
		out, err := exec.Command(cc, "-nostdlib", "-static", "-march=rv64gc", "-mabi=lp64d", "-Wl,-Ttext=0x80000000",
			"-DCODE="+strconv.Itoa(c.code), "-o", elf, src).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		code, _, e := rv(t, "run", elf)
		if code != c.want || !strings.Contains(e, c.msg) || !strings.Contains(e, " 4 instructions") {
			t.Errorf("exit code %d: rvtrace exits %d, stderr %q; want %d, %q", c.code, code, e, c.want, c.msg)
		}
	}
}
