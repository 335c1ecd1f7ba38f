package pmu

import (
	"bytes"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/rvtrace/rvtrace/image"
)

// Pprof writes one sample per address with every count, by sample type,
// and names the functions; the result parses back.
func TestPprof(t *testing.T) {
	m := newModel(t, Config{})
	m.Track = true
	p := NewProfile()
	// f: 100 loads over 100 lines (all L1D misses); g: 10 plain
	for i := uint64(0); i < 100; i++ {
		pc := 0x1000 + 4*(i%4)
		p.Add(pc, m, 1+m.Retire(pc, 4, KindLoad, 0x80000000+64*i, pc+4, 0))
	}
	for i := uint64(0); i < 10; i++ {
		p.Add(0x2000, m, 1+m.Retire(0x2000, 4, KindOther, 0, 0x2004, 0))
	}
	frames := func(pc uint64, buf []image.Frame) []image.Frame {
		if pc < 0x2000 {
			return append(buf, image.Frame{Func: "f", File: "f.c", Line: int(pc & 0xf)})
		}
		return append(buf, image.Frame{})
	}
	var buf bytes.Buffer
	if err := p.WritePprof(&buf, frames, nil); err != nil {
		t.Fatal(err)
	}
	pp, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(pp.SampleType) != len(PprofSampleTypes) || pp.DefaultSampleType != "cycles" {
		t.Fatalf("sample types %v, default %q", pp.SampleType, pp.DefaultSampleType)
	}
	idx := map[string]int{}
	for i, st := range pp.SampleType {
		idx[st.Type] = i
	}
	sum := map[string]map[string]int64{}
	for _, s := range pp.Sample {
		fn := s.Location[0].Line[0].Function.Name
		if sum[fn] == nil {
			sum[fn] = map[string]int64{}
		}
		for _, st := range PprofSampleTypes {
			sum[fn][st] += s.Value[idx[st]]
		}
	}
	if len(pp.Sample) != 5 || sum["f"]["instructions"] != 100 || sum["f"]["l1d_miss"] != 100 ||
		sum["f"]["l1d_access"] != 100 || sum["?"]["instructions"] != 10 || sum["?"]["l1d_miss"] != 0 {
		t.Errorf("%d samples, per function %v", len(pp.Sample), sum)
	}
	if want := int64(100 + 10 + m.Total(int(HwStalledCyclesBackend)) + m.Total(int(HwStalledCyclesFrontend))); sum["f"]["cycles"]+sum["?"]["cycles"] != want {
		t.Errorf("cycles %d + %d, want %d", sum["f"]["cycles"], sum["?"]["cycles"], want)
	}
}
