package decode

// ReturnStack is the return-address stack a decoder keeps to follow
// implicit returns (N-Trace "Implicit Return", E-Trace "Implicit return
// mode"): a call pushes its return address, and a return that the trace
// does not report goes to the address on top. It mirrors the encoder's
// stack, so it has the same capacity and the same overflow rule: a push
// onto a full stack drops the oldest entry (N-Trace asks for at most 32
// entries; a decoder following an encoder of unknown depth uses more).
//
// The zero ReturnStack has no room: Push does nothing and Pop finds
// nothing. It does not allocate after NewReturnStack.
type ReturnStack struct {
	a     []uint64
	base  int // index of the oldest entry
	depth int // entries held
}

// NewReturnStack returns an empty stack of the given capacity.
func NewReturnStack(capacity int) ReturnStack {
	return ReturnStack{a: make([]uint64, max(capacity, 0))}
}

// Reset empties the stack (a synchronisation resets the encoder's).
func (s *ReturnStack) Reset() { s.base, s.depth = 0, 0 }

// Depth returns the number of return addresses held.
func (s *ReturnStack) Depth() int { return s.depth }

// Cap returns the capacity.
func (s *ReturnStack) Cap() int { return len(s.a) }

// Push pushes the return address a, dropping the oldest entry when the
// stack is full.
func (s *ReturnStack) Push(a uint64) {
	n := len(s.a)
	if n == 0 {
		return
	}
	if s.depth == n {
		s.base++
		if s.base == n {
			s.base = 0
		}
		s.depth--
	}
	i := s.base + s.depth
	if i >= n {
		i -= n
	}
	s.a[i] = a
	s.depth++
}

// Top returns the address on top of the stack; ok is false when it is
// empty.
func (s *ReturnStack) Top() (a uint64, ok bool) {
	if s.depth == 0 {
		return 0, false
	}
	i := s.base + s.depth - 1
	if i >= len(s.a) {
		i -= len(s.a)
	}
	return s.a[i], true
}

// Pop removes and returns the address on top of the stack; ok is false
// when it is empty.
func (s *ReturnStack) Pop() (a uint64, ok bool) {
	a, ok = s.Top()
	if ok {
		s.depth--
	}
	return a, ok
}

// Clone returns a copy of s that shares no memory with it.
func (s *ReturnStack) Clone() ReturnStack {
	return ReturnStack{a: append([]uint64(nil), s.a...), base: s.base, depth: s.depth}
}

// Equal reports whether s and o have the same capacity and hold the same
// return addresses in the same order: a decoder following either predicts
// the same returns.
func (s *ReturnStack) Equal(o *ReturnStack) bool {
	if len(s.a) != len(o.a) || s.depth != o.depth {
		return false
	}
	n := len(s.a)
	for k := 0; k < s.depth; k++ {
		i, j := s.base+k, o.base+k
		if i >= n {
			i -= n
		}
		if j >= n {
			j -= n
		}
		if s.a[i] != o.a[j] {
			return false
		}
	}
	return true
}
