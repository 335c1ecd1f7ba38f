package sim

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
)

// ptMachine returns the hart of an RV64 machine (the Sv39 test program's,
// not run) in S-mode, PMP open, with Sv39 page tables at ptRoot: root[0] -> ptL1,
// ptL1[0] -> ptL0, all else invalid.
func ptMachine(t *testing.T) (*Machine, *Hart) {
	t.Helper()
	m, err := New(Config{MaxInstret: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadELF(filepath.Join(vmDir, "sv39.elf")); err != nil {
		t.Fatal(err)
	}
	h := m.Hart(0)
	setPTE(m, ptRoot, 0, ptL1>>12<<10|pteV)
	setPTE(m, ptL1, 0, ptL0>>12<<10|pteV)
	h.csr.pmpaddr[0] = ^uint64(0) >> 10 // everything accessible to S
	h.csr.pmpcfg[0] = pmpR | pmpW | pmpX | pmpNAP
	h.priv = privS
	h.csr.satp = 8<<60 | ptRoot>>12
	h.flushTLB()
	return m, h
}

// Page-table pages and the data page of ptMachine (physical, in the
// program's RAM bank, above the program).
const (
	ptRoot = 0x80100000
	ptL1   = 0x80101000
	ptL0   = 0x80102000
	ptPage = 0x80200000
)

func setPTE(m *Machine, table uint64, i int, pte uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], pte)
	m.WriteMem(table+uint64(i)*8, b[:])
}

// TestPTERules checks the page-table walk's rules on PTE bits, one case a
// statement of the privileged spec (Sv39, Svpbmt), through loads and
// stores from S-mode at VA 0x5000 (root[0] -> L1[0] -> L0[5]) or, for the
// non-leaf cases, at VA 0x200000 (root[0] -> L1[1] -> L0).
func TestPTERules(t *testing.T) {
	const rwad = pteV | pteR | pteW | pteA | pteD
	leaf := uint64(ptPage>>12<<10 | rwad)
	nonLeaf := uint64(ptL0>>12<<10 | pteV)
	for _, c := range []struct {
		spec    string
		pbmte   bool
		l1, pte uint64 // L1[1] (non-leaf cases) or L0[5]
		fault   bool
	}{
		{"a leaf with PBMT=PMA translates", false, 0, leaf, false},
		{"with menvcfg.PBMTE=0 bits 62-61 are reserved: PBMT=NC faults", false, 0, leaf | pbmtNC<<61, true},
		{"with menvcfg.PBMTE=0, PBMT=IO faults", false, 0, leaf | pbmtIO<<61, true},
		{"Svpbmt: a leaf with PBMT=NC translates", true, 0, leaf | pbmtNC<<61, false},
		{"Svpbmt: a leaf with PBMT=IO translates", true, 0, leaf | pbmtIO<<61, false},
		{"Svpbmt: 'using this reserved value [3] in a leaf PTE raises a page-fault exception'", true, 0, leaf | pbmtReserved<<61, true},
		{"Svpbmt: 'For non-leaf PTEs, bits 62-61 are reserved ... or else a page-fault exception is raised' (NC)", true, nonLeaf | pbmtNC<<61, leaf, true},
		{"Svpbmt: non-leaf PBMT=IO faults", true, nonLeaf | pbmtIO<<61, leaf, true},
		{"a non-leaf PTE with PBMT=0 walks on", true, nonLeaf, leaf, false},
		{"'For non-leaf PTEs, the D, A, and U bits are reserved': D", true, nonLeaf | pteD, leaf, true},
		{"non-leaf A is reserved", true, nonLeaf | pteA, leaf, true},
		{"non-leaf U is reserved", true, nonLeaf | pteU, leaf, true},
		{"non-leaf G is not reserved", true, nonLeaf | pteG, leaf, false},
		{"Sv39: bits 60-54 are reserved (bit 54)", true, 0, leaf | 1<<54, true},
		{"Sv39: bits 60-54 are reserved (bit 60)", true, 0, leaf | 1<<60, true},
		{"bit 63 (Svnapot's N, not implemented) is reserved", true, 0, leaf | 1<<63, true},
		{"RSW (bits 9-8) is ignored", true, 0, leaf | 3<<8, false},
	} {
		t.Run(c.spec, func(t *testing.T) {
			m, h := ptMachine(t)
			if c.pbmte {
				h.csr.menvcfg |= menvcfgPBMTE
			}
			va := uint64(0x5000)
			if c.l1 != 0 {
				va = 0x200000 + 0x5000
				setPTE(m, ptL1, 1, c.l1)
			}
			setPTE(m, ptL0, 5, c.pte)
			for _, acc := range []int{accLoad, accStore} {
				h.flushTLB()
				h.excCause = 0
				pa, ok := h.translate(va+0x18, acc)
				switch {
				case c.fault && ok:
					t.Errorf("access %d: translated to %#x, want a page fault", acc, pa)
				case c.fault && h.excCause != pageFault[acc]:
					t.Errorf("access %d: cause %d, want %d", acc, h.excCause, pageFault[acc])
				case !c.fault && (!ok || pa != ptPage+0x18):
					t.Errorf("access %d: %#x, %v (cause %d), want %#x", acc, pa, ok, h.excCause, ptPage+0x18)
				}
			}
		})
	}
}

