package sim

import (
	"encoding/binary"
	"math/bits"
)

// Access types, for translation, PMP and fault causes.
const (
	accFetch = iota
	accLoad
	accStore
)

// Exception causes (privileged spec table "Machine cause register (mcause)
// values after trap").
const (
	causeFetchMisaligned  = 0
	causeFetchAccess      = 1
	causeIllegal          = 2
	causeBreakpoint       = 3
	causeLoadMisaligned   = 4
	causeLoadAccess       = 5
	causeStoreMisaligned  = 6
	causeStoreAccess      = 7
	causeEcallU           = 8
	causeEcallS           = 9
	causeEcallM           = 11
	causeFetchPageFault   = 12
	causeLoadPageFault    = 13
	causeStorePageFault   = 15
	causeInterruptBitBase = 1 << 63
)

// Interrupt numbers (mip/mie bits).
const (
	irqSSI = 1
	irqMSI = 3
	irqSTI = 5
	irqMTI = 7
	irqSEI = 9
	irqMEI = 11
)

var accessFault = [3]uint64{causeFetchAccess, causeLoadAccess, causeStoreAccess}
var pageFault = [3]uint64{causeFetchPageFault, causeLoadPageFault, causeStorePageFault}

// effPriv is the privilege loads and stores are checked at (mstatus.MPRV).
func (h *Hart) effPriv(acc int) uint8 {
	if acc != accFetch && h.priv == privM && h.csr.mstatus&mstatusMPRV != 0 {
		return uint8((h.csr.mstatus >> 11) & 3)
	}
	return h.priv
}

// translate maps a virtual address to a physical one, or records a page
// fault (or an access fault of the page-table walk) and returns false.
func (h *Hart) translate(va uint64, acc int) (uint64, bool) {
	priv := h.effPriv(acc)
	if priv == privM {
		return va, true
	}
	mode := h.satpMode()
	if mode == 0 {
		return va, true
	}
	return h.walk(va, acc, priv, mode)
}

// satpMode returns 0 (bare), 32 (Sv32) or 39 (Sv39).
func (h *Hart) satpMode() int {
	if h.xlen == 32 {
		if h.csr.satp>>31 != 0 {
			return 32
		}
		return 0
	}
	if h.csr.satp>>60 == 8 {
		return 39
	}
	return 0
}

// PTE bits.
const (
	pteV = 1 << iota
	pteR
	pteW
	pteX
	pteU
	pteG
	pteA
	pteD
)

// Sv39 PTE fields above the PPN (privileged spec, "Sv39 page table
// entry"): bits 60:54 are reserved, 62:61 are Svpbmt's PBMT and 63 is
// Svnapot's N, which the simulator does not implement (so it is reserved
// too).
const (
	pteReserved = 0x7f << 54 // bits 60:54
	ptePBMT     = 3 << 61    // bits 62:61
	pteN        = 1 << 63
)

// The PBMT values (Svpbmt, table "Encodings for PBMT field in Sv39, Sv48,
// and Sv57 PTEs"). NC and IO change only the memory attributes (caching,
// idempotency, ordering), which this simulator's memory does not model:
// accesses through such pages behave as through PMA pages.
const (
	pbmtPMA      = 0 // none: the PMAs apply
	pbmtNC       = 1 // non-cacheable, idempotent, weakly-ordered (RVWMO), main memory
	pbmtIO       = 2 // non-cacheable, non-idempotent, strongly-ordered (I/O ordering), I/O
	pbmtReserved = 3 // reserved for future standard use
)

// menvcfgPBMTE enables Svpbmt for S-mode translations (menvcfg bit 62):
// with it clear, the PBMT bits are reserved as if Svpbmt were absent.
const menvcfgPBMTE = 1 << 62

