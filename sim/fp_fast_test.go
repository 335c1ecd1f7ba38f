package sim

import (
	"math"
	"math/rand"
	"testing"
)

// TestFMAFast: the native fused multiply-add gives the exact path's
// result whenever it applies, and the exact path raises no flag but NX
// there (the fast path is taken only with NX already set).
func TestFMAFast(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	vals := func() uint64 {
		switch r.Intn(8) {
		case 0: // any bit pattern: NaNs, infinities, subnormals
			return r.Uint64()
		case 1:
			return math.Float64bits(float64(r.Intn(2000) - 1000))
		default:
			return math.Float64bits((r.Float64() - 0.5) * math.Pow(2, float64(r.Intn(200)-100)))
		}
	}
	taken := 0
	for i := 0; i < 200000; i++ {
		a, b, c := vals(), vals(), vals()
		np, na := r.Intn(2) == 1, r.Intn(2) == 1
		got, ok := fmtD.fmaFast(a, b, c, np, na, rmRNE, true)
		if !ok {
			continue
		}
		taken++
		want, fl := fmtD.fma(a, b, c, np, na, rmRNE)
		if got != want || fl&^fNX != 0 {
			t.Fatalf("fma(%#x, %#x, %#x, %v, %v): fast %#x, exact %#x flags %#x", a, b, c, np, na, got, want, fl)
		}
	}
	if taken < 100000 {
		t.Errorf("fast path taken %d times of 200000", taken)
	}
	if _, ok := fmtD.fmaFast(math.Float64bits(1), math.Float64bits(2), math.Float64bits(3), false, false, rmRNE, false); ok {
		t.Error("fast path taken with NX clear")
	}
}
