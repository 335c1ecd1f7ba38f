// Package rvgen generates random but valid RISC-V instruction sequences as
// static Linux programs for differential testing of the simulator against
// qemu-riscv64 and qemu-riscv32.
//
// A program holds one or more cases. Each case loads every integer
// register, every FP register and fcsr from a table of random values
// (edge cases included: 0, -1, INT_MIN, INT_MAX, ±0, ±inf, subnormals,
// quiet and signalling NaNs, badly NaN-boxed singles), runs a random
// sequence of instructions (RV32/RV64 I, M, A, F, D, Zba, Zbb, Zbs, the
// compressed forms the assembler picks, forward branches and jumps, the FP
// CSRs; with Config.Ext also Zbc, Zbkb, Zbkx and Zfh), then writes its
// memory window and its register dump to standard
// output with write(2). After the last case the program exits with code 0.
//
// One integer register per case, the base, points to the case's memory
// window (WindowSize bytes, random contents); the sequence never writes
// it. Loads, stores, AMOs and LR/SC pairs address the window through it.
//
// The output of a case is [DumpSize] bytes: the window, x1..x31 (XLEN/8
// bytes each, little endian), f0..f31 (8 bytes each, raw bits) and fcsr
// (XLEN/8 bytes). [ParseDump] reads it back.
//
// Generation is deterministic: a case depends only on the seed and its
// index, and the first k instructions of a case do not depend on its
// length (so a failing case can be shortened to the first instruction
// whose result differs).
package rvgen

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
)

// WindowSize is the size of each case's memory window in bytes.
const WindowSize = 256

// Config describes a program.
type Config struct {
	XLEN  int    // 32 or 64
	Seed  uint64 // program seed
	Cases int    // number of cases (default 1)
	First int    // index of the first case (cases are numbered First, First+1, ...)
	Insts int    // random instructions per case (default 200)
	// Ext adds the extensions qemu 7.2 knows beyond RV64GC/RV32GC with
	// Zba/Zbb/Zbs: Zbc, Zbkb, Zbkx and Zfh (see ExtMarch and ExtCPU).
	// Programs without Ext are the same as before it existed.
	Ext bool
}

// ExtMarch is what Config.Ext adds to the -march option.
const ExtMarch = "_zbc_zbkb_zbkx_zfh"

// ExtCPU returns the qemu -cpu option that Config.Ext programs need.
func ExtCPU(xlen int) string {
	return fmt.Sprintf("rv%d,zbc=true,zbkb=true,zbkx=true,Zfh=true", xlen)
}

// MarchFor returns the -march option of cfg's programs.
func MarchFor(cfg Config) string {
	if cfg.Ext {
		return March(cfg.XLEN) + ExtMarch
	}
	return March(cfg.XLEN)
}

// DumpSize is the number of bytes a case writes.
func DumpSize(xlen int) int { return WindowSize + 32*(xlen/8) + 32*8 }

// March returns the -march option the programs need.
func March(xlen int) string {
	if xlen == 32 {
		return "rv32gc_zba_zbb_zbs"
	}
	return "rv64gc_zba_zbb_zbs"
}

// Mabi returns the -mabi option.
func Mabi(xlen int) string {
	if xlen == 32 {
		return "ilp32d"
	}
	return "lp64d"
}

// State is the architectural state a case dumps.
type State struct {
	Mem  []byte
	X    [32]uint64
	F    [32]uint64
	FCSR uint64
}

// ParseDump splits a program's output into the states of its cases.
func ParseDump(b []byte, xlen int) ([]State, error) {
	n := DumpSize(xlen)
	xb := xlen / 8
	var out []State
	for len(b) >= n {
		var s State
		s.Mem = b[:WindowSize]
		p := b[WindowSize:]
		word := func() uint64 {
			var v uint64
			if xb == 4 {
				v = uint64(binary.LittleEndian.Uint32(p))
			} else {
				v = binary.LittleEndian.Uint64(p)
			}
			p = p[xb:]
			return v
		}
		for i := 1; i < 32; i++ {
			s.X[i] = word()
		}
		for i := range s.F {
			s.F[i] = binary.LittleEndian.Uint64(p)
			p = p[8:]
		}
		s.FCSR = word()
		out = append(out, s)
		b = b[n:]
	}
	if len(b) != 0 {
		return out, fmt.Errorf("rvgen: %d trailing bytes after %d cases", len(b), len(out))
	}
	return out, nil
}

