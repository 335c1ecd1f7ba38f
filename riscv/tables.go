package riscv

// Op identifies an instruction, together with the XLEN it was decoded for:
// it is the row of the instruction table that an encoding matched, with a
// flag for RV32. Its String is the instruction's mnemonic as the ISA manual
// writes it, with compressed forms keeping their "c." / "cm." name ("addi",
// "c.addi", "cm.push"). Op values are stable only within one build of the
// package; compare mnemonics, not numbers, across builds.
type Op uint16

// OpIllegal is the Op of RV64 encodings that are not instructions (RV32
// ones have the RV32 flag set as well).
const OpIllegal Op = 0

// opRV32 flags an Op decoded for RV32.
const opRV32 Op = 0x8000

// String returns the mnemonic of the instruction, or "illegal".
func (o Op) String() string {
	if r := o &^ opRV32; int(r) < len(ops) {
		return ops[r].name
	}
	return "Op(" + itoa(int(o)) + ")"
}

// row returns the table row of o.
func (o Op) row() *opInfo {
	if r := o &^ opRV32; int(r) < len(ops) {
		return &ops[r]
	}
	return &ops[0]
}

// form is the operand layout of an instruction: where Decode finds Rd, Rs1
// and Imm (see formFields in decode.go).
type form uint8

const (
	fNone form = iota // no operands (ecall, mret, ...)

	// 32-bit formats (ISA manual "Base instruction formats").
	fR      // rd, rs1, rs2
	fR2     // rd, rs1 (rs2 field is an opcode selector)
	fR4     // rd, rs1, rs2, rs3
	fI      // rd, rs1, imm[11:0] (also loads, shifts, csr with rs1)
	fIJ     // jalr: rd, imm(rs1); Imm is the offset
	fCSRI   // rd, csr, uimm (rs1 field is an immediate)
	fS      // rs2, imm(rs1): no rd
	fB      // rs1, rs2, pc-relative offset
	fU      // rd, imm[31:12]
	fJ      // rd, pc-relative offset
	fFence  // fence pred, succ (rd and rs1 ignored)
	fSfence // sfence.vma rs1, rs2: no rd

	// Compressed formats (ISA manual "Compressed instruction formats" and
	// the Zc* formats), named after the expansion they have.
	fCNop    // c.nop: no registers
	fCR      // c.add: rd = rs1 = rd, rs2
	fCMv     // c.mv: rd, rs1 = x0, rs2
	fCJr     // c.jr: rd = x0, rs1
	fCJalr   // c.jalr: rd = x1, rs1
	fCI      // c.addi, c.slli, c.addiw: rd = rs1 = rd (bits 11:7)
	fCLi     // c.li, c.lui: rd, rs1 = x0
	fCSP16   // c.addi16sp: rd = rs1 = x2
	fCIW     // c.addi4spn: rd' (4:2), rs1 = x2
	fCLSP    // c.lwsp ...: rd (11:7), rs1 = x2
	fCSSP    // c.swsp ...: rs1 = x2, rs2 (6:2)
	fCL      // c.lw ...: rd' (4:2), rs1' (9:7)
	fCS      // c.sw ...: rs1' (9:7), rs2' (4:2)
	fCA      // c.sub ..., Zcb unary ops: rd' = rs1' (9:7)
	fCB      // c.beqz, c.bnez: rs1' (9:7), offset
	fCJ      // c.j: rd = x0, offset
	fCJal    // c.jal: rd = x1, offset
	fCMPP    // cm.push, cm.pop: rd = rs1 = x2
	fCMRet   // cm.popret, cm.popretz: returns through x1
	fCMVSA   // cm.mvsa01: rd = r1s, rs1 = x10
	fCMVA    // cm.mva01s: rd = x10, rs1 = r1s
	fCMJT    // cm.jt: table index
	fCMJALT  // cm.jalt: table index, rd = x1
	fCEBreak // c.ebreak
)

// check is a constraint on an encoding that a mask and match cannot express
// (a field that must be non-zero, ...).
type check uint8

const (
	chkNone   check = iota
	chkRM           // rounding mode (bits 14:12) is not one of the reserved values 5 and 6
	chkRdNZ         // rd (bits 11:7) != 0
	chkRs1NZ        // rs1 (bits 11:7 in CR format) != 0
	chkRs2NZ        // rs2 (bits 6:2 in CR format) != 0
	chkNZ4SPN       // c.addi4spn: nzuimm (bits 12:5) != 0
	chkNZ16SP       // c.addi16sp: nzimm (bits 12, 6:2) != 0
	chkLui          // c.lui: rd != 2 and nzimm (bits 12, 6:2) != 0
	chkRlist        // cm.push/pop: rlist (bits 7:4) >= 4
	chkMvsa         // cm.mvsa01: r1s' != r2s'
	chkNoZcm        // c.fsdsp: neither Zcmp nor Zcmt, which take over its encodings
)

// dis tells how Disasm prints an instruction.
type dis uint8

const (
	disAsm  dis = iota // riscv64asm decodes it and this package fixes up the text
	disHand            // printed by this package alone
)

// opInfo is one row of the instruction table.
type opInfo struct {
	name  string
	mask  uint32 // bits that identify the instruction
	match uint32 // their value
	ext   Ext    // extensions that must all be present
	xlen  uint8  // 0: RV32 and RV64; 32 or 64: only that XLEN
	class Class
	form  form
	chk   check
	dis   dis
	len   uint8 // 2 or 4

	// Filled in by init from the fields above.
	need    Ext // ext plus extRV32/extRV64 for xlen
	rd, rs1 sel
	imm     immKind
}

// Major opcodes (bits 6:0) of 32-bit instructions.
const (
	opLOAD     = 0x03
	opLOADFP   = 0x07
	opMISCMEM  = 0x0f
	opOPIMM    = 0x13
	opAUIPC    = 0x17
	opOPIMM32  = 0x1b
	opSTORE    = 0x23
	opSTOREFP  = 0x27
	opAMO      = 0x2f
	opOP       = 0x33
	opLUI      = 0x37
	opOP32     = 0x3b
	opMADD     = 0x43
	opMSUB     = 0x47
	opNMSUB    = 0x4b
	opNMADD    = 0x4f
	opOPFP     = 0x53
	opBRANCH   = 0x63
	opJALR     = 0x67
	opJAL      = 0x6f
	opSYSTEM   = 0x73
	mOpcode    = 0x0000007f // opcode
	mFunct3    = 0x0000707f // opcode, funct3
	mFunct7    = 0xfe00707f // opcode, funct3, funct7 (R type, RV32 shifts)
	mFunct6    = 0xfc00707f // opcode, funct3, funct6 (RV64 shifts: shamt[5] in bit 25)
	mFunct12   = 0xfff0707f // opcode, funct3, funct7 and rs2 (unary ops)
	mAMO       = 0xf800707f // opcode, funct3, funct5 (aq and rl free)
	mLR        = 0xf9f0707f // opcode, funct3, funct5, rs2 = 0
	mFPrm      = 0xfe00007f // opcode, funct7 (funct3 is the rounding mode)
	mFPrmRs2   = 0xfff0007f // opcode, funct7, rs2 (funct3 is the rounding mode)
	mR4        = 0x0600007f // opcode, fmt (bits 26:25)
	mExact     = 0xffffffff
	mSfenceVMA = 0xfe007fff // sfence.vma rs1, rs2 (rd = 0, funct3 = 0)
	mPrefetch  = 0x01f07fff // opcode, funct3, rd = 0, imm[4:0] (Zicbop)
	mCBO       = 0xfff07fff // opcode, funct3, rd = 0, funct12 (Zicbom, Zicboz)
	mMopR      = 0xb3c0707f // opcode, funct3, bits 31, 29:28, 25:22 (Zimop mop.r.N)
	mMopRR     = 0xb200707f // opcode, funct3, bits 31, 29:28, 25 (Zimop mop.rr.N)
)

