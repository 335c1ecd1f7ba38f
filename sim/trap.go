package sim

import (
	"fmt"
	"strings"

	"github.com/rvtrace/rvtrace/riscv"
)

// maxTrapsNoRetire is how many traps in a row with no instruction retired
// between them end the run with an error (a trap vector that cannot be
// fetched, a handler whose first instruction faults again and again).
const maxTrapsNoRetire = 3

// pendingInterrupts returns mip as software sees it: the writable bits
// plus the timer and software interrupts of the CLINT.
func (h *Hart) pendingInterrupts() uint64 {
	p := h.csr.mip
	cl := &h.m.clint
	if h.id < len(cl.mtimecmp) {
		if cl.mtime >= cl.mtimecmp[h.id] {
			p |= 1 << irqMTI
		}
		if cl.msip[h.id]&1 != 0 {
			p |= 1 << irqMSI
		}
	}
	if h.m.plic.eip != nil {
		p |= h.m.plic.eip[h.id] // external interrupt lines
	}
	if h.m.sstc != nil && h.csr.menvcfg&menvcfgSTCE != 0 && cl.mtime >= h.m.sstc[h.id] {
		p |= 1 << irqSTI // Sstc
	}
	return p
}

// interruptOrder is the priority order of simultaneous interrupts
// (privileged spec 3.1.9: MEI, MSI, MTI, SEI, SSI, STI; then the
// counter-overflow interrupt of Sscofpmf, below the standard ones).
var interruptOrder = [...]uint{irqMEI, irqMSI, irqMTI, irqSEI, irqSSI, irqSTI, irqLCOF}

// takeInterrupt takes the highest-priority pending and enabled interrupt,
// if any.
func (h *Hart) takeInterrupt() bool {
	pend := h.pendingInterrupts() & h.csr.mie
	if pend == 0 {
		return false
	}
	st := h.csr.mstatus
	mEnabled := h.priv < privM || st&mstatusMIE != 0
	sEnabled := h.priv < privS || (h.priv == privS && st&mstatusSIE != 0)
	m := pend &^ h.csr.mideleg
	s := pend & h.csr.mideleg
	var avail uint64
	if mEnabled {
		avail |= m
	}
	if sEnabled {
		avail |= s
	}
	if avail == 0 {
		return false
	}
	for _, irq := range interruptOrder {
		if avail>>irq&1 != 0 {
			h.takeTrap(uint64(irq), 0, true, nil)
			return true
		}
	}
	return false
}

// takeTrap enters the trap handler for an exception (at h.pc, the
// instruction that did not retire) or an interrupt (h.pc is the next
// instruction). d is the trapping instruction when known.
func (h *Hart) takeTrap(cause, tval uint64, intr bool, d *inst) {
	pc := h.pc
	if h.lnx != nil && !intr {
		h.linuxTrap(cause, tval, d)
		return
	}
	redirect := false
	if h.fw != nil && !(h.priv <= privS && h.delegated(cause, intr)) {
		var handled bool
		if handled, redirect, cause, tval = h.fwTrap(cause, tval, intr, d); handled {
			return
		}
	}
	// clean end of runaway trap loops
	if h.instret == h.retiredAtTrap && h.trapsSeen {
		h.trapsNoRetire++
	} else {
		h.trapsNoRetire = 0
		h.firstTrap = trapRecord{pc: pc, cause: cause, tval: tval}
		if d != nil {
			h.firstTrap.raw, h.firstTrap.size = d.raw, d.size
		} else {
			h.firstTrap.raw, h.firstTrap.size = h.peekInst(pc)
		}
		if intr {
			h.firstTrap.cause |= causeInterruptBitBase
		}
	}
	h.trapsSeen = true
	h.retiredAtTrap = h.instret
	if h.trapsNoRetire >= maxTrapsNoRetire {
		h.fail(h.trapLoopError())
		return
	}

	h.tr.trap(pc, cause, tval, intr)
	if h.obs != nil {
		h.traceTrap(pc, cause, tval, intr)
	}
	if intr {
		h.nIntr++
	} else {
		h.nExc++
	}

	code := cause
	del := h.csr.medeleg
	if intr {
		del = h.csr.mideleg
		if h.xlen == 32 {
			code |= 1 << 31
		} else {
			code |= 1 << 63
		}
	}
	oldPriv := h.priv
	st := h.csr.mstatus
	if redirect || h.priv <= privS && del>>cause&1 != 0 {
		h.csr.scause = code
		h.csr.sepc = pc
		h.csr.stval = tval
		st &^= mstatusSPP | mstatusSPIE
		if st&mstatusSIE != 0 {
			st |= mstatusSPIE
		}
		if h.priv == privS {
			st |= mstatusSPP
		}
		st &^= mstatusSIE
		h.priv = privS
		h.pc = h.csr.stvec &^ 3
		if intr && h.csr.stvec&1 != 0 {
			h.pc += 4 * cause
		}
	} else {
		h.csr.mcause = code
		h.csr.mepc = pc
		h.csr.mtval = tval
		st &^= mstatusMPP | mstatusMPIE
		if st&mstatusMIE != 0 {
			st |= mstatusMPIE
		}
		st |= uint64(h.priv) << 11
		st &^= mstatusMIE
		h.priv = privM
		h.pc = h.csr.mtvec &^ 3
		if intr && h.csr.mtvec&1 != 0 {
			h.pc += 4 * cause
		}
	}
	h.pc &= h.amask
	h.csr.mstatus = st
	h.resValid = false
	h.dropFetchWindow()
	h.selectTLB() // the privilege and MPP may have changed
	h.privChanged(oldPriv)
	h.tr.restart(h.pc)
}

