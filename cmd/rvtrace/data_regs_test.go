package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDataRegisterPathBytes: rvtrace run --trace etrace --data-trace,
// which programs trTeDataControl, trTeDataFilters and the filter and
// comparator units of the hart's trace encoder component, writes the very
// bytes of the data trace encoder configured directly from the same
// options, for every data trace option (the packet contents, compression,
// the unified and split protocols, the data source ID, data filters on
// kind, privilege, data address and instruction address, with instruction
// filters and triggers): a field wired to the wrong option, or not at all,
// changes the bytes. Through the trace system (--trace-capture, with -o
// tapping the funnel's output) the bytes are the same too, and the RAM
// sink holds them padded with null bytes to a whole word.
func TestDataRegisterPathBytes(t *testing.T) {
	demo := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	sym := elfSyms(t, demo)
	fib, qs, data := sym("fib"), sym("quicksort.constprop.0"), sym("data")
	half := fmt.Sprintf("daddr=%#x-%#x", data, data+0x4b0) // the first half of the array quicksort sorts
	utdd := []string{"--encap", "utdd", "--src-bits", "2", "--src-id", "1"}
	cases := [][]string{
		nil,
		{"--data-fields", "addr"},
		{"--data-fields", "data"},
		{"--data-compress=false"},
		{"--data-fields", "addr", "--data-compress=false"},
		{"--data-protocol", "split"},
		{"--data-protocol", "split", "--data-fields", "addr"},
		{"--data-protocol", "split", "--data-fields", "data", "--data-compress=false"},
		{"--data-filter", "kind=store"},
		{"--data-filter", "kind=load,atomic"},
		{"--data-filter", half},
		{"--data-filter", "kind=load;" + half, "--data-filter", "kind=store;priv=M"},
		{"--data-filter", fmt.Sprintf("addr=%#x-%#x", qs, qs+0x80)},
		{"--data-filter", "priv=U"}, // nothing runs in U: no data packet
		{"--filter", fmt.Sprintf("addr=%#x-%#x", fib, fib+0x40), "--data-filter", "kind=load"},
		// the data filter's comparator after the instruction filter's
		{"--filter", fmt.Sprintf("addr=%#x-%#x", qs, qs+0x200), "--data-filter", half},
		{"--trigger", fmt.Sprintf("on=%#x,off=%#x", qs, fib), "--data-protocol", "split"},
		{"--all-modes", "--resync", "64"},
		append([]string{"--data-src-id", "3"}, utdd...),
		append([]string{"--data-protocol", "split", "--data-filter", half}, utdd...),
	}
	dir := t.TempDir()
	var sizes []int
	for i, c := range cases {
		args := append([]string{"--data-trace"}, c...)
		want := directTrace(t, "etrace", demo, 1, args)
		sizes = append(sizes, len(want))
		out := filepath.Join(dir, fmt.Sprintf("%d.te", i))
		run := append([]string{"run", "-q", "--max-instret", "2000000", "--trace", "etrace", "-o", out}, args...)
		code, _, stderr := rv(t, append(run, demo)...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", c, code, stderr)
			continue
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%v: the register path's %d bytes differ from the direct encoder's %d at byte %d", c, len(got), len(want), firstDiffByte(got, want))
		}
		if !strings.Contains(strings.Join(c, " "), "utdd") {
			continue
		}
		// the trace system: the capture and the tap on the funnel
		capf, tapf := filepath.Join(dir, fmt.Sprintf("%d.cap", i)), filepath.Join(dir, fmt.Sprintf("%d.tap", i))
		run = append([]string{"run", "--max-instret", "2000000", "--trace", "etrace", "--trace-capture", capf, "--trace-capture-all", "-o", tapf}, args...)
		code, _, stderr = rv(t, append(run, demo)...)
		if code != 0 {
			t.Errorf("%v --trace-capture: exit %d: %s", c, code, stderr)
			continue
		}
		tap, _ := os.ReadFile(tapf)
		capt, _ := os.ReadFile(capf)
		if !bytes.Equal(tap, want) {
			t.Errorf("%v --trace-capture -o: the tap's %d bytes differ from the direct encoder's %d at byte %d", c, len(tap), len(want), firstDiffByte(tap, want))
		}
		if len(capt) < len(want) || len(capt)-len(want) > 3 || !bytes.Equal(capt[:len(want)], want) || !allBytes(capt[len(want):], 0x00) {
			t.Errorf("%v --trace-capture: the capture's %d bytes are not the direct encoder's %d padded with null bytes", c, len(capt), len(want))
		}
		if !strings.Contains(stderr, "--data-trace") || !strings.Contains(stderr, "--data-src-id") {
			t.Errorf("%v --trace-capture: the decode hint does not give the data trace options: %s", c, stderr)
		}
	}
	// the options make a difference (else the comparisons prove nothing)
	if sizes[0] == sizes[1] || sizes[0] == sizes[2] || sizes[0] == sizes[3] || sizes[0] == sizes[5] || sizes[0] == sizes[8] || sizes[13] >= sizes[0] {
		t.Errorf("data trace sizes %v: options without effect", sizes)
	}
}

