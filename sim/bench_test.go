package sim

import (
	"io"
	"os/exec"
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

// benchCoremark runs coremark b.N times, with a counting ingress sink
// when sink, and its PC list formatted to io.Discard when pcs.
func benchCoremark(b *testing.B, sink, pcs bool) {
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
		if pcs {
			w := ingress.NewPCWriter(io.Discard)
			m.SetPCList(0, func(pcs []uint64) { w.WritePCs(pcs) })
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
func BenchmarkCoremark(b *testing.B) { benchCoremark(b, false, false) }

// BenchmarkCoremarkIngress runs coremark feeding a counting ingress sink
// (coalesced blocks).
func BenchmarkCoremarkIngress(b *testing.B) { benchCoremark(b, true, false) }

// BenchmarkCoremarkPCList runs coremark writing its PC list (SetPCList,
// formatted by ingress.PCWriter, to io.Discard): run --pcs.
func BenchmarkCoremarkPCList(b *testing.B) { benchCoremark(b, false, true) }

// benchRun times Machine.Run of the machine load prepares, b.N times, and
// reports MIPS of wall time and of process CPU time.
func benchRun(b *testing.B, load func(m *Machine) error) {
	benchRunCfg(b, Config{}, load)
}

// benchRunCfg is benchRun with machines of configuration cfg.
func benchRunCfg(b *testing.B, cfg Config, load func(m *Machine) error) {
	var instr uint64
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		m, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := load(m); err != nil {
			b.Fatal(err)
		}
		c0 := cpuTime()
		res, err := m.Run()
		cpu += cpuTime() - c0
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("exit %d, %v", res.ExitCode, err)
		}
		instr += res.Instret
	}
	b.ReportMetric(float64(instr)/b.Elapsed().Seconds()/1e6, "MIPS")
	b.ReportMetric(float64(instr)/cpu.Seconds()/1e6, "cpu-MIPS")
}

// BenchmarkSv39 runs examples/bench/sv39bench.elf: user code under Sv39
// with a system call delegated to S-mode every 580 instructions (44.9 M
// instructions).
func BenchmarkSv39(b *testing.B) {
	path := filepath.Join("..", "examples", "bench", "sv39bench.elf")
	benchRun(b, func(m *Machine) error { return m.LoadELF(path) })
}

// BenchmarkLinuxSimbench runs examples/bench/simbench.c, built static
// with riscv64-linux-gnu-gcc, in Linux user mode (74 M instructions).
func BenchmarkLinuxSimbench(b *testing.B) {
	gcc, err := exec.LookPath("riscv64-linux-gnu-gcc")
	if err != nil {
		b.Skip("riscv64-linux-gnu-gcc not installed")
	}
	path := filepath.Join(b.TempDir(), "simbench")
	out, err := exec.Command(gcc, "-static", "-O2", "-o", path,
		filepath.Join("..", "examples", "bench", "simbench.c"), "-lm").CombinedOutput()
	if err != nil {
		b.Fatalf("building simbench: %v\n%s", err, out)
	}
	b.ResetTimer()
	benchRun(b, func(m *Machine) error { return m.LoadLinuxELF(path, []string{"simbench"}, nil) })
}

// BenchmarkKernelBoot boots the Linux kit's kernel (Sv39) on the built-in
// SBI to the busybox init script, which powers off (about 0.7 G
// instructions); skipped without the kit (scripts/linux-kit.sh).
func BenchmarkKernelBoot(b *testing.B) {
	dir := linuxKit(b)
	benchRunCfg(b, Config{MaxInstret: bootLimit}, func(m *Machine) error {
		return m.LoadKernel(Kernel{Image: filepath.Join(dir, "Image"),
			Initrd: filepath.Join(dir, "initramfs-busybox.cpio.gz"), Append: "console=ttyS0 rdinit=/init"})
	})
}
