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
