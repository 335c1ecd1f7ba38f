package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hartMemRecords returns the MR/MW records of hart h in a full Tarmac
// file (cpu<h>), as memRecords.
func hartMemRecords(t *testing.T, path string, h int) []string {
	t.Helper()
	return memRecordsMatching(t, path, fmt.Sprintf(`\bcpu%d (M[RW]\d+ .*)$`, h))
}

// TestCLIDataTraceTwoHarts: mt-shared (two harts adding to shared
// memory with loads, stores, AMOs and lr/sc) run with --harts 2 --trace
// etrace --data-trace, unified and split, written directly (-o) and
// through the trace system (--trace-capture, and the funnel's tap -o);
// rvtrace decode --data-harts 2 --src K --tarmac gives exactly hart K's
// MR/MW records of the simulator's full Tarmac (cpuK), and hart K's PCs
// exactly (run --pcs with {hart}).
func TestCLIDataTraceTwoHarts(t *testing.T) {
	elf := filepath.Join("..", "..", "examples", "mt-shared", "mt-shared.elf")
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	for _, proto := range []string{"unified", "split"} {
		for _, capture := range []bool{false, true} {
			name := fmt.Sprintf("%s capture=%v", proto, capture)
			run := []string{"run", "--harts", "2", "--max-instret", "2000000", "--trace", "etrace", "--data-trace", "--data-protocol", proto,
				"-o", p("mt.te"), "--tarmac-full", p("sim.tarmac"), "--pcs", p("run{hart}.pcs")}
			traces := []string{"mt.te"}
			if capture {
				run = append(run, "--trace-capture", p("cap.te"))
				traces = append(traces, "cap.te")
			}
			code, _, e := rv(t, append(run, elf)...)
			if code != 0 {
				t.Fatalf("%s: run: exit %d: %s", name, code, e)
			}
			if !strings.Contains(e, "--data-harts 2") {
				t.Errorf("%s: run does not say how to decode: %s", name, e)
			}
			for _, tr := range traces {
				for h := 0; h < 2; h++ {
					out := p(fmt.Sprintf("dec%d.tarmac", h))
					code, _, e := rv(t, "decode", "--protocol", "etrace", "--encap", "utdd", "--src-bits", "2", "--data-trace", "--data-protocol", proto,
						"--data-harts", "2", "--image", elf, "--src", fmt.Sprint(h), p(tr), "--tarmac", out, "--pcs", p("dec.pcs"))
					if code != 0 {
						t.Fatalf("%s %s: decode --src %d: exit %d: %s", name, tr, h, code, e)
					}
					runPCs, _ := os.ReadFile(p(fmt.Sprintf("run%d.pcs", h)))
					decPCs, _ := os.ReadFile(p("dec.pcs"))
					if len(runPCs) == 0 || !bytes.Equal(runPCs, decPCs) {
						t.Errorf("%s %s: hart %d: the decoded PCs (%d bytes) are not the run's (%d bytes)", name, tr, h, len(decPCs), len(runPCs))
					}
					want, got := hartMemRecords(t, p("sim.tarmac"), h), memRecords(t, out)
					if len(want) < 250 || strings.Join(got, "\n") != strings.Join(want, "\n") {
						t.Errorf("%s %s: hart %d: %d MR/MW records decoded, the simulator wrote %d, or they differ", name, tr, h, len(got), len(want))
					}
				}
			}
		}
	}
	// the data source IDs follow the harts: a wrong --data-harts is refused
	if code, _, e := rv(t, "run", "--harts", "2", "--trace", "etrace", "--data-trace", "--data-harts", "3", "-o", p("x.te"), elf); code == 0 || !strings.Contains(e, "--data-harts 3") {
		t.Errorf("run --harts 2 --data-harts 3: exit %d: %s", code, e)
	}
	if code, _, e := rv(t, "decode", "--protocol", "etrace", "--encap", "utdd", "--src-bits", "2", "--data-trace", "--data-harts", "2", "--data-src-id", "2",
		"--image", elf, p("mt.te")); code == 0 || !strings.Contains(e, "--data-src-id") {
		t.Errorf("decode --data-harts with --data-src-id: exit %d: %s", code, e)
	}
	if code, _, e := rv(t, "decode", "--protocol", "etrace", "--encap", "utdd", "--src-bits", "1", "--data-trace", "--data-harts", "2",
		"--image", elf, p("mt.te")); code == 0 || !strings.Contains(e, "too narrow") {
		t.Errorf("decode --data-harts 2 --src-bits 1: exit %d: %s", code, e)
	}
}

// TestCLIDataHartsHint: a data trace of two harts (run --harts 2
// --data-trace: hart h's data packets carry source ID 2+h) decoded
// without --data-harts is flagged (gaps, exit 3) and stderr says once
// which flags decode it; with them the decode is clean and says nothing.
// With --data-trace alone the frames of sources 2 and 3 are gaps of an
// unknown source (not parsed as hart 0's instruction packets).
func TestCLIDataHartsHint(t *testing.T) {
	elf := filepath.Join("..", "..", "examples", "mt-shared", "mt-shared.elf")
	dir := t.TempDir()
	tr := filepath.Join(dir, "mt.te")
	if code, _, e := rv(t, "run", "--harts", "2", "--max-instret", "2000000", "--trace", "etrace", "--data-trace", "-o", tr, elf); code != 0 {
		t.Fatalf("run: exit %d: %s", code, e)
	}
	dec := []string{"decode", "--protocol", "etrace", "--encap", "utdd", "--src-bits", "2", "--image", elf, "--src", "0"}
	for _, c := range []struct {
		flags []string
		also  string // in stderr too
	}{
		{nil, "never had a sync packet"},
		{[]string{"--data-trace"}, "unknown trace source: a frame of source 2"},
	} {
		code, _, e := rv(t, append(append(dec, c.flags...), tr)...)
		if code != 3 {
			t.Errorf("decode %v without --data-harts: exit %d, want 3 (gaps): %s", c.flags, code, e)
		}
		if n := strings.Count(e, "hint:"); n != 1 || !strings.Contains(e, "source IDs 2, 3") ||
			!strings.Contains(e, "decode with --data-trace --data-harts 2") || !strings.Contains(e, c.also) {
			t.Errorf("decode %v without --data-harts: %d hints, or not the flags: %s", c.flags, n, e)
		}
	}
	code, _, e := rv(t, append(dec, "--data-trace", "--data-harts", "2", tr)...)
	if code != 0 || strings.Contains(e, "hint:") || !strings.Contains(e, " 0 gaps") {
		t.Errorf("decode --data-trace --data-harts 2: exit %d: %s", code, e)
	}
	// three harts (the third makes no access: no source ID 5) decoded
	// with --data-harts 2: source ID 4 is no hart's
	tr3 := filepath.Join(dir, "mt3.te")
	if code, _, e := rv(t, "run", "--harts", "3", "--max-instret", "2000000", "--trace", "etrace", "--data-trace", "-o", tr3, elf); code != 0 {
		t.Fatalf("run --harts 3: exit %d: %s", code, e)
	}
	code, _, e = rv(t, "decode", "--protocol", "etrace", "--encap", "utdd", "--src-bits", "3", "--data-trace", "--data-harts", "2", "--image", elf, tr3)
	if code != 3 || strings.Count(e, "hint:") != 1 || !strings.Contains(e, "frames of source ID 4 belong to no hart of --data-harts 2") ||
		!strings.Contains(e, "decode with --data-trace --data-harts 3") {
		t.Errorf("decode of 3 harts with --data-harts 2: exit %d: %s", code, e)
	}
}