// allBytes reports whether every byte of b is c.
func allBytes(b []byte, c byte) bool {
	for _, x := range b {
		if x != c {
			return false
		}
	}
	return true
}

// firstDiffByte returns the offset of the first byte where a and b differ.
func firstDiffByte(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// TestDataCaptureRoundTrip: data trace through the trace system, captured
// from the RAM sink, decodes with the options the run prints to the
// simulator's own MR/MW records (its --tarmac-full), in both protocols;
// and -o together with --trace-capture gives the same trace as -o alone.
func TestDataCaptureRoundTrip(t *testing.T) {
	elf := filepath.Join("..", "..", "examples", "sim-tests", "setjmp.elf")
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	for _, c := range []struct{ proto, fields, compress string }{
		{"unified", "addr,data", "true"}, {"split", "addr,data", "true"}, {"unified", "addr,data", "false"}, {"split", "data", "false"},
	} {
		proto := c.proto + "-" + c.fields + "-" + c.compress
		data := []string{"--data-trace", "--data-protocol", c.proto, "--data-fields", c.fields, "--data-compress=" + c.compress}
		// (a Linux program's memory covers the default trace base)
		run := append([]string{"run", "--trace", "etrace", "--encap", "utdd", "--src-bits", "1"}, data...)
		code, _, stderr := rv(t, append(run, "--trace-base", "0x40000000000", "--trace-capture", p(proto+".cap"), "-o", p(proto+".tap"),
			"--tarmac-full", p(proto+".sim.tarmac"), elf)...)
		if code != 0 {
			t.Fatalf("%s: run: exit %d: %s", proto, code, stderr)
		}
		if strings.Contains(stderr, "wrapped") {
			t.Fatalf("%s: the RAM sink wrapped: %s", proto, stderr)
		}
		i := strings.Index(stderr, "decode with: rvtrace decode ")
		if i < 0 {
			t.Fatalf("%s: no decode hint: %s", proto, stderr)
		}
		hint := strings.Fields(strings.SplitN(stderr[i+len("decode with: rvtrace "):], "\n", 2)[0])
		dec := append(hint, "--tarmac", p(proto+".dec.tarmac"), "--jsonl", p(proto+".jsonl"))
		if code, _, e := rv(t, dec...); code != 0 {
			t.Fatalf("%s: %v: exit %d: %s", proto, dec, code, e)
		}
		want, got := memRecords(t, p(proto+".sim.tarmac")), memRecords(t, p(proto+".dec.tarmac"))
		if c.fields == "data" {
			// no address, so no Tarmac record: the values
			want, got = simValues(t, p(proto+".sim.tarmac")), jsonValues(t, p(proto+".jsonl"))
		}
		if len(want) < 1000 || strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: %d MR/MW records decoded from the capture, the simulator wrote %d, or they differ", proto, len(got), len(want))
			if len(got) > 0 && len(want) > 0 {
				t.Logf("first decoded %q, executed %q", got[0], want[0])
			}
		}
		// -o alone (the encoder component writing to the file)
		run = append([]string{"run", "-q", "--trace", "etrace", "--encap", "utdd", "--src-bits", "1"}, data...)
		if code, _, e := rv(t, append(run, "-o", p(proto+".te"), elf)...); code != 0 {
			t.Fatalf("%s: run -o: exit %d: %s", proto, code, e)
		}
		a, _ := os.ReadFile(p(proto + ".te"))
		b, _ := os.ReadFile(p(proto + ".tap"))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s: -o with --trace-capture (%d bytes) differs from -o alone (%d bytes)", proto, len(b), len(a))
		}
	}
}

