package pmu

import (
	"fmt"
	"sort"
)

// EventIdx is an SBI PMU event_idx: bits 19:16 are the event type, bits
// 15:0 the code (SBI PMU extension, "event_idx").
type EventIdx uint32

// Event types of event_idx[19:16].
const (
	TypeHardware = 0x0 // general hardware events
	TypeCache    = 0x1 // hardware cache events
	TypeRaw      = 0x2 // raw events (the selector is in event_data)
	TypeFirmware = 0xf // firmware events
)

// Type returns event_idx[19:16].
func (e EventIdx) Type() uint32 { return uint32(e) >> 16 & 0xf }

// Code returns event_idx[15:0].
func (e EventIdx) Code() uint32 { return uint32(e) & 0xffff }

// General hardware events (type 0).
const (
	HwNoEvent               EventIdx = 0
	HwCPUCycles             EventIdx = 1
	HwInstructions          EventIdx = 2
	HwCacheReferences       EventIdx = 3
	HwCacheMisses           EventIdx = 4
	HwBranchInstructions    EventIdx = 5
	HwBranchMisses          EventIdx = 6
	HwBusCycles             EventIdx = 7
	HwStalledCyclesFrontend EventIdx = 8
	HwStalledCyclesBackend  EventIdx = 9
	HwRefCPUCycles          EventIdx = 10
	hwMax                            = 11
)

// Cache ids of cache events (event_idx.code[15:3]).
const (
	CacheL1D  = 0
	CacheL1I  = 1
	CacheLL   = 2
	CacheDTLB = 3
	CacheITLB = 4
	CacheBPU  = 5
	CacheNode = 6
	cacheMax  = 7
)

// Cache operations (event_idx.code[2:1]) and results (event_idx.code[0]).
const (
	OpRead       = 0
	OpWrite      = 1
	OpPrefetch   = 2
	opMax        = 3
	ResultAccess = 0
	ResultMiss   = 1
)

// CacheEvent returns the event_idx of a cache event.
func CacheEvent(cache, op, result int) EventIdx {
	return EventIdx(TypeCache<<16 | cache<<3 | op<<1 | result)
}

// RawEventIdx is the event_idx of every raw event; the event itself is
// selected by event_data, which is the mhpmevent selector (Raw*).
const RawEventIdx EventIdx = TypeRaw << 16

// Raw event selectors: the value a raw event's event_data carries and the
// value of mhpmevent[55:0] that selects it. They count what the general
// and cache events do not.
const (
	RawBase            = 0x20000
	RawTakenBranches   = RawBase + 1  // conditional branches taken
	RawCondBranches    = RawBase + 2  // conditional branches
	RawDirectJumps     = RawBase + 3  // jal that is not a call
	RawIndirectJumps   = RawBase + 4  // jalr that is neither call nor return
	RawCalls           = RawBase + 5  // jal/jalr linking ra or t0
	RawReturns         = RawBase + 6  // jalr ra/t0 that is not a call
	RawLoads           = RawBase + 7  // integer and FP loads, LR
	RawStores          = RawBase + 8  // integer and FP stores, SC
	RawAtomics         = RawBase + 9  // LR, SC, AMOs
	RawExceptions      = RawBase + 10 // exceptions taken
	RawInterrupts      = RawBase + 11 // interrupts taken
	RawFPOps           = RawBase + 12 // F/D instructions other than loads and stores
	RawMulDiv          = RawBase + 13 // M-extension instructions
	RawCSRAccesses     = RawBase + 14 // CSR instructions
	RawFences          = RawBase + 15 // fence, fence.i, sfence.vma
	RawL1DWritebacks   = RawBase + 16 // dirty L1D lines written back
	RawLLWritebacks    = RawBase + 17 // dirty LL lines written back to memory
	RawPageWalkCycles  = RawBase + 18 // cycles spent in TLB-miss page walks
	RawCompressed      = RawBase + 19 // 16-bit instructions retired
	RawReturnMispredic = RawBase + 20 // returns whose RAS prediction was wrong
	RawIndirectMispred = RawBase + 21 // indirect jumps whose BTB target was wrong
	RawDirMispredicts  = RawBase + 22 // conditional branches predicted the wrong way
	rawMax             = 23
)

