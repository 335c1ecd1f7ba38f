package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/sideband"
)

// A few RV64 instruction encoders, for the S-mode test kernels below.

func rvI(op, f3 uint32, rd, rs1 int, imm int32) uint32 {
	return uint32(imm)<<20 | uint32(rs1)<<15 | f3<<12 | uint32(rd)<<7 | op
}

func rvS(op, f3 uint32, rs1, rs2 int, imm int32) uint32 {
	u := uint32(imm)
	return (u>>5&0x7f)<<25 | uint32(rs2)<<20 | uint32(rs1)<<15 | f3<<12 | (u&0x1f)<<7 | op
}

func rvAddi(rd, rs1 int, imm int32) uint32 { return rvI(0x13, 0, rd, rs1, imm) }
func rvLd(rd, rs1 int, imm int32) uint32   { return rvI(0x03, 3, rd, rs1, imm) }
func rvSd(rs2, rs1 int, imm int32) uint32  { return rvS(0x23, 3, rs1, rs2, imm) }
func rvJalr(rd, rs1 int, imm int32) uint32 { return rvI(0x67, 0, rd, rs1, imm) }
func rvLui(rd int, imm20 uint32) uint32    { return imm20<<12 | uint32(rd)<<7 | 0x37 }
func rvAuipc(rd int) uint32                { return uint32(rd)<<7 | 0x17 }
func rvCsrw(csr uint32, rs1 int) uint32    { return csr<<20 | uint32(rs1)<<15 | 1<<12 | 0x73 }

// rvJal encodes jal rd, off (off even, within ±1 MiB).
func rvJal(rd int, off int32) uint32 {
	u := uint32(off)
	return (u>>20&1)<<31 | (u>>1&0x3ff)<<21 | (u>>11&1)<<20 | (u>>12&0xff)<<12 | uint32(rd)<<7 | 0x6f
}

// rvBeq encodes beq rs1, rs2, off.
func rvBeq(rs1, rs2 int, off int32) uint32 {
	u := uint32(off)
	return (u>>12&1)<<31 | (u>>5&0x3f)<<25 | uint32(rs2)<<20 | uint32(rs1)<<15 | (u>>1&0xf)<<8 | (u>>11&1)<<7 | 0x63
}

const (
	rvSfence = 0x12000073 // sfence.vma zero, zero
	rvEcall  = 0x00000073
	rvNop    = 0x00000013
	rvRet    = 0x00008067 // jalr zero, 0(ra)
	csrSatp  = 0x180
	rZero    = 0
	rRA      = 1
	rGP      = 3
	rT0      = 5
	rT1      = 6
	rT2      = 7
	rS1      = 9
	rA0      = 10
	rA1      = 11
	rA2      = 12
	rA6      = 16
	rA7      = 17
)

// sbKernel builds a raw RISC-V Linux Image loaded at 0x80200000 (as
// tinyImage): code is placed at offsets, page tables and constants are
// filled in by the caller.
type sbKernel struct {
	b []byte
}

const sbBase = 0x80200000

func newSBKernel(size int) *sbKernel {
	k := &sbKernel{b: make([]byte, size)}
	le := binary.LittleEndian
	le.PutUint32(k.b[0:], rvJal(rZero, 0x40)) // to the code at 0x40
	le.PutUint64(k.b[8:], 0x200000)           // text_offset
	le.PutUint64(k.b[16:], uint64(size))      // image_size
	le.PutUint32(k.b[32:], 2)                 // header version 0.2
	copy(k.b[48:], "RISCV\x00\x00\x00")
	copy(k.b[56:], "RSC\x05")
	return k
}

func (k *sbKernel) code(off int, insts ...uint32) {
	for i, w := range insts {
		binary.LittleEndian.PutUint32(k.b[off+4*i:], w)
	}
}

func (k *sbKernel) u64(off int, v uint64) { binary.LittleEndian.PutUint64(k.b[off:], v) }

// Sv39 page-table entry bits.
const (
	pteV, pteR, pteW, pteX, pteG, pteA, pteD = 1, 2, 4, 8, 32, 64, 128
)

func pte(pa uint64, flags uint64) uint64 { return pa>>12<<10 | flags }

// sv39 fills the three tables at root, l1 and l0 (image offsets): the
// gigapage of 0x80000000 identity-mapped and global, and the page at
// virtual 0x40000000 mapped to image offset frame (not global).
func (k *sbKernel) sv39(root, l1, l0, frame int) {
	k.u64(root+2*8, pte(0x80000000, pteV|pteR|pteW|pteX|pteG|pteA|pteD))
	k.u64(root+1*8, pte(sbBase+uint64(l1), pteV))
	k.u64(l1, pte(sbBase+uint64(l0), pteV))
	k.u64(l0, pte(sbBase+uint64(frame), pteV|pteR|pteX|pteA))
}

func satpOf(asid uint64, root int) uint64 { return 8<<60 | asid<<44 | (sbBase+uint64(root))>>12 }

// The code run from virtual 0x40000000 (X) in the tests: three routines
// of the same length in halfwords (so that a decoder following the wrong
// one finds its instruction counts consistent), at different addresses.
var (
	sbRoutineA = []uint32{rvAddi(rA0, rA0, 1), rvAddi(rA0, rA0, 1), rvRet}                 // X, X+4, X+8
	sbRoutineB = []uint32{rvAddi(rA0, rA0, 3), rvJal(rZero, 8), rvNop, rvRet}              // X, X+4, X+12
	sbRoutineC = []uint32{rvJal(rZero, 8), rvNop, rvAddi(rA0, rA0, 5), rvRet}              // X, X+8, X+12
	sbShutdown = []uint32{rvLui(rA7, 0x53525), rvAddi(rA7, rA7, 0x354), rvAddi(rA6, 0, 0), // SBI SRST
		rvAddi(rA0, 0, 0), rvAddi(rA1, 0, 0), rvEcall}
)

