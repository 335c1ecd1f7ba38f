// Package riscv holds the RISC-V instruction knowledge that the trace
// encoders, decoders and tools of rvtrace share: how long an instruction is
// ([Length]), how it changes control flow and what call/return role it plays
// ([Decode], [Class], [Link]), and how it reads as assembly ([Disasm]).
//
// # Coverage
//
// [Decode] knows every RV32 and RV64 instruction of I, M, A, F, D, C (Zca,
// Zcf, Zcd), Zicsr, Zifencei, Zba, Zbb, Zbs, Zcb, Zcmp, Zcmt, Zbc, Zbkb,
// Zbkx, Zfh, Zfhmin, Zicbom, Zicboz, Zicbop, Zicond, Zihintpause, Zimop,
// Zcmop, Svinval (sinval.vma, sfence.w.inval, sfence.inval.ir; not its
// hypervisor instructions) and the privileged instructions ecall, ebreak,
// mret, sret, dret, wfi and sfence.vma. Anything else, including reserved compressed encodings (c.lwsp
// with rd=x0, c.jr with rs1=x0, c.addi4spn with a zero immediate, ...),
// encodings of the other XLEN (c.jal is c.addiw on RV64; ld is not RV32) and
// 48/64-bit or longer encodings, is [ClassIllegal]. HINT encodings (c.addi
// with a zero immediate, c.li to x0, ...) are legal and linear, as the ISA
// manual requires. Which extensions are present can be chosen with [Ext] and
// [DecodeExt]; [Decode] uses [DefaultExt], which for RV32 favours Zcmp/Zcmt
// over Zcd because those two share encodings (see [ExtZcmp]). [ParseArch]
// turns an ISA string, such as an ELF file's Tag_RISCV_arch (which
// [ELFArch] reads), into an [Ext].
//
// Link classification ([Inst.Link]) follows the N-Trace 1.0 table
// "Generating itype for different instructions" (4-bit itype), which matches
// the E-Trace 2.0 "Jump classification": x1 and x5 are link registers.
//
// [Decode] is on the hot path of every trace decoder (it is called once per
// instruction), so it is table driven, allocates nothing and runs in a few
// nanoseconds: every instruction is one row (mask, match, extensions, XLEN,
// class, operand layout) of a table that reads like the opcode maps of the
// ISA manual, and an index built at start-up narrows the rows to try for a
// given instruction word to a handful.
//
// # Disassembly
//
// [Disasm] prints instructions the way GNU objdump does (ABI register names,
// no spaces after commas, objdump's choice of aliases such as li, mv, ret,
// beqz or sext.w, and absolute branch targets). For the large, regular part
// of the instruction set (RV64 I, M, A, F, D, Zicsr, Zifencei, Zba, Zbb, Zbs
// and the RV64 meaning of C) it leans on golang.org/x/arch/riscv64/riscv64asm,
// which already carries the operand decoders, the CSR name table and the
// GNU alias rules, and which is maintained and tested against objdump by
// the Go project; rewriting that would only add places to get wrong.
// riscv64asm is an RV64-only disassembler with gaps, so this package writes
// by hand what it lacks or gets wrong: the RV32-only encodings (c.jal,
// c.flw/c.fsw/c.flwsp/c.fswsp, RV32 rev8 and zext.h, rdcycleh and friends),
// Zcb, Zcmp and Zcmt, the privileged instructions (mret, sret, dret, wfi,
// sfence.vma, Svinval's), HINT encodings it rejects, static rounding modes it drops,
// and a few operand forms where its text differs from objdump's. Legality
// always comes from [Decode]'s table, never from riscv64asm, so both
// functions agree on what is an instruction; unknown bits print as
// ".insn 0x..." (or "unimp" for the all-zero parcel, as objdump does).
//
// Where binutils 2.40 is odd, Disasm follows the ISA manual instead: it
// prints addi, andi, slli, csrrwi, csrwi, ... where that objdump says add,
// and, sll, csrrw, csrw with an immediate operand, "pause" for fence w,0,
// ".insn" where it says .2byte/.4byte, targets as 0x-prefixed addresses
// without symbols, and Zcb instructions by their 32-bit equivalents
// ("lbu a0,0(a1)", "zext.b a0,a0") as later binutils do.
//
// The tests compare [Disasm] and [Decode] with the Debian cross binutils
// (riscv64-linux-gnu-as/objdump) and, for Zcb, Zcmp, Zcmt, Zcmop, Zicond
// and Zimop, which binutils 2.40 does not know, with LLVM's llvm-objdump;
// see testdata/gen.sh.
package riscv
