// Package ingress models the trace ingress port that a RISC-V hart drives
// into its trace encoder (E-Trace 2.0 chapter "Instruction Trace Interface",
// shared by N-Trace), and reads and writes the file forms such a port is
// captured in: PC lists, the N-Trace reference PCSEQ files, the E-Trace
// reference flow's ingress and spike CSV files.
//
// A Block is one retirement group: a contiguous run of instructions starting
// at IAddr that retired together, ended by an instruction of type IType.
package ingress

import "fmt"

// IType is the termination type of an instruction block (E-Trace 2.0 table
// "Instruction Type (itype) encoding", N-Trace chapter 2). Codes 8..15 are
// the 4-bit extension needed for implicit return; with a 3-bit port every
// uninferable jump is ITypeUninferable (6).
type IType uint8

// itype codes, named as the N-Trace specification names them.
const (
	ITypeNone            IType = 0  // no special type
	ITypeException       IType = 1  // exception trap after the last instruction
	ITypeInterrupt       IType = 2  // interrupt trap after the last instruction
	ITypeTrapReturn      IType = 3  // mret/sret (exception or interrupt return)
	ITypeNotTaken        IType = 4  // not-taken conditional branch
	ITypeTaken           IType = 5  // taken conditional branch
	ITypeUninferable     IType = 6  // indirect jump, 3-bit ports only
	ITypeReserved7       IType = 7  // reserved
	ITypeIndirectCall    IType = 8  // uninferable call
	ITypeDirectCall      IType = 9  // inferable call
	ITypeIndirectJump    IType = 10 // uninferable jump without linkage
	ITypeDirectJump      IType = 11 // inferable jump without linkage
	ITypeCoSwap          IType = 12 // co-routine swap
	ITypeReturn          IType = 13 // function return
	ITypeOtherIndirect   IType = 14 // other uninferable jump with linkage
	ITypeOtherDirect     IType = 15 // other inferable jump with linkage
	numITypes                  = 16 // size of the itype tables below
	ITypeMax             IType = 15 // largest valid code
	itypeNameUnknownCode       = "itype?"
)

// itypeNames holds the short names used in CSV files and listings.
var itypeNames = [numITypes]string{
	"none", "exception", "interrupt", "trap-return", "not-taken", "taken",
	"uninferable", "reserved", "indirect-call", "direct-call", "indirect-jump",
	"direct-jump", "co-swap", "return", "other-indirect", "other-direct",
}

// String returns the short name of the itype ("taken", "return", ...).
func (t IType) String() string {
	if int(t) < len(itypeNames) {
		return itypeNames[t]
	}
	return fmt.Sprintf("%s(%d)", itypeNameUnknownCode, uint8(t))
}

// itypeInfo is the table of facts the encoders need about each itype:
// whether it reports an uninferable target (the next PC must be sent),
// whether it is a trap, and what it does to an implicit-return stack.
type itypeInfo struct {
	uninferable bool // target cannot be inferred from the program image
	trap        bool // exception or interrupt
	push        bool // call: push the return address
	pop         bool // return or co-routine swap: pop a predicted address
}

var itypeTable = [numITypes]itypeInfo{
	ITypeNone:          {},
	ITypeException:     {uninferable: true, trap: true},
	ITypeInterrupt:     {uninferable: true, trap: true},
	ITypeTrapReturn:    {uninferable: true},
	ITypeNotTaken:      {},
	ITypeTaken:         {},
	ITypeUninferable:   {uninferable: true},
	ITypeReserved7:     {},
	ITypeIndirectCall:  {uninferable: true, push: true},
	ITypeDirectCall:    {push: true},
	ITypeIndirectJump:  {uninferable: true},
	ITypeDirectJump:    {},
	ITypeCoSwap:        {uninferable: true, push: true, pop: true},
	ITypeReturn:        {uninferable: true, pop: true},
	ITypeOtherIndirect: {uninferable: true},
	ITypeOtherDirect:   {},
}

