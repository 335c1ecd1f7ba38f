package rvgen

import (
	"fmt"
	"math"
)

func f64bits(v float64) uint64 { return math.Float64bits(v) }
func f32bits(v float32) uint32 { return math.Float32bits(v) }

// Registers.

// rd picks a destination register: never the base; the compressed range
// x8..x15 more often; x0 rarely (hints).
func (g *gen) rd() int {
	for {
		var r int
		switch n := g.r.IntN(100); {
		case n < 3:
			r = 0
		case n < 35:
			r = 8 + g.r.IntN(8)
		default:
			r = 1 + g.r.IntN(31)
		}
		if r != g.base && r != g.busy {
			return r
		}
	}
}

// rdNZ is rd without x0.
func (g *gen) rdNZ() int {
	for {
		if r := g.rd(); r != 0 {
			return r
		}
	}
}

// rs picks a source register (any, the base included).
func (g *gen) rs() int {
	if g.r.IntN(3) == 0 {
		return 8 + g.r.IntN(8)
	}
	return g.r.IntN(32)
}

func (g *gen) fr() int {
	if g.r.IntN(3) == 0 {
		return 8 + g.r.IntN(8)
	}
	return g.r.IntN(32)
}

func x(r int) string { return xNames[r] }
func f(r int) string { return fmt.Sprintf("f%d", r) }

// imm12 returns a signed 12-bit immediate, small values more often.
func (g *gen) imm12() int {
	switch g.r.IntN(6) {
	case 0:
		return []int{0, 1, -1, 2047, -2048, 31, -32}[g.r.IntN(7)]
	case 1, 2, 3:
		return g.r.IntN(64) - 32
	default:
		return g.r.IntN(4096) - 2048
	}
}

func (g *gen) shamt(bits int) int {
	switch g.r.IntN(4) {
	case 0:
		return []int{0, 1, bits - 1, bits / 2}[g.r.IntN(4)]
	default:
		return g.r.IntN(bits)
	}
}

// Instruction groups.

var (
	aluRR64 = []string{"add", "sub", "sll", "slt", "sltu", "xor", "srl", "sra", "or", "and",
		"addw", "subw", "sllw", "srlw", "sraw",
		"sh1add", "sh2add", "sh3add", "add.uw", "sh1add.uw", "sh2add.uw", "sh3add.uw",
		"andn", "orn", "xnor", "max", "maxu", "min", "minu", "rol", "ror", "rolw", "rorw",
		"bclr", "bext", "binv", "bset"}
	aluRR32 = []string{"add", "sub", "sll", "slt", "sltu", "xor", "srl", "sra", "or", "and",
		"sh1add", "sh2add", "sh3add",
		"andn", "orn", "xnor", "max", "maxu", "min", "minu", "rol", "ror",
		"bclr", "bext", "binv", "bset"}
	aluR64 = []string{"clz", "ctz", "cpop", "clzw", "ctzw", "cpopw", "sext.b", "sext.h", "zext.h", "orc.b", "rev8", "zext.w", "not", "neg", "negw", "sext.w", "seqz", "snez", "sltz", "sgtz"}
	aluR32 = []string{"clz", "ctz", "cpop", "sext.b", "sext.h", "zext.h", "orc.b", "rev8", "not", "neg", "seqz", "snez", "sltz", "sgtz"}
	aluRI  = []string{"addi", "slti", "sltiu", "xori", "ori", "andi"}
	// shifts by an immediate: name, width of the shift amount (0: XLEN)
	shiftI64 = []struct {
		op   string
		bits int
	}{{"slli", 64}, {"srli", 64}, {"srai", 64}, {"slliw", 32}, {"srliw", 32}, {"sraiw", 32},
		{"slli.uw", 64}, {"rori", 64}, {"roriw", 32}, {"bclri", 64}, {"bexti", 64}, {"binvi", 64}, {"bseti", 64}}
	shiftI32 = []struct {
		op   string
		bits int
	}{{"slli", 32}, {"srli", 32}, {"srai", 32}, {"rori", 32}, {"bclri", 32}, {"bexti", 32}, {"binvi", 32}, {"bseti", 32}}
	mul64 = []string{"mul", "mulh", "mulhsu", "mulhu", "div", "divu", "rem", "remu", "mulw", "divw", "divuw", "remw", "remuw"}
	mul32 = []string{"mul", "mulh", "mulhsu", "mulhu", "div", "divu", "rem", "remu"}
	amoOp = []string{"amoswap", "amoadd", "amoxor", "amoand", "amoor", "amomin", "amomax", "amominu", "amomaxu"}
	ordS  = []string{"", ".aq", ".rl", ".aqrl"}
	rms   = []string{"rne", "rtz", "rdn", "rup", "rmm", "dyn"}
)