// Diff describes the differences between two states ("" when equal).
func Diff(got, want State) string {
	var sb strings.Builder
	for i := 1; i < 32; i++ {
		if got.X[i] != want.X[i] {
			fmt.Fprintf(&sb, "  x%d (%s): %#x, want %#x\n", i, xNames[i], got.X[i], want.X[i])
		}
	}
	for i := range got.F {
		if got.F[i] != want.F[i] {
			fmt.Fprintf(&sb, "  f%d: %#016x, want %#016x\n", i, got.F[i], want.F[i])
		}
	}
	if got.FCSR != want.FCSR {
		fmt.Fprintf(&sb, "  fcsr: %#x, want %#x (frm %d flags %05b, want frm %d flags %05b)\n", got.FCSR, want.FCSR,
			got.FCSR>>5, got.FCSR&31, want.FCSR>>5, want.FCSR&31)
	}
	for i := range got.Mem {
		if i < len(want.Mem) && got.Mem[i] != want.Mem[i] {
			fmt.Fprintf(&sb, "  window byte %d: %#02x, want %#02x\n", i, got.Mem[i], want.Mem[i])
		}
	}
	return sb.String()
}

var xNames = [32]string{
	"zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2",
	"s0", "s1", "a0", "a1", "a2", "a3", "a4", "a5",
	"a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7",
	"s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6",
}

// Generate returns the assembly source of a program.
func Generate(cfg Config) string {
	if cfg.XLEN != 32 {
		cfg.XLEN = 64
	}
	if cfg.Cases <= 0 {
		cfg.Cases = 1
	}
	if cfg.Insts <= 0 {
		cfg.Insts = 200
	}
	var text, data strings.Builder
	fmt.Fprintf(&text, "# rvgen seed %d, cases %d..%d, %d instructions each, RV%d\n",
		cfg.Seed, cfg.First, cfg.First+cfg.Cases-1, cfg.Insts, cfg.XLEN)
	text.WriteString("\t.option norelax\n\t.text\n\t.globl _start\n_start:\n")
	data.WriteString("\t.data\n")
	for c := cfg.First; c < cfg.First+cfg.Cases; c++ {
		g := newGen(cfg.XLEN, cfg.Seed, c)
		g.ext = cfg.Ext
		g.emitCase(&text, &data, cfg.Insts)
	}
	text.WriteString("\tli a0, 0\n\tli a7, 93\n\tecall\n")
	return text.String() + data.String()
}

type gen struct {
	r     *rand.Rand
	xlen  int
	ext   bool // Config.Ext
	xb    int  // bytes per integer register
	c     int  // case index
	base  int  // register holding the window address
	busy  int  // a register the current item must not write (0: none)
	out   *strings.Builder
	label int
	// pending forward labels: emitted when their countdown reaches 0
	pending []pendingLabel
}

type pendingLabel struct {
	name string
	left int
}

func newGen(xlen int, seed uint64, c int) *gen {
	return &gen{r: rand.New(rand.NewPCG(seed, uint64(c)*0x9e3779b97f4a7c15+1)), xlen: xlen, xb: xlen / 8, c: c}
}

func (g *gen) emit(format string, args ...any) {
	fmt.Fprintf(g.out, "\t"+format+"\n", args...)
}

