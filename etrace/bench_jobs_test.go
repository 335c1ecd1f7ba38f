package etrace

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/sim"
)

var cmTrace struct {
	once  sync.Once
	img   *image.Set
	trace []byte
	n     uint64
	err   error
}

// coremarkTrace runs coremark (33.4 M instructions) on the simulator once,
// encoding its E-Trace with the implicit return mode and a sync every
// 256 packets, and returns the image, the trace and the instruction
// count.
func coremarkTrace(b *testing.B) (*image.Set, []byte, uint64, Config) {
	cfg := DefaultConfig()
	cfg.Options.ImplicitReturn = true
	cfg.ResyncPeriod = 256
	if err := cfg.Check(); err != nil {
		b.Fatal(err)
	}
	elf := corpus + "/elf/coremark.riscv"
	if _, err := os.Stat(elf); err != nil {
		b.Skipf("corpus not present (%v)", err)
	}
	cmTrace.once.Do(func() {
		img := image.NewSet()
		if cmTrace.err = img.AddELF(elf); cmTrace.err != nil {
			return
		}
		m, err := sim.New(sim.Config{})
		if err != nil {
			cmTrace.err = err
			return
		}
		if cmTrace.err = m.LoadELF(elf); cmTrace.err != nil {
			return
		}
		var buf bytes.Buffer
		enc, err := NewEncoder(&buf, cfg, nil)
		if err != nil {
			cmTrace.err = err
			return
		}
		m.SetIngress(0, enc)
		res, err := m.Run()
		if err == nil {
			err = enc.Close()
		}
		cmTrace.img, cmTrace.trace, cmTrace.n, cmTrace.err = img, buf.Bytes(), res.Instret, err
	})
	if cmTrace.err != nil {
		b.Fatal(cmTrace.err)
	}
	return cmTrace.img, cmTrace.trace, cmTrace.n, cfg
}

// BenchmarkDecodeJobs measures DecodeJobs with 1 job (Decode) and 2 on
// coremark's E-Trace, to a counting sink and to a PC list; run it with
// GOMAXPROCS=2.
func BenchmarkDecodeJobs(b *testing.B) {
	for _, pcList := range []bool{false, true} {
		for _, jobs := range []int{1, 2} {
			name := "count"
			if pcList {
				name = "pcs"
			}
			b.Run(fmt.Sprintf("%s/jobs=%d", name, jobs), func(b *testing.B) {
				img, trace, n, cfg := coremarkTrace(b)
				b.SetBytes(int64(len(trace)))
				b.ReportAllocs()
				b.ResetTimer()
				redone := 0
				for i := 0; i < b.N; i++ {
					var sink flow.Sink = &flow.Counter{}
					if pcList {
						sink = flow.NewPCWriter(io.Discard, img)
					}
					d, err := NewDecoder(img, sink, cfg)
					if err != nil {
						b.Fatal(err)
					}
					if err := d.DecodeJobs(bytes.NewReader(trace), jobs); err != nil {
						b.Fatal(err)
					}
					sink.Close()
					if got := d.Stats().Instructions; got != n || d.Stats().Gaps != 0 {
						b.Fatalf("%d instructions, %d gaps; coremark ran %d", got, d.Stats().Gaps, n)
					}
					_, r := d.ParallelStats()
					redone += r
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Minstr/s")
				b.ReportMetric(float64(redone)/float64(b.N), "redone/op")
			})
		}
	}
}
