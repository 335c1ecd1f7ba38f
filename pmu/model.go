package pmu

import (
	"fmt"
	"math/bits"
)

// CacheConfig sizes a set-associative cache.
type CacheConfig struct {
	Size     int // bytes (power of two)
	Ways     int // associativity (Size/LineSize/Ways sets, a power of two)
	LineSize int // bytes (power of two)
}

// TLBConfig sizes a TLB of 4 KiB pages.
type TLBConfig struct {
	Entries int // total entries
	Ways    int // associativity; Ways == Entries is fully associative
}

// PredictorConfig sizes the branch predictor.
type PredictorConfig struct {
	// Entries is the number of 2-bit counters of the direction table
	// (power of two).
	Entries int
	// HistoryBits is the length of the global history XORed into the
	// table index (gshare); 0 makes a bimodal predictor.
	HistoryBits int
	// BTBEntries is the size of the direct-mapped branch target buffer
	// predicting indirect jumps (power of two).
	BTBEntries int
	// RASDepth is the depth of the return-address stack.
	RASDepth int
}

// Config configures the micro-architecture model. DefaultConfig gives
// the defaults; zero fields of a Config passed to New take them.
type Config struct {
	L1I, L1D, LL CacheConfig
	ITLB, DTLB   TLBConfig
	Predictor    PredictorConfig
	// LLLatency is the stall of an L1 miss that hits the last level.
	LLLatency int
	// MemLatency is the additional stall of a last-level miss.
	MemLatency int
	// WalkLatency is the stall of a TLB miss (page walk).
	WalkLatency int
	// MispredictPenalty is the stall of a mispredicted control transfer.
	MispredictPenalty int
	// BusWidth is the memory bus width in bytes: a line moved to or from
	// memory costs LineSize/BusWidth bus cycles.
	BusWidth int
	// Prefetch enables a next-line prefetcher in both L1 caches: a miss
	// on line L also fetches line L+1 into the L1 (without stalling).
	Prefetch bool
}

// DefaultConfig returns the default model: 32 KiB 4-way L1I, 32 KiB
// 8-way L1D, 1 MiB 16-way last level, 64-byte lines everywhere; 32-entry
// fully associative ITLB and DTLB; gshare with 4096 counters and 8 bits
// of history, a 512-entry BTB and an 8-entry RAS; 12 cycles to the last
// level, 60 more to memory, 20 per page walk, 6 per misprediction, an
// 8-byte bus; no prefetcher.
func DefaultConfig() Config {
	return Config{
		L1I:               CacheConfig{Size: 32 << 10, Ways: 4, LineSize: 64},
		L1D:               CacheConfig{Size: 32 << 10, Ways: 8, LineSize: 64},
		LL:                CacheConfig{Size: 1 << 20, Ways: 16, LineSize: 64},
		ITLB:              TLBConfig{Entries: 32, Ways: 32},
		DTLB:              TLBConfig{Entries: 32, Ways: 32},
		Predictor:         PredictorConfig{Entries: 4096, HistoryBits: 8, BTBEntries: 512, RASDepth: 8},
		LLLatency:         12,
		MemLatency:        60,
		WalkLatency:       20,
		MispredictPenalty: 6,
		BusWidth:          8,
	}
}

func (c *Config) fill() {
	d := DefaultConfig()
	fc := func(c *CacheConfig, d CacheConfig) {
		if c.Size == 0 {
			c.Size = d.Size
		}
		if c.Ways == 0 {
			c.Ways = d.Ways
		}
		if c.LineSize == 0 {
			c.LineSize = d.LineSize
		}
	}
	fc(&c.L1I, d.L1I)
	fc(&c.L1D, d.L1D)
	fc(&c.LL, d.LL)
	ft := func(t *TLBConfig, d TLBConfig) {
		if t.Entries == 0 {
			t.Entries = d.Entries
		}
		if t.Ways == 0 {
			t.Ways = t.Entries
		}
	}
	ft(&c.ITLB, d.ITLB)
	ft(&c.DTLB, d.DTLB)
	if c.Predictor == (PredictorConfig{}) {
		c.Predictor = d.Predictor
	}
	if c.Predictor.Entries == 0 {
		c.Predictor.Entries = d.Predictor.Entries
	}
	if c.Predictor.BTBEntries == 0 {
		c.Predictor.BTBEntries = d.Predictor.BTBEntries
	}
	if c.Predictor.RASDepth == 0 {
		c.Predictor.RASDepth = d.Predictor.RASDepth
	}
	if c.LLLatency == 0 {
		c.LLLatency = d.LLLatency
	}
	if c.MemLatency == 0 {
		c.MemLatency = d.MemLatency
	}
	if c.WalkLatency == 0 {
		c.WalkLatency = d.WalkLatency
	}
	if c.MispredictPenalty == 0 {
		c.MispredictPenalty = d.MispredictPenalty
	}
	if c.BusWidth == 0 {
		c.BusWidth = d.BusWidth
	}
}

