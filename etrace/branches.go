package etrace

import (
	"math/bits"

	"github.com/rvtrace/rvtrace/ingress"
)

// Branches encodes the blocks at the front of bs as Block would one by
// one, and returns how many it took (tracectl.Encoder.Blocks gives it the
// simulator's batches). The blocks that leave the packet decisions where
// they were take loops that keep the encoder's state in locals
// (quietBlocks): a block is one when the block cache holds it (a
// straight-line run of the image), it retired instructions without a
// trap, in the privilege level of the block before and without a context
// report, and the instruction before it (the last of the block before)
// changes nothing but the branch map and the path kept since the last
// anchor (the tail):
//
//   - a conditional branch whose outcome goes into the branch map (the
//     packet of a map it fills is sent there; with branch prediction, a
//     map of correct predictions turns into a branch count, a correct
//     prediction is counted, and the count a misprediction ends is sent
//     there too), or
//   - a jump the decoder infers (an inferable jump or call, any jump with
//     its sequentially inferable bit in that mode, a return the implicit
//     return stack predicts) whose target does not come back to the path
//     since the anchor.
//
// Nothing must be due either (a sync, a trap, a target or a notification
// to report, a resynchronisation period reached). It stops at the first
// block that is not one and gives that block to Block, and returns: the
// caller looks at its own state again before the next call. It also
// returns, without Block, after a block whose packet went on to the
// writer the encoder writes to (which may have changed the caller's
// state: bytes lost). The count is 0 only when bs is empty or the
// encoder failed before.
func (e *Encoder) Branches(bs []ingress.Block) (int, error) {
	i, stop := e.quietBlocks(bs)
	if i == len(bs) || stop || e.err != nil {
		return i, e.err
	}
	return i + 1, e.Block(&bs[i])
}

// quietBlocks takes the blocks at the front of bs that Branches takes
// without Block, and returns how many, and whether it stopped after a
// packet that went on to the writer (emitQuiet): the caller must look
// at its state before the next block.
func (e *Encoder) quietBlocks(bs []ingress.Block) (int, bool) {
	c := &e.curr
	if len(bs) == 0 || e.err != nil || e.img == nil && e.cfg.Params.ITypeWidth == 3 || e.noQuiet || e.noRuns || e.blind || !e.hasCurr || !e.started ||
		e.prevTrap || e.prevUpd || e.syncNext || e.notify || e.anchored ||
		e.period > 0 && e.resyncCount >= e.period || e.mapN >= 31 || e.pbc >= 31+0xffffffff-1 ||
		c.kind != stInst || c.notify || c.ctype != 0 || c.priv != e.prevPriv {
		return 0, false
	}
	if e.blocks.t == nil || e.blocks.gen != e.imgGen() {
		return 0, false
	}
	if e.bpred {
		return e.quietPredicted(bs)
	}
	return e.quietMap(bs)
}

// quietMap is quietBlocks without branch prediction: every outcome goes
// into the branch map. The blocks after a branch take mapRun; the block
// that fills the map and the blocks after a jump are taken here. The tail
// is left to quietDone and tailAt: brAt is the block after the last
// branch taken since the tail was last brought up to date (-1: none),
// where the tail restarts.
func (e *Encoder) quietMap(bs []ingress.Block) (int, bool) {
	tab, priv, cIt := e.blocks.t, e.curr.priv, e.curr.itype
	// the map as mapRun keeps it: the outcomes in reverse order (1: not
	// taken), below a leading 1
	m := uint64(1)<<e.mapN | uint64(bits.Reverse32(e.mapBits))>>(32-e.mapN)
	brAt, jumpAt, hereAt := -1, -1, -1
	anyBr, stop := false, false
	var n uint64 // instructions
	i := 0
	for e.err == nil {
		k := 0
		k, cIt, m, n = mapRun(bs[i:], tab, priv, cIt, m, n)
		if k > 0 {
			i += k
			brAt, anyBr = i-1, true // c was the anchor: the tail restarts at b
		}
		if i == len(bs) {
			break
		}
		b := &bs[i]
		en := e.quietBlock(b, priv)
		if en == nil {
			break
		}
		if bit := uint64(cIt) - uint64(ingress.ITypeNotTaken); bit <= 1 {
			// mapRun stopped at a full map: c's outcome completes it,
			// and doInst sends it in a format 1 packet (which the
			// resynchronisation period counts)
			if e.period > 0 && e.resyncCount+1 >= e.period {
				break
			}
			m = m<<1 | bit ^ 1
			p := Packet{Format: FormatBranch, Branches: 0, BranchMap: uint32(bits.Reverse64(m) >> 33)}
			stop = e.emitQuiet(&p)
			m = 1
			brAt, hereAt, anyBr = i, i, true
		} else {
			e.tailAt(bs, brAt)
			brAt = -1
			if !e.jumpTo(bs, i, cIt) {
				break
			}
			jumpAt = i
		}
		n += uint64(en.n)
		cIt = refined(b.IType, en.ref)
		i++
		if stop {
			break
		}
	}
	if i == 0 {
		return 0, false
	}
	if anyBr {
		e.mapCorrect = true // (and it stays so without prediction)
	}
	e.mapN = bits.Len64(m) - 1
	e.mapBits = uint32(bits.Reverse64(m) >> (64 - e.mapN)) // (0 when mapN is 0)
	e.quietDone(bs, i, n, cIt, brAt, jumpAt, hereAt)
	return i, stop
}

