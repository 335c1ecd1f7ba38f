package sim

import (
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/pmu"
)

// Privilege levels.
const (
	privU = 0
	privS = 1
	privM = 3
)

// Hart is one RISC-V hardware thread: its architectural state, its
// software TLBs and fetch window, and the state of its ingress port.
type Hart struct {
	x  [32]uint64 // integer registers (RV32: values sign-extended from bit 31)
	f  [32]uint64 // FP registers (singles NaN-boxed)
	pc uint64

	m     *Machine
	id    int
	xlen  int
	amask uint64 // address mask: 2^32-1 on RV32
	priv  uint8

	instret uint64
	cycle   uint64

	lastSize     uint8  // size of the last retired instruction
	prevSize     uint8  // size of the instruction retired before the last control transfer (sijump)
	takenPenalty uint64 // timing model: extra cycles of a taken jump or branch

	// fetch window: decoded page of the virtual page at fbase
	fbase uint64
	fpage *decPage
	xinst inst     // instruction decoded outside the cache (page-crossing)
	xpage *decPage // window of one instruction decoded outside the cache (setXOne)
	xslot uint64   // its slot
	cur   pending  // the instruction the inner loop left to a handler (exec.go)

	// Software TLBs, one set per privilege level (0, 1, 3), so that
	// traps and returns switch sets instead of flushing: an entry of set
	// p was checked at privilege p under the current satp, SUM, MXR and
	// PMP, whose changes flush every set.
	itlbs *[4][itlbSize]itlbEntry // fetch: the decoded pages of virtual pages
	rtlbs *[4][tlbSize]tlbEntry   // loads
	wtlbs *[4][tlbSize]tlbEntry   // stores
	itlb  *[itlbSize]itlbEntry    // the set of the privilege of fetches
	rtlb  *[tlbSize]tlbEntry      // the set of the effective privilege of loads and stores (MPRV)
	wtlb  *[tlbSize]tlbEntry

	csr csrState

	fsOff bool // mstatus.FS == Off: FP instructions are illegal

	// LR/SC reservation (physical address)
	resValid bool
	resAddr  uint64

	// pending exception raised by a slow path
	excCause, excTval uint64

	waiting bool // in wfi, waiting for an interrupt
	booted  bool // first quantum done
	nExc    uint64
	nIntr   uint64

	// trap bookkeeping for clean error reports
	retiredAtTrap uint64 // instret when the last trap was taken
	trapsNoRetire int    // traps taken in a row with no retirement between
	firstTrap     trapRecord
	trapsSeen     bool
	curCost       uint8 // cost of the instruction executing in the slow path

	stop   bool // leave the execution loop after this instruction
	halted bool // hart stopped for good (error or exit)

	// xgen changes whenever the translation of a fetch may have changed:
	// at every TLB flush and every fetch page walk (TranslationGen)
	xgen uint64

	// tracing
	tr tracer
	// cf: control-flow instructions leave the interpreter loop and
	// report to the tracer (coalesced mode), or to a PC list, whose
	// straight lines are the instructions retired between two exits
	cf      bool
	perInst bool     // every retirement reports (PC hook or per-instruction mode)
	pcl     *pcBatch // the retired PCs, reported in batches (SetPCList), nil when off

	// brBatch: the interpreter loop records the jumps and branches it can
	// for the ingress port (coalesced mode, nothing else watching) and
	// leaves to report them only when its record is full (exec, drain)
	brBatch bool

	lnx *linuxState // Linux user-mode emulation (nil for bare metal)

	obs       *observer  // Tarmac tracer and event model (observe.go)
	noFastMem bool       // every load and store takes the slow path (Tarmac)
	trOne     bool       // the ingress port or PC hook wants every retirement
	fast      *pmu.Model // the event model when its fast paths can be used (else nil)
	hpm       hpmState   // performance counters (hpm.go)
	fw        *fwHart    // built-in SBI firmware state (sbi.go), nil without it
}

type trapRecord struct {
	pc    uint64
	cause uint64
	tval  uint64
	raw   uint32
	size  uint8
}

