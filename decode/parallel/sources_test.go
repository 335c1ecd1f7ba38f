package parallel

import "testing"

// Sources cuts a trace of two sources at the earliest of their last
// syncs once each source heard from lately has had one since the piece
// began, the piece before holding Size bytes and the primer no more; a
// source silent for Max bytes, or stopped, is not waited for.
func TestSourcesCut(t *testing.T) {
	var pieces []*Piece
	tee := &Tee{}
	tee.buf = make([]byte, 10000)
	c := &Cutter{Tee: tee, Size: 100, Max: 400, Emit: func(p *Piece) error { pieces = append(pieces, p); return nil }}
	s := &Sources{C: c}
	step := func(what string, cut func() (bool, error), want bool, start, prime int64) {
		t.Helper()
		got, err := cut()
		if err != nil || got != want || c.start != start || c.prime != prime {
			t.Fatalf("%s: cut %v, %v, piece at %d primer to %d; want cut %v at %d to %d", what, got, err, c.start,
				c.prime, want, start, prime)
		}
	}
	s.Add(7) // known, never heard from: waited for in the first Max bytes only
	s.Heard(0, 10, false)
	s.Sync(0, 10, 1, "a")
	step("one source, too early", func() (bool, error) { return s.Cut(20) }, false, 0, 0)
	s.Heard(1, 30, false)
	s.Heard(0, 150, false)
	s.Sync(0, 150, 5, "b")
	step("source 1 has no sync", func() (bool, error) { return s.Cut(160) }, false, 0, 0)
	s.Heard(1, 170, false)
	s.Sync(1, 170, 6, "c")
	step("source 7 in the window", func() (bool, error) { return s.Cut(180) }, false, 0, 0)
	s.Heard(0, 420, false)
	s.Sync(0, 420, 9, "d")
	s.Heard(1, 430, false)
	s.Sync(1, 430, 10, "e")
	step("both synced", func() (bool, error) { return s.Cut(440) }, true, 420, 440)
	if p := pieces[len(pieces)-1]; p.Offset != 0 || len(p.Data) != 440 {
		t.Errorf("piece at %d, %d bytes", p.Offset, len(p.Data))
	}
	// source 1 stops; source 0 alone
	s.Heard(1, 450, true)
	s.Heard(0, 530, false)
	s.Sync(0, 530, 12, "f")
	step("source 1 stopped", func() (bool, error) { return s.Cut(540) }, true, 530, 540)
	// source 1 again, without a sync: no cut until it is silent for Max
	s.Heard(1, 560, false)
	s.Sync(0, 640, 14, "g")
	step("source 1 heard, no sync", func() (bool, error) { return s.Cut(650) }, false, 530, 540)
	s.Heard(0, 970, false)
	s.Sync(0, 970, 20, "h")
	step("source 1 silent", func() (bool, error) { return s.Cut(980) }, true, 970, 980)
	if p := pieces[len(pieces)-1]; p.State != "f" || p.Index != 12 {
		t.Errorf("piece state %v index %d", p.State, p.Index)
	}
	// a primer longer than Size
	s.Heard(1, 1080, false)
	s.Sync(1, 1080, 21, "i")
	s.Heard(0, 1190, false)
	s.Sync(0, 1190, 22, "j")
	step("primer too long", func() (bool, error) { return s.Cut(1200) }, false, 970, 980)
	step("primer of Size", func() (bool, error) { return s.Cut(1180) }, true, 1080, 1180)
}
