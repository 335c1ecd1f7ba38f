package sim

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// runBare writes instructions at the entry point of a corpus program
// (its XLEN and memory map) and runs them in M-mode until the
// instruction limit; the instructions should end in a loop (j .).
func runBare(t *testing.T, prog string, cfg Config, words ...uint32) *Hart {
	t.Helper()
	h, err := runBareErr(t, prog, cfg, words...)
	var ge *GuestError
	if !errors.As(err, &ge) || ge.Msg == "" || ge.Cause != 0 {
		t.Fatalf("run: %v, want the instruction limit", err)
	}
	return h
}

// runBareErr is runBare returning the run's error.
func runBareErr(t *testing.T, prog string, cfg Config, words ...uint32) (*Hart, error) {
	t.Helper()
	dir := corpusOrSkip(t)
	if cfg.MaxInstret == 0 {
		cfg.MaxInstret = 1000
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadELF(filepath.Join(dir, "elf", prog+".riscv")); err != nil {
		t.Fatal(err)
	}
	var b []byte
	for _, w := range words {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	m.WriteMem(m.Entry(), b)
	_, err = m.Run()
	return m.Hart(0), err
}

// TestInstretOverflowRV32 is riscv-tests rv32mi instret_overflow: a
// write to either half of minstret takes precedence over the writing
// instruction's increment, so writing minstreth leaves the low word as it
// was (all ones), and the nop after it wraps the whole counter to 0.
func TestInstretOverflowRV32(t *testing.T) {
	h := runBare(t, "embench-crc32", Config{},
		0xfff00293, // li t0,-1
		0xb0229073, // csrw minstret,t0
		0xb8229073, // csrw minstreth,t0
		0x00000013, // nop
		0xb0202573, // csrr a0,minstret
		0xb82025f3, // csrr a1,minstreth
		0x0000006f, // j .
	)
	if h.xlen != 32 {
		t.Fatalf("embench-crc32 is RV%d", h.xlen)
	}
	if a0, a1 := h.Reg(10), h.Reg(11); a0 != 0 || a1 != 0 {
		t.Errorf("minstret %#x, minstreth %#x after the wrap; want 0, 0", a0, a1)
	}
	// the low-half write on RV64 (whole register) and RV32 alike: the
	// instruction after csrwi minstret,0 reads 0
	h = runBare(t, "median", Config{},
		0xb0205073, // csrwi minstret,0
		0xb0202573, // csrr a0,minstret
		0x0000006f, // j .
	)
	if a0 := h.Reg(10); a0 != 0 {
		t.Errorf("RV64: minstret read %d after csrwi minstret,0; want 0", a0)
	}
}

// TestSpinSkip: a lone M-mode hart with interrupts off in j . spins
// forever: with an instruction limit, the run ends at the limit at once,
// with the count and the error it would have reached by spinning; without
// one, it ends with an error instead of hanging.
func TestSpinSkip(t *testing.T) {
	const limit = 1 << 40                                                                // hours of spinning
	h, err := runBareErr(t, "median", Config{MaxInstret: limit}, 0x00000013, 0x0000006f) // nop; j .
	var ge *GuestError
	if !errors.As(err, &ge) || !strings.Contains(ge.Msg, "instruction limit") || ge.PC != h.m.Entry()+4 {
		t.Fatalf("with a limit: %v", err)
	}
	if h.instret != limit+1 || h.cycle != limit+1 {
		t.Errorf("instret %d, cycles %d; want %d", h.instret, h.cycle, uint64(limit+1))
	}
	m, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadELF(filepath.Join(corpusOrSkip(t), "elf", "median.riscv")); err != nil {
		t.Fatal(err)
	}
	m.WriteMem(m.Entry(), []byte{0x6f, 0, 0, 0}) // j .
	if _, err = m.Run(); !errors.As(err, &ge) || !strings.Contains(ge.Msg, "spins forever") || ge.PC != m.Entry() {
		t.Fatalf("without a limit: %v", err)
	}
}
