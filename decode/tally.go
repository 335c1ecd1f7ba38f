package decode

// Tally is the integrity bookkeeping of a decoder, or of one trace source
// of it: the instructions emitted, and the point up to which they are
// known good (a checkpoint verified the flow there, or decoding started
// fresh). A gap reports the instructions emitted after that point as
// suspect (flow.Event.Suspect): the corruption it found may have sent
// them down a wrong path.
type Tally struct {
	emitted uint64
	good    uint64
}

// Emit counts n more instructions emitted.
func (t *Tally) Emit(n uint64) { t.emitted += n }

// Emitted returns the number of instructions emitted.
func (t *Tally) Emitted() uint64 { return t.emitted }

// Good marks every instruction emitted so far as known good.
func (t *Tally) Good() { t.good = t.emitted }

// GoodAt marks the first n instructions emitted as known good: a point
// before the last one, when a later check puts in doubt what a checkpoint
// verified, or after it, for instructions verified before they are
// emitted.
func (t *Tally) GoodAt(n uint64) { t.good = n }

// Mark returns the number of instructions known good.
func (t *Tally) Mark() uint64 { return t.good }

// Suspect returns the number of instructions emitted after the last point
// known good.
func (t *Tally) Suspect() uint64 {
	if t.good >= t.emitted {
		return 0
	}
	return t.emitted - t.good
}
