package etrace

import (
	"bytes"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
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
