package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pprofTop runs "go tool pprof -top -sample_index=index" on a profile
// and returns the top function, its flat value and the total.
func pprofTop(t *testing.T, goTool, prof, index string) (fn string, flat, total int64) {
	t.Helper()
	out, err := exec.Command(goTool, "tool", "pprof", "-top", "-sample_index="+index, prof).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -sample_index=%s: %v\n%s", index, err, out)
	}
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(l, "Showing nodes") {
			// "Showing nodes accounting for X, P% of TOTAL total"
			total, _ = strconv.ParseInt(f[len(f)-2], 10, 64)
		}
		if strings.Contains(l, "flat%") && i+1 < len(lines) {
			f := strings.Fields(lines[i+1])
			if len(f) < 6 {
				break
			}
			flat, _ = strconv.ParseInt(f[0], 10, 64)
			return f[5], flat, total
		}
	}
	t.Fatalf("go tool pprof -sample_index=%s: no table\n%s", index, out)
	return
}

// --pmu-pprof writes a pprof profile with one sample type per event:
// the S-mode PMU test's stride walk (one load per 64-byte line over
// 512 KiB) is the top function by L1D misses and by cycles, its
// console output (puts_) the top one by instructions; the cycles and
// instructions add up to the run's.
func TestCLIRunPMUPprof(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go not on PATH: %v", err)
	}
	elf := filepath.Join("..", "..", "examples", "pmu", "pmutest.elf")
	if _, err := os.Stat(elf); err != nil {
		t.Skipf("%s absent (scripts/build-pmu-tests.sh): %v", elf, err)
	}
	dir := t.TempDir()
	prof, tsv := filepath.Join(dir, "pmu.pb.gz"), filepath.Join(dir, "pmu.tsv")
	code, _, e := rv(t, "run", "--machine", "sbi", "--pmu-pprof", prof, "--pmu-profile", tsv, elf)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, e)
	}
	// "rvtrace run: N instructions, C cycles, ..."
	var instr, cycles int64
	if i := strings.Index(e, "rvtrace run: "); i >= 0 {
		f := strings.Fields(e[i+len("rvtrace run: "):])
		if len(f) > 2 {
			instr, _ = strconv.ParseInt(f[0], 10, 64)
			cycles, _ = strconv.ParseInt(f[2], 10, 64)
		}
	}
	if instr == 0 || cycles == 0 {
		t.Fatalf("no run summary in %q", e)
	}
	for _, c := range []struct {
		index, fn string
		total     int64
	}{
		{"l1d_miss", "stride_walk", 0},
		{"cycles", "stride_walk", cycles},
		{"instructions", "puts_", instr},
	} {
		fn, flat, total := pprofTop(t, goTool, prof, c.index)
		if fn != c.fn {
			t.Errorf("top function by %s: %s (%d), want %s", c.index, fn, flat, c.fn)
		}
		if c.total != 0 && total != c.total {
			t.Errorf("%s: profile total %d, run %d", c.index, total, c.total)
		}
		// the TSV has the same per-function count
		data, err := os.ReadFile(tsv)
		if err != nil {
			t.Fatal(err)
		}
		col := map[string]int{"l1d_miss": 6, "cycles": 2, "instructions": 1}[c.index]
		for _, l := range strings.Split(string(data), "\n") {
			if f := strings.Split(l, "\t"); f[0] == fn && len(f) > col {
				if v, _ := strconv.ParseInt(f[col], 10, 64); v != flat {
					t.Errorf("%s of %s: pprof %d, TSV %d", c.index, fn, flat, v)
				}
			}
		}
	}
}
