package sim

import (
	"math/bits"

	"github.com/rvtrace/rvtrace/pmu"
)

// Hardware performance counters (privileged spec "Hardware Performance
// Monitor", Sscofpmf).
//
// Counter i is 0 (mcycle), 2 (minstret) or 3..31 (mhpmcounter3..31, all
// implemented and 64 bits wide). The hart's raw counts (h.cycle,
// h.instret, the event model's per-privilege counts) never change when
// software writes a counter: each counter keeps the value it had at its
// last synchronisation and the source count it saw then, so reading it is
// val + (source now - snapshot) while it counts and val while it is
// inhibited (mcountinhibit) or selects no event.
//
// mhpmeventX: bits 55:0 select the event (the pmu package's selectors:
// the SBI event_idx of general and cache events, pmu.Raw* for raw
// events; any other value reads back as 0, no event), bit 63 is OF, 62
// MINH, 61 SINH, 60 UINH, 59 VSINH, 58 VUINH (stored; there are no
// virtual modes to inhibit). A counter whose selector counts cycles or
// instructions counts them without the event model; the other events
// need the model (Machine.SetEventModel) and stay at zero without it.
//
// Overflow (Sscofpmf): when mhpmcounterX wraps from all ones to zero its
// OF bit is set, and if OF was clear the local counter-overflow interrupt
// (LCOFIP, mip bit 13, delegable through mideleg) becomes pending.
// scountovf (0xDA0) shows the OF bits (masked by mcounteren in S-mode).

const (
	irqLCOF = 13

	csrScountovf     = 0xDA0
	csrMhpmevent3h   = 0x723
	csrMhpmevent31h  = 0x73F
	hpmOF            = uint64(1) << 63
	hpmMINH          = uint64(1) << 62
	hpmSINH          = uint64(1) << 61
	hpmUINH          = uint64(1) << 60
	hpmVSINH         = uint64(1) << 59
	hpmVUINH         = uint64(1) << 58
	hpmFlagBits      = hpmOF | hpmMINH | hpmSINH | hpmUINH | hpmVSINH | hpmVUINH
	hpmSelectorMask  = uint64(1)<<56 - 1
	mcountinhibitMsk = 0xfffffffd
)

var (
	denseCycles = pmu.Dense(uint64(pmu.HwCPUCycles))
	denseInstr  = pmu.Dense(uint64(pmu.HwInstructions))
	denseRef    = pmu.Dense(uint64(pmu.HwRefCPUCycles))
)

type hpmState struct {
	event [32]uint64 // mhpmevent (3..31)
	sel   [32]int    // dense event of the selector, -1 for none
	val   [32]uint64 // value at the last sync
	snap  [32]uint64 // source count at the last sync
	// instructions and cycles per privilege before the current segment
	privI, privC [4]uint64
	markI, markC uint64
	armed        bool // some counter may raise an overflow interrupt
}

func (hp *hpmState) init() {
	for i := range hp.sel {
		hp.sel[i] = -1
	}
}

// privChanged accounts the instructions and cycles of the segment that
// ran in old and switches the event model to the new privilege.
func (h *Hart) privChanged(old uint8) {
	if old == h.priv {
		return
	}
	hp := &h.hpm
	hp.privI[old&3] += h.instret - hp.markI
	hp.markI = h.instret
	hp.privC[old&3] += h.cycle - hp.markC
	hp.markC = h.cycle
	if h.obs != nil {
		h.obs.priv = h.priv
		if h.obs.model != nil {
			h.obs.model.SetPriv(int(h.priv))
		}
	}
}

// privChangedAfter is privChanged for a change made by an instruction
// that retires (mret, sret): that instruction counts in the old
// privilege, and executed in it: the observer reports it in the old
// privilege and the event model counts its events there; both switch
// once it has retired (retireHook).
func (h *Hart) privChangedAfter(old uint8) {
	if old == h.priv {
		return
	}
	h.instret++
	h.privChanged(old) // markI includes the instruction
	h.instret--
	if o := h.obs; o != nil {
		o.priv, o.privAfter = old, true
		if o.model != nil {
			o.model.SetPriv(int(old))
		}
	}
}

// inhibitedIn reports whether counter i (3..31) does not count in
// privilege p.
func (hp *hpmState) inhibitedIn(i int, p uint8) bool {
	ev := hp.event[i]
	switch p {
	case privM:
		return ev&hpmMINH != 0
	case privS:
		return ev&hpmSINH != 0
	}
	return ev&hpmUINH != 0
}