// Firmware events (type 15): counted by the simulator's SBI firmware.
const (
	FwMisalignedLoad         = 0
	FwMisalignedStore        = 1
	FwAccessLoad             = 2
	FwAccessStore            = 3
	FwIllegalInsn            = 4
	FwSetTimer               = 5
	FwIPISent                = 6
	FwIPIReceived            = 7
	FwFenceISent             = 8
	FwFenceIReceived         = 9
	FwSfenceVMASent          = 10
	FwSfenceVMAReceived      = 11
	FwSfenceVMAASIDSent      = 12
	FwSfenceVMAASIDReceived  = 13
	FwHfenceGVMASent         = 14
	FwHfenceGVMAReceived     = 15
	FwHfenceGVMAVMIDSent     = 16
	FwHfenceGVMAVMIDReceived = 17
	FwHfenceVVMASent         = 18
	FwHfenceVVMAReceived     = 19
	FwHfenceVVMAASIDSent     = 20
	FwHfenceVVMAASIDReceived = 21
	NumFirmwareEvents        = 22
)

// FirmwareEvent returns the event_idx of firmware event code.
func FirmwareEvent(code int) EventIdx { return EventIdx(TypeFirmware<<16 | code) }

// Dense numbering of the hardware events the model and the hart count:
// general events 1..10, then the 42 cache events, then the raw events.
const (
	denseCache = hwMax                         // first cache event
	denseRaw   = denseCache + cacheMax*opMax*2 // first raw event
	// NumDense is the size of the dense hardware event space.
	NumDense = denseRaw + rawMax
)

// Dense returns the dense index of a hardware event selector (an
// mhpmevent[55:0] value: a general or cache event_idx, or a raw
// selector), or -1 when the selector names no event.
func Dense(sel uint64) int {
	switch {
	case sel >= 1 && sel < hwMax:
		return int(sel)
	case sel>>16 == TypeCache:
		code := sel & 0xffff
		cache, op, res := code>>3, code>>1&3, code&1
		if cache >= cacheMax || op >= opMax {
			return -1
		}
		return denseCache + int(cache*opMax*2+op*2+res)
	case sel > RawBase && sel < RawBase+rawMax:
		return denseRaw + int(sel-RawBase)
	}
	return -1
}

// Selector returns the mhpmevent selector of dense index i (the inverse
// of Dense).
func Selector(i int) uint64 {
	switch {
	case i < denseCache:
		return uint64(i)
	case i < denseRaw:
		j := i - denseCache
		return uint64(CacheEvent(j/(opMax*2), j/2%opMax, j%2))
	}
	return uint64(RawBase + i - denseRaw)
}

// Dense indices used by the model's hot paths (constants: the hot path
// indexes the count array directly).
const (
	dL1DReadAcc   = denseCache + CacheL1D*opMax*2 + OpRead*2 + ResultAccess
	dL1DReadMiss  = denseCache + CacheL1D*opMax*2 + OpRead*2 + ResultMiss
	dL1DWriteAcc  = denseCache + CacheL1D*opMax*2 + OpWrite*2 + ResultAccess
	dL1DWriteMiss = denseCache + CacheL1D*opMax*2 + OpWrite*2 + ResultMiss
	dL1DPfAcc     = denseCache + CacheL1D*opMax*2 + OpPrefetch*2 + ResultAccess
	dL1DPfMiss    = denseCache + CacheL1D*opMax*2 + OpPrefetch*2 + ResultMiss
	dL1IReadAcc   = denseCache + CacheL1I*opMax*2 + OpRead*2 + ResultAccess
	dL1IReadMiss  = denseCache + CacheL1I*opMax*2 + OpRead*2 + ResultMiss
	dL1IPfAcc     = denseCache + CacheL1I*opMax*2 + OpPrefetch*2 + ResultAccess
	dL1IPfMiss    = denseCache + CacheL1I*opMax*2 + OpPrefetch*2 + ResultMiss
	dLLReadAcc    = denseCache + CacheLL*opMax*2 + OpRead*2 + ResultAccess
	dLLReadMiss   = denseCache + CacheLL*opMax*2 + OpRead*2 + ResultMiss
	dLLWriteAcc   = denseCache + CacheLL*opMax*2 + OpWrite*2 + ResultAccess
	dLLWriteMiss  = denseCache + CacheLL*opMax*2 + OpWrite*2 + ResultMiss
	dLLPfAcc      = denseCache + CacheLL*opMax*2 + OpPrefetch*2 + ResultAccess
	dLLPfMiss     = denseCache + CacheLL*opMax*2 + OpPrefetch*2 + ResultMiss
	dDTLBReadAcc  = denseCache + CacheDTLB*opMax*2 + OpRead*2 + ResultAccess
	dDTLBReadMiss = denseCache + CacheDTLB*opMax*2 + OpRead*2 + ResultMiss
	dDTLBWrAcc    = denseCache + CacheDTLB*opMax*2 + OpWrite*2 + ResultAccess
	dDTLBWrMiss   = denseCache + CacheDTLB*opMax*2 + OpWrite*2 + ResultMiss
	dITLBReadAcc  = denseCache + CacheITLB*opMax*2 + OpRead*2 + ResultAccess
	dITLBReadMiss = denseCache + CacheITLB*opMax*2 + OpRead*2 + ResultMiss
	dBPUReadAcc   = denseCache + CacheBPU*opMax*2 + OpRead*2 + ResultAccess
	dBPUReadMiss  = denseCache + CacheBPU*opMax*2 + OpRead*2 + ResultMiss
)

