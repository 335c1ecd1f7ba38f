package sim

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// patched loads median (whose reset code leaves mtvec 0, unmapped) and
// writes instructions at its entry point.
func patched(t *testing.T, words ...uint32) error {
	t.Helper()
	dir := corpusOrSkip(t)
	m, err := New(Config{MaxInstret: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadELF(filepath.Join(dir, "elf", "median.riscv")); err != nil {
		t.Fatal(err)
	}
	var b []byte
	for _, w := range words {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	m.WriteMem(m.Entry(), b)
	_, err = m.Run()
	return err
}

// TestBadPrograms: guest errors end the run with an error naming the PC
// and the instruction bits, never a panic.
func TestBadPrograms(t *testing.T) {
	for _, tc := range []struct {
		name  string
		words []uint32
		pc    uint64
		raw   uint32
		cause uint64
	}{
		{"unsupported instruction", []uint32{0x0000000b}, 0x80000000, 0x0000000b, causeIllegal},
		{"jump to unmapped memory", []uint32{0x400002b7, 0x00028067}, 0x40000000, 0, causeFetchAccess}, // lui t0,0x40000; jr t0
		{"load from unmapped memory", []uint32{0x0000b283}, 0x80000000, 0x0000b283, causeLoadAccess},   // ld t0,0(ra=0)
	} {
		err := patched(t, tc.words...)
		var ge *GuestError
		if !errors.As(err, &ge) {
			t.Errorf("%s: error %v, want a GuestError", tc.name, err)
			continue
		}
		if ge.PC != tc.pc || ge.Raw != tc.raw || ge.Cause != tc.cause {
			t.Errorf("%s: %+v", tc.name, ge)
		}
		if !strings.Contains(err.Error(), "pc 0x") {
			t.Errorf("%s: message %q", tc.name, err)
		}
	}
}

// TestInstructionLimit: a program stopped by MaxInstret ends cleanly.
func TestInstructionLimit(t *testing.T) {
	dir := corpusOrSkip(t)
	res, err := RunELF(filepath.Join(dir, "elf", "qsort.riscv"), Config{MaxInstret: 12345})
	var ge *GuestError
	if !errors.As(err, &ge) || !strings.Contains(ge.Msg, "instruction limit") {
		t.Fatalf("%v", err)
	}
	if res.Instret != 12345 || !errors.Is(err, ErrInstructionLimit) {
		t.Fatalf("stopped after %d instructions", res.Instret)
	}
}