// TestTraceCaptureWithOutput: -o with --trace-capture writes both files:
// -o the funnel's output (what a trace tap on it records: the whole
// trace), the capture what the RAM sink holds; both decode to the run's
// PCs when the sink did not wrap; when it wrapped, -o still holds the
// whole trace, the capture its end. N-Trace, one hart and two.
func TestTraceCaptureWithOutput(t *testing.T) {
	demo := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	code, _, stderr := rv(t, "run", "--max-instret", "30000", "--trace", "ntrace", "--preset", "best", "-o", p("t.nex"),
		"--trace-capture", p("c.nex"), "--pcs", p("run.pcs"), demo)
	if code != 1 { // the instruction limit
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "stored no trace") || strings.Contains(stderr, "wrapped") {
		t.Fatalf("run: %s", stderr)
	}
	tap, _ := os.ReadFile(p("t.nex"))
	capt, _ := os.ReadFile(p("c.nex"))
	if len(tap) < 100 || len(capt) < len(tap) || len(capt)-len(tap) > 3 || !bytes.Equal(capt[:len(tap)], tap) || !allBytes(capt[len(tap):], 0xFF) {
		t.Fatalf("-o has %d bytes, the capture %d: not the same trace (padded with idle bytes)", len(tap), len(capt))
	}
	runPCs, _ := os.ReadFile(p("run.pcs"))
	for _, f := range []string{"t.nex", "c.nex"} {
		if code, _, e := rv(t, "decode", "--protocol", "ntrace", "--preset", "best", "--image", demo, p(f), "--pcs", p(f+".pcs")); code != 0 {
			t.Fatalf("decode %s: exit %d: %s", f, code, e)
		}
		got, _ := os.ReadFile(p(f + ".pcs"))
		if len(runPCs) == 0 || !bytes.Equal(got, runPCs) {
			t.Errorf("%s: decoded PCs (%d bytes) differ from the run's (%d bytes)", f, len(got), len(runPCs))
		}
	}
	// the same file for both is refused before the run
	if code, _, e := rv(t, "run", "--max-instret", "1000", "--trace", "ntrace", "-o", p("same"), "--trace-capture", p("./same"), demo); code == 0 || !strings.Contains(e, "the same file") {
		t.Errorf("-o and --trace-capture of the same file: exit %d: %s", code, e)
	}
	// --filter, --trigger and --data-filter without --trace are refused,
	// not ignored
	for _, f := range [][]string{{"--filter", "priv=U"}, {"--trigger", "on=0x80000000"}, {"--data-filter", "kind=load"}} {
		if code, _, e := rv(t, append(append([]string{"run", "--max-instret", "1000"}, f...), demo)...); code == 0 || !strings.Contains(e, f[0]+" filters the trace") {
			t.Errorf("%v without --trace: exit %d: %s", f, code, e)
		}
	}
	// -o without --trace is refused, not ignored
	if code, _, e := rv(t, "run", "--max-instret", "1000", "-o", p("none.nex"), demo); code == 0 || !strings.Contains(e, "needs --trace") {
		t.Errorf("-o without --trace: exit %d: %s", code, e)
	} else if _, err := os.Stat(p("none.nex")); err == nil {
		t.Errorf("-o without --trace: the file was created")
	}
	// a capture that fails is said even when the run ends with an error of
	// its own (the instruction limit)
	if code, _, e := rv(t, "run", "--max-instret", "1000", "--trace-system", "--trace-capture", p("none"), demo); code == 0 || !strings.Contains(e, "nothing written") {
		t.Errorf("--trace-capture of a system nobody programmed, with --max-instret: exit %d: %s", code, e)
	}
	// a buffer that wraps (8 KiB, set by a probe script before the
	// first instruction): -o keeps the whole trace, the capture its end
	script := p("small.txt")
	if err := os.WriteFile(script, []byte("write ram.trRamControl trRamActive=1\nwrite ram.trRamLimitLow 0x1ffc\n"+
		"write ram.trRamWPLow 0\nwrite ram.trRamControl trRamActive=1,trRamEnable=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = rv(t, "run", "--trace", "ntrace", "--sync-mode", "1", "--sync-max", "4", "-o", p("w.nex"),
		"--trace-capture", p("wc.nex"), "--trace-script", script, "--pcs", p("w.pcs"), demo)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "wrapped") {
		t.Errorf("the 8 KiB sink did not wrap: %s", stderr)
	}
	if code, _, e := rv(t, "decode", "--protocol", "ntrace", "--sync-mode", "1", "--sync-max", "4", "--image", demo, p("w.nex"), "--pcs", p("w.dec.pcs")); code != 0 {
		t.Fatalf("decode -o: exit %d: %s", code, e)
	}
	a, _ := os.ReadFile(p("w.pcs"))
	b, _ := os.ReadFile(p("w.dec.pcs"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("-o of a run whose sink wrapped: decoded PCs (%d bytes) differ from the run's (%d bytes)", len(b), len(a))
	}
	whole, _ := os.ReadFile(p("w.nex"))
	end, _ := os.ReadFile(p("wc.nex"))
	trimmed := end
	for len(trimmed) > 0 && trimmed[len(trimmed)-1] == 0xFF { // the idle bytes padding the last word
		trimmed = trimmed[:len(trimmed)-1]
	}
	if len(trimmed) < 4096 || len(whole) < len(end)+4096 || !bytes.HasSuffix(whole, trimmed) {
		t.Errorf("the wrapped capture (%d bytes) is not the end of -o's trace (%d bytes)", len(end), len(whole))
	}
	// two harts: -o is the funnel's merged stream
	vvadd := filepath.Join("..", "..", "..", "shared", "corpus", "ntrace-refcode", "elf", "mt-vvadd.riscv")
	if _, err := os.Stat(vvadd); err != nil {
		t.Logf("corpus absent (%v): the two-hart case is left out", err)
		return
	}
	code, _, stderr = rv(t, "run", "--harts", "2", "--max-instret", "2000000", "--trace", "ntrace", "--preset", "best", "-o", p("mt.nex"),
		"--trace-capture", p("mt.cap"), "--trace-capture-all", "--pcs", p("mt.{hart}.pcs"), vvadd)
	if code != 0 {
		t.Fatalf("two harts: exit %d: %s", code, stderr)
	}
	mt, _ := os.ReadFile(p("mt.nex"))
	mc, _ := os.ReadFile(p("mt.cap"))
	if len(mt) < 100 || len(mc) < len(mt) || !bytes.Equal(mc[:len(mt)], mt) {
		t.Errorf("two harts: -o has %d bytes, the capture %d: not the same stream", len(mt), len(mc))
	}
	for h := 0; h < 2; h++ {
		f := p(fmt.Sprintf("mt.%d.dec.pcs", h))
		if code, _, e := rv(t, "decode", "--protocol", "ntrace", "--preset", "best", "--src-bits", "1", "--src", fmt.Sprint(h), "--image", vvadd, p("mt.nex"), "--pcs", f); code != 0 {
			t.Fatalf("decode hart %d: exit %d: %s", h, code, e)
		}
		got, _ := os.ReadFile(f)
		want, _ := os.ReadFile(p(fmt.Sprintf("mt.%d.pcs", h)))
		if len(want) == 0 || !bytes.Equal(got, want) {
			t.Errorf("two harts: hart %d: PCs decoded from -o (%d bytes) differ from the run's (%d bytes)", h, len(got), len(want))
		}
	}
}

// TestDataTraceRefused: data trace options with N-Trace, data trace of
// several harts with too narrow a source ID field, and framings that
// cannot carry the data packets are refused before the run with a
// message saying why.
func TestDataTraceRefused(t *testing.T) {
	demo := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", "ntrace", "--data-trace", "-o", filepath.Join(dir, "a")}, "trTeDataImplemented"},
		{[]string{"--trace", "ntrace", "--data-filter", "kind=load", "--trace-capture", filepath.Join(dir, "b")}, "--data-filter: ntrace has no data trace"},
		// two harts' instruction and data sources need 2 bits of source ID
		{[]string{"--trace", "etrace", "--data-trace", "--harts", "2", "--encap", "utdd", "--src-bits", "1", "--trace-capture", filepath.Join(dir, "c")}, "too narrow"},
		// the trace system's funnel and RAM sink take UTDD frames (the
		// default there: TestETraceSystemFraming)
		{[]string{"--trace", "etrace", "--data-trace", "--encap", "raw", "--trace-capture", filepath.Join(dir, "d")}, "--encap raw: E-Trace through the trace system is framed in the UTDD encapsulation"},
		// the encoder's own output (-o) in UTDD frames: the data packets
		// need a source ID field (the trace system sets --src-bits 1)
		{[]string{"--trace", "etrace", "--data-trace", "--encap", "utdd", "-o", filepath.Join(dir, "e")}, "source ID"},
	} {
		code, _, e := rv(t, append(append([]string{"run", "--max-instret", "10000"}, tc.args...), demo)...)
		if code == 0 || !strings.Contains(e, tc.want) {
			t.Errorf("%v: exit %d, want an error saying %q: %s", tc.args, code, tc.want, e)
		}
	}
	// the program's own arguments are not options of the run, after a
	// boolean option too
	for _, args := range [][]string{{"-q", demo, "--data-trace"}, {"-q=true", demo, "--data-filter", "kind=load"}, {demo, "--data-trace"}} {
		run := append([]string{"run", "--trace", "ntrace", "-o", filepath.Join(dir, "n.nex")}, args...)
		if code, _, e := rv(t, run...); code != 0 {
			t.Errorf("%v: exit %d: %s", run, code, e)
		}
	}
	if code, _, e := rv(t, "run", "-q", demo, "--trace", "bogus"); code != 0 {
		t.Errorf("run -q demo.elf --trace bogus (the program's arguments): exit %d: %s", code, e)
	}
}