// item emits one random instruction (a few for some: the set-up of an
// edge case, an address computation, an LR/SC pair).
func (g *gen) item() {
	if g.ext && g.r.IntN(4) == 0 {
		g.extItem()
		return
	}
	switch n := g.r.IntN(100); {
	case n < 22:
		g.aluRR()
	case n < 34:
		g.aluRI()
	case n < 38:
		g.aluR()
	case n < 41:
		g.upper()
	case n < 50:
		g.mulDiv()
	case n < 57:
		g.loadStore()
	case n < 62:
		g.atomic()
	case n < 67:
		g.branch()
	case n < 68:
		g.loop()
	case n < 76:
		g.compressed()
	case n < 94:
		g.fp()
	case n < 98:
		g.fcsr()
	default:
		switch g.r.IntN(3) {
		case 0:
			g.emit("fence")
		case 1:
			g.emit("fence.i")
		default:
			g.emit("nop")
		}
	}
}

func pick[T any](g *gen, s []T) T { return s[g.r.IntN(len(s))] }

func (g *gen) aluRR() {
	ops := aluRR64
	if g.xlen == 32 {
		ops = aluRR32
	}
	rd := g.rd()
	rs1, rs2 := g.rs(), g.rs()
	if g.r.IntN(3) == 0 {
		rs1 = rd // the compressed two-operand forms
	}
	g.emit("%s %s, %s, %s", pick(g, ops), x(rd), x(rs1), x(rs2))
}

func (g *gen) aluR() {
	ops := aluR64
	if g.xlen == 32 {
		ops = aluR32
	}
	op := pick(g, ops)
	rd := g.rd()
	if op == "ctzw" && rd != 0 {
		// qemu 7.2 counts the trailing zeros of all 64 bits when the
		// low word is zero (the Zbb spec: ctzw of a zero word is 32;
		// TestCtzwUpperBits checks the simulator on that case). Make
		// the low word non-zero, or the upper word zero.
		if g.r.IntN(2) == 0 {
			g.emit("bseti %s, %s, %d", x(rd), x(g.rs()), g.r.IntN(32))
		} else {
			g.emit("sext.w %s, %s", x(rd), x(g.rs()))
		}
		g.emit("ctzw %s, %s", x(rd), x(rd))
		return
	}
	g.emit("%s %s, %s", op, x(rd), x(g.rs()))
}

func (g *gen) aluRI() {
	rd := g.rd()
	rs1 := g.rs()
	if g.r.IntN(3) == 0 {
		rs1 = rd
	}
	switch g.r.IntN(10) {
	case 0, 1, 2, 3:
		g.emit("%s %s, %s, %d", pick(g, aluRI), x(rd), x(rs1), g.imm12())
	case 4:
		if g.xlen == 64 {
			g.emit("addiw %s, %s, %d", x(rd), x(rs1), g.imm12())
		} else {
			g.emit("addi %s, zero, %d", x(rd), g.imm12()) // c.li
		}
	case 5:
		// the sp forms: c.addi16sp, c.addi4spn
		if g.base != 2 && g.busy != 2 && g.r.IntN(2) == 0 {
			g.emit("addi sp, sp, %d", 16*(g.r.IntN(63)-32))
		} else {
			r := 8 + g.r.IntN(8)
			for r == g.base || r == g.busy {
				r = 8 + g.r.IntN(8)
			}
			g.emit("addi %s, sp, %d", x(r), 4*g.r.IntN(256))
		}
	default:
		ops := shiftI64
		if g.xlen == 32 {
			ops = shiftI32
		}
		s := pick(g, ops)
		g.emit("%s %s, %s, %d", s.op, x(rd), x(rs1), g.shamt(s.bits))
	}
}

