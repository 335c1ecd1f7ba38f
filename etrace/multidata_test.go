package etrace

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/sim"
)

// multiDataRun is a run of mt-shared (two harts working on shared
// memory) with each hart traced by its own encoder with data trace, into
// one Funnel.
type multiDataRun struct {
	img   *image.Set
	trace []byte
	recs  [][]memRec // each hart's memory records (the observer's)
}

// multiDataConfig returns the configuration of a trace of harts harts
// with data trace (fields f, split or unified), as a Demux is given it:
// instruction source IDs 0..harts-1, data source IDs harts.. 2*harts-1.
func multiDataConfig(harts int, f DataFields, split bool) Config {
	cfg := DefaultConfig()
	cfg.Encap = EncapUTDD
	cfg.SrcBits = 1
	for 1<<cfg.SrcBits < 2*harts {
		cfg.SrcBits++
	}
	cfg.Data = &DataConfig{Fields: f, Split: split, Harts: harts, SrcID: uint32(harts)}
	return cfg
}

// runMultiData runs examples/mt-shared/mt-shared.elf on two harts, each
// with its data port and its encoder (source ID h, data source ID 2+h).
func runMultiData(t testing.TB, cfg Config) *multiDataRun {
	t.Helper()
	const harts = 2
	path := filepath.Join("..", "examples", "mt-shared", "mt-shared.elf")
	r := &multiDataRun{img: image.NewSet(), recs: make([][]memRec, harts)}
	if err := r.img.AddELF(path); err != nil {
		t.Fatal(err)
	}
	m, err := sim.New(sim.Config{Harts: harts, Quantum: 50, MaxInstret: 2_000_000})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadELF(path); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	fun := NewFunnel(&buf)
	ports := make([]*sim.DataPort, harts)
	recs := make([]*memRecorder, harts)
	for h := 0; h < harts; h++ {
		c := cfg
		d := *cfg.Data
		c.SrcID, d.SrcID = uint32(h), uint32(harts+h)
		c.Data = &d
		enc, err := NewEncoder(fun, c, r.img)
		if err != nil {
			t.Fatal(err)
		}
		de, err := NewDataEncoder(enc)
		if err != nil {
			t.Fatal(err)
		}
		recs[h] = &memRecorder{}
		ports[h] = sim.NewDataPort(m, de)
		ports[h].Next = recs[h]
		if d.Split {
			if err := ports[h].SetSplit(de.cfg.LRIDWidth); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.SetObserver(h, ports[h]); err != nil {
			t.Fatal(err)
		}
		if err := m.SetIngress(h, ports[h].Ingress(de)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := m.Run()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("mt-shared on %d harts: exit %d, %v", harts, res.ExitCode, err)
	}
	for h := 0; h < harts; h++ {
		r.recs[h] = recs[h].recs
		if len(r.recs[h]) < 250 {
			t.Fatalf("hart %d made %d memory accesses", h, len(r.recs[h]))
		}
	}
	r.trace = buf.Bytes()
	return r
}

// srcData collects each source's decoded accesses, warnings and gaps.
type srcData map[uint32]*dataSink

func (s srcData) Event(e *flow.Event) error {
	d := s[e.Src]
	if d == nil {
		d = &dataSink{}
		s[e.Src] = d
	}
	return d.Event(e)
}

func (s srcData) Close() error { return nil }

// demuxData decodes a trace of several harts with data trace.
func demuxData(t *testing.T, cfg Config, img *image.Set, trace []byte) (srcData, error) {
	t.Helper()
	s := srcData{}
	dm, err := NewDemux(img, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, dm.Decode(bytes.NewReader(trace))
}

// frameSrcs returns the offset, length and source ID of every frame of
// a UTDD trace.
func frameSrcs(t *testing.T, cfg Config, trace []byte) (offs [][2]int, srcs []uint32) {
	t.Helper()
	sc := NewScanner(bytes.NewReader(trace), &cfg)
	for sc.Scan() {
		fr := sc.Frame()
		offs = append(offs, [2]int{int(fr.Offset), int(sc.Offset() - fr.Offset)})
		srcs = append(srcs, fr.SrcID)
	}
	if sc.Err() != nil {
		t.Fatal(sc.Err())
	}
	return offs, srcs
}

// TestMultiDataRoundTrip: two harts on shared memory, each traced with
// data trace (every data option, unified and split protocols) into one
// funnel; the harts' data frames interleave in the stream, and the Demux
// gives each hart exactly its own memory records, as the simulator's
// observer reported them, with no warning.
func TestMultiDataRoundTrip(t *testing.T) {
	for _, split := range []bool{false, true} {
		for _, f := range []DataFields{DataAddrValue, DataAddrOnly, DataValueOnly} {
			name := fmt.Sprintf("%s split=%v", f, split)
			cfg := multiDataConfig(2, f, split)
			r := runMultiData(t, cfg)
			_, srcs := frameSrcs(t, cfg, r.trace)
			per := map[uint32]int{}
			switches := 0
			for i, s := range srcs {
				per[s]++
				if i > 0 && s >= 2 && srcs[i-1] >= 2 && s != srcs[i-1] {
					switches++
				}
			}
			if len(per) != 4 || switches < 10 {
				t.Errorf("%s: frames per source ID %v, %d switches between the harts' data frames", name, per, switches)
			}
			s, err := demuxData(t, cfg, r.img, r.trace)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for h := uint32(0); h < 2; h++ {
				d := s[h]
				if d == nil {
					t.Fatalf("%s: no flow for hart %d", name, h)
				}
				if len(d.issues) > 0 {
					t.Errorf("%s: hart %d: %v", name, h, &d.issues[0])
				}
				compareRecs(t, fmt.Sprintf("%s hart %d", name, h), f, records(d.data), r.recs[h])
			}
			if len(s) != 2 {
				t.Errorf("%s: events of %d sources", name, len(s))
			}
		}
	}
}

// TestMultiDataCorrupt damages (a reserved format) or drops one data
// frame of hart 0 in a two-hart trace: hart 0 reports it (a warning with
// the byte offset) and joins no access it is not sure of, while hart 1's
// accesses stay exact and unreported.
func TestMultiDataCorrupt(t *testing.T) {
	cfg := multiDataConfig(2, DataAddrValue, false)
	r := runMultiData(t, cfg)
	offs, srcs := frameSrcs(t, cfg, r.trace)
	var h0 [][2]int // hart 0's data frames
	for i, s := range srcs {
		if s == 2 {
			h0 = append(h0, offs[i])
		}
	}
	if len(h0) < 100 {
		t.Fatalf("%d data frames of hart 0", len(h0))
	}
	pay := 1 + cfg.srcBytes() // header, source ID
	for _, tc := range []struct {
		name string
		edit func(f [2]int) []byte
	}{
		{"format", func(f [2]int) []byte {
			b := append([]byte{}, r.trace...)
			b[f[0]+pay] |= 7 // reserved format 111
			return b
		}},
		{"drop", func(f [2]int) []byte {
			return append(append([]byte{}, r.trace[:f[0]]...), r.trace[f[0]+f[1]:]...)
		}},
	} {
		for _, k := range []int{1, len(h0) / 2, len(h0) - 1} {
			f := h0[k]
			name := fmt.Sprintf("%s frame %d (byte %d)", tc.name, k, f[0])
			s, err := demuxData(t, cfg, r.img, tc.edit(f))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			d0, d1 := s[0], s[1]
			if d0 == nil || d1 == nil {
				t.Fatalf("%s: a hart has no flow", name)
			}
			if len(d0.issues) == 0 {
				t.Errorf("%s: hart 0 reports nothing", name)
			}
			for _, e := range d0.issues {
				if e.Offset < 0 || e.Kind != flow.KindWarn {
					t.Errorf("%s: hart 0: %v, want a warning with an offset", name, &e)
				}
			}
			if tc.name == "format" && (len(d0.issues) == 0 || d0.issues[0].Offset != int64(f[0])) {
				t.Errorf("%s: hart 0's first report is not at the damaged frame: %v", name, d0.issues)
			}
			got := records(d0.data)
			if len(got) >= len(r.recs[0]) {
				t.Errorf("%s: hart 0 joined %d accesses of %d despite the damage", name, len(got), len(r.recs[0]))
			}
			if tc.name == "format" {
				n := min(len(got), len(r.recs[0]))
				compareRecs(t, name+" hart 0", DataAddrValue, got[:n], r.recs[0][:n])
			}
			if len(d1.issues) > 0 {
				t.Errorf("%s: hart 1: %v", name, &d1.issues[0])
			}
			compareRecs(t, name+" hart 1", DataAddrValue, records(d1.data), r.recs[1])
		}
	}
}

// TestMultiDataMovedFrame: a data frame of hart 0 whose source ID is
// damaged into hart 1's data source: hart 0 lacks a packet and hart 1 has
// one too many, and both say so (warnings with byte offsets), rather than
// join the packet to hart 1's instructions silently.
func TestMultiDataMovedFrame(t *testing.T) {
	cfg := multiDataConfig(2, DataAddrValue, false)
	r := runMultiData(t, cfg)
	offs, srcs := frameSrcs(t, cfg, r.trace)
	var h0 [][2]int
	for i, s := range srcs {
		if s == 2 {
			h0 = append(h0, offs[i])
		}
	}
	for _, k := range []int{1, len(h0) / 2, len(h0) - 1} {
		b := append([]byte{}, r.trace...)
		b[h0[k][0]+1] = 3 // the source ID byte
		s, err := demuxData(t, cfg, r.img, b)
		if err != nil {
			t.Fatalf("frame %d: %v", k, err)
		}
		for h := uint32(0); h < 2; h++ {
			if d := s[h]; d == nil || len(d.issues) == 0 {
				t.Errorf("frame %d (byte %d) moved to hart 1's data: hart %d reports nothing", k, h0[k][0], h)
			}
		}
	}
}

// TestMultiDataStraySource: with three harts (source IDs up to 5 in 3
// bits), a frame of source ID 6 or 7 is no hart's: it is a gap in every
// hart following its program, never a source of its own.
func TestMultiDataStraySource(t *testing.T) {
	cfg := multiDataConfig(2, DataAddrValue, false)
	r := runMultiData(t, cfg)
	offs, srcs := frameSrcs(t, cfg, r.trace)
	// re-frame the trace with 3 bits of source ID, as a 3-hart trace
	c3 := multiDataConfig(3, DataAddrValue, false)
	var b []byte
	stray := -1
	for i, f := range offs {
		fr := r.trace[f[0] : f[0]+f[1]]
		src := srcs[i]
		if src >= 2 {
			src++ // data source IDs 3, 4
		}
		if stray < 0 && i > len(offs)/2 && srcs[i] == 2 {
			src, stray = 6, len(b)
		}
		b = append(b, fr[0])
		b = append(b, byte(src))
		b = append(b, fr[2:]...)
	}
	s, err := demuxData(t, c3, r.img, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 2 {
		t.Errorf("events of %d sources, want the 2 harts'", len(s))
	}
	for h := uint32(0); h < 2; h++ {
		d := s[h]
		found := false
		for _, e := range d.issues {
			found = found || e.Kind == flow.KindGap && e.Offset == int64(stray) && errors.Is(e.Err, decode.ErrMalformed) &&
				strings.Contains(e.Err.Error(), "source ID 6 is no hart's")
		}
		if !found {
			t.Errorf("hart %d: no gap at byte %d: %v", h, stray, d.issues)
		}
	}
	if d := s[1]; len(records(d.data)) > len(r.recs[1]) {
		t.Errorf("hart 1 joined more accesses than it made")
	}
}

// FuzzMultiDataDecode decodes damaged two-hart data traces: no panic, a
// decode.Error when the whole trace is refused, and events only of the
// two harts' instruction sources (a data source ID is never a source of
// its own).
func FuzzMultiDataDecode(f *testing.F) {
	cfg := multiDataConfig(2, DataAddrValue, false)
	r := runMultiData(f, cfg)
	f.Add(r.trace[:len(r.trace)/8])
	f.Add(r.trace)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		s := srcData{}
		dm, err := NewDemux(r.img, s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		dm.MaxSteps = 1 << 16
		if err := dm.Decode(bytes.NewReader(b)); err != nil {
			var de *decode.Error
			if !errors.As(err, &de) {
				t.Fatalf("%T %v", err, err)
			}
		}
		for src := range s {
			if src >= 2 {
				t.Fatalf("events of source %d", src)
			}
		}
	})
}

// BenchmarkMultiDataDecode decodes the two-hart data trace of mt-shared
// with the Demux (each hart's decoder and data joiner); it reports the
// instructions decoded per second.
func BenchmarkMultiDataDecode(b *testing.B) {
	cfg := multiDataConfig(2, DataAddrValue, false)
	r := runMultiData(b, cfg)
	var instrs uint64
	b.SetBytes(int64(len(r.trace)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := srcData{}
		dm, err := NewDemux(r.img, s, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := dm.Decode(bytes.NewReader(r.trace)); err != nil {
			b.Fatal(err)
		}
		instrs = s[0].instrs + s[1].instrs
	}
	b.ReportMetric(float64(instrs)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Minstr/s")
}

// TestMultiDataDump: the dump of a two-hart data trace lists each hart's
// data packets with its source ID and decompresses them against that
// hart's earlier packets: the addresses it shows for source 2+h are hart
// h's accesses, as the Demux (checked against the simulator) decodes them.
func TestMultiDataDump(t *testing.T) {
	cfg := multiDataConfig(2, DataAddrValue, false)
	r := runMultiData(t, cfg)
	s, err := demuxData(t, cfg, r.img, r.trace)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	st, err := DumpWith(bytes.NewReader(r.trace), &out, &cfg, DumpOptions{})
	if err != nil || st.Errors > 0 {
		t.Fatalf("dump: %v, %d errors", err, st.Errors)
	}
	re := regexp.MustCompile(`src=(\d+) .* -> \S+ @(0x[0-9a-f]+)`)
	got := map[string][]string{}
	for _, l := range strings.Split(out.String(), "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			got[m[1]] = append(got[m[1]], m[2])
		}
	}
	for h := 0; h < 2; h++ {
		var want []string
		for _, e := range s[uint32(h)].data {
			want = append(want, fmt.Sprintf("%#x", e.Access.DAddr))
		}
		g := got[fmt.Sprint(2+h)]
		if len(want) < 250 || strings.Join(g, " ") != strings.Join(want, " ") {
			t.Errorf("hart %d: the dump lists %d data addresses for source %d, the decoder %d, or they differ", h, len(g), 2+h, len(want))
		}
	}
}
