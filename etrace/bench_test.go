package etrace

import (
	"bytes"
	"io"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/sim"
)

// BenchmarkDecode measures the decode rate of the t1 trace into a counting
// sink; the metric is instructions per second.
func BenchmarkDecode(b *testing.B) {
	for _, m := range []struct {
		name string
		set  func(c *Config)
	}{
		{"baseline", func(c *Config) {}},
		{"all", func(c *Config) {
			c.Options = Options{SIJump: true, ImplicitReturn: true, BranchPrediction: true, JumpTargetCache: true}
		}},
	} {
		b.Run(m.name, func(b *testing.B) {
			img, pcs := loadT1(b)
			blocks := genBlocks(b, img, pcs, genOpts{})
			cfg := DefaultConfig()
			m.set(&cfg)
			data, _ := encode(b, cfg, nil, blocks)
			var c flow.Counter
			d, err := NewDecoder(img, &c, cfg)
			if err != nil {
				b.Fatal(err)
			}
			if err := d.Decode(bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
			n := c.Instructions
			if n != uint64(len(pcs)) {
				b.Fatalf("decoded %d instructions, want %d", n, len(pcs))
			}
			b.ResetTimer()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				d, _ := NewDecoder(img, &c, cfg)
				if err := d.Decode(bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Minstr/s")
		})
	}
}

// BenchmarkEncode measures the encode rate of the t1 blocks.
func BenchmarkEncode(b *testing.B) {
	img, pcs := loadT1(b)
	blocks := genBlocks(b, img, pcs, genOpts{})
	cfg := DefaultConfig()
	var buf bytes.Buffer
	b.ResetTimer()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf.Reset()
		e, _ := NewEncoder(&buf, cfg, nil)
		for j := range blocks {
			e.Block(&blocks[j])
		}
		e.Close()
	}
	b.ReportMetric(float64(len(pcs))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Minstr/s")
}

// BenchmarkEncodeCoremark measures the encoder on the ingress blocks of a
// whole coremark run on the simulator (coalesced port, 33.4 M
// instructions in 6.1 M blocks), recorded once into memory: what live
// tracing (rvtrace run --trace etrace) costs beyond the simulator. The
// encoder has the program image, as run gives it. Metrics: nanoseconds
// per block and instructions per second. The run is bounded (it ends at
// 33.4 M instructions), as every guest run of a test must be. The
// -batches variants give the blocks to Branches in batches of 128, as
// the simulator hands them over (tracectl.Encoder.Blocks).
func BenchmarkEncodeCoremark(b *testing.B) {
	img, blocks := runSim(b, "coremark.riscv", sim.Coalesced, 40_000_000)
	for _, m := range []struct {
		name string
		set  func(c *Config)
	}{
		{"baseline", func(c *Config) {}},
		{"all", func(c *Config) {
			c.Options = Options{SIJump: true, ImplicitReturn: true, BranchPrediction: true, JumpTargetCache: true}
		}},
	} {
		for _, batches := range []bool{false, true} {
			name := m.name
			if batches {
				name += "-batches"
			}
			b.Run(name, func(b *testing.B) {
				benchEncodeCoremark(b, img, blocks, m.set, batches)
			})
		}
	}
}

// benchEncodeCoremark is BenchmarkEncodeCoremark for one configuration
// (set) and way of giving the blocks.
func benchEncodeCoremark(b *testing.B, img *image.Set, blocks []ingress.Block, set func(c *Config), batches bool) {
	cfg := DefaultConfig()
	set(&cfg)
	var st Stats
	b.ReportAllocs()
	for b.Loop() {
		e, err := NewEncoder(io.Discard, cfg, img)
		if err != nil {
			b.Fatal(err)
		}
		for j := 0; j < len(blocks); {
			if !batches {
				if err := e.Block(&blocks[j]); err != nil {
					b.Fatal(err)
				}
				j++
				continue
			}
			bs := blocks[j:min(j+128, len(blocks))]
			j += len(bs)
			for len(bs) > 0 {
				k, err := e.Branches(bs)
				if err != nil {
					b.Fatal(err)
				}
				bs = bs[k:]
			}
		}
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
		st = *e.Stats()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(blocks)), "ns/block")
	b.ReportMetric(float64(st.Instructions)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Minstr/s")
}