func pow2(n int) bool { return n > 0 && n&(n-1) == 0 }

func (c CacheConfig) check(name string) error {
	if !pow2(c.Size) || !pow2(c.LineSize) || c.Ways <= 0 || c.Size%(c.LineSize*c.Ways) != 0 ||
		!pow2(c.Size/(c.LineSize*c.Ways)) || c.Ways > 64 {
		return fmt.Errorf("pmu: %s: bad geometry %d bytes, %d ways, %d-byte lines (powers of two, at most 64 ways)",
			name, c.Size, c.Ways, c.LineSize)
	}
	return nil
}

// Validate checks a configuration (after defaults).
func (c Config) Validate() error {
	c.fill()
	for _, x := range []struct {
		n string
		c CacheConfig
	}{{"L1I", c.L1I}, {"L1D", c.L1D}, {"LL", c.LL}} {
		if err := x.c.check(x.n); err != nil {
			return err
		}
	}
	for _, x := range []struct {
		n string
		t TLBConfig
	}{{"ITLB", c.ITLB}, {"DTLB", c.DTLB}} {
		if x.t.Ways <= 0 || x.t.Entries%x.t.Ways != 0 || !pow2(x.t.Entries/x.t.Ways) || x.t.Ways > 64 {
			return fmt.Errorf("pmu: %s: bad geometry %d entries, %d ways", x.n, x.t.Entries, x.t.Ways)
		}
	}
	p := c.Predictor
	if !pow2(p.Entries) || !pow2(p.BTBEntries) || p.HistoryBits < 0 || p.HistoryBits > 30 || p.RASDepth < 0 {
		return fmt.Errorf("pmu: bad predictor %+v", p)
	}
	return nil
}

// cache is a set-associative, write-back, write-allocate cache with LRU
// replacement. Tags are line numbers plus one (0: invalid).
//
// mru holds, per set, the tag of the line accessed last in the set (0:
// none since the last flush). Accessing that line again changes no
// replacement state (it already has the newest stamp of its set, and
// stamps only order the lines of a set), so the model's fast paths skip
// access for it; a write to it through a fast path sets pend[set]
// instead of the line's dirty bit, which access and flush fold in.
type cache struct {
	shift uint // log2 line size
	sets  uint64
	ways  int
	tag   []uint64
	stamp []uint64
	dirty []bool
	clock uint64
	mru   []uint64 // per set: tag of its most recently used line
	slot  []int32  // per set: slot of that line
	pend  []bool   // per set: that line was written (dirty bit not yet set)
}

func newCache(c CacheConfig) *cache {
	sets := c.Size / c.LineSize / c.Ways
	n := sets * c.Ways
	return &cache{shift: uint(bits.TrailingZeros(uint(c.LineSize))), sets: uint64(sets), ways: c.Ways,
		tag: make([]uint64, n), stamp: make([]uint64, n), dirty: make([]bool, n),
		mru: make([]uint64, sets), slot: make([]int32, sets), pend: make([]bool, sets)}
}

// access looks up line (address >> shift). On a miss the LRU way is
// replaced; victim is the evicted line number when it was dirty (else
// 0, with wb false). It returns the way's slot index.
func (c *cache) access(line uint64, write bool) (slot int, hit bool, victim uint64, wb bool) {
	set := line & (c.sets - 1)
	if c.pend[set] {
		c.dirty[c.slot[set]] = true
		c.pend[set] = false
	}
	base := int(set) * c.ways
	t := line + 1
	c.clock++
	c.mru[set] = t
	lru, old := base, ^uint64(0)
	for i := base; i < base+c.ways; i++ {
		if c.tag[i] == t {
			c.stamp[i] = c.clock
			if write {
				c.dirty[i] = true
			}
			c.slot[set] = int32(i)
			return i, true, 0, false
		}
		if c.stamp[i] < old {
			lru, old = i, c.stamp[i]
		}
	}
	if c.tag[lru] != 0 && c.dirty[lru] {
		victim, wb = c.tag[lru]-1, true
	}
	c.tag[lru] = t
	c.stamp[lru] = c.clock
	c.dirty[lru] = write
	c.slot[set] = int32(lru)
	return lru, false, victim, wb
}