// quietBlock returns the block cache entry of b when it is a block
// quietBlocks takes (it retired instructions, in privilege level priv,
// without a trap or a context report, and the cache holds it), else nil.
// The cache's generation is checked by quietBlocks.
func (e *Encoder) quietBlock(b *ingress.Block, priv ingress.Priv) *blockEntry {
	if b.Priv != priv || b.CType != 0 || b.IType.IsTrap() {
		return nil
	}
	en := &e.blocks.t[blockSlot(b.IAddr)]
	if en.start != b.IAddr || en.shape != blockShape(b) {
		return nil
	}
	return en
}

// mapRun takes the blocks at the front of bs while the step before each
// is a conditional branch whose outcome goes into a map that does not
// become full, and returns how many it took. It counts their
// instructions (n), adds the outcomes to the map m (kept as quietMap
// says) and returns the refined itype of the last instruction taken
// (cIt); priv is the privilege level of the blocks, tab the block cache.
// It calls nothing, so that its state stays in registers.
func mapRun(bs []ingress.Block, tab *[1 << blockCacheBits]blockEntry, priv ingress.Priv, cIt ingress.IType,
	m, n uint64) (int, ingress.IType, uint64, uint64) {
	i := 0
	for ; i < len(bs); i++ {
		b := &bs[i]
		it := b.IType
		if b.Priv != priv || b.CType != 0 || uint8(it)-1 < 2 { // (a trap)
			break
		}
		start := b.IAddr
		en := &tab[blockSlot(start)]
		if en.start != start || en.shape != blockShape(b) { // (no entry for a block without instructions)
			break
		}
		// process(c, b's first step): c is the last instruction of the
		// block before
		bit := uint64(cIt) - uint64(ingress.ITypeNotTaken)
		if bit > 1 || m >= 1<<30 {
			break // not a branch; or the map becomes full: a packet
		}
		m = m<<1 | bit ^ 1
		// (process(b's first step, its last) is quiet)
		n += uint64(en.n)
		if !it.IsBranch() && en.ref != refineKeep && it != ingress.ITypeTrapReturn {
			it = en.ref // refined
		}
		cIt = it
	}
	return i, cIt, m, n
}

// quietPredicted is quietBlocks with branch prediction: a branch goes
// through quietPrediction.
func (e *Encoder) quietPredicted(bs []ingress.Block) (int, bool) {
	cIt, cAddr := e.curr.itype, e.curr.addr
	brAt, jumpAt, hereAt := -1, -1, -1
	stop := false
	var n uint64
	i := 0
	for i < len(bs) && e.err == nil {
		if k := e.predictedRun(bs[i:], &cIt, &cAddr, &n); k > 0 {
			i += k
			brAt = i - 1
			if i == len(bs) {
				break
			}
		}
		b := &bs[i]
		en := e.quietBlock(b, e.curr.priv)
		if en == nil {
			break
		}
		if bit := uint64(cIt) - uint64(ingress.ITypeNotTaken); bit <= 1 {
			var sent, ok bool
			sent, stop, ok = e.quietPrediction(cAddr, bit == 1)
			if !ok {
				break
			}
			brAt = i
			if sent {
				hereAt = i
			}
		} else {
			e.tailAt(bs, brAt)
			brAt = -1
			if !e.jumpTo(bs, i, cIt) {
				break
			}
			jumpAt = i
		}
		n += uint64(en.n)
		cIt, cAddr = refined(b.IType, en.ref), b.LastAddr()
		i++
		if stop {
			break
		}
	}
	if i == 0 {
		return 0, false
	}
	e.quietDone(bs, i, n, cIt, brAt, jumpAt, hereAt)
	return i, stop
}

