package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/corpus"
	"github.com/rvtrace/rvtrace/ntrace"
)

// An N-Trace trace of several harts (run --harts N --trace ntrace: one
// encoder per hart, SRC = hart) with periodic sync, for each preset that
// supports several sources, decodes with --jobs 2, 3 and 8 to exactly
// what it decodes to serially: the PC list, JSON lines, flow and Tarmac,
// stderr and the exit status, intact and corrupt (with --strict too),
// split into pieces decoded in parallel (no note that it decodes
// serially); decoded with --jobs 3, each hart's PCs (--src K) are those
// the simulator retired.
func TestDecodeJobsNTraceHartsCLI(t *testing.T) {
	dir := t.TempDir()
	old, oldCPU := ntrace.PieceBytes, numCPU
	numCPU = func() int { return 3 }
	defer func() { ntrace.PieceBytes, numCPU = old, oldCPU }()
	p := func(n string) string { return filepath.Join(dir, n) }
	for _, tc := range []struct {
		elf   string
		harts int
		opts  []string
		piece int // (a few turns of the harts per piece)
	}{
		{filepath.Join("..", "..", "examples", "mt-shared", "mt-shared.elf"), 2,
			[]string{"--preset", "best", "--sync-mode", "1", "--sync-max", "0"}, 32},
		{corpus.Path(t, "ntrace-refcode/elf/mt-matmul.riscv"), 3,
			[]string{"--preset", "htm", "--sync-mode", "3", "--sync-max", "4"}, 600},
		{corpus.Path(t, "ntrace-refcode/elf/mt-matmul.riscv"), 2,
			[]string{"--preset", "btm", "--sync-mode", "1", "--sync-max", "1"}, 1500},
		{corpus.Path(t, "ntrace-refcode/elf/mt-vvadd.riscv"), 4,
			[]string{"--preset", "ref-htm-best", "--sync-mode", "3", "--sync-max", "3"}, 700},
	} {
		elf := tc.elf
		ntrace.PieceBytes = tc.piece
		trace := p(fmt.Sprintf("mt%d.nex", tc.harts))
		run := append([]string{"run", "--harts", fmt.Sprint(tc.harts), "--max-instret", "2000000", "--trace", "ntrace",
			"-o", trace, "--pcs", p("run{hart}.pcs")}, tc.opts...)
		if code, _, e := rv(t, append(run, elf)...); code != 0 {
			t.Fatalf("%d harts %v: run: exit %d: %s", tc.harts, tc.opts, code, e)
		}
		bits := "1"
		if tc.harts > 2 {
			bits = "2"
		}
		args := append([]string{"--protocol", "ntrace", "--src-bits", bits, "--image", elf}, tc.opts...)
		checkHartsJobs(t, dir, fmt.Sprintf("%d harts %v", tc.harts, tc.opts), tc.harts, args, trace, 0x10)
	}
}

// checkHartsJobs checks the decode of trace, of harts harts run with
// --pcs run{hart}.pcs in dir, with args: with --jobs 2, 3 and 8 it gives
// what it gives serially (every output, stderr, exit status), and so do
// copies with the bits mask flipped at 5/20 and 12/20 and cut short (with
// --strict too), never decoding serially; the summary without --jobs is
// that of --jobs 1; and each hart's PCs decoded with --jobs 3 (--src K)
// are those the simulator retired.
func checkHartsJobs(t *testing.T, dir, what string, harts int, args []string, trace string, mask byte) {
	t.Helper()
	for _, c := range corruptCases(t, trace, filepath.Join(dir, "bad"+filepath.Ext(trace)), mask, []int{5, 12}, 2) {
		jobs := []string{"3"}
		if c.code == 0 {
			jobs = []string{"2", "3", "8"}
		}
		for _, j := range jobs {
			what := fmt.Sprintf("%s %s, --jobs %s", what, c.name, j)
			_, e := sameWithJobs(t, dir, what, j, c, append(args, c.file)...)
			if strings.Contains(e, "serially") {
				t.Errorf("%s: decoded serially: %s", what, e)
			}
		}
	}
	// the summary alone, without --jobs: one job per CPU
	code1, _, e1 := rv(t, append(append([]string{"decode", "--jobs", "1"}, args...), trace)...)
	code, _, e := rv(t, append([]string{"decode"}, append(args, trace)...)...)
	if code1 != 0 || code != code1 || e != e1 {
		t.Errorf("%s, summary only: exit %d and stderr\n%s\nwithout --jobs; --jobs 1: exit %d,\n%s", what, code, e, code1, e1)
	}
	for h := 0; h < harts; h++ {
		out := filepath.Join(dir, "dec.pcs")
		if code, _, e := rv(t, append(append([]string{"decode", "--jobs", "3", "--src", fmt.Sprint(h)}, args...), trace, "--pcs", out)...); code != 0 {
			t.Fatalf("%s: decode --src %d: exit %d: %s", what, h, code, e)
		}
		want, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("run%d.pcs", h)))
		got, _ := os.ReadFile(out)
		if len(want) == 0 || string(got) != string(want) {
			t.Errorf("%s: hart %d: the PCs decoded with --jobs 3 (%d bytes) are not those the simulator retired (%d bytes)",
				what, h, len(got), len(want))
		}
	}
}

// A trace with SRC fields whose images change at instruction counts (a
// sideband: remapLoopKernel, its code remapped while it runs, run with
// --harts 2 so that the messages carry a SRC field; its second hart
// stays parked, untraced) is decoded serially with --jobs 2, saying why
// on stderr, to exactly the serial result. (ntrace's
// TestDecodeJobsHartsEpochs decodes a trace of two harts that both run,
// with such images.)
func TestDecodeJobsNTraceHartsSideband(t *testing.T) {
	img := remapLoopKernel(t, 4, 100)
	dir := t.TempDir()
	trace, side := filepath.Join(dir, "t.nex"), filepath.Join(dir, "t.side")
	code, _, errb := rv(t, "run", "--machine", "virt", "--kernel", img, "--harts", "2", "--max-instret", "1000000",
		"--sideband", side, "--image", img, "--trace", "ntrace", "-o", trace)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errb)
	}
	args := []string{"--protocol", "ntrace", "--src-bits", "1", "--sideband-in", side, trace}
	code1, e1, o1 := decodeOutputs(t, dir, "1", args...)
	code2, e2, o2 := decodeOutputs(t, dir, "2", args...)
	note := trace + ": decoding serially (--jobs 2): the images of a trace of several sources (SRC fields) change at instruction counts (a sideband)\n"
	if code1 != 0 || code2 != 0 || e2 != note+e1 {
		t.Errorf("exit %d serially, %d with --jobs 2; stderr\n%s\nand with --jobs 2\n%s", code1, code2, e1, e2)
	}
	for k, v := range o1 {
		if o2[k] != v || v == "" {
			t.Errorf("--%s output differs with --jobs 2 (%d and %d bytes)", k, len(v), len(o2[k]))
		}
	}
}
