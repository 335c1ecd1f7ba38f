package tarmac

import (
	"bytes"

	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// ctl is how an instruction can change control flow, independent of the
// instruction set.
type ctl uint8

const (
	ctlLinear        ctl = iota // falls through
	ctlBranch                   // conditional branch, direct target
	ctlJump                     // unconditional direct jump
	ctlCall                     // direct call
	ctlIndJump                  // indirect jump
	ctlIndCall                  // indirect call
	ctlReturn                   // function return
	ctlCoSwap                   // co-routine swap
	ctlOtherDirect              // other direct jump with linkage
	ctlOtherIndirect            // other indirect jump with linkage
	ctlTrapReturn               // exception return
	ctlTrap                     // raises an exception (ecall, svc)
)

// classifyRISCV classifies a RISC-V instruction from its bits, decoded
// with the extensions ext.
func classifyRISCV(raw uint32, xlen int, ext riscv.Ext) ctl {
	in := riscv.DecodeExt(raw, xlen, ext)
	switch in.Class {
	case riscv.ClassBranch:
		return ctlBranch
	case riscv.ClassJump:
		switch in.Link {
		case riscv.LinkCall:
			return ctlCall
		case riscv.LinkOther:
			return ctlOtherDirect
		}
		return ctlJump
	case riscv.ClassTableJump:
		// as ingress.ITypeOf: the table is in the image
		if in.Link == riscv.LinkCall {
			return ctlCall
		}
		return ctlJump
	case riscv.ClassIndirect:
		switch in.Link {
		case riscv.LinkCall:
			return ctlIndCall
		case riscv.LinkReturn:
			return ctlReturn
		case riscv.LinkCoSwap:
			return ctlCoSwap
		case riscv.LinkOther:
			return ctlOtherIndirect
		}
		return ctlIndJump
	case riscv.ClassPopRet:
		return ctlReturn
	case riscv.ClassTrapReturn:
		return ctlTrapReturn
	case riscv.ClassECall, riscv.ClassEBreak:
		return ctlTrap
	}
	return ctlLinear
}

// itypeOf returns the ingress itype of an instruction of class c that
// executed (or, when executed is false, failed its condition) and was
// followed by the instruction at next (known when hasNext), size bytes
// after addr when not taken.
func itypeOf(c ctl, executed bool, addr uint64, size int, next uint64, hasNext bool) ingress.IType {
	taken := hasNext && next != addr+uint64(size)
	if !executed {
		if c == ctlBranch || c == ctlJump || c == ctlIndJump {
			return ingress.ITypeNotTaken
		}
		return ingress.ITypeNone
	}
	switch c {
	case ctlBranch:
		if taken {
			return ingress.ITypeTaken
		}
		return ingress.ITypeNotTaken
	case ctlJump:
		return ingress.ITypeDirectJump
	case ctlCall:
		return ingress.ITypeDirectCall
	case ctlIndJump:
		return ingress.ITypeIndirectJump
	case ctlIndCall:
		return ingress.ITypeIndirectCall
	case ctlReturn:
		return ingress.ITypeReturn
	case ctlCoSwap:
		return ingress.ITypeCoSwap
	case ctlOtherDirect:
		return ingress.ITypeOtherDirect
	case ctlOtherIndirect:
		return ingress.ITypeOtherIndirect
	case ctlTrapReturn:
		return ingress.ITypeTrapReturn
	case ctlTrap:
		// ecall/svc without an event record: the trace does not say why
		// the next instruction is elsewhere (a syscall that ended the
		// process, a trace cut); no jump is invented.
		return ingress.ITypeNone
	}
	if taken {
		// An instruction the classifier does not know as a branch moved
		// the PC (LDR pc, MOV pc, a write to the PC): an indirect jump.
		return ingress.ITypeIndirectJump
	}
	return ingress.ITypeNone
}

// classifyArm classifies an Arm instruction from its opcode (A64) or its
// disassembly (A32, T32), as Tarmac gives both.
func classifyArm(iset string, op uint32, opBytes int, disasm []byte) ctl {
	if iset == "O" && opBytes == 4 {
		if c, ok := classifyA64(op); ok {
			return c
		}
		return ctlLinear
	}
	return classifyArmText(disasm)
}

// classifyA64 decodes the A64 branch, exception-generating and system
// instruction classes (Arm ARM C4.1.65).
func classifyA64(op uint32) (ctl, bool) {
	switch {
	case op&0xfc000000 == 0x14000000: // B imm26
		return ctlJump, true
	case op&0xfc000000 == 0x94000000: // BL imm26
		return ctlCall, true
	case op&0xff000010 == 0x54000000: // B.cond (and BC.cond)
		return ctlBranch, true
	case op&0x7e000000 == 0x34000000: // CBZ, CBNZ
		return ctlBranch, true
	case op&0x7e000000 == 0x36000000: // TBZ, TBNZ
		return ctlBranch, true
	case op&0xfe000000 == 0xd6000000: // unconditional branch (register)
		opc := (op >> 21) & 0xf
		switch opc {
		case 0, 8: // BR, BRAA/BRAB
			return ctlIndJump, true
		case 1, 9: // BLR, BLRAA/BLRAB
			return ctlIndCall, true
		case 2: // RET, RETAA/RETAB
			return ctlReturn, true
		case 4: // ERET, ERETAA/ERETAB
			return ctlTrapReturn, true
		}
		return ctlIndJump, true
	case op&0xff000000 == 0xd4000000: // exception generation: SVC, HVC, SMC, BRK, HLT
		if op&0x3 != 0 && (op>>21)&7 == 0 { // SVC/HVC/SMC (LL != 0, opc 000)
			return ctlTrap, true
		}
		return ctlLinear, true
	}
	return ctlLinear, false
}

// armConds are the A32/T32 condition suffixes.
var armConds = []string{"EQ", "NE", "CS", "HS", "CC", "LO", "MI", "PL", "VS", "VC", "HI", "LS", "GE", "LT", "GT", "LE", "AL"}

func hasCond(s []byte) bool {
	for _, c := range armConds {
		if string(s) == c {
			return true
		}
	}
	return false
}

// classifyArmText classifies an A32/T32 instruction from its disassembly
// ("BL foo", "BX lr", "POP {r4,pc}", "BNE {pc}-0xc", "CBZ r0,...").
func classifyArmText(d []byte) ctl {
	// mnemonic and operands, upper-cased mnemonic
	i := 0
	for i < len(d) && !isSpace(d[i]) {
		i++
	}
	mn := bytes.ToUpper(d[:i])
	ops := bytes.ToLower(bytes.TrimSpace(d[i:]))
	// strip a .W/.N width qualifier
	if k := bytes.IndexByte(mn, '.'); k >= 0 && (string(mn[k:]) == ".W" || string(mn[k:]) == ".N") {
		mn = mn[:k]
	}
	writesPC := func() bool {
		// register lists and destination registers naming pc
		if k := bytes.IndexByte(ops, '{'); k >= 0 {
			e := bytes.IndexByte(ops[k:], '}')
			if e > 0 && containsReg(ops[k+1:k+e], "pc") {
				return true
			}
		}
		first := ops
		if k := bytes.IndexByte(ops, ','); k >= 0 {
			first = ops[:k]
		}
		return string(bytes.TrimSpace(first)) == "pc"
	}
	switch {
	case string(mn) == "BL" || (len(mn) == 4 && bytes.HasPrefix(mn, []byte("BL")) && hasCond(mn[2:])):
		return ctlCall
	case string(mn) == "BLX" || (len(mn) == 5 && bytes.HasPrefix(mn, []byte("BLX")) && hasCond(mn[3:])):
		if isRegOperand(ops) {
			return ctlIndCall
		}
		return ctlCall
	case string(mn) == "BLR" || bytes.HasPrefix(mn, []byte("BLRA")):
		return ctlIndCall
	case string(mn) == "RET" || bytes.HasPrefix(mn, []byte("RETA")):
		return ctlReturn
	case string(mn) == "ERET" || string(mn) == "RFE" || bytes.HasPrefix(mn, []byte("RFE")):
		return ctlTrapReturn
	case string(mn) == "BX" || (len(mn) == 4 && bytes.HasPrefix(mn, []byte("BX")) && hasCond(mn[2:])):
		if string(ops) == "lr" || string(ops) == "r14" {
			return ctlReturn
		}
		return ctlIndJump
	case string(mn) == "BR" || bytes.HasPrefix(mn, []byte("BRA")):
		return ctlIndJump
	case string(mn) == "B":
		return ctlJump
	case len(mn) == 3 && mn[0] == 'B' && hasCond(mn[1:]), bytes.HasPrefix(mn, []byte("B.")):
		if string(mn[1:]) == "AL" || string(mn) == "B.AL" {
			return ctlJump
		}
		return ctlBranch
	case string(mn) == "CBZ" || string(mn) == "CBNZ" || string(mn) == "TBZ" || string(mn) == "TBNZ":
		return ctlBranch
	case string(mn) == "TBB" || string(mn) == "TBH":
		return ctlIndJump
	case string(mn) == "SVC" || string(mn) == "SWI" || string(mn) == "HVC" || string(mn) == "SMC":
		return ctlTrap
	case bytes.HasPrefix(mn, []byte("POP")) || bytes.HasPrefix(mn, []byte("LDM")):
		if writesPC() {
			if bytes.HasPrefix(mn, []byte("POP")) || bytes.HasPrefix(ops, []byte("sp!")) {
				return ctlReturn
			}
			return ctlIndJump
		}
	case bytes.HasPrefix(mn, []byte("LDR")):
		if writesPC() {
			if bytes.Contains(ops, []byte("[sp]")) {
				return ctlReturn // LDR pc,[sp],#4
			}
			return ctlIndJump
		}
	case bytes.HasPrefix(mn, []byte("MOV")):
		if writesPC() {
			if bytes.HasSuffix(ops, []byte("lr")) || bytes.HasSuffix(ops, []byte("r14")) {
				return ctlReturn
			}
			return ctlIndJump
		}
	default:
		if writesPC() {
			return ctlIndJump
		}
	}
	return ctlLinear
}

func isRegOperand(ops []byte) bool {
	if len(ops) == 0 {
		return false
	}
	switch {
	case ops[0] == 'r' && len(ops) <= 3:
		return true
	case string(ops) == "lr" || string(ops) == "sp" || string(ops) == "ip" || string(ops) == "fp" || string(ops) == "sb" || string(ops) == "sl":
		return true
	}
	return false
}

func containsReg(list []byte, reg string) bool {
	for _, r := range bytes.Split(list, []byte(",")) {
		if string(bytes.TrimSpace(r)) == reg {
			return true
		}
	}
	return false
}
