// Package tarmac reads and writes Tarmac traces, the text trace format of
// Arm Fast Models (specs/001: "Tarmac Trace file format"), in a RISC-V
// dialect that rvtrace writes and reads, and in the Arm dialects, so that
// the analyses of package analysis run on a Fast Models trace too.
//
// # The RISC-V dialect
//
// Tarmac is Arm's format and has no RISC-V definition; the RISC-V
// dialect is rvtrace's own mapping of it, described here, which other
// tools read as Tarmac only as far as they accept its instruction-set
// and mode fields.
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
//	    writes A, T, X or O). mode is the privilege level the instruction
//	    executed in (Arm's "processor execution mode"): M, S, U, VS, VU
//	    or D (RISC-V has no security state, so there is no _s/_ns), or
//	    "-" when the trace it was written from does not state it (a
//	    decoded N-Trace without Ownership messages, before the first). An
//	    mret or sret is in the mode it returns from; the instruction it
//	    returns to, like a trap handler's first instruction, in the mode
//	    it runs in.
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
//	    privilege it trapped from (left out when unknown, as the Arm
//	    grammar allows), tval the trap value. number is the
//	    cause in 8 hex digits with bit 31 set for interrupts (mcause on
//	    RV32), desc "Exception_<name>" or "Interrupt_<name>" with the
//	    privileged specification's name of the cause
//	    (Exception_IllegalInstruction, Interrupt_MachineTimer; see
//	    CauseName). When the trace does not give the cause (a decoded
//	    N-Trace), tval is left out, number is 7fffffff (ffffffff for an
//	    interrupt; UnknownCause) and desc Exception_Unknown or
//	    Interrupt_Unknown. The handler's first instruction follows.
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
// From a simulator (the Writer as a sim.Observer) the Writer writes all of these; from a
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
// either dialect, in the forms Arm tools write them (tested against the
// traces of Fast Models, gem5 and the Arm RTL Tarmac modules that
// tarmac-trace-utilities ships, and against that tool's own parse of its
// parser tests):
//
//   - Lines with or without timestamp ("0 clk", "17000 ns", "271ns",
//     "10.356000us", which reads as 10356000 ps), unit and component
//     ("cpu0"); lines without one inherit them from the line before.
//   - Instructions: IT/IS (IF reads as IT) "(id) addr opcode iset mode :
//     disasm", with vaddr:paddr addresses and their _NS/_S suffixes and
//     the second paddr of a T32 instruction ("0000815c:00000000815c_NS,
//     00000000815e_NS"); "IT (addr) opcode ..." without an address
//     field; the RTL forms "IT (addr:id) addr opcode T16 disasm" and
//     "IT (addr:id) addr opcode A : disasm"; the implicit-Thumb form of
//     M-profile RTL "IT addr opcode disasm" (no instruction set: read as
//     T); the ES style "ES (addr:opcode) iset mode: disasm", with CCFAIL
//     for a failed condition and an opcode of dashes for a failed fetch.
//   - Program flow: FD/FI, and "BR (target) iset" of the ES style.
//   - Registers: "R name value", the value in one or more words, split by
//     spaces, colons or underscores, any width (SVE Z and P registers),
//     with unknown digits ("-" for lanes not written, "x"), a bank before
//     or after it ("R R1 (USR)", "R SCTLR (AARCH32)", "R r13 20001fff
//     (MSP)"), a bit range ("R V0<127:64>"), the flags of a status
//     register after it ("R cpsr 20000000 __C_"); the R records Fast
//     Models writes for system operations ("R DC CISW", IC, TLBI, AT).
//   - Memory: MR/MW<size>{X|T|L}, MU<size>_<op>, MR16/MW16 with the data
//     in one or two words, data of "x" digits (unknown), "(ABORTED)"
//     accesses, the RTL forms (MSW4___D, MNR4O__I, "MNW4____ (addr:id)",
//     R08/W04 with an optional X word); the LD/ST records of the ES style,
//     a 16-byte window with dots for the bytes not accessed and "#" for
//     unknown ones, and their continuation lines (a base address aligned
//     under the one of the line before). A coprocessor transfer
//     ("MCW4___R (addr:id) TRANSFER data") is kept as KindOther.
//   - Events: "E value {mode} {value1} number desc", named events
//     without an address ("E DebugEvent_HaltingDebugState 00000000", "E
//     HRESETn 0"), and "ES EXC [n] name", "ES Reset" and "EXC [n] name"
//     of the ES style.
//   - Kept as KindOther: CADI ("CADI E simulation_stopped" ends Fast
//     Models traces), SIGNAL, CACHE, TTW, TTU, TLB, WALKCACHE, P,
//     INFO_EXCEPTION_REASON and bus records, the "Tarmac Text Rev 3t"
//     header, and comments: lines starting with '#'.
//
// Every other line is an error: a line that is none of these forms, or
// that has a known tag and a malformed field, is reported as a
// *SyntaxError naming the file and line and saying why, and the Reader
// goes on with the next line. [CountRecords] counts the records of a file
// by tag and kind; [Sniff] tells a Tarmac file (and an Arm one) from its
// first lines.
//
// [Decoder] turns records into ingress-port blocks (an ingress.Source, so
// a Tarmac file from another simulator can be encoded as N-Trace or
// E-Trace) or into the decoded flow (so every analysis runs on it). It
// stops at the first malformed line, or with Options.Lenient skips it,
// counts it ([Decoder.Skipped]) and keeps the first few errors
// ([Decoder.Errors]). It classifies RISC-V instructions by decoding their
// opcode and Arm ones by their A64 opcode or their A32/T32 disassembly,
// and tells taken from not taken by the address of the next instruction
// of the same CPU. An Arm jump taken right after the link register was
// set to its return address is a call (the "LDR lr,=ret; B func" and
// "MOV lr,pc; BX r3" idioms), as tarmac-trace-utilities' call detection
// has it. Instructions whose fetch failed, and named events without an
// address, do not enter the flow.
//
// No input makes the reader panic, and memory is bounded (a line longer
// than 1 MiB is an error).
package tarmac