// privCount returns dense event d counted in privilege p so far.
func (h *Hart) privCount(d int, p uint8, inflight bool) uint64 {
	hp := &h.hpm
	switch d {
	case denseCycles, denseRef:
		n := hp.privC[p]
		if p == h.priv {
			n += h.cycle - hp.markC
			if inflight {
				n += uint64(h.curCost)
			}
		}
		return n
	case denseInstr:
		n := hp.privI[p]
		if p == h.priv {
			n += h.instret - hp.markI
			if inflight {
				n++
			}
		}
		return n
	}
	if h.obs != nil && h.obs.model != nil {
		return h.obs.model.Count(int(p), d)
	}
	return 0
}

// counterSrc returns the source count of counter i. inflight counts the
// executing instruction as retired (for writes by CSR instructions,
// which take precedence over the instruction's own increment).
func (h *Hart) counterSrc(i int, inflight bool) uint64 {
	switch i {
	case 0:
		if inflight {
			return h.cycle + uint64(h.curCost)
		}
		return h.cycle
	case 2:
		if inflight {
			return h.instret + 1
		}
		return h.instret
	}
	hp := &h.hpm
	d := hp.sel[i]
	if d < 0 {
		return 0
	}
	var n uint64
	for _, p := range [...]uint8{privU, privS, privM} {
		if !hp.inhibitedIn(i, p) {
			n += h.privCount(d, p, inflight)
		}
	}
	return n
}

func (h *Hart) counterActive(i int) bool {
	if h.csr.mcountinhibit>>uint(i)&1 != 0 {
		return false
	}
	return i < 3 || h.hpm.sel[i] >= 0
}

// counterValue returns the value of counter i.
func (h *Hart) counterValue(i int) uint64 {
	hp := &h.hpm
	if !h.counterActive(i) {
		return hp.val[i]
	}
	return hp.val[i] + h.counterSrc(i, false) - hp.snap[i]
}

// syncCounter folds what counter i counted into its value (before its
// configuration changes) and restarts its snapshot.
func (h *Hart) syncCounter(i int, inflight bool) {
	hp := &h.hpm
	if h.counterActive(i) {
		src := h.counterSrc(i, inflight)
		hp.val[i] += src - hp.snap[i]
		hp.snap[i] = src
	}
}

// resnap restarts counter i's snapshot after a configuration change.
func (h *Hart) resnap(i int, inflight bool) {
	h.hpm.snap[i] = h.counterSrc(i, inflight)
}

// writeCounter writes counter i (lo/hi: RV32 halves; both: whole). The
// write takes precedence over the writing instruction's own increment,
// for either half: the half not written keeps the value it had before
// the instruction (Spike; riscv-tests rv32mi instret_overflow).
func (h *Hart) writeCounter(i int, v uint64, half int) {
	hp := &h.hpm
	h.syncCounter(i, false)
	cur := hp.val[i]
	switch half {
	case 1: // low 32 bits
		v = cur&^0xffffffff | v&0xffffffff
	case 2: // high 32 bits
		v = cur&0xffffffff | v<<32
	}
	hp.val[i] = v
	h.resnap(i, true)
	h.rearm()
}

func (h *Hart) writeEvent(i int, v uint64, half int) {
	hp := &h.hpm
	old := hp.event[i]
	switch half {
	case 1:
		v = old&^0xffffffff | v&0xffffffff
	case 2:
		v = old&0xffffffff | v<<32
	}
	h.syncCounter(i, true)
	sel := v & hpmSelectorMask
	d := pmu.Dense(sel)
	if d < 0 {
		sel = 0
	}
	hp.event[i] = v&hpmFlagBits | sel
	hp.sel[i] = d
	h.resnap(i, true)
	h.rearm()
}

func (h *Hart) writeInhibit(v uint64) {
	for i := 0; i < 32; i++ {
		h.syncCounter(i, true)
	}
	h.csr.mcountinhibit = v & mcountinhibitMsk
	for i := 0; i < 32; i++ {
		h.resnap(i, true)
	}
	h.rearm()
}

// rearm recomputes whether a counter can raise an overflow interrupt.
func (h *Hart) rearm() {
	hp := &h.hpm
	hp.armed = false
	for i := 3; i < 32; i++ {
		if hp.event[i]&hpmOF == 0 && h.counterActive(i) {
			hp.armed = true
			h.stop = true // let step bound the next run (hpmLimit)
			break
		}
	}
	h.updateFast()
}

