package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/corpus"
	"github.com/rvtrace/rvtrace/ntrace"
)

// ownDemo is the program the --encoder tests trace.
var ownDemo = filepath.Join("..", "..", "examples", "demo", "demo.elf")

// A trace written by rvtrace run decodes with --encoder rvtrace (and the
// run's encoder flags) exactly as without it and as executed, for every
// preset with and without periodic syncs: the checks it adds give no
// false gap on rvtrace's own traces.
func TestDecodeOwnEncoderClean(t *testing.T) {
	dir := t.TempDir()
	for _, preset := range []string{"ref-btm", "ref-htm", "ref-htm-rpt", "ref-htm-cs8", "ref-htm-best", "best", "btm", "htm"} {
		for _, sync := range [][]string{nil, {"--sync-mode", "1", "--sync-max", "0"}, {"--sync-mode", "3", "--sync-max", "2"}} {
			name := preset + " " + strings.Join(sync, " ")
			enc := append([]string{"--preset", preset}, sync...)
			nex := filepath.Join(dir, "t.nex")
			ran := filepath.Join(dir, "ran.pcs")
			args := append(append([]string{"run", "-q", "--trace", "ntrace", "--max-instret", "1000000"}, enc...), "-o", nex, "--pcs", ran, ownDemo)
			if code, _, e := rv(t, args...); code != 0 {
				t.Fatalf("%s: run: exit %d: %s", name, code, e)
			}
			want := normalized(t, ran)
			for _, own := range []bool{false, true} {
				dec := filepath.Join(dir, "dec.pcs")
				args := append(append([]string{"decode", "--image", ownDemo}, enc...), nex, "--pcs", dec)
				if own {
					args = append(args, "--encoder", "rvtrace")
				}
				if code, _, e := rv(t, args...); code != 0 {
					t.Errorf("%s, own encoder %v: exit %d: %s", name, own, code, e)
					continue
				}
				if normalized(t, dec) != want {
					t.Errorf("%s, own encoder %v: decoded PCs differ from the executed ones", name, own)
				}
			}
		}
	}
}

