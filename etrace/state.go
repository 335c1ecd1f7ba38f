package etrace

// State shared by the encoder and the decoder for the optional modes: the
// branch predictor and the jump target cache (the return address stack of
// implicit return mode is decode.ReturnStack, on both sides too). Both
// sides drive the same code, in the same order, which is what keeps them
// in step.

// predictor is the branch predictor: 2^bpred_size_p two-bit counters
// indexed by instruction address bits. State bit 1 is the prediction
// (1 = taken), bit 0 the most recent outcome.
type predictor struct {
	t     []uint8
	mask  uint64
	shift uint
}

func newPredictor(p *Params) predictor {
	if p.BPredSize == 0 {
		return predictor{}
	}
	n := 1 << p.BPredSize
	pr := predictor{t: make([]uint8, n), mask: uint64(n - 1), shift: lowBit(p)}
	pr.reset()
	return pr
}

// lowBit is the lowest address bit used to index the predictor and the
// cache: bit 1 with compressed instructions, else bit 2.
func lowBit(p *Params) uint {
	if p.IAddressLSB >= 2 {
		return 2
	}
	return 1
}

func (p *predictor) reset() {
	for i := range p.t {
		p.t[i] = 1
	}
}

// predict returns the predicted outcome of the branch at addr.
func (p *predictor) predict(addr uint64) bool {
	return p.t[(addr>>p.shift)&p.mask]&2 != 0
}

// update records the outcome of the branch at addr.
func (p *predictor) update(addr uint64, taken bool) {
	i := (addr >> p.shift) & p.mask
	var b uint8
	if taken {
		b = 1
	}
	p.t[i] = predNext[p.t[i]&3][b]
}

// predNext is a two-bit counter's next state, by state and outcome (1:
// taken): from 0 (predict not taken, not taken last) a taken branch goes
// to 1; from 1 or 2 (either prediction, the other outcome last) to 3 or
// back to 0; from 3 (predict taken) a not-taken branch goes to 2.
var predNext = [4][2]uint8{{0, 1}, {0, 3}, {0, 3}, {2, 3}}

// jumpCache is the direct-mapped jump target cache.
type jumpCache struct {
	a     []uint64
	valid []bool
	mask  uint64
	shift uint
}

func newJumpCache(p *Params) jumpCache {
	if p.CacheSize == 0 {
		return jumpCache{}
	}
	n := 1 << p.CacheSize
	return jumpCache{a: make([]uint64, n), valid: make([]bool, n), mask: uint64(n - 1), shift: lowBit(p)}
}

func (c *jumpCache) reset() {
	for i := range c.valid {
		c.valid[i] = false
	}
}

func (c *jumpCache) index(addr uint64) uint32 { return uint32((addr >> c.shift) & c.mask) }

// lookup reports whether addr is cached, and returns its index.
func (c *jumpCache) lookup(addr uint64) (uint32, bool) {
	i := c.index(addr)
	return i, c.valid[i] && c.a[i] == addr
}

func (c *jumpCache) store(addr uint64) {
	i := c.index(addr)
	c.a[i], c.valid[i] = addr, true
}
