package sim

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rvtrace/rvtrace/ingress"
)

// countSink counts blocks and retired halfwords: the cheapest real sink.
type countSink struct {
	blocks, halfwords uint64
}

func (c *countSink) Block(b *ingress.Block) error {
	c.blocks++
	c.halfwords += uint64(b.IRetire)
	return nil
}
func (c *countSink) Close() error { return nil }

func benchCoremark(b *testing.B, sink bool) {
	dir := corpusOrSkip(b)
	path := filepath.Join(dir, "elf", "coremark.riscv")
	var instr uint64
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		m, err := New(Config{})
		if err != nil {
			b.Fatal(err)
		}
		if err := m.LoadELF(path); err != nil {
			b.Fatal(err)
		}
		if sink {
			m.SetIngress(0, &countSink{})
		}
		c0 := cpuTime()
		res, err := m.Run()
		cpu += cpuTime() - c0
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("coremark: exit %d, %v", res.ExitCode, err)
		}
		instr += res.Instret
	}
	b.ReportMetric(float64(instr)/b.Elapsed().Seconds()/1e6, "MIPS")
	// process CPU time of Run (less sensitive to other processes)
	b.ReportMetric(float64(instr)/cpu.Seconds()/1e6, "cpu-MIPS")
}

// BenchmarkCoremark runs coremark (33.4 M instructions) without tracing.
func BenchmarkCoremark(b *testing.B) { benchCoremark(b, false) }

// BenchmarkCoremarkIngress runs coremark feeding a counting ingress sink
// (coalesced blocks).
func BenchmarkCoremarkIngress(b *testing.B) { benchCoremark(b, true) }