func (g *gen) upper() {
	rd := g.rd()
	imm := g.r.IntN(1 << 20)
	if g.r.IntN(2) == 0 {
		imm = []int{1, 2, 31, 0xfffff, 0xfffe0, 0x80000, 0x7ffff}[g.r.IntN(7)] // c.lui range and edges
	}
	if g.r.IntN(3) == 0 {
		g.emit("auipc %s, %#x", x(rd), imm)
	} else {
		g.emit("lui %s, %#x", x(rd), imm)
	}
}

// li emits a load of an immediate into a register.
func (g *gen) li(r int, v int64) {
	g.emit("li %s, %d", x(r), v)
}

func (g *gen) mulDiv() {
	ops := mul64
	if g.xlen == 32 {
		ops = mul32
	}
	op := pick(g, ops)
	rd := g.rd()
	rs1, rs2 := g.rs(), g.rs()
	if op[0] == 'd' || op[0] == 'r' {
		w := op[len(op)-1] == 'w'
		switch g.r.IntN(8) {
		case 0, 1:
			rs2 = g.rdNZ()
			g.li(rs2, 0)
		case 2:
			rs1, rs2 = g.rdNZ(), g.rdNZ()
			if rs1 == rs2 {
				break
			}
			if w || g.xlen == 32 {
				g.li(rs1, math.MinInt32)
			} else {
				g.li(rs1, math.MinInt64)
			}
			g.li(rs2, -1)
		}
	}
	g.emit("%s %s, %s, %s", op, x(rd), x(rs1), x(rs2))
}

// offset returns a window offset for an access of size bytes: aligned
// mostly, misaligned sometimes.
func (g *gen) offset(size int) int {
	off := g.r.IntN(WindowSize - size + 1)
	if g.r.IntN(8) != 0 {
		off &^= size - 1
	}
	return off
}

func (g *gen) loadStore() {
	b := x(g.base)
	type acc struct {
		op   string
		size int
		fp   bool
	}
	var ops []acc
	ops = append(ops, acc{"lb", 1, false}, acc{"lh", 2, false}, acc{"lw", 4, false}, acc{"lbu", 1, false}, acc{"lhu", 2, false},
		acc{"sb", 1, false}, acc{"sh", 2, false}, acc{"sw", 4, false},
		acc{"flw", 4, true}, acc{"fld", 8, true}, acc{"fsw", 4, true}, acc{"fsd", 8, true})
	if g.xlen == 64 {
		ops = append(ops, acc{"ld", 8, false}, acc{"lwu", 4, false}, acc{"sd", 8, false})
	}
	a := pick(g, ops)
	off := g.offset(a.size)
	store := a.op[0] == 's' || a.op[:2] == "fs"
	switch {
	case a.fp:
		g.emit("%s %s, %d(%s)", a.op, f(g.fr()), off, b)
	case store:
		g.emit("%s %s, %d(%s)", a.op, x(g.rs()), off, b)
	default:
		g.emit("%s %s, %d(%s)", a.op, x(g.rd()), off, b)
	}
}

