// Package sim is a RISC-V hart model that runs real programs and drives
// the trace ingress port of every hart (package ingress).
//
// # Model
//
// Harts implement RV64GC or RV32GC (I, M, A, F, D, C, Zicsr, Zifencei)
// plus Zba, Zbb, Zbs, Zbc, Zbkb, Zbkx, Zicond, Zfh and Zfhmin, Zicbom and
// Zicboz (64-byte blocks, enabled by menvcfg/senvcfg; memory is coherent,
// so cbo.clean/flush/inval only check access), Zicbop, Zihintpause, Zimop
// and Zcmop (ext.go, zfh.go), Zcmp and Zcmt with the jvt CSR in place of
// Zcd when the program's ISA names them (Config.Arch, else the ELF
// file's Tag_RISCV_arch: zcmp.go), little endian, with M, S and U privilege:
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
// # Performance counters
//
// mcycle, minstret and mhpmcounter3..31 (64 bits, with the h halves on
// RV32), mhpmevent3..31, mcountinhibit (it stops counting), the
// mcounteren/scounteren gating of the user views, and Sscofpmf: the OF
// and MINH/SINH/UINH bits of mhpmevent, scountovf and the local
// counter-overflow interrupt (mip bit 13, delegable): see hpm.go. The
// events come from the event model of package pmu (SetEventModel);
// without it only cycles and instructions count, and the SBI PMU's
// counter_config_matching refuses the other events with
// SBI_ERR_NOT_SUPPORTED rather than counting them as 0.
//
// # Firmware
//
// LoadSBI runs an S-mode program on the simulator's own SBI firmware
// (base, TIME, IPI, RFENCE, HSM, SRST, DBCN, legacy console, PMU:
// sbi.go, sbi_pmu.go); LoadFirmware boots real M-mode firmware (OpenSBI)
// with an S-mode payload on a virt-like machine (virt.go).
//
// # Full tracing
//
// SetObserver reports every retired instruction, register write, memory
// access and trap to an Observer (observe.go), such as the Tarmac writer
// (tarmac.Writer); the simulator does not depend on the Tarmac package.
//
// F and D are IEEE 754 exact in all five rounding modes with all five
// flags, NaN boxing, canonical NaNs, saturating conversions and the
// RISC-V fmin/fmax and comparison rules: see fp.go for the method
// (exact intermediate results with math/big, a rounding core of our own,
// a native fast path for round-to-nearest-even).
//
// # Machine
//
// A Machine holds the harts, RAM banks, a CLINT at 0x02000000 (mtimecmp
// resets to 0, as on Spike), a 16550 UART at 0x10000000 (output only), a
// boot ROM at 0x1000 with a device tree at 0x1020 (a1 at the entry point,
// so riscv-pk boots) and HTIF (tohost/fromhost found from the ELF
// symbols: exit codes, the syscall proxy's write, exit and getmainvars,
// and the console device).
//
// Run schedules like Spike so that instruction counts match Spike's: the
// harts take turns of Config.Quantum (5000) instructions; a trap or a wfi
// ends a hart's turn early; mtime advances Quantum/100 per round; the
// host polls tohost between turns (Config.HTIFImmediate acts on every
// write at once instead), so the loops waiting for fromhost spin as long
// as on Spike. An exit command ends the run on the store that writes it
// to tohost (the instruction counts of Spike's logs end there; the final
// j . loop never runs). The first turn of each hart is shortened by the 5
// steps of Spike's boot ROM, which are not executed or counted. A lone
// M-mode hart spinning in j . with interrupts disabled can never leave
// the loop: the run ends at once, at the instruction limit with the count
// spinning would reach, or with an error when there is no limit (unless a
// PC hook, ingress sink or observer watches every retirement).
//
// LoadLinuxELF runs static riscv64 (and riscv32) Linux programs in U-mode
// with the system calls emulated (see linux.go); their output and
// retired-PC sequence match qemu-riscv64's. Random instruction sequences
// (package internal/rvgen) end in the same registers, fcsr and memory as
// on qemu-riscv64 and qemu-riscv32 (difftest_test.go).
//
// # Ingress port
//
// SetIngress connects a hart to an ingress.Sink. Each block carries the
// 4-bit itype of the N-Trace table "Generating itype for different
// instructions" (computed when jumps are decoded), the privilege, the
// Time (the hart's cycle count after the block's last instruction),
// Context and CType (a write of scontext, CSR 0x5A8, ends the block of
// the writing instruction; the next block reports the new context with
// CType precise; with Config.ContextSource ContextASID the context is the
// ASID of satp instead, and a satp write that changes it does the same).
// PeekCode reads the code a block ran without side effects,
// SetCodeWriteHook reports writes into pages holding code that ran,
// TranslationGen tells when a fetch translation may have changed,
// FetchFrame gives the physical page a fetch uses (from the TLB) and
// BlockInstret the instruction count a reported block began at (what
// package sideband needs). Cause holds the exception or interrupt code without the
// interrupt bit (the itype tells which). In coalesced mode, when nothing
// else watches the hart (no PC hook or list, observer or event model),
// the interpreter loop records the conditional branches and inferable
// jumps and hands their blocks over when it leaves (at an uninferable
// jump, a trap, a slow instruction or after 128 of them), in order and
// before anything else happens; the hart's instret and cycle counts, pc
// and BlockInstret are each block's while the sink takes it, and a sink
// that is a BlockBatcher takes them in one call instead. Conventions:
//
//   - Coalesced (the default) merges straight-line instructions until an
//     instruction with a non-zero itype, a trap, a privilege change or a
//     context change; PerInstruction emits one block per instruction.
//   - An exception or interrupt turns the block of the last instruction
//     retired before it into an itype 1/2 block with Cause and TVal,
//     unless that instruction has its own non-zero itype or nothing
//     retired since the last block: then a separate block with IRetire 0
//     is emitted at the address of the instruction that trapped (for an
//     interrupt, the instruction that would have executed next).
//   - ecall, ebreak and c.ebreak that trap do not retire: they are not in
//     the PC list, not in minstret and not in any block.
//   - A block never spans a privilege change.
//
// SetPCHook calls a function with every retired PC at every privilege
// level; SetPCList hands the same PCs over in batches, without stopping
// the interpreter at every instruction (rvtrace run --pcs).
//
// # Timing
//
// Config.Timing is a per-class in-order model (timing.go). Its default
// (one cycle per instruction) makes mcycle equal minstret, as on Spike.
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
// the interpreter loop allocates nothing and makes no calls (whatever
// needs one returns to a handler loop, so that the loop's state stays in
// registers). Double-precision fused multiply-adds use the host's FMA
// once fflags.NX is set. Coremark runs at about 250 M instructions per
// CPU-second in process (go test -bench Coremark ./sim/) and 235 M as a
// whole process (rvtrace bench --sim); see PERFORMANCE.md.
//
// # Limits
//
// No vector, hypervisor or Zcb; Zcmp and Zcmt are never in the device
// tree's ISA string (the machines that have one run rv64gc kernels); the PLIC,
// the UART's interrupt and input, the virtio-blk disk and Sstc exist on
// the virt machine with a kernel only (LoadKernel: Sstc with the built-in
// SBI; elsewhere external interrupts come only through the writable
// mip.SEIP and the UART has no input); the HTIF syscall proxy implements write, exit and
// getmainvars only (riscv-pk therefore boots but cannot load a payload);
// misaligned loads and stores succeed unless Config.MisalignedTrap (they
// never trap in Linux mode); AMOs to devices fault; the Linux emulation is single
// threaded, opens host files read-only and maps anonymous memory only.
// Errors caused by the guest end the run with a *GuestError naming the PC
// and the instruction bits; the simulator does not panic on guest
// behaviour (a last-resort recover turns an internal error into an error
// naming the PC).
package sim
