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
	// open: the point known good lies before the instructions counted
	// (Open), at an unknown distance
	open bool
}

// Emit counts n more instructions emitted.
func (t *Tally) Emit(n uint64) { t.emitted += n }

// Emitted returns the number of instructions emitted.
func (t *Tally) Emitted() uint64 { return t.emitted }

// Good marks every instruction emitted so far as known good.
func (t *Tally) Good() { t.good, t.open = t.emitted, false }

// GoodAt marks the first n instructions emitted as known good: a point
// before the last one, when a later check puts in doubt what a checkpoint
// verified, or after it, for instructions verified before they are
// emitted.
func (t *Tally) GoodAt(n uint64) { t.good, t.open = n, false }

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

// Open says that the point known good lies before the instructions
// counted so far, at a distance not known yet: a decoder started on a
// piece of a trace (package decode/parallel) does not know how many instructions
// before the piece are suspect. Suspect then counts only those after
// the piece's start, until the next Good or GoodAt; IsOpen tells.
func (t *Tally) Open() { t.good, t.open = t.emitted, true }

// IsOpen reports whether the point known good lies before the
// instructions counted (Open, and no Good or GoodAt since).
func (t *Tally) IsOpen() bool { return t.open }

// After returns the tally of a decoder that counted prev and then t, t
// being the tally of a decoder that started where prev stopped (opened
// there with Open when it started on a piece).
func (t Tally) After(prev Tally) Tally {
	r := Tally{emitted: prev.emitted + t.emitted, good: prev.emitted + t.good}
	if t.open {
		r.good, r.open = prev.good, prev.open
	}
	return r
}

// OpenSuspect is set in the Suspect count of a gap event that a decoder
// started on a piece of a trace reports while the point known good lies
// before the piece (Tally.IsOpen): the count lacks the instructions held
// suspect before the piece, which package decode/parallel adds when it
// joins the pieces. No event it passes on has it.
const OpenSuspect = uint64(1) << 63
