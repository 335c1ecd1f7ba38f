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

// twoHartKernel: hart 0 starts hart 1 (SBI HSM), then each runs X three
// times under its own page table and ASID (hart 0: ASID 1, X from frame
// A; hart 1: ASID 2, X from frame C); hart 1 raises a flag and stops,
// hart 0 waits for it and shuts the machine down. It returns the Image
// and the two frames' files.
func twoHartKernel(t *testing.T) (img, frameAFile, frameCFile string) {
	const (
		frameA, frameC   = 0x1000, 0x3000
		root1, l1a, l0a  = 0x4000, 0x5000, 0x6000
		root2, l1b, l0b  = 0x7000, 0x8000, 0x9000
		consts, hart1, f = 0x800, 0x200, 0xa000 // f: the flag, in RAM past the Image
	)
	k := newSBKernel(0xa000)
	k.sv39(root1, l1a, l0a, frameA)
	k.sv39(root2, l1b, l0b, frameC)
	k.u64(consts, satpOf(1, root1))
	k.u64(consts+8, satpOf(2, root2))
	k.u64(consts+16, sbBase+f)
	c := func(from, i int) int32 { return int32(consts + 8*i - from) }
	hsm := []uint32{rvLui(rA7, 0x485), rvAddi(rA7, rA7, 0x34d)} // a7 = HSM
	h0 := append(append([]uint32{rvAuipc(rGP)}, hsm...),
		rvAddi(rA6, 0, 0), rvAddi(rA0, 0, 1), rvAddi(rA1, rGP, hart1-0x40), rvAddi(rA2, 0, 0), rvEcall, // hart_start(1)
		rvLd(rT1, rGP, c(0x40, 0)), rvCsrw(csrSatp, rT1), rvSfence,
		rvLui(rS1, sbX>>12), rvJalr(rRA, rS1, 0), rvJalr(rRA, rS1, 0), rvJalr(rRA, rS1, 0),
		rvLd(rT0, rGP, c(0x40, 2)), rvLd(rT1, rT0, 0), rvBeq(rT1, rZero, -4)) // wait for the flag
	k.code(0x40, append(h0, sbShutdown...)...)
	h1 := append([]uint32{rvAuipc(rGP),
		rvLd(rT1, rGP, c(hart1, 1)), rvCsrw(csrSatp, rT1), rvSfence,
		rvLui(rS1, sbX>>12), rvJalr(rRA, rS1, 0), rvJalr(rRA, rS1, 0), rvJalr(rRA, rS1, 0),
		rvLd(rT0, rGP, c(hart1, 2)), rvAddi(rT1, 0, 1), rvSd(rT1, rT0, 0)}, // the flag
		append(hsm, rvAddi(rA6, 0, 1), rvEcall)...) // hart_stop
	k.code(hart1, h1...)
	k.code(frameA, sbRoutineA...)
	k.code(frameC, sbRoutineC...)
	dir := t.TempDir()
	img, frameAFile, frameCFile = filepath.Join(dir, "Image"), filepath.Join(dir, "a.bin"), filepath.Join(dir, "c.bin")
	for _, f := range []struct {
		p string
		b []byte
	}{{img, k.b}, {frameAFile, k.b[frameA : frameA+0x1000]}, {frameCFile, k.b[frameC : frameC+0x1000]}} {
		if err := os.WriteFile(f.p, f.b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return img, frameAFile, frameCFile
}

// TestSidebandTwoHarts: run --harts 2 --sideband records every hart's
// code into one file (each record tagged with its hart), and decoding the
// N-Trace trace (one SRC per hart) with the sideband alone gives the
// simulator's PCs: all sources together the same multiset of PCs, and
// each source the same PCs as a decode with the images placed by hand
// (the Image, and each context's page of X), in which hart 0 ran
// routine A and hart 1 routine C, three times each. A sideband whose
// harts disagree is refused.
func TestSidebandTwoHarts(t *testing.T) {
	img, fa, fc := twoHartKernel(t)
	dir := t.TempDir()
	nex, side, pcs := filepath.Join(dir, "t.nex"), filepath.Join(dir, "t.side"), filepath.Join(dir, "run.pcs")
	code, _, errb := rv(t, "run", "--machine", "virt", "--kernel", img, "--harts", "2", "--max-instret", "1000000",
		"--trace", "ntrace", "--preset", "best", "-o", nex, "--sideband", side, "--image", img, "--pcs", pcs)
	if code != 0 || !strings.Contains(errb, "decode with --src-bits 1 --src N") {
		t.Fatalf("run: exit %d: %s", code, errb)
	}
	sf := readSideband(t, side)
	var xs []string
	for _, r := range sf.Records {
		if r.Start == sbX {
			xs = append(xs, fmt.Sprintf("hart %d ctx %d offset %#x from %d", r.Hart, r.Context, r.Offset, r.Instret))
		}
	}
	if strings.Join(xs, ", ") != "hart 0 ctx 1 offset 0x1000 from 0, hart 1 ctx 2 offset 0x3000 from 0" {
		t.Errorf("records of X: %q", xs)
	}
	want := readPCLines(t, pcs)
	dec := []string{"decode", "--protocol", "ntrace", "--preset", "best", "--src-bits", "1"}
	all := filepath.Join(dir, "all.pcs")
	if code, _, errb := rv(t, append(dec, "--sideband-in", side, nex, "--pcs", all)...); code != 0 {
		t.Fatalf("decode: exit %d: %s", code, errb)
	}
	got := readPCLines(t, all)
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("decoded %d PCs, the simulator ran %d (or other ones)", len(got), len(want))
	}
	routine := map[int]string{0: "0x40000000\n0x40000004\n0x40000008\n", 1: "0x40000000\n0x40000008\n0x4000000c\n"}
	for src := 0; src < 2; src++ {
		a, b := filepath.Join(dir, fmt.Sprintf("sb%d.pcs", src)), filepath.Join(dir, fmt.Sprintf("hand%d.pcs", src))
		s := []string{"--src", fmt.Sprint(src)}
		code1, _, e1 := rv(t, append(append(dec, s...), "--sideband-in", side, nex, "--pcs", a)...)
		code2, _, e2 := rv(t, append(append(dec, s...), "--image", img+"@0x80200000", "--image", "ctx=1:"+fa+"@0x40000000",
			"--image", "ctx=2:"+fc+"@0x40000000", nex, "--pcs", b)...)
		ga, _ := os.ReadFile(a)
		gb, _ := os.ReadFile(b)
		if code1 != 0 || code2 != 0 || !bytes.Equal(ga, gb) || len(ga) == 0 {
			t.Errorf("source %d: decode with the sideband: exit %d, %d bytes; by hand: exit %d, %d bytes\n%s\n%s", src, code1, len(ga), code2, len(gb), e1, e2)
		}
		if n := strings.Count(string(ga), routine[src]); n != 3 || strings.Contains(string(ga), routine[1-src]) {
			t.Errorf("source %d ran its routine %d times, want 3, and not the other hart's", src, n)
		}
	}
	// a sideband whose harts ran other code at the same address of a
	// context is refused
	b, err := os.ReadFile(side)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.side")
	if err := os.WriteFile(bad, bytes.Replace(b, []byte(" 0x2 0x40000000 0x40001000 0x0 0x3000 "), []byte(" 0x1 0x40000000 0x40001000 0x0 0x3000 "), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errb := rv(t, append(dec, "--sideband-in", bad, nex)...); code == 0 || !strings.Contains(errb, "hart 1 ran other code at 0x40000000 in context 0x1") {
		t.Errorf("decode with harts disagreeing: exit %d: %s", code, errb)
	}
}