// atomic emits an AMO or an LR/SC pair on the window.
func (g *gen) atomic() {
	size, sfx := 4, ".w"
	if g.xlen == 64 && g.r.IntN(2) == 0 {
		size, sfx = 8, ".d"
	}
	t := g.rdNZ()
	off := g.r.IntN(WindowSize/size) * size
	g.emit("addi %s, %s, %d", x(t), x(g.base), off)
	if g.r.IntN(3) != 0 {
		g.emit("%s%s%s %s, %s, (%s)", pick(g, amoOp), sfx, pick(g, ordS), x(g.rd()), x(g.rs()), x(t))
		return
	}
	switch g.r.IntN(6) {
	case 0:
		// an SC with no reservation: fails
		g.emit("sc%s%s %s, %s, (%s)", sfx, pick(g, ordS), x(g.rd()), x(g.rs()), x(t))
		return
	case 1:
		// an SC to another address than the LR's: fails
		rd := g.rd()
		for rd == t {
			rd = g.rd()
		}
		g.emit("lr%s%s %s, (%s)", sfx, pick(g, ordS), x(rd), x(t))
		g.emit("addi %s, %s, %d", x(t), x(t), size*(1+g.r.IntN(4)))
		g.emit("sc%s%s %s, %s, (%s)", sfx, pick(g, ordS), x(g.rd()), x(g.rs()), x(t))
		return
	}
	rd := g.rd()
	for rd == t {
		rd = g.rd()
	}
	g.emit("lr%s%s %s, (%s)", sfx, pick(g, ordS), x(rd), x(t))
	// a few register operations that leave t alone
	for k := g.r.IntN(4); k > 0; k-- {
		r := g.rd()
		if r == t {
			continue
		}
		g.emit("%s %s, %s, %s", pick(g, aluRR32), x(r), x(g.rs()), x(g.rs()))
	}
	g.emit("sc%s%s %s, %s, (%s)", sfx, pick(g, ordS), x(g.rd()), x(g.rs()), x(t))
}

func (g *gen) branch() {
	skip := g.r.IntN(4)
	switch g.r.IntN(8) {
	case 0:
		rd := 0
		if g.r.IntN(2) == 0 {
			rd = g.rd()
		}
		g.emit("jal %s, %s", x(rd), g.newLabel(skip))
	case 1:
		// jalr through a register: auipc + jalr skipping one 4-byte
		// instruction; an odd offset tests that bit 0 is cleared
		t := g.rdNZ()
		rd := g.rd()
		g.out.WriteString("\t.option push\n\t.option norvc\n")
		g.emit("auipc %s, 0", x(t))
		g.emit("jalr %s, %d(%s)", x(rd), 12+g.r.IntN(2), x(t))
		g.emit("addi %s, %s, 1", x(g.rd()), x(g.rs()))
		g.out.WriteString("\t.option pop\n")
	case 2:
		// c.jr / c.jalr
		t := g.rdNZ()
		g.emit("lla %s, %s", x(t), g.newLabel(skip))
		if g.r.IntN(2) == 0 || g.base == 1 {
			g.emit("jr %s", x(t))
		} else {
			g.emit("jalr %s", x(t)) // links in ra
		}
	default:
		op := pick(g, []string{"beq", "bne", "blt", "bge", "bltu", "bgeu"})
		rs1, rs2 := g.rs(), g.rs()
		if g.r.IntN(3) == 0 {
			rs2 = 0 // c.beqz, c.bnez
		}
		g.emit("%s %s, %s, %s", op, x(rs1), x(rs2), g.newLabel(skip))
	}
}

// rmSuffix returns a static rounding mode operand (or none: dyn).
func (g *gen) rmSuffix() string {
	if g.r.IntN(4) == 0 {
		return ""
	}
	return ", " + pick(g, rms)
}

