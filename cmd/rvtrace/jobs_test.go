package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/internal/corpus"
	"github.com/rvtrace/rvtrace/ntrace"
)

// decodeOutputs runs decode with args and --jobs jobs, writing every kind
// of output, and returns the exit code, stderr and the outputs' contents.
func decodeOutputs(t *testing.T, dir string, jobs string, args ...string) (int, string, map[string]string) {
	t.Helper()
	outs := map[string]string{}
	var a []string
	for _, o := range []string{"pcs", "jsonl", "flow", "tarmac"} {
		f := filepath.Join(dir, jobs+"."+o)
		a = append(a, "--"+o, f)
		outs[o] = f
	}
	code, _, e := rv(t, append(append([]string{"decode", "--jobs", jobs}, args...), a...)...)
	for o, f := range outs {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		outs[o] = string(data)
	}
	return code, e, outs
}

// jobsCase is a trace to decode and the exit status its decode must
// have.
type jobsCase struct {
	name, file string
	strict     bool
	code       int
}

// corruptCases writes bad, a copy of the trace file trace with the bits
// mask flipped at each fraction (numerator over 20) of its length in at
// and its last cut bytes cut off, and returns the cases of the two: the
// intact trace (exit 0), the corrupt one (exit 3) and the corrupt one
// with --strict.
func corruptCases(t *testing.T, trace, bad string, mask byte, at []int, cut int) []jobsCase {
	t.Helper()
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := append([]byte(nil), data...)
	for _, k := range at {
		corrupt[k*len(data)/20] ^= mask
	}
	if err := os.WriteFile(bad, corrupt[:len(corrupt)-cut], 0o644); err != nil {
		t.Fatal(err)
	}
	return []jobsCase{{"intact", trace, false, 0}, {"corrupt", bad, false, 3}, {"corrupt strict", bad, true, 3}}
}

// sameWithJobs decodes with args (and --strict with c.strict) serially
// and with --jobs jobs, writing every kind of output, and fails unless
// both exit with c.code and give the same stderr and outputs, none empty.
// It returns the serial decode's outputs and the stderr with jobs.
func sameWithJobs(t *testing.T, dir, what, jobs string, c jobsCase, args ...string) (map[string]string, string) {
	t.Helper()
	if c.strict {
		args = append(args, "--strict")
	}
	code1, e1, o1 := decodeOutputs(t, dir, "1", args...)
	code, e, o := decodeOutputs(t, dir, jobs, args...)
	if code1 != c.code || code != code1 {
		t.Errorf("%s: exit %d serially, %d with --jobs %s, want %d: %s", what, code1, code, jobs, c.code, e)
	}
	if e != e1 {
		t.Errorf("%s: stderr differs:\nserial %s\njobs %s %s", what, e1, jobs, e)
	}
	for k, v := range o1 {
		if o[k] != v {
			t.Errorf("%s: --%s output differs with --jobs %s (%d and %d bytes)", what, k, jobs, len(v), len(o[k]))
		}
		if len(v) == 0 {
			t.Errorf("%s: --%s output empty", what, k)
		}
	}
	return o1, e
}

// decode --jobs N gives exactly what a serial decode gives, with every
// output, the summary and the exit status, on an intact trace with
// periodic sync and on corrupt ones (with --strict too).
func TestDecodeJobsCLI(t *testing.T) {
	elf := corpus.Path(t, "ntrace-refcode/t1/test.elf")
	pcs := corpus.Path(t, "ntrace-refcode/t1/test-PCONLY.txt")
	dir := t.TempDir()
	trace := filepath.Join(dir, "t1.nex")
	if code, _, e := rv(t, "encode", "--protocol", "ntrace", "--preset", "best", "--sync-mode", "3", "--sync-max", "4",
		"--image", elf, "--pcs-in", pcs, "-o", trace); code != 0 {
		t.Fatalf("encode: exit %d: %s", code, e)
	}
	old := ntrace.PieceBytes
	ntrace.PieceBytes = 256
	defer func() { ntrace.PieceBytes = old }()
	for _, c := range corruptCases(t, trace, filepath.Join(dir, "bad.nex"), 0x10, []int{4, 10, 15}, 7) {
		o1, _ := sameWithJobs(t, dir, c.name, "3", c, "--protocol", "ntrace", "--preset", "best", "--image", elf, c.file)
		if c.code == 3 && !strings.Contains(o1["pcs"], "# gap at byte") {
			t.Errorf("%s: no gap marked in the PC list", c.name)
		}
	}
	if code, _, e := rv(t, "decode", "--jobs", "-1", "--image", elf, trace); code != 2 {
		t.Errorf("--jobs -1: exit %d, want 2: %s", code, e)
	}
}