// TestMenvcfgPBMTE: menvcfg.PBMTE (bit 62) is writable on RV64, and
// clearing it makes a PBMT=NC page that translated fault at once (the
// cached translation is dropped).
func TestMenvcfgPBMTE(t *testing.T) {
	m, h := ptMachine(t)
	h.priv = privM
	if !h.csrWrite(csrMenvcfg, menvcfgPBMTE) {
		t.Fatal("menvcfg write refused")
	}
	if v, _ := h.csrRead(csrMenvcfg); v&menvcfgPBMTE == 0 {
		t.Fatalf("menvcfg = %#x after writing PBMTE", v)
	}
	setPTE(m, ptL0, 5, ptPage>>12<<10|pteV|pteR|pteA|pbmtNC<<61)
	h.priv = privS
	if _, ok := h.translate(0x5000, accLoad); !ok {
		t.Fatalf("PBMT=NC with PBMTE: cause %d", h.excCause)
	}
	h.priv = privM
	h.csrWrite(csrMenvcfg, 0)
	h.priv = privS
	if _, ok := h.translate(0x5000, accLoad); ok {
		t.Fatal("PBMT=NC after clearing PBMTE translated")
	}
}

// TestSvinvalPrivilege: sinval.vma behaves as sfence.vma (illegal in
// U-mode and, with mstatus.TVM, in S-mode); sfence.w.inval and
// sfence.inval.ir are illegal in U-mode only ("unaffected by the
// mstatus.TVM ... fields and hence are always permitted in S-mode").
func TestSvinvalPrivilege(t *testing.T) {
	const (
		sinval = 0x16b50073 // sinval.vma a0,a1
		winval = 0x18000073 // sfence.w.inval
		invir  = 0x18100073 // sfence.inval.ir
	)
	for _, c := range []struct {
		raw     uint32
		priv    uint8
		tvm     bool
		illegal bool
	}{
		{sinval, privS, false, false},
		{sinval, privS, true, true},
		{sinval, privU, false, true},
		{sinval, privM, true, false},
		{winval, privS, true, false},
		{winval, privU, false, true},
		{invir, privS, true, false},
		{invir, privU, false, true},
		{invir, privM, false, false},
	} {
		t.Run(fmt.Sprintf("%#x/priv%d/tvm=%v", c.raw, c.priv, c.tvm), func(t *testing.T) {
			_, h := ptMachine(t)
			h.priv = c.priv
			if c.tvm {
				h.csr.mstatus |= mstatusTVM
			}
			gen := h.xgen
			d := decode(c.raw, 64)
			h.excCause = 0
			npc, _, ok := h.execSlow(&d, 0x1000, 0x1004)
			switch {
			case c.illegal && (ok || h.excCause != causeIllegal || h.excTval != uint64(c.raw)):
				t.Errorf("ok %v, cause %d, tval %#x; want an illegal-instruction exception", ok, h.excCause, h.excTval)
			case !c.illegal && (!ok || npc != 0x1004):
				t.Errorf("ok %v, npc %#x, cause %d; want it executed", ok, npc, h.excCause)
			}
			if !c.illegal && c.raw == sinval && h.xgen == gen {
				t.Error("sinval.vma did not invalidate the cached translations")
			}
		})
	}
}
