package ntrace

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// t1Blocks returns the ingress blocks of the t1 workload (merged
// straight-line blocks) and its instruction count.
func t1Blocks(b *testing.B) ([]ingress.Block, uint64) {
	img, pcs := loadT1(b)
	src := ingress.NewPCSource(bytes.NewReader(pcs), "t1", img, ingress.PCOptions{})
	var out []ingress.Block
	for {
		blk, err := src.Next()
		if err == io.EOF {
			return out, src.Instructions()
		}
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, *blk)
	}
}

func benchEncode(b *testing.B, preset string) {
	blocks, n := t1Blocks(b)
	cfg := Presets[preset]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		enc, _ := NewEncoder(io.Discard, cfg)
		for j := range blocks {
			enc.Block(&blocks[j])
		}
		enc.Close()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Minstr/s")
}

// BenchmarkEncode measures encoding from in-memory ingress blocks.
func BenchmarkEncodeBTM(b *testing.B)     { benchEncode(b, "ref-btm") }
func BenchmarkEncodeRefBest(b *testing.B) { benchEncode(b, "ref-htm-best") }
func BenchmarkEncodeBest(b *testing.B)    { benchEncode(b, "best") }

func benchDecode(b *testing.B, preset string, pcList bool) {
	img, pcs := loadT1(b)
	cfg := Presets[preset]
	trace, _ := encodeFromPCs(b, img, pcs, cfg, ingress.PCOptions{})
	n := uint64(164959)
	b.SetBytes(int64(len(trace)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var sink flow.Sink = &flow.Counter{}
		if pcList {
			sink = flow.NewPCWriter(io.Discard, img)
		}
		d := mustDecoder(b, img, sink, DecoderConfigFrom(cfg))
		if err := d.Decode(bytes.NewReader(trace)); err != nil {
			b.Fatal(err)
		}
		sink.Close()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Minstr/s")
}

// BenchmarkDecode measures decoding to a counting sink and to a PC list.
func BenchmarkDecodeCountBTM(b *testing.B)     { benchDecode(b, "ref-btm", false) }
func BenchmarkDecodeCountRefBest(b *testing.B) { benchDecode(b, "ref-htm-best", false) }
func BenchmarkDecodeCountBest(b *testing.B)    { benchDecode(b, "best", false) }
func BenchmarkDecodePCListBest(b *testing.B)   { benchDecode(b, "best", true) }

// jobsTrace is a long random path through t1 (calls and returns
// balanced) encoded with the best preset and a periodic sync every 2^12
// halfwords.
var jobsTrace struct {
	once  sync.Once
	img   *image.Set
	trace []byte
	n     int
	err   error
}

func loadJobsTrace(b *testing.B) (*image.Set, []byte, int) {
	jobsTrace.once.Do(func() {
		img, err := integrityImage()
		if err != nil {
			jobsTrace.err = err
			return
		}
		cfg := withSync(Presets["best"], SyncHalfwords, 8)
		cfg.XLEN = img.XLEN()
		truth := synthFlow(img, 1, 4_000_000, true)
		jobsTrace.img, jobsTrace.n = img, len(truth)
		jobsTrace.trace, jobsTrace.err = encodePCs(img, truth, cfg)
	})
	if jobsTrace.err != nil {
		b.Skip(jobsTrace.err)
	}
	return jobsTrace.img, jobsTrace.trace, jobsTrace.n
}

// BenchmarkDecodeJobs measures DecodeJobs with 1 job (Decode) and 2 on a
// trace of 4 million instructions with periodic sync, to a counting sink
// and to a PC list; run it with GOMAXPROCS=2.
func BenchmarkDecodeJobs(b *testing.B) {
	for _, pcList := range []bool{false, true} {
		for _, jobs := range []int{1, 2} {
			name := fmt.Sprintf("count/jobs=%d", jobs)
			if pcList {
				name = fmt.Sprintf("pcs/jobs=%d", jobs)
			}
			b.Run(name, func(b *testing.B) {
				img, trace, n := loadJobsTrace(b)
				cfg := DecoderConfigFrom(withSync(Presets["best"], SyncHalfwords, 8))
				b.SetBytes(int64(len(trace)))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					var sink flow.Sink = &flow.Counter{}
					if pcList {
						sink = flow.NewPCWriter(io.Discard, img)
					}
					d := mustDecoder(b, img, sink, cfg)
					if err := d.DecodeJobs(bytes.NewReader(trace), jobs); err != nil {
						b.Fatal(err)
					}
					sink.Close()
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Minstr/s")
			})
		}
	}
}
