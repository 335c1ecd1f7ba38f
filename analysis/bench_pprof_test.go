package analysis

import (
	"io"
	"testing"
)

// BenchmarkPprof measures the pprof writer end to end: a Profile fed
// the flow of the calls test program 50 times over (so that the
// per-instruction work, not the fixed cost of the tables, dominates),
// then WritePprof. Run with:
//
//	GOMAXPROCS=1 go test -run XXX -bench Pprof ./analysis
//
// and read the insts/s metric.
func BenchmarkPprof(b *testing.B) {
	img, pcs := loadProgram(b, "calls")
	evs := pcsToFlow(b, img, pcs)
	var per uint64
	for _, e := range evs {
		per += e.N
	}
	const repeat = 50
	per *= repeat
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := New(img, Options{})
		for range repeat {
			for j := range evs {
				p.Event(&evs[j])
			}
		}
		if err := WritePprof(io.Discard, p); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(per)*float64(b.N)/b.Elapsed().Seconds(), "insts/s")
}
