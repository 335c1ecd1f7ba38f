package ingress

import "github.com/rvtrace/rvtrace/riscv"

// ITypeOf returns the 4-bit itype of a retired instruction (N-Trace table
// "Generating itype for different instructions"), given whether a
// conditional branch was taken. Traps are not instruction properties and
// are not returned here.
func ITypeOf(in riscv.Inst, taken bool) IType {
	switch in.Class {
	case riscv.ClassBranch:
		if taken {
			return ITypeTaken
		}
		return ITypeNotTaken
	case riscv.ClassJump, riscv.ClassTableJump:
		return directITypes[in.Link]
	case riscv.ClassIndirect, riscv.ClassPopRet:
		return indirectITypes[in.Link]
	case riscv.ClassTrapReturn:
		return ITypeTrapReturn
	}
	return ITypeNone
}

// The 4-bit itype of jumps by their call/return role (riscv.Link).
var (
	directITypes = [...]IType{
		riscv.LinkNone:   ITypeDirectJump,
		riscv.LinkCall:   ITypeDirectCall,
		riscv.LinkReturn: ITypeDirectJump, // cannot happen: returns are indirect
		riscv.LinkCoSwap: ITypeDirectJump, // cannot happen
		riscv.LinkOther:  ITypeOtherDirect,
	}
	indirectITypes = [...]IType{
		riscv.LinkNone:   ITypeIndirectJump,
		riscv.LinkCall:   ITypeIndirectCall,
		riscv.LinkReturn: ITypeReturn,
		riscv.LinkCoSwap: ITypeCoSwap,
		riscv.LinkOther:  ITypeOtherIndirect,
	}
)

// ConstLoad reports whether in (at pc) loads a constant into a register
// that a following jalr can use as a sequentially inferable target: auipc,
// lui or c.lui. It returns the register and the value loaded.
func ConstLoad(in riscv.Inst, pc uint64, xlen int) (rd uint8, value uint64, ok bool) {
	raw := in.Raw
	mask := ^uint64(0)
	if xlen == 32 {
		mask = 1<<32 - 1
	}
	switch {
	case in.Len == 4 && raw&0x7f == 0x17: // auipc
		return uint8(raw >> 7 & 31), (pc + uint64(int64(int32(raw&0xfffff000)))) & mask, raw>>7&31 != 0
	case in.Len == 4 && raw&0x7f == 0x37: // lui
		return uint8(raw >> 7 & 31), uint64(int64(int32(raw&0xfffff000))) & mask, raw>>7&31 != 0
	case in.Len == 2 && raw&3 == 1 && raw>>13&7 == 3: // c.lui (rd not 0 or 2)
		r := uint8(raw >> 7 & 31)
		if r == 0 || r == 2 || in.Class == riscv.ClassIllegal {
			return 0, 0, false
		}
		imm := int64(raw>>2&31)<<12 | int64(raw>>12&1)<<17
		imm = imm << 46 >> 46 // sign-extend 18 bits
		return r, uint64(imm) & mask, true
	}
	return 0, 0, false
}

// SeqTarget returns the target of the uninferable jump jmp when it is
// sequentially inferable from the constant load prev (at prevPC) retired
// just before it (E-Trace "Jump classification and target inference",
// N-Trace "Sequential Jump Optimization").
func SeqTarget(prev riscv.Inst, prevPC uint64, jmp riscv.Inst, xlen int) (uint64, bool) {
	if jmp.Class != riscv.ClassIndirect {
		return 0, false
	}
	rd, v, ok := ConstLoad(prev, prevPC, xlen)
	if !ok || rd != jmp.Rs1 {
		return 0, false
	}
	t := (v + uint64(jmp.Imm)) &^ 1
	if xlen == 32 {
		t &= 1<<32 - 1
	}
	return t, true
}
