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
func (m *Machine) PeekCode(hart int, va uint64, priv ingress.Priv, b []byte) (pa uint64, global, ok bool) {
	h := m.Hart(hart)
	if h == nil || uint64(len(b)) > pageSize-(va&pageMask) {
		return 0, false, false
	}
	pa, global, ok = h.peekTranslate(va, uint8(priv))
	if !ok || !m.mem.read(pa, b) {
		return 0, false, false
	}
	return pa, global, true
}

// SetCodeWriteHook calls f with the physical address of every store (by
// a hart) into a 4 KiB page holding code a hart has executed, whether or
// not it overwrites an instruction that ran, before the new bytes can
// run. (Writes by devices and the host, WriteMem, are not reported.) nil
// removes it.
func (m *Machine) SetCodeWriteHook(f func(pa uint64)) { m.codeHook = f }

// peekTranslate translates va for a fetch in privilege priv without side
// effects or permission checks.
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
		if pte&pteV == 0 || (pte&pteR == 0 && pte&pteW != 0) {
			return 0, false, false
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
