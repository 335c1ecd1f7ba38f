package sim

import (
	"debug/elf"
	"encoding/binary"
	"fmt"

	"github.com/rvtrace/rvtrace/pmu"
	"github.com/rvtrace/rvtrace/riscv"
)

// This file executes Zcmp (cm.push, cm.pop, cm.popret, cm.popretz,
// cm.mvsa01, cm.mva01s) and Zcmt (cm.jt, cm.jalt with the jvt CSR), as
// the unprivileged specification's chapter "Zc* Standard Extension for
// Code Size Reduction" defines them. Both reuse the encodings of c.fsdsp
// (Zcd), so a hart has either: Zcd by default, Zcmp and Zcmt when the
// program's ISA names them (Config.Arch, else the ELF file's
// Tag_RISCV_arch attribute).
//
// Push and pop are executed as the specification's pseudo-code: the
// stores (loads) of the registers in the list, from s11 down to ra, at
// sp-XLEN/8 downwards (at sp+stack_adj-XLEN/8 downwards), then, only when
// every access succeeded, the stack pointer adjustment (and for popretz
// li a0,0, for popret and popretz the ret). A trap during the accesses
// therefore leaves sp and the registers as they were: the instruction
// restarts from its first access after the handler returns. The stores
// made before the trap stay in memory (the specification allows "any of
// the bytes may be written multiple times"); the loads are kept aside
// until all succeed. Each access is reported to the observer (Tarmac MR
// and MW records, the data trace port) in that order, and none of a
// trapped attempt.
//
// Table jumps read their target from the jump table at jvt.base as an
// instruction fetch (execute permission, fetch faults with the table
// entry's address as tval and the table jump's pc as epc).

// zcSet says which extensions a hart's compressed encodings of c.fld,
// c.fsd, c.fldsp and c.fsdsp belong to. The zero value is Zcd (C with
// D): what the simulator has by default.
type zcSet uint8

const (
	zcZcmp  zcSet = 1 << iota // cm.push, cm.pop*, cm.mvsa01, cm.mva01s
	zcZcmt                    // cm.jt, cm.jalt and the jvt CSR
	zcNoZcd                   // c.fld, c.fsd, c.fldsp are illegal
)

// csrJvt is the jvt CSR of Zcmt (user read/write).
const csrJvt = 0x017

// zcOf returns the compressed extensions of a hart with the extensions
// ext (riscv.ParseArch): Zcd unless ext has Zcmp or Zcmt; with them, Zcd
// only for its c.fld, c.fsd and c.fldsp when ext names Zcd too.
func zcOf(ext riscv.Ext) zcSet {
	var zc zcSet
	if ext&riscv.ExtZcmp != 0 {
		zc |= zcZcmp
	}
	if ext&riscv.ExtZcmt != 0 {
		zc |= zcZcmt
	}
	if zc != 0 && ext&riscv.ExtZcd == 0 {
		zc |= zcNoZcd
	}
	return zc
}

// zcGroup is the riscv extensions that share c.fsdsp's encodings.
const zcGroup = riscv.ExtZcd | riscv.ExtZcmp | riscv.ExtZcmt

// ext returns zc as riscv extensions (of zcGroup): what the riscv
// package decodes c.fld, c.fsd, c.fldsp and c.fsdsp as the hart does
// with.
func (zc zcSet) ext() riscv.Ext {
	var ext riscv.Ext
	if zc&zcZcmp != 0 {
		ext |= riscv.ExtZcmp
	}
	if zc&zcZcmt != 0 {
		ext |= riscv.ExtZcmt
	}
	if zc&zcNoZcd == 0 {
		ext |= riscv.ExtZcd
	}
	return ext
}

// String names the compressed extensions that share c.fsdsp's encodings,
// as in an ISA string.
func (zc zcSet) String() string {
	s := ""
	if zc&zcNoZcd == 0 {
		s = "zcd"
	}
	for _, e := range []struct {
		bit  zcSet
		name string
	}{{zcZcmp, "zcmp"}, {zcZcmt, "zcmt"}} {
		if zc&e.bit != 0 {
			if s != "" {
				s += "_"
			}
			s += e.name
		}
	}
	return s
}

// setArch chooses the machine's compressed extensions for the program f
// (the file path): from Config.Arch when set, else from f's
// Tag_RISCV_arch attribute, else Zcd.
func (m *Machine) setArch(f *elf.File, path string) error {
	arch, what := m.cfg.Arch, "Config.Arch"
	if arch == "" {
		var err error
		if arch, err = riscv.ELFArch(f); err != nil {
			return fmt.Errorf("sim: %s: %w", path, err)
		}
		what = path + ": Tag_RISCV_arch"
	}
	m.zc = 0
	if arch == "" {
		return nil
	}
	xlen, ext, err := riscv.ParseArch(arch)
	if err != nil {
		return fmt.Errorf("sim: %s %q: %w", what, arch, err)
	}
	if xlen != m.xlen {
		return fmt.Errorf("sim: %s %q is RV%d, the program RV%d", what, arch, xlen, m.xlen)
	}
	m.zc = zcOf(ext)
	return nil
}

