package sim

// Timing is the simple in-order timing model: every retired instruction
// costs the cycles of its class, and a taken branch, a jump or a trap
// return costs Taken cycles more. The cycle count feeds mcycle/cycle and
// the Time of ingress blocks. Zero fields take the defaults, which make
// every instruction cost one cycle and a taken jump nothing more, so that
// mcycle equals minstret as on Spike (programs print their cycle counts;
// matching Spike's output needs matching counters).
//
// The model ignores stalls between instructions (no load-use or
// structural hazards, no caches): it is a throughput model per class.
type Timing struct {
	ALU    uint8 // integer ALU, LUI/AUIPC, Zba/Zbb/Zbs
	Mul    uint8 // multiplications
	Div    uint8 // divisions and remainders
	Load   uint8
	Store  uint8
	Branch uint8 // conditional branches (not taken)
	Jump   uint8 // jal, jalr
	FP     uint8 // FP arithmetic other than division and square root
	FPDiv  uint8 // FP division and square root
	System uint8 // CSR access, fences, ecall/ebreak, xRET, wfi, sfence
	AMO    uint8 // LR/SC and AMOs
	Taken  uint8 // extra cycles of a taken branch, jump or trap return
}

// Timing classes.
const (
	clALU = iota
	clMul
	clDiv
	clLoad
	clStore
	clBranch
	clJump
	clFP
	clFPDiv
	clSystem
	clAMO
)

type timingTable struct {
	costs [11]uint8
	taken uint64
}

func (t Timing) table() timingTable {
	c := [11]uint8{t.ALU, t.Mul, t.Div, t.Load, t.Store, t.Branch, t.Jump, t.FP, t.FPDiv, t.System, t.AMO}
	for i := range c {
		if c[i] == 0 {
			c[i] = 1
		}
	}
	return timingTable{costs: c, taken: uint64(t.Taken)}
}

func (tt *timingTable) cost(d *inst) uint8 { return tt.costs[d.class] }

// classOf returns the timing class of a decoded instruction.
func classOf(d *inst) uint8 {
	switch d.op {
	case opMUL, opMULH, opMULHSU, opMULHU, opMULW, opMULH32, opMULHSU32, opMULHU32:
		return clMul
	case opDIV, opDIVU, opREM, opREMU, opDIVW, opDIVUW, opREMW, opREMUW:
		return clDiv
	case opLB, opLH, opLW, opLD, opLBU, opLHU, opLWU, opFLW, opFLD:
		return clLoad
	case opSB, opSH, opSW, opSD, opFSW, opFSD:
		return clStore
	case opBEQ, opBNE, opBLT, opBGE, opBLTU, opBGEU:
		return clBranch
	case opJAL, opJALR, opJAL32, opJALR32:
		return clJump
	case opFP:
		if d.fop == fpDIV || d.fop == fpSQRT {
			return clFPDiv
		}
		return clFP
	case opLRW, opSCW, opLRD, opSCD, opAMOW, opAMOD:
		return clAMO
	case opFENCE, opFENCEI, opECALL, opEBREAK, opMRET, opSRET, opWFI, opSFENCEVMA,
		opCSRRW, opCSRRS, opCSRRC, opCSRRWI, opCSRRSI, opCSRRCI:
		return clSystem
	}
	return extClassOf(d)
}
