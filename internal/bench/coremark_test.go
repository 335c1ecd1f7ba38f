package bench

import (
	"bytes"
	"io"
	"sync"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/internal/corpus"
	"github.com/rvtrace/rvtrace/ntrace"
	"github.com/rvtrace/rvtrace/sim"
)

// coremarkTrace runs coremark on the simulator with live encoding in the
// preset and returns the image, the trace and the instruction count.
var coremarkCache sync.Map

type cmTrace struct {
	img   *image.Set
	trace []byte
	n     uint64
}

func coremarkTrace(b *testing.B, preset string) *cmTrace {
	if v, ok := coremarkCache.Load(preset); ok {
		return v.(*cmTrace)
	}
	elf := corpus.Path(b, "ntrace-refcode/elf/coremark.riscv")
	img := image.NewSet()
	if err := img.AddELF(elf); err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	enc, err := ntrace.NewEncoder(&buf, ntrace.Presets[preset])
	if err != nil {
		b.Fatal(err)
	}
	m, err := sim.New(sim.Config{})
	if err != nil {
		b.Fatal(err)
	}
	if err := m.LoadELF(elf); err != nil {
		b.Fatal(err)
	}
	m.SetIngress(0, enc)
	res, err := m.Run()
	if err != nil {
		b.Fatal(err)
	}
	t := &cmTrace{img, buf.Bytes(), res.Harts[0].Instret}
	coremarkCache.Store(preset, t)
	return t
}

func benchCoremarkDecode(b *testing.B, preset string, pcs bool) {
	t := coremarkTrace(b, preset)
	cfg := ntrace.DecoderConfigFrom(ntrace.Presets[preset])
	b.SetBytes(int64(len(t.trace)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var sink flow.Sink = &flow.Counter{}
		if pcs {
			sink = flow.NewPCWriter(io.Discard, t.img)
		}
		d, err := ntrace.NewDecoder(t.img, sink, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Decode(bytes.NewReader(t.trace)); err != nil {
			b.Fatal(err)
		}
		sink.Close()
	}
	b.ReportMetric(float64(t.n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Minstr/s")
}

// Decoding coremark (33.4 M instructions) to a counting sink and to a PC
// list, for the traces of three configurations.
func BenchmarkCoremarkDecodeCountRefBest(b *testing.B) { benchCoremarkDecode(b, "ref-htm-best", false) }
func BenchmarkCoremarkDecodeCountBest(b *testing.B)    { benchCoremarkDecode(b, "best", false) }
func BenchmarkCoremarkDecodeCountBTM(b *testing.B)     { benchCoremarkDecode(b, "ref-btm", false) }
func BenchmarkCoremarkDecodePCsRefBest(b *testing.B)   { benchCoremarkDecode(b, "ref-htm-best", true) }

// benchLive runs coremark on the simulator with live encoding in the
// preset ("" for no tracing), as `rvtrace run --trace ntrace` does.
func benchLive(b *testing.B, preset string) { benchLiveMode(b, preset, false) }

func benchLiveMode(b *testing.B, preset string, async bool) {
	elf := corpus.Path(b, "ntrace-refcode/elf/coremark.riscv")
	var n uint64
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m, err := sim.New(sim.Config{})
		if err != nil {
			b.Fatal(err)
		}
		if err := m.LoadELF(elf); err != nil {
			b.Fatal(err)
		}
		if preset != "" {
			enc, err := ntrace.NewEncoder(io.Discard, ntrace.Presets[preset])
			if err != nil {
				b.Fatal(err)
			}
			if async {
				m.SetIngress(0, ingress.Async(enc))
			} else {
				m.SetIngress(0, enc)
			}
		}
		res, err := m.Run()
		if err != nil {
			b.Fatal(err)
		}
		n += res.Instret
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds()/1e6, "Minstr/s")
}

// Simulating coremark without tracing and with live N-Trace encoding.
func BenchmarkCoremarkSim(b *testing.B)        { benchLive(b, "") }
func BenchmarkCoremarkSimRefBest(b *testing.B) { benchLive(b, "ref-htm-best") }
func BenchmarkCoremarkSimBest(b *testing.B)    { benchLive(b, "best") }

// The same with the encoder on its own goroutine (rvtrace run --async).
func BenchmarkCoremarkSimRefBestAsync(b *testing.B) { benchLiveMode(b, "ref-htm-best", true) }
func BenchmarkCoremarkSimBestAsync(b *testing.B)    { benchLiveMode(b, "best", true) }