// pteFault tells whether a PTE at some level of an Sv32 or Sv39 walk
// stops the walk with a page fault before its permissions are looked at
// (step 3 of the privileged spec's "Virtual Address Translation Process",
// with Svpbmt's rules): not valid, W without R, or any reserved bit or
// encoding set. pbmte is menvcfg.PBMTE; sv39 tells that the PTE is a
// 64-bit one.
func pteFault(pte uint64, sv39, pbmte bool) bool {
	if pte&pteV == 0 || pte&(pteR|pteW) == pteW {
		return true
	}
	leaf := pte&(pteR|pteX) != 0
	// "For non-leaf PTEs, the D, A, and U bits are reserved for future
	// standard use."
	if !leaf && pte&(pteD|pteA|pteU) != 0 {
		return true
	}
	if !sv39 {
		return false
	}
	if pte&(pteReserved|pteN) != 0 {
		return true
	}
	switch pbmt := (pte & ptePBMT) >> 61; {
	case pbmt == pbmtPMA:
		return false
	case !pbmte:
		// Svpbmt disabled (menvcfg.PBMTE = 0): bits 62:61 are reserved.
		return true
	case !leaf:
		// "For non-leaf PTEs, bits 62-61 are reserved for future
		// standard use ... or else a page-fault exception is raised."
		return true
	default:
		// "using this reserved value in a leaf PTE raises a page-fault
		// exception"
		return pbmt == pbmtReserved
	}
}

func (h *Hart) walk(va uint64, acc int, priv uint8, mode int) (uint64, bool) {
	levels, pteSize, vpnBits := 3, uint64(8), uint(9)
	ppnMask := uint64(1)<<44 - 1
	if mode == 32 {
		levels, pteSize, vpnBits = 2, 4, 10
		ppnMask = 1<<22 - 1
		va &= 0xffffffff
	} else if uint64(int64(va<<25)>>25) != va {
		h.excCause, h.excTval = pageFault[acc], va
		return 0, false
	}
	a := (h.csr.satp & ppnMask) << pageShift
	st := h.csr.mstatus
	for i := levels - 1; i >= 0; i-- {
		vpn := (va >> (pageShift + uint(i)*vpnBits)) & (1<<vpnBits - 1)
		ptePA := a + vpn*pteSize
		var pte uint64
		b := h.m.mem.ramSlice(ptePA, pteSize)
		if b == nil || !h.pmpCheck(ptePA, pteSize, accLoad, privS) {
			h.excCause, h.excTval = accessFault[acc], va
			return 0, false
		}
		if pteSize == 8 {
			pte = binary.LittleEndian.Uint64(b)
		} else {
			pte = uint64(binary.LittleEndian.Uint32(b))
		}
		if pteFault(pte, pteSize == 8, h.csr.menvcfg&menvcfgPBMTE != 0) {
			break
		}
		ppn := (pte >> 10) & ppnMask
		if pte&(pteR|pteX) == 0 {
			a = ppn << pageShift
			continue
		}
		// leaf
		switch {
		case priv == privU && pte&pteU == 0:
			goto fault
		case priv == privS && pte&pteU != 0 && (acc == accFetch || st&mstatusSUM == 0):
			goto fault
		}
		switch acc {
		case accFetch:
			if pte&pteX == 0 {
				goto fault
			}
		case accLoad:
			if pte&pteR == 0 && !(st&mstatusMXR != 0 && pte&pteX != 0) {
				goto fault
			}
		case accStore:
			if pte&pteW == 0 {
				goto fault
			}
		}
		low := uint64(1)<<(uint(i)*vpnBits) - 1
		if ppn&low != 0 { // misaligned superpage
			goto fault
		}
		// hardware update of the A and D bits
		if pte&pteA == 0 || (acc == accStore && pte&pteD == 0) {
			pte |= pteA
			if acc == accStore {
				pte |= pteD
			}
			if !h.pmpCheck(ptePA, pteSize, accStore, privS) {
				h.excCause, h.excTval = accessFault[acc], va
				return 0, false
			}
			if pteSize == 8 {
				binary.LittleEndian.PutUint64(b, pte)
			} else {
				binary.LittleEndian.PutUint32(b, uint32(pte))
			}
		}
		pa := (ppn&^low)<<pageShift | (va & (low<<pageShift | pageMask))
		return pa, true
	}
fault:
	h.excCause, h.excTval = pageFault[acc], va
	return 0, false
}

// misalignedTraps tells whether misaligned loads and stores raise
// address-misaligned exceptions: with Config.MisalignedTrap, and on the
// firmware machines (LoadSBI, LoadFirmware), whose M-mode firmware
// emulates them and counts them in its SBI PMU firmware events, unless
// Config.Misaligned.
func (h *Hart) misalignedTraps() bool {
	c := &h.m.cfg
	return !c.Misaligned && (c.MisalignedTrap || h.fw != nil || h.m.virt)
}

