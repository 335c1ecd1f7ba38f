package main

import (
	"strings"
	"testing"
)

// TestRunSelfModifyingCode: a program that patches an instruction it has
// executed (twice; sim/smc_test.go) gets one warning on stderr, even with
// -q, naming the count, the first storing instruction and the address.
func TestRunSelfModifyingCode(t *testing.T) {
	elf := tinyELF(t, 64, 0x80000000, []uint32{
		0x00000297, // auipc t0,0
		0x00000593, // li a1,0
		0x00100513, // target: li a0,1 (patched into li a0,42)
		0x00158593, // addi a1,a1,1
		0x0282a303, // lw t1,0x28(t0)
		0x1062a023, // sw t1,0x100(t0) (data in the code page: not counted)
		0x0062a423, // sw t1,8(t0) (the patch)
		0x00200393, // li t2,2
		0xfe75c4e3, // blt a1,t2,target
		0x0000006f, // j .
		0x02a00513, // li a0,42
	}, false)
	code, _, e := rv(t, "run", "-q", "--max-instret", "1000", elf)
	if code == 0 || strings.Count(e, "self-modifying code") != 1 ||
		!strings.Contains(e, "self-modifying code: 2 stores") ||
		!strings.Contains(e, "instruction at 0x80000118 (hart 0) writing 0x80000108") {
		t.Errorf("exit %d, stderr %q", code, e)
	}
}
