package sim

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rvtrace/rvtrace/pmu"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchCoremarkModel runs coremark with or without the event model and
// reports MIPS of wall time and of process CPU time (the latter is less
// sensitive to other processes on a shared machine).
func benchCoremarkModel(b *testing.B, model bool) {
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
		if model {
			pm, err := pmu.New(pmu.Config{})
			if err != nil {
				b.Fatal(err)
			}
			m.SetEventModel(0, pm)
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
	b.ReportMetric(float64(instr)/cpu.Seconds()/1e6, "cpu-MIPS")
}

// BenchmarkCoremarkNoModel is coremark without the event model (the
// reference for BenchmarkCoremarkPMU).
func BenchmarkCoremarkNoModel(b *testing.B) { benchCoremarkModel(b, false) }

// BenchmarkCoremarkPMU runs coremark with the event model attached: the
// model must keep at least half the speed of BenchmarkCoremarkNoModel.
func BenchmarkCoremarkPMU(b *testing.B) { benchCoremarkModel(b, true) }