// delegated reports whether a trap is delegated to S-mode.
func (h *Hart) delegated(cause uint64, intr bool) bool {
	if intr {
		return h.csr.mideleg>>cause&1 != 0
	}
	return h.csr.medeleg>>cause&1 != 0
}

// xret performs mret (m true) or sret.
func (h *Hart) xret(m bool) uint64 {
	old := h.priv
	st := h.csr.mstatus
	var npc uint64
	if m {
		prev := uint8((st >> 11) & 3)
		if st&mstatusMPIE != 0 {
			st |= mstatusMIE
		} else {
			st &^= mstatusMIE
		}
		st |= mstatusMPIE
		st &^= mstatusMPP // least-privileged mode: U
		if prev != privM {
			st &^= mstatusMPRV
		}
		h.priv = prev
		npc = h.csr.mepc
	} else {
		prev := uint8(privU)
		if st&mstatusSPP != 0 {
			prev = privS
		}
		if st&mstatusSPIE != 0 {
			st |= mstatusSIE
		} else {
			st &^= mstatusSIE
		}
		st |= mstatusSPIE
		st &^= mstatusSPP
		st &^= mstatusMPRV
		h.priv = prev
		npc = h.csr.sepc
	}
	h.csr.mstatus = st
	h.privChangedAfter(old)
	h.selectTLB()
	h.dropFetchWindow() // the fetch window was a page of the old privilege
	return npc & h.amask
}

// peekInst reads the instruction bits at a virtual address without side
// effects (for error messages).
func (h *Hart) peekInst(pc uint64) (uint32, uint8) {
	save := [2]uint64{h.excCause, h.excTval}
	defer func() { h.excCause, h.excTval = save[0], save[1] }()
	pa, ok := h.translate(pc, accFetch)
	if !ok {
		return 0, 0
	}
	b := h.m.mem.ramSlice(pa, 2)
	if b == nil {
		return 0, 0
	}
	lo := uint32(b[0]) | uint32(b[1])<<8
	if lo&3 != 3 {
		return lo, 2
	}
	pa2, ok := h.translate(pc+2, accFetch)
	if !ok {
		return lo, 2
	}
	b = h.m.mem.ramSlice(pa2, 2)
	if b == nil {
		return lo, 2
	}
	return lo | (uint32(b[0])|uint32(b[1])<<8)<<16, 4
}

