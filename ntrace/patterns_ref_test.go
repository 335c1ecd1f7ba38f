package ntrace

import "math/bits"

// The reference record planner: the encoder's HistPatterns planner as it
// was before it was made incremental (a rescan of every pattern length at
// every position, a scheduling ring per length, divisions), kept verbatim
// under other names as the oracle whose output bytes the production
// planner (patternState) must reproduce exactly. Only tests use it, through
// Encoder.refPat.

const (
	refPatWindow    = 2048
	refPatLookahead = 160
	refPatMinRun    = 8
	refPatMaxBits   = 31
	refPatBufBits   = 2 * refPatWindow
)

// refBitBuf is a FIFO of bits.
type refBitBuf struct {
	w    [refPatBufBits/64 + 2]uint64
	head int // index of the first bit
	n    int // number of bits
}

func (b *refBitBuf) push(bit uint64) {
	i := b.head + b.n
	if i >= refPatBufBits {
		b.compact()
		i = b.head + b.n
	}
	b.w[i>>6] |= bit << (i & 63)
	b.n++
}

func (b *refBitBuf) compact() {
	words := b.head >> 6
	if words == 0 {
		return
	}
	copy(b.w[:], b.w[words:])
	for i := len(b.w) - words; i < len(b.w); i++ {
		b.w[i] = 0
	}
	b.head -= words << 6
}

func (b *refBitBuf) get(i int) uint64 {
	i += b.head
	return b.w[i>>6] >> (i & 63) & 1
}

func (b *refBitBuf) drop(k int) {
	// clear dropped bits so pushes can OR into zeroed storage
	for j := 0; j < k; j++ {
		i := b.head + j
		b.w[i>>6] &^= 1 << (i & 63)
	}
	b.head += k
	b.n -= k
	if b.n == 0 {
		b.head = 0
	}
}

// record returns the HIST value (stop bit above) of the n bits at i.
func (b *refBitBuf) record(i, n int) uint64 {
	h := uint64(1)
	for j := 0; j < n; j++ {
		h = h<<1 | b.get(i+j)
	}
	return h
}

// refPlanner is the encoder's pattern search state.
type refPlanner struct {
	buf refBitBuf
	// active run: pattern of runLen bits (HIST value runHist), runCount
	// whole repeats so far, phase bits of the next repeat seen.
	active   bool
	runHist  uint64
	runLen   int
	runCount uint64
	phase    int
	// dynamic programming scratch space, reused
	cost    []int32
	choice  []refStep
	repAt   []bool
	nextRep []int32
	bits    []uint8
}

func (s *refPlanner) reset() {
	s.buf = refBitBuf{}
	s.active, s.runCount, s.phase = false, 0, 0
}

// patBit returns bit j (0 = oldest) of the active pattern.
func (s *refPlanner) patBit(j int) uint64 { return s.runHist >> uint(s.runLen-1-j) & 1 }

// add takes one branch outcome.
func (s *refPlanner) add(e *Encoder, bit uint64) error {

	if s.active {
		if bit == s.patBit(s.phase) {
			s.phase++
			if s.phase == s.runLen {
				s.phase = 0
				s.runCount++
				if s.runCount == e.cfg.hrepeatMax() {
					if err := s.emitRun(e); err != nil {
						return err
					}
					s.active = true // same pattern goes on
				}
			}
			return nil
		}
		// The run ends: report it; the partial repeat and this bit go
		// back to the buffer (which is empty while a run is active).
		if err := s.flushRun(e); err != nil {
			return err
		}
	}
	s.buf.push(bit)
	if s.buf.n >= refPatWindow {
		return s.decide(e, false)
	}
	return nil
}