// Event describes one event for listings.
type Event struct {
	Idx      EventIdx // SBI event_idx
	Data     uint64   // event_data (the selector of raw events, else 0)
	Selector uint64   // mhpmevent[55:0] value (0 for firmware events)
	Name     string   // perf-style name ("cycles", "L1-dcache-load-misses")
	Desc     string
	// Supported is false for events the model does not produce (NUMA
	// node events): the SBI firmware reports them as not supported.
	Supported bool
}

var hwNames = [hwMax]struct{ name, desc string }{
	{"", ""},
	{"cycles", "CPU cycles (mcycle), stalls of the event model included"},
	{"instructions", "instructions retired (minstret)"},
	{"cache-references", "last-level cache accesses"},
	{"cache-misses", "last-level cache misses"},
	{"branches", "control-transfer instructions: branches, jumps, calls, returns"},
	{"branch-misses", "mispredicted control transfers (direction, indirect target or return address)"},
	{"bus-cycles", "memory bus busy cycles: the memory latency of every line filled from or written back to memory"},
	{"stalled-cycles-frontend", "cycles lost to L1I/ITLB misses and branch mispredictions"},
	{"stalled-cycles-backend", "cycles lost to L1D/DTLB misses"},
	{"ref-cycles", "reference cycles (the core clock is fixed: equal to cycles)"},
}

var cacheNames = [cacheMax]string{"L1-dcache", "L1-icache", "LLC", "dTLB", "iTLB", "branch", "node"}
var opNames = [opMax]string{"load", "store", "prefetch"}

var rawNames = [rawMax]struct{ name, desc string }{
	{"", ""},
	{"taken-branches", "conditional branches taken"},
	{"cond-branches", "conditional branches retired"},
	{"direct-jumps", "jal instructions that are not calls"},
	{"indirect-jumps", "jalr instructions that are neither calls nor returns"},
	{"calls", "calls (jal/jalr linking ra or t0)"},
	{"returns", "returns (jalr through ra or t0, not linking)"},
	{"loads", "loads retired (integer, FP, LR, AMO)"},
	{"stores", "stores retired (integer, FP, SC, AMO)"},
	{"atomics", "LR, SC and AMO instructions"},
	{"exceptions", "exceptions taken"},
	{"interrupts", "interrupts taken"},
	{"fp-ops", "F/D instructions other than loads and stores"},
	{"mul-div", "multiplications, divisions and remainders"},
	{"csr-accesses", "CSR instructions"},
	{"fences", "fence, fence.i and sfence.vma"},
	{"l1d-writebacks", "dirty L1D lines written back to the last-level cache"},
	{"llc-writebacks", "dirty last-level lines written back to memory"},
	{"page-walk-cycles", "cycles spent in page walks after TLB misses"},
	{"compressed", "16-bit (compressed) instructions retired"},
	{"return-mispredicts", "returns whose return-address-stack prediction was wrong"},
	{"indirect-mispredicts", "indirect jumps whose BTB target was wrong"},
	{"direction-mispredicts", "conditional branches predicted the wrong way"},
}

var fwNames = [NumFirmwareEvents]string{
	"fw-misaligned-load", "fw-misaligned-store", "fw-access-load", "fw-access-store",
	"fw-illegal-insn", "fw-set-timer", "fw-ipi-sent", "fw-ipi-received",
	"fw-fence-i-sent", "fw-fence-i-received", "fw-sfence-vma-sent", "fw-sfence-vma-received",
	"fw-sfence-vma-asid-sent", "fw-sfence-vma-asid-received", "fw-hfence-gvma-sent", "fw-hfence-gvma-received",
	"fw-hfence-gvma-vmid-sent", "fw-hfence-gvma-vmid-received", "fw-hfence-vvma-sent", "fw-hfence-vvma-received",
	"fw-hfence-vvma-asid-sent", "fw-hfence-vvma-asid-received",
}

