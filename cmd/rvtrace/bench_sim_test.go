package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/corpus"
)

// TestBenchSim times a built rvtrace once on the bare-metal programs: one
// row per program with rvtrace's instruction count (coremark's is Spike's
// 33,399,227 less the exit ecall, which traps and does not retire).
func TestBenchSim(t *testing.T) {
	dir := filepath.Dir(filepath.Dir(corpus.Path(t, "ntrace-refcode/elf/coremark.riscv")))
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not in PATH: cannot build rvtrace to time")
	}
	bin := filepath.Join(t.TempDir(), "rvtrace")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	code, out, e := rv(t, "bench", "--sim", "--runs", "1", "--corpus", dir, "--linux-src", "", "--rvtrace", bin,
		"--sv39-prog", "../../examples/bench/sv39bench.elf")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	for _, want := range []string{"| coremark | 33399226 | rvtrace |", "| embench-cubic | 7724337 | rvtrace |",
		"| embench-nbody | 6394542 | rvtrace |", "| embench-aha-mont64 | 4541661 | rvtrace |", "| median | 15010 | rvtrace |",
		"| sv39bench (Sv39) | 44931065 | rvtrace |"} {
		if !strings.Contains(out, want) {
			t.Errorf("no row %q in\n%s", want, out)
		}
	}
}