// isMRU reports whether line is the most recently used line of its set
// (then it is cached and accessing it changes nothing but its dirty bit).
func (c *cache) isMRU(line uint64) bool { return c.mru[line&(c.sets-1)] == line+1 }

// contains reports whether line is cached (no state change).
func (c *cache) contains(line uint64) bool {
	base := int(line&(c.sets-1)) * c.ways
	for i := base; i < base+c.ways; i++ {
		if c.tag[i] == line+1 {
			return true
		}
	}
	return false
}

func (c *cache) flush() {
	clear(c.tag)
	clear(c.dirty)
	clear(c.mru)
	clear(c.pend)
}

// tlb is a set-associative TLB of virtual page numbers with LRU.
type tlb struct {
	c    *cache
	last uint64 // last page hit (+1)
}

func newTLB(t TLBConfig) *tlb {
	return &tlb{c: newCache(CacheConfig{Size: t.Entries, Ways: t.Ways, LineSize: 1})}
}

func (t *tlb) access(vpn uint64) bool {
	if vpn+1 == t.last {
		return true
	}
	_, hit, _, _ := t.c.access(vpn, false)
	t.last = vpn + 1
	return hit
}

func (t *tlb) flush() {
	t.c.flush()
	t.last = 0
}

// Kind classifies a retired instruction for the model.
type Kind uint8

// Instruction kinds.
const (
	KindOther        Kind = iota
	KindLoad              // integer or FP load, LR
	KindStore             // integer or FP store, SC
	KindAMO               // atomic memory operation (a load and a store)
	KindBranch            // conditional branch
	KindJump              // jal that is not a call
	KindCall              // jal linking ra or t0 (a direct call)
	KindCallIndirect      // jalr linking ra or t0
	KindReturn            // jalr through ra/t0 that does not link
	KindIndirect          // other jalr
	KindFP                // F/D arithmetic
	KindMulDiv            // M extension
	KindCSR               // CSR instruction
	KindFence             // fence, fence.i, sfence.vma
	KindLR                // load-reserved (a load, also an atomic)
	KindSC                // store-conditional (a store, also an atomic)
)

// Translation flags of Retire.
const (
	XlatFetch = 1 // instruction fetch goes through the ITLB
	XlatData  = 2 // data accesses go through the DTLB
)

// Privilege levels the counts are kept for (U, S, reserved, M).
const NumPriv = 4

// Model is the micro-architecture model of one hart: L1I, L1D, a last
// level shared by both, ITLB, DTLB and a branch predictor. The hart
// calls Retire for every retired instruction and Trap for every trap;
// the model counts events per privilege level and returns the stall
// cycles the hart's timing model adds.
type Model struct {
	cfg Config

	counts [NumPriv][NumDense]uint64
	c      *[NumDense]uint64 // counts of the current privilege

	l1i, l1d, ll *cache
	itlb, dtlb   *tlb
	iShift       uint
	dShift       uint
	llShift      uint

	pht      []uint8
	phtMask  uint64
	hist     uint64
	histMask uint64
	btb      []uint64 // pc+1 tags
	btbTgt   []uint64
	btbMask  uint64
	ras      []uint64
	rasTop   int // number of valid entries (wraps: oldest overwritten)
	rasPos   int

	llLat, memLat, walkLat, misLat uint64
	busPerLine                     uint64

	// Fast is the fast-path state (see Fast).
	Fast Fast
	// Track makes Retire keep Last up to date (for profiles).
	Track bool
	// Last holds what the last Retire did, when Track is set.
	Last Outcome
}

// Outcome is what one retired instruction cost.
type Outcome struct {
	Stall      uint64 // stall cycles added
	L1IMiss    bool
	L1DAccess  bool
	L1DMiss    bool
	LLMiss     bool
	Branch     bool
	Mispredict bool
}