// TestDataCaptureLoss: data trace through the trace system when the
// funnel is disabled for a while (a host script): the encoder loses
// trace, records the loss (a support packet with trace_lost) and restarts
// when the funnel takes trace again. The decoder reports a gap, and the
// MR/MW records it decodes are a prefix and a suffix of the simulator's:
// no access is paired with another instruction across the hole.
func TestDataCaptureLoss(t *testing.T) {
	demo := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	script := p("loss.txt")
	if err := os.WriteFile(script, []byte("at 50000 write funnel.trFunnelControl trFunnelActive=1\n"+
		"at sym:fib+2 write funnel.trFunnelControl trFunnelActive=1,trFunnelEnable=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, proto := range []string{"unified", "split"} {
		code, _, stderr := rv(t, "run", "--max-instret", "300000", "--trace", "etrace", "--data-trace", "--data-protocol", proto,
			"--encap", "utdd", "--src-bits", "1", "--trace-capture", p(proto+".cap"), "--trace-capture-all", "--trace-script", script,
			"--tarmac-full", p(proto+".sim.tarmac"), demo)
		if code != 1 { // the instruction limit
			t.Fatalf("%s: run: exit %d: %s", proto, code, stderr)
		}
		code, out, e := rv(t, "decode", "--protocol", "etrace", "--encap", "utdd", "--src-bits", "1", "--data-trace", "--data-protocol", proto,
			"--data-src-id", "1", "--image", demo, p(proto+".cap"), "--tarmac", p(proto+".dec.tarmac"))
		if code == 0 || !strings.Contains(out+e, "1 gap") {
			t.Errorf("%s: decode: exit %d, no gap for the lost trace: %s", proto, code, e)
		}
		want, got := memRecords(t, p(proto+".sim.tarmac")), memRecords(t, p(proto+".dec.tarmac"))
		pre := 0
		for pre < len(got) && pre < len(want) && got[pre] == want[pre] {
			pre++
		}
		suf := 0
		for suf < len(got)-pre && suf < len(want) && got[len(got)-1-suf] == want[len(want)-1-suf] {
			suf++
		}
		if pre < 1000 || suf < 1000 || pre+suf != len(got) || len(got) >= len(want) {
			t.Errorf("%s: %d MR/MW records decoded of %d executed: %d match the start, %d the end; want a prefix and a suffix with a hole",
				proto, len(got), len(want), pre, suf)
		}
	}
}

// simValues returns the kind, size and value of the simulator's MR/MW
// records of loads and stores (not AMOs) in a full Tarmac file, as
// "R8 0x1".
func simValues(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`\bM([RW])(\d+) [0-9a-f]+ ([0-9a-f_]+)`)
	var out []string
	amo := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, " IT ") {
			amo = strings.Contains(l, ": amo")
		}
		if m := re.FindStringSubmatch(l); m != nil && !amo {
			v, err := strconv.ParseUint(strings.ReplaceAll(m[3], "_", ""), 16, 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", path, l, err)
			}
			out = append(out, fmt.Sprintf("%s%s %#x", m[1], m[2], v))
		}
	}
	return out
}

