// Package tarmac reads and writes Tarmac traces, the text trace format of
// Arm Fast Models (specs/001: "Tarmac Trace file format"), in a RISC-V
// dialect that rvtrace writes and reads, and in the Arm dialects, so that
// the analyses of package analysis run on a Fast Models trace too.
//
// # The RISC-V dialect
//
// Every record is one line "<time> <scale> <cpu> <tag> ...", with the
// time in decimal (the simulator's clock, or the last timestamp of a
// decoded trace, 0 when the trace has none), the scale "clk" and the CPU
// "cpu<hart>". The records follow the Arm grammar as closely as RISC-V
// allows:
//
//	IT (<inst_id>) <addr> <opcode> <iset> <mode> : <disasm>
//	    An instruction that retired. inst_id counts the hart's
//	    instructions from 1. addr is 16 hex digits (8 for RV32). opcode is
//	    8 hex digits, or 4 for a compressed instruction, so its width
//	    gives the instruction's size. iset is RV64 or RV32 (where Arm
//	    writes A, T, X or O). mode is the privilege level: M, S, U, VS, VU
//	    or D (RISC-V has no security state, so there is no _s/_ns).
//	    disasm is rvtrace's disassembly. RISC-V has no predication, so IS
//	    is never written: a not-taken branch is an IT.
//	FD (<inst_id>) <addr> <target> <iset>
//	FI (<inst_id>) <addr> <target> <iset>
//	    Program flow: written after the records of a branch, jump, call or
//	    return that did not fall through, FD for a direct one (branches,
//	    jal) and FI for an indirect one (jalr, returns, mret/sret); inst_id
//	    and addr are those of the instruction.
//	R <register> <value>
//	    A register write, with the register's ABI name (zero, ra, sp, a0,
//	    fs1...), a CSR name (mstatus, mepc...) or csr0x<hex>, and the value
//	    in 16 hex digits (8 for RV32). A change of the trace context (the
//	    ingress port's context) is written as a write of scontext, or of
//	    mcontext in M mode.
//	MR<size> <addr> <data>
//	MW<size> <addr> <data>
//	    A load or store of size bytes (1, 2, 4, 8); data has 2*size hex
//	    digits, split by "_" every 8 digits as Arm does for 64-bit data.
//	E <epc> <mode> <tval> <number> <desc>
//	    An exception or interrupt, written after the last instruction that
//	    retired before it. epc is the address of the instruction that
//	    trapped (exceptions) or would have run next (interrupts), mode the
//	    privilege it trapped from, tval the trap value. number is the
//	    cause in 8 hex digits with bit 31 set for interrupts (mcause on
//	    RV32), desc "Exception_<name>" or "Interrupt_<name>" with the
//	    privileged specification's name of the cause
//	    (Exception_IllegalInstruction, Interrupt_MachineTimer; see
//	    CauseName). The handler's first instruction follows.
//	E <offset> <suspect> <index> TraceGap
//	    A gap in a trace written from a decoded flow: trace was lost or
//	    could not be decoded there, so the instructions before and after
//	    it are not consecutive. It follows the grammar of the E record
//	    (value, value1, number, description): offset is the byte offset
//	    in the trace of the message or packet where the gap was found (16
//	    hex digits, 8 for RV32), suspect the number of instructions
//	    before it that may be wrong (8 hex digits), index the message or
//	    packet index (8 hex digits); an unknown offset or index is all f.
//	    The description is GapEventDesc. A reader that does not know it
//	    sees an event record; rvtrace's reader ends the flow there.
//
// From a simulator ([Tracer]) the Writer writes all of these; from a
// decoded trace (the Writer as a flow.Sink) it writes what a trace knows:
// instructions (read from the program image), program flow, events and
// timestamps.
//
// An ecall or any instruction that raises an exception does not retire,
// so it has no IT record: its address is the E record's epc.
//
// # Reading
//
// [Reader] returns the records of a Tarmac file one line at a time in
// either dialect, and in the variants Arm tools write: with or without
// timestamp, unit and CPU; IT/IS instruction records and the ES/LD/ST
// style of older tools (continuation lines without timestamp, "BR
// (target)" branch records, LD/ST records giving a window of memory with
// dots for the bytes not accessed, "ES EXC" events); R records with wide
// or split values; MR/MW/MU records with paddr and attributes; E records.
// Cache, TLB, table walk, bus and signal records, headers and lines with
// unknown tags are returned as KindOther, so nothing is lost.
//
// [Decoder] turns records into ingress-port blocks (an ingress.Source, so
// a Tarmac file from another simulator can be encoded as N-Trace or
// E-Trace) or into the decoded flow (so every analysis runs on it). It
// classifies RISC-V instructions by decoding their opcode and Arm ones by
// their A64 opcode or their A32/T32 disassembly, and tells taken from not
// taken by the address of the next instruction of the same CPU.
//
// Malformed lines are reported as *SyntaxError naming the file and line;
// no input makes the reader panic.
package tarmac
