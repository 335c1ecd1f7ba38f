package ntrace

import "math/bits"

// Repeated-history record planning (Config.HistPatterns).
//
// The specification allows any sequence of ResourceFull records whose
// concatenated history equals the branch outcomes ("Repeated History
// Optimization"). An encoder that always fills the 31-bit HIST register
// before reporting only finds repeats when a loop's branch pattern lines up
// with the register. This one buffers outcomes and chooses the records by
// dynamic programming over the buffer: each record is up to 31 plain bits
// or a pattern of up to 31 bits with an HREPEAT count, and the parse with
// the fewest bytes wins. Short plain records align the parse to the start
// of a loop, and a pattern still repeating at the end of the buffer keeps
// counting the outcomes that follow ("run" mode) without buffering them,
// so a loop of any length costs one record per HREPEAT maximum.

const (
	patWindow    = 2048 // outcomes buffered before a decision
	patLookahead = 160  // outcomes kept back as context for the next decision
	// patMinRun is the shortest repeat worth a record: shorter ones cost
	// more bytes than the plain bits they replace (a record of 31 plain
	// bits is 7 bytes).
	patMinRun  = 8
	patMaxBits = 31 // history bits in one record (register of 32 with stop bit)
	patBufBits = 2 * patWindow
)

// bitBuf is a FIFO of bits.
type bitBuf struct {
	w    [patBufBits/64 + 2]uint64
	head int // index of the first bit
	n    int // number of bits
}

func (b *bitBuf) push(bit uint64) {
	i := b.head + b.n
	if i >= patBufBits {
		b.compact()
		i = b.head + b.n
	}
	b.w[i>>6] |= bit << (i & 63)
	b.n++
}