// New creates a model (zero fields of cfg take the defaults).
func New(cfg Config) (*Model, error) {
	cfg.fill()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Model{cfg: cfg}
	m.l1i, m.l1d, m.ll = newCache(cfg.L1I), newCache(cfg.L1D), newCache(cfg.LL)
	m.iShift, m.dShift, m.llShift = m.l1i.shift, m.l1d.shift, m.ll.shift
	m.Fast = Fast{IMRU: m.l1i.mru, DMRU: m.l1d.mru, DPend: m.l1d.pend,
		IMask: m.l1i.sets - 1, DMask: m.l1d.sets - 1, Shift: m.iShift, DShift: m.dShift}
	m.itlb, m.dtlb = newTLB(cfg.ITLB), newTLB(cfg.DTLB)
	p := cfg.Predictor
	m.pht = make([]uint8, p.Entries)
	for i := range m.pht {
		m.pht[i] = 1 // weakly not taken
	}
	m.phtMask = uint64(p.Entries - 1)
	m.histMask = 1<<uint(p.HistoryBits) - 1
	m.btb = make([]uint64, p.BTBEntries)
	m.btbTgt = make([]uint64, p.BTBEntries)
	m.btbMask = uint64(p.BTBEntries - 1)
	m.ras = make([]uint64, p.RASDepth)
	m.llLat, m.memLat = uint64(cfg.LLLatency), uint64(cfg.MemLatency)
	m.walkLat, m.misLat = uint64(cfg.WalkLatency), uint64(cfg.MispredictPenalty)
	m.busPerLine = uint64(max(cfg.LL.LineSize/cfg.BusWidth, 1))
	m.c = &m.counts[3]
	return m, nil
}

// Config returns the model's configuration (defaults filled in).
func (m *Model) Config() Config { return m.cfg }

// SetPriv selects the privilege level (0 U, 1 S, 3 M) the following
// events are counted for.
func (m *Model) SetPriv(p int) {
	m.fold()
	m.c = &m.counts[p&3]
}

// Count returns the count of dense event i in privilege p.
func (m *Model) Count(p, i int) uint64 {
	m.fold()
	return m.counts[p&3][i]
}

// Total returns the count of dense event i over all privilege levels.
func (m *Model) Total(i int) uint64 {
	m.fold()
	var n uint64
	for p := range m.counts {
		n += m.counts[p][i]
	}
	return n
}

// Add adds n to dense event i in the current privilege (for events the
// hart detects itself).
func (m *Model) Add(i int, n uint64) { m.c[i] += n }

// Trap counts an exception or interrupt.
func (m *Model) Trap(interrupt bool) {
	if interrupt {
		m.c[denseRaw+RawInterrupts-RawBase]++
	} else {
		m.c[denseRaw+RawExceptions-RawBase]++
	}
}

// FlushTLBs empties both TLBs (sfence.vma, satp writes).
func (m *Model) FlushTLBs() {
	m.itlb.flush()
	m.dtlb.flush()
}

// FlushICache empties the instruction cache (fence.i).
func (m *Model) FlushICache() {
	m.l1i.flush()
}

// llAccess accesses the last level for a line of an L1 (addr is a byte
// address); it returns the stall.
func (m *Model) llAccess(addr uint64, op int, stall bool) uint64 {
	c := m.c
	line := addr >> m.llShift
	var acc, miss int
	switch op {
	case OpRead:
		acc, miss = dLLReadAcc, dLLReadMiss
	case OpWrite:
		acc, miss = dLLWriteAcc, dLLWriteMiss
	default:
		acc, miss = dLLPfAcc, dLLPfMiss
	}
	c[acc]++
	c[HwCacheReferences]++
	_, hit, _, wb := m.ll.access(line, op == OpWrite)
	if wb {
		c[denseRaw+RawLLWritebacks-RawBase]++
		c[HwBusCycles] += m.busPerLine
	}
	if hit {
		if !stall {
			return 0
		}
		return m.llLat
	}
	c[miss]++
	c[HwCacheMisses]++
	c[HwBusCycles] += m.busPerLine
	m.Last.LLMiss = true
	if !stall {
		return 0
	}
	return m.llLat + m.memLat
}