// zcmRegs lists the registers of each push/pop register list (rlist 4 to
// 15), in the order the specification's pseudo-code accesses them: from
// the highest address down.
var zcmRegs = func() (t [16][]uint8) {
	for rlist := 4; rlist < 16; rlist++ {
		regs := []uint8{1, 8, 9, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27}
		n := rlist - 3 // 4: {ra}, 5: {ra, s0}, ... 14: {ra, s0-s9}
		if rlist == 15 {
			n = 13 // {ra, s0-s11}: there is no {ra, s0-s10}
		}
		l := make([]uint8, n)
		for i := range l {
			l[i] = regs[n-1-i]
		}
		t[rlist] = l
	}
	return t
}()

// stackAdjBase is the specification's stack_adj_base: the bytes the
// registers of rlist take, rounded up to 16.
func stackAdjBase(rlist uint32, xlen int) int64 {
	return (int64(len(zcmRegs[rlist])*xlen/8) + 15) &^ 15
}

// sreg maps the 3-bit s-register specifier of cm.mvsa01 and cm.mva01s to
// its register: s0, s1, s2 to s7 (x8, x9, x18 to x23).
func sreg(r uint32) uint8 {
	if r < 2 {
		return uint8(8 + r)
	}
	return uint8(16 + r)
}

// decodeZcm decodes the Zcmp and Zcmt encodings of c.fsdsp (quadrant 2,
// funct3 101) for a hart with the extensions zc.
func decodeZcm(w uint32, xlen int, zc zcSet) inst {
	ill := inst{op: opIllegal}
	switch {
	case w>>10&7 == 0: // cm.jt, cm.jalt
		if zc&zcZcmt == 0 {
			return ill
		}
		index := w >> 2 & 0xff
		if index < 32 {
			return inst{op: opCMJT, imm: int64(index), itype: 11}
		}
		return inst{op: opCMJALT, rd: 1, imm: int64(index), itype: 9}
	case w>>10&7 == 3: // cm.mvsa01, cm.mva01s
		if zc&zcZcmp == 0 {
			return ill
		}
		r1, r2 := w>>7&7, w>>2&7
		switch w >> 5 & 3 {
		case 1:
			if r1 == r2 {
				return ill // "For the encoding to be legal r1s' != r2s'"
			}
			return inst{op: opCMMVSA01, rs1: sreg(r1), rs2: sreg(r2)}
		case 3:
			return inst{op: opCMMVA01S, rs1: sreg(r1), rs2: sreg(r2)}
		}
		return ill
	}
	rlist := w >> 4 & 15
	if zc&zcZcmp == 0 || rlist < 4 { // rlist 0 to 3: reserved (cm.push.e, ...)
		return ill
	}
	d := inst{rm: uint8(rlist), imm: stackAdjBase(rlist, xlen) + int64(w>>2&3)*16}
	switch w >> 8 & 31 {
	case 0x18:
		d.op, d.rs1 = opCMPUSH, 2
	case 0x1a:
		d.op, d.rs1 = opCMPOP, 2
	case 0x1c:
		d.op, d.itype = opCMPOPRETZ, 13
	case 0x1e:
		d.op, d.itype = opCMPOPRET, 13
	default:
		return ill
	}
	return d
}

func init() {
	kindOfOp[opCMPUSH] = pmu.KindStore
	kindOfOp[opCMPOP] = pmu.KindLoad
	kindOfOp[opCMPOPRETZ] = pmu.KindReturn
	kindOfOp[opCMPOPRET] = pmu.KindReturn
	kindOfOp[opCMJT] = pmu.KindJump
	kindOfOp[opCMJALT] = pmu.KindCall
}

