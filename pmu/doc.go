// Package pmu is rvtrace's performance-monitoring model: the events of
// the SBI PMU extension (specs/002) and the micro-architecture model that
// produces them for the simulator's hardware performance counters.
//
// # Events
//
// Events are named by their SBI event_idx (EventIdx: type in bits
// 19:16, code in 15:0): the general hardware events of type 0 (codes
// 1..10), the cache events of type 1 (cache_id<<3 | op<<1 | result for
// L1D, L1I, LL, DTLB, ITLB, BPU and NODE × read/write/prefetch ×
// access/miss), raw events (type 2, the event in event_data: the Raw*
// selectors: taken branches, conditional branches, direct and indirect
// jumps, calls, returns, loads, stores, atomics, exceptions, interrupts,
// FP operations, multiplications/divisions, CSR accesses, fences,
// writebacks, page-walk cycles, compressed instructions and the three
// kinds of misprediction) and the firmware events of type 15 (codes
// 0..21, counted by the simulator's SBI firmware). The value of
// mhpmevent[55:0] that selects a hardware event is its event_idx for
// general and cache events and the Raw* selector for raw events. Events
// lists them all ("rvtrace run --pmu-events"). Not modelled, and so
// reported as not supported: the NUMA node events, writes and prefetches
// of the L1I, ITLB and BPU, prefetches of the DTLB. Report and
// HartCounts (the --pmu table and JSON) list as not supported, never as
// 0, the events a run cannot count: every model event without a model,
// the TLB events without address translation (Linux user mode).
//
// Meanings: cycles is mcycle, the timing model's cycles including the
// stalls below; ref-cycles equals cycles (the core clock is fixed);
// instructions is minstret; cache-references and cache-misses are
// last-level accesses and misses; branches are all control transfers
// (conditional branches, jumps, calls, returns) and branch-misses the
// mispredicted ones; bus-cycles are the memory bus cycles of every line
// moved to or from memory (LineSize/BusWidth each); front-end stalls are
// the cycles lost to L1I and ITLB misses and mispredictions, back-end
// stalls those lost to L1D and DTLB misses.
//
// # Model
//
// Model (one per hart) sees every retired instruction (Retire) and
// every trap (Trap). Its parts, all sized by Config (DefaultConfig; "rvtrace
// run --pmu-model" parses the same with ParseConfig):
//
//   - L1I (32 KiB, 4 ways), L1D (32 KiB, 8 ways) and a last level shared
//     by both (1 MiB, 16 ways), 64-byte lines: set-associative, true LRU,
//     write-back and write-allocate (a store miss fills the line like a
//     load miss; dirty victims are written back to the next level without
//     stalling). Every instruction is one L1I read access; each load one
//     L1D read, each store one L1D write, an AMO both. An optional
//     next-line prefetcher (Prefetch) fetches line L+1 into the L1 on a
//     miss of line L, without stalling, counted as prefetch accesses and
//     misses.
//   - ITLB and DTLB (32 entries each, fully associative, LRU) of 4 KiB
//     pages, accessed only while address translation is on (satp not
//     Bare and the effective privilege below M), flushed by sfence.vma
//     (and by the SBI remote sfence). Superpages are modelled as 4 KiB
//     pages.
//   - A branch predictor: gshare (4096 2-bit counters, starting weakly
//     not taken, indexed by pc>>1 XOR 8 bits of global history; 0 history
//     bits make it bimodal) for conditional branches, a direct-mapped BTB
//     (512 entries) for indirect jumps and indirect calls, a return
//     address stack (8 entries) for returns. Direct jumps and calls never
//     mispredict (their target is known at decode).
//
// Timing: the simulator's per-class timing model (sim.Timing) charges
// every instruction its class cost; the model adds LLLatency (12) cycles
// for an L1 miss that hits the last level, MemLatency (60) more for a
// last-level miss, WalkLatency (20) for a TLB miss and MispredictPenalty
// (6) for a misprediction. An instruction fetch and its data access can
// both stall; stalls do not overlap.
//
// Counts are kept per privilege level (SetPriv), which is what the
// mhpmevent MINH/SINH/UINH bits of Sscofpmf filter on.
//
// # Limits
//
// The caches are indexed and tagged with virtual addresses (the same as
// physical ones in Bare mode) and private to each hart; no coherence
// between harts' models; misaligned accesses touch only their first
// line; instruction fetches are modelled per instruction, not per fetch
// block; fence.i does not flush the L1I model; there is no store buffer,
// no out-of-order overlap of misses, and no contention. Profile
// attributes each instruction's outcome to its pc (and function); it
// writes per-function TSV (WriteFunctions) or a pprof profile with one
// sample type per event (Pprof; "rvtrace run --pmu-pprof").
//
// Speed: the simulator keeps each instruction's fast kind (FastKind) in
// its pre-decoded form and drives the model itself. Fast.Retire, inline
// in the interpreter loop, takes plain instructions and loads and stores
// whose L1I line (and L1D line) is the most recently used of its set:
// such an access changes no replacement state, so only tallies move.
// Model.Step, one call, takes the other instructions (with a short path
// for a conditional branch from such a line); the full path of Retire is
// left for address translation, Track (profiles) and counters that may
// overflow, and gives the same counts. Coremark runs at about 0.63
// of the speed without the model (sim: GOMAXPROCS=1 go test -run X
// -bench 'CoremarkNoModel|CoremarkPMU', cpu-MIPS); sim's TestPMUCounts
// pins the counts of every path.
package pmu
