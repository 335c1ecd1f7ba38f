package decode

import (
	"math/rand"
	"testing"
)

// TestReturnStack drives the ring against a plain slice model (append;
// drop the first entry beyond the capacity; pop the last) with random
// pushes, pops and resets.
func TestReturnStack(t *testing.T) {
	for _, capacity := range []int{0, 1, 2, 3, 8, 32} {
		s := NewReturnStack(capacity)
		var model []uint64
		rnd := rand.New(rand.NewSource(int64(capacity)))
		for i := 0; i < 5000; i++ {
			switch op := rnd.Intn(10); {
			case op < 5:
				a := uint64(rnd.Int63())
				s.Push(a)
				if capacity > 0 {
					model = append(model, a)
					if len(model) > capacity {
						model = model[1:]
					}
				}
			case op < 9:
				a, ok := s.Pop()
				want, wantOK := uint64(0), len(model) > 0
				if wantOK {
					want, model = model[len(model)-1], model[:len(model)-1]
				}
				if a != want || ok != wantOK {
					t.Fatalf("cap %d, op %d: Pop = %#x, %v; want %#x, %v", capacity, i, a, ok, want, wantOK)
				}
			default:
				if rnd.Intn(10) == 0 {
					s.Reset()
					model = model[:0]
				}
			}
			if s.Depth() != len(model) {
				t.Fatalf("cap %d, op %d: depth %d, want %d", capacity, i, s.Depth(), len(model))
			}
			top, ok := s.Top()
			if ok != (len(model) > 0) || ok && top != model[len(model)-1] {
				t.Fatalf("cap %d, op %d: Top = %#x, %v; model %x", capacity, i, top, ok, model)
			}
		}
		if s.Cap() != capacity {
			t.Errorf("Cap = %d, want %d", s.Cap(), capacity)
		}
	}
	var z ReturnStack
	z.Push(1)
	if _, ok := z.Pop(); ok || z.Depth() != 0 {
		t.Error("the zero ReturnStack holds an entry")
	}
}

// TestTally follows the suspect count through emissions and checkpoints.
func TestTally(t *testing.T) {
	var y Tally
	y.Emit(10)
	if y.Suspect() != 10 || y.Emitted() != 10 {
		t.Fatalf("after 10: suspect %d, emitted %d", y.Suspect(), y.Emitted())
	}
	y.Good()
	y.Emit(5)
	if y.Suspect() != 5 || y.Mark() != 10 {
		t.Fatalf("after a checkpoint and 5: suspect %d, mark %d", y.Suspect(), y.Mark())
	}
	y.GoodAt(17) // verified ahead of emission
	if y.Suspect() != 0 {
		t.Fatalf("verified ahead: suspect %d", y.Suspect())
	}
	y.Emit(4)
	if y.Suspect() != 2 {
		t.Fatalf("2 past the point verified ahead: suspect %d", y.Suspect())
	}
	y.GoodAt(3) // a later check doubts what was verified
	if y.Suspect() != 16 {
		t.Fatalf("moved back to 3: suspect %d", y.Suspect())
	}
}

// Equal holds exactly when two stacks driven differently (one reset and
// refilled, so that its ring starts elsewhere) hold the same addresses in
// the same order, as a plain slice model says; Clone copies a stack that
// then changes independently of the original.
func TestReturnStackEqual(t *testing.T) {
	rnd := rand.New(rand.NewSource(3))
	for i := 0; i < 2000; i++ {
		a, b := NewReturnStack(4), NewReturnStack(4)
		var ma, mb []uint64
		push := func(s *ReturnStack, m *[]uint64, v uint64) {
			s.Push(v)
			*m = append(*m, v)
			if len(*m) > 4 {
				*m = (*m)[1:]
			}
		}
		for k := rnd.Intn(9); k > 0; k-- {
			push(&a, &ma, uint64(rnd.Intn(3)))
		}
		for k := rnd.Intn(9); k > 0; k-- {
			push(&b, &mb, uint64(rnd.Intn(3)))
		}
		if rnd.Intn(2) == 0 {
			b.Reset()
			mb = nil
			for _, v := range ma {
				push(&b, &mb, v)
			}
		}
		want := len(ma) == len(mb)
		for k := 0; want && k < len(ma); k++ {
			want = ma[k] == mb[k]
		}
		if a.Equal(&b) != want || b.Equal(&a) != want {
			t.Fatalf("%v and %v: Equal %v, want %v", ma, mb, a.Equal(&b), want)
		}
		c := a.Clone()
		if !c.Equal(&a) {
			t.Fatalf("clone of %v differs", ma)
		}
		c.Push(99)
		if len(ma) > 0 && c.Equal(&a) {
			t.Fatalf("a push onto the clone of %v changed the original", ma)
		}
	}
	if s, o := NewReturnStack(2), NewReturnStack(3); s.Equal(&o) {
		t.Error("stacks of different capacities equal")
	}
}
