package analysis

import (
	"testing"

	"github.com/rvtrace/rvtrace/flow"
)

// BenchmarkProfile measures the rate of the profile sink on the flow of
// the calls test program (ranges end at every branch, taken or not, so
// they are short: the hard case). Run with:
//
//	go test -run XXX -bench Profile ./analysis
//
// and read the insts/s metric.
func BenchmarkProfile(b *testing.B) {
	img, pcs := loadProgram(b, "calls")
	evs := pcsToFlow(b, img, pcs)
	var per uint64
	for _, e := range evs {
		per += e.N
	}
	p := New(img, Options{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range evs {
			p.Event(&evs[j])
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(per)*float64(b.N)/b.Elapsed().Seconds(), "insts/s")
	b.ReportMetric(float64(per)/float64(len(evs)), "insts/range")
	_ = flow.KindRange
}

// BenchmarkProfileTimed is BenchmarkProfile with a timestamp every 8
// ranges (cycle attribution on).
func BenchmarkProfileTimed(b *testing.B) {
	img, pcs := loadProgram(b, "calls")
	raw := pcsToFlow(b, img, pcs)
	var evs []flow.Event
	var per uint64
	tm := uint64(0)
	for i, e := range raw {
		if i%8 == 0 {
			tm += 17
			evs = append(evs, flow.Event{Kind: flow.KindTime, Time: tm, Offset: -1})
		}
		evs = append(evs, e)
		per += e.N
	}
	p := New(img, Options{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range evs {
			if evs[j].Kind == flow.KindTime {
				evs[j].Time += uint64(len(evs)) // keep time going forward across loops
			}
			p.Event(&evs[j])
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(per)*float64(b.N)/b.Elapsed().Seconds(), "insts/s")
}