// execZcm executes the operations of Zcmp and Zcmt (execExt calls it).
// It returns the next pc, the itype and false when an exception was
// recorded.
func (h *Hart) execZcm(d *inst, npc uint64) (uint64, uint8, bool) {
	x := &h.x
	switch d.op {
	case opCMMVSA01:
		a0, a1 := x[10], x[11]
		x[d.rs1&31], x[d.rs2&31] = a0, a1
		return npc, 0, true
	case opCMMVA01S:
		v1, v2 := x[d.rs1&31], x[d.rs2&31]
		x[10], x[11] = v1, v2
		return npc, 0, true
	case opCMJT, opCMJALT:
		size := uint64(h.xlen / 8)
		t, ok := h.fetchTable((h.csr.jvt&^63 + uint64(d.imm)*size) & h.amask)
		if !ok {
			return 0, 0, false
		}
		if d.op == opCMJALT {
			x[1] = h.sext32(npc)
		}
		return t &^ 1 & h.amask, d.itype, true
	case opCMPUSH:
		regs, size := zcmRegs[d.rm&15], uint64(h.xlen/8)
		sp := x[2]
		addr := sp - size
		for _, r := range regs {
			if !h.storeSlow(addr&h.amask, size, x[r]) {
				return 0, 0, false
			}
			addr -= size
		}
		x[2] = h.sext32(sp - uint64(d.imm))
		return npc, 0, true
	}
	// cm.pop, cm.popretz, cm.popret
	regs, size := zcmRegs[d.rm&15], uint64(h.xlen/8)
	sp := x[2]
	addr := sp + uint64(d.imm) - size
	var v [13]uint64
	for i := range regs {
		w, ok := h.loadSlow(addr&h.amask, size)
		if !ok {
			return 0, 0, false
		}
		v[i] = h.sext32(w)
		addr -= size
	}
	for i, r := range regs {
		x[r] = v[i]
	}
	x[2] = h.sext32(sp + uint64(d.imm))
	if d.op == opCMPOP {
		return npc, 0, true
	}
	if d.op == opCMPOPRETZ {
		x[10] = 0
	}
	return x[1] &^ 1 & h.amask, d.itype, true
}

// zcmModel accounts a retired cm.push, cm.pop, cm.popret or cm.popretz
// (of kind k) in the event model: the instruction with its first access
// (a store for cm.push, a load for cm.pop; cm.popret and cm.popretz are
// returns, whose loads all come after), then each further access of its
// register list at the addresses execZcm used, computed from sp after the
// instruction. It returns the stall cycles.
func (h *Hart) zcmModel(m *pmu.Model, pc uint64, d *inst, npc uint64, k pmu.Kind, xlat uint8) uint64 {
	regs, size := zcmRegs[d.rm&15], uint64(h.xlen/8)
	write := d.op == opCMPUSH
	// the first access: sp-size before a push (sp+imm after it), sp+imm-size
	// before a pop (sp-size after it)
	addr := h.x[2] - size
	if write {
		addr += uint64(d.imm)
	}
	first := 0
	if d.op == opCMPUSH || d.op == opCMPOP {
		first = 1
	}
	stall := m.Retire(pc, d.size, k, addr&h.amask, npc, xlat)
	for i := first; i < len(regs); i++ {
		stall += m.Access((addr-uint64(i)*size)&h.amask, write, xlat&pmu.XlatData != 0)
	}
	return stall
}

// fetchTable reads the jump table entry at va (XLEN bits) as an
// instruction fetch, or records the fetch exception.
func (h *Hart) fetchTable(va uint64) (uint64, bool) {
	size := uint64(h.xlen / 8)
	pa, ok := h.translate(va, accFetch)
	if !ok {
		return 0, false
	}
	r := h.m.mem.find(pa)
	if r == nil || pa-r.base+size > uint64(len(r.mem)) || !h.pmpOK(pa, size, accFetch) {
		h.excCause, h.excTval = causeFetchAccess, va
		return 0, false
	}
	b := r.mem[pa-r.base:]
	if size == 4 {
		return uint64(binary.LittleEndian.Uint32(b)), true
	}
	return binary.LittleEndian.Uint64(b), true
}

// zcmClassOf is the timing class of a Zcmp or Zcmt operation.
func zcmClassOf(d *inst) uint8 {
	switch d.op {
	case opCMPUSH:
		return clStore
	case opCMPOP:
		return clLoad
	case opCMMVSA01, opCMMVA01S:
		return clALU
	}
	return clJump
}

// traceZcm reports to the observer the integer registers a Zcmp or Zcmt
// instruction wrote: the popped registers in the order they were loaded,
// sp, a0 (cm.popretz), ra (cm.jalt), the moved pair.
func (h *Hart) traceZcm(t Observer, d *inst) error {
	var regs [16]uint8
	n := 0
	switch d.op {
	case opCMPUSH:
		regs[0], n = 2, 1
	case opCMPOP, opCMPOPRET, opCMPOPRETZ:
		n = copy(regs[:], zcmRegs[d.rm&15])
		regs[n] = 2
		n++
		if d.op == opCMPOPRETZ {
			regs[n] = 10
			n++
		}
	case opCMMVSA01:
		regs[0], regs[1], n = d.rs1, d.rs2, 2
	case opCMMVA01S:
		regs[0], regs[1], n = 10, 11, 2
	case opCMJALT:
		regs[0], n = 1, 1
	}
	for _, r := range regs[:n] {
		if err := t.IntReg(h.id, int(r), h.Reg(int(r))); err != nil {
			return err
		}
	}
	return nil
}