func (g *gen) fp() {
	p := "s"
	if g.r.IntN(2) == 0 {
		p = "d"
	}
	fd, fs1, fs2, fs3 := g.fr(), g.fr(), g.fr(), g.fr()
	switch n := g.r.IntN(100); {
	case n < 20:
		op := pick(g, []string{"fadd", "fsub", "fmul", "fdiv"})
		g.emit("%s.%s %s, %s, %s%s", op, p, f(fd), f(fs1), f(fs2), g.rmSuffix())
	case n < 25:
		g.emit("fsqrt.%s %s, %s%s", p, f(fd), f(fs1), g.rmSuffix())
	case n < 37:
		op := pick(g, []string{"fmadd", "fmsub", "fnmsub", "fnmadd"})
		g.emit("%s.%s %s, %s, %s, %s%s", op, p, f(fd), f(fs1), f(fs2), f(fs3), g.rmSuffix())
	case n < 47:
		op := pick(g, []string{"fsgnj", "fsgnjn", "fsgnjx", "fmin", "fmax"})
		g.emit("%s.%s %s, %s, %s", op, p, f(fd), f(fs1), f(fs2))
	case n < 55:
		op := pick(g, []string{"feq", "flt", "fle"})
		g.emit("%s.%s %s, %s, %s", op, p, x(g.rd()), f(fs1), f(fs2))
	case n < 59:
		g.emit("fclass.%s %s, %s", p, x(g.rd()), f(fs1))
	case n < 72:
		// float to integer
		ops := []string{"w", "wu", "l", "lu"}
		if g.xlen == 32 {
			ops = ops[:2]
		}
		g.emit("fcvt.%s.%s %s, %s%s", pick(g, ops), p, x(g.rd()), f(fs1), g.rmSuffix())
	case n < 82:
		// integer to float
		ops := []string{"w", "wu", "l", "lu"}
		if g.xlen == 32 {
			ops = ops[:2]
		}
		it := pick(g, ops)
		if p == "d" && (it == "w" || it == "wu") {
			// exact: the assembler takes no rounding mode; any valid
			// one may be encoded
			rs2 := 0
			if it == "wu" {
				rs2 = 1
			}
			g.emit(".insn r 0x53, %d, 0x69, %s, %s, x%d", g.rmField(), f(fd), x(g.rs()), rs2)
			return
		}
		g.emit("fcvt.%s.%s %s, %s%s", p, it, f(fd), x(g.rs()), g.rmSuffix())
	case n < 88:
		if p == "s" {
			g.emit("fcvt.s.d %s, %s%s", f(fd), f(fs1), g.rmSuffix())
		} else {
			g.emit(".insn r 0x53, %d, 0x21, %s, %s, x0", g.rmField(), f(fd), f(fs1)) // fcvt.d.s
		}
	default:
		switch {
		case g.xlen == 64 && g.r.IntN(2) == 0:
			if g.r.IntN(2) == 0 {
				g.emit("fmv.x.d %s, %s", x(g.rd()), f(fs1))
			} else {
				g.emit("fmv.d.x %s, %s", f(fd), x(g.rs()))
			}
		case g.r.IntN(2) == 0:
			g.emit("fmv.x.w %s, %s", x(g.rd()), f(fs1))
		default:
			g.emit("fmv.w.x %s, %s", f(fd), x(g.rs()))
		}
	}
}

// rmField returns an rm field value: a static mode or dyn (7).
func (g *gen) rmField() int {
	v := g.r.IntN(6)
	if v == 5 {
		return 7
	}
	return v
}

// fcsr emits an access to the FP CSRs that keeps frm valid.
func (g *gen) fcsr() {
	switch g.r.IntN(10) {
	case 0, 1:
		g.emit("fsrmi %s, %d", x(g.rd()), g.r.IntN(5))
	case 2:
		g.emit("frflags %s", x(g.rd()))
	case 3:
		g.emit("frcsr %s", x(g.rd()))
	case 4:
		g.emit("frrm %s", x(g.rd()))
	case 5:
		g.emit("csrrs %s, fflags, %s", x(g.rd()), x(g.rs()))
	case 6:
		g.emit("csrrw %s, fflags, %s", x(g.rd()), x(g.rs()))
	case 7:
		// clearing bits of a valid frm (0..4) leaves it valid
		g.emit("csrrc %s, %s, %s", x(g.rd()), pick(g, []string{"fcsr", "frm"}), x(g.rs()))
	case 8:
		g.emit("%s %s, fflags, %d", pick(g, []string{"csrrwi", "csrrsi", "csrrci"}), x(g.rd()), g.r.IntN(32))
	default:
		g.emit("fsflagsi %s, 0", x(g.rd()))
	}
}