// hpmCheck sets OF and LCOFIP for the counters that wrapped.
func (h *Hart) hpmCheck() {
	hp := &h.hpm
	for i := 3; i < 32; i++ {
		if hp.event[i]&hpmOF != 0 || !h.counterActive(i) {
			continue
		}
		delta := h.counterSrc(i, false) - hp.snap[i]
		if _, carry := bits.Add64(hp.val[i], delta, 0); carry != 0 {
			h.syncCounter(i, false)
			hp.event[i] |= hpmOF
			h.csr.mip |= 1 << irqLCOF
			h.stop = true
		}
	}
	h.rearm()
}

// hpmLimit bounds the instructions the interpreter may run before an
// armed counter counting instructions or cycles can wrap (the other
// events are checked instruction by instruction by the observer).
func (h *Hart) hpmLimit(n uint64) uint64 {
	hp := &h.hpm
	maxCost := uint64(1)
	for _, c := range h.m.timing.costs {
		maxCost = max(maxCost, uint64(c))
	}
	maxCost += h.takenPenalty
	for i := 3; i < 32; i++ {
		if hp.event[i]&hpmOF != 0 || !h.counterActive(i) || hp.inhibitedIn(i, h.priv) {
			continue
		}
		left := -h.counterValue(i) // instructions or cycles to the wrap
		if left == 0 {
			left = 1 << 63
		}
		switch hp.sel[i] {
		case denseInstr:
			n = min(n, left)
		case denseCycles, denseRef:
			n = min(n, max(left/maxCost, 1))
		}
	}
	return max(n, 1)
}

// counterRead handles the counter CSRs; handled is false for others.
func (h *Hart) counterRead(n uint32) (v uint64, ok, handled bool) {
	rv32 := h.xlen == 32
	hi := func(x uint64) uint64 { return x >> 32 }
	switch {
	case n == csrCycle || n == csrInstret:
		return h.counterValue(int(n & 31)), h.counterAllowed(uint(n & 31)), true
	case n == csrCycleh || n == csrInstreth:
		return hi(h.counterValue(int(n & 31))), rv32 && h.counterAllowed(uint(n&31)), true
	case n >= csrHpmcounter3 && n <= csrHpmcounter31:
		return h.counterValue(int(n & 31)), h.counterAllowed(uint(n & 31)), true
	case n >= csrHpmcounter3h && n <= csrHpmcounter31h:
		return hi(h.counterValue(int(n & 31))), rv32 && h.counterAllowed(uint(n&31)), true
	case n == csrMcycle || n == csrMinstret || n >= csrMhpmcounter3 && n <= csrMhpmcounter31:
		return h.counterValue(int(n & 31)), true, true
	case n == csrMcycleh || n == csrMinstreth || n >= csrMhpmcounter3h && n <= csrMhpmcntr31h:
		return hi(h.counterValue(int(n & 31))), rv32, true
	case n >= csrMhpmevent3 && n <= csrMhpmevent31:
		ev := h.hpm.event[n&31]
		if rv32 {
			ev &= 0xffffffff
		}
		return ev, true, true
	case n >= csrMhpmevent3h && n <= csrMhpmevent31h:
		return h.hpm.event[n&31] >> 32, rv32, true
	case n == csrMcountinhibit:
		return h.csr.mcountinhibit, true, true
	case n == csrScountovf:
		var ov uint64
		for i := 3; i < 32; i++ {
			if h.hpm.event[i]&hpmOF != 0 {
				ov |= 1 << uint(i)
			}
		}
		if h.priv < privM {
			ov &= h.csr.mcounteren
		}
		return ov, true, true
	}
	return 0, false, false
}

// counterWrite handles writes of the counter CSRs.
func (h *Hart) counterWrite(n uint32, v uint64) (ok, handled bool) {
	rv32 := h.xlen == 32
	whole := 0
	if rv32 {
		whole = 1
	}
	switch {
	case n == csrMcycle || n == csrMinstret || n >= csrMhpmcounter3 && n <= csrMhpmcounter31:
		h.writeCounter(int(n&31), v, whole)
		return true, true
	case n == csrMcycleh || n == csrMinstreth || n >= csrMhpmcounter3h && n <= csrMhpmcntr31h:
		if !rv32 {
			return false, true
		}
		h.writeCounter(int(n&31), v, 2)
		return true, true
	case n >= csrMhpmevent3 && n <= csrMhpmevent31:
		h.writeEvent(int(n&31), v, whole)
		return true, true
	case n >= csrMhpmevent3h && n <= csrMhpmevent31h:
		if !rv32 {
			return false, true
		}
		h.writeEvent(int(n&31), v, 2)
		return true, true
	case n == csrMcountinhibit:
		h.writeInhibit(v)
		return true, true
	}
	return false, false
}