func (g *gen) emitCase(text, data *strings.Builder, n int) {
	g.out = text
	// the base register: sp a quarter of the time (so that the
	// sp-relative compressed loads and stores appear), else any register
	// but x0
	g.base = 2
	if g.r.IntN(4) != 0 {
		g.base = 1 + g.r.IntN(31)
	}
	win := fmt.Sprintf("c%d_win", g.c)
	ini := fmt.Sprintf("c%d_init", g.c)
	xv := make([]uint64, 32)
	for i := 1; i < 32; i++ {
		xv[i] = g.intValue()
	}
	fv := make([]uint64, 32)
	for i := range fv {
		fv[i] = g.fpValue()
	}
	if g.ext {
		// half of the FP registers hold NaN-boxed halves
		for i := range fv {
			if g.r.IntN(2) == 0 {
				fv[i] = 0xffffffffffff0000 | uint64(g.f16())
			}
		}
	}
	fcsr := uint64(g.r.IntN(5))<<5 | uint64(g.r.IntN(32))
	mem := make([]byte, WindowSize)
	for i := 0; i < WindowSize; i += 8 {
		var v uint64
		switch g.r.IntN(3) {
		case 0:
			v = g.intValue()
		case 1:
			v = g.fpValue()
		default:
			v = g.r.Uint64()
		}
		binary.LittleEndian.PutUint64(mem[i:], v)
	}

	// data: window, dump area, initial values
	fmt.Fprintf(data, "\t.balign 16\n%s:\n", win)
	for i := 0; i < WindowSize; i += 16 {
		fmt.Fprintf(data, "\t.byte ")
		for j := 0; j < 16; j++ {
			if j > 0 {
				data.WriteString(",")
			}
			fmt.Fprintf(data, "%#x", mem[i+j])
		}
		data.WriteString("\n")
	}
	fmt.Fprintf(data, "\t.zero %d\n", DumpSize(g.xlen)-WindowSize)
	fmt.Fprintf(data, "\t.balign 16\n%s:\n", ini)
	word := ".dword"
	if g.xlen == 32 {
		word = ".word"
	}
	for i := 0; i < 32; i++ {
		if i == g.base {
			fmt.Fprintf(data, "\t%s %s\n", word, win)
		} else {
			fmt.Fprintf(data, "\t%s %#x\n", word, xv[i]&g.mask())
		}
	}
	for i := range fv {
		fmt.Fprintf(data, "\t.dword %#x\n", fv[i])
	}
	fmt.Fprintf(data, "\t%s %#x\n", word, fcsr)

	// text: load the state
	ld, sd := "ld", "sd"
	if g.xlen == 32 {
		ld, sd = "lw", "sw"
	}
	fmt.Fprintf(text, "# case %d: base x%d (%s)\n", g.c, g.base, xNames[g.base])
	g.emit("lla t0, %s", ini)
	g.emit("%s t1, %d(t0)", ld, 32*g.xb+32*8)
	g.emit("fscsr t1")
	for i := 0; i < 32; i++ {
		g.emit("fld f%d, %d(t0)", i, 32*g.xb+8*i)
	}
	for i := 1; i < 32; i++ {
		if i != 5 {
			g.emit("%s x%d, %d(t0)", ld, i, i*g.xb)
		}
	}
	g.emit("%s t0, %d(t0)", ld, 5*g.xb)

	for i := 0; i < n; i++ {
		fmt.Fprintf(text, "# %d.%d\n", g.c, i)
		g.item()
		g.tick()
	}
	for _, p := range g.pending {
		fmt.Fprintf(text, "%s:\n", p.name)
	}
	g.pending = nil

	// dump
	fmt.Fprintf(text, "# case %d: dump\n", g.c)
	b := xNames[g.base]
	off := WindowSize
	for i := 1; i < 32; i++ {
		g.emit("%s x%d, %d(%s)", sd, i, off, b)
		off += g.xb
	}
	for i := 0; i < 32; i++ {
		g.emit("fsd f%d, %d(%s)", i, off, b)
		off += 8
	}
	tmp := 5
	if g.base == 5 {
		tmp = 6
	}
	g.emit("frcsr x%d", tmp)
	g.emit("%s x%d, %d(%s)", sd, tmp, off, b)
	if g.base != 11 {
		g.emit("mv a1, %s", b)
	}
	g.emit("li a0, 1")
	g.emit("li a2, %d", DumpSize(g.xlen))
	g.emit("li a7, 64")
	g.emit("ecall")
}

func (g *gen) mask() uint64 {
	if g.xlen == 32 {
		return 0xffffffff
	}
	return ^uint64(0)
}

// tick counts one item down on the pending labels.
func (g *gen) tick() {
	keep := g.pending[:0]
	for _, p := range g.pending {
		p.left--
		if p.left <= 0 {
			fmt.Fprintf(g.out, "%s:\n", p.name)
			continue
		}
		keep = append(keep, p)
	}
	g.pending = keep
}

func (g *gen) newLabel(skip int) string {
	g.label++
	name := fmt.Sprintf(".Lc%d_%d", g.c, g.label)
	g.pending = append(g.pending, pendingLabel{name, skip + 1})
	return name
}

// Values.

func (g *gen) intValue() uint64 {
	r := g.r
	switch r.IntN(16) {
	case 0:
		return 0
	case 1:
		return ^uint64(0)
	case 2:
		return 1 << 63
	case 3:
		return 1<<63 - 1
	case 4:
		return 0xffffffff80000000 // INT32_MIN
	case 5:
		return []uint64{0x7fffffff, 0x80000000, 0xffffffff, 1, 2, 0x100000000}[r.IntN(6)]
	case 6, 7:
		return uint64(int64(r.IntN(201) - 100))
	case 8:
		return uint64(int64(int32(r.Uint32())))
	case 9:
		return g.fpValue()
	case 10:
		// a few bits set
		v := uint64(0)
		for k := r.IntN(4); k >= 0; k-- {
			v |= 1 << r.IntN(64)
		}
		return v
	case 11:
		return uint64(r.Uint32())
	default:
		return r.Uint64()
	}
}

