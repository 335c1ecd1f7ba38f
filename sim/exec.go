package sim

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// step runs the hart for up to n instructions, as Spike's
// processor_t::step does: pending interrupts are taken before the first
// instruction and after every serializing instruction, and any trap, wfi
// or halt ends the step early (the remaining steps are lost).
func (h *Hart) step(n uint64) {
	if h.halted || h.fw != nil && h.fw.parked {
		return
	}
	h.selectTLB() // loaders set the privilege directly
	defer func() {
		if r := recover(); r != nil {
			h.fail(errorf("sim: internal error near pc %#x: %v", h.pc, r))
		}
	}()
	if h.waiting {
		if h.pendingInterrupts()&h.csr.mie == 0 {
			return
		}
		h.waiting = false
	}
	for n > 0 && !h.halted {
		if h.takeInterrupt() {
			return
		}
		lim := n
		if h.hpm.armed {
			lim = h.hpmLimit(n)
		}
		done, end := h.exec(lim)
		if h.hpm.armed {
			h.hpmCheck()
		}
		if end || done == 0 {
			return
		}
		n -= done
	}
}

// exec is the interpreter loop: it runs up to limit instructions and
// returns how many retired and whether the current step must end.
func (h *Hart) exec(limit uint64) (n uint64, end bool) {
	x := &h.x
	amask := h.amask
	pc := h.pc
	lsz := h.lastSize
	for n < limit {
		var d *inst
		var npc uint64
		var it uint8
		var a uint64 // rs1 before execution (for the observer)
		off := pc - h.fbase
		if off < pageSize-2 {
			d = &h.fpage.insts[off>>1]
			if d.op == opInvalid {
				if h.fpage == &noFetchPage {
					h.pc = pc
					if d = h.fetchSlow(pc); d == nil {
						goto exc
					}
				} else {
					h.fill(d, off)
				}
			}
		} else {
			h.pc = pc
			d = h.fetchSlow(pc)
			if d == nil {
				goto exc
			}
		}
		npc = pc + uint64(d.size)
		{
			a = x[d.rs1&31]
			b := x[d.rs2&31]
			rd := d.rd & 31
			switch d.op {
			case opADDI:
				x[rd] = a + uint64(d.imm)
			case opADD:
				x[rd] = a + b
			case opLUI:
				x[rd] = uint64(d.imm)
			case opAUIPC:
				x[rd] = pc + uint64(d.imm)
			case opJAL:
				x[rd] = npc
				npc = pc + uint64(d.imm)
				it = d.itype
			case opJALR:
				x[rd] = npc
				npc = (a + uint64(d.imm)) &^ 1
				it = d.itype
			case opBEQ:
				it = 4
				if a == b {
					npc, it = (pc+uint64(d.imm))&amask, 5
				}
			case opBNE:
				it = 4
				if a != b {
					npc, it = (pc+uint64(d.imm))&amask, 5
				}
			case opBLT:
				it = 4
				if int64(a) < int64(b) {
					npc, it = (pc+uint64(d.imm))&amask, 5
				}
			case opBGE:
				it = 4
				if int64(a) >= int64(b) {
					npc, it = (pc+uint64(d.imm))&amask, 5
				}
			case opBLTU:
				it = 4
				if a < b {
					npc, it = (pc+uint64(d.imm))&amask, 5
				}
			case opBGEU:
				it = 4
				if a >= b {
					npc, it = (pc+uint64(d.imm))&amask, 5
				}
			case opLB:
				va := (a + uint64(d.imm)) & amask
				e := &h.rtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift {
					x[rd] = uint64(int64(int8(e.page[va&pageMask])))
				} else if v, ok := h.loadSlow(va, 1); ok {
					x[rd] = uint64(int64(int8(v)))
				} else {
					goto exc
				}
			case opLBU:
				va := (a + uint64(d.imm)) & amask
				e := &h.rtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift {
					x[rd] = uint64(e.page[va&pageMask])
				} else if v, ok := h.loadSlow(va, 1); ok {
					x[rd] = v
				} else {
					goto exc
				}
			case opLH:
				va := (a + uint64(d.imm)) & amask
				e := &h.rtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift && va&1 == 0 {
					x[rd] = uint64(int64(int16(binary.LittleEndian.Uint16(e.page[va&pageMask:]))))
				} else if v, ok := h.loadSlow(va, 2); ok {
					x[rd] = uint64(int64(int16(v)))
				} else {
					goto exc
				}
			case opLHU:
				va := (a + uint64(d.imm)) & amask
				e := &h.rtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift && va&1 == 0 {
					x[rd] = uint64(binary.LittleEndian.Uint16(e.page[va&pageMask:]))
				} else if v, ok := h.loadSlow(va, 2); ok {
					x[rd] = v
				} else {
					goto exc
				}
			case opLW:
				va := (a + uint64(d.imm)) & amask
				e := &h.rtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift && va&3 == 0 {
					x[rd] = uint64(int64(int32(binary.LittleEndian.Uint32(e.page[va&pageMask:]))))
				} else if v, ok := h.loadSlow(va, 4); ok {
					x[rd] = uint64(int64(int32(v)))
				} else {
					goto exc
				}
			case opLWU:
				va := (a + uint64(d.imm)) & amask
				e := &h.rtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift && va&3 == 0 {
					x[rd] = uint64(binary.LittleEndian.Uint32(e.page[va&pageMask:]))
				} else if v, ok := h.loadSlow(va, 4); ok {
					x[rd] = v
				} else {
					goto exc
				}
			case opLD:
				va := (a + uint64(d.imm)) & amask
				e := &h.rtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift && va&7 == 0 {
					x[rd] = binary.LittleEndian.Uint64(e.page[va&pageMask:])
				} else if v, ok := h.loadSlow(va, 8); ok {
					x[rd] = v
				} else {
					goto exc
				}
			case opSB:
				va := (a + uint64(d.imm)) & amask
				e := &h.wtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift {
					e.page[va&pageMask] = byte(b)
				} else if h.pc = pc; !h.storeSlow(va, 1, b) {
					goto exc
				}
			case opSH:
				va := (a + uint64(d.imm)) & amask
				e := &h.wtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift && va&1 == 0 {
					binary.LittleEndian.PutUint16(e.page[va&pageMask:], uint16(b))
				} else if h.pc = pc; !h.storeSlow(va, 2, b) {
					goto exc
				}
			case opSW:
				va := (a + uint64(d.imm)) & amask
				e := &h.wtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift && va&3 == 0 {
					binary.LittleEndian.PutUint32(e.page[va&pageMask:], uint32(b))
				} else if h.pc = pc; !h.storeSlow(va, 4, b) {
					goto exc
				}
			case opSD:
				va := (a + uint64(d.imm)) & amask
				e := &h.wtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift && va&7 == 0 {
					binary.LittleEndian.PutUint64(e.page[va&pageMask:], b)
				} else if h.pc = pc; !h.storeSlow(va, 8, b) {
					goto exc
				}
			case opSLTI:
				x[rd] = b2u(int64(a) < d.imm)
			case opSLTIU:
				x[rd] = b2u(a < uint64(d.imm))
			case opXORI:
				x[rd] = a ^ uint64(d.imm)
			case opORI:
				x[rd] = a | uint64(d.imm)
			case opANDI:
				x[rd] = a & uint64(d.imm)
			case opSLLI:
				x[rd] = a << uint(d.imm)
			case opSRLI:
				x[rd] = a >> uint(d.imm)
			case opSRAI:
				x[rd] = uint64(int64(a) >> uint(d.imm))
			case opSUB:
				x[rd] = a - b
			case opSLL:
				x[rd] = a << (b & 63)
			case opSLT:
				x[rd] = b2u(int64(a) < int64(b))
			case opSLTU:
				x[rd] = b2u(a < b)
			case opXOR:
				x[rd] = a ^ b
			case opSRL:
				x[rd] = a >> (b & 63)
			case opSRA:
				x[rd] = uint64(int64(a) >> (b & 63))
			case opOR:
				x[rd] = a | b
			case opAND:
				x[rd] = a & b
			case opADDIW:
				x[rd] = uint64(int64(int32(a + uint64(d.imm))))
			case opSLLIW:
				x[rd] = uint64(int64(int32(uint32(a) << uint(d.imm))))
			case opSRLIW:
				x[rd] = uint64(int64(int32(uint32(a) >> uint(d.imm))))
			case opSRAIW:
				x[rd] = uint64(int64(int32(a) >> uint(d.imm)))
			case opADDW:
				x[rd] = uint64(int64(int32(a + b)))
			case opSUBW:
				x[rd] = uint64(int64(int32(a - b)))
			case opSLLW:
				x[rd] = uint64(int64(int32(uint32(a) << (b & 31))))
			case opSRLW:
				x[rd] = uint64(int64(int32(uint32(a) >> (b & 31))))
			case opSRAW:
				x[rd] = uint64(int64(int32(a) >> (b & 31)))
			case opFENCE:
			case opMUL:
				x[rd] = a * b
			case opMULH:
				hi, _ := bits.Mul64(a, b)
				if int64(a) < 0 {
					hi -= b
				}
				if int64(b) < 0 {
					hi -= a
				}
				x[rd] = hi
			case opMULHSU:
				hi, _ := bits.Mul64(a, b)
				if int64(a) < 0 {
					hi -= b
				}
				x[rd] = hi
			case opMULHU:
				hi, _ := bits.Mul64(a, b)
				x[rd] = hi
			case opDIV:
				switch {
				case b == 0:
					x[rd] = ^uint64(0)
				case int64(a) == math.MinInt64 && int64(b) == -1:
					x[rd] = a
				default:
					x[rd] = uint64(int64(a) / int64(b))
				}
			case opDIVU:
				if b == 0 {
					x[rd] = ^uint64(0)
				} else {
					x[rd] = a / b
				}
			case opREM:
				switch {
				case b == 0:
					x[rd] = a
				case int64(a) == math.MinInt64 && int64(b) == -1:
					x[rd] = 0
				default:
					x[rd] = uint64(int64(a) % int64(b))
				}
			case opREMU:
				if b == 0 {
					x[rd] = a
				} else {
					x[rd] = a % b
				}
			case opMULW:
				x[rd] = uint64(int64(int32(a * b)))
			case opDIVW:
				p, q := int32(a), int32(b)
				switch {
				case q == 0:
					x[rd] = ^uint64(0)
				case p == math.MinInt32 && q == -1:
					x[rd] = uint64(int64(p))
				default:
					x[rd] = uint64(int64(p / q))
				}
			case opDIVUW:
				p, q := uint32(a), uint32(b)
				if q == 0 {
					x[rd] = ^uint64(0)
				} else {
					x[rd] = uint64(int64(int32(p / q)))
				}
			case opREMW:
				p, q := int32(a), int32(b)
				switch {
				case q == 0:
					x[rd] = uint64(int64(p))
				case p == math.MinInt32 && q == -1:
					x[rd] = 0
				default:
					x[rd] = uint64(int64(p % q))
				}
			case opREMUW:
				p, q := uint32(a), uint32(b)
				if q == 0 {
					x[rd] = uint64(int64(int32(p)))
				} else {
					x[rd] = uint64(int64(int32(p % q)))
				}
			case opSH1ADD:
				x[rd] = a<<1 + b
			case opSH2ADD:
				x[rd] = a<<2 + b
			case opSH3ADD:
				x[rd] = a<<3 + b
			case opADDUW:
				x[rd] = uint64(uint32(a)) + b
			case opSH1ADDUW:
				x[rd] = uint64(uint32(a))<<1 + b
			case opSH2ADDUW:
				x[rd] = uint64(uint32(a))<<2 + b
			case opSH3ADDUW:
				x[rd] = uint64(uint32(a))<<3 + b
			case opSLLIUW:
				x[rd] = uint64(uint32(a)) << uint(d.imm)
			case opANDN:
				x[rd] = a &^ b
			case opORN:
				x[rd] = a | ^b
			case opXNOR:
				x[rd] = ^(a ^ b)
			case opCLZ:
				x[rd] = uint64(bits.LeadingZeros64(a))
			case opCTZ:
				x[rd] = uint64(bits.TrailingZeros64(a))
			case opCPOP:
				x[rd] = uint64(bits.OnesCount64(a))
			case opCLZW:
				x[rd] = uint64(bits.LeadingZeros32(uint32(a)))
			case opCTZW:
				x[rd] = uint64(bits.TrailingZeros32(uint32(a)))
			case opCPOPW:
				x[rd] = uint64(bits.OnesCount32(uint32(a)))
			case opMAX:
				if int64(a) < int64(b) {
					a = b
				}
				x[rd] = a
			case opMAXU:
				if a < b {
					a = b
				}
				x[rd] = a
			case opMIN:
				if int64(b) < int64(a) {
					a = b
				}
				x[rd] = a
			case opMINU:
				if b < a {
					a = b
				}
				x[rd] = a
			case opSEXTB:
				x[rd] = uint64(int64(int8(a)))
			case opSEXTH:
				x[rd] = uint64(int64(int16(a)))
			case opZEXTH:
				x[rd] = uint64(uint16(a))
			case opROL:
				x[rd] = bits.RotateLeft64(a, int(b&63))
			case opROR:
				x[rd] = bits.RotateLeft64(a, -int(b&63))
			case opRORI:
				x[rd] = bits.RotateLeft64(a, -int(d.imm))
			case opROLW:
				x[rd] = uint64(int64(int32(bits.RotateLeft32(uint32(a), int(b&31)))))
			case opRORW:
				x[rd] = uint64(int64(int32(bits.RotateLeft32(uint32(a), -int(b&31)))))
			case opRORIW:
				x[rd] = uint64(int64(int32(bits.RotateLeft32(uint32(a), -int(d.imm)))))
			case opORCB:
				x[rd] = orcb(a)
			case opREV8:
				x[rd] = bits.ReverseBytes64(a)
			case opBCLR:
				x[rd] = a &^ (1 << (b & 63))
			case opBCLRI:
				x[rd] = a &^ (1 << uint(d.imm))
			case opBEXT:
				x[rd] = (a >> (b & 63)) & 1
			case opBEXTI:
				x[rd] = (a >> uint(d.imm)) & 1
			case opBINV:
				x[rd] = a ^ (1 << (b & 63))
			case opBINVI:
				x[rd] = a ^ (1 << uint(d.imm))
			case opBSET:
				x[rd] = a | (1 << (b & 63))
			case opBSETI:
				x[rd] = a | (1 << uint(d.imm))
			case opAUIPC32:
				x[rd] = uint64(int64(int32(pc + uint64(d.imm))))
			case opJAL32:
				x[rd] = uint64(int64(int32(npc)))
				npc = (pc + uint64(d.imm)) & amask
				it = d.itype
			case opJALR32:
				x[rd] = uint64(int64(int32(npc)))
				npc = (a + uint64(d.imm)) &^ 1 & amask
				it = d.itype
			case opMULH32:
				x[rd] = uint64(int64(int32((int64(int32(a)) * int64(int32(b))) >> 32)))
			case opMULHSU32:
				x[rd] = uint64(int64(int32((int64(int32(a)) * int64(uint32(b))) >> 32)))
			case opMULHU32:
				x[rd] = uint64(int64(int32((uint64(uint32(a)) * uint64(uint32(b))) >> 32)))
			case opSH1ADD32:
				x[rd] = uint64(int64(int32(a<<1 + b)))
			case opSH2ADD32:
				x[rd] = uint64(int64(int32(a<<2 + b)))
			case opSH3ADD32:
				x[rd] = uint64(int64(int32(a<<3 + b)))
			case opORCB32:
				x[rd] = uint64(int64(int32(orcb(uint64(uint32(a))))))
			case opREV832:
				x[rd] = uint64(int64(int32(bits.ReverseBytes32(uint32(a)))))
			case opBCLR32:
				x[rd] = uint64(int64(int32(a &^ (1 << (b & 31)))))
			case opBEXT32:
				x[rd] = (uint64(uint32(a)) >> (b & 31)) & 1
			case opBINV32:
				x[rd] = uint64(int64(int32(a ^ (1 << (b & 31)))))
			case opBSET32:
				x[rd] = uint64(int64(int32(a | (1 << (b & 31)))))
			case opBCLRI32:
				x[rd] = uint64(int64(int32(a &^ (1 << uint(d.imm)))))
			case opBINVI32:
				x[rd] = uint64(int64(int32(a ^ (1 << uint(d.imm)))))
			case opBSETI32:
				x[rd] = uint64(int64(int32(a | (1 << uint(d.imm)))))
			default:
				h.pc = pc
				h.lastSize = lsz
				var ok bool
				npc, it, ok = h.execSlow(d, pc, npc)
				if !ok {
					goto exc
				}
			}
		}
		x[0] = 0
		h.instret++
		h.cycle += uint64(d.cost)
		n++
		lsz = d.size
		if it != 0 {
			if it != 4 && it < itEnd {
				h.cycle += h.takenPenalty
			}
			if h.cf {
				h.tr.retireCF(pc, d.size, npc, it)
			}
		}
		if h.perInst {
			// the event model's fast paths (observe.go), else the hook
			if f := h.fast; f != nil && d.mk < mkSystem {
				if ea := (a + uint64(d.imm)) & amask; !f.Fast.Retire(pc, d.mk, ea) {
					h.cycle += f.Step(pc, d.mk, ea, npc)
				}
			} else {
				h.retireHook(pc, d, npc, it, a)
			}
		}
		pc = npc
		if h.stop {
			h.stop = false
			h.pc = pc
			h.lastSize = lsz
			return n, h.halted || h.waiting || h.m.done
		}
		continue
	exc:
		h.pc = pc
		h.lastSize = lsz
		h.takeTrap(h.excCause, h.excTval, false, d)
		return n, true
	}
	h.pc = pc
	h.lastSize = lsz
	return n, false
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func orcb(a uint64) uint64 {
	var r uint64
	for i := 0; i < 64; i += 8 {
		if (a>>uint(i))&0xff != 0 {
			r |= 0xff << uint(i)
		}
	}
	return r
}

// fill decodes the instruction at offset off of the fetch window into its
// cache slot.
func (h *Hart) fill(d *inst, off uint64) {
	raw := binary.LittleEndian.Uint32(h.fpage.mem[off:])
	*d = decode(raw, h.xlen)
	d.cost = h.m.timing.cost(d)
}

// fetchSlow fetches the instruction at pc when it is outside the fetch
// window (or at its last halfword): it translates pc, moves the window and
// returns the decoded instruction, or nil after recording a fetch
// exception.
func (h *Hart) fetchSlow(pc uint64) *inst {
	off := pc & pageMask
	if e := &h.itlb[(pc>>pageShift)&itlbMask]; e.tag == pc>>pageShift && off < pageSize-2 {
		// a page fetched from before: no walk, no PMP check
		h.fbase, h.fpage = pc&^pageMask, e.dp
		d := &e.dp.insts[off>>1]
		if d.op == opInvalid {
			h.fill(d, off)
		}
		return d
	}
	pa, ok := h.translate(pc, accFetch)
	if !ok {
		return nil
	}
	r := h.m.mem.find(pa)
	if r == nil || !h.pmpOK(pa, 2, accFetch) {
		h.excCause, h.excTval = causeFetchAccess, pc
		return nil
	}
	dp := h.m.mem.decPageFor(r, pa)
	if h.pmpOK(pa&^pageMask, pageSize, accFetch) {
		h.fbase = pc &^ pageMask
		h.fpage = dp
		e := &h.itlb[(pc>>pageShift)&itlbMask]
		e.tag, e.dp = pc>>pageShift, dp
	} else {
		h.dropFetchWindow()
	}
	if off < pageSize-2 {
		d := &dp.insts[off>>1]
		if d.op == opInvalid {
			raw := binary.LittleEndian.Uint32(dp.mem[off:])
			*d = decode(raw, h.xlen)
			d.cost = h.m.timing.cost(d)
		}
		return d
	}
	lo := uint32(binary.LittleEndian.Uint16(dp.mem[off:]))
	if lo&3 != 3 {
		d := &dp.insts[off>>1]
		if d.op == opInvalid {
			*d = decode(lo, h.xlen)
			d.cost = h.m.timing.cost(d)
		}
		return d
	}
	// a 32-bit instruction across a page boundary: never cached
	pa2, ok := h.translate(pc+2, accFetch)
	if !ok {
		return nil
	}
	r2 := h.m.mem.find(pa2)
	if r2 == nil || !h.pmpOK(pa2, 2, accFetch) {
		h.excCause, h.excTval = causeFetchAccess, pc+2
		return nil
	}
	hi := uint32(r2.mem[pa2-r2.base]) | uint32(r2.mem[pa2-r2.base+1])<<8
	h.xinst = decode(lo|hi<<16, h.xlen)
	h.xinst.cost = h.m.timing.cost(&h.xinst)
	return &h.xinst
}
