package riscv

import (
	"math/rand/v2"
	"testing"
)

// The live tests run the cross tools when they are installed
// (apt-get install binutils-riscv64-linux-gnu llvm-19) and compare every
// 16-bit parcel and a seeded random sample of 32-bit words with them.

const sweepVMA = 0x80000000

// gnuProfiles are the binutils -march strings the live tests use and the
// extensions that match them.
var gnuProfiles = []struct {
	xlen int
	arch string
	ext  Ext
}{
	{64, "rv64gc_zba_zbb_zbs_zbc_zbkb_zbkx_zfh_zicbom_zicboz_zicbop_zihintpause_svinval", ExtGC | ExtB | gnuLinux},
	{32, "rv32gc_zba_zbb_zbs_zbc_zbkb_zbkx_zfh_zicbom_zicboz_zicbop_zihintpause_svinval", ExtGC | ExtB | gnuLinux},
}

// gnuLinux is the part of ExtLinux that binutils 2.40 knows (not Zicond,
// Zimop or Zcmop, which llvmProfiles cover).
const gnuLinux = ExtLinux &^ (ExtZicond | ExtZimop | ExtZcmop)

// llvmProfiles cover what binutils 2.40 does not know: Zcb, Zcmp, Zcmt,
// Zcmop, Zicond and Zimop. Zcmp/Zcmt exclude Zcd, so the RV32 profile has
// F but no D.
var llvmProfiles = []struct {
	xlen int
	arch string
	ext  Ext
}{
	{64, "+m,+a,+f,+d,+c,+zba,+zbb,+zbs,+zcb,+zcmop,+zicond,+zimop,+svinval", ExtGC | ExtB | ExtZcb | llvmOnly | ExtSvinval},
	{32, "+m,+a,+f,+c,+zba,+zbb,+zbs,+zcb,+zcmp,+zcmt,+zcmop,+zicond,+zimop,+svinval", ExtM | ExtA | ExtF | ExtC | ExtZcf | ExtB | ExtZcb | ExtZcmp | ExtZcmt | llvmOnly | ExtSvinval},
}

// llvmOnly are the extensions only the LLVM profiles test.
const llvmOnly = ExtZcmop | ExtZicond | ExtZimop

func needGNU(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the live comparison with binutils (TestFixtures compares saved output)")
	}
	if gnuAs == "" || gnuObjdump == "" {
		t.Skip("riscv64-linux-gnu-as/objdump not installed (apt-get install binutils-riscv64-linux-gnu); skipping comparison with binutils")
	}
}

func needLLVM(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the live comparison with LLVM (TestFixtures compares saved output)")
	}
	if llvmMC == "" || llvmDump == "" {
		t.Skip("llvm-mc/llvm-objdump (LLVM 17 or later) not installed (apt-get install llvm-19); skipping comparison for Zcb/Zcmp/Zcmt")
	}
}

// all16 returns every 16-bit parcel that is a compressed instruction
// encoding (low bits not 11).
func all16() []uint32 {
	var w []uint32
	for p := uint32(0); p < 1<<16; p++ {
		if p&3 != 3 {
			w = append(w, p)
		}
	}
	return w
}

