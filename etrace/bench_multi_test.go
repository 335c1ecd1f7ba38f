package etrace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/sim"
)

var cm2Trace struct {
	once  sync.Once
	img   *image.Set
	trace []byte
	n     uint64
	err   error
}

// coremark2Trace runs coremark on two harts for 40 M instructions on the
// simulator once (hart 0 runs the benchmark, hart 1 waits in _start's
// loop, both traced), encoding each hart's E-Trace with its own UTDD
// source ID into one Funnel, with the implicit return mode and a sync
// every 256 packets, and returns the image, the trace and the
// instruction count.
func coremark2Trace(b *testing.B) (*image.Set, []byte, uint64, Config) {
	cfg := DefaultConfig()
	cfg.Options.ImplicitReturn = true
	cfg.ResyncPeriod = 256
	cfg.Encap, cfg.SrcBits = EncapUTDD, 2
	if err := cfg.Check(); err != nil {
		b.Fatal(err)
	}
	elf := corpus + "/elf/coremark.riscv"
	if _, err := os.Stat(elf); err != nil {
		b.Skipf("corpus not present (%v)", err)
	}
	cm2Trace.once.Do(func() {
		img := image.NewSet()
		if cm2Trace.err = img.AddELF(elf); cm2Trace.err != nil {
			return
		}
		m, err := sim.New(sim.Config{Harts: 2, MaxInstret: 40e6})
		if err != nil {
			cm2Trace.err = err
			return
		}
		if cm2Trace.err = m.LoadELF(elf); cm2Trace.err != nil {
			return
		}
		var buf bytes.Buffer
		fun := NewFunnel(&buf)
		var encs []*Encoder
		for h := 0; h < 2; h++ {
			c := cfg
			c.SrcID = uint32(h)
			enc, err := NewEncoder(fun, c, nil)
			if err != nil {
				cm2Trace.err = err
				return
			}
			encs = append(encs, enc)
			m.SetIngress(h, enc)
		}
		_, err = m.Run()
		if errors.Is(err, sim.ErrInstructionLimit) {
			err = nil
		}
		for _, enc := range encs {
			if err == nil {
				err = enc.Close()
			}
		}
		cm2Trace.img, cm2Trace.trace, cm2Trace.n, cm2Trace.err = img, buf.Bytes(), 40e6, err
	})
	if cm2Trace.err != nil {
		b.Fatal(cm2Trace.err)
	}
	return cm2Trace.img, cm2Trace.trace, cm2Trace.n, cfg
}

// BenchmarkDemuxDecodeJobs measures Demux.DecodeJobs with 1 job (Decode)
// and 2 on the E-Trace of coremark on two harts, to a counting sink and
// to a PC list; run it with GOMAXPROCS=2.
func BenchmarkDemuxDecodeJobs(b *testing.B) {
	for _, pcList := range []bool{false, true} {
		for _, jobs := range []int{1, 2} {
			name := "count"
			if pcList {
				name = "pcs"
			}
			b.Run(fmt.Sprintf("%s/jobs=%d", name, jobs), func(b *testing.B) {
				img, trace, n, cfg := coremark2Trace(b)
				b.SetBytes(int64(len(trace)))
				b.ReportAllocs()
				b.ResetTimer()
				pieces, redone := 0, 0
				for i := 0; i < b.N; i++ {
					var sink flow.Sink = &flow.Counter{}
					if pcList {
						sink = flow.NewPCWriter(io.Discard, img)
					}
					m, err := NewDemux(img, sink, cfg)
					if err != nil {
						b.Fatal(err)
					}
					if err := m.DecodeJobs(bytes.NewReader(trace), jobs); err != nil {
						b.Fatal(err)
					}
					sink.Close()
					if got := m.Stats().Instructions; got != n || m.Stats().Gaps != 0 {
						b.Fatalf("%d instructions, %d gaps; the harts ran %d", got, m.Stats().Gaps, n)
					}
					p, r := m.ParallelStats()
					pieces, redone = pieces+p, redone+r
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Minstr/s")
				b.ReportMetric(float64(pieces)/float64(b.N), "pieces/op")
				b.ReportMetric(float64(redone)/float64(b.N), "redone/op")
			})
		}
	}
}
