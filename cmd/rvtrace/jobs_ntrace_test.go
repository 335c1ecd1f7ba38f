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
		for _, c := range corruptCases(t, trace, p("bad.nex"), 0x10, []int{5, 12}, 2) {
			jobs := []string{"3"}
			if c.code == 0 {
				jobs = []string{"2", "3", "8"}
			}
			for _, j := range jobs {
				what := fmt.Sprintf("%d harts %v %s, --jobs %s", tc.harts, tc.opts, c.name, j)
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
			t.Errorf("%d harts %v, summary only: exit %d and stderr\n%s\nwithout --jobs; --jobs 1: exit %d,\n%s", tc.harts, tc.opts,
				code, e, code1, e1)
		}
		for h := 0; h < tc.harts; h++ {
			out := p("dec.pcs")
			if code, _, e := rv(t, append(append([]string{"decode", "--jobs", "3", "--src", fmt.Sprint(h)}, args...), trace, "--pcs", out)...); code != 0 {
				t.Fatalf("%d harts: decode --src %d: exit %d: %s", tc.harts, h, code, e)
			}
			want, _ := os.ReadFile(p(fmt.Sprintf("run%d.pcs", h)))
			got, _ := os.ReadFile(out)
			if len(want) == 0 || string(got) != string(want) {
				t.Errorf("%d harts %v: hart %d: the PCs decoded with --jobs 3 (%d bytes) are not those the simulator retired (%d bytes)",
					tc.harts, tc.opts, h, len(got), len(want))
			}
		}
	}
}

// A trace of several harts whose images change at instruction counts (a
// sideband: remapLoopKernel, its code remapped while it runs, on two
// harts) is decoded serially with --jobs 2, saying why on
// stderr, to exactly the serial result.
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