// fetch models the instruction fetch of pc (but not its L1I access
// count).
func (m *Model) fetch(pc uint64, xlat bool) uint64 {
	c := m.c
	var stall uint64
	if xlat {
		c[dITLBReadAcc]++
		if !m.itlb.access(pc >> 12) {
			c[dITLBReadMiss]++
			c[denseRaw+RawPageWalkCycles-RawBase] += m.walkLat
			stall += m.walkLat
		}
	}
	line := pc >> m.iShift
	if m.l1i.isMRU(line) {
		return stall
	}
	if _, hit, _, _ := m.l1i.access(line, false); !hit {
		c[dL1IReadMiss]++
		m.Last.L1IMiss = true
		stall += m.llAccess(line<<m.iShift, OpRead, true)
		if m.cfg.Prefetch {
			next := line + 1
			c[dL1IPfAcc]++
			if !m.l1i.contains(next) {
				c[dL1IPfMiss]++
				m.l1i.access(next, false)
				m.llAccess(next<<m.iShift, OpPrefetch, false)
			}
		}
	}
	return stall
}

// data models a load (write false) or store at addr.
func (m *Model) data(addr uint64, write, xlat bool) uint64 {
	c := m.c
	var stall uint64
	m.Last.L1DAccess = true
	if xlat {
		acc, miss := dDTLBReadAcc, dDTLBReadMiss
		if write {
			acc, miss = dDTLBWrAcc, dDTLBWrMiss
		}
		c[acc]++
		if !m.dtlb.access(addr >> 12) {
			c[miss]++
			c[denseRaw+RawPageWalkCycles-RawBase] += m.walkLat
			stall += m.walkLat
		}
	}
	acc, miss := dL1DReadAcc, dL1DReadMiss
	if write {
		acc, miss = dL1DWriteAcc, dL1DWriteMiss
	}
	c[acc]++
	line := addr >> m.dShift
	if m.l1d.isMRU(line) {
		if write {
			m.l1d.pend[line&(m.l1d.sets-1)] = true
		}
		return stall
	}
	_, hit, victim, wb := m.l1d.access(line, write)
	if wb {
		c[denseRaw+RawL1DWritebacks-RawBase]++
		m.llAccess(victim<<m.dShift, OpWrite, false)
	}
	if !hit {
		c[miss]++
		m.Last.L1DMiss = true
		stall += m.llAccess(line<<m.dShift, OpRead, true)
		if m.cfg.Prefetch {
			next := line + 1
			c[dL1DPfAcc]++
			if !m.l1d.contains(next) {
				c[dL1DPfMiss]++
				_, _, v, wb := m.l1d.access(next, false)
				if wb {
					c[denseRaw+RawL1DWritebacks-RawBase]++
					m.llAccess(v<<m.dShift, OpWrite, false)
				}
				m.llAccess(next<<m.dShift, OpPrefetch, false)
			}
		}
	}
	return stall
}

// predict models the branch predictor for a control transfer from pc to
// npc (taken when npc != fall).
func (m *Model) predict(k Kind, pc, fall, npc uint64) uint64 {
	c := m.c
	c[HwBranchInstructions]++
	c[dBPUReadAcc]++
	m.Last.Branch = true
	miss := false
	switch k {
	case KindBranch:
		c[denseRaw+RawCondBranches-RawBase]++
		taken := npc != fall
		i := ((pc >> 1) ^ (m.hist & m.histMask)) & m.phtMask
		ctr := m.pht[i]
		if (ctr >= 2) != taken {
			miss = true
			c[denseRaw+RawDirMispredicts-RawBase]++
		}
		if taken {
			c[denseRaw+RawTakenBranches-RawBase]++
			if ctr < 3 {
				m.pht[i] = ctr + 1
			}
		} else if ctr > 0 {
			m.pht[i] = ctr - 1
		}
		m.hist = (m.hist<<1 | b2u(taken)) & m.histMask
	case KindJump:
		c[denseRaw+RawDirectJumps-RawBase]++
	case KindCall:
		c[denseRaw+RawCalls-RawBase]++
		m.push(fall)
	case KindCallIndirect, KindIndirect:
		if k == KindCallIndirect {
			c[denseRaw+RawCalls-RawBase]++
			m.push(fall)
		} else {
			c[denseRaw+RawIndirectJumps-RawBase]++
		}
		i := (pc >> 1) & m.btbMask
		if m.btb[i] != pc+1 || m.btbTgt[i] != npc {
			miss = true
			c[denseRaw+RawIndirectMispred-RawBase]++
		}
		m.btb[i], m.btbTgt[i] = pc+1, npc
	case KindReturn:
		c[denseRaw+RawReturns-RawBase]++
		var pred uint64
		if m.rasTop > 0 {
			m.rasPos = (m.rasPos + len(m.ras) - 1) % len(m.ras)
			m.rasTop--
			pred = m.ras[m.rasPos]
		}
		if pred != npc {
			miss = true
			c[denseRaw+RawReturnMispredic-RawBase]++
		}
	}
	if miss {
		c[HwBranchMisses]++
		c[dBPUReadMiss]++
		c[HwStalledCyclesFrontend] += m.misLat
		m.Last.Mispredict = true
		return m.misLat
	}
	return 0
}