// loadSlow performs a load that missed the TLB, was misaligned or went to
// a device.
func (h *Hart) loadSlow(va, size uint64) (uint64, bool) {
	if va&(size-1) != 0 {
		if h.misalignedTraps() {
			h.excCause, h.excTval = causeLoadMisaligned, va
			return 0, false
		}
		var v uint64
		if h.obs != nil {
			h.obs.quiet++
		}
		for i := uint64(0); i < size; i++ {
			b, ok := h.loadSlow((va+i)&h.amask, 1)
			if !ok {
				if h.obs != nil {
					h.obs.quiet--
				}
				return 0, false
			}
			v |= b << (8 * i)
		}
		if h.obs != nil {
			h.obs.quiet--
			h.noteMem(false, va, size, v)
		}
		return v, true
	}
	pa, ok := h.translate(va, accLoad)
	if !ok {
		return 0, false
	}
	if r := h.m.mem.find(pa); r != nil {
		if !h.pmpOK(pa, size, accLoad) {
			h.excCause, h.excTval = causeLoadAccess, va
			return 0, false
		}
		if !h.noFastMem && h.pmpOK(pa&^pageMask, pageSize, accLoad) {
			e := &h.rtlb[(va>>pageShift)&tlbMask]
			e.tag, e.page = va>>pageShift, r.page(pa)
		}
		off := pa - r.base
		var v uint64
		switch size {
		case 1:
			v = uint64(r.mem[off])
		case 2:
			v = uint64(binary.LittleEndian.Uint16(r.mem[off:]))
		case 4:
			v = uint64(binary.LittleEndian.Uint32(r.mem[off:]))
		default:
			v = binary.LittleEndian.Uint64(r.mem[off:])
		}
		if h.obs != nil {
			h.noteMem(false, va, size, v)
		}
		return v, true
	}
	if h.pmpOK(pa, size, accLoad) {
		if v, ok := h.m.devRead(h, pa, size); ok {
			if h.obs != nil {
				h.noteMem(false, va, size, v)
			}
			return v, true
		}
	}
	h.excCause, h.excTval = causeLoadAccess, va
	return 0, false
}

// storeSlow performs a store that missed the store TLB (which never holds
// code pages or the HTIF page), was misaligned or went to a device.
func (h *Hart) storeSlow(va, size, v uint64) bool {
	if va&(size-1) != 0 {
		if h.misalignedTraps() {
			h.excCause, h.excTval = causeStoreMisaligned, va
			return false
		}
		// check every byte first so that a faulting store writes nothing
		for i := uint64(0); i < size; i++ {
			if _, ok := h.storeTarget((va+i)&h.amask, 1); !ok {
				return false
			}
		}
		if h.obs != nil {
			h.obs.quiet++
		}
		for i := uint64(0); i < size; i++ {
			if !h.storeSlow((va+i)&h.amask, 1, v>>(8*i)) {
				if h.obs != nil {
					h.obs.quiet--
				}
				return false
			}
		}
		if h.obs != nil {
			h.obs.quiet--
			h.noteMem(true, va, size, v)
		}
		return true
	}
	pa, ok := h.storeTarget(va, size)
	if !ok {
		return false
	}
	if h.obs != nil {
		h.noteMem(true, va, size, v)
	}
	if r := h.m.mem.find(pa); r != nil {
		pg := (pa - r.base) >> pageShift
		off := pa - r.base
		switch size {
		case 1:
			r.mem[off] = byte(v)
		case 2:
			binary.LittleEndian.PutUint16(r.mem[off:], uint16(v))
		case 4:
			binary.LittleEndian.PutUint32(r.mem[off:], uint32(v))
		default:
			binary.LittleEndian.PutUint64(r.mem[off:], v)
		}
		fl := r.flags[pg]
		if fl == 0 {
			if !h.noFastMem && h.pmpOK(pa&^pageMask, pageSize, accStore) {
				e := &h.wtlb[(va>>pageShift)&tlbMask]
				e.tag, e.page = va>>pageShift, r.page(pa)
			}
			return true
		}
		if fl&pfCode != 0 {
			h.m.codeStore(h, va, pa, size)
		}
		if fl&pfWatch != 0 {
			h.m.watchedStore(h, pa, size)
		}
		return true
	}
	if h.m.devWrite(h, pa, size, v) {
		return true
	}
	h.excCause, h.excTval = causeStoreAccess, va
	return false
}

