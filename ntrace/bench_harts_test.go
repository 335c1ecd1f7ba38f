package ntrace

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/sim"
)

// coremark2 is coremark run on two harts for 40 M instructions (hart 0
// runs the benchmark, hart 1 waits in _start's loop), each hart traced
// by its own encoder (best preset, SRC = hart, a periodic sync every 4
// Ki halfwords), the messages interleaved as the harts ran.
var coremark2 struct {
	once sync.Once
	r    *multiHart
	cfg  Config
}

func coremark2Trace(b *testing.B) (*multiHart, Config) {
	coremark2.once.Do(func() {
		cfg := withSync(Presets["best"], SyncHalfwords, 12)
		cfg.SrcBits = 2
		coremark2.r = runHarts(b, "coremark.riscv", sim.Config{Harts: 2, MaxInstret: 40e6}, cfg, false)
		coremark2.cfg = cfg
	})
	if coremark2.r == nil {
		b.Skip("no coremark trace")
	}
	return coremark2.r, coremark2.cfg
}

// BenchmarkDecodeJobsHarts measures DecodeJobs with 1 job (Decode) and 2
// on the N-Trace of coremark on two harts, to a counting sink and to a
// PC list; run it with GOMAXPROCS=2.
func BenchmarkDecodeJobsHarts(b *testing.B) {
	for _, pcList := range []bool{false, true} {
		for _, jobs := range []int{1, 2} {
			name := "count"
			if pcList {
				name = "pcs"
			}
			b.Run(fmt.Sprintf("%s/jobs=%d", name, jobs), func(b *testing.B) {
				r, cfg := coremark2Trace(b)
				dc := DecoderConfigFrom(cfg)
				b.SetBytes(int64(len(r.trace)))
				b.ReportAllocs()
				b.ResetTimer()
				pieces, redone := 0, 0
				var n uint64
				for i := 0; i < b.N; i++ {
					var sink flow.Sink = &flow.Counter{}
					if pcList {
						sink = flow.NewPCWriter(io.Discard, r.img)
					}
					d := mustDecoder(b, r.img, sink, dc)
					if err := d.DecodeJobs(bytes.NewReader(r.trace), jobs); err != nil {
						b.Fatal(err)
					}
					sink.Close()
					n = d.Stats().Instructions
					if n < 39e6 || d.Stats().Gaps != 0 {
						b.Fatalf("%d instructions, %d gaps; the harts ran 40 M", n, d.Stats().Gaps)
					}
					p, rd := d.ParallelStats()
					pieces, redone = pieces+p, redone+rd
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Minstr/s")
				b.ReportMetric(float64(pieces)/float64(b.N), "pieces/op")
				b.ReportMetric(float64(redone)/float64(b.N), "redone/op")
			})
		}
	}
}