// cReg picks a register of the compressed range x8..x15 that is not the
// base.
func (g *gen) cReg() int {
	for {
		if r := 8 + g.r.IntN(8); r != g.base {
			return r
		}
	}
}

// nz6 returns a non-zero signed 6-bit immediate.
func (g *gen) nz6() int {
	for {
		if v := g.r.IntN(64) - 32; v != 0 {
			return v
		}
	}
}

// compressed emits an explicitly compressed instruction (the assembler
// compresses many others on its own).
func (g *gen) compressed() {
	rd, rs2 := g.cReg(), g.r.IntN(8)+8
	switch g.r.IntN(16) {
	case 0:
		ops := []string{"c.sub", "c.xor", "c.or", "c.and"}
		if g.xlen == 64 {
			ops = append(ops, "c.subw", "c.addw")
		}
		g.emit("%s %s, %s", pick(g, ops), x(rd), x(rs2))
	case 1:
		g.emit("c.andi %s, %d", x(rd), g.r.IntN(64)-32)
	case 2:
		g.emit("%s %s, %d", pick(g, []string{"c.srli", "c.srai"}), x(rd), 1+g.r.IntN(g.xlen-1))
	case 3:
		g.emit("c.slli %s, %d", x(g.rdNZ()), 1+g.r.IntN(g.xlen-1))
	case 4:
		g.emit("c.addi %s, %d", x(g.rdNZ()), g.nz6())
	case 5:
		if g.xlen == 64 {
			g.emit("c.addiw %s, %d", x(g.rdNZ()), g.r.IntN(64)-32)
		} else {
			g.emit("c.li %s, %d", x(g.rdNZ()), g.r.IntN(64)-32)
		}
	case 6:
		r := g.rdNZ()
		for r == 2 {
			r = g.rdNZ()
		}
		imm := g.r.IntN(31) + 1
		if g.r.IntN(2) == 0 {
			imm += 0xfffe0 - 1
		}
		g.emit("c.lui %s, %#x", x(r), imm)
	case 7:
		g.emit("%s %s, %s", pick(g, []string{"c.mv", "c.add"}), x(g.rdNZ()), x(1+g.r.IntN(31)))
	case 8, 9:
		g.cMem()
	case 10:
		g.emit("c.j %s", g.newLabel(g.r.IntN(4)))
	case 11:
		if g.xlen == 32 && g.base != 1 {
			g.emit("c.jal %s", g.newLabel(g.r.IntN(4)))
		} else {
			g.emit("c.nop")
		}
	case 12:
		g.emit("%s %s, %s", pick(g, []string{"c.beqz", "c.bnez"}), x(8+g.r.IntN(8)), g.newLabel(g.r.IntN(4)))
	case 13:
		if g.base != 2 {
			g.emit("c.addi16sp sp, %d", 16*g.nz6())
		} else {
			g.emit("c.addi4spn %s, sp, %d", x(rd), 4*(1+g.r.IntN(255)))
		}
	case 14:
		g.emit("c.addi4spn %s, sp, %d", x(rd), 4*(1+g.r.IntN(255)))
	default:
		g.emit("c.li %s, %d", x(g.rdNZ()), g.r.IntN(64)-32)
	}
}

