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
// with the count, cycles and error a run that spins instruction by
// instruction (a PC hook watches it) reaches, exactly the limit; without
// one, it ends with an error (ErrSpin) instead of hanging, watched or not.
func TestSpinSkip(t *testing.T) {
	spin := func(limit uint64, hook bool) (*Hart, error) {
		m, err := New(Config{MaxInstret: limit})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.LoadELF(filepath.Join(corpusOrSkip(t), "elf", "median.riscv")); err != nil {
			t.Fatal(err)
		}
		m.WriteMem(m.Entry(), []byte{0x13, 0, 0, 0, 0x6f, 0, 0, 0}) // nop; j .
		if hook {
			m.SetPCHook(0, func(uint64) {})
		}
		_, err = m.Run()
		return m.Hart(0), err
	}
	for _, limit := range []uint64{20_000, 1 << 40} { // 1 << 40: hours of spinning
		h, err := spin(limit, false)
		var ge *GuestError
		if !errors.As(err, &ge) || !errors.Is(err, ErrInstructionLimit) || ge.PC != h.m.Entry()+4 {
			t.Fatalf("with a limit: %v", err)
		}
		if h.instret != limit || h.cycle != limit {
			t.Errorf("limit %d: instret %d, cycles %d; want %d", limit, h.instret, h.cycle, limit)
		}
		if limit > 1<<20 {
			continue
		}
		w, err := spin(limit, true)
		if !errors.Is(err, ErrInstructionLimit) || w.instret != h.instret || w.cycle != h.cycle {
			t.Errorf("limit %d: spinning instruction by instruction: instret %d, cycles %d (%v); skipped: %d, %d",
				limit, w.instret, w.cycle, err, h.instret, h.cycle)
		}
	}
	for _, hook := range []bool{false, true} {
		h, err := spin(0, hook)
		var ge *GuestError
		if !errors.As(err, &ge) || !errors.Is(err, ErrSpin) || !strings.Contains(ge.Msg, "did not exit") || ge.PC != h.m.Entry()+4 {
			t.Fatalf("without a limit (hook %v): %v", hook, err)
		}
	}
}