// decode --jobs N on E-Trace (raw and UTDD framing, several optional
// modes, periodic resynchronisation) gives exactly what a serial decode
// gives, with every output, the summary and the exit status, intact and
// corrupt (with --strict too), without a note that it decodes serially,
// as does a trace with a UTDD source ID field (decoded by source).
func TestDecodeJobsETraceCLI(t *testing.T) {
	elf := corpus.Path(t, "ntrace-refcode/t1/test.elf")
	pcs := corpus.Path(t, "ntrace-refcode/t1/test-PCONLY.txt")
	dir := t.TempDir()
	old := etrace.PieceBytes
	etrace.PieceBytes = 128
	defer func() { etrace.PieceBytes = old }()
	for i, opts := range [][]string{
		{"--resync", "16"},
		{"--resync", "16", "--encap", "utdd", "--all-modes"},
		{"--resync", "32", "--implicit-return", "stack", "--full-address"},
	} {
		trace := filepath.Join(dir, fmt.Sprintf("t1-%d.te", i))
		enc := append([]string{"encode", "--protocol", "etrace", "--image", elf, "--pcs-in", pcs, "-o", trace}, opts...)
		if code, _, e := rv(t, enc...); code != 0 {
			t.Fatalf("encode %v: exit %d: %s", opts, code, e)
		}
		for _, c := range corruptCases(t, trace, filepath.Join(dir, fmt.Sprintf("bad-%d.te", i)), 0x08, []int{4, 10}, 3) {
			what := fmt.Sprintf("%v %s", opts, c.name)
			_, e := sameWithJobs(t, dir, what, "3", c, append([]string{"--protocol", "etrace", "--image", elf, c.file}, opts...)...)
			if strings.Contains(e, "serially") {
				t.Errorf("%s: decoded serially: %s", what, e)
			}
		}
	}
	// a UTDD source ID field: decoded by source (a Demux), in pieces
	// too
	trace := filepath.Join(dir, "src.te")
	opts := []string{"--encap", "utdd", "--src-bits", "2"}
	if code, _, e := rv(t, append([]string{"encode", "--protocol", "etrace", "--image", elf, "--pcs-in", pcs, "-o", trace}, opts...)...); code != 0 {
		t.Fatalf("encode: exit %d: %s", code, e)
	}
	_, e := sameWithJobs(t, dir, "source IDs", "2", jobsCase{code: 0}, append([]string{"--protocol", "etrace", "--image", elf, trace}, opts...)...)
	if strings.Contains(e, "serially") {
		t.Errorf("source IDs: decoded serially: %s", e)
	}
}