// flushRun reports the active run and returns its partial repeat to the
// front of the buffer.
func (s *refPlanner) flushRun(e *Encoder) error {
	if !s.active {
		return nil
	}
	phase := s.phase
	hist, n := s.runHist, s.runLen
	if err := s.emitRun(e); err != nil {
		return err
	}
	s.active = false
	if phase > 0 {
		// Rebuild the buffer as partial bits followed by what it held.
		old := s.buf
		s.buf = refBitBuf{}
		for j := 0; j < phase; j++ {
			s.buf.push(hist >> uint(n-1-j) & 1)
		}
		for j := 0; j < old.n; j++ {
			s.buf.push(old.get(j))
		}
	}
	return nil
}

// emitRun sends the active run as one record and clears its count.
func (s *refPlanner) emitRun(e *Encoder) error {
	if s.runCount == 0 {
		s.phase = 0
		return nil
	}
	m := &e.msg
	m.Reset(TCodeResourceFull)
	if s.runCount == 1 {
		m.Set(FieldRCODE, RCodeHist).Set(FieldRDATA, s.runHist)
	} else {
		m.Set(FieldRCODE, RCodeHistRepeat).Set(FieldRDATA, s.runHist).Set(FieldHREPEAT, s.runCount)
	}
	s.runCount, s.phase = 0, 0
	return e.emit(e.curTime)
}

// refRecordBytes is the size of a ResourceFull message carrying l history
// bits (RCODE and two RDATA bits share the second byte), plus the HREPEAT
// field when r > 1.
func refRecordBytes(l int, r uint64) int {
	n := 2
	if l > 1 {
		n += (l - 1 + 5) / 6
	}
	if r > 1 {
		n += (bits.Len64(r) + 5) / 6
	}
	return n
}

// refRepeatBytes is the size of an HREPEAT field holding r.
func refRepeatBytes(r uint64) int32 {
	switch {
	case r < 1<<6:
		return 1
	case r < 1<<12:
		return 2
	}
	return 3
}

// refHistFieldBytes is the size of a HIST field of k history bits in a flow
// message (it starts on a byte boundary).
func refHistFieldBytes(k int) int { return (k + 1 + 5) / 6 }

// decide parses the buffered outcomes into ResourceFull records by
// dynamic programming, minimising bytes: each record is either up to 31
// plain bits or a pattern of up to 31 bits repeated HREPEAT times. When
// final is set (a flow message is due) it parses everything, leaving at
// most 31 bits for the message's HIST field; otherwise it waits for a full
// window and commits the first half of the optimal parse, or switches to
// run mode when a repeat reaches the end of the buffer.
func (s *refPlanner) decide(e *Encoder, final bool) error {
	for !s.active && s.buf.n > 0 {
		n := s.buf.n
		if !final && n < refPatWindow || final && n <= refPatMaxBits {
			return nil
		}
		plan := s.plan(e, final)
		limit := n - refPatLookahead
		if final {
			limit = n
		}
		i := 0
		for i < n && (i < limit || final) {
			st := plan[i]
			if st.len == 0 {
				break // the rest goes to the message's HIST field
			}
			if st.reps > 1 && i+int(st.reps)*st.len+st.len > n && !final {
				// The pattern may go on: continue it with the next outcomes.
				s.buf.drop(i)
				return s.startRun(e, st.len, st.reps)
			}
			if err := s.emitRecord(e, i, st.len, st.reps); err != nil {
				return err
			}
			i += st.len * int(st.reps)
		}
		s.buf.drop(i)
		if final || i == 0 {
			return nil
		}
	}
	return nil
}

// refStep is one record of a parse: len bits repeated reps times.
type refStep struct {
	len  int
	reps uint64
}