// branch is predict for a conditional branch (taken: it jumps), but
// for the counts of branches, BPU accesses and conditional branches
// (Fast.N[fkBranch]).
func (m *Model) branch(pc uint64, taken bool) uint64 {
	c := m.c
	t := b2u(taken)
	i := ((pc >> 1) ^ m.hist) & m.phtMask
	ctr := m.pht[i]
	m.pht[i] = ctrNext[ctr&3][t]
	m.hist = (m.hist<<1 | t) & m.histMask
	c[denseRaw+RawTakenBranches-RawBase] += t
	if uint64(ctr>>1) != t {
		c[denseRaw+RawDirMispredicts-RawBase]++
		c[HwBranchMisses]++
		c[dBPUReadMiss]++
		c[HwStalledCyclesFrontend] += m.misLat
		return m.misLat
	}
	return 0
}

// ctrNext is the next state of a 2-bit counter, by state and outcome.
var ctrNext = [4][2]uint8{{0, 1}, {0, 2}, {1, 3}, {2, 3}}

// push pushes a return address on the RAS (the oldest entry is lost
// when it is full).
func (m *Model) push(ra uint64) {
	if len(m.ras) == 0 {
		return
	}
	m.ras[m.rasPos] = ra
	m.rasPos = (m.rasPos + 1) % len(m.ras)
	m.rasTop = min(m.rasTop+1, len(m.ras))
}

// Retire accounts one retired instruction of kind k at pc (size bytes,
// next pc npc; ea is the effective address of loads, stores and atomics)
// and returns the stall cycles it adds to the hart's timing model. xlat
// holds XlatFetch/XlatData when address translation is active.
func (m *Model) Retire(pc uint64, size uint8, k Kind, ea, npc uint64, xlat uint8) uint64 {
	if xlat == 0 && !m.Track {
		return m.Step(pc, FastKind(k, size), ea, npc)
	}
	return m.retire(pc, size, k, ea, npc, xlat)
}

// Access accounts a further data access of the instruction Retire
// accounted last, as an instruction that accesses memory more than once
// makes them (Zcmp's cm.push and cm.pop, one per register): a load, or a
// store with write, at addr, translated with xlat. It returns the stall
// cycles it adds to the hart's timing model.
func (m *Model) Access(addr uint64, write, xlat bool) uint64 {
	c := m.c
	if write {
		c[denseRaw+RawStores-RawBase]++
	} else {
		c[denseRaw+RawLoads-RawBase]++
	}
	be := m.data(addr, write, xlat)
	c[HwStalledCyclesBackend] += be
	if m.Track {
		m.Last.Stall += be
	}
	return be
}

// Fast kinds (FastKind): bit 0 is set for 16-bit instructions, the rest
// selects the tally of Fast.N (below fkOther) or the kind.
const (
	fkPlain  = 0  // KindOther
	fkFP     = 2  // KindFP
	fkMulDiv = 4  // KindMulDiv
	fkLoad   = 8  // KindLoad
	fkStore  = 10 // KindStore
	fkBranch = 12 // KindBranch
	fkOther  = 14 // tally of the instructions Step handles by kind
	fkKind   = 16 // first kind-coded value: fkKind + Kind<<1 | compressed
	fkTally  = 16 // size of Fast.N
)

// FastKindMax bounds the values of FastKind.
const FastKindMax = fkKind + 16<<1

// FastKind encodes the kind and size (2 or 4 bytes) of an instruction
// as Fast.Retire and Model.Step take them (the simulator keeps it in its
// pre-decoded instructions). It is below FastKindMax.
func FastKind(k Kind, size uint8) uint8 {
	c := uint8(0)
	if size == 2 {
		c = 1
	}
	switch k {
	case KindOther:
		return fkPlain | c
	case KindFP:
		return fkFP | c
	case KindMulDiv:
		return fkMulDiv | c
	case KindLoad:
		return fkLoad | c
	case KindStore:
		return fkStore | c
	case KindBranch:
		return fkBranch | c
	}
	return fkKind + uint8(k&15)<<1 | c
}

