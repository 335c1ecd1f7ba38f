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
	for a, end := b.head, b.head+k; a < end; {
		off := a & 63
		cnt := min(64-off, end-a)
		b.w[a>>6] &^= (^uint64(0) >> uint(64-cnt)) << uint(off)
		a += cnt
	}
	b.head += k
	b.n -= k
	if b.n == 0 {
		b.head = 0
	}
}

// words copies the buffer's first 64*len(dst) bits to dst, the oldest
// in bit 0 of dst[0] (the buffer holds at least that many).
func (b *bitBuf) words(dst []uint64) {
	q, r := b.head>>6, uint(b.head&63)
	for j := range dst {
		x := b.w[q+j] >> r
		if r != 0 {
			x |= b.w[q+j+1] << (64 - r)
		}
		dst[j] = x
	}
}

// record returns the HIST value (stop bit above) of the n <= 31 bits at i:
// the oldest is the most significant.
func (b *bitBuf) record(i, n int) uint64 {
	i += b.head
	x := b.w[i>>6] >> uint(i&63)
	if off := i & 63; off+n > 64 {
		x |= b.w[i>>6+1] << uint(64-off)
	}
	return 1<<uint(n) | bits.Reverse64(x)>>uint(64-n)&(1<<uint(n)-1)
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
	cost   []int32
	choice []step
	path   []step // decide's records when not from the memo
	// memo, allocated at the first full window, remembers the plans of
	// full windows; reset keeps it (a plan depends on the bits alone).
	memo *planMemo
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
func repeatBytes(r uint64) int32 { return repeatBytesByLen[bits.Len64(r)] }

// repeatBytesByLen[k] is the size of an HREPEAT field holding a count of k
// significant bits: 6 bits a byte (HREPEAT has at most 18).
var repeatBytesByLen = func() (t [65]int32) {
	for k := range t {
		t[k] = int32(min(max(k+5, 6)/6, 3)) // counts have at most 18 bits
	}
	return
}()

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
//
// The records a full window commits depend on its bits alone, and a
// program's loops bring the same windows back: those are taken from
// s.memo instead of being planned again.
func (s *patternState) decide(e *Encoder, final bool) error {
	for !s.active && s.buf.n > 0 {
		n := s.buf.n
		if !final && n < patWindow || final && n <= patMaxBits {
			return nil
		}
		limit := n - patLookahead
		if final {
			limit = n
		}
		var path []step
		if !final && n == patWindow {
			path = s.memoPath(e, limit)
		} else {
			s.path = planPath(s.path[:0], s.plan(e, final), n, limit, final)
			path = s.path
		}
		i := 0
		for _, st := range path {
			l, reps := st.len(), st.reps()
			if l == 0 {
				break // the rest goes to the message's HIST field
			}
			if reps > 1 && i+int(reps)*l+l > n && !final {
				// The pattern may go on: continue it with the next outcomes.
				s.buf.drop(i)
				return s.startRun(e, l, reps)
			}
			if err := s.emitRecord(e, i, l, reps); err != nil {
				return err
			}
			i += l * int(reps)
		}
		s.buf.drop(i)
		if final || i == 0 {
			return nil
		}
	}
	return nil
}

// planPath appends to path the records decide takes from a plan of n
// outcomes, from the first on: those that start before limit (all with
// final), the last one being where it stops (a record of length 0, or a
// repeat that reaches the end of the buffer and may go on).
func planPath(path []step, plan []step, n, limit int, final bool) []step {
	for i := 0; i < n && (i < limit || final); {
		st := plan[i]
		path = append(path, st)
		l, reps := st.len(), st.reps()
		if l == 0 || reps > 1 && i+int(reps)*l+l > n && !final {
			break
		}
		i += l * int(reps)
	}
	return path
}

// Plan memo: the paths of recently planned full windows, by their bits.
// A 2-way set-associative cache of memoSets sets, the most recently used
// way first. On coremark, 45% of the windows planned are found there.
const (
	memoSets  = 256
	memoWords = patWindow / 64 // a full window's bits
)

// memoEntry is a full window (its bits, the oldest in bit 0 of key[0])
// and the path decide takes through its plan.
type memoEntry struct {
	key   [memoWords]uint64
	valid bool
	path  []step
}

// planMemo holds the memo entries of an encoder.
type planMemo struct {
	sets    [memoSets][2]memoEntry
	windows uint64 // full windows decided (tests and benchmarks)
	hits    uint64 // those found in the memo
}

// memoPath returns the path decide takes through the plan of the full
// window in the buffer (patWindow outcomes), from the memo or planned
// and remembered. The memo is only ever read by the encoder that wrote it
// (the paths depend on the HREPEAT maximum of its configuration).
func (s *patternState) memoPath(e *Encoder, limit int) []step {
	if s.memo == nil {
		s.memo = new(planMemo)
	}
	s.memo.windows++
	var key [memoWords]uint64
	s.buf.words(key[:])
	h := uint64(0x9e3779b97f4a7c15)
	for _, w := range key {
		h = (h ^ w) * 0xff51afd7ed558ccd
	}
	set := &s.memo.sets[(h^h>>29)%memoSets]
	if set[0].valid && set[0].key == key {
		s.memo.hits++
		return set[0].path
	}
	if set[1].valid && set[1].key == key {
		s.memo.hits++
		set[0], set[1] = set[1], set[0]
		return set[0].path
	}
	// Evict the least recently used way; its path's storage is reused.
	s.path = planPath(s.path[:0], s.plan(e, false), patWindow, limit, false)
	old := set[1].path
	set[1] = set[0]
	set[0] = memoEntry{key: key, valid: true, path: append(old[:0], s.path...)}
	return set[0].path
}

// step is one record of a parse, packed in 32 bits: its length in bits in
// the low 5 (0: no record, the rest goes to the HIST field of the flow
// message) and its repeat count above (at most 2^18-1).
type step uint32

func mkStep(l int, reps uint64) step { return step(uint64(l) | reps<<5) }

func (st step) len() int     { return int(st & 31) }
func (st step) reps() uint64 { return uint64(st >> 5) }

// plan returns, for each position of the buffer, the first record of the
// cheapest parse from there to the end.
//
// One backward pass over the buffer. A pattern length l is a lane: bit l
// of a 32-bit mask. At position i, lane l breaks when the bit l later
// differs from bit i; the bits from i on then repeat with period l up to
// the lane's break brk[l] (the first break at or after i), brk[l]-i+l
// bits. A lane is eligible (worth a repeat record) while that distance is
// at least patThreshold[l]. The distances of all lanes are kept as 5-bit
// counters sliced across five masks (bit k of every lane's counter in
// word k), so a step advances and compares all 31 lanes with a few dozen
// logic operations, whatever the bits: no loop over lengths, and brk is
// written only when a lane becomes eligible.
//
// Every position costs the same few steps but for the candidates it
// tries: each eligible pattern length (multiples of the shortest one
// aside) and the plain records that end where a repeating stretch starts.
// Near the end of the buffer (the last 2*patMaxBits positions), where
// records are cut by it, every plain length is tried.
func (s *patternState) plan(e *Encoder, final bool) []step {
	n := s.buf.n
	if cap(s.cost) < n+1 {
		s.cost = make([]int32, n+1)
		s.choice = make([]step, n+1)
	}
	cost, choice := s.cost[:n+1], s.choice[:n+1]
	hmax := e.cfg.hrepeatMax()
	var brk [patMaxBits + 1]int32 // each eligible lane's break
	var c0, c1, c2, c3, c4 uint32 // distance to each lane's break, mod 32, sliced
	var elig uint32               // eligible lanes
	var w uint64                  // bits i..i+63, bit 0 = bit i
	cost[n], choice[n] = 0, 0
	// Bit k of starts is set when a repeating stretch starts k positions
	// after i (a position with an eligible length whose predecessor has
	// none), for k < patMaxBits; rep tells whether position i+1 has an
	// eligible length.
	rep, starts := false, uint32(0)
	tail := max(n-2*patMaxBits, 0)
	// Near the end of the buffer, records are cut by it.
	for i := n - 1; i >= tail; i-- {
		p := s.buf.head + i
		w = w<<1 | s.buf.w[p>>6]>>uint(p&63)&1
		neq := uint32(w^-(w&1)) &^ 1 // lanes whose bit i+l differs from bit i
		rest := n - i
		if rest <= patMaxBits {
			neq |= ^uint32(0) << uint(rest) &^ 1 // past the buffer: no repeat
		}
		var at uint32
		c0, c1, c2, c3, c4, at = laneStep(c0, c1, c2, c3, c4, neq)
		elig &^= neq
		gain := at &^ elig
		for x := gain; x != 0; x &= x - 1 {
			l := bits.TrailingZeros32(x)
			brk[l] = int32(i + int(patThreshold[l]))
		}
		elig |= gain

		best := int32(1 << 30)
		var bs step
		el, maxL := elig, patMaxBits
		if rest <= patMaxBits {
			if final {
				best = int32(histFieldBytes(rest))
			} else {
				best = plainBytes[rest] // provisional: the window will move on
			}
			maxL = rest
			el &= 1<<uint(maxL+1) - 1
		}
		starts = nextStarts(starts, rep && el == 0)
		rep = el != 0
		if el != 0 {
			mult := patMultiples[bits.TrailingZeros32(el)] & (1<<uint(maxL+1) - 1)
			el &^= mult &^ (el&-el | 1<<uint(bits.Len32(mult)-1))
		}
		for ; el != 0; el &= el - 1 {
			l := bits.TrailingZeros32(el)
			r := min(uint64(l+int(brk[l])-i)*patRecip[l]>>patRecipShift, hmax)
			if c := plainBytes[l] + repeatBytes(r) + cost[i+int(r)*l]; c < best {
				best, bs = c, mkStep(l, r)
			}
			if r > 2 {
				if c := plainBytes[l] + repeatBytes(r-1) + cost[i+int(r-1)*l]; c < best {
					best, bs = c, mkStep(l, r-1)
				}
			}
		}
		for l := 1; l <= maxL; l++ {
			if c := plainBytes[l] + cost[i+l]; c < best {
				best, bs = c, mkStep(l, 1)
			}
		}
		cost[i], choice[i] = best, bs
	}
	// Elsewhere every record fits.
	for i := tail - 1; i >= 0; i-- {
		p := s.buf.head + i
		w = w<<1 | s.buf.w[p>>6]>>uint(p&63)&1
		neq := uint32(w^-(w&1)) &^ 1
		var at uint32
		c0, c1, c2, c3, c4, at = laneStep(c0, c1, c2, c3, c4, neq)
		elig &^= neq
		if gain := at &^ elig; gain != 0 {
			elig |= gain
			for ; gain != 0; gain &= gain - 1 {
				l := bits.TrailingZeros32(gain)
				brk[l] = int32(i + int(patThreshold[l]))
			}
		}
		starts = nextStarts(starts, rep && elig == 0)
		rep = elig != 0
		// The longest plain record.
		best, bs := plainBytes[patMaxBits]+cost[i+patMaxBits], mkStep(patMaxBits, 1)
		if elig != 0 {
			// Repeats, tried before the plain records: a tie goes to
			// the first tried. In a run of period p every multiple of p
			// repeats too: of those only p itself (most repeats) and
			// the longest multiple (fewest) are worth trying.
			best, bs = 1<<30, 0
			for el := elig &^ patSkip[bits.TrailingZeros32(elig)]; el != 0; el &= el - 1 {
				l := bits.TrailingZeros32(el)
				r := min(uint64(l+int(brk[l])-i)*patRecip[l]>>patRecipShift, hmax)
				if c := plainBytes[l] + repeatBytes(r) + cost[i+int(r)*l]; c < best {
					best, bs = c, mkStep(l, r)
				}
				if r > 2 {
					if c := plainBytes[l] + repeatBytes(r-1) + cost[i+int(r-1)*l]; c < best {
						best, bs = c, mkStep(l, r-1)
					}
				}
			}
			if c := plainBytes[patMaxBits] + cost[i+patMaxBits]; c < best {
				best, bs = c, mkStep(patMaxBits, 1)
			}
		}
		// Plain records that end where a repeating stretch starts
		// (shorter plain records elsewhere rarely save a byte).
		for x := starts; x != 0; x &= x - 1 {
			k := bits.TrailingZeros32(x)
			if c := plainBytes[k] + cost[i+k]; c < best {
				best, bs = c, mkStep(k, 1)
			}
		}
		cost[i], choice[i] = best, bs
	}
	return choice
}

// nextStarts moves plan's mask of stretch starts back one position: bit k
// (a start k positions after i) becomes bit k+1, and bit 1 is set when a
// stretch starts at i+1.
func nextStarts(starts uint32, at1 bool) uint32 {
	starts <<= 1
	if at1 {
		starts |= 2
	}
	return starts & (1<<patMaxBits - 1)
}

// laneStep advances plan's lane counters c0..c4 by one position at which
// the lanes neq break: every distance grows by one and those of the lanes
// that break restart at 0. at has the lanes whose distance is their
// threshold: a lane becomes eligible then (a counter that wrapped past 31
// belongs to a lane already eligible).
func laneStep(c0, c1, c2, c3, c4, neq uint32) (d0, d1, d2, d3, d4, at uint32) {
	k1 := c1 & c0
	k2 := c2 & k1
	k3 := c3 & k2
	d0, d1, d2, d3, d4 = ^c0&^neq, (c1^c0)&^neq, (c2^k1)&^neq, (c3^k2)&^neq, (c4^k3)&^neq
	at = ^((d0 ^ patThr0) | (d1 ^ patThr1) | (d2 ^ patThr2) | (d3 ^ patThr3) | (d4 ^ patThr4)) &^ 1
	return
}

// patThr0..4 are patThreshold sliced as plan's lane counters are: bit l of
// patThrK is bit K of patThreshold[l] (lanes 1, 2 and 3 have thresholds 7,
// 6 and 5, the others their length).
const (
	patThr0 = 0xaaaaaaaa
	patThr1 = 0xccccccc6
	patThr2 = 0xf0f0f0fe
	patThr3 = 0xff00ff00
	patThr4 = 0xffff0000
)

// patMultiples[p] has bit l set for every multiple l of p up to
// patMaxBits; patSkip[p] is the same without p and the largest.
var patMultiples, patSkip = func() (m, s [patMaxBits + 1]uint32) {
	for p := 1; p <= patMaxBits; p++ {
		for l := p; l <= patMaxBits; l += p {
			m[p] |= 1 << uint(l)
		}
		s[p] = m[p] &^ (1<<uint(p) | 1<<uint(bits.Len32(m[p])-1))
	}
	return
}()

// patRecip[l] is 2^patRecipShift/l rounded up: x*patRecip[l] >>
// patRecipShift is x/l for every x below 2^16 (far beyond a buffer's
// length), so plan divides by a multiplication.
const patRecipShift = 32

var patRecip = func() (t [patMaxBits + 1]uint64) {
	for l := uint64(1); l <= patMaxBits; l++ {
		t[l] = (1<<patRecipShift + l - 1) / l
	}
	return
}()

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