var f64Specials = []uint64{
	0, 1 << 63, // ±0
	0x7ff0000000000000, 0xfff0000000000000, // ±inf
	0x7ff8000000000000, 0xfff8000000000000, 0x7ff8000000000123, // qNaN
	0x7ff4000000000000, 0x7ff0000000000001, 0xfff0000000000100, // sNaN
	0x0000000000000001, 0x000fffffffffffff, 0x8000000000000001, 0x8008000000000000, // subnormals
	0x0010000000000000, 0x8010000000000000, 0x7fefffffffffffff, 0xffefffffffffffff,
	0x3ff0000000000000, 0xbff0000000000000, 0x3fe0000000000000, 0x3ff8000000000000, 0x4004000000000000, 0xc004000000000000, // 1 -1 .5 1.5 2.5 -2.5
	0x41e0000000000000, 0xc1e0000000000000, 0x41dfffffffe00000, 0x41dfffffffffffff, 0xc1e0000000100000, // ±2^31, 2^31-1, 2^31-ε, -2^31-.5
	0x41f0000000000000, 0x41efffffffe00000, 0x41effffffff00000, // 2^32, 2^32-1, 2^32-.5
	0x43e0000000000000, 0xc3e0000000000000, 0x43dfffffffffffff, 0x43f0000000000000, 0x43efffffffffffff, // 2^63, -2^63, 2^64
	0x36a0000000000000, 0x3690000000000000, 0x47efffffe0000000, 0x47efffff00000000, // float32 range edges
}

var f32Specials = []uint32{
	0, 1 << 31,
	0x7f800000, 0xff800000,
	0x7fc00000, 0xffc00000, 0x7fc00001,
	0x7fa00000, 0x7f800001, 0xff800100,
	0x00000001, 0x007fffff, 0x80000001, 0x80400000,
	0x00800000, 0x80800000, 0x7f7fffff, 0xff7fffff,
	0x3f800000, 0xbf800000, 0x3f000000, 0x3fc00000, 0x40200000, 0xc0200000,
	0x4f000000, 0xcf000000, 0x4effffff, 0x4f800000, 0x4f7fffff, 0x5f000000, 0xdf000000, 0x5effffff, 0x5f800000,
}

// fpValue returns FP register bits: a NaN-boxed single, a double, or
// (rarely) a badly boxed single.
func (g *gen) fpValue() uint64 {
	r := g.r
	switch r.IntN(8) {
	case 0, 1, 2:
		return 0xffffffff00000000 | uint64(g.f32())
	case 3:
		if r.IntN(4) == 0 {
			return uint64(g.f32()) | uint64(r.Uint32()&0xfffffff0)<<32 // not boxed
		}
		return f64Specials[r.IntN(len(f64Specials))]
	default:
		return g.f64()
	}
}

func (g *gen) f64() uint64 {
	r := g.r
	switch r.IntN(6) {
	case 0:
		return f64Specials[r.IntN(len(f64Specials))]
	case 1:
		// small integers and halves (exact conversions, ties)
		v := float64(r.IntN(2001)-1000) / 2
		return f64bits(v)
	case 2:
		// subnormal or near the bottom
		return uint64(r.IntN(2))<<63 | uint64(r.IntN(3))<<52 | r.Uint64()>>12
	default:
		sign := uint64(r.IntN(2)) << 63
		exp := uint64(1023 - 40 + r.IntN(104)) // 2^-40 .. 2^63
		return sign | exp<<52 | r.Uint64()>>12
	}
}

func (g *gen) f32() uint32 {
	r := g.r
	switch r.IntN(6) {
	case 0:
		return f32Specials[r.IntN(len(f32Specials))]
	case 1:
		v := float32(r.IntN(2001)-1000) / 2
		return f32bits(v)
	case 2:
		return uint32(r.IntN(2))<<31 | uint32(r.IntN(3))<<23 | r.Uint32()>>9
	default:
		sign := uint32(r.IntN(2)) << 31
		exp := uint32(127 - 30 + r.IntN(94)) // 2^-30 .. 2^63
		return sign | exp<<23 | r.Uint32()>>9
	}
}

// Item returns the source lines of instruction i of case c in a program's
// source (for reports).
func Item(src string, c, i int) string {
	start := fmt.Sprintf("# %d.%d\n", c, i)
	k := strings.Index(src, start)
	if k < 0 {
		return ""
	}
	rest := src[k+len(start):]
	if e := strings.Index(rest, "\n# "); e >= 0 {
		rest = rest[:e+1]
	}
	return rest
}