// Fast is the part of the model a simulator can drive itself for the
// commonest instructions, without calling Retire: a plain instruction,
// load or store, fetched from the most recently used L1I line of its set
// and (loads, stores) accessing the most recently used L1D line of its
// set, with no address translation and Track off. These hit without
// changing the caches' replacement state, so only their counts change
// (and the dirty bit of a stored line): Fast tallies them per fast kind
// (FastKind) and the model folds the tallies into its counts whenever
// they are read, the privilege changes or Retire does more.
type Fast struct {
	IMRU   []uint64 // per L1I set: line number + 1 of its most recently used line
	DMRU   []uint64 // per L1D set: the same
	DPend  []bool   // per L1D set: its most recently used line was written
	IMask  uint64   // L1I sets - 1
	DMask  uint64   // L1D sets - 1
	Shift  uint     // log2 of the L1I line size
	DShift uint     // log2 of the L1D line size
	// N counts the instructions retired through the fast paths (and the
	// L1I accesses of Step) by fast kind.
	N [fkTally]uint64
}

// Retire accounts an instruction of fast kind fk (FastKind) at pc
// through the fast path and reports whether it could (otherwise the
// caller must call Model.Step or Model.Retire). ea is the data address
// of loads and stores.
func (f *Fast) Retire(pc uint64, fk uint8, ea uint64) bool {
	l := pc >> (f.Shift & 63)
	if fk >= fkBranch || f.IMRU[l&f.IMask] != l+1 {
		return false
	}
	if fk >= fkLoad {
		dl := ea >> (f.DShift & 63)
		s := dl & f.DMask
		if f.DMRU[s] != dl+1 {
			return false
		}
		if fk >= fkStore {
			f.DPend[s] = true
		}
	}
	f.N[fk]++
	return true
}

// fold adds the fast path's tallies to the current privilege.
func (m *Model) fold() {
	f := &m.Fast
	n := &f.N
	var all uint64
	for _, v := range n {
		all += v
	}
	if all == 0 {
		return
	}
	c := m.c
	c[dL1IReadAcc] += all
	c[denseRaw+RawCompressed-RawBase] += n[fkPlain|1] + n[fkFP|1] + n[fkMulDiv|1] + n[fkLoad|1] + n[fkStore|1] +
		n[fkBranch|1] + n[fkOther|1]
	br := n[fkBranch] + n[fkBranch|1]
	c[HwBranchInstructions] += br
	c[dBPUReadAcc] += br
	c[denseRaw+RawCondBranches-RawBase] += br
	c[denseRaw+RawFPOps-RawBase] += n[fkFP] + n[fkFP|1]
	c[denseRaw+RawMulDiv-RawBase] += n[fkMulDiv] + n[fkMulDiv|1]
	loads, stores := n[fkLoad]+n[fkLoad|1], n[fkStore]+n[fkStore|1]
	c[dL1DReadAcc] += loads
	c[denseRaw+RawLoads-RawBase] += loads
	c[dL1DWriteAcc] += stores
	c[denseRaw+RawStores-RawBase] += stores
	*n = [fkTally]uint64{}
}

// Step is Retire for an instruction of fast kind fk (FastKind) without
// address translation and with Track off: the simulator's path for the
// instructions Fast.Retire cannot take.
func (m *Model) Step(pc uint64, fk uint8, ea, npc uint64) uint64 {
	if fk&^1 != fkBranch || !m.l1i.isMRU(pc>>m.iShift) {
		return m.step(pc, fk, ea, npc)
	}
	// a conditional branch from a cached line: branch, by hand
	m.Fast.N[fk&15]++
	t := b2u(npc != pc+4-2*uint64(fk&1))
	i := ((pc >> 1) ^ m.hist) & m.phtMask
	ctr := m.pht[i]
	m.pht[i] = ctrNext[ctr&3][t]
	m.hist = (m.hist<<1 | t) & m.histMask
	c := m.c
	c[denseRaw+RawTakenBranches-RawBase] += t
	if uint64(ctr>>1) == t {
		return 0
	}
	c[denseRaw+RawDirMispredicts-RawBase]++
	c[HwBranchMisses]++
	c[dBPUReadMiss]++
	c[HwStalledCyclesFrontend] += m.misLat
	return m.misLat
}

