// Package sim is a RISC-V hart model that runs real programs and drives
// the trace ingress port of every hart (package ingress).
//
// # Model
//
// Harts implement RV64GC or RV32GC (I, M, A, F, D, C, Zicsr, Zifencei)
// plus Zba, Zbb and Zbs, little endian, with M, S and U privilege:
// mstatus/sstatus, medeleg/mideleg delegation, direct and vectored
// mtvec/stvec, mret/sret, wfi, exceptions with Spike's causes and tvals
// (misaligned, access fault, illegal instruction with tval = the
// instruction bits, ecall from U/S/M, ebreak with tval = pc, page faults),
// interrupts from the CLINT and the software-writable mip bits taken in
// the privileged spec's priority order, the counters (mcycle, minstret,
// time and their user views under mcounteren/scounteren), 16 PMP entries
// (TOR, NA4, NAPOT, lock bits; Config.PMPEntries), and Sv39/Sv32
// translation with hardware A/D updates and sfence.vma. The debug
// triggers are absent (tselect reads 0).
//
// # Performance
//
// Instructions are decoded once per 4 KiB page into a cache of
// pre-decoded slots (kept coherent by trapping stores to code pages, so
// self-modifying code works without fence.i; Result.CodeWrites counts the
// stores that overwrote executed instructions, since a trace decoded
// against the static ELF image is wrong there); fetches, loads and stores
// go through direct-mapped software TLBs of host pages, one set per
// privilege level, so that traps and returns switch sets instead of
// flushing them (satp, sfence.vma, SUM, MXR, MPRV and PMP changes flush);
// the interpreter loop allocates nothing. Double-precision fused
// multiply-adds use the host's FMA once fflags.NX is set. Coremark runs at
// about 180-195 M instructions per CPU-second (go test -bench Coremark
// ./sim/; rvtrace bench --sim times whole processes).
//
// # Limits
//
// No vector, hypervisor, compressed-FP-16, Zfh or Zicbo* extensions; no
// PLIC (external interrupts only through the writable mip.SEIP); the UART
// has no input; the HTIF syscall proxy implements write, exit and
// getmainvars only (riscv-pk therefore boots but cannot load a payload);
// misaligned loads and stores succeed unless Config.MisalignedTrap (they
// never trap in Linux mode); AMOs to devices fault; the Linux emulation is single
// threaded, opens host files read-only and maps anonymous memory only.
// Errors caused by the guest end the run with a *GuestError naming the PC
// and the instruction bits; the simulator does not panic on guest
// behaviour (a last-resort recover turns an internal error into an error
// naming the PC).
package sim