// plan returns, for each position of the buffer, the first record of the
// cheapest parse from there to the end.
func (s *refPlanner) plan(e *Encoder, final bool) []refStep {
	n := s.buf.n

	if cap(s.cost) < n+1 {
		s.cost = make([]int32, n+1)
		s.choice = make([]refStep, n+1)
		s.repAt = make([]bool, n+1)
		s.nextRep = make([]int32, n+1)
		s.bits = make([]uint8, n+refPatMaxBits+1)
	}
	cost, choice, repAt, bit := s.cost[:n+1], s.choice[:n+1], s.repAt[:n+1], s.bits[:n+refPatMaxBits+1]
	nextRep := s.nextRep[:n+1]
	for i := 0; i < n; i++ {
		bit[i] = uint8(s.buf.get(i))
	}
	for i := n; i < len(bit); i++ {
		bit[i] = 2 // never equal to a real outcome
	}
	// One backward pass. For every pattern length l, brk[l] is the first
	// position k >= i whose bit differs from the one l later, so the bits
	// from i on repeat with period l for brk[l]-i+l bits. A length becomes
	// eligible (worth a repeat record) when that run reaches refPatThreshold;
	// the position where it will is scheduled when the run starts, so each
	// refStep only touches the lengths whose run breaks there.
	// nextRep[i] is the first position after i where some pattern repeats.
	var brk [refPatMaxBits + 1]int32
	var sched [64]uint32
	var elig uint32 // lengths eligible at position i
	var w uint64    // bits i..i+63, bit 0 = bit i
	hmax := e.cfg.hrepeatMax()
	cost[n] = 0
	choice[n] = refStep{}
	repAt[n] = false
	nextRep[n] = int32(n + refPatMaxBits + 1)
	for i := n - 1; i >= 0; i-- {
		w = w<<1 | uint64(bit[i])
		neq := uint32(w^-(w&1)) &^ 1 // lengths l whose bit i+l differs from bit i
		if rest := n - i; rest <= refPatMaxBits {
			neq |= ^uint32(0) << uint(rest) &^ 1 // past the buffer: no repeat
		}
		elig &^= neq
		for x := neq; x != 0; x &= x - 1 {
			l := bits.TrailingZeros32(x)
			brk[l] = int32(i)
			if j := i - int(refPatThreshold[l]); j >= 0 {
				sched[j&63] |= 1 << uint(l)
			}
		}
		if f := sched[i&63]; f != 0 {
			sched[i&63] = 0
			for x := f; x != 0; x &= x - 1 {
				l := bits.TrailingZeros32(x)
				if brk[l]-int32(i) == int32(refPatThreshold[l]) {
					elig |= 1 << uint(l)
				}
			}
		}
		rest := n - i
		best := int32(1 << 30)
		var bs refStep
		if rest <= refPatMaxBits {
			if final {
				best = int32(refHistFieldBytes(rest))
			} else {
				best = refPlainBytes[rest] // provisional: the window will move on
			}
		}
		maxL := refPatMaxBits
		el := elig
		if rest < maxL {
			maxL = rest
			el &= 1<<(maxL+1) - 1
		}
		repAt[i] = el != 0
		// nextRep chains the starts of repeating stretches after i (a
		// position that repeats while the one before it does not).
		if repAt[i+1] && !repAt[i] {
			nextRep[i] = int32(i + 1)
		} else {
			nextRep[i] = nextRep[i+1]
		}
		// In a run of period p every multiple of p repeats too: of those
		// only p itself (most repeats) and the longest multiple (fewest)
		// are worth trying.
		p0 := bits.TrailingZeros32(el)
		longest := maxL / max(p0, 1) * p0
		for ; el != 0; el &= el - 1 {
			l := bits.TrailingZeros32(el)
			if l != p0 && l != longest && l%p0 == 0 {
				continue
			}
			r := uint64((l + int(brk[l]) - i) / l)
			if r > hmax {
				r = hmax
			}
			if c := refPlainBytes[l] + refRepeatBytes(r) + cost[i+int(r)*l]; c < best {
				best, bs = c, refStep{l, r}
			}
			if r > 2 {
				if c := refPlainBytes[l] + refRepeatBytes(r-1) + cost[i+int(r-1)*l]; c < best {
					best, bs = c, refStep{l, r - 1}
				}
			}
		}
		// Plain records: the longest, or one that ends where a repeating
		// stretch starts (shorter plain records elsewhere rarely save a
		// byte), or any near the end of the buffer.
		if rest <= 2*refPatMaxBits {
			for l := 1; l <= maxL; l++ {
				if c := refPlainBytes[l] + cost[i+l]; c < best {
					best, bs = c, refStep{l, 1}
				}
			}
		} else {
			if c := refPlainBytes[maxL] + cost[i+maxL]; c < best {
				best, bs = c, refStep{maxL, 1}
			}
			for j := int(nextRep[i]); j-i < maxL; j = int(nextRep[j]) {
				if c := refPlainBytes[j-i] + cost[j]; c < best {
					best, bs = c, refStep{j - i, 1}
				}
			}
		}
		cost[i], choice[i] = best, bs
	}
	return choice
}