func (m *Model) step(pc uint64, fk uint8, ea, npc uint64) uint64 {
	f := &m.Fast
	var stall uint64
	if !m.l1i.isMRU(pc >> m.iShift) {
		stall = m.fetch(pc, false)
		m.c[HwStalledCyclesFrontend] += stall
	}
	if fk < fkLoad {
		f.N[fk&7]++
		return stall
	}
	c := m.c
	var be uint64
	switch fk &^ 1 {
	case fkLoad:
		f.N[fkOther|fk&1]++
		c[denseRaw+RawLoads-RawBase]++
		be = m.data(ea, false, false)
	case fkStore:
		f.N[fkOther|fk&1]++
		c[denseRaw+RawStores-RawBase]++
		be = m.data(ea, true, false)
	case fkBranch:
		f.N[fk&15]++
		return stall + m.branch(pc, npc != pc+4-2*uint64(fk&1))
	default:
		f.N[fkOther|fk&1]++
		k := Kind(fk-fkKind) >> 1
		switch k {
		case KindAMO:
			c[denseRaw+RawLoads-RawBase]++
			c[denseRaw+RawStores-RawBase]++
			c[denseRaw+RawAtomics-RawBase]++
			be = m.data(ea, false, false)
			be += m.data(ea, true, false)
		case KindLR:
			c[denseRaw+RawLoads-RawBase]++
			c[denseRaw+RawAtomics-RawBase]++
			be = m.data(ea, false, false)
		case KindSC:
			c[denseRaw+RawStores-RawBase]++
			c[denseRaw+RawAtomics-RawBase]++
			be = m.data(ea, true, false)
		case KindJump, KindCall, KindCallIndirect, KindReturn, KindIndirect:
			return stall + m.predict(k, pc, pc+4-2*uint64(fk&1), npc)
		case KindCSR:
			c[denseRaw+RawCSRAccesses-RawBase]++
		case KindFence:
			c[denseRaw+RawFences-RawBase]++
		}
	}
	if be != 0 {
		c[HwStalledCyclesBackend] += be
		stall += be
	}
	return stall
}

func (m *Model) retire(pc uint64, size uint8, k Kind, ea, npc uint64, xlat uint8) uint64 {
	c := m.c
	if m.Track {
		m.Last = Outcome{}
	}
	var stall uint64
	c[dL1IReadAcc]++
	stall = m.fetch(pc, xlat&XlatFetch != 0)
	c[HwStalledCyclesFrontend] += stall
	if size == 2 {
		c[denseRaw+RawCompressed-RawBase]++
	}
	var be uint64
	switch k {
	case KindOther:
		m.Last.Stall = stall
		return stall
	case KindLoad:
		c[denseRaw+RawLoads-RawBase]++
		be = m.data(ea, false, xlat&XlatData != 0)
	case KindStore:
		c[denseRaw+RawStores-RawBase]++
		be = m.data(ea, true, xlat&XlatData != 0)
	case KindAMO:
		c[denseRaw+RawLoads-RawBase]++
		c[denseRaw+RawStores-RawBase]++
		c[denseRaw+RawAtomics-RawBase]++
		be = m.data(ea, false, xlat&XlatData != 0)
		be += m.data(ea, true, xlat&XlatData != 0)
	case KindLR:
		c[denseRaw+RawLoads-RawBase]++
		c[denseRaw+RawAtomics-RawBase]++
		be = m.data(ea, false, xlat&XlatData != 0)
	case KindSC:
		c[denseRaw+RawStores-RawBase]++
		c[denseRaw+RawAtomics-RawBase]++
		be = m.data(ea, true, xlat&XlatData != 0)
	case KindBranch, KindJump, KindCall, KindCallIndirect, KindReturn, KindIndirect:
		stall += m.predict(k, pc, pc+uint64(size), npc)
	case KindFP:
		c[denseRaw+RawFPOps-RawBase]++
	case KindMulDiv:
		c[denseRaw+RawMulDiv-RawBase]++
	case KindCSR:
		c[denseRaw+RawCSRAccesses-RawBase]++
	case KindFence:
		c[denseRaw+RawFences-RawBase]++
	}
	if be != 0 {
		c[HwStalledCyclesBackend] += be
		stall += be
	}
	m.Last.Stall = stall
	return stall
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