// decode --jobs N on E-Trace traces of several harts (mt-shared on 2
// harts, mt-matmul on 3 (two sets of modes) and mt-vvadd on 4, one encoder per hart with its
// own UTDD source ID into the funnel, several optional modes, the
// shortest periodic resynchronisation, pieces of a few frames) gives
// exactly what a serial decode gives, every output, the summary and the
// exit status, intact and corrupt (with --strict too), without a note
// that it decodes serially; the summary without --jobs (one job per
// CPU, 3 here) is that of --jobs 1; decoded with --jobs 3 and --src K,
// each hart's PCs are those the simulator retired on it.
func TestDecodeJobsHartsCLI(t *testing.T) {
	dir := t.TempDir()
	old, oldCPU := etrace.PieceBytes, numCPU
	numCPU = func() int { return 3 }
	defer func() { etrace.PieceBytes, numCPU = old, oldCPU }()
	p := func(n string) string { return filepath.Join(dir, n) }
	for _, tc := range []struct {
		elf   string
		harts int
		opts  []string
		piece int // (a hart runs 5000 instructions a turn: pieces of a few of the turns)
	}{
		{filepath.Join("..", "..", "examples", "mt-shared", "mt-shared.elf"), 2, nil, 48},
		{corpus.Path(t, "ntrace-refcode/elf/mt-matmul.riscv"), 3, []string{"--all-modes"}, 24},
		{corpus.Path(t, "ntrace-refcode/elf/mt-matmul.riscv"), 3, []string{"--implicit-return", "stack"}, 300},
		{corpus.Path(t, "ntrace-refcode/elf/mt-vvadd.riscv"), 4, []string{"--implicit-return", "stack", "--full-address"}, 500},
	} {
		elf := tc.elf
		etrace.PieceBytes = tc.piece
		trace := p(fmt.Sprintf("mt%d.te", tc.harts))
		run := append([]string{"run", "--harts", fmt.Sprint(tc.harts), "--max-instret", "2000000", "--trace", "etrace",
			"--resync", "16", "-o", trace, "--pcs", p("run{hart}.pcs")}, tc.opts...)
		if code, _, e := rv(t, append(run, elf)...); code != 0 {
			t.Fatalf("%d harts %v: run: exit %d: %s", tc.harts, tc.opts, code, e)
		}
		args := append([]string{"--protocol", "etrace", "--encap", "utdd", "--src-bits", "2", "--image", elf}, tc.opts...)
		checkHartsJobs(t, dir, fmt.Sprintf("%d harts %v", tc.harts, tc.opts), tc.harts, args, trace, 0x08)
	}
}

