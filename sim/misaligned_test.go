package sim

import (
	"errors"
	"testing"
)

// misalignedProg stores and loads a doubleword across a page boundary
// (0x8000fffd in median's RAM) and ends in j .; the words after it are
// two atomics at the same address.
var misalignedProg = []uint32{
	0x00010297, // auipc t0,0x10
	0xffd28293, // addi t0,t0,-3
	0x12345337, // lui t1,0x12345
	0x67830313, // addi t1,t1,0x678
	0x02031393, // slli t2,t1,32
	0x00736333, // or t1,t1,t2
	0x0062b023, // sd t1,0(t0)
	0x0002b503, // ld a0,0(t0)
	0x0012a583, // lw a1,1(t0)
	0x0000006f, // j .
}

const (
	amoaddMisaligned = 0x0062b62f // amoadd.d a2,t1,(t0)
	lrMisaligned     = 0x1002b6af // lr.d a3,(t0)
)

// TestMisalignedHardware: by default misaligned loads and stores are
// performed (across a page boundary too); with MisalignedTrap they raise
// address-misaligned exceptions; atomics always do. (The Linux program
// examples/sim-tests/misaligned.c checks every size and offset against
// qemu-riscv64 in TestLinuxPrograms.)
func TestMisalignedHardware(t *testing.T) {
	h := runBare(t, "median", Config{}, misalignedProg...)
	if a0, a1 := h.Reg(10), h.Reg(11); a0 != 0x1234567812345678 || a1 != 0x78123456 {
		t.Errorf("ld %#x, lw %#x; want 0x1234567812345678, 0x78123456", a0, a1)
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		words []uint32
		pc    uint64
		cause uint64
	}{
		{"sd with MisalignedTrap", Config{MisalignedTrap: true}, misalignedProg, 0x80000018, causeStoreMisaligned},
		{"amoadd.d", Config{}, append(append([]uint32{}, misalignedProg[:6]...), amoaddMisaligned), 0x80000018, causeStoreMisaligned},
		{"lr.d", Config{}, append(append([]uint32{}, misalignedProg[:6]...), lrMisaligned), 0x80000018, causeLoadMisaligned},
	} {
		_, err := runBareErr(t, "median", tc.cfg, tc.words...)
		var ge *GuestError
		if !errors.As(err, &ge) || ge.Cause != tc.cause || ge.PC != tc.pc {
			t.Errorf("%s: %v, want cause %d at %#x", tc.name, err, tc.cause, tc.pc)
		}
	}
}
