package riscv

// Length returns the length in bytes of the instruction whose first 16-bit
// parcel is p: 2 (p&3 != 3), 4 (p&0x1f != 0x1f), 6 (p&0x3f == 0x1f),
// 8 (p&0x7f == 0x3f), or 0 for the reserved encodings of 80 bits or more.
func Length(p uint16) int {
	switch {
	case p&3 != 3:
		return 2
	case p&0x1f != 0x1f:
		return 4
	case p&0x3f == 0x1f:
		return 6
	case p&0x7f == 0x3f:
		return 8
	}
	return 0
}

// Class tells how an instruction changes control flow.
type Class uint8

// The classes of instructions.
const (
	ClassLinear     Class = iota // falls through to pc+len (includes wfi, fence.i, csr ops, loads, ...)
	ClassBranch                  // conditional branch (beq..bgeu, c.beqz, c.bnez); direct target pc+Imm
	ClassJump                    // direct jump jal / c.j / c.jal (RV32 only); target pc+Imm
	ClassTableJump               // Zcmt cm.jt / cm.jalt: target read from the jump table (JVT); Index holds the table index
	ClassIndirect                // jalr / c.jr / c.jalr: target from register
	ClassPopRet                  // Zcmp cm.popret / cm.popretz: return through ra
	ClassTrapReturn              // mret, sret, dret
	ClassECall                   // ecall
	ClassEBreak                  // ebreak, c.ebreak
	ClassIllegal                 // not a valid instruction for the given XLEN/extensions (also all-zero 16-bit parcel)
)

var classNames = [...]string{
	ClassLinear:     "linear",
	ClassBranch:     "branch",
	ClassJump:       "jump",
	ClassTableJump:  "tablejump",
	ClassIndirect:   "indirect",
	ClassPopRet:     "popret",
	ClassTrapReturn: "trapreturn",
	ClassECall:      "ecall",
	ClassEBreak:     "ebreak",
	ClassIllegal:    "illegal",
}

// String returns the lower-case name of the class, such as "branch".
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "Class(" + itoa(int(c)) + ")"
}

// Link is the call/return role of a jump (E-Trace 2.0 "Jump
// classification", N-Trace chapter 2 table "Generating itype for different
// instructions"); link registers are x1 and x5.
type Link uint8

// The link roles.
const (
	LinkNone   Link = iota // not a jump, or jump without linkage (rd=x0, not a return)
	LinkCall               // call
	LinkReturn             // function return
	LinkCoSwap             // co-routine swap
	LinkOther              // other jump with linkage (rd not x0/x1/x5, and not a return)
)

var linkNames = [...]string{
	LinkNone:   "none",
	LinkCall:   "call",
	LinkReturn: "return",
	LinkCoSwap: "coswap",
	LinkOther:  "other",
}

// String returns the lower-case name of the link role, such as "call".
func (l Link) String() string {
	if int(l) < len(linkNames) {
		return linkNames[l]
	}
	return "Link(" + itoa(int(l)) + ")"
}

// Inst is one decoded instruction: what a trace encoder or decoder needs to
// follow control flow through it. It is a small value (24 bytes) that is
// cheap to copy and to cache per address; it has no more than nine scalar
// fields, so that the Go register ABI returns it from Decode in registers.
// The zero Inst is not a decoding of anything (its Len is 0).
type Inst struct {
	Raw   uint32 // instruction bits, zero-extended (16-bit forms in the low half); for 48/64-bit encodings the low 32 bits
	Len   uint8  // 2, 4, 6 or 8 (0 for the reserved encodings of 80 bits or more, see Length)
	Class Class  // how the instruction changes control flow
	Link  Link   // for ClassJump/ClassTableJump/ClassIndirect/ClassPopRet
	// Rd and Rs1 are the destination and first source register numbers of
	// the instruction, expanded from compressed forms (c.jalr has Rd 1,
	// c.lwsp has Rs1 2, ...). They are x registers for integer operands and
	// f registers for floating-point ones, and 0 when the instruction has
	// no such operand. cm.popret/cm.popretz have Rs1 1 (they return
	// through ra), cm.push/cm.pop have Rd=Rs1=2 (sp), cm.jalt has Rd 1,
	// cm.mvsa01 has Rd r1s and Rs1 10 (a0), cm.mva01s Rd 10 and Rs1 r1s.
	Rd, Rs1 uint8
	Index   uint8 // jump-table index for ClassTableJump
	// Op identifies the instruction (its String is the mnemonic) and the
	// XLEN it was decoded for (see Inst.XLen).
	Op Op
	// Imm is the branch/jump offset for ClassBranch/ClassJump, and for
	// jalr the offset added to Rs1 (0 for c.jr/c.jalr); 0 otherwise.
	Imm int64
}

// XLen returns the XLEN the instruction was decoded for: 32 or 64.
func (i Inst) XLen() int {
	if i.Op&opRV32 != 0 {
		return 32
	}
	return 64
}

// Target returns pc+Imm for direct branches and jumps (ClassBranch and
// ClassJump), wrapped to 32 bits for RV32. For every other class it returns
// 0: their target is not in the instruction.
func (i Inst) Target(pc uint64) uint64 {
	if i.Class != ClassBranch && i.Class != ClassJump {
		return 0
	}
	t := pc + uint64(i.Imm)
	if i.Op&opRV32 != 0 {
		t &= 0xffffffff
	}
	return t
}

// Next returns the address of the instruction that follows i in memory,
// pc+Len, wrapped to 32 bits for RV32.
func (i Inst) Next(pc uint64) uint64 {
	t := pc + uint64(i.Len)
	if i.Op&opRV32 != 0 {
		t &= 0xffffffff
	}
	return t
}

// itoa formats a small non-negative number without fmt (keeps String
// methods allocation-light and the package free of fmt on hot paths).
func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
