package sim

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/pmu"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of testdata/")

// pmuCountsGolden pins every count the event model produces on a few
// programs (testdata/pmu_counts.golden; go test -run TestPMUCounts
// -update rewrites it): any change of the model or of the way the
// simulator drives it (fast paths) that changes a count fails here.
const pmuCountsGolden = "testdata/pmu_counts.golden"

type pmuCountCase struct {
	name    string
	path    string // ELF
	sbi     bool   // run under the built-in SBI firmware
	cfg     pmu.Config
	maxInst uint64
}

func pmuCountCases() []pmuCountCase {
	elfDir := filepath.Join(corpusDir, "elf")
	prefetch := pmu.DefaultConfig()
	prefetch.Prefetch = true
	small := pmu.Config{
		L1I:  pmu.CacheConfig{Size: 1 << 10, Ways: 2, LineSize: 32},
		L1D:  pmu.CacheConfig{Size: 1 << 10, Ways: 2, LineSize: 32},
		LL:   pmu.CacheConfig{Size: 8 << 10, Ways: 4, LineSize: 64},
		ITLB: pmu.TLBConfig{Entries: 4, Ways: 2}, DTLB: pmu.TLBConfig{Entries: 4, Ways: 2},
		Predictor: pmu.PredictorConfig{Entries: 256, HistoryBits: 0, BTBEntries: 16, RASDepth: 2},
		Prefetch:  true,
	}
	return []pmuCountCase{
		{name: "coremark", path: filepath.Join(elfDir, "coremark.riscv")},
		{name: "dhrystone-prefetch", path: filepath.Join(elfDir, "dhrystone.riscv"), cfg: prefetch},
		{name: "qsort-small", path: filepath.Join(elfDir, "qsort.riscv"), cfg: small},
		{name: "sv39", path: filepath.Join(vmDir, "sv39.elf"), maxInst: 1e6},
		{name: "sv32-small", path: filepath.Join(vmDir, "sv32.elf"), cfg: small, maxInst: 1e6},
		{name: "pmutest", path: pmuTestELF, sbi: true, maxInst: 50_000_000},
		{name: "pmutest-small", path: pmuTestELF, sbi: true, cfg: small, maxInst: 50_000_000},
	}
}

// runPMUCounts runs c with the event model (and, when track, a profile
// hook, which makes every instruction take the model's full path) and
// returns every non-zero count, the hart's cycles and instret, and the
// sum of the cycles the profile hook was given.
func runPMUCounts(t *testing.T, c pmuCountCase, track bool) (string, uint64) {
	t.Helper()
	m, err := New(Config{Stdout: &bytes.Buffer{}, MaxInstret: c.maxInst})
	if err != nil {
		t.Fatal(err)
	}
	if c.sbi {
		err = m.LoadSBI(c.path)
	} else {
		err = m.LoadELF(c.path)
	}
	if err != nil {
		t.Fatal(err)
	}
	pm, err := pmu.New(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetEventModel(0, pm); err != nil {
		t.Fatal(err)
	}
	var profCycles uint64
	if track {
		m.SetProfileHook(0, func(pc uint64, _ *pmu.Model, cycles uint64) { profCycles += cycles })
	}
	res, err := m.Run()
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("exit code %d", res.ExitCode)
	}
	var b strings.Builder
	h := m.Hart(0)
	fmt.Fprintf(&b, "%s cycles %d\n%s instret %d\n", c.name, h.Cycles(), c.name, h.Instret())
	for p := 0; p < pmu.NumPriv; p++ {
		for i := 1; i < pmu.NumDense; i++ {
			if n := pm.Count(p, i); n != 0 {
				fmt.Fprintf(&b, "%s %c %s %d\n", c.name, "USHM"[p], pmu.DenseName(i), n)
			}
		}
	}
	return b.String(), profCycles
}

// TestPMUCounts checks the event model's counts on corpus programs,
// virtual-memory programs and the SBI PMU test against the golden file,
// with and without a profile hook.
func TestPMUCounts(t *testing.T) {
	var all strings.Builder
	skipped := false
	for _, c := range pmuCountCases() {
		if _, err := os.Stat(c.path); err != nil {
			t.Logf("%s: %v (skipped)", c.name, err)
			skipped = true
			continue
		}
		got, _ := runPMUCounts(t, c, false)
		tracked, profCycles := runPMUCounts(t, c, true)
		if tracked != got {
			t.Errorf("%s: counts with a profile hook differ:\n%s", c.name, diffLines(got, tracked))
		}
		all.WriteString(got)
		// the profile hook sees every cycle spent in retired instructions
		// (traps cost none in the timing model)
		var cyc uint64
		fmt.Sscanf(got[strings.Index(got, "cycles ")+len("cycles "):], "%d", &cyc)
		if profCycles != cyc {
			t.Errorf("%s: profile hook cycles %d, hart cycles %d", c.name, profCycles, cyc)
		}
	}
	if *updateGolden {
		if skipped {
			t.Fatal("not updating the golden file with programs missing")
		}
		if err := os.MkdirAll(filepath.Dir(pmuCountsGolden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(pmuCountsGolden, []byte(all.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(pmuCountsGolden)
	if err != nil {
		t.Fatal(err)
	}
	// compare the programs that ran
	ran := map[string]bool{}
	for _, l := range strings.Split(all.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			ran[f[0]] = true
		}
	}
	var w strings.Builder
	for _, l := range strings.SplitAfter(string(want), "\n") {
		if f := strings.Fields(l); len(f) > 0 && ran[f[0]] {
			w.WriteString(l)
		}
	}
	if w.String() != all.String() {
		t.Errorf("event counts differ from %s:\n%s", pmuCountsGolden, diffLines(w.String(), all.String()))
	}
}

// diffLines lists the lines only in want (-) or only in got (+).
func diffLines(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}