// storeTarget translates and checks a store without performing it.
func (h *Hart) storeTarget(va, size uint64) (uint64, bool) {
	pa, ok := h.translate(va, accStore)
	if !ok {
		return 0, false
	}
	if !h.pmpOK(pa, size, accStore) {
		h.excCause, h.excTval = causeStoreAccess, va
		return 0, false
	}
	return pa, true
}

// amoTarget returns the host bytes of an aligned atomic access, or records
// the exception (misaligned, page fault, access fault: AMOs to devices are
// not supported).
func (h *Hart) amoTarget(va, size uint64, lr bool) ([]byte, uint64, bool) {
	if va&(size-1) != 0 {
		h.excCause, h.excTval = causeStoreMisaligned, va
		if lr {
			h.excCause = causeLoadMisaligned
		}
		return nil, 0, false
	}
	acc := accStore
	if lr {
		acc = accLoad
	}
	pa, ok := h.translate(va, acc)
	if !ok {
		return nil, 0, false
	}
	b := h.m.mem.ramSlice(pa, size)
	if b == nil || !h.pmpOK(pa, size, acc) {
		h.excCause, h.excTval = accessFault[acc], va
		return nil, 0, false
	}
	return b, pa, true
}

// amoStored keeps the decoded-instruction cache coherent after an AMO or
// a successful SC wrote [pa, pa+size) at va, and tells the host when the
// page is watched (tohost).
func (h *Hart) amoStored(va, pa, size uint64) {
	if r := h.m.mem.find(pa); r != nil {
		fl := r.flags[(pa-r.base)>>pageShift]
		if fl&pfCode != 0 {
			h.m.codeStore(h, va, pa, size)
		}
		if fl&pfWatch != 0 {
			h.m.watchedStore(h, pa, size)
		}
	}
}

// Physical Memory Protection.

const pmpEntries = 16

// PMP configuration bits.
const (
	pmpR   = 1
	pmpW   = 2
	pmpX   = 4
	pmpA   = 0x18
	pmpTOR = 0x08
	pmpNA4 = 0x10
	pmpNAP = 0x18
	pmpL   = 0x80
)

// pmpOK checks a physical access at the effective privilege of acc.
func (h *Hart) pmpOK(pa, size uint64, acc int) bool {
	return h.pmpCheck(pa, size, acc, h.effPriv(acc))
}

func (h *Hart) pmpCheck(pa, size uint64, acc int, priv uint8) bool {
	if h.m.noPMP {
		return true
	}
	for i := 0; i < h.m.nPMP; i++ {
		cfg := h.csr.pmpcfg[i]
		if cfg&pmpA == 0 {
			continue
		}
		lo, hi := h.pmpRange(i)
		if pa >= hi || pa+size <= lo {
			continue
		}
		if pa < lo || pa+size > hi {
			return false // partial match
		}
		if priv == privM && cfg&pmpL == 0 {
			return true
		}
		switch acc {
		case accFetch:
			return cfg&pmpX != 0
		case accLoad:
			return cfg&pmpR != 0
		default:
			return cfg&pmpW != 0
		}
	}
	return priv == privM || h.m.nPMP == 0
}

// pmpRange returns the byte range [lo, hi) of PMP entry i.
func (h *Hart) pmpRange(i int) (lo, hi uint64) {
	addr := h.csr.pmpaddr[i]
	switch h.csr.pmpcfg[i] & pmpA {
	case pmpTOR:
		if i > 0 {
			lo = h.csr.pmpaddr[i-1] << 2
		}
		return lo, addr << 2
	case pmpNA4:
		return addr << 2, addr<<2 + 4
	default:
		t := uint(bits.TrailingZeros64(^addr)) // trailing ones
		if t >= 62 {
			return 0, ^uint64(0)
		}
		lo = (addr &^ (1<<t - 1)) << 2
		return lo, lo + 1<<(t+3)
	}
}
