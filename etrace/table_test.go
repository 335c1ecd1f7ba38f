package etrace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/sim"
)

// TestCompressionTable prints bits per instruction per mode for the corpus
// programs run on the simulator (ETRACE_TABLE=1 to run; ETRACE_TABLE_MAX
// bounds the instructions per program, default 20M).
func TestCompressionTable(t *testing.T) {
	if os.Getenv("ETRACE_TABLE") == "" {
		t.Skip("set ETRACE_TABLE=1")
	}
	progs, _ := filepath.Glob(filepath.Join(corpus, "elf", "*.riscv"))
	cols := []string{"baseline", "full-address", "sijump", "return-stack", "return-counter", "predictor", "jump-cache", "all"}
	var b strings.Builder
	fmt.Fprintf(&b, "| program | instructions | %s |\n|---|---:|%s\n", strings.Join(cols, " | "), strings.Repeat("---:|", len(cols)))
	sum := make([]float64, len(cols))
	n := 0
	for _, path := range progs {
		name := filepath.Base(path)
		if strings.HasPrefix(name, "mt-") || name == "pk.riscv" {
			continue
		}
		img := image.NewSet()
		if err := img.AddELF(path); err != nil {
			t.Fatal(err)
		}
		m, _ := sim.New(sim.Config{HTIFImmediate: true, MaxInstret: 20_000_000})
		if err := m.LoadELF(path); err != nil {
			t.Fatal(err)
		}
		rs := &recordSink{}
		m.SetIngress(0, rs)
		if _, err := m.Run(); err != nil && !strings.Contains(err.Error(), "limit") {
			t.Logf("%s: %v", name, err)
		}
		instr := uint64(len(retired(t, img, rs.blocks)))
		fmt.Fprintf(&b, "| %s | %d |", strings.TrimSuffix(name, ".riscv"), instr)
		for i, col := range cols {
			cfg := DefaultConfig()
			for _, md := range modes {
				if md.name == col {
					md.set(&cfg)
				}
			}
			if col == "all" {
				cfg.Options = Options{SIJump: true, ImplicitReturn: true, BranchPrediction: true, JumpTargetCache: true}
			}
			_, st := encode(t, cfg, img, rs.blocks)
			bpi := float64(st.Bytes*8) / float64(instr)
			sum[i] += bpi
			fmt.Fprintf(&b, " %.3f |", bpi)
		}
		b.WriteString("\n")
		n++
	}
	fmt.Fprintf(&b, "| **average** | |")
	for i := range cols {
		fmt.Fprintf(&b, " **%.3f** |", sum[i]/float64(n))
	}
	b.WriteString("\n")
	t.Log("\n" + b.String())
	os.WriteFile("/tmp/etrace_table.md", []byte(b.String()), 0o644)
}