const sbX = 0x40000000

// remapKernel: S-mode code that runs X from frame A, rewrites the
// page-table entry to frame B and runs X again after sfence.vma, then
// switches to another page table with the same ASID (a new process given
// the context number of the old one) that maps X to frame C, and runs X.
func remapKernel(t *testing.T) string {
	const (
		frameA, frameB, frameC = 0x1000, 0x2000, 0x3000
		root1, l1a, l0a        = 0x4000, 0x5000, 0x6000
		root2, l1b, l0b        = 0x7000, 0x8000, 0x9000
		consts                 = 0x800 // satp1, &l0a[0], PTE of frame B, satp2
	)
	k := newSBKernel(0xa000)
	k.sv39(root1, l1a, l0a, frameA)
	k.sv39(root2, l1b, l0b, frameC)
	k.u64(consts, satpOf(1, root1))
	k.u64(consts+8, sbBase+l0a)
	k.u64(consts+16, pte(sbBase+frameB, pteV|pteR|pteX|pteA))
	k.u64(consts+24, satpOf(1, root2))
	c := func(i int) int32 { return int32(consts + 8*i - 0x40) } // from gp = base+0x40
	prog := []uint32{
		rvAuipc(rGP),
		rvLd(rT1, rGP, c(0)), rvCsrw(csrSatp, rT1), rvSfence,
		rvLui(rS1, sbX>>12),
		rvJalr(rRA, rS1, 0), rvJalr(rRA, rS1, 0), // A twice
		rvLd(rT1, rGP, c(1)), rvLd(rT2, rGP, c(2)), rvSd(rT2, rT1, 0), rvSfence,
		rvJalr(rRA, rS1, 0), rvJalr(rRA, rS1, 0), // B twice
		rvLd(rT1, rGP, c(3)), rvCsrw(csrSatp, rT1), rvSfence,
		rvJalr(rRA, rS1, 0), rvJalr(rRA, rS1, 0), // C twice
	}
	k.code(0x40, append(prog, sbShutdown...)...)
	k.code(frameA, sbRoutineA...)
	k.code(frameB, sbRoutineB...)
	k.code(frameC, sbRoutineC...)
	p := filepath.Join(t.TempDir(), "Image")
	if err := os.WriteFile(p, k.b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSidebandRemap: a context's virtual page is remapped to another
// physical page holding other code (page-table entry rewritten +
// sfence.vma), then its context number is reused by a new page table
// mapping it to a third. The sideband records the page again each time,
// stamped with the instruction count of the first block run from the
// new page, and decoding the N-Trace and E-Trace traces with the
// sideband alone gives exactly the PCs the simulator retired (without
// the new records, the decoder silently follows the first routine:
// same instruction counts, other PCs).
func TestSidebandRemap(t *testing.T) {
	img := remapKernel(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		proto      string
		run, decod []string
	}{
		{"ntrace", []string{"--preset", "best"}, []string{"--preset", "best"}},
		{"etrace", nil, []string{"--context"}},
	} {
		trace, side, pcs := filepath.Join(dir, tc.proto+".trace"), filepath.Join(dir, tc.proto+".side"), filepath.Join(dir, tc.proto+".pcs")
		args := append([]string{"run", "--machine", "virt", "--kernel", img, "--trace", tc.proto, "--max-instret", "100000"}, tc.run...)
		code, _, errb := rv(t, append(args, "-o", trace, "--sideband", side, "--image", img, "--pcs", pcs)...)
		if code != 0 || !strings.Contains(errb, "2 recorded again after their code changed (2 remapped") {
			t.Fatalf("%s: run: exit %d: %s", tc.proto, code, errb)
		}
		want, err := os.ReadFile(pcs)
		if err != nil {
			t.Fatal(err)
		}
		// the simulator ran the three routines, each twice
		for _, r := range []string{"0x40000000\n0x40000004\n0x40000008\n", "0x40000000\n0x40000004\n0x4000000c\n", "0x40000000\n0x40000008\n0x4000000c\n"} {
			if n := strings.Count(string(want), r); n != 2 {
				t.Fatalf("%s: the simulator ran %q %d times, want 2:\n%s", tc.proto, r, n, want)
			}
		}
		sf := readSideband(t, side)
		var xs []string
		for _, r := range sf.Records {
			if r.Start == sbX {
				xs = append(xs, fmt.Sprintf("ctx %d global %v image offset %#x from %d", r.Context, r.Global, r.Offset, r.Instret))
			}
		}
		if len(xs) != 3 || !strings.HasSuffix(xs[0], "offset 0x1000 from 0") || !strings.Contains(xs[1], "ctx 1 global false image offset 0x2000 from ") ||
			!strings.Contains(xs[2], "ctx 1 global false image offset 0x3000 from ") {
			t.Errorf("%s: records of X: %q", tc.proto, xs)
		}
		got := filepath.Join(dir, tc.proto+".dec")
		code, _, errb = rv(t, append(append([]string{"decode", "--protocol", tc.proto}, tc.decod...), "--sideband-in", side, trace, "--pcs", got)...)
		g, _ := os.ReadFile(got)
		if code != 0 || !bytes.Equal(g, want) {
			t.Errorf("%s: decode: exit %d, %d bytes of PCs, want %d: %s", tc.proto, code, len(g), len(want), errb)
		}
	}
}

func readSideband(t *testing.T, path string) *sideband.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sf, err := sideband.Read(f, path)
	if err != nil {
		t.Fatal(err)
	}
	return sf
}

var _ = sort.Strings
var _ = rvBeq
