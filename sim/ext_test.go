package sim

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/rvgen"
)

// TestDifftestQEMUExt is TestDifftestQEMU with the extensions qemu 7.2
// knows beyond those programs: Zbc, Zbkb, Zbkx and Zfh (rvgen.Config.Ext,
// qemu -cpu rvXX,zbc=true,zbkb=true,zbkx=true,Zfh=true). A quarter of the
// random items are from these extensions, and half of the FP registers
// start with NaN-boxed halves.
func TestDifftestQEMUExt(t *testing.T) {
	n := difftestPrograms(t)
	for _, xlen := range []int{64, 32} {
		t.Run(fmt.Sprintf("RV%d", xlen), func(t *testing.T) {
			cc, qemu, err := rvgen.Tools(xlen)
			if err != nil {
				t.Skipf("differential test against qemu skipped: %v", err)
			}
			dir := t.TempDir()
			fails := 0
			for s := uint64(1); s <= uint64(n); s++ {
				cfg := rvgen.Config{XLEN: xlen, Seed: s, Cases: 10, Insts: 200, Ext: true}
				src := filepath.Join(dir, fmt.Sprintf("p%d.S", s))
				prog := strings.TrimSuffix(src, ".S")
				if err := rvgen.WriteFile(src, cfg); err != nil {
					t.Fatal(err)
				}
				if err := rvgen.BuildConfig(cc, src, prog, cfg); err != nil {
					t.Fatal(err)
				}
				want, code, err := rvgen.QEMUConfig(qemu, prog, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if code != 0 {
					t.Fatalf("seed %d: qemu exit code %d (a generator bug)", s, code)
				}
				if msg := runDump(t, prog, xlen, want); msg != "" {
					t.Errorf("RV%d seed %d (Ext) differs from qemu (reproduce with: go run ./examples/difftest/gen -ext -xlen %d -seed %d -minimize):\n%s",
						xlen, s, xlen, s, msg)
					if fails++; fails >= 3 {
						t.Fatal("too many failures")
					}
				}
			}
			t.Logf("RV%d: %d programs × 10 cases × 200 random instructions with Zbc/Zbkb/Zbkx/Zfh agree with %s", xlen, n, filepath.Base(qemu))
		})
	}
}

// TestExtKnownAnswers checks the integer extensions on values worked out
// by hand from their specifications.
func TestExtKnownAnswers(t *testing.T) {
	for _, c := range []struct {
		name    string
		op      func(a, b uint64) uint64
		a, b, r uint64
	}{
		// Zbc: 0b101 ⊗ 0b11 = 0b101 ^ 0b1010 = 0b1111; all ones ⊗ 0b11
		// = all ones ^ all ones << 1: 1 in the low half, 1 in the high.
		{"clmul", func(a, b uint64) (r uint64) { _, r = clmul(a, b); return }, 5, 3, 0xf},
		// x^63 ⊗ x^63 = x^126: bit 62 of the high half.
		{"clmulh", func(a, b uint64) (r uint64) { r, _ = clmul(a, b); return }, 1 << 63, 1 << 63, 1 << 62},
		{"clmul-wide", func(a, b uint64) (r uint64) { _, r = clmul(a, b); return }, ^uint64(0), 3, 1},
		{"clmulh-wide", func(a, b uint64) (r uint64) { r, _ = clmul(a, b); return }, ^uint64(0), 3, 1},
		{"brev8", func(a, _ uint64) uint64 { return brev8(a) }, 0x0102040810204080, 0, 0x8040201008040201},
		{"zip", func(a, _ uint64) uint64 { return uint64(zip32(uint32(a))) }, 0xffff0000, 0, 0xaaaaaaaa},
		{"unzip", func(a, _ uint64) uint64 { return uint64(unzip32(uint32(a))) }, 0xaaaaaaaa, 0, 0xffff0000},
		// xperm8: indexes 0..7 of rs1's bytes, 8 and above give 0.
		{"xperm8", func(a, b uint64) uint64 { return xperm(a, b, 8, 64) }, 0x8877665544332211, 0x0001020304050708, 0x1122334455668800},
		// xperm4 on RV32: 8 nibbles, index 8 gives 0.
		{"xperm4-32", func(a, b uint64) uint64 { return xperm(a, b, 4, 32) }, 0xfedcba98, 0x01234568, 0x89abcde0},
	} {
		if got := c.op(c.a, c.b); got != c.r {
			t.Errorf("%s(%#x, %#x) = %#x, want %#x", c.name, c.a, c.b, got, c.r)
		}
	}
	for v := uint32(0); v < 1<<20; v += 4093 {
		w := v*0x9e3779b9 + 1
		if unzip32(zip32(w)) != w {
			t.Fatalf("unzip(zip(%#x)) = %#x", w, unzip32(zip32(w)))
		}
	}
}

// TestZicondZimopZicboz runs czero.eqz/nez, mop.r.N, mop.rr.N, c.mop.N and
// cbo.zero (which Linux allows in user mode) in a user program.
func TestZicondZimopZicboz(t *testing.T) {
	h := runWords(t,
		0x02a00593, // li a1,42
		0x00000613, // li a2,0
		0x00700693, // li a3,7
		0x0ec5d733, // czero.eqz a4,a1,a2 -> 0
		0x0ed5d7b3, // czero.eqz a5,a1,a3 -> 42
		0x0ec5f833, // czero.nez a6,a1,a2 -> 42
		0x0ed5f8b3, // czero.nez a7,a1,a3 -> 0
		0xfff00e13, // li t3,-1
		0xfff00e93, // li t4,-1
		0x81c5ce73, // mop.r.0 t3,a1 -> 0
		0xcec5cef3, // mop.rr.7 t4,a1,a2 -> 0
		0x61816081, // c.mop.1; c.mop.3 (no-ops)
		0xf0010513, // addi a0,sp,-256
		0xfc057513, // andi a0,a0,-64
		0xfff00593, // li a1,-1
		0x00b53423, // sd a1,8(a0)
		0x02b53c23, // sd a1,56(a0)
		0x04b53023, // sd a1,64(a0)
		0x01150613, // addi a2,a0,17
		0x0046200f, // cbo.zero (a2)
		0x00853f03, // ld t5,8(a0) -> 0
		0x03853f83, // ld t6,56(a0) -> 0
		0x04053903, // ld s2,64(a0) -> -1 (next block)
		0x05d00893, // li a7,93
		0x00000513, // li a0,0
		0x00000073, // ecall
	)
	for _, c := range []struct {
		r    int
		want uint64
	}{{14, 0}, {15, 42}, {16, 42}, {28, 0}, {29, 0}, {30, 0}, {31, 0}, {18, ^uint64(0)}} {
		if v := h.Reg(c.r); v != c.want {
			t.Errorf("x%d = %#x, want %#x", c.r, v, c.want)
		}
	}
}

// TestCBOGating checks the menvcfg/senvcfg enables of the cache-block
// operations (privileged spec, "Machine Environment Configuration
// Register": CBIE, CBCFE, CBZE), the WARL reserved CBIE value, and the
// store access fault of cbo.zero on an address without memory, with the
// block's address as tval.
func TestCBOGating(t *testing.T) {
	h := runWords(t, 0x05d00893, 0x00000513, 0x00000073) // exit(0)
	ram := h.Reg(2) &^ 63                                // the stack
	clean := decode(0x0015200f, 64)                      // cbo.clean (a0)
	inval := decode(0x0005200f, 64)                      // cbo.inval (a0)
	zero := decode(0x0045200f, 64)                       // cbo.zero (a0)
	run := func(d inst) (bool, uint64) {
		h.excCause = 0
		_, _, ok := h.execExt(&d, 0)
		return ok, h.excCause
	}
	for _, c := range []struct {
		name       string
		priv       uint8
		menv, senv uint64
		d          inst
		ok         bool
	}{
		{"clean in M, all off", privM, 0, 0, clean, true},
		{"clean in S, CBCFE off", privS, 0, 0, clean, false},
		{"clean in S, menvcfg.CBCFE", privS, envcfgCBCFE, 0, clean, true},
		{"clean in U, senvcfg.CBCFE off", privU, envcfgCBCFE, 0, clean, false},
		{"clean in U, both CBCFE", privU, envcfgCBCFE, envcfgCBCFE, clean, true},
		{"inval in S, CBIE 00", privS, 0, 0, inval, false},
		{"inval in S, CBIE 01", privS, 1 << 4, 0, inval, true},
		{"inval in U, senvcfg.CBIE 00", privU, 3 << 4, 0, inval, false},
		{"inval in U, CBIE 11", privU, 3 << 4, 3 << 4, inval, true},
		{"zero in S, CBZE off", privS, envcfgCBCFE, 0, zero, false},
		{"zero in S, CBZE", privS, envcfgCBZE, 0, zero, true},
		{"zero in U, senvcfg.CBZE off", privU, envcfgCBZE, 0, zero, false},
	} {
		h.priv, h.csr.menvcfg, h.csr.senvcfg = c.priv, c.menv, c.senv
		h.x[10] = ram + 5
		ok, cause := run(c.d)
		if ok != c.ok || !ok && cause != causeIllegal {
			t.Errorf("%s: ok %v cause %d, want ok %v (or illegal instruction)", c.name, ok, cause, c.ok)
		}
	}
	h.priv = privM
	h.x[10] = 0x13 // no memory at address 0
	if ok, cause := run(zero); ok || cause != causeStoreAccess || h.excTval != 0 {
		t.Errorf("cbo.zero at 0x13: ok %v cause %d tval %#x, want store access fault at 0", ok, cause, h.excTval)
	}
	h.csr.menvcfg = 0
	if v := envcfgWrite(0, ^uint64(0)); v != 0xf1 {
		t.Errorf("menvcfg write of all ones reads %#x, want 0xf1", v)
	}
	if v := envcfgWrite(1<<4, 2<<4|envcfgCBZE); v != 1<<4|envcfgCBZE {
		t.Errorf("CBIE = 10 (reserved) gives %#x, want the old CBIE kept", v)
	}
}

// TestExtDecodeXLEN checks the XLEN-specific encodings: zip and unzip
// exist on RV32 only, packw and the OP-32 form of zext.h on RV64 only.
func TestExtDecodeXLEN(t *testing.T) {
	for _, c := range []struct {
		raw  uint32
		xlen int
		op   uint8
	}{
		{0x08f59513, 32, opZIP},
		{0x08f59513, 64, opIllegal},
		{0x08f5d513, 32, opUNZIP},
		{0x08f5d513, 64, opIllegal},
		{0x08c5c53b, 64, opPACKW},
		{0x08c5c53b, 32, opIllegal},
		{0x0805c53b, 64, opZEXTH},
		{0x0805c53b, 32, opIllegal},
		{0x0805c533, 32, opZEXTH},
		{0x0805c533, 64, opPACK},
		{0x6081, 64, opADDI},        // c.mop.1
		{0x6f81, 64, opIllegal},     // c.lui t6,0
		{0x0035200f, 64, opIllegal}, // reserved cbo operation
		{0x80c5c573, 64, opIllegal}, // SYSTEM funct3 4, not a mop
		{0x4035f553, 64, opIllegal}, // fcvt.s.h's neighbour rs2 = 3
	} {
		if d := decode(c.raw, c.xlen); d.op != c.op {
			t.Errorf("decode(%#x, %d).op = %d, want %d", c.raw, c.xlen, d.op, c.op)
		}
	}
}

// TestExtTraceRegisters checks which register file the Tarmac records of
// the new operations name: fmv.x.h, feq.h, fclass.h and fcvt.w.h write x
// registers, the other half-precision operations and flh f registers, and
// fsh and the cache-block operations neither.
func TestExtTraceRegisters(t *testing.T) {
	for _, c := range []struct {
		name   string
		raw    uint32
		xw, fw bool
	}{
		{"fmv.x.h", 0xe4058553, true, false},
		{"feq.h", 0xa4c5a553, true, false},
		{"fclass.h", 0xe4059553, true, false},
		{"fcvt.w.h", 0xc405f553, true, false},
		{"fadd.h", 0x04c5f553, false, true},
		{"fcvt.s.h", 0x40258553, false, true},
		{"fmv.h.x", 0xf4058553, false, true},
		{"flh", 0x00259507, false, true},
		{"fsh", 0xfe111f27, false, false},
		{"cbo.zero", 0x0045a00f, false, false},
		{"clmul", 0x0ac59533, true, false},
		{"czero.eqz", 0x0ec5d533, true, false},
	} {
		d := decode(c.raw, 64)
		if xw, fw := writesX(&d), extWritesF(&d); xw != c.xw || fw != c.fw {
			t.Errorf("%s: writes x %v, f %v; want x %v, f %v", c.name, xw, fw, c.xw, c.fw)
		}
	}
}

// TestExtDeviceTree: both device trees name the extensions in riscv,isa
// and give the cache-block sizes Linux reads (riscv,cbom-block-size and
// riscv,cboz-block-size, 64).
func TestExtDeviceTree(t *testing.T) {
	m := runWords(t, 0x05d00893, 0x00000513, 0x00000073).m // an RV64 machine
	for name, dtb := range map[string][]byte{"bare": m.makeDTB(), "virt": m.makeVirtDTB()} {
		for _, s := range []string{"rv64imafdc_zicsr_zifencei_zba_zbb_zbs" + isaExt, "riscv,cbom-block-size", "riscv,cboz-block-size"} {
			if !bytes.Contains(dtb, []byte(s)) {
				t.Errorf("%s device tree lacks %q", name, s)
			}
		}
	}
}
