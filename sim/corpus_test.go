package sim

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// corpusDir is ../shared/corpus/ntrace-refcode seen from the repository
// root (tests run in the package directory).
const corpusDir = "../../shared/corpus/ntrace-refcode"

func corpusOrSkip(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("corpus %s absent (../shared/corpus from the repository root): %v", corpusDir, err)
	}
	return corpusDir
}

// spikeCounts reads the INSTR figures of results-all0.txt.
func spikeCounts(t testing.TB, dir string) map[string]uint64 {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "results-all0.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	re := regexp.MustCompile(`^(\S+)-report\.txt:Stat: .* (\d+) instr,`)
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			n, _ := strconv.ParseUint(m[2], 10, 64)
			out[m[1]] = n
		}
	}
	if len(out) != 32 {
		t.Fatalf("results-all0.txt: %d workloads, want 32", len(out))
	}
	return out
}

// TestCorpus runs every bare-metal program of the corpus to its HTIF exit
// and checks Spike's instruction counts.
//
// The INSTR figures of results-all0.txt count what Spike's log lists from
// the entry point (after the 5 boot-ROM instructions) to the store that
// writes the exit code to tohost, that store included: the retired
// instructions plus the instructions that trapped (coremark exits through
// an ecall that the trap handler turns into the tohost write; Spike lists
// the ecall, which does not retire). The programs that print do so
// through HTIF syscalls whose replies come when Spike's host polls tohost,
// every 5000 instructions, so the spin loops waiting for fromhost are part
// of the counts; the simulator's default HTIF polling reproduces that.
func TestCorpus(t *testing.T) {
	dir := corpusOrSkip(t)
	counts := spikeCounts(t, dir)
	files, err := filepath.Glob(filepath.Join(dir, "elf", "*.riscv"))
	if err != nil || len(files) != 36 {
		t.Fatalf("corpus: %d ELF files (%v), want 36", len(files), err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".riscv")
		switch name {
		case "pk", "xrle":
			continue // TestCorpusPK, TestCorpusXrle
		}
		t.Run(name, func(t *testing.T) {
			cfg := Config{MaxInstret: 100e6}
			if name == "test_discon_branch_exception" {
				// Its exit path is an illegal-instruction trap on
				// pmpcfg0 (a hart without PMP, Spike --pmpregions=0).
				cfg.PMPEntries = -1
			}
			var out bytes.Buffer
			cfg.Stdout, cfg.Stderr = &out, &out
			res, err := RunELF(path, cfg)
			if err != nil {
				t.Fatalf("%v\noutput:\n%s", err, out.String())
			}
			if res.ExitCode != 0 {
				t.Fatalf("exit code %d\noutput:\n%s", res.ExitCode, out.String())
			}
			// the run ends on the exit write: nothing retires after it
			if res.Instret != res.ExitInstret {
				t.Errorf("%d instructions retired, %d when the exit was written", res.Instret, res.ExitInstret)
			}
			want, ok := counts[name]
			if !ok {
				return // pmp, br_j_asm, test_discon: not in the tables
			}
			got := res.ExitInstret + res.Harts[0].Exceptions
			if got != want {
				t.Errorf("instructions to the exit: %d retired + %d trapped = %d, Spike %d",
					res.ExitInstret, res.Harts[0].Exceptions, got, want)
			}
		})
	}
}

// TestCorpusTraps checks the traps the exception tests take.
func TestCorpusTraps(t *testing.T) {
	dir := corpusOrSkip(t)
	for _, tc := range []struct {
		name       string
		exceptions uint64
		interrupts uint64
		pmp        int
	}{
		{"br_j_asm", 1, 1, 0},                      // machine timer interrupt, then an illegal instruction
		{"test_discon_branch_exception", 1, 0, -1}, // csrw pmpcfg0 without PMP (the run ends on its exit write, before the ecall after it)
		{"coremark", 1, 0, 0},                      // exit through ecall
	} {
		res, err := RunELF(filepath.Join(dir, "elf", tc.name+".riscv"), Config{PMPEntries: tc.pmp, MaxInstret: 100e6})
		if err != nil || res.ExitCode != 0 {
			t.Errorf("%s: exit %d, %v", tc.name, res.ExitCode, err)
			continue
		}
		if h := res.Harts[0]; h.Exceptions != tc.exceptions || h.Interrupts != tc.interrupts {
			t.Errorf("%s: %d exceptions, %d interrupts; want %d, %d", tc.name, h.Exceptions, h.Interrupts, tc.exceptions, tc.interrupts)
		}
	}
}

// TestCorpusMultiHart runs the multi-threaded benchmarks on 2 harts (the
// reference counts are single-hart runs, checked by TestCorpus).
func TestCorpusMultiHart(t *testing.T) {
	dir := corpusOrSkip(t)
	for _, name := range []string{"mt-matmul", "mt-vvadd"} {
		res, err := RunELF(filepath.Join(dir, "elf", name+".riscv"), Config{Harts: 2, MaxInstret: 100e6})
		if err != nil || res.ExitCode != 0 {
			t.Errorf("%s on 2 harts: exit %d, %v", name, res.ExitCode, err)
			continue
		}
		if len(res.Harts) != 2 || res.Harts[1].Instret == 0 {
			t.Errorf("%s: hart 1 did not run: %+v", name, res.Harts)
		}
	}
}

// TestCorpusXrle: xrle (t1/test.elf) has no HTIF; it ends in myExit, an
// endless loop. Its retired PCs from main must equal t1/test-PCONLY.txt
// (the reference's 164,959 PCs, main to the call of myExit).
func TestCorpusXrle(t *testing.T) {
	dir := corpusOrSkip(t)
	data, err := os.ReadFile(filepath.Join(dir, "t1", "test-PCONLY.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(data))
	want := make([]uint64, len(lines))
	for i, l := range lines {
		if want[i], err = strconv.ParseUint(strings.TrimPrefix(strings.ToLower(l), "0x"), 16, 64); err != nil {
			t.Fatal(err)
		}
	}
	m, err := New(Config{MaxInstret: 1_000_000})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadELF(filepath.Join(dir, "elf", "xrle.riscv")); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	started := false
	m.SetPCHook(0, func(pc uint64) {
		if pc == want[0] {
			started = true
		}
		if started && len(got) < len(want) {
			got = append(got, pc)
		}
	})
	_, err = m.Run()
	var ge *GuestError
	if !errors.As(err, &ge) || !strings.Contains(ge.Msg, "instruction limit") {
		t.Fatalf("xrle should spin in myExit until the instruction limit: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d PCs from main, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("PC %d: %#x, want %#x", i, got[i], want[i])
		}
	}
}

// TestCorpusPK: riscv-pk boots (it finds HTIF, memory and the CLINT in the
// device tree at a1), asks the host for its arguments and, given no
// payload, says so and shuts down with code -1, as spike pk does.
func TestCorpusPK(t *testing.T) {
	dir := corpusOrSkip(t)
	var out bytes.Buffer
	res, err := RunELF(filepath.Join(dir, "elf", "pk.riscv"), Config{Stdout: &out, Stderr: &out, MaxInstret: 10e6})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != -1 || !strings.Contains(out.String(), "tell me what ELF to load!") {
		t.Fatalf("exit %d, output %q", res.ExitCode, out.String())
	}
}