// csrState holds the control and status registers the hart implements.
type csrState struct {
	mstatus       uint64
	misa          uint64
	medeleg       uint64
	mideleg       uint64
	mie           uint64
	mip           uint64 // software-writable bits (SSIP, STIP, SEIP)
	mtvec         uint64
	mscratch      uint64
	mepc          uint64
	mcause        uint64
	mtval         uint64
	mcounteren    uint64
	mcountinhibit uint64
	menvcfg       uint64
	stvec         uint64
	sscratch      uint64
	sepc          uint64
	scause        uint64
	stval         uint64
	scounteren    uint64
	senvcfg       uint64
	satp          uint64
	scontext      uint64
	mcontext      uint64
	jvt           uint64 // Zcmt jump table base (mode 0: jump table mode)
	tselect       uint64
	fflags        uint64
	frm           uint64
	pmpcfg        [pmpEntries]uint8
	pmpaddr       [pmpEntries]uint64
}

func newHart(m *Machine, id, xlen int) *Hart {
	h := &Hart{m: m, id: id, xlen: xlen, priv: privM}
	h.amask = ^uint64(0)
	if xlen == 32 {
		h.amask = 0xffffffff
	}
	h.csr.misa = misaBits(xlen)
	if xlen == 64 {
		h.csr.mstatus = 2<<32 | 2<<34 // UXL = SXL = 64
	}
	h.fsOff = true
	h.hpm.init()
	h.itlbs, h.rtlbs, h.wtlbs = new([4][itlbSize]itlbEntry), new([4][tlbSize]tlbEntry), new([4][tlbSize]tlbEntry)
	h.flushTLB()
	h.tr.h = h
	return h
}

func misaBits(xlen int) uint64 {
	ext := uint64(0)
	for _, c := range "IMAFDCSU" {
		ext |= 1 << uint(c-'A')
	}
	if xlen == 32 {
		return 1<<30 | ext
	}
	return 2<<62 | ext
}

func (h *Hart) flushWTLB() {
	for p := range h.wtlbs {
		for i := range h.wtlbs[p] {
			h.wtlbs[p][i].tag = noTag
		}
	}
}

// flushTLB empties the software TLBs of every privilege and the fetch
// window.
func (h *Hart) flushTLB() {
	h.xgen++
	for p := range h.rtlbs {
		if p == 2 {
			continue // no such privilege
		}
		for i := range h.rtlbs[p] {
			h.rtlbs[p][i].tag = noTag
			h.wtlbs[p][i].tag = noTag
		}
		for i := range h.itlbs[p] {
			h.itlbs[p][i].tag = noTag
		}
	}
	h.selectTLB()
	h.dropFetchWindow()
}

// selectTLB points the TLBs at the sets of the current privilege (fetch)
// and of the effective privilege of loads and stores.
func (h *Hart) selectTLB() {
	p := h.effPriv(accLoad) & 3
	h.rtlb, h.wtlb = &h.rtlbs[p], &h.wtlbs[p]
	h.itlb = &h.itlbs[h.priv&3]
}

// noFetchPage is the fetch window of a hart that has none: its slots are
// never decoded, so every fetch through it takes the slow path, whatever
// the pc.
var noFetchPage decPage

// dropFetchWindow makes the next fetch go through fetchSlow.
func (h *Hart) dropFetchWindow() {
	if h.xpage != nil && h.fpage == h.xpage {
		h.xpage.insts[h.xslot].op = opInvalid
	}
	h.fbase = 0
	h.fpage = &noFetchPage
}

// ID returns the hart's index (mhartid).
func (h *Hart) ID() int { return h.id }

// PC returns the address of the next instruction to execute.
func (h *Hart) PC() uint64 { return h.pc }

// Reg returns integer register i (RV32 values zero-extended).
func (h *Hart) Reg(i int) uint64 {
	if h.xlen == 32 {
		return uint64(uint32(h.x[i&31]))
	}
	return h.x[i&31]
}

// SetReg sets integer register i (x0 stays zero).
func (h *Hart) SetReg(i int, v uint64) {
	if i&31 == 0 {
		return
	}
	if h.xlen == 32 {
		v = uint64(int64(int32(v)))
	}
	h.x[i&31] = v
}

// FReg returns the raw bits of FP register i.
func (h *Hart) FReg(i int) uint64 { return h.f[i&31] }

// Instret returns the number of instructions the hart retired.
func (h *Hart) Instret() uint64 { return h.instret }

// Cycles returns the hart's cycle count (the timing model's mcycle).
func (h *Hart) Cycles() uint64 { return h.cycle }

// Priv returns the current privilege level as an ingress code.
func (h *Hart) Priv() ingress.Priv { return ingress.Priv(h.priv) }

func (h *Hart) sext32(v uint64) uint64 {
	if h.xlen == 32 {
		return uint64(int64(int32(v)))
	}
	return v
}