// refPatThreshold[l] is how many bits after the first l must repeat for a
// pattern of l bits to be worth a record: two whole repeats, and at least
// refPatMinRun bits in all.
var refPatThreshold = func() (t [refPatMaxBits + 1]uint8) {
	for l := 1; l <= refPatMaxBits; l++ {
		t[l] = uint8(max(l, refPatMinRun-l))
	}
	return
}()

// refPlainBytes[l] is refRecordBytes(l, 1).
var refPlainBytes = func() (t [refPatMaxBits + 1]int32) {
	for l := 1; l <= refPatMaxBits; l++ {
		t[l] = int32(refRecordBytes(l, 1))
	}
	return
}()

// emitRecord sends the record of l bits at buffer position i, repeated r
// times.
func (s *refPlanner) emitRecord(e *Encoder, i, l int, r uint64) error {
	m := &e.msg
	m.Reset(TCodeResourceFull)
	if r == 1 {
		m.Set(FieldRCODE, RCodeHist).Set(FieldRDATA, s.buf.record(i, l))
	} else {
		m.Set(FieldRCODE, RCodeHistRepeat).Set(FieldRDATA, s.buf.record(i, l)).Set(FieldHREPEAT, r)
	}
	return e.emit(e.curTime)
}

// startRun makes the pattern of l bits at the front of the buffer an
// active run of reps repeats and feeds it the rest of the buffer.
func (s *refPlanner) startRun(e *Encoder, l int, reps uint64) error {
	s.runHist, s.runLen, s.runCount, s.phase = s.buf.record(0, l), l, reps, 0
	s.active = true
	s.buf.drop(int(reps) * l)
	return s.replay(e)
}

// replay feeds the buffered bits through the active run: bits that match
// the pattern extend it; the first mismatch ends it.
func (s *refPlanner) replay(e *Encoder) error {
	old := s.buf
	s.buf = refBitBuf{}
	for j := 0; j < old.n; j++ {
		bit := old.get(j)
		if !s.active {
			s.buf.push(bit)
			continue
		}
		if bit == s.patBit(s.phase) {
			s.phase++
			if s.phase == s.runLen {
				s.phase = 0
				s.runCount++
				if s.runCount == e.cfg.hrepeatMax() {
					if err := s.emitRun(e); err != nil {
						return err
					}
					s.active = true
				}
			}
			continue
		}
		if err := s.flushRun(e); err != nil {
			return err
		}
		s.buf.push(bit)
	}
	return nil
}

// take reports everything but the last (at most 31) outcomes and returns
// those as the HIST field of the flow message being sent.
func (s *refPlanner) take(e *Encoder) (uint64, error) {
	if err := s.flushRun(e); err != nil {
		return 0, err
	}
	if err := s.decide(e, true); err != nil {
		return 0, err
	}
	if err := s.flushRun(e); err != nil {
		return 0, err
	}
	for s.buf.n > refPatMaxBits {
		m := &e.msg
		m.Reset(TCodeResourceFull)
		m.Set(FieldRCODE, RCodeHist).Set(FieldRDATA, s.buf.record(0, refPatMaxBits))
		s.buf.drop(refPatMaxBits)
		if err := e.emit(e.curTime); err != nil {
			return 0, err
		}
	}
	h := s.buf.record(0, s.buf.n)
	s.buf.drop(s.buf.n)
	return h, nil
}