func (b *bitBuf) compact() {
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

func (b *bitBuf) get(i int) uint64 {
	i += b.head
	return b.w[i>>6] >> (i & 63) & 1
}

func (b *bitBuf) drop(k int) {
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
func (b *bitBuf) record(i, n int) uint64 {
	h := uint64(1)
	for j := 0; j < n; j++ {
		h = h<<1 | b.get(i+j)
	}
	return h
}

// patternState is the encoder's pattern search state.
type patternState struct {
	buf bitBuf
	// active run: pattern of runLen bits (HIST value runHist), runCount
	// whole repeats so far, phase bits of the next repeat seen.
	active   bool
	runHist  uint64
	runLen   int
	runCount uint64
	phase    int
	// dynamic programming scratch space, reused
	cost    []int32
	choice  []step
	repAt   []bool
	nextRep []int32
	bits    []uint8
}

func (s *patternState) reset() {
	s.buf = bitBuf{}
	s.active, s.runCount, s.phase = false, 0, 0
}

// patBit returns bit j (0 = oldest) of the active pattern.
func (s *patternState) patBit(j int) uint64 { return s.runHist >> uint(s.runLen-1-j) & 1 }

// add takes one branch outcome.
func (s *patternState) add(e *Encoder, bit uint64) error {

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
	if s.buf.n >= patWindow {
		return s.decide(e, false)
	}
	return nil
}

// flushRun reports the active run and returns its partial repeat to the
// front of the buffer.
func (s *patternState) flushRun(e *Encoder) error {
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
		s.buf = bitBuf{}
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
func (s *patternState) emitRun(e *Encoder) error {
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

// recordBytes is the size of a ResourceFull message carrying l history
// bits (RCODE and two RDATA bits share the second byte), plus the HREPEAT
// field when r > 1.
func recordBytes(l int, r uint64) int {
	n := 2
	if l > 1 {
		n += (l - 1 + 5) / 6
	}
	if r > 1 {
		n += (bits.Len64(r) + 5) / 6
	}
	return n
}

// repeatBytes is the size of an HREPEAT field holding r.
func repeatBytes(r uint64) int32 {
	switch {
	case r < 1<<6:
		return 1
	case r < 1<<12:
		return 2
	}
	return 3
}

// histFieldBytes is the size of a HIST field of k history bits in a flow
// message (it starts on a byte boundary).
func histFieldBytes(k int) int { return (k + 1 + 5) / 6 }

// decide parses the buffered outcomes into ResourceFull records by
// dynamic programming, minimising bytes: each record is either up to 31
// plain bits or a pattern of up to 31 bits repeated HREPEAT times. When
// final is set (a flow message is due) it parses everything, leaving at
// most 31 bits for the message's HIST field; otherwise it waits for a full
// window and commits the first half of the optimal parse, or switches to
// run mode when a repeat reaches the end of the buffer.
func (s *patternState) decide(e *Encoder, final bool) error {
	for !s.active && s.buf.n > 0 {
		n := s.buf.n
		if !final && n < patWindow || final && n <= patMaxBits {
			return nil
		}
		plan := s.plan(e, final)
		limit := n - patLookahead
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

// step is one record of a parse: len bits repeated reps times.
type step struct {
	len  int
	reps uint64
}

// plan returns, for each position of the buffer, the first record of the
// cheapest parse from there to the end.
func (s *patternState) plan(e *Encoder, final bool) []step {
	n := s.buf.n

	if cap(s.cost) < n+1 {
		s.cost = make([]int32, n+1)
		s.choice = make([]step, n+1)
		s.repAt = make([]bool, n+1)
		s.nextRep = make([]int32, n+1)
		s.bits = make([]uint8, n+patMaxBits+1)
	}
	cost, choice, repAt, bit := s.cost[:n+1], s.choice[:n+1], s.repAt[:n+1], s.bits[:n+patMaxBits+1]
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
	// eligible (worth a repeat record) when that run reaches patThreshold;
	// the position where it will is scheduled when the run starts, so each
	// step only touches the lengths whose run breaks there.
	// nextRep[i] is the first position after i where some pattern repeats.
	var brk [patMaxBits + 1]int32
	var sched [64]uint32
	var elig uint32 // lengths eligible at position i
	var w uint64    // bits i..i+63, bit 0 = bit i
	hmax := e.cfg.hrepeatMax()
	cost[n] = 0
	choice[n] = step{}
	repAt[n] = false
	nextRep[n] = int32(n + patMaxBits + 1)
	for i := n - 1; i >= 0; i-- {
		w = w<<1 | uint64(bit[i])
		neq := uint32(w^-(w&1)) &^ 1 // lengths l whose bit i+l differs from bit i
		if rest := n - i; rest <= patMaxBits {
			neq |= ^uint32(0) << uint(rest) &^ 1 // past the buffer: no repeat
		}
		elig &^= neq
		for x := neq; x != 0; x &= x - 1 {
			l := bits.TrailingZeros32(x)
			brk[l] = int32(i)
			if j := i - int(patThreshold[l]); j >= 0 {
				sched[j&63] |= 1 << uint(l)
			}
		}
		if f := sched[i&63]; f != 0 {
			sched[i&63] = 0
			for x := f; x != 0; x &= x - 1 {
				l := bits.TrailingZeros32(x)
				if brk[l]-int32(i) == int32(patThreshold[l]) {
					elig |= 1 << uint(l)
				}
			}
		}
		rest := n - i
		best := int32(1 << 30)
		var bs step
		if rest <= patMaxBits {
			if final {
				best = int32(histFieldBytes(rest))
			} else {
				best = plainBytes[rest] // provisional: the window will move on
			}
		}
		maxL := patMaxBits
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
			if c := plainBytes[l] + repeatBytes(r) + cost[i+int(r)*l]; c < best {
				best, bs = c, step{l, r}
			}
			if r > 2 {
				if c := plainBytes[l] + repeatBytes(r-1) + cost[i+int(r-1)*l]; c < best {
					best, bs = c, step{l, r - 1}
				}
			}
		}
		// Plain records: the longest, or one that ends where a repeating
		// stretch starts (shorter plain records elsewhere rarely save a
		// byte), or any near the end of the buffer.
		if rest <= 2*patMaxBits {
			for l := 1; l <= maxL; l++ {
				if c := plainBytes[l] + cost[i+l]; c < best {
					best, bs = c, step{l, 1}
				}
			}
		} else {
			if c := plainBytes[maxL] + cost[i+maxL]; c < best {
				best, bs = c, step{maxL, 1}
			}
			for j := int(nextRep[i]); j-i < maxL; j = int(nextRep[j]) {
				if c := plainBytes[j-i] + cost[j]; c < best {
					best, bs = c, step{j - i, 1}
				}
			}
		}
		cost[i], choice[i] = best, bs
	}
	return choice
}

// patThreshold[l] is how many bits after the first l must repeat for a
// pattern of l bits to be worth a record: two whole repeats, and at least
// patMinRun bits in all.
var patThreshold = func() (t [patMaxBits + 1]uint8) {
	for l := 1; l <= patMaxBits; l++ {
		t[l] = uint8(max(l, patMinRun-l))
	}
	return
}()

// plainBytes[l] is recordBytes(l, 1).
var plainBytes = func() (t [patMaxBits + 1]int32) {
	for l := 1; l <= patMaxBits; l++ {
		t[l] = int32(recordBytes(l, 1))
	}
	return
}()

// emitRecord sends the record of l bits at buffer position i, repeated r
// times.
func (s *patternState) emitRecord(e *Encoder, i, l int, r uint64) error {
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
func (s *patternState) startRun(e *Encoder, l int, reps uint64) error {
	s.runHist, s.runLen, s.runCount, s.phase = s.buf.record(0, l), l, reps, 0
	s.active = true
	s.buf.drop(int(reps) * l)
	return s.replay(e)
}

// replay feeds the buffered bits through the active run: bits that match
// the pattern extend it; the first mismatch ends it.
func (s *patternState) replay(e *Encoder) error {
	old := s.buf
	s.buf = bitBuf{}
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
func (s *patternState) take(e *Encoder) (uint64, error) {
	if err := s.flushRun(e); err != nil {
		return 0, err
	}
	if err := s.decide(e, true); err != nil {
		return 0, err
	}
	if err := s.flushRun(e); err != nil {
		return 0, err
	}
	for s.buf.n > patMaxBits {
		m := &e.msg
		m.Reset(TCodeResourceFull)
		m.Set(FieldRCODE, RCodeHist).Set(FieldRDATA, s.buf.record(0, patMaxBits))
		s.buf.drop(patMaxBits)
		if err := e.emit(e.curTime); err != nil {
			return 0, err
		}
	}
	h := s.buf.record(0, s.buf.n)
	s.buf.drop(s.buf.n)
	return h, nil
}

// histPlanner is what the encoder asks of a HistPatterns record planner:
// patternState, or in tests the reference planner it is compared with.
type histPlanner interface {
	reset()
	add(e *Encoder, bit uint64) error
	flushRun(e *Encoder) error
	take(e *Encoder) (uint64, error)
}