// random32 returns a seeded sample of 32-bit words: for every major opcode
// (of 32-bit length), funct3 and funct7 a word with random other bits, and
// extra samples of the opcodes whose rs2/rs1/rd fields select instructions
// (SYSTEM, OP-FP, OP-IMM unary ops).
func random32() []uint32 {
	r := rand.New(rand.NewPCG(1, 2))
	var w []uint32
	for opc := uint32(0); opc < 32; opc++ {
		if opc&7 == 7 { // 48-bit and longer prefixes
			continue
		}
		for f3 := uint32(0); f3 < 8; f3++ {
			for f7 := uint32(0); f7 < 128; f7++ {
				x := r.Uint32()&0x01ff8f80 | f7<<25 | f3<<12 | opc<<2 | 3
				w = append(w, x)
				// The same with register fields drawn from x0, ra
				// and t0, which select aliases (mv, ret, beqz, ...)
				// and link roles.
				regs := [...]uint32{0, 1, 5}
				y := x &^ 0x01ff8f80 // keep funct7, funct3, opcode
				y |= regs[r.IntN(3)]<<7 | regs[r.IntN(3)]<<15 | regs[r.IntN(3)]<<20
				y |= r.Uint32() & 0x3 << 23 // some of the immediate's low bits
				w = append(w, y)
			}
		}
	}
	// SYSTEM with funct3 = 0: every funct12 with rd = rs1 = 0, and with
	// random rs1 (sfence.vma and reserved neighbours).
	for f12 := uint32(0); f12 < 1<<12; f12++ {
		w = append(w, f12<<20|0x73)
		w = append(w, f12<<20|r.Uint32()&0x000f8f80|0x73)
	}
	// For every 32-bit row of the instruction table (used only to spend
	// samples where instructions are; the sweep above is blind), every
	// combination of x0, ra, t0 and a random register in rd, rs1 and rs2,
	// with immediates 0, 1, -1, 255 and random.
	imms := [...]uint32{0, 1, 0xfff, 0xff, 0}
	for _, o := range ops {
		if o.len != 4 {
			continue
		}
		for k := 0; k < 64; k++ {
			reg := func(sel int) uint32 {
				return [...]uint32{0, 1, 5, r.Uint32N(32)}[sel&3]
			}
			imm := imms[k%len(imms)]
			if k%len(imms) == len(imms)-1 {
				imm = r.Uint32N(1 << 12)
			}
			fields := reg(k)<<7 | reg(k>>2)<<15 | reg(k>>4)<<20 | imm<<20 | r.Uint32()&0x7000
			if k&1 == 0 {
				fields = reg(k)<<7 | reg(k>>2)<<15 | reg(k>>4)<<20 | r.Uint32()&0xfe007000
			}
			w = append(w, o.match|fields&^o.mask)
		}
	}
	// CSR aliases: the floating-point, counter and a plain CSR, with
	// x0 or not in rd and rs1 (or uimm).
	for _, csr := range []uint32{0x001, 0x002, 0x003, 0xc00, 0xc01, 0xc02, 0xc80, 0xc81, 0xc82, 0x300} {
		for f3 := uint32(1); f3 < 8; f3++ {
			for _, rd := range []uint32{0, 10} {
				for _, rs := range []uint32{0, 11} {
					w = append(w, csr<<20|rs<<15|f3<<12|rd<<7|0x73)
				}
			}
		}
	}
	// MISC-MEM funct3 2 (Zicbom, Zicboz): every funct12, with rd = 0 and
	// a random rs1, and with a random rd. ori with rd = x0 (Zicbop
	// prefetches): every imm[4:0] with a random rest.
	for f12 := uint32(0); f12 < 1<<12; f12++ {
		w = append(w, f12<<20|r.Uint32()&0x000f8000|2<<12|0x0f)
		w = append(w, f12<<20|r.Uint32()&0x000f8f80|2<<12|0x0f)
	}
	for lo := uint32(0); lo < 32; lo++ {
		w = append(w, r.Uint32()&0xfe0f8000|lo<<20|6<<12|0x13)
	}
	// Every fence: fm, pred and succ with rd = rs1 = 0.
	for f := uint32(0); f < 1<<12; f++ {
		w = append(w, f<<20|0x0f)
	}
	// Every CSR number, read (csrr and the rd* aliases), written (csrw and
	// the fs* aliases) and with both registers.
	for csr := uint32(0); csr < 1<<12; csr++ {
		w = append(w, csr<<20|2<<12|10<<7|0x73)        // csrrs a0,csr,zero
		w = append(w, csr<<20|10<<15|1<<12|0x73)       // csrrw zero,csr,a0
		w = append(w, csr<<20|11<<15|2<<12|10<<7|0x73) // csrrs a0,csr,a1
	}
	// OP-FP: every funct7 and rs2 with a random rounding mode.
	for f7 := uint32(0); f7 < 128; f7++ {
		for rs2 := uint32(0); rs2 < 32; rs2++ {
			w = append(w, f7<<25|rs2<<20|r.Uint32()&0x000fff80|0x53)
		}
	}
	// OP-IMM(-32) shifts and unary ops: every funct12 with funct3 1 and 5.
	for f12 := uint32(0); f12 < 1<<12; f12 += 1 {
		for _, op := range []uint32{0x13, 0x1b} {
			w = append(w, f12<<20|1<<12|r.Uint32()&0x000f8f80|op)
			w = append(w, f12<<20|5<<12|r.Uint32()&0x000f8f80|op)
		}
	}
	return w
}