// i32 builds the match value of a 32-bit instruction from its opcode,
// funct3 and funct7 (or, with mFunct12, funct7<<5|rs2 as funct12>>0).
func i32(opcode, funct3, funct7 uint32) uint32 {
	return funct7<<25 | funct3<<12 | opcode
}

// f12 builds the match value of an instruction identified by a 12-bit
// funct12 field in bits 31:20 (unary Zbb ops, ...).
func f12(opcode, funct3, funct12 uint32) uint32 {
	return funct12<<20 | funct3<<12 | opcode
}

// amo builds the match value of an A-extension instruction.
func amo(funct5, funct3 uint32) uint32 {
	return funct5<<27 | funct3<<12 | opAMO
}

// fp builds the match value of an OP-FP instruction from funct7, rs2 and
// funct3 (rs2 and funct3 only matter when the mask covers them).
func fp(funct7, rs2, funct3 uint32) uint32 {
	return funct7<<25 | rs2<<20 | funct3<<12 | opOPFP
}

// ops is the instruction table. Row 0 is the illegal instruction. The order
// matters only where rows overlap: the first row that matches wins (c.nop
// before c.addi, c.ebreak before c.jalr, cm.jt before cm.jalt, Zcmp/Zcmt
// before c.fsdsp, c.addi16sp before c.lui).
var ops = [...]opInfo{
	{name: "illegal", class: ClassIllegal},

	// RV32I / RV64I (ISA manual, "RV32/64G Instruction Set Listings").
	{name: "lui", mask: mOpcode, match: opLUI, form: fU},
	{name: "auipc", mask: mOpcode, match: opAUIPC, form: fU},
	{name: "jal", mask: mOpcode, match: opJAL, form: fJ, class: ClassJump},
	{name: "jalr", mask: mFunct3, match: i32(opJALR, 0, 0), form: fIJ, class: ClassIndirect},
	{name: "beq", mask: mFunct3, match: i32(opBRANCH, 0, 0), form: fB, class: ClassBranch},
	{name: "bne", mask: mFunct3, match: i32(opBRANCH, 1, 0), form: fB, class: ClassBranch},
	{name: "blt", mask: mFunct3, match: i32(opBRANCH, 4, 0), form: fB, class: ClassBranch},
	{name: "bge", mask: mFunct3, match: i32(opBRANCH, 5, 0), form: fB, class: ClassBranch},
	{name: "bltu", mask: mFunct3, match: i32(opBRANCH, 6, 0), form: fB, class: ClassBranch},
	{name: "bgeu", mask: mFunct3, match: i32(opBRANCH, 7, 0), form: fB, class: ClassBranch},
	{name: "lb", mask: mFunct3, match: i32(opLOAD, 0, 0), form: fI},
	{name: "lh", mask: mFunct3, match: i32(opLOAD, 1, 0), form: fI},
	{name: "lw", mask: mFunct3, match: i32(opLOAD, 2, 0), form: fI},
	{name: "ld", mask: mFunct3, match: i32(opLOAD, 3, 0), form: fI, xlen: 64},
	{name: "lbu", mask: mFunct3, match: i32(opLOAD, 4, 0), form: fI},
	{name: "lhu", mask: mFunct3, match: i32(opLOAD, 5, 0), form: fI},
	{name: "lwu", mask: mFunct3, match: i32(opLOAD, 6, 0), form: fI, xlen: 64},
	{name: "sb", mask: mFunct3, match: i32(opSTORE, 0, 0), form: fS},
	{name: "sh", mask: mFunct3, match: i32(opSTORE, 1, 0), form: fS},
	{name: "sw", mask: mFunct3, match: i32(opSTORE, 2, 0), form: fS},
	{name: "sd", mask: mFunct3, match: i32(opSTORE, 3, 0), form: fS, xlen: 64},
	{name: "addi", mask: mFunct3, match: i32(opOPIMM, 0, 0), form: fI},
	{name: "slti", mask: mFunct3, match: i32(opOPIMM, 2, 0), form: fI},
	{name: "sltiu", mask: mFunct3, match: i32(opOPIMM, 3, 0), form: fI},
	{name: "xori", mask: mFunct3, match: i32(opOPIMM, 4, 0), form: fI},
	// Zicbop prefetches are ori with rd = x0 and rs2 field 0, 1 or 3
	// (imm[4:0]); without Zicbop they are ori HINTs.
	{name: "prefetch.i", mask: mPrefetch, match: i32(opOPIMM, 6, 0) | 0<<20, form: fS, ext: ExtZicbop, dis: disHand},
	{name: "prefetch.r", mask: mPrefetch, match: i32(opOPIMM, 6, 0) | 1<<20, form: fS, ext: ExtZicbop, dis: disHand},
	{name: "prefetch.w", mask: mPrefetch, match: i32(opOPIMM, 6, 0) | 3<<20, form: fS, ext: ExtZicbop, dis: disHand},
	{name: "ori", mask: mFunct3, match: i32(opOPIMM, 6, 0), form: fI},
	{name: "andi", mask: mFunct3, match: i32(opOPIMM, 7, 0), form: fI},
	{name: "slli", mask: mFunct7, match: i32(opOPIMM, 1, 0x00), form: fI, xlen: 32},
	{name: "srli", mask: mFunct7, match: i32(opOPIMM, 5, 0x00), form: fI, xlen: 32},
	{name: "srai", mask: mFunct7, match: i32(opOPIMM, 5, 0x20), form: fI, xlen: 32},
	{name: "slli", mask: mFunct6, match: i32(opOPIMM, 1, 0x00), form: fI, xlen: 64},
	{name: "srli", mask: mFunct6, match: i32(opOPIMM, 5, 0x00), form: fI, xlen: 64},
	{name: "srai", mask: mFunct6, match: i32(opOPIMM, 5, 0x20), form: fI, xlen: 64},
	{name: "add", mask: mFunct7, match: i32(opOP, 0, 0x00), form: fR},
	{name: "sub", mask: mFunct7, match: i32(opOP, 0, 0x20), form: fR},
	{name: "sll", mask: mFunct7, match: i32(opOP, 1, 0x00), form: fR},
	{name: "slt", mask: mFunct7, match: i32(opOP, 2, 0x00), form: fR},
	{name: "sltu", mask: mFunct7, match: i32(opOP, 3, 0x00), form: fR},
	{name: "xor", mask: mFunct7, match: i32(opOP, 4, 0x00), form: fR},
	{name: "srl", mask: mFunct7, match: i32(opOP, 5, 0x00), form: fR},
	{name: "sra", mask: mFunct7, match: i32(opOP, 5, 0x20), form: fR},
	{name: "or", mask: mFunct7, match: i32(opOP, 6, 0x00), form: fR},
	{name: "and", mask: mFunct7, match: i32(opOP, 7, 0x00), form: fR},
	{name: "addiw", mask: mFunct3, match: i32(opOPIMM32, 0, 0), form: fI, xlen: 64},
	{name: "slliw", mask: mFunct7, match: i32(opOPIMM32, 1, 0x00), form: fI, xlen: 64},
	{name: "srliw", mask: mFunct7, match: i32(opOPIMM32, 5, 0x00), form: fI, xlen: 64},
	{name: "sraiw", mask: mFunct7, match: i32(opOPIMM32, 5, 0x20), form: fI, xlen: 64},
	{name: "addw", mask: mFunct7, match: i32(opOP32, 0, 0x00), form: fR, xlen: 64},
	{name: "subw", mask: mFunct7, match: i32(opOP32, 0, 0x20), form: fR, xlen: 64},
	{name: "sllw", mask: mFunct7, match: i32(opOP32, 1, 0x00), form: fR, xlen: 64},
	{name: "srlw", mask: mFunct7, match: i32(opOP32, 5, 0x00), form: fR, xlen: 64},
	{name: "sraw", mask: mFunct7, match: i32(opOP32, 5, 0x20), form: fR, xlen: 64},
	// FENCE: fm, rs1 and rd are reserved and must be ignored, so every
	// value is a fence (fence.tso and pause are fences too).
	{name: "fence", mask: mFunct3, match: i32(opMISCMEM, 0, 0), form: fFence, dis: disHand},
	{name: "ecall", mask: mExact, match: 0x00000073, class: ClassECall},
	{name: "ebreak", mask: mExact, match: 0x00100073, class: ClassEBreak},

	// Zifencei. imm, rs1 and rd are reserved and must be ignored.
	{name: "fence.i", mask: mFunct3, match: i32(opMISCMEM, 1, 0), form: fFence},

	// Zicsr.
	{name: "csrrw", mask: mFunct3, match: i32(opSYSTEM, 1, 0), form: fI},
	{name: "csrrs", mask: mFunct3, match: i32(opSYSTEM, 2, 0), form: fI},
	{name: "csrrc", mask: mFunct3, match: i32(opSYSTEM, 3, 0), form: fI},
	{name: "csrrwi", mask: mFunct3, match: i32(opSYSTEM, 5, 0), form: fCSRI},
	{name: "csrrsi", mask: mFunct3, match: i32(opSYSTEM, 6, 0), form: fCSRI},
	{name: "csrrci", mask: mFunct3, match: i32(opSYSTEM, 7, 0), form: fCSRI},

	// Privileged (privileged spec, "Instruction listings") and debug.
	{name: "sret", mask: mExact, match: 0x10200073, class: ClassTrapReturn, dis: disHand},
	{name: "mret", mask: mExact, match: 0x30200073, class: ClassTrapReturn, dis: disHand},
	{name: "dret", mask: mExact, match: 0x7b200073, class: ClassTrapReturn, dis: disHand},
	{name: "wfi", mask: mExact, match: 0x10500073, dis: disHand},
	{name: "sfence.vma", mask: mSfenceVMA, match: 0x12000073, form: fSfence, dis: disHand},

	// Svinval (privileged spec, "Svinval" chapter). Its hinval.vvma and
	// hinval.gvma need the hypervisor extension, which is not decoded.
	{name: "sinval.vma", mask: mSfenceVMA, match: i32(opSYSTEM, 0, 0x0b), form: fSfence, ext: ExtSvinval, dis: disHand},
	{name: "sfence.w.inval", mask: mExact, match: f12(opSYSTEM, 0, 0x180), ext: ExtSvinval, dis: disHand},
	{name: "sfence.inval.ir", mask: mExact, match: f12(opSYSTEM, 0, 0x181), ext: ExtSvinval, dis: disHand},

	// M.
	{name: "mul", mask: mFunct7, match: i32(opOP, 0, 0x01), form: fR, ext: ExtM},
	{name: "mulh", mask: mFunct7, match: i32(opOP, 1, 0x01), form: fR, ext: ExtM},
	{name: "mulhsu", mask: mFunct7, match: i32(opOP, 2, 0x01), form: fR, ext: ExtM},
	{name: "mulhu", mask: mFunct7, match: i32(opOP, 3, 0x01), form: fR, ext: ExtM},
	{name: "div", mask: mFunct7, match: i32(opOP, 4, 0x01), form: fR, ext: ExtM},
	{name: "divu", mask: mFunct7, match: i32(opOP, 5, 0x01), form: fR, ext: ExtM},
	{name: "rem", mask: mFunct7, match: i32(opOP, 6, 0x01), form: fR, ext: ExtM},
	{name: "remu", mask: mFunct7, match: i32(opOP, 7, 0x01), form: fR, ext: ExtM},
	{name: "mulw", mask: mFunct7, match: i32(opOP32, 0, 0x01), form: fR, ext: ExtM, xlen: 64},
	{name: "divw", mask: mFunct7, match: i32(opOP32, 4, 0x01), form: fR, ext: ExtM, xlen: 64},
	{name: "divuw", mask: mFunct7, match: i32(opOP32, 5, 0x01), form: fR, ext: ExtM, xlen: 64},
	{name: "remw", mask: mFunct7, match: i32(opOP32, 6, 0x01), form: fR, ext: ExtM, xlen: 64},
	{name: "remuw", mask: mFunct7, match: i32(opOP32, 7, 0x01), form: fR, ext: ExtM, xlen: 64},

	// A.
	{name: "lr.w", mask: mLR, match: amo(0x02, 2), form: fR, ext: ExtA},
	{name: "sc.w", mask: mAMO, match: amo(0x03, 2), form: fR, ext: ExtA},
	{name: "amoswap.w", mask: mAMO, match: amo(0x01, 2), form: fR, ext: ExtA},
	{name: "amoadd.w", mask: mAMO, match: amo(0x00, 2), form: fR, ext: ExtA},
	{name: "amoxor.w", mask: mAMO, match: amo(0x04, 2), form: fR, ext: ExtA},
	{name: "amoand.w", mask: mAMO, match: amo(0x0c, 2), form: fR, ext: ExtA},
	{name: "amoor.w", mask: mAMO, match: amo(0x08, 2), form: fR, ext: ExtA},
	{name: "amomin.w", mask: mAMO, match: amo(0x10, 2), form: fR, ext: ExtA},
	{name: "amomax.w", mask: mAMO, match: amo(0x14, 2), form: fR, ext: ExtA},
	{name: "amominu.w", mask: mAMO, match: amo(0x18, 2), form: fR, ext: ExtA},
	{name: "amomaxu.w", mask: mAMO, match: amo(0x1c, 2), form: fR, ext: ExtA},
	{name: "lr.d", mask: mLR, match: amo(0x02, 3), form: fR, ext: ExtA, xlen: 64},
	{name: "sc.d", mask: mAMO, match: amo(0x03, 3), form: fR, ext: ExtA, xlen: 64},
	{name: "amoswap.d", mask: mAMO, match: amo(0x01, 3), form: fR, ext: ExtA, xlen: 64},
	{name: "amoadd.d", mask: mAMO, match: amo(0x00, 3), form: fR, ext: ExtA, xlen: 64},
	{name: "amoxor.d", mask: mAMO, match: amo(0x04, 3), form: fR, ext: ExtA, xlen: 64},
	{name: "amoand.d", mask: mAMO, match: amo(0x0c, 3), form: fR, ext: ExtA, xlen: 64},
	{name: "amoor.d", mask: mAMO, match: amo(0x08, 3), form: fR, ext: ExtA, xlen: 64},
	{name: "amomin.d", mask: mAMO, match: amo(0x10, 3), form: fR, ext: ExtA, xlen: 64},
	{name: "amomax.d", mask: mAMO, match: amo(0x14, 3), form: fR, ext: ExtA, xlen: 64},
	{name: "amominu.d", mask: mAMO, match: amo(0x18, 3), form: fR, ext: ExtA, xlen: 64},
	{name: "amomaxu.d", mask: mAMO, match: amo(0x1c, 3), form: fR, ext: ExtA, xlen: 64},

	// F.
	{name: "flw", mask: mFunct3, match: i32(opLOADFP, 2, 0), form: fI, ext: ExtF},
	{name: "fsw", mask: mFunct3, match: i32(opSTOREFP, 2, 0), form: fS, ext: ExtF},
	{name: "fmadd.s", mask: mR4, match: opMADD, form: fR4, ext: ExtF, chk: chkRM},
	{name: "fmsub.s", mask: mR4, match: opMSUB, form: fR4, ext: ExtF, chk: chkRM},
	{name: "fnmsub.s", mask: mR4, match: opNMSUB, form: fR4, ext: ExtF, chk: chkRM},
	{name: "fnmadd.s", mask: mR4, match: opNMADD, form: fR4, ext: ExtF, chk: chkRM},
	{name: "fadd.s", mask: mFPrm, match: fp(0x00, 0, 0), form: fR, ext: ExtF, chk: chkRM},
	{name: "fsub.s", mask: mFPrm, match: fp(0x04, 0, 0), form: fR, ext: ExtF, chk: chkRM},
	{name: "fmul.s", mask: mFPrm, match: fp(0x08, 0, 0), form: fR, ext: ExtF, chk: chkRM},
	{name: "fdiv.s", mask: mFPrm, match: fp(0x0c, 0, 0), form: fR, ext: ExtF, chk: chkRM},
	{name: "fsqrt.s", mask: mFPrmRs2, match: fp(0x2c, 0, 0), form: fR2, ext: ExtF, chk: chkRM},
	{name: "fsgnj.s", mask: mFunct7, match: fp(0x10, 0, 0), form: fR, ext: ExtF},
	{name: "fsgnjn.s", mask: mFunct7, match: fp(0x10, 0, 1), form: fR, ext: ExtF},
	{name: "fsgnjx.s", mask: mFunct7, match: fp(0x10, 0, 2), form: fR, ext: ExtF},
	{name: "fmin.s", mask: mFunct7, match: fp(0x14, 0, 0), form: fR, ext: ExtF},
	{name: "fmax.s", mask: mFunct7, match: fp(0x14, 0, 1), form: fR, ext: ExtF},
	{name: "fcvt.w.s", mask: mFPrmRs2, match: fp(0x60, 0, 0), form: fR2, ext: ExtF, chk: chkRM},
	{name: "fcvt.wu.s", mask: mFPrmRs2, match: fp(0x60, 1, 0), form: fR2, ext: ExtF, chk: chkRM},
	{name: "fcvt.l.s", mask: mFPrmRs2, match: fp(0x60, 2, 0), form: fR2, ext: ExtF, chk: chkRM, xlen: 64},
	{name: "fcvt.lu.s", mask: mFPrmRs2, match: fp(0x60, 3, 0), form: fR2, ext: ExtF, chk: chkRM, xlen: 64},
	{name: "fmv.x.w", mask: mFunct12, match: fp(0x70, 0, 0), form: fR2, ext: ExtF},
	{name: "fclass.s", mask: mFunct12, match: fp(0x70, 0, 1), form: fR2, ext: ExtF},
	{name: "feq.s", mask: mFunct7, match: fp(0x50, 0, 2), form: fR, ext: ExtF},
	{name: "flt.s", mask: mFunct7, match: fp(0x50, 0, 1), form: fR, ext: ExtF},
	{name: "fle.s", mask: mFunct7, match: fp(0x50, 0, 0), form: fR, ext: ExtF},
	{name: "fcvt.s.w", mask: mFPrmRs2, match: fp(0x68, 0, 0), form: fR2, ext: ExtF, chk: chkRM},
	{name: "fcvt.s.wu", mask: mFPrmRs2, match: fp(0x68, 1, 0), form: fR2, ext: ExtF, chk: chkRM},
	{name: "fcvt.s.l", mask: mFPrmRs2, match: fp(0x68, 2, 0), form: fR2, ext: ExtF, chk: chkRM, xlen: 64},
	{name: "fcvt.s.lu", mask: mFPrmRs2, match: fp(0x68, 3, 0), form: fR2, ext: ExtF, chk: chkRM, xlen: 64},
	{name: "fmv.w.x", mask: mFunct12, match: fp(0x78, 0, 0), form: fR2, ext: ExtF},

	// D.
	{name: "fld", mask: mFunct3, match: i32(opLOADFP, 3, 0), form: fI, ext: ExtD},
	{name: "fsd", mask: mFunct3, match: i32(opSTOREFP, 3, 0), form: fS, ext: ExtD},
	{name: "fmadd.d", mask: mR4, match: 1<<25 | opMADD, form: fR4, ext: ExtD, chk: chkRM},
	{name: "fmsub.d", mask: mR4, match: 1<<25 | opMSUB, form: fR4, ext: ExtD, chk: chkRM},
	{name: "fnmsub.d", mask: mR4, match: 1<<25 | opNMSUB, form: fR4, ext: ExtD, chk: chkRM},
	{name: "fnmadd.d", mask: mR4, match: 1<<25 | opNMADD, form: fR4, ext: ExtD, chk: chkRM},
	{name: "fadd.d", mask: mFPrm, match: fp(0x01, 0, 0), form: fR, ext: ExtD, chk: chkRM},
	{name: "fsub.d", mask: mFPrm, match: fp(0x05, 0, 0), form: fR, ext: ExtD, chk: chkRM},
	{name: "fmul.d", mask: mFPrm, match: fp(0x09, 0, 0), form: fR, ext: ExtD, chk: chkRM},
	{name: "fdiv.d", mask: mFPrm, match: fp(0x0d, 0, 0), form: fR, ext: ExtD, chk: chkRM},
	{name: "fsqrt.d", mask: mFPrmRs2, match: fp(0x2d, 0, 0), form: fR2, ext: ExtD, chk: chkRM},
	{name: "fsgnj.d", mask: mFunct7, match: fp(0x11, 0, 0), form: fR, ext: ExtD},
	{name: "fsgnjn.d", mask: mFunct7, match: fp(0x11, 0, 1), form: fR, ext: ExtD},
	{name: "fsgnjx.d", mask: mFunct7, match: fp(0x11, 0, 2), form: fR, ext: ExtD},
	{name: "fmin.d", mask: mFunct7, match: fp(0x15, 0, 0), form: fR, ext: ExtD},
	{name: "fmax.d", mask: mFunct7, match: fp(0x15, 0, 1), form: fR, ext: ExtD},
	{name: "fcvt.s.d", mask: mFPrmRs2, match: fp(0x20, 1, 0), form: fR2, ext: ExtD, chk: chkRM},
	{name: "fcvt.d.s", mask: mFPrmRs2, match: fp(0x21, 0, 0), form: fR2, ext: ExtD, chk: chkRM},
	{name: "feq.d", mask: mFunct7, match: fp(0x51, 0, 2), form: fR, ext: ExtD},
	{name: "flt.d", mask: mFunct7, match: fp(0x51, 0, 1), form: fR, ext: ExtD},
	{name: "fle.d", mask: mFunct7, match: fp(0x51, 0, 0), form: fR, ext: ExtD},
	{name: "fclass.d", mask: mFunct12, match: fp(0x71, 0, 1), form: fR2, ext: ExtD},
	{name: "fcvt.w.d", mask: mFPrmRs2, match: fp(0x61, 0, 0), form: fR2, ext: ExtD, chk: chkRM},
	{name: "fcvt.wu.d", mask: mFPrmRs2, match: fp(0x61, 1, 0), form: fR2, ext: ExtD, chk: chkRM},
	{name: "fcvt.l.d", mask: mFPrmRs2, match: fp(0x61, 2, 0), form: fR2, ext: ExtD, chk: chkRM, xlen: 64},
	{name: "fcvt.lu.d", mask: mFPrmRs2, match: fp(0x61, 3, 0), form: fR2, ext: ExtD, chk: chkRM, xlen: 64},
	{name: "fcvt.d.w", mask: mFPrmRs2, match: fp(0x69, 0, 0), form: fR2, ext: ExtD, chk: chkRM},
	{name: "fcvt.d.wu", mask: mFPrmRs2, match: fp(0x69, 1, 0), form: fR2, ext: ExtD, chk: chkRM},
	{name: "fcvt.d.l", mask: mFPrmRs2, match: fp(0x69, 2, 0), form: fR2, ext: ExtD, chk: chkRM, xlen: 64},
	{name: "fcvt.d.lu", mask: mFPrmRs2, match: fp(0x69, 3, 0), form: fR2, ext: ExtD, chk: chkRM, xlen: 64},
	{name: "fmv.x.d", mask: mFunct12, match: fp(0x71, 0, 0), form: fR2, ext: ExtD, xlen: 64},
	{name: "fmv.d.x", mask: mFunct12, match: fp(0x79, 0, 0), form: fR2, ext: ExtD, xlen: 64},

	// Zba.
	{name: "sh1add", mask: mFunct7, match: i32(opOP, 2, 0x10), form: fR, ext: ExtZba},
	{name: "sh2add", mask: mFunct7, match: i32(opOP, 4, 0x10), form: fR, ext: ExtZba},
	{name: "sh3add", mask: mFunct7, match: i32(opOP, 6, 0x10), form: fR, ext: ExtZba},
	{name: "add.uw", mask: mFunct7, match: i32(opOP32, 0, 0x04), form: fR, ext: ExtZba, xlen: 64},
	{name: "sh1add.uw", mask: mFunct7, match: i32(opOP32, 2, 0x10), form: fR, ext: ExtZba, xlen: 64},
	{name: "sh2add.uw", mask: mFunct7, match: i32(opOP32, 4, 0x10), form: fR, ext: ExtZba, xlen: 64},
	{name: "sh3add.uw", mask: mFunct7, match: i32(opOP32, 6, 0x10), form: fR, ext: ExtZba, xlen: 64},
	{name: "slli.uw", mask: mFunct6, match: i32(opOPIMM32, 1, 0x04), form: fI, ext: ExtZba, xlen: 64},

	// Zbb.
	{name: "andn", mask: mFunct7, match: i32(opOP, 7, 0x20), form: fR, ext: ExtZbb},
	{name: "orn", mask: mFunct7, match: i32(opOP, 6, 0x20), form: fR, ext: ExtZbb},
	{name: "xnor", mask: mFunct7, match: i32(opOP, 4, 0x20), form: fR, ext: ExtZbb},
	{name: "clz", mask: mFunct12, match: f12(opOPIMM, 1, 0x600), form: fR2, ext: ExtZbb},
	{name: "ctz", mask: mFunct12, match: f12(opOPIMM, 1, 0x601), form: fR2, ext: ExtZbb},
	{name: "cpop", mask: mFunct12, match: f12(opOPIMM, 1, 0x602), form: fR2, ext: ExtZbb},
	{name: "sext.b", mask: mFunct12, match: f12(opOPIMM, 1, 0x604), form: fR2, ext: ExtZbb},
	{name: "sext.h", mask: mFunct12, match: f12(opOPIMM, 1, 0x605), form: fR2, ext: ExtZbb},
	{name: "clzw", mask: mFunct12, match: f12(opOPIMM32, 1, 0x600), form: fR2, ext: ExtZbb, xlen: 64},
	{name: "ctzw", mask: mFunct12, match: f12(opOPIMM32, 1, 0x601), form: fR2, ext: ExtZbb, xlen: 64},
	{name: "cpopw", mask: mFunct12, match: f12(opOPIMM32, 1, 0x602), form: fR2, ext: ExtZbb, xlen: 64},
	{name: "max", mask: mFunct7, match: i32(opOP, 6, 0x05), form: fR, ext: ExtZbb},
	{name: "maxu", mask: mFunct7, match: i32(opOP, 7, 0x05), form: fR, ext: ExtZbb},
	{name: "min", mask: mFunct7, match: i32(opOP, 4, 0x05), form: fR, ext: ExtZbb},
	{name: "minu", mask: mFunct7, match: i32(opOP, 5, 0x05), form: fR, ext: ExtZbb},
	{name: "orc.b", mask: mFunct12, match: f12(opOPIMM, 5, 0x287), form: fR2, ext: ExtZbb},
	{name: "rev8", mask: mFunct12, match: f12(opOPIMM, 5, 0x698), form: fR2, ext: ExtZbb, xlen: 32, dis: disHand},
	{name: "rev8", mask: mFunct12, match: f12(opOPIMM, 5, 0x6b8), form: fR2, ext: ExtZbb, xlen: 64},
	{name: "rol", mask: mFunct7, match: i32(opOP, 1, 0x30), form: fR, ext: ExtZbb},
	{name: "ror", mask: mFunct7, match: i32(opOP, 5, 0x30), form: fR, ext: ExtZbb},
	{name: "rolw", mask: mFunct7, match: i32(opOP32, 1, 0x30), form: fR, ext: ExtZbb, xlen: 64},
	{name: "rorw", mask: mFunct7, match: i32(opOP32, 5, 0x30), form: fR, ext: ExtZbb, xlen: 64},
	{name: "rori", mask: mFunct7, match: i32(opOPIMM, 5, 0x30), form: fI, ext: ExtZbb, xlen: 32},
	{name: "rori", mask: mFunct6, match: i32(opOPIMM, 5, 0x30), form: fI, ext: ExtZbb, xlen: 64},
	{name: "roriw", mask: mFunct7, match: i32(opOPIMM32, 5, 0x30), form: fI, ext: ExtZbb, xlen: 64},
	{name: "zext.h", mask: mFunct12, match: f12(opOP, 4, 0x080), form: fR2, ext: ExtZbb, xlen: 32, dis: disHand},
	{name: "zext.h", mask: mFunct12, match: f12(opOP32, 4, 0x080), form: fR2, ext: ExtZbb, xlen: 64},

	// Zbs.
	{name: "bclr", mask: mFunct7, match: i32(opOP, 1, 0x24), form: fR, ext: ExtZbs},
	{name: "bext", mask: mFunct7, match: i32(opOP, 5, 0x24), form: fR, ext: ExtZbs},
	{name: "binv", mask: mFunct7, match: i32(opOP, 1, 0x34), form: fR, ext: ExtZbs},
	{name: "bset", mask: mFunct7, match: i32(opOP, 1, 0x14), form: fR, ext: ExtZbs},
	{name: "bclri", mask: mFunct7, match: i32(opOPIMM, 1, 0x24), form: fI, ext: ExtZbs, xlen: 32},
	{name: "bexti", mask: mFunct7, match: i32(opOPIMM, 5, 0x24), form: fI, ext: ExtZbs, xlen: 32},
	{name: "binvi", mask: mFunct7, match: i32(opOPIMM, 1, 0x34), form: fI, ext: ExtZbs, xlen: 32},
	{name: "bseti", mask: mFunct7, match: i32(opOPIMM, 1, 0x14), form: fI, ext: ExtZbs, xlen: 32},
	{name: "bclri", mask: mFunct6, match: i32(opOPIMM, 1, 0x24), form: fI, ext: ExtZbs, xlen: 64},
	{name: "bexti", mask: mFunct6, match: i32(opOPIMM, 5, 0x24), form: fI, ext: ExtZbs, xlen: 64},
	{name: "binvi", mask: mFunct6, match: i32(opOPIMM, 1, 0x34), form: fI, ext: ExtZbs, xlen: 64},
	{name: "bseti", mask: mFunct6, match: i32(opOPIMM, 1, 0x14), form: fI, ext: ExtZbs, xlen: 64},

	// Zbc.
	{name: "clmul", mask: mFunct7, match: i32(opOP, 1, 0x05), form: fR, ext: ExtZbc},
	{name: "clmulr", mask: mFunct7, match: i32(opOP, 2, 0x05), form: fR, ext: ExtZbc},
	{name: "clmulh", mask: mFunct7, match: i32(opOP, 3, 0x05), form: fR, ext: ExtZbc},

	// Zbkb. Its rotates, rev8, andn, orn and xnor are Zbb's encodings:
	// the rows repeat them for a core with Zbkb but not Zbb. pack with
	// rs2 = x0 is Zbb's zext.h on RV32, packw's on RV64 (rows above).
	{name: "pack", mask: mFunct7, match: i32(opOP, 4, 0x04), form: fR, ext: ExtZbkb, dis: disHand},
	{name: "packh", mask: mFunct7, match: i32(opOP, 7, 0x04), form: fR, ext: ExtZbkb, dis: disHand},
	{name: "packw", mask: mFunct7, match: i32(opOP32, 4, 0x04), form: fR, ext: ExtZbkb, xlen: 64, dis: disHand},
	{name: "brev8", mask: mFunct12, match: f12(opOPIMM, 5, 0x687), form: fR2, ext: ExtZbkb, dis: disHand},
	{name: "zip", mask: mFunct12, match: f12(opOPIMM, 1, 0x08f), form: fR2, ext: ExtZbkb, xlen: 32, dis: disHand},
	{name: "unzip", mask: mFunct12, match: f12(opOPIMM, 5, 0x08f), form: fR2, ext: ExtZbkb, xlen: 32, dis: disHand},
	{name: "andn", mask: mFunct7, match: i32(opOP, 7, 0x20), form: fR, ext: ExtZbkb},
	{name: "orn", mask: mFunct7, match: i32(opOP, 6, 0x20), form: fR, ext: ExtZbkb},
	{name: "xnor", mask: mFunct7, match: i32(opOP, 4, 0x20), form: fR, ext: ExtZbkb},
	{name: "rev8", mask: mFunct12, match: f12(opOPIMM, 5, 0x698), form: fR2, ext: ExtZbkb, xlen: 32, dis: disHand},
	{name: "rev8", mask: mFunct12, match: f12(opOPIMM, 5, 0x6b8), form: fR2, ext: ExtZbkb, xlen: 64},
	{name: "rol", mask: mFunct7, match: i32(opOP, 1, 0x30), form: fR, ext: ExtZbkb},
	{name: "ror", mask: mFunct7, match: i32(opOP, 5, 0x30), form: fR, ext: ExtZbkb},
	{name: "rolw", mask: mFunct7, match: i32(opOP32, 1, 0x30), form: fR, ext: ExtZbkb, xlen: 64},
	{name: "rorw", mask: mFunct7, match: i32(opOP32, 5, 0x30), form: fR, ext: ExtZbkb, xlen: 64},
	{name: "rori", mask: mFunct7, match: i32(opOPIMM, 5, 0x30), form: fI, ext: ExtZbkb, xlen: 32},
	{name: "rori", mask: mFunct6, match: i32(opOPIMM, 5, 0x30), form: fI, ext: ExtZbkb, xlen: 64},
	{name: "roriw", mask: mFunct7, match: i32(opOPIMM32, 5, 0x30), form: fI, ext: ExtZbkb, xlen: 64},

	// Zbkx.
	{name: "xperm4", mask: mFunct7, match: i32(opOP, 2, 0x14), form: fR, ext: ExtZbkx, dis: disHand},
	{name: "xperm8", mask: mFunct7, match: i32(opOP, 4, 0x14), form: fR, ext: ExtZbkx, dis: disHand},

	// Zicond.
	{name: "czero.eqz", mask: mFunct7, match: i32(opOP, 5, 0x07), form: fR, ext: ExtZicond},
	{name: "czero.nez", mask: mFunct7, match: i32(opOP, 7, 0x07), form: fR, ext: ExtZicond},

	// Zicbom and Zicboz: MISC-MEM funct3 2, rd = 0, operation in imm.
	{name: "cbo.inval", mask: mCBO, match: f12(opMISCMEM, 2, 0x000), form: fS, ext: ExtZicbom},
	{name: "cbo.clean", mask: mCBO, match: f12(opMISCMEM, 2, 0x001), form: fS, ext: ExtZicbom},
	{name: "cbo.flush", mask: mCBO, match: f12(opMISCMEM, 2, 0x002), form: fS, ext: ExtZicbom},
	{name: "cbo.zero", mask: mCBO, match: f12(opMISCMEM, 2, 0x004), form: fS, ext: ExtZicboz},

	// Zimop: mop.r.N (N in bits 30, 27:26, 21:20) and mop.rr.N (N in
	// bits 30, 27:26) in SYSTEM funct3 4.
	{name: "mop.r", mask: mMopR, match: 0x81c04073, form: fR2, ext: ExtZimop, dis: disHand},
	{name: "mop.rr", mask: mMopRR, match: 0x82004073, form: fR, ext: ExtZimop, dis: disHand},

	// Zfhmin and Zfh (fmt 2 in bits 26:25 of OP-FP and the R4 opcodes).
	{name: "flh", mask: mFunct3, match: i32(opLOADFP, 1, 0), form: fI, ext: ExtZfhmin | ExtF},
	{name: "fsh", mask: mFunct3, match: i32(opSTOREFP, 1, 0), form: fS, ext: ExtZfhmin | ExtF},
	{name: "fmv.x.h", mask: mFunct12, match: fp(0x72, 0, 0), form: fR2, ext: ExtZfhmin | ExtF},
	{name: "fmv.h.x", mask: mFunct12, match: fp(0x7a, 0, 0), form: fR2, ext: ExtZfhmin | ExtF},
	{name: "fcvt.s.h", mask: mFPrmRs2, match: fp(0x20, 2, 0), form: fR2, ext: ExtZfhmin | ExtF, chk: chkRM},
	{name: "fcvt.h.s", mask: mFPrmRs2, match: fp(0x22, 0, 0), form: fR2, ext: ExtZfhmin | ExtF, chk: chkRM},
	{name: "fcvt.d.h", mask: mFPrmRs2, match: fp(0x21, 2, 0), form: fR2, ext: ExtZfhmin | ExtD, chk: chkRM, dis: disHand},
	{name: "fcvt.h.d", mask: mFPrmRs2, match: fp(0x22, 1, 0), form: fR2, ext: ExtZfhmin | ExtD, chk: chkRM, dis: disHand},
	{name: "fmadd.h", mask: mR4, match: 2<<25 | opMADD, form: fR4, ext: ExtZfh | ExtF, chk: chkRM},
	{name: "fmsub.h", mask: mR4, match: 2<<25 | opMSUB, form: fR4, ext: ExtZfh | ExtF, chk: chkRM},
	{name: "fnmsub.h", mask: mR4, match: 2<<25 | opNMSUB, form: fR4, ext: ExtZfh | ExtF, chk: chkRM},
	{name: "fnmadd.h", mask: mR4, match: 2<<25 | opNMADD, form: fR4, ext: ExtZfh | ExtF, chk: chkRM},
	{name: "fadd.h", mask: mFPrm, match: fp(0x02, 0, 0), form: fR, ext: ExtZfh | ExtF, chk: chkRM},
	{name: "fsub.h", mask: mFPrm, match: fp(0x06, 0, 0), form: fR, ext: ExtZfh | ExtF, chk: chkRM},
	{name: "fmul.h", mask: mFPrm, match: fp(0x0a, 0, 0), form: fR, ext: ExtZfh | ExtF, chk: chkRM},
	{name: "fdiv.h", mask: mFPrm, match: fp(0x0e, 0, 0), form: fR, ext: ExtZfh | ExtF, chk: chkRM},
	{name: "fsqrt.h", mask: mFPrmRs2, match: fp(0x2e, 0, 0), form: fR2, ext: ExtZfh | ExtF, chk: chkRM},
	{name: "fsgnj.h", mask: mFunct7, match: fp(0x12, 0, 0), form: fR, ext: ExtZfh | ExtF},
	{name: "fsgnjn.h", mask: mFunct7, match: fp(0x12, 0, 1), form: fR, ext: ExtZfh | ExtF},
	{name: "fsgnjx.h", mask: mFunct7, match: fp(0x12, 0, 2), form: fR, ext: ExtZfh | ExtF},
	{name: "fmin.h", mask: mFunct7, match: fp(0x16, 0, 0), form: fR, ext: ExtZfh | ExtF},
	{name: "fmax.h", mask: mFunct7, match: fp(0x16, 0, 1), form: fR, ext: ExtZfh | ExtF},
	{name: "feq.h", mask: mFunct7, match: fp(0x52, 0, 2), form: fR, ext: ExtZfh | ExtF},
	{name: "flt.h", mask: mFunct7, match: fp(0x52, 0, 1), form: fR, ext: ExtZfh | ExtF},
	{name: "fle.h", mask: mFunct7, match: fp(0x52, 0, 0), form: fR, ext: ExtZfh | ExtF},
	{name: "fclass.h", mask: mFunct12, match: fp(0x72, 0, 1), form: fR2, ext: ExtZfh | ExtF},
	{name: "fcvt.w.h", mask: mFPrmRs2, match: fp(0x62, 0, 0), form: fR2, ext: ExtZfh | ExtF, chk: chkRM},
	{name: "fcvt.wu.h", mask: mFPrmRs2, match: fp(0x62, 1, 0), form: fR2, ext: ExtZfh | ExtF, chk: chkRM},
	{name: "fcvt.l.h", mask: mFPrmRs2, match: fp(0x62, 2, 0), form: fR2, ext: ExtZfh | ExtF, chk: chkRM, xlen: 64},
	{name: "fcvt.lu.h", mask: mFPrmRs2, match: fp(0x62, 3, 0), form: fR2, ext: ExtZfh | ExtF, chk: chkRM, xlen: 64},
	{name: "fcvt.h.w", mask: mFPrmRs2, match: fp(0x6a, 0, 0), form: fR2, ext: ExtZfh | ExtF, chk: chkRM},
	{name: "fcvt.h.wu", mask: mFPrmRs2, match: fp(0x6a, 1, 0), form: fR2, ext: ExtZfh | ExtF, chk: chkRM},
	{name: "fcvt.h.l", mask: mFPrmRs2, match: fp(0x6a, 2, 0), form: fR2, ext: ExtZfh | ExtF, chk: chkRM, xlen: 64},
	{name: "fcvt.h.lu", mask: mFPrmRs2, match: fp(0x6a, 3, 0), form: fR2, ext: ExtZfh | ExtF, chk: chkRM, xlen: 64},

	// C quadrant 0 (ISA manual "RVC opcode map"; Zcb rows from the Zc*
	// specification). Compressed rows have len 2 and 16-bit masks.
	{name: "c.addi4spn", mask: 0xe003, match: 0x0000, form: fCIW, ext: ExtC, chk: chkNZ4SPN, len: 2},
	{name: "c.fld", mask: 0xe003, match: 0x2000, form: fCL, ext: ExtC | ExtZcd | ExtD, len: 2},
	{name: "c.lw", mask: 0xe003, match: 0x4000, form: fCL, ext: ExtC, len: 2},
	{name: "c.flw", mask: 0xe003, match: 0x6000, form: fCL, ext: ExtC | ExtZcf | ExtF, xlen: 32, dis: disHand, len: 2},
	{name: "c.ld", mask: 0xe003, match: 0x6000, form: fCL, ext: ExtC, xlen: 64, len: 2},
	{name: "c.lbu", mask: 0xfc03, match: 0x8000, form: fCL, ext: ExtC | ExtZcb, dis: disHand, len: 2},
	{name: "c.lhu", mask: 0xfc43, match: 0x8400, form: fCL, ext: ExtC | ExtZcb, dis: disHand, len: 2},
	{name: "c.lh", mask: 0xfc43, match: 0x8440, form: fCL, ext: ExtC | ExtZcb, dis: disHand, len: 2},
	{name: "c.sb", mask: 0xfc03, match: 0x8800, form: fCS, ext: ExtC | ExtZcb, dis: disHand, len: 2},
	{name: "c.sh", mask: 0xfc43, match: 0x8c00, form: fCS, ext: ExtC | ExtZcb, dis: disHand, len: 2},
	{name: "c.fsd", mask: 0xe003, match: 0xa000, form: fCS, ext: ExtC | ExtZcd | ExtD, len: 2},
	{name: "c.sw", mask: 0xe003, match: 0xc000, form: fCS, ext: ExtC, len: 2},
	{name: "c.fsw", mask: 0xe003, match: 0xe000, form: fCS, ext: ExtC | ExtZcf | ExtF, xlen: 32, dis: disHand, len: 2},
	{name: "c.sd", mask: 0xe003, match: 0xe000, form: fCS, ext: ExtC, xlen: 64, len: 2},

	// C quadrant 1.
	{name: "c.nop", mask: 0xef83, match: 0x0001, form: fCNop, ext: ExtC, dis: disHand, len: 2},
	{name: "c.addi", mask: 0xe003, match: 0x0001, form: fCI, ext: ExtC, len: 2},
	{name: "c.jal", mask: 0xe003, match: 0x2001, form: fCJal, ext: ExtC, xlen: 32, class: ClassJump, dis: disHand, len: 2},
	{name: "c.addiw", mask: 0xe003, match: 0x2001, form: fCI, ext: ExtC, xlen: 64, chk: chkRdNZ, len: 2},
	{name: "c.li", mask: 0xe003, match: 0x4001, form: fCLi, ext: ExtC, len: 2},
	{name: "c.mop", mask: 0xf8ff, match: 0x6081, form: fCNop, ext: ExtC | ExtZcmop, dis: disHand, len: 2},
	{name: "c.addi16sp", mask: 0xef83, match: 0x6101, form: fCSP16, ext: ExtC, chk: chkNZ16SP, len: 2},
	{name: "c.lui", mask: 0xe003, match: 0x6001, form: fCLi, ext: ExtC, chk: chkLui, len: 2},
	{name: "c.srli", mask: 0xfc03, match: 0x8001, form: fCA, ext: ExtC, xlen: 32, len: 2},
	{name: "c.srai", mask: 0xfc03, match: 0x8401, form: fCA, ext: ExtC, xlen: 32, len: 2},
	{name: "c.srli", mask: 0xec03, match: 0x8001, form: fCA, ext: ExtC, xlen: 64, len: 2},
	{name: "c.srai", mask: 0xec03, match: 0x8401, form: fCA, ext: ExtC, xlen: 64, len: 2},
	{name: "c.andi", mask: 0xec03, match: 0x8801, form: fCA, ext: ExtC, len: 2},
	{name: "c.sub", mask: 0xfc63, match: 0x8c01, form: fCA, ext: ExtC, len: 2},
	{name: "c.xor", mask: 0xfc63, match: 0x8c21, form: fCA, ext: ExtC, len: 2},
	{name: "c.or", mask: 0xfc63, match: 0x8c41, form: fCA, ext: ExtC, len: 2},
	{name: "c.and", mask: 0xfc63, match: 0x8c61, form: fCA, ext: ExtC, len: 2},
	{name: "c.subw", mask: 0xfc63, match: 0x9c01, form: fCA, ext: ExtC, xlen: 64, len: 2},
	{name: "c.addw", mask: 0xfc63, match: 0x9c21, form: fCA, ext: ExtC, xlen: 64, len: 2},
	{name: "c.mul", mask: 0xfc63, match: 0x9c41, form: fCA, ext: ExtC | ExtZcb | ExtM, dis: disHand, len: 2},
	{name: "c.zext.b", mask: 0xfc7f, match: 0x9c61, form: fCA, ext: ExtC | ExtZcb, dis: disHand, len: 2},
	{name: "c.sext.b", mask: 0xfc7f, match: 0x9c65, form: fCA, ext: ExtC | ExtZcb | ExtZbb, dis: disHand, len: 2},
	{name: "c.zext.h", mask: 0xfc7f, match: 0x9c69, form: fCA, ext: ExtC | ExtZcb | ExtZbb, dis: disHand, len: 2},
	{name: "c.sext.h", mask: 0xfc7f, match: 0x9c6d, form: fCA, ext: ExtC | ExtZcb | ExtZbb, dis: disHand, len: 2},
	{name: "c.zext.w", mask: 0xfc7f, match: 0x9c71, form: fCA, ext: ExtC | ExtZcb | ExtZba, xlen: 64, dis: disHand, len: 2},
	{name: "c.not", mask: 0xfc7f, match: 0x9c75, form: fCA, ext: ExtC | ExtZcb, dis: disHand, len: 2},
	{name: "c.j", mask: 0xe003, match: 0xa001, form: fCJ, ext: ExtC, class: ClassJump, len: 2},
	{name: "c.beqz", mask: 0xe003, match: 0xc001, form: fCB, ext: ExtC, class: ClassBranch, len: 2},
	{name: "c.bnez", mask: 0xe003, match: 0xe001, form: fCB, ext: ExtC, class: ClassBranch, len: 2},

	// C quadrant 2.
	{name: "c.slli", mask: 0xf003, match: 0x0002, form: fCI, ext: ExtC, xlen: 32, len: 2},
	{name: "c.slli", mask: 0xe003, match: 0x0002, form: fCI, ext: ExtC, xlen: 64, len: 2},
	{name: "c.fldsp", mask: 0xe003, match: 0x2002, form: fCLSP, ext: ExtC | ExtZcd | ExtD, len: 2},
	{name: "c.lwsp", mask: 0xe003, match: 0x4002, form: fCLSP, ext: ExtC, chk: chkRdNZ, len: 2},
	{name: "c.flwsp", mask: 0xe003, match: 0x6002, form: fCLSP, ext: ExtC | ExtZcf | ExtF, xlen: 32, dis: disHand, len: 2},
	{name: "c.ldsp", mask: 0xe003, match: 0x6002, form: fCLSP, ext: ExtC, xlen: 64, chk: chkRdNZ, len: 2},
	{name: "c.jr", mask: 0xf07f, match: 0x8002, form: fCJr, ext: ExtC, chk: chkRs1NZ, class: ClassIndirect, len: 2},
	{name: "c.mv", mask: 0xf003, match: 0x8002, form: fCMv, ext: ExtC, chk: chkRs2NZ, len: 2},
	{name: "c.ebreak", mask: 0xffff, match: 0x9002, form: fCEBreak, ext: ExtC, class: ClassEBreak, len: 2},
	{name: "c.jalr", mask: 0xf07f, match: 0x9002, form: fCJalr, ext: ExtC, class: ClassIndirect, len: 2},
	{name: "c.add", mask: 0xf003, match: 0x9002, form: fCR, ext: ExtC, chk: chkRs2NZ, len: 2},
	{name: "cm.jt", mask: 0xff83, match: 0xa002, form: fCMJT, ext: ExtC | ExtZcmt, class: ClassTableJump, dis: disHand, len: 2},
	{name: "cm.jalt", mask: 0xfc03, match: 0xa002, form: fCMJALT, ext: ExtC | ExtZcmt, class: ClassTableJump, dis: disHand, len: 2},
	{name: "cm.mvsa01", mask: 0xfc63, match: 0xac22, form: fCMVSA, ext: ExtC | ExtZcmp, chk: chkMvsa, dis: disHand, len: 2},
	{name: "cm.mva01s", mask: 0xfc63, match: 0xac62, form: fCMVA, ext: ExtC | ExtZcmp, dis: disHand, len: 2},
	{name: "cm.push", mask: 0xff03, match: 0xb802, form: fCMPP, ext: ExtC | ExtZcmp, chk: chkRlist, dis: disHand, len: 2},
	{name: "cm.pop", mask: 0xff03, match: 0xba02, form: fCMPP, ext: ExtC | ExtZcmp, chk: chkRlist, dis: disHand, len: 2},
	{name: "cm.popretz", mask: 0xff03, match: 0xbc02, form: fCMRet, ext: ExtC | ExtZcmp, chk: chkRlist, class: ClassPopRet, dis: disHand, len: 2},
	{name: "cm.popret", mask: 0xff03, match: 0xbe02, form: fCMRet, ext: ExtC | ExtZcmp, chk: chkRlist, class: ClassPopRet, dis: disHand, len: 2},
	// With Zcmp or Zcmt, the rest of c.fsdsp's encodings are reserved.
	{name: "c.fsdsp", mask: 0xe003, match: 0xa002, form: fCSSP, ext: ExtC | ExtZcd | ExtD, chk: chkNoZcm, len: 2},
	{name: "c.swsp", mask: 0xe003, match: 0xc002, form: fCSSP, ext: ExtC, len: 2},
	{name: "c.fswsp", mask: 0xe003, match: 0xe002, form: fCSSP, ext: ExtC | ExtZcf | ExtF, xlen: 32, dis: disHand, len: 2},
	{name: "c.sdsp", mask: 0xe003, match: 0xe002, form: fCSSP, ext: ExtC, xlen: 64, len: 2},
}