// jsonValues returns the kind, size and value of the load and store data
// objects of a decoder's JSON lines, as simValues.
func jsonValues(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		var o struct {
			Kind, Dtype, Value string
			Size               int
		}
		if l == "" || json.Unmarshal([]byte(l), &o) != nil || o.Kind != "data" || o.Dtype != "load" && o.Dtype != "store" {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(o.Value, "0x"), 16, 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", path, l, err)
		}
		switch o.Dtype {
		case "load":
			out = append(out, fmt.Sprintf("R%d %#x", o.Size, v))
		case "store":
			out = append(out, fmt.Sprintf("W%d %#x", o.Size, v))
		}
	}
	return out
}

// TestTraceCaptureWriteError: a capture (or -o, the tap) that cannot be
// written is an error naming the file, said once, with a non-zero exit,
// and the run says neither that the file holds the trace nor how to
// decode it; with the run's own error (the instruction limit) too.
func TestTraceCaptureWriteError(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	demo := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		bad  string // the file that cannot be written
	}{
		{[]string{"--trace-capture", "/dev/full"}, 1, "/dev/full"},
		{[]string{"--trace-capture", "/dev/full", "--trace-capture-all"}, 1, "/dev/full"},
		{[]string{"--trace-capture", "/dev/full", "--max-instret", "20000"}, 1, "/dev/full"},
		{[]string{"--trace-capture", filepath.Join(dir, "c.nex"), "-o", "/dev/full", "--max-instret", "20000"}, 1, "/dev/full"},
	} {
		args := append([]string{"run", "--trace", "ntrace", "--preset", "best"}, tc.args...)
		code, _, e := rv(t, append(args, demo)...)
		if code != tc.code || strings.Count(e, "writing "+tc.bad) != 1 {
			t.Errorf("%v: exit %d (want %d), want one error writing %s: %s", tc.args, code, tc.code, tc.bad, e)
		}
		if strings.Contains(e, "trace capture /dev/full:") || strings.Contains(e, "/dev/full\n") {
			t.Errorf("%v: the run describes the capture it could not write, or how to decode it: %s", tc.args, e)
		}
	}
}