// cMem emits a compressed load or store on the window: base-relative
// when the base is x8..x15, sp-relative when it is sp.
func (g *gen) cMem() {
	type acc struct {
		op   string
		size int
		fp   bool
	}
	b := x(g.base)
	switch {
	case g.base == 2:
		ops := []acc{{"c.lwsp", 4, false}, {"c.swsp", 4, false}, {"c.fldsp", 8, true}, {"c.fsdsp", 8, true}}
		if g.xlen == 64 {
			ops = append(ops, acc{"c.ldsp", 8, false}, acc{"c.sdsp", 8, false})
		} else {
			ops = append(ops, acc{"c.flwsp", 4, true}, acc{"c.fswsp", 4, true})
		}
		a := pick(g, ops)
		off := g.r.IntN(WindowSize/a.size) * a.size
		switch {
		case a.fp:
			g.emit("%s %s, %d(sp)", a.op, f(g.fr()), off)
		case a.op[2] == 's':
			g.emit("%s %s, %d(sp)", a.op, x(g.rs()), off)
		default:
			g.emit("%s %s, %d(sp)", a.op, x(g.rdNZ()), off)
		}
	case g.base >= 8 && g.base < 16:
		ops := []acc{{"c.lw", 4, false}, {"c.sw", 4, false}, {"c.fld", 8, true}, {"c.fsd", 8, true}}
		if g.xlen == 64 {
			ops = append(ops, acc{"c.ld", 8, false}, acc{"c.sd", 8, false})
		} else {
			ops = append(ops, acc{"c.flw", 4, true}, acc{"c.fsw", 4, true})
		}
		a := pick(g, ops)
		off := g.r.IntN(32) * a.size // 5-bit scaled offsets
		r := 8 + g.r.IntN(8)
		switch {
		case a.fp:
			g.emit("%s %s, %d(%s)", a.op, f(r), off, b)
		case a.op[2] == 's':
			g.emit("%s %s, %d(%s)", a.op, x(r), off, b)
		default:
			g.emit("%s %s, %d(%s)", a.op, x(g.cReg()), off, b)
		}
	default:
		g.loadStore()
	}
}

// loop emits a counted loop with a backward branch: a counter the body
// does not write, 1 to 5 iterations of 1 to 4 straight-line
// instructions.
func (g *gen) loop() {
	// no forward branch may land inside the loop (it would skip the
	// counter's initialization)
	for _, p := range g.pending {
		fmt.Fprintf(g.out, "%s:\n", p.name)
	}
	g.pending = g.pending[:0]
	c := g.rdNZ()
	g.busy = c
	g.label++
	top := fmt.Sprintf(".Lc%d_%d", g.c, g.label)
	g.emit("li %s, %d", x(c), 1+g.r.IntN(5))
	fmt.Fprintf(g.out, "%s:\n", top)
	for k := 1 + g.r.IntN(4); k > 0; k-- {
		switch g.r.IntN(5) {
		case 0:
			g.aluRR()
		case 1:
			g.aluRI()
		case 2:
			g.mulDiv()
		case 3:
			g.loadStore()
		default:
			g.fp()
		}
	}
	g.emit("addi %s, %s, -1", x(c), x(c))
	g.emit("bnez %s, %s", x(c), top)
	g.busy = 0
}

// Extensions of Config.Ext.

var (
	extRR64 = []string{"clmul", "clmulh", "clmulr", "pack", "packh", "packw", "xperm4", "xperm8"}
	extRR32 = []string{"clmul", "clmulh", "clmulr", "pack", "packh", "xperm4", "xperm8"}
	extR64  = []string{"brev8"}
	extR32  = []string{"brev8", "zip", "unzip"}
)

// extItem emits an instruction of Zbc, Zbkb, Zbkx or Zfh.
func (g *gen) extItem() {
	switch n := g.r.IntN(10); {
	case n < 3:
		ops := extRR64
		if g.xlen == 32 {
			ops = extRR32
		}
		g.emit("%s %s, %s, %s", pick(g, ops), x(g.rd()), x(g.rs()), x(g.rs()))
	case n < 4:
		ops := extR64
		if g.xlen == 32 {
			ops = extR32
		}
		g.emit("%s %s, %s", pick(g, ops), x(g.rd()), x(g.rs()))
	default:
		g.half()
	}
}