// remapLoopKernel: S-mode code that runs X (sbRoutineA or sbRoutineB,
// the same length in halfwords at other addresses) in a loop of loops
// iterations, phases times, remapping X between frames A and B (the
// page-table entry rewritten, sfence.vma) before each phase: code that
// changes at several instruction counts, as a sideband records it.
func remapLoopKernel(t *testing.T, phases, loops int) string {
	const (
		frameA, frameB  = 0x1000, 0x2000
		root1, l1a, l0a = 0x4000, 0x5000, 0x6000
		consts          = 0x800 // satp, &l0a[0], PTE of frame A, PTE of frame B
	)
	k := newSBKernel(0x7000)
	k.sv39(root1, l1a, l0a, frameA)
	k.u64(consts, satpOf(1, root1))
	k.u64(consts+8, sbBase+l0a)
	k.u64(consts+16, pte(sbBase+frameA, pteV|pteR|pteX|pteA))
	k.u64(consts+24, pte(sbBase+frameB, pteV|pteR|pteX|pteA))
	c := func(i int) int32 { return int32(consts + 8*i - 0x40) } // from gp = base+0x40
	const rS2 = 18
	prog := []uint32{
		rvAuipc(rGP),
		rvLd(rT1, rGP, c(0)), rvCsrw(csrSatp, rT1), rvSfence,
		rvLui(rS1, sbX>>12),
	}
	for p := 0; p < phases; p++ {
		prog = append(prog,
			rvLd(rT1, rGP, c(1)), rvLd(rT2, rGP, c(2+p%2)), rvSd(rT2, rT1, 0), rvSfence,
			rvAddi(rS2, 0, int32(loops)),
			rvJalr(rRA, rS1, 0), rvAddi(rS2, rS2, -1), rvBeq(rS2, rZero, 8), rvJal(rZero, -12))
	}
	if 0x40+4*len(prog)+4*len(sbShutdown) > consts {
		t.Fatal("remapLoopKernel: the code overlaps its constants")
	}
	k.code(0x40, append(prog, sbShutdown...)...)
	k.code(frameA, sbRoutineA...)
	k.code(frameB, sbRoutineB...)
	p := filepath.Join(t.TempDir(), "Image")
	if err := os.WriteFile(p, k.b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A system trace with a sideband whose code changes at several instruction
// counts (a page remapped between two routines of the same length, which
// a decoder following the wrong one finds consistent with the trace),
// with periodic sync, decodes with --jobs 2 and 3 to exactly what it
// decodes to serially, every output, and to the PCs the simulator
// retired; cut into many pieces, the pieces are decoded in parallel
// (no note that it decodes serially).
func TestDecodeJobsSideband(t *testing.T) {
	const phases = 6
	img := remapLoopKernel(t, phases, 200)
	dir := t.TempDir()
	trace, side, pcs := filepath.Join(dir, "t.nex"), filepath.Join(dir, "t.side"), filepath.Join(dir, "t.pcs")
	code, _, errb := rv(t, "run", "--machine", "virt", "--kernel", img, "--trace", "ntrace", "--preset", "best",
		"--sync-mode", "3", "--sync-max", "3", "--max-instret", "100000", "-o", trace, "--sideband", side, "--image", img,
		"--pcs", pcs)
	if code != 0 || !strings.Contains(errb, fmt.Sprintf("%d recorded again after their code changed", phases-1)) {
		t.Fatalf("run: exit %d: %s", code, errb)
	}
	want, err := os.ReadFile(pcs)
	if err != nil {
		t.Fatal(err)
	}
	old := ntrace.PieceBytes
	ntrace.PieceBytes = 64
	defer func() { ntrace.PieceBytes = old }()
	args := []string{"--protocol", "ntrace", "--preset", "best", "--sideband-in", side, trace}
	code1, e1, o1 := decodeOutputs(t, dir, "1", args...)
	if code1 != 0 || o1["pcs"] != string(want) {
		t.Fatalf("serial decode: exit %d, PCs equal to the simulator's %v: %s", code1, o1["pcs"] == string(want), e1)
	}
	for _, jobs := range []string{"2", "3"} {
		sameWithJobs(t, dir, "sideband", jobs, jobsCase{code: 0}, args...)
	}
}

// TestSystemTraceJobs boots Debian's kernel from the kit for the first 40 M
// instructions, traced live with a periodic sync and a sideband (N-Trace
// best, E-Trace every optional mode), and decodes each trace with the
// sideband alone serially and with --jobs 2: both give exactly the PC
// sequence the simulator retired (compared by SHA-256 through named
// pipes), and the same summary. The sideband's kernel code changes at
// many instruction counts in this stretch of the boot.
func TestSystemTraceJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("a traced Linux boot takes a minute")
	}
	kit := linuxKitDir(t)
	dir := t.TempDir()
	kernel := filepath.Join(kit, "Image")
	busybox := filepath.Join(kit, "root/usr/bin/busybox")
	initrd := filepath.Join(kit, "initramfs-busybox.cpio.gz")
	for _, tc := range []struct {
		proto      string
		opts, sync []string
	}{
		{"ntrace", []string{"--preset", "best"}, []string{"--sync-mode", "3", "--sync-max", "12"}},
		{"etrace", []string{"--all-modes"}, []string{"--resync", "256"}},
	} {
		trace := filepath.Join(dir, tc.proto+".trace")
		side := filepath.Join(dir, tc.proto+".side")
		fifo, wait := pcHash(t, dir, tc.proto+"-sim.pcs")
		args := append([]string{"run", "--machine", "virt", "--kernel", kernel, "--initrd", initrd,
			"--append", "console=ttyS0 rdinit=/init quiet", "--max-instret", "40000000", "-q", "--trace", tc.proto}, tc.opts...)
		args = append(append(args, tc.sync...), "-o", trace, "--sideband", side, "--image", kernel, "--image", busybox,
			"--pcs", fifo)
		code, _, errb := rv(t, args...)
		sum, n := wait()
		if code != 1 || !strings.Contains(errb, "instruction limit 40000000 reached") || n != 40000000 {
			t.Fatalf("%s: run: exit %d, %d PCs: %s", tc.proto, code, n, errb)
		}
		dec := append([]string{"decode", "--protocol", tc.proto}, tc.opts...)
		if tc.proto == "etrace" {
			dec = append(dec, "--context")
		}
		var summary [2]string
		for i, jobs := range []string{"1", "2"} {
			fifo, wait := pcHash(t, dir, tc.proto+"-dec"+jobs+".pcs")
			code, _, errb := rv(t, append(dec, "--jobs", jobs, "--sideband-in", side, trace, "--pcs", fifo)...)
			dsum, dn := wait()
			if code != 0 || dsum != sum || dn != n {
				t.Errorf("%s --jobs %s: exit %d, %d PCs, SHA-256 equal to the simulator's %v; %s", tc.proto, jobs, code,
					dn, dsum == sum, errb)
			}
			summary[i] = errb
		}
		if summary[0] != summary[1] {
			t.Errorf("%s: summary serially %q, with --jobs 2 %q", tc.proto, summary[0], summary[1])
		}
	}
}