// Uninferable reports whether a block ending in this itype continues at an
// address that cannot be computed from the program image alone: traps, trap
// returns and every indirect jump, call, return and co-routine swap.
func (t IType) Uninferable() bool { return t <= ITypeMax && itypeTable[t].uninferable }

// IsTrap reports whether the block ends in an exception or interrupt.
func (t IType) IsTrap() bool { return t <= ITypeMax && itypeTable[t].trap }

// IsBranch reports whether the block ends in a conditional branch.
func (t IType) IsBranch() bool { return t == ITypeNotTaken || t == ITypeTaken }

// Pushes reports whether the itype pushes a return address on an implicit
// return stack (calls and co-routine swaps).
func (t IType) Pushes() bool { return t <= ITypeMax && itypeTable[t].push }

// Pops reports whether the itype pops a predicted return address (returns
// and co-routine swaps).
func (t IType) Pops() bool { return t <= ITypeMax && itypeTable[t].pop }

// To3Bit folds a 4-bit itype to what a 3-bit ingress port reports: every
// uninferable jump becomes 6 and every inferable jump 0.
func (t IType) To3Bit() IType {
	if t < 8 {
		return t
	}
	if itypeTable[t&15].uninferable {
		return ITypeUninferable
	}
	return ITypeNone
}

// Priv is the privilege level on the ingress port (E-Trace table "Privilege
// level (priv) encoding").
type Priv uint8

// Privilege levels.
const (
	PrivU  Priv = 0
	PrivS  Priv = 1
	PrivM  Priv = 3
	PrivD  Priv = 4
	PrivVU Priv = 5
	PrivVS Priv = 6
)

// String returns the privilege's letter code ("U", "S", "M", "D", "VU", "VS").
func (p Priv) String() string {
	switch p {
	case PrivU:
		return "U"
	case PrivS:
		return "S"
	case PrivM:
		return "M"
	case PrivD:
		return "D"
	case PrivVU:
		return "VU"
	case PrivVS:
		return "VS"
	}
	return fmt.Sprintf("priv%d", uint8(p))
}

// CType is the context report type (E-Trace table "Context type ctype").
type CType uint8

// Context report types.
const (
	CTypeUnreported   CType = 0
	CTypeImprecise    CType = 1
	CTypePrecise      CType = 2
	CTypeAsynchronous CType = 3
)

// Block is one record of the ingress port: IRetire halfwords of
// instructions retired contiguously from IAddr, the last of size
// 2<<ILastSize bytes and of type IType. For exceptions and interrupts
// (IType 1 or 2) IRetire may be zero, in which case IAddr is the address of
// the instruction that trapped (and did not retire).
//
// Priv, Context and CType describe the retirements of this block; Cause and
// TVal are valid for traps only; Time is the hart's time when the block
// retired; SIJump marks an uninferable jump as sequentially inferable.
type Block struct {
	IAddr     uint64
	Context   uint64
	Cause     uint64
	TVal      uint64
	Time      uint64
	IRetire   uint32 // halfwords retired in this block
	IType     IType
	ILastSize uint8 // log2 of the last instruction's size in halfwords
	Priv      Priv
	CType     CType
	SIJump    bool
}

// LastAddr returns the address of the last instruction retired in the
// block (meaningless when IRetire is 0).
func (b *Block) LastAddr() uint64 {
	return b.IAddr + uint64(b.IRetire)*2 - uint64(2)<<b.ILastSize
}

// NextAddr returns the address that sequentially follows the block: the
// return address of a call that ends it.
func (b *Block) NextAddr() uint64 { return b.IAddr + uint64(b.IRetire)*2 }

// LastSize returns the size in bytes of the last instruction of the block.
func (b *Block) LastSize() int { return 2 << b.ILastSize }

// Source produces ingress blocks, one per call to Next, until it returns
// io.EOF. Next may reuse the block it returned before.
type Source interface {
	Next() (*Block, error)
}

// Sink consumes ingress blocks: an encoder, a filter or a file writer. The
// block is only valid during the call. Close flushes what the sink holds
// and marks the end of the trace.
type Sink interface {
	Block(b *Block) error
	Close() error
}
