package sim

import (
	"slices"
	"testing"
)

// TestPageCrossingInstruction runs a loop whose first instruction, addi
// a0,a0,5, is 32 bits across a page boundary (never in the decoded
// cache: it runs from a window of its own), and whose body patches the
// half of it in the next page into addi a0,a0,7 (the store overwrites no
// instruction the cache holds, so it is not reported as a code write).
// The three iterations must add 5, 7, 7, with and without a PC hook (the
// hook takes the interpreter's per-instruction path), and the hook must
// see every instruction in program order.
func TestPageCrossingInstruction(t *testing.T) {
	corpusOrSkip(t)
	for _, hook := range []bool{false, true} {
		m, err := New(Config{MaxInstret: 100})
		if err != nil {
			t.Fatal(err)
		}
		loadPageCrossing(t, m)
		e := m.Entry()
		if e&pageMask != 0 {
			t.Fatalf("median's entry %#x is not page aligned", e)
		}
		var pcs []uint64
		if hook {
			m.SetPCHook(0, func(pc uint64) {
				if len(pcs) < 20 {
					pcs = append(pcs, pc-e)
				}
			})
		}
		_, err = m.Run()
		if err == nil {
			t.Fatal("run ended without reaching the instruction limit")
		}
		h := m.Hart(0)
		if a0, a1 := h.Reg(10), h.Reg(11); a0 != 19 || a1 != 0 {
			t.Errorf("hook %v: a0 = %d, a1 = %d; want 19 (5+7+7), 0", hook, a0, a1)
		}
		if h.m.codeWrites.Count != 0 {
			t.Errorf("hook %v: %d code writes reported; want 0", hook, h.m.codeWrites.Count)
		}
		if hook {
			loop := []uint64{0x3ffe, 0x4002, 0x4006, 0x400a}
			want := []uint64{0, 4, 8, 0xc, 0x3ffa, 0x3ffc}
			for range 3 {
				want = append(want, loop...)
			}
			want = append(want, 0x400e, 0x400e)
			if len(pcs) < len(want) || !slices.Equal(pcs[:len(want)], want) {
				t.Errorf("err %v retired offsets %#x; want %#x", err, pcs, want)
			}
		}
	}
}