// predictedRun is quietPredicted's loop for the blocks after branches
// that send no packet (the outcome goes into the map, which does not
// become full or becomes a count, or is a correct prediction counted):
// it takes them from the front of bs, with what it changes in locals and
// no call, and returns how many. *cIt and *cAddr are the refined itype
// and the address of the step before the first block, then of the last
// instruction taken; *n counts the instructions.
func (e *Encoder) predictedRun(bs []ingress.Block, cItp *ingress.IType, cAddrp, np *uint64) int {
	tab, t, mask, shift := e.blocks.t, e.pred.t, e.pred.mask, e.pred.shift
	priv, counts := e.curr.priv, !e.v026
	cIt, cAddr, n := *cItp, *cAddrp, *np
	mapBits, mapN, mapCorrect, pbc := e.mapBits, e.mapN, e.mapCorrect, e.pbc
	i := 0
	for ; i < len(bs); i++ {
		b := &bs[i]
		it := b.IType
		if b.Priv != priv || b.CType != 0 || uint8(it)-1 < 2 { // (a trap)
			break
		}
		en := &tab[blockSlot(b.IAddr)]
		if en.start != b.IAddr || en.shape != blockShape(b) {
			break
		}
		bit := uint64(cIt) - uint64(ingress.ITypeNotTaken) // 1: taken
		if bit > 1 {
			break
		}
		pi := (cAddr >> shift) & mask
		s := t[pi]
		correct := uint64(s>>1&1) == bit // (predictor.predict)
		if counts && pbc >= 31 {
			if !correct || pbc+1 >= 31+0xffffffff {
				break // the count is sent
			}
			pbc++
		} else {
			mc := (mapN == 0 || mapCorrect) && correct
			if mapN == 30 && !(counts && mc) {
				break // the full map is sent
			}
			if bit == 0 {
				mapBits |= 1 << uint(mapN)
			}
			mapN++
			mapCorrect = mc
			if mapN == 31 {
				// a full map of correct predictions becomes a count
				pbc, mapN, mapBits = 31, 0, 0
			}
		}
		t[pi] = predNext[s&3][bit] // (predictor.update)
		n += uint64(en.n)
		if !it.IsBranch() && en.ref != refineKeep && it != ingress.ITypeTrapReturn {
			it = en.ref // refined
		}
		cIt, cAddr = it, b.LastAddr()
	}
	*cItp, *cAddrp, *np = cIt, cAddr, n
	e.mapBits, e.mapN, e.mapCorrect, e.pbc = mapBits, mapN, mapCorrect, pbc
	return i
}

// quietPrediction is doInst for a conditional branch at addr (taken or
// not) with branch prediction, in quietBlocks: it reports whether doInst
// would send no packet but the count of correct predictions a
// misprediction ends or a full branch map (E-Trace 2.0: of branches not
// all predicted correctly, or else the map becomes a count), and when so
// does what doInst does and reports whether it sent a packet, and whether
// quietBlocks must stop after the block (emitQuiet).
func (e *Encoder) quietPrediction(addr uint64, taken bool) (sent, stop, ok bool) {
	correct := e.pred.predict(addr) == taken
	counts := !e.v026
	send := e.period == 0 || e.resyncCount+1 < e.period // a packet leaves the state quiet
	if counts && e.pbc >= 31 {
		if correct && e.pbc+1 >= 31+0xffffffff || !correct && !send {
			return false, false, false
		}
	} else if e.mapN == 30 && !(counts && (e.mapCorrect && correct)) && !send {
		return false, false, false
	}
	// as doInst
	e.pred.update(addr, taken)
	mispred := false
	if counts && e.pbc >= 31 {
		if correct {
			e.pbc++
		} else {
			mispred = true
		}
	} else {
		if !taken {
			e.mapBits |= 1 << uint(e.mapN)
		}
		if e.mapN == 0 {
			e.mapCorrect = true
		}
		e.mapN++
		e.mapCorrect = e.mapCorrect && correct
		if counts && e.mapN == 31 && e.mapCorrect {
			e.pbc, e.mapN, e.mapBits = 31, 0, 0
		}
	}
	switch {
	case mispred:
		p := Packet{Format: FormatExt, Subformat: SubBranchCount, BranchCount: uint32(e.pbc - 31), BranchFmt: BranchFmtNoAddr}
		e.pbc = 0
		return true, e.emitQuiet(&p), true
	case e.mapN == 31:
		p := Packet{Format: FormatBranch, Branches: 0, BranchMap: e.mapBits}
		e.mapN, e.mapBits = 0, 0
		return true, e.emitQuiet(&p), true
	}
	return false, false, true
}