// causeNames names the exception causes for error messages.
var causeNames = map[uint64]string{
	causeFetchMisaligned: "instruction address misaligned",
	causeFetchAccess:     "instruction access fault",
	causeIllegal:         "illegal instruction",
	causeBreakpoint:      "breakpoint",
	causeLoadMisaligned:  "load address misaligned",
	causeLoadAccess:      "load access fault",
	causeStoreMisaligned: "store/AMO address misaligned",
	causeStoreAccess:     "store/AMO access fault",
	causeEcallU:          "environment call from U-mode",
	causeEcallS:          "environment call from S-mode",
	causeEcallM:          "environment call from M-mode",
	causeFetchPageFault:  "instruction page fault",
	causeLoadPageFault:   "load page fault",
	causeStorePageFault:  "store/AMO page fault",
}

func causeName(c uint64) string {
	if c&causeInterruptBitBase != 0 {
		return fmt.Sprintf("interrupt %d", c&^causeInterruptBitBase)
	}
	if s, ok := causeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("exception %d", c)
}

// GuestError is the error that ends a run because of the guest program:
// a trap that no handler can take, an unsupported instruction, a fetch
// from unmapped memory, the instruction limit.
type GuestError struct {
	Hart  int
	PC    uint64 // address of the instruction concerned
	Raw   uint32 // its bits (0 when they could not be fetched)
	Size  int    // 2 or 4 (0 when unknown)
	Cause uint64 // exception cause (interrupt bit 63), when a trap
	TVal  uint64
	Msg   string
	XLEN  int // the hart's register width, for the disassembly (0: 64)
	// Ext is the hart's extensions, for the disassembly: they say
	// whether c.fsdsp's encodings are Zcd's or Zcmp's and Zcmt's (0:
	// riscv.DefaultExt(XLEN)).
	Ext riscv.Ext
	Err error // the cause, when a sentinel says it (ErrStopped, ErrInstructionLimit)
	// FormatAddr, when set, formats the addresses of the message with
	// their symbols ("0x80000010 <main+0x10>", image.Set.FormatAddr).
	FormatAddr func(addr uint64) string
}

// addrCauses are the exceptions whose tval is an address.
var addrCauses = map[uint64]bool{
	causeFetchMisaligned: true, causeFetchAccess: true, causeLoadMisaligned: true, causeLoadAccess: true,
	causeStoreMisaligned: true, causeStoreAccess: true, causeFetchPageFault: true, causeLoadPageFault: true,
	causeStorePageFault: true, causeBreakpoint: true,
}

// Unwrap returns the cause.
func (e *GuestError) Unwrap() error { return e.Err }

func (e *GuestError) Error() string {
	bits := "bits unavailable"
	switch e.Size {
	case 2:
		bits = fmt.Sprintf("instruction %04x", e.Raw)
	case 4:
		bits = fmt.Sprintf("instruction %08x", e.Raw)
	}
	dis := disasm(e.Raw, e.PC, e.Size, e.XLEN, e.Ext)
	if dis != "" {
		bits += " (" + dis + ")"
	}
	pc, msg := fmt.Sprintf("%#x", e.PC), e.Msg
	if e.FormatAddr != nil {
		pc = e.FormatAddr(e.PC)
		if e.Cause>>63 == 0 && addrCauses[e.Cause] {
			tval := fmt.Sprintf("(tval %#x)", e.TVal)
			msg = strings.Replace(msg, tval, "(tval "+e.FormatAddr(e.TVal)+")", 1)
		}
	}
	return fmt.Sprintf("sim: hart %d: pc %s: %s: %s", e.Hart, pc, bits, msg)
}

func (h *Hart) trapLoopError() error {
	t := h.firstTrap
	return &GuestError{Hart: h.id, PC: t.pc, Raw: t.raw, Size: int(t.size), Cause: t.cause, TVal: t.tval,
		Msg: fmt.Sprintf("%s (tval %#x) not handled: the trap handler at mtvec %#x / stvec %#x traps again before retiring an instruction",
			causeName(t.cause), t.tval, h.csr.mtvec, h.csr.stvec)}
}

// fail stops the hart and the machine with an error.
func (h *Hart) fail(err error) {
	h.halted = true
	h.stop = true
	if h.m.err == nil {
		h.m.err = err
	}
	h.m.done = true
}