// An idle byte (0xFF) inserted between two messages of rvtrace's trace is
// valid N-Trace: decoded as any encoder's trace, the flow is exactly the
// executed one. With --encoder rvtrace, whose encoder sends no idles, it
// is a gap at the very byte (exit 3): the check that catches the idle
// bytes an inserted 0xFF leaves when it ends a HIST field early.
func TestDecodeOwnEncoderIdleByte(t *testing.T) {
	dir := t.TempDir()
	enc := []string{"--preset", "best", "--sync-mode", "1", "--sync-max", "0"}
	nex := filepath.Join(dir, "t.nex")
	ran := filepath.Join(dir, "ran.pcs")
	args := append(append([]string{"run", "-q", "--trace", "ntrace", "--max-instret", "1000000"}, enc...), "-o", nex, "--pcs", ran, ownDemo)
	if code, _, e := rv(t, args...); code != 0 {
		t.Fatalf("run: exit %d: %s", code, e)
	}
	data, err := os.ReadFile(nex)
	if err != nil {
		t.Fatal(err)
	}
	// after the first message end (MSEO=3) past the middle of the trace
	at := -1
	for i := len(data) / 2; i < len(data)-1; i++ {
		if data[i]&3 == 3 && data[i] != 0xff {
			at = i + 1
			break
		}
	}
	if at < 0 {
		t.Fatal("no message end in the second half of the trace")
	}
	bad := append(append(append([]byte{}, data[:at]...), 0xff), data[at:]...)
	badNex := filepath.Join(dir, "idle.nex")
	if err := os.WriteFile(badNex, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	dec := filepath.Join(dir, "dec.pcs")
	base := append(append([]string{"decode", "--image", ownDemo}, enc...), badNex, "--pcs", dec)
	if code, _, e := rv(t, base...); code != 0 || normalized(t, dec) != normalized(t, ran) {
		t.Errorf("decoded as any encoder's: exit %d (want 0, the executed PCs): %s", code, e)
	}
	code, _, e := rv(t, append(base, "--encoder", "rvtrace")...)
	if code != 3 || !strings.Contains(e, "gap at byte "+strconv.Itoa(at)+" ") || !strings.Contains(e, "idle byte") {
		t.Errorf("decoded with --encoder rvtrace: exit %d, want 3 and a gap at byte %d naming the idle byte: %s", code, at, e)
	}
}

// --encoder rvtrace is for rvtrace's own traces only: the N-Trace
// reference code's trace, which decodes cleanly as any encoder's, has
// (false) gaps with it and the default options, as the help says. (With
// its configuration, ref-htm-best, it passes the checks and decodes to
// the reference PC list.) A wrong value is refused.
func TestDecodeOwnEncoderReference(t *testing.T) {
	elf := corpus.Path(t, "ntrace-refcode/t1/test.elf")
	ref := corpus.Path(t, "ntrace-refcode/t1/test-NEX.bin")
	if code, _, e := rv(t, "decode", "--image", elf, ref); code != 0 {
		t.Fatalf("reference trace as any encoder's: exit %d: %s", code, e)
	}
	dec := filepath.Join(t.TempDir(), "ref.pcs")
	code, _, e := rv(t, "decode", "--image", elf, ref, "--preset", "ref-htm-best", "--encoder", "rvtrace", "--pcs", dec)
	if code != 0 || normalized(t, dec) != normalized(t, corpus.Path(t, "ntrace-refcode/t1/test-PCONLY.txt")) {
		t.Errorf("reference trace with --preset ref-htm-best --encoder rvtrace: exit %d, or PCs differ from test-PCONLY.txt: %s", code, e)
	}
	if code, _, e := rv(t, "decode", "--image", elf, ref, "--encoder", "rvtrace"); code != 3 || !strings.Contains(e, "gap at byte") {
		t.Errorf("reference trace with --encoder rvtrace: exit %d, want 3 with a gap: %s", code, e)
	}
	if code, _, e := rv(t, "decode", "--image", elf, ref, "--encoder", "qemu"); code != 2 && code != 1 || !strings.Contains(e, "--encoder") {
		t.Errorf("--encoder qemu: exit %d: %s", code, e)
	}
}

// The trace system's decode hint asks for --encoder rvtrace only when its
// options give the decoder the encoder's whole configuration: not when an
// implementation parameter the registers do not show differs from the
// default (a 16-bit HIST register, a counter-mode stack depth).
func TestNTraceArgsOwn(t *testing.T) {
	base := ntrace.Config{Mode: ntrace.HTM, ImplicitReturn: 3, SequentialJump: true, SyncMode: 1, SyncMax: 2}
	if args := ntraceDecodeArgs(base); !ntraceArgsOwn(args, base) {
		t.Errorf("%v: not the configuration %+v", args, base)
	}
	for _, c := range []ntrace.Config{
		{Mode: ntrace.HTM, HistBits: 16},
		{Mode: ntrace.BTM, ImplicitReturn: 1, StackDepth: 4},
		{Mode: ntrace.HTM, RepeatBranch: true},
	} {
		if args := ntraceDecodeArgs(c); ntraceArgsOwn(args, c) {
			t.Errorf("%v: taken as the whole configuration %+v", args, c)
		}
	}
}

// rvtrace run's capture hint decodes with --encoder rvtrace, to exactly
// the instructions the probe script traced (fib up to the next puts_).
func TestCaptureHintOwnEncoder(t *testing.T) {
	dir := t.TempDir()
	capture, ran := filepath.Join(dir, "fib.nex"), filepath.Join(dir, "demo.pcs")
	code, _, e := rv(t, "run", "--max-instret", "1000000", "--trace-script", filepath.Join("..", "..", "examples", "trace-self", "probe.txt"),
		"--trace-capture", capture, "--pcs", ran, ownDemo)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, e)
	}
	if !strings.Contains(e, "--encoder rvtrace") {
		t.Errorf("the decode hint leaves out --encoder rvtrace: %s", e)
	}
	got, de := decodeHinted(t, e, filepath.Join(dir, "dec.pcs"))
	want := segment(t, readLines(t, ran), "0x8000115a", "0x80001010")
	if !strings.Contains(de, " 0 gaps") || !equalStrings(got, want) {
		t.Errorf("hinted decode: %d instructions, want %d: %s", len(got), len(want), de)
	}
}