// emitQuiet sends packet p as doInst does (emit), in quietBlocks, and
// reports whether quietBlocks must stop after the block: the packet went
// on to the writer the encoder writes to (the Writer flushed its buffer:
// what the caller of Branches looks at may have changed, as when that
// writer lost bytes), or the encoder failed.
func (e *Encoder) emitQuiet(p *Packet) bool {
	n := len(e.out.buf)
	e.emit(p, rNone)
	// Without a flush the frames are appended to the n bytes buffered;
	// a flush empties the buffer, and only a frame written after it (at
	// most maxPayload bytes and a header) can be left, after n bytes
	// that reached the flush threshold.
	return len(e.out.buf) <= n || e.err != nil
}

// tailAt restarts the tail at the block bs[brAt] (after a branch) unless
// brAt is -1, as advance does for a branch.
func (e *Encoder) tailAt(bs []ingress.Block, brAt int) {
	if brAt >= 0 {
		e.tail = e.tail[:0]
		e.tailOpen = true
		e.tailFrom = bs[brAt].IAddr
	}
}

// jumpTo is quietJump for the step before bs[i] (the last instruction
// of bs[i-1], or the step waiting in the pipeline), of refined itype it.
func (e *Encoder) jumpTo(bs []ingress.Block, i int, it ingress.IType) bool {
	cAddr, cNext, sij := e.curr.addr, e.curr.next, e.curr.sijump
	if i > 0 {
		p := &bs[i-1]
		cAddr, cNext, sij = p.LastAddr(), p.NextAddr(), p.SIJump
	}
	b := &bs[i]
	return e.quietJump(cAddr, cNext, it, sij, b.IAddr, b.LastAddr())
}

// quietDone leaves the state the i blocks taken (n instructions) leave,
// as Block leaves it, cIt being the refined itype of the last one's last
// instruction: the step waiting in the pipeline, the tail (brAt as in
// quietMap), what process keeps of the step before that one (its
// address; the return stack depth before it, which quietJump left in
// pDepth when it was a jump, jumpAt being the last block reached from a
// jump; whether a packet reported it, hereAt being the last block
// reached from a step that sent one), the counts.
func (e *Encoder) quietDone(bs []ingress.Block, i int, n uint64, cIt ingress.IType, brAt, jumpAt, hereAt int) {
	lb := &bs[i-1]
	last := lb.LastAddr()
	// process(b's first step, its last), or process(c, b's only step)
	pAddr, pDepth, pHere := lb.IAddr, e.stack.Depth(), false
	if lb.IAddr == last {
		pAddr = e.curr.addr
		if i >= 2 {
			pAddr = bs[i-2].LastAddr()
		}
		if jumpAt == i-1 {
			pDepth = e.pDepth
		}
		pHere = hereAt == i-1
	}
	e.tailAt(bs, brAt)
	e.curr = step{kind: stInst, itype: cIt, priv: lb.Priv, sijump: lb.SIJump, first: lb.IAddr == last, end: last,
		addr: last, next: lb.NextAddr(), context: lb.Context, time: lb.Time}
	e.pAddr, e.pDepth, e.pHere, e.here = pAddr, pDepth, pHere, false
	e.prevRetMiss = false
	e.st.Blocks += uint64(i)
	e.st.Instructions += n
}

// quietJump is quietBlocks for a step c that is no conditional branch
// (at cAddr, followed sequentially by cNext, of itype it, with sijump
// sij), followed by the block from lo to hi: it reports whether doInst
// would send no packet for c and change nothing but the return stack and
// the tail, and applies those changes when so; pDepth is then the depth
// of the stack before them.
func (e *Encoder) quietJump(cAddr, cNext uint64, it ingress.IType, sij bool, lo, hi uint64) bool {
	pop := false
	if it.Uninferable() && !(e.cfg.Options.SIJump && sij) {
		// only a return the implicit return stack predicts
		if !e.irOn || it != ingress.ITypeReturn || e.stack.Depth() == 0 || e.stackTop() != lo {
			return false
		}
		pop = true
	}
	// revisits: the decoder could not tell the two executions apart
	if e.tailOpen && lo <= cAddr && hi >= e.tailFrom || len(e.tail) >= maxTail {
		return false
	}
	for _, r := range e.tail {
		if lo <= r[1] && hi >= r[0] {
			return false
		}
	}
	// control
	e.pDepth = e.stack.Depth()
	if pop {
		e.irSeen |= 1 << (uint(e.stack.Depth()) & 63)
		e.stack.Pop()
		e.irSince = true
	}
	if e.irOn && it.Pushes() {
		e.stack.Push(cNext)
	}
	// advance
	if !(e.tailOpen && lo == cNext) {
		if e.tailOpen {
			e.tail = append(e.tail, [2]uint64{e.tailFrom, cAddr})
		}
		e.tailFrom, e.tailOpen = lo, true
	}
	return true
}
