package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/corpus"
)

// smemScript switches the trace RAM sink to SMEM mode before the first
// instruction, with a 1 MiB circular buffer in system memory at
// 0x80400000 (above the test programs' images and stacks): the sink
// disabled, the mode and the buffer's bounds written, the write pointer
// set to the start, the sink enabled again and checked.
const smemScript = `write ram.trRamControl trRamActive=1
write ram.trRamControl trRamActive=1,trRamMode=1
write ram.trRamStartHigh 0
write ram.trRamStartLow 0x80400000
write ram.trRamLimitHigh 0
write ram.trRamLimitLow 0x804ffffc
write ram.trRamWPHigh 0
write ram.trRamWPLow 0x80400000
write ram.trRamControl trRamActive=1,trRamEnable=1,trRamMode=1
expect ram.trRamControl trRamActive=1,trRamEnable=1,trRamMode=1 mask trRamActive=1,trRamEnable=1,trRamMode=1
at end
read ram.trRamWPLow
`

// TestETraceSystemFraming: E-Trace through the trace system (--trace
// etrace --trace-capture, the register path) without --encap is framed in
// the UTDD encapsulation, with a source ID field for the data packets of
// one hart, and the run says so; the capture, decoded with the command the
// run prints, gives exactly the PCs the simulator retired (run --pcs),
// hart by hart (--src), for one hart and two, with and without data
// trace, from the RAM sink in SRAM mode and in SMEM mode (a probe script
// moving the buffer to system memory, its write pointer there at the
// end). Decoded without the framing options (decode --protocol etrace and
// auto), the capture decodes the same, its framing detected and said on
// stderr with the options that fix it (the data trace's split protocol
// among them), and those options decode it the same without the line; a
// capture whose source IDs (1 and 3) read as one hart's data trace and as
// hart 1's of two is an error naming both readings, each of which
// decodes it. Without --trace, a host script selecting E-Trace with trTeFormat
// on two harts gives a UTDD-framed capture that decodes the same way. An
// explicit --encap raw is refused, naming the framing the trace system
// needs.
func TestETraceSystemFraming(t *testing.T) {
	demo := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	mt := filepath.Join("..", "..", "examples", "mt-shared", "mt-shared.elf")
	dir := t.TempDir()
	smem := filepath.Join(dir, "smem.txt")
	if err := os.WriteFile(smem, []byte(smemScript), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		prog  string
		harts int
		args  []string
		note  string // in the framing line of the run summary
	}{
		{"one-hart", demo, 1, []string{"--max-instret", "200000"}, "--encap utdd ("},
		{"one-hart-data", demo, 1, []string{"--max-instret", "40000", "--data-trace"}, "--encap utdd --src-bits 1 ("},
		// source IDs of the options: the decode hint gives them
		{"one-hart-data-ids", demo, 1, []string{"--max-instret", "40000", "--data-trace", "--src-bits", "2", "--src-id", "1", "--data-src-id", "3"}, "--encap utdd ("},
		{"two-harts", mt, 2, nil, "--encap utdd ("},
		{"two-harts-data", mt, 2, []string{"--data-trace", "--data-protocol", "split"}, "--encap utdd ("},
	} {
		for _, sink := range []string{"sram", "smem"} {
			t.Run(c.name+"-"+sink, func(t *testing.T) {
				p := func(n string) string { return filepath.Join(dir, c.name+"-"+sink+"-"+n) }
				run := []string{"run", "--harts", strconv.Itoa(c.harts), "--trace", "etrace", "--trace-capture", p("cap"), "--pcs", p("run.{hart}.pcs")}
				if sink == "smem" {
					run = append(run, "--trace-script", smem)
				}
				run = append(append(run, c.args...), c.prog)
				code, _, e := rv(t, run...)
				if want := 0; len(c.args) > 0 && c.args[0] == "--max-instret" {
					want = 1 // the instruction limit
					if code != want {
						t.Fatalf("run: exit %d: %s", code, e)
					}
				} else if code != 0 {
					t.Fatalf("run: exit %d: %s", code, e)
				}
				if sink == "smem" && !strings.Contains(e, "ram.trRamWPLow (0x3019020) = 0x804") {
					t.Errorf("the SMEM buffer's write pointer is not in system memory at the end: %s", e)
				}
				if strings.Contains(e, "wrapped") {
					t.Fatalf("the RAM sink wrapped: %s", e)
				}
				if !strings.Contains(e, "rvtrace run: E-Trace through the trace system: "+c.note) {
					t.Errorf("the run summary does not say which framing it chose (%q): %s", c.note, e)
				}
				_, hint, ok := strings.Cut(e, "decode with: rvtrace ")
				if !ok {
					t.Fatalf("no decode hint: %s", e)
				}
				hint, _, _ = strings.Cut(hint, "\n")
				hint, _, _ = strings.Cut(hint, " (")
				if !strings.Contains(hint, "--encap utdd") {
					t.Errorf("the decode hint does not give the framing: %s", hint)
				}
				// decoded without the framing options, the capture's
				// framing is detected and said with the options that
				// fix it; with them, it decodes the same, saying
				// nothing of the framing (framing.go)
				var framing []string
				for _, proto := range []string{"etrace", "auto"} {
					args := []string{"decode", "--protocol", proto, "--image", c.prog, "--pcs", p("det.pcs"), p("cap")}
					code, _, de := rv(t, args...)
					if c.name == "one-hart-data-ids" {
						// source IDs 1 and 3: one hart's (--src-id 1
						// --data-src-id 3), or hart 1's of two: the
						// decode cannot tell, and says so
						if code != 1 || !strings.Contains(de, "the framing of the trace is ambiguous") ||
							!strings.Contains(de, "--src-id 1 --data-src-id 3;") || !strings.Contains(de, "--data-harts 2;") {
							t.Fatalf("decode --protocol %s: exit %d, want the framing ambiguous: %s", proto, code, de)
						}
						continue
					}
					_, opts, ok := strings.Cut(de, "framing detected: E-Trace, UTDD, ")
					if code != 0 || !ok || !strings.Contains(de, " 0 gaps") {
						t.Fatalf("decode --protocol %s without --encap: exit %d, want the framing detected: %s", proto, code, de)
					}
					opts, _, _ = strings.Cut(opts, "\n")
					_, opts, _ = strings.Cut(opts, " (pass ")
					opts, _, ok = strings.Cut(opts, " to fix)")
					if !ok || !strings.HasPrefix(opts, "--protocol etrace --encap utdd") {
						t.Fatalf("decode --protocol %s: the framing line gives no options: %s", proto, de)
					}
					framing = strings.Fields(opts)[2:]
					if c.harts == 1 {
						if want, got := readLines(t, p("run.0.pcs")), readLines(t, p("det.pcs")); !equalStrings(got, want) {
							t.Errorf("decode --protocol %s without --encap: %d PCs, %d retired, or they differ", proto, len(got), len(want))
						}
					}
				}
				if slices.Contains(c.args, "split") && !strings.Contains(strings.Join(framing, " "), "--data-protocol split") {
					t.Errorf("decode without --encap: the framing detected does not give the data protocol: %v", framing)
				}
				framings := [][]string{framing}
				if c.name == "one-hart-data-ids" {
					// each reading decodes the hart's PCs
					framings = [][]string{{"--encap", "utdd", "--src-bits", "2", "--data-trace", "--data-harts", "2"},
						{"--encap", "utdd", "--src-bits", "2", "--data-trace", "--src-id", "1", "--data-src-id", "3"}}
				}
				for h := 0; h < c.harts; h++ {
					want := readLines(t, p(fmt.Sprintf("run.%d.pcs", h)))
					if c.harts > 1 {
						// detected, --src selecting the hart
						out := p(fmt.Sprintf("det.%d.pcs", h))
						args := []string{"decode", "--image", c.prog, "--pcs", out, "--src", strconv.Itoa(h), p("cap")}
						if code, _, de := rv(t, args...); code != 0 || !strings.Contains(de, " 0 gaps") || !strings.Contains(de, "framing detected: ") {
							t.Errorf("rvtrace %s: exit %d: %s", strings.Join(args, " "), code, de)
						} else if got := readLines(t, out); !equalStrings(got, want) {
							t.Errorf("hart %d: %d PCs decoded with the framing detected, %d retired, or they differ", h, len(got), len(want))
						}
					}
					// the options the framing line gives: no line
					for _, framing := range framings {
						out := p(fmt.Sprintf("fixed.%d.pcs", h))
						args := append(append([]string{"decode", "--protocol", "etrace"}, framing...), "--image", c.prog, "--pcs", out, p("cap"))
						if c.harts > 1 {
							args = append(args, "--src", strconv.Itoa(h))
						}
						if code, _, de := rv(t, args...); code != 0 || !strings.Contains(de, " 0 gaps") || strings.Contains(de, "framing detected") {
							t.Errorf("rvtrace %s: exit %d: %s", strings.Join(args, " "), code, de)
						} else if got := readLines(t, out); !equalStrings(got, want) {
							t.Errorf("hart %d: %d PCs decoded with the framing the framing line gave, %d retired, or they differ", h, len(got), len(want))
						}
					}
					out := p(fmt.Sprintf("dec.%d.pcs", h))
					args := append(strings.Fields(hint), "--pcs", out)
					if c.harts > 1 {
						args = append(args, "--src", strconv.Itoa(h))
					}
					code, _, de := rv(t, args...)
					if code != 0 || !strings.Contains(de, " 0 gaps") || strings.Contains(de, "framing detected") {
						t.Fatalf("rvtrace %s: exit %d: %s", strings.Join(args, " "), code, de)
					}
					got := readLines(t, out)
					if len(want) < 2000 || !equalStrings(got, want) {
						t.Errorf("hart %d: %d PCs decoded from the capture, %d retired, or they differ", h, len(got), len(want))
					}
				}
			})
		}
	}
	// no --trace: a host script selects E-Trace with trTeFormat = 0 on
	// both harts' encoders (a 1-bit source ID each), the sink in SMEM
	// mode; the capture is UTDD-framed (the trace system's encoders frame
	// E-Trace so) and decodes per hart with the printed command
	t.Run("script", func(t *testing.T) {
		// (funnelScript's encoder lines, after its three of the sink's)
		encs := strings.SplitN(funnelScript, "\n", 4)[3]
		encs = strings.NewReplacer("trTeFormat=1", "trTeFormat=0", "trTeInstMode=6,", "").Replace(encs)
		script := strings.Replace(smemScript, "at end\n", encs+"at end\n", 1)
		if err := os.WriteFile(filepath.Join(dir, "etrace.txt"), []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		p := func(n string) string { return filepath.Join(dir, "script-"+n) }
		code, _, e := rv(t, "run", "--harts", "2", "--trace-system", "--trace-script", filepath.Join(dir, "etrace.txt"),
			"--trace-capture", p("cap"), "--pcs", p("run.{hart}.pcs"), mt)
		if code != 0 || !strings.Contains(e, "ram.trRamWPLow (0x3019020) = 0x804") {
			t.Fatalf("run: exit %d: %s", code, e)
		}
		_, hint, ok := strings.Cut(e, "decode with: rvtrace ")
		if !ok {
			t.Fatalf("no decode hint: %s", e)
		}
		hint, _, _ = strings.Cut(hint, " (")
		if !strings.Contains(hint, "--protocol etrace --encap utdd") || !strings.Contains(hint, "--src-bits 1") {
			t.Errorf("decode hint %q", hint)
		}
		for h := 0; h < 2; h++ {
			out := p(fmt.Sprintf("dec.%d.pcs", h))
			args := append(strings.Fields(hint), "--pcs", out, "--src", strconv.Itoa(h))
			if code, _, de := rv(t, args...); code != 0 || !strings.Contains(de, " 0 gaps") {
				t.Fatalf("rvtrace %s: exit %d: %s", strings.Join(args, " "), code, de)
			}
			want, got := readLines(t, p(fmt.Sprintf("run.%d.pcs", h))), readLines(t, out)
			if len(want) < 2000 || !equalStrings(got, want) {
				t.Errorf("hart %d: %d PCs decoded, %d retired, or they differ", h, len(got), len(want))
			}
		}
	})
	// an explicit framing other than UTDD is refused before the run, and
	// so is a raw framing with several harts
	for _, args := range [][]string{
		{"--encap", "raw"},
		{"--encap", "raw", "--harts", "2"},
		{"--encap", "raw", "--data-trace"},
	} {
		run := append([]string{"run", "--max-instret", "1000", "--trace", "etrace", "--trace-capture", filepath.Join(dir, "raw.cap")}, args...)
		code, _, e := rv(t, append(run, demo)...)
		if code == 0 || !strings.Contains(e, "--encap raw: E-Trace through the trace system") || !strings.Contains(e, "UTDD") {
			t.Errorf("%v: exit %d, want the framing refused: %s", args, code, e)
		}
		if _, err := os.Stat(filepath.Join(dir, "raw.cap")); err == nil {
			t.Errorf("%v: the capture was written", args)
		}
	}
	// the encoder's own output (-o, raw framing), and N-Trace, decode as
	// before: the framing hint is for traces the raw framing does not read
	for _, proto := range []string{"etrace", "ntrace"} {
		f := filepath.Join(dir, "own."+proto)
		if code, _, e := rv(t, "run", "-q", "--max-instret", "20000", "--trace", proto, "-o", f, demo); code != 1 {
			t.Fatalf("run --trace %s -o: exit %d: %s", proto, code, e)
		}
		for _, as := range []string{proto, "auto"} {
			if code, _, e := rv(t, "decode", "--protocol", as, "--image", demo, f); code != 0 || strings.Contains(e, "UTDD") {
				t.Errorf("decode --protocol %s of run --trace %s -o: exit %d: %s", as, proto, code, e)
			}
		}
	}
	// given explicitly, --encap utdd is no news: the summary says nothing
	code, _, e := rv(t, "run", "--max-instret", "1000", "--trace", "etrace", "--encap", "utdd", "--trace-capture", filepath.Join(dir, "u.cap"), demo)
	if code != 1 || strings.Contains(e, "E-Trace through the trace system:") {
		t.Errorf("--encap utdd: exit %d: %s", code, e)
	}
}

// swapScript is a debug probe's program for two harts tracing through the
// trace system: after instruction 7000 of hart 0 (hart 1 has run its
// first quantum of 5000) both encoders are
// disabled (flushing their trace), their source IDs swapped (trTeSrcID
// of hart 0 1, of hart 1 0) and enabled again; read back, both are
// enabled.
const swapScript = `at 7000
write enc0.trTeControl trTeActive=1,trTeInstTracing=1,trTeFormat=0
write enc1.trTeControl trTeActive=1,trTeInstTracing=1,trTeFormat=0
write enc0.trTeInstFeatures trTeSrcBits=2,trTeSrcID=1
write enc1.trTeInstFeatures trTeSrcBits=2,trTeSrcID=0
write enc0.trTeControl trTeActive=1,trTeEnable=1,trTeInstTracing=1,trTeFormat=0
write enc1.trTeControl trTeActive=1,trTeEnable=1,trTeInstTracing=1,trTeFormat=0
expect enc0.trTeControl trTeEnable=1 mask trTeEnable=1
expect enc1.trTeControl trTeEnable=1 mask trTeEnable=1
`

// TestETraceDataSrcIDReprogram: a host script that rewrites trTeSrcID
// during a two-hart data trace (E-Trace, --data-trace, through the trace
// system): each hart's data packets follow its instruction packets'
// source ID (data source 2 + trTeSrcID), so the capture decodes with the
// options the run printed (--data-trace --data-harts 2) without a gap,
// and source 0 gives hart 0's first 7000 instructions then hart 1's from
// where the swap found it, source 1 the other way round, exactly as the
// simulator retired them. A trTeSrcID of 2 or 3 (a data source's ID) is
// refused when trTeEnable is written 1: trTeEnable reads back 0 and the
// run warns, saying why.
func TestETraceDataSrcIDReprogram(t *testing.T) {
	// (examples/mt-shared's hart 1 ends in its first quantum)
	mt := corpus.Path(t, "ntrace-refcode/elf/mt-vvadd.riscv")
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	if err := os.WriteFile(p("swap.txt"), []byte(swapScript), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, proto := range []string{"unified", "split"} {
		code, _, e := rv(t, "run", "--harts", "2", "--trace", "etrace", "--data-trace", "--data-protocol", proto, "--trace-capture", p("swap.cap"),
			"--trace-capture-all", "--trace-script", p("swap.txt"), "--pcs", p("run.{hart}.pcs"), mt)
		if code != 0 || strings.Contains(e, "warning") {
			t.Fatalf("%s: run: exit %d: %s", proto, code, e)
		}
		_, hint, ok := strings.Cut(e, "decode with: rvtrace ")
		if !ok {
			t.Fatalf("%s: no decode hint: %s", proto, e)
		}
		hint, _, _ = strings.Cut(hint, " (")
		if !strings.Contains(hint, "--data-harts 2") {
			t.Errorf("%s: decode hint %q", proto, hint)
		}
		var dec [2][]string
		for s := 0; s < 2; s++ {
			out := p(fmt.Sprintf("dec.%d.pcs", s))
			args := append(strings.Fields(hint), "--src", strconv.Itoa(s), "--pcs", out)
			code, _, de := rv(t, args...)
			if code != 0 || !strings.Contains(de, " 0 gaps") {
				t.Fatalf("%s: rvtrace %s: exit %d: %s", proto, strings.Join(args, " "), code, de)
			}
			dec[s] = readLines(t, out)
		}
		r0, r1 := readLines(t, p("run.0.pcs")), readLines(t, p("run.1.pcs"))
		const a = 7000                   // hart 0's instructions before the swap
		b := len(dec[1]) - (len(r0) - a) // hart 1's
		if b < 100 || b > len(r1)-100 {
			t.Fatalf("%s: hart 1 had retired %d of its %d instructions at the swap: the test proves little", proto, b, len(r1))
		}
		want0 := append(append([]string(nil), r0[:a]...), r1[b:]...)
		want1 := append(append([]string(nil), r1[:b]...), r0[a:]...)
		if !equalStrings(dec[0], want0) || !equalStrings(dec[1], want1) {
			t.Errorf("%s: source 0 decodes to %d PCs, source 1 to %d: not hart 0's first %d then hart 1's from its %dth, and the other way round",
				proto, len(dec[0]), len(dec[1]), a, b)
		}
	}
	// a data source's ID is refused for instruction packets
	bad := strings.Replace(swapScript, "trTeSrcID=1", "trTeSrcID=3", 1)
	bad = strings.Replace(bad, "expect enc0.trTeControl trTeEnable=1", "expect enc0.trTeControl trTeEnable=0", 1)
	if err := os.WriteFile(p("bad.txt"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, e := rv(t, "run", "-q", "--harts", "2", "--trace", "etrace", "--data-trace", "--trace-capture", p("bad.cap"),
		"--trace-capture-all", "--trace-script", p("bad.txt"), mt)
	want := "rvtrace run: warning: trace encoder of hart 0: a write of trTeEnable = 1 did not enable it (trTeEnable read back 0); the last because: " +
		"trTeSrcID 3 with data trace of 2 harts: hart h's data packets carry source ID 2 + its trTeSrcID"
	if code != 0 || !strings.Contains(e, want) || !strings.Contains(e, "must be below 2") {
		t.Errorf("trTeSrcID 3: exit %d, want the refused enable said: %s", code, e)
	}
}