// TestTapDecodeHint: with -o and --trace-capture, run says how to decode
// -o's trace (the funnel's output) too, also when the capture failed (a
// wrapped E-Trace buffer with no sync packet to start from): the command
// it prints decodes -o's whole trace to the run's PCs, data trace
// included.
func TestTapDecodeHint(t *testing.T) {
	demo := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	code, _, e := rv(t, "run", "--trace", "etrace", "--data-trace", "--encap", "utdd", "--src-bits", "1", "--trace-capture", p("c.te"),
		"-o", p("whole.te"), "--pcs", p("run.pcs"), demo)
	if code == 0 || !strings.Contains(e, "no sync packet") {
		t.Fatalf("run: exit %d, want the capture of the wrapped buffer refused: %s", code, e)
	}
	_, hint, ok := strings.Cut(e, "-o "+p("whole.te")+": decode with: rvtrace ")
	if !ok {
		t.Fatalf("no decode hint for -o: %s", e)
	}
	hint, _, _ = strings.Cut(hint, "\n")
	args := append(strings.Fields(hint), "--pcs", p("dec.pcs"))
	if code, _, e := rv(t, args...); code != 0 {
		t.Fatalf("rvtrace %s: exit %d: %s", strings.Join(args, " "), code, e)
	}
	want, _ := os.ReadFile(p("run.pcs"))
	got, _ := os.ReadFile(p("dec.pcs"))
	if len(want) == 0 || !bytes.Equal(got, want) {
		t.Errorf("-o decoded with the hint: %d bytes of PCs, the run retired %d", len(got), len(want))
	}
}