// Without --jobs, decode picks the jobs itself: one per CPU when it
// writes only the summary (the ranges are tallied), one when it writes
// outputs. Either way the summary and the exit status are those of
// --jobs 1, N-Trace and E-Trace, intact and corrupt, with --strict too,
// and outputs are the serial decode's; the summary-only decode runs on
// several jobs here whatever the machine (numCPU is 3).
func TestDecodeJobsDefault(t *testing.T) {
	elf := corpus.Path(t, "ntrace-refcode/t1/test.elf")
	pcs := corpus.Path(t, "ntrace-refcode/t1/test-PCONLY.txt")
	dir := t.TempDir()
	oldN, oldE, oldCPU := ntrace.PieceBytes, etrace.PieceBytes, numCPU
	ntrace.PieceBytes, etrace.PieceBytes, numCPU = 256, 128, func() int { return 3 }
	defer func() { ntrace.PieceBytes, etrace.PieceBytes, numCPU = oldN, oldE, oldCPU }()
	for _, p := range []struct {
		proto      string
		opts, sync []string
	}{
		{"ntrace", []string{"--preset", "best"}, []string{"--sync-mode", "3", "--sync-max", "4"}},
		{"etrace", []string{"--encap", "utdd", "--all-modes"}, []string{"--resync", "16"}},
	} {
		trace := filepath.Join(dir, p.proto+".trace")
		enc := append([]string{"encode", "--protocol", p.proto, "--image", elf, "--pcs-in", pcs, "-o", trace}, p.opts...)
		enc = append(enc, p.sync...)
		if code, _, e := rv(t, enc...); code != 0 {
			t.Fatalf("%s: encode: exit %d: %s", p.proto, code, e)
		}
		for _, c := range corruptCases(t, trace, filepath.Join(dir, p.proto+".bad"), 0x10, []int{4, 10, 15}, 5) {
			what := p.proto + " " + c.name
			args := append([]string{"decode", "--protocol", p.proto, "--image", elf, c.file}, p.opts...)
			if c.strict {
				args = append(args, "--strict")
			}
			code1, _, e1 := rv(t, append(args, "--jobs", "1")...)
			code, _, e := rv(t, args...)
			if code1 != c.code || code != code1 || e != e1 {
				t.Errorf("%s, summary only: exit %d and stderr\n%s\nwithout --jobs; --jobs 1: exit %d (want %d),\n%s", what, code, e,
					code1, c.code, e1)
			}
			out1, out := filepath.Join(dir, "1.pcs"), filepath.Join(dir, "default.pcs")
			code1, _, e1 = rv(t, append(args, "--jobs", "1", "--pcs", out1)...)
			code, _, e = rv(t, append(args, "--pcs", out)...)
			o1, err1 := os.ReadFile(out1)
			o, err := os.ReadFile(out)
			if err1 != nil || err != nil || code != code1 || e != e1 || string(o) != string(o1) || len(o) == 0 {
				t.Errorf("%s, --pcs: without --jobs exit %d, %d bytes; with --jobs 1 exit %d, %d bytes; stderr\n%s\n%s", what, code,
					len(o), code1, len(o1), e, e1)
			}
		}
	}
}
