package sim

import (
	"encoding/binary"

	"github.com/rvtrace/rvtrace/ingress"
)

// PeekCode reads len(b) bytes (within one 4 KiB page) of the code hart
// sees at virtual address va when fetching in privilege priv under the
// current satp, as a debugger would: without side effects (no accessed
// or dirty bit update, no TLB fill, no fault) and without permission
// checks. It returns the physical address of va and whether the
// translation is global: the same in every address space (M mode, Bare
// translation, or a page-table entry with the G bit, as an operating
// system maps its kernel). ok is false when va is not mapped or not RAM.
//
// It serves tools that watch the ingress port and want to know what code
// a block ran (package sideband): called from an ingress sink of the
// hart, it sees the translation the block ran under.
//
// When the hart's TLB holds a translation of va for priv, the bytes are
// read from the page it gives, which is the one the hart fetches from
// (it differs from the page tables only when they were changed without
// sfence.vma).
func (m *Machine) PeekCode(hart int, va uint64, priv ingress.Priv, b []byte) (pa uint64, global, ok bool) {
	h := m.Hart(hart)
	if h == nil || uint64(len(b)) > pageSize-(va&pageMask) {
		return 0, false, false
	}
	pa, global, ok = h.peekTranslate(va, uint8(priv))
	if tp, hit := h.itlbFrame(va, priv); hit {
		pa, ok = tp|va&pageMask, true
	}
	if !ok || !m.mem.read(pa, b) {
		return 0, false, false
	}
	return pa, global, true
}

// FetchFrame returns the physical address hart fetches virtual address
// va from in privilege priv now, as PeekCode does but without reading
// memory, and cheaply when the hart's TLB holds va (no page walk).
func (m *Machine) FetchFrame(hart int, va uint64, priv ingress.Priv) (pa uint64, ok bool) {
	h := m.Hart(hart)
	if h == nil {
		return 0, false
	}
	if tp, hit := h.itlbFrame(va, priv); hit {
		return tp | va&pageMask, true
	}
	pa, _, ok = h.peekTranslate(va, uint8(priv))
	return pa, ok
}

// TranslationGen returns a number that changes whenever the translation
// of the hart's instruction fetches may have changed: at every satp
// write, sfence.vma (local or remote through SBI), change of the
// privilege or PMP settings that flushes the TLBs, and every page walk
// of a fetch (a translation can also change when a page table entry
// rewritten without sfence.vma is walked again). While it stays the
// same, FetchFrame returns the same page for an address that was
// fetched from. Tools that watch the ingress port (package sideband)
// use it to skip checking the translation of each block.
func (m *Machine) TranslationGen(hart int) uint64 {
	if h := m.Hart(hart); h != nil {
		return h.xgen
	}
	return 0
}

// TranslationGenAddr returns the address of the number TranslationGen
// returns, for a tool that reads it at every block without a call. It is
// valid for the Machine's life; read it only from the simulator's
// goroutine (in an ingress sink of the hart).
func (m *Machine) TranslationGenAddr(hart int) *uint64 {
	if h := m.Hart(hart); h != nil {
		return &h.xgen
	}
	return nil
}

// BlockInstret returns, while the hart's ingress sink is called with a
// block, the number of instructions the hart had retired before the
// block's first instruction: the block's instructions are the ones
// counted from there on (during BlockBatcher.Blocks: the first block's).
func (m *Machine) BlockInstret(hart int) uint64 {
	if h := m.Hart(hart); h != nil {
		return h.tr.emitRet
	}
	return 0
}

// itlbFrame returns the physical page the hart's fetch TLB of privilege
// priv maps va to, when it holds va.
func (h *Hart) itlbFrame(va uint64, priv ingress.Priv) (uint64, bool) {
	if priv > ingress.PrivM || priv == 2 {
		return 0, false
	}
	vpn := (va & h.amask) >> pageShift
	e := &h.itlbs[priv][vpn&itlbMask]
	if e.tag != vpn || e.dp == nil {
		return 0, false
	}
	return e.dp.pa, true
}

// SetCodeWriteHook calls f with the physical address of every store (by
// a hart, cbo.zero included) into a 4 KiB page holding code a hart has
// executed, whether or not it overwrites an instruction that ran, before
// the new bytes can run. Writes by devices (virtio DMA), the SBI and the
// host (WriteMem) into such pages are reported too, once per page
// written, with the first address written in it. nil removes it.
func (m *Machine) SetCodeWriteHook(f func(pa uint64)) { m.codeHook = f }

// peekTranslate translates va for a fetch in privilege priv without side
// effects or permission checks (a PTE that walk faults on, pteFault, gives
// no translation here either).
func (h *Hart) peekTranslate(va uint64, priv uint8) (pa uint64, global, ok bool) {
	mode := h.satpMode()
	if priv == privM || mode == 0 {
		return va & h.amask, true, true
	}
	levels, pteSize, vpnBits := 3, uint64(8), uint(9)
	ppnMask := uint64(1)<<44 - 1
	if mode == 32 {
		levels, pteSize, vpnBits = 2, 4, 10
		ppnMask = 1<<22 - 1
		va &= 0xffffffff
	} else if uint64(int64(va<<25)>>25) != va {
		return 0, false, false
	}
	a := (h.csr.satp & ppnMask) << pageShift
	for i := levels - 1; i >= 0; i-- {
		vpn := (va >> (pageShift + uint(i)*vpnBits)) & (1<<vpnBits - 1)
		b := h.m.mem.ramSlice(a+vpn*pteSize, pteSize)
		if b == nil {
			return 0, false, false
		}
		var pte uint64
		if pteSize == 8 {
			pte = binary.LittleEndian.Uint64(b)
		} else {
			pte = uint64(binary.LittleEndian.Uint32(b))
		}
		if pteFault(pte, pteSize == 8, h.csr.menvcfg&menvcfgPBMTE != 0) {
			return 0, false, false // as walk: reserved bits fault
		}
		global = global || pte&pteG != 0
		ppn := (pte >> 10) & ppnMask
		if pte&(pteR|pteX) == 0 {
			a = ppn << pageShift
			continue
		}
		low := uint64(1)<<(uint(i)*vpnBits) - 1
		if ppn&low != 0 {
			return 0, false, false
		}
		return (ppn&^low)<<pageShift | (va & (low<<pageShift | pageMask)), global, true
	}
	return 0, false, false
}

// codeStore keeps the decoded-instruction cache coherent after a store
// of size bytes at pa (virtual address va) into a page holding code, and
// tells the code-write hook.
func (m *Machine) codeStore(h *Hart, va, pa, size uint64) {
	if m.mem.invalidateCode(pa, size) {
		m.codeWritten(h, va)
	}
	if m.codeHook != nil {
		m.codeHook(pa)
	}
}