// half emits a Zfh instruction.
func (g *gen) half() {
	fd, fs1, fs2, fs3 := g.fr(), g.fr(), g.fr(), g.fr()
	switch n := g.r.IntN(100); {
	case n < 16:
		op := pick(g, []string{"fadd", "fsub", "fmul", "fdiv"})
		g.emit("%s.h %s, %s, %s%s", op, f(fd), f(fs1), f(fs2), g.rmSuffix())
	case n < 20:
		g.emit("fsqrt.h %s, %s%s", f(fd), f(fs1), g.rmSuffix())
	case n < 30:
		op := pick(g, []string{"fmadd", "fmsub", "fnmsub", "fnmadd"})
		g.emit("%s.h %s, %s, %s, %s%s", op, f(fd), f(fs1), f(fs2), f(fs3), g.rmSuffix())
	case n < 38:
		op := pick(g, []string{"fsgnj", "fsgnjn", "fsgnjx", "fmin", "fmax"})
		g.emit("%s.h %s, %s, %s", op, f(fd), f(fs1), f(fs2))
	case n < 45:
		op := pick(g, []string{"feq", "flt", "fle"})
		g.emit("%s.h %s, %s, %s", op, x(g.rd()), f(fs1), f(fs2))
	case n < 48:
		g.emit("fclass.h %s, %s", x(g.rd()), f(fs1))
	case n < 58:
		ops := []string{"w", "wu", "l", "lu"}
		if g.xlen == 32 {
			ops = ops[:2]
		}
		g.emit("fcvt.%s.h %s, %s%s", pick(g, ops), x(g.rd()), f(fs1), g.rmSuffix())
	case n < 66:
		ops := []string{"w", "wu", "l", "lu"}
		if g.xlen == 32 {
			ops = ops[:2]
		}
		g.emit("fcvt.h.%s %s, %s%s", pick(g, ops), f(fd), x(g.rs()), g.rmSuffix())
	case n < 76:
		// conversions between H and S or D; fcvt.s.h and fcvt.d.h are
		// exact, so any valid rounding mode may be encoded
		switch g.r.IntN(4) {
		case 0:
			g.emit("fcvt.h.s %s, %s%s", f(fd), f(fs1), g.rmSuffix())
		case 1:
			g.emit("fcvt.h.d %s, %s%s", f(fd), f(fs1), g.rmSuffix())
		case 2:
			g.emit(".insn r 0x53, %d, 0x20, %s, %s, x2", g.rmField(), f(fd), f(fs1)) // fcvt.s.h
		default:
			g.emit(".insn r 0x53, %d, 0x21, %s, %s, x2", g.rmField(), f(fd), f(fs1)) // fcvt.d.h
		}
	case n < 86:
		if g.r.IntN(2) == 0 {
			g.emit("fmv.x.h %s, %s", x(g.rd()), f(fs1))
		} else {
			g.emit("fmv.h.x %s, %s", f(fd), x(g.rs()))
		}
	default:
		off := g.offset(2)
		if g.r.IntN(2) == 0 {
			g.emit("flh %s, %d(%s)", f(fd), off, x(g.base))
		} else {
			g.emit("fsh %s, %d(%s)", f(fs1), off, x(g.base))
		}
	}
}

// f16Specials are binary16 edge cases: zeros, infinities, NaNs (quiet,
// signalling, with payloads), the smallest and largest subnormals and
// normals, one and values near the integer conversion limits.
var f16Specials = []uint16{0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7d00, 0x7c01, 0x7fff,
	0x0001, 0x8001, 0x03ff, 0x0400, 0x8400, 0x7bff, 0xfbff, 0x3c00, 0xbc00, 0x3800, 0x3e00, 0x4100}

// f16 returns a binary16 value: edge cases, small integers and halves,
// or random bits.
func (g *gen) f16() uint16 {
	r := g.r
	switch r.IntN(4) {
	case 0:
		return f16Specials[r.IntN(len(f16Specials))]
	case 1:
		// small integers and halves (exact conversions, ties)
		v := float32(r.IntN(201)-100) / 2
		b := math.Float32bits(v)
		if v == 0 {
			return uint16(b >> 16)
		}
		// exact in binary16: rebias the exponent, keep 10 bits
		e := int(b>>23&0xff) - 127 + 15
		return uint16(b>>16&0x8000) | uint16(e)<<10 | uint16(b>>13&0x3ff)
	default:
		return uint16(r.Uint32())
	}
}