// DenseName returns the perf-style name of dense hardware event i.
func DenseName(i int) string {
	switch {
	case i > 0 && i < denseCache:
		return hwNames[i].name
	case i >= denseCache && i < denseRaw:
		j := i - denseCache
		c, op, res := j/(opMax*2), j/2%opMax, j%2
		name := cacheNames[c] + "-" + opNames[op]
		if res == ResultMiss {
			return name + "-misses"
		}
		if op == OpPrefetch {
			return name + "es"
		}
		return name + "s"
	case i >= denseRaw && i < NumDense:
		return rawNames[i-denseRaw].name
	}
	return fmt.Sprintf("event%d", i)
}

// FirmwareName returns the name of firmware event code.
func FirmwareName(code int) string {
	if code >= 0 && code < NumFirmwareEvents {
		return fwNames[code]
	}
	return fmt.Sprintf("fw-event%d", code)
}

// Supported reports whether the model produces dense event i.
func Supported(i int) bool {
	if i <= 0 || i >= NumDense || i == denseRaw {
		return false
	}
	if i >= denseCache && i < denseRaw && (i-denseCache)/(opMax*2) == CacheNode {
		return false
	}
	// writes and prefetches of the instruction-side units do not exist
	switch Selector(i) {
	case uint64(CacheEvent(CacheL1I, OpWrite, ResultAccess)), uint64(CacheEvent(CacheL1I, OpWrite, ResultMiss)),
		uint64(CacheEvent(CacheITLB, OpWrite, ResultAccess)), uint64(CacheEvent(CacheITLB, OpWrite, ResultMiss)),
		uint64(CacheEvent(CacheITLB, OpPrefetch, ResultAccess)), uint64(CacheEvent(CacheITLB, OpPrefetch, ResultMiss)),
		uint64(CacheEvent(CacheDTLB, OpPrefetch, ResultAccess)), uint64(CacheEvent(CacheDTLB, OpPrefetch, ResultMiss)),
		uint64(CacheEvent(CacheBPU, OpWrite, ResultAccess)), uint64(CacheEvent(CacheBPU, OpWrite, ResultMiss)),
		uint64(CacheEvent(CacheBPU, OpPrefetch, ResultAccess)), uint64(CacheEvent(CacheBPU, OpPrefetch, ResultMiss)):
		return false
	}
	return true
}

// Events lists every event with its SBI event_idx: the general hardware
// events, the cache events, the raw events and the firmware events.
func Events() []Event {
	var evs []Event
	for i := 1; i < NumDense; i++ {
		if i == denseRaw {
			continue
		}
		sel := Selector(i)
		e := Event{Selector: sel, Name: DenseName(i), Supported: Supported(i)}
		switch {
		case i < denseCache:
			e.Idx, e.Desc = EventIdx(sel), hwNames[i].desc
		case i < denseRaw:
			e.Idx = EventIdx(sel)
			j := i - denseCache
			c, op, res := j/(opMax*2), j/2%opMax, j%2
			what := "accesses"
			if res == ResultMiss {
				what = "misses"
			}
			e.Desc = fmt.Sprintf("%s %s %s", cacheNames[c], opNames[op], what)
			if !e.Supported {
				e.Desc += " (not modelled)"
			}
		default:
			e.Idx, e.Data, e.Desc = RawEventIdx, sel, rawNames[i-denseRaw].desc
		}
		evs = append(evs, e)
	}
	for c := 0; c < NumFirmwareEvents; c++ {
		evs = append(evs, Event{Idx: FirmwareEvent(c), Name: fwNames[c], Supported: true,
			Desc: "counted by the simulator's SBI firmware"})
	}
	return evs
}

// Lookup finds an event by perf-style name, returning its dense index
// (hardware events) or -1-code (firmware events).
func Lookup(name string) (int, bool) {
	for i := 1; i < NumDense; i++ {
		if DenseName(i) == name {
			return i, true
		}
	}
	for c, n := range fwNames {
		if n == name {
			return -1 - c, true
		}
	}
	return 0, false
}

// Names returns the names of all hardware events, sorted.
func Names() []string {
	var s []string
	for i := 1; i < NumDense; i++ {
		s = append(s, DenseName(i))
	}
	sort.Strings(s)
	return s
}