// sweep compares words with the oracle for one profile.
func sweep(t *testing.T, o oracle, words []uint32, xlen int, arch string, ext Ext, keep func(dumpLine) bool) {
	out := disassemble(t, o, insnSource(words), xlen, arch, sweepVMA)
	lines, err := parseDump(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != len(words) {
		t.Fatalf("%s printed %d instructions for %d words", o, len(lines), len(words))
	}
	m := &mismatches{t: t, what: o.String() + " " + arch}
	n := 0
	for _, l := range lines {
		if keep != nil && !keep(l) {
			continue
		}
		n++
		compareLine(m, o, l, xlen, ext)
	}
	m.done(n)
	t.Logf("%s %s: compared %d instructions", o, arch, n)
}

func TestObjdumpCompressed(t *testing.T) {
	needGNU(t)
	words := all16()
	for _, p := range gnuProfiles {
		t.Run(p.arch, func(t *testing.T) {
			t.Parallel()
			sweep(t, gnu, words, p.xlen, p.arch, p.ext, nil)
		})
	}
}

func TestObjdump32(t *testing.T) {
	needGNU(t)
	words := random32()
	for _, p := range gnuProfiles {
		t.Run(p.arch, func(t *testing.T) {
			t.Parallel()
			sweep(t, gnu, words, p.xlen, p.arch, p.ext, nil)
		})
	}
}

// TestLLVMZc compares the 16-bit parcels binutils 2.40 does not know (Zcb,
// Zcmp, Zcmt and their reserved neighbours) with llvm-objdump, and checks
// that every parcel LLVM rejects is illegal for Decode too.
func TestLLVMZc(t *testing.T) {
	needLLVM(t)
	words := all16()
	for i, p := range llvmProfiles {
		g := gnuProfiles[i]
		t.Run(p.arch, func(t *testing.T) {
			t.Parallel()
			sweep(t, llvm, words, p.xlen, p.arch, p.ext, func(l dumpLine) bool {
				// Parcels that binutils decodes are compared with
				// binutils; the rest here.
				if DecodeExt(l.raw, g.xlen, g.ext).Class != ClassIllegal && l.mn != "" {
					in := DecodeExt(l.raw, p.xlen, p.ext)
					return in.Op.row().ext&(ExtZcb|ExtZcmp|ExtZcmt|ExtZcmop) != 0
				}
				return true
			})
		})
	}
}

// TestLLVM32 compares the 32-bit instructions of Zicond and Zimop, which
// binutils 2.40 does not know, and their neighbours with llvm-objdump, and
// Svinval's with a second disassembler (binutils's is TestObjdump32).
func TestLLVM32(t *testing.T) {
	needLLVM(t)
	var words []uint32
	for _, w := range random32() {
		// OP with funct7 7 (Zicond), SYSTEM with funct3 4 (Zimop) and
		// SYSTEM with funct3 0 and funct7 0x0b or 0x0c (Svinval).
		if w&0xfe00007f == 0x0e000033 || w&0x707f == 0x4073 || w&0x707f == 0x73 && (w>>25 == 0x0b || w>>25 == 0x0c) {
			words = append(words, w)
		}
	}
	for _, p := range llvmProfiles {
		t.Run(p.arch, func(t *testing.T) {
			t.Parallel()
			sweep(t, llvm, words, p.xlen, p.arch, p.ext, nil)
		})
	}
}
