package decode

import "testing"

// A tally split in two at a piece boundary and joined with After counts
// what one tally over the whole gives, whether the second part passed a
// point known good (Good) or not (it stays open: the suspect
// instructions of the first part carry over).
func TestTallyAfter(t *testing.T) {
	var whole, first, second Tally
	whole.Emit(10)
	whole.Good()
	whole.Emit(5)
	first = whole // 5 suspect at the boundary
	second.Open()
	whole.Emit(7)
	second.Emit(7)
	if !second.IsOpen() || second.Suspect() != 7 || whole.Suspect() != 12 {
		t.Fatalf("open: second %+v suspect %d, whole suspect %d", second, second.Suspect(), whole.Suspect())
	}
	if j := second.After(first); j != whole {
		t.Errorf("open: After = %+v, want %+v", j, whole)
	}
	whole.Good()
	second.Good()
	whole.Emit(3)
	second.Emit(3)
	if second.IsOpen() {
		t.Error("Good left the tally open")
	}
	if j := second.After(first); j != whole || j.Suspect() != 3 {
		t.Errorf("closed: After = %+v (suspect %d), want %+v", j, j.Suspect(), whole)
	}
}
