package sim

import (
	"encoding/binary"
	"math"
	"math/bits"
	"unsafe"
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
		if h.pcl != nil {
			// the harts' PCs reach the lists turn by turn (one list
			// may take several harts' PCs)
			h.pcl.flush()
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

// Why the inner loop (run) stopped.
const (
	whyLimit uint8 = iota // limit instructions retired
	whyFetch              // the pc is outside the decoded window, or its slot is not decoded
	whyMem                // a load or store missed the TLB (or is misaligned)
	whySlow               // an operation of execSlow
	whyPost               // an instruction retired that the tracer or an observer must see
)

// pending is the instruction the inner loop left to exec's handlers.
type pending struct {
	d   *inst
	npc uint64 // the next pc (whyPost: after execution)
	a   uint64 // rs1 before execution
	it  uint8  // itype of the retirement (whyPost)
}

// exec is the interpreter: it runs up to limit instructions and returns
// how many retired and whether the current step must end.
//
// The inner loop (run) makes no calls: everything that needs one (a fetch
// outside the decoded window, a load or store that misses the TLB, the
// operations of execSlow, the tracer and observers) returns to exec,
// which calls and enters the loop again. Nothing is then live across a
// call inside the loop, so the compiler keeps its state in registers.
// Only the handlers can set h.stop, so the loop never tests it.
func (h *Hart) exec(limit uint64) (n uint64, end bool) {
	c := &h.cur
	for {
		var why uint8
		pc, n0 := h.pc, n
		if h.brBatch {
			// the loop records the jumps and branches it can (brs) and
			// leaves when its record is full; their blocks go to the
			// sink before anything else happens
			base := h.instret + limit - n0
			n, why, c.d = run[loopBatch](h, n, limit)
			if h.tr.nbr != 0 {
				h.tr.drain(base)
				if h.stop && why != whyPost {
					// the sink failed: stop before the instruction
					// the loop left at (whyPost: it retired, post
					// reports it and stops)
					h.stop = false
					h.dropXOne()
					return n, true
				}
			}
		} else {
			n, why, c.d = run[loopPlain](h, n, limit)
		}
		if h.pcl != nil {
			// the instructions the loop retired before the one it
			// stopped at (whyPost: that one retired too, post reports it)
			k := n - n0
			if why == whyPost {
				k--
			}
			h.pcl.straight(pc, k, h.fbase, h.fpage)
		}
		switch why {
		case whyLimit:
			h.dropXOne()
			return n, false
		case whyFetch:
			if !h.fetchMiss() {
				c.d = nil
				goto exc
			}
			continue
		case whyMem:
			c.it = 0
			if !h.memSlow(c.d, c.a) {
				goto exc
			}
			h.retired(c)
			n++
		case whySlow:
			var ok bool
			c.npc, c.it, ok = h.execSlow(c.d, h.pc, c.npc)
			if !ok {
				goto exc
			}
			h.retired(c)
			n++
		}
		h.post(c)
		if h.stop {
			h.stop = false
			h.dropXOne()
			return n, h.halted || h.waiting || h.m.done
		}
		continue
	exc:
		h.dropXOne()
		h.takeTrap(h.excCause, h.excTval, false, c.d)
		return n, true
	}
}

// retired does the inner loop's bookkeeping for an instruction a handler
// executed.
func (h *Hart) retired(c *pending) {
	h.x[0] = 0
	h.instret++
	h.cycle += uint64(c.d.cost)
	h.prevSize = h.lastSize
	h.lastSize = c.d.size
	if it := c.it; it != 0 && it != 4 && it < itEnd {
		h.cycle += h.takenPenalty
	}
}

// post reports the retirement of the instruction at h.pc (coalesced
// ingress blocks end at control transfers; the PC hook and observers see
// every retirement) and moves to the next.
func (h *Hart) post(c *pending) {
	d, pc, npc, it := c.d, h.pc, c.npc, c.it
	if h.pcl != nil {
		h.pcl.add(pc)
	}
	if it != 0 && h.cf {
		h.tr.retireCF(pc, d, npc, it)
	}
	if h.perInst {
		// the event model's fast paths (observe.go), else the hook
		if f := h.fast; f != nil && d.mk < mkSystem {
			if ea := (c.a + uint64(d.imm)) & h.amask; !f.Fast.Retire(pc, d.mk, ea) {
				h.cycle += f.Step(pc, d.mk, ea, npc)
			}
		} else {
			h.retireHook(pc, d, npc, it, c.a)
		}
	}
	h.pc = npc
}

// fetchMiss decodes the instruction at h.pc for the inner loop: in its
// slot of the fetch window, else (a 32-bit instruction across the page
// boundary, a page that PMP does not cover whole) in a window of its own
// (setXOne). False when a fetch exception was recorded.
func (h *Hart) fetchMiss() bool {
	pc := h.pc
	wasXOne := h.dropXOne()
	if off := pc - h.fbase; !wasXOne && off < pageSize-2 && h.fpage != &noFetchPage {
		h.fill(&h.fpage.insts[off>>1], off)
		return true
	}
	d := h.fetchSlow(pc)
	if d == nil {
		return false
	}
	if h.fpage == &noFetchPage || d != &h.fpage.insts[(pc-h.fbase)>>1] {
		h.setXOne(pc, d)
	}
	return true
}

// loopPlain and loopBatch select the instantiation of the interpreter's
// inner loop (run): the plain one, and the one that records the jumps and
// branches of the ingress port in h.tr.brs instead of leaving at each
// (Hart.brBatch). The choice is made at compile time (their sizes
// differ), so the plain loop's code is what it would be without the
// other.
type (
	loopPlain uint8
	loopBatch uint16
	loopMode  interface{ loopPlain | loopBatch }
)

// brBatchable has bit it set for every itype a jump or branch of the
// interpreter loop can report through the record of loopBatch: the
// conditional branches and the inferable jumps (an uninferable jump's
// sijump signal needs the instruction before it: it leaves the loop).
const brBatchable = 1<<4 | 1<<5 | 1<<9 | 1<<11 | 1<<15

// run is the interpreter's inner loop. It retires instructions until n
// reaches limit or one needs a handler (why), and leaves h.pc at the
// instruction it stopped at (whyPost: the one that retired); it returns
// that instruction and leaves the rest of its state in h.cur.
func run[M loopMode](h *Hart, n, limit uint64) (uint64, uint8, *inst) {
	var mode M
	x := &h.x
	pc := h.pc
	fbase, fp := h.fbase, h.fpage
	left := limit - n // instructions left: n and h.instret are brought up to date on the way out
	var (
		d      *inst
		npc, a uint64
		it     uint8
		why    uint8
	)
	for left != 0 {
		// A decoded slot is a whole instruction inside the page (a 32-bit
		// instruction across the page boundary is never cached).
		off := pc - fbase
		if off >= pageSize {
			why = whyFetch
			goto out
		}
		d = &fp.insts[off>>1]
		if d.op == opInvalid {
			why = whyFetch
			goto out
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
				goto cf
			case opJALR:
				x[rd] = npc
				npc = (a + uint64(d.imm)) &^ 1
				it = d.itype
				goto cf
			case opBEQ:
				it = 4
				if a == b {
					npc, it = (pc+uint64(d.imm))&h.amask, 5
				}
				goto cf
			case opBNE:
				it = 4
				if a != b {
					npc, it = (pc+uint64(d.imm))&h.amask, 5
				}
				goto cf
			case opBLT:
				it = 4
				if int64(a) < int64(b) {
					npc, it = (pc+uint64(d.imm))&h.amask, 5
				}
				goto cf
			case opBGE:
				it = 4
				if int64(a) >= int64(b) {
					npc, it = (pc+uint64(d.imm))&h.amask, 5
				}
				goto cf
			case opBLTU:
				it = 4
				if a < b {
					npc, it = (pc+uint64(d.imm))&h.amask, 5
				}
				goto cf
			case opBGEU:
				it = 4
				if a >= b {
					npc, it = (pc+uint64(d.imm))&h.amask, 5
				}
				goto cf
			case opLB:
				va := (a + uint64(d.imm)) & h.amask
				e := &h.rtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift {
					x[rd] = uint64(int64(int8(e.page[va&pageMask])))
				} else {
					why = whyMem
					goto out
				}
			case opLBU:
				va := (a + uint64(d.imm)) & h.amask
				e := &h.rtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift {
					x[rd] = uint64(e.page[va&pageMask])
				} else {
					why = whyMem
					goto out
				}
			case opLH:
				va := (a + uint64(d.imm)) & h.amask
				e := &h.rtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift && va&1 == 0 {
					x[rd] = uint64(int64(int16(binary.LittleEndian.Uint16(e.page[va&pageMask:]))))
				} else {
					why = whyMem
					goto out
				}
			case opLHU:
				va := (a + uint64(d.imm)) & h.amask
				e := &h.rtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift && va&1 == 0 {
					x[rd] = uint64(binary.LittleEndian.Uint16(e.page[va&pageMask:]))
				} else {
					why = whyMem
					goto out
				}
			case opLW:
				va := (a + uint64(d.imm)) & h.amask
				e := &h.rtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift && va&3 == 0 {
					x[rd] = uint64(int64(int32(binary.LittleEndian.Uint32(e.page[va&pageMask:]))))
				} else {
					why = whyMem
					goto out
				}
			case opLWU:
				va := (a + uint64(d.imm)) & h.amask
				e := &h.rtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift && va&3 == 0 {
					x[rd] = uint64(binary.LittleEndian.Uint32(e.page[va&pageMask:]))
				} else {
					why = whyMem
					goto out
				}
			case opLD:
				va := (a + uint64(d.imm)) & h.amask
				e := &h.rtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift && va&7 == 0 {
					x[rd] = binary.LittleEndian.Uint64(e.page[va&pageMask:])
				} else {
					why = whyMem
					goto out
				}
			case opSB:
				va := (a + uint64(d.imm)) & h.amask
				e := &h.wtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift {
					e.page[va&pageMask] = byte(b)
				} else {
					why = whyMem
					goto out
				}
			case opSH:
				va := (a + uint64(d.imm)) & h.amask
				e := &h.wtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift && va&1 == 0 {
					binary.LittleEndian.PutUint16(e.page[va&pageMask:], uint16(b))
				} else {
					why = whyMem
					goto out
				}
			case opSW:
				va := (a + uint64(d.imm)) & h.amask
				e := &h.wtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift && va&3 == 0 {
					binary.LittleEndian.PutUint32(e.page[va&pageMask:], uint32(b))
				} else {
					why = whyMem
					goto out
				}
			case opSD:
				va := (a + uint64(d.imm)) & h.amask
				e := &h.wtlb[(va>>pageShift)&tlbMask]
				if e.tag == va>>pageShift && va&7 == 0 {
					binary.LittleEndian.PutUint64(e.page[va&pageMask:], b)
				} else {
					why = whyMem
					goto out
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
			case opCPOP, opCPOPW:
				// execSlow: without POPCNT, bits.OnesCount is a call
				why = whySlow
				goto out
			case opCLZW:
				x[rd] = uint64(bits.LeadingZeros32(uint32(a)))
			case opCTZW:
				x[rd] = uint64(bits.TrailingZeros32(uint32(a)))
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
				npc = (pc + uint64(d.imm)) & h.amask
				it = d.itype
				goto cf
			case opJALR32:
				x[rd] = uint64(int64(int32(npc)))
				npc = (a + uint64(d.imm)) &^ 1 & h.amask
				it = d.itype
				goto cf
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
				why = whySlow
				goto out
			}
		}
		x[0] = 0
		h.cycle += uint64(d.cost)
		left--
		h.lastSize = d.size
		if h.perInst {
			// the event model's fast path (observe.go) needs no call
			// (Fast.Retire is inlined and changes nothing when it fails);
			// everything else is post's
			if f := h.fast; f == nil || d.mk >= mkSystem || !f.Fast.Retire(pc, d.mk, (a+uint64(d.imm))&h.amask) {
				it = 0
				why = whyPost
				goto out
			}
		}
		pc = npc
		continue
	cf:
		// a jump or branch (it: its itype)
		x[0] = 0
		h.cycle += uint64(d.cost)
		left--
		h.prevSize = h.lastSize
		h.lastSize = d.size
		if it != 4 && it < itEnd {
			h.cycle += h.takenPenalty
		}
		if unsafe.Sizeof(mode) == unsafe.Sizeof(loopBatch(0)) {
			// (brBatch: h.cf is set, h.perInst is not; it is at most 15)
			if k := h.tr.nbr; brBatchable>>(it&15)&1 != 0 && k < uint(len(h.tr.brs)) {
				r := &h.tr.brs[k]
				r.pc, r.npc, r.cycle, r.left, r.sizeIt = pc, npc, h.cycle, left, uint16(d.size)|uint16(it)<<8
				h.tr.nbr = k + 1
				pc = npc
				continue
			}
			why = whyPost
			goto out
		}
		if h.cf || h.perInst {
			why = whyPost
			goto out
		}
		pc = npc
	}
	h.pc = pc
	h.instret += limit - n
	return limit, whyLimit, nil
out:
	h.pc = pc
	h.cur.npc, h.cur.a, h.cur.it = npc, a, it
	h.instret += limit - n - left
	return limit - left, why, d
}

// setXOne makes the instruction d at pc, decoded outside the fetch
// window, the only one of a window of its own (the hart's scratch page),
// so that the interpreter loop executes it; the next fetch anywhere else
// in that page misses and drops it (dropXOne).
func (h *Hart) setXOne(pc uint64, d *inst) {
	if h.xpage == nil {
		h.xpage = new(decPage)
	}
	slot := (pc & pageMask) >> 1
	h.xpage.insts[slot] = *d
	h.xslot = slot
	h.fbase, h.fpage = pc&^pageMask, h.xpage
}

// dropXOne empties the scratch window of setXOne (the next fetch takes
// the slow path) and reports whether it was in use.
func (h *Hart) dropXOne() bool {
	if h.xpage == nil || h.fpage != h.xpage {
		return false
	}
	h.dropFetchWindow()
	return true
}

// memSlow performs the load or store d (rs1 holding a) that the
// interpreter loop could not do through the TLBs; false when an
// exception was recorded.
func (h *Hart) memSlow(d *inst, a uint64) bool {
	x := &h.x
	va := (a + uint64(d.imm)) & h.amask
	switch d.op {
	case opSB:
		return h.storeSlow(va, 1, x[d.rs2&31])
	case opSH:
		return h.storeSlow(va, 2, x[d.rs2&31])
	case opSW:
		return h.storeSlow(va, 4, x[d.rs2&31])
	case opSD:
		return h.storeSlow(va, 8, x[d.rs2&31])
	}
	ld := slowLoads[d.op]
	v, ok := h.loadSlow(va, ld.size)
	if ok {
		if sh := 64 - 8*ld.size; ld.signed && sh > 0 {
			v = uint64(int64(v<<sh) >> sh)
		}
		x[d.rd&31] = v
	}
	return ok
}

// slowLoads gives the width and signedness of each load memSlow handles.
var slowLoads = [...]struct {
	size   uint64
	signed bool
}{
	opLB: {1, true}, opLBU: {1, false}, opLH: {2, true}, opLHU: {2, false},
	opLW: {4, true}, opLWU: {4, false}, opLD: {8, false},
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
	*d = h.decode(raw)
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
	h.xgen++ // a walk: the translation of pc may differ from the last one
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
			*d = h.decode(raw)
			d.cost = h.m.timing.cost(d)
		}
		return d
	}
	lo := uint32(binary.LittleEndian.Uint16(dp.mem[off:]))
	if lo&3 != 3 {
		d := &dp.insts[off>>1]
		if d.op == opInvalid {
			*d = h.decode(lo)
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
	h.xinst = h.decode(lo | hi<<16)
	h.xinst.cost = h.m.timing.cost(&h.xinst)
	return &h.xinst
}
