package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/etrace"
)

// framingLine returns the options of the "framing detected" line of a
// decode's stderr, and whether there is one.
func framingLine(stderr string) (what string, opts []string, ok bool) {
	_, l, ok := strings.Cut(stderr, "framing detected: ")
	if !ok {
		return "", nil, false
	}
	l, _, _ = strings.Cut(l, "\n")
	what, o, ok := strings.Cut(l, " (pass ")
	o, _, ok2 := strings.Cut(o, " to fix)")
	return what, strings.Fields(o), ok && ok2
}

// hexPCs keeps the PCs of a --pcs list (its lines that are not comments).
func hexPCs(lines []string) []string {
	return slices.DeleteFunc(slices.Clone(lines), func(s string) bool { return !strings.HasPrefix(s, "0x") })
}

// TestFramingNTraceSystem: N-Trace of two harts through the trace system
// (the funnel's SRC field, 1 bit) captured from the RAM sink in SRAM and
// SMEM mode, and the two harts' -o trace, decode without --src-bits: the
// SRC field is detected, said in one line with the option that fixes it,
// and each hart decodes to exactly the PCs the simulator retired; with
// that option, the same without the line. One hart's capture (no SRC
// field) says nothing of its framing.
func TestFramingNTraceSystem(t *testing.T) {
	mt := filepath.Join("..", "..", "examples", "mt-shared", "mt-shared.elf")
	demo := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	if err := os.WriteFile(p("smem.txt"), []byte(smemScript), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{
		{"--trace-capture", p("sram.cap")},
		{"--trace-capture", p("smem.cap"), "--trace-script", p("smem.txt")},
		{"-o", p("own.nt")},
	} {
		file := c[1]
		run := append([]string{"run", "--harts", "2", "--trace", "ntrace", "--pcs", p("run.{hart}.pcs")}, c...)
		if code, _, e := rv(t, append(run, mt)...); code != 0 {
			t.Fatalf("%v: run: exit %d: %s", c, code, e)
		}
		for h := 0; h < 2; h++ {
			want := readLines(t, p(fmt.Sprintf("run.%d.pcs", h)))
			for _, proto := range []string{"ntrace", "auto"} {
				code, _, e := rv(t, "decode", "--protocol", proto, "--image", mt, "--src", strconv.Itoa(h), "--pcs", p("dec.pcs"), file)
				what, opts, ok := framingLine(e)
				if code != 0 || !ok || what != "N-Trace, SRC field of 1 bit" || strings.Join(opts, " ") != "--protocol ntrace --src-bits 1" {
					t.Fatalf("%v: decode --protocol %s: exit %d, want the SRC field detected: %s", c, proto, code, e)
				}
				if got := readLines(t, p("dec.pcs")); len(want) < 1000 || !equalStrings(got, want) {
					t.Errorf("%v: hart %d: %d PCs decoded, %d retired, or they differ", c, h, len(got), len(want))
				}
				code, _, e = rv(t, append(append([]string{"decode"}, opts...), "--image", mt, "--src", strconv.Itoa(h), "--pcs", p("fix.pcs"), file)...)
				if _, _, ok := framingLine(e); code != 0 || ok || !equalStrings(readLines(t, p("fix.pcs")), want) {
					t.Errorf("%v: decode %v: exit %d, or other PCs: %s", c, opts, code, e)
				}
			}
		}
	}
	if code, _, e := rv(t, "run", "--trace", "ntrace", "--max-instret", "20000", "--trace-capture", p("one.cap"), demo); code != 1 {
		t.Fatalf("run: exit %d: %s", code, e)
	}
	if code, _, e := rv(t, "decode", "--image", demo, p("one.cap")); code != 0 || strings.Contains(e, "framing") {
		t.Errorf("one hart's N-Trace capture: exit %d: %s", code, e)
	}
}

// TestFramingRawUnchanged: raw E-Trace traces of every mode (rvtrace run
// -o: the encoder's own output), and N-Trace traces of the presets, decode
// without framing options exactly as with the default framing given
// (which detects nothing): the same exit code, stdout, stderr and PC
// list, and no framing line.
func TestFramingRawUnchanged(t *testing.T) {
	demo := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	for i, c := range []struct {
		proto  string
		enc    []string // the encoder's options
		dec    []string // the decoder's (beside the framing)
		framed []string // the default framing given
	}{
		{"etrace", nil, nil, []string{"--encap", "raw"}},
		{"etrace", []string{"--full-address"}, []string{"--full-address"}, []string{"--encap", "raw"}},
		{"etrace", []string{"--sijump"}, []string{"--sijump"}, []string{"--encap", "raw"}},
		{"etrace", []string{"--implicit-return", "counter"}, []string{"--implicit-return", "counter"}, []string{"--encap", "raw"}},
		{"etrace", []string{"--implicit-return", "stack"}, []string{"--implicit-return", "stack"}, []string{"--encap", "raw"}},
		{"etrace", []string{"--branch-prediction"}, []string{"--branch-prediction"}, []string{"--encap", "raw"}},
		{"etrace", []string{"--jump-target-cache"}, []string{"--jump-target-cache"}, []string{"--encap", "raw"}},
		{"etrace", []string{"--all-modes"}, []string{"--all-modes"}, []string{"--encap", "raw"}},
		{"etrace", []string{"--resync", "16"}, nil, []string{"--encap", "raw"}},
		{"etrace", []string{"--context"}, []string{"--context"}, []string{"--encap", "raw"}},
		{"etrace", []string{"--etrace-version", "0.026"}, []string{"--etrace-version", "0.026"}, []string{"--encap", "raw"}},
		// (the decoder skips the data packets, with a word)
		{"etrace", []string{"--data-trace"}, nil, []string{"--encap", "raw"}},
		{"ntrace", nil, nil, []string{"--src-bits", "0"}},
		{"ntrace", []string{"--preset", "best"}, []string{"--preset", "best"}, []string{"--src-bits", "0"}},
		{"ntrace", []string{"--preset", "ref-btm"}, []string{"--preset", "ref-btm"}, []string{"--src-bits", "0"}},
	} {
		f := p(fmt.Sprintf("t%d", i))
		run := append(append([]string{"run", "-q", "--max-instret", "30000", "--trace", c.proto}, c.enc...), "-o", f, demo)
		if code, _, e := rv(t, run...); code != 1 {
			t.Fatalf("%v: exit %d: %s", run, code, e)
		}
		dec := func(framing []string, out string) (int, string, string) {
			args := append(append(append([]string{"decode", "--protocol", c.proto}, c.dec...), framing...), "--image", demo, "--pcs", out, f)
			code, o, e := rv(t, args...)
			return code, o, strings.ReplaceAll(e, out, "OUT")
		}
		code, out, e := dec(nil, p("a.pcs"))
		code2, out2, e2 := dec(c.framed, p("b.pcs"))
		if code != code2 || out != out2 || e != e2 || strings.Contains(e, "framing") {
			t.Errorf("%s %v: without framing options: exit %d, %q, %q; with %v: exit %d, %q, %q", c.proto, c.enc, code, out, e, c.framed, code2, out2, e2)
		}
		if a, b := readLines(t, p("a.pcs")), readLines(t, p("b.pcs")); len(a) < 1000 || !equalStrings(a, b) {
			t.Errorf("%s %v: %d PCs without framing options, %d with", c.proto, c.enc, len(a), len(b))
		}
	}
}

// traceSysCapture runs prog on harts harts with E-Trace through the
// trace system and the run options args, capturing to dir/name.cap and
// the retired PCs to dir/name.N.pcs, and returns the capture.
func traceSysCapture(t *testing.T, dir, name, prog string, harts int, args ...string) []byte {
	t.Helper()
	run := append([]string{"run", "-q", "--harts", strconv.Itoa(harts), "--trace", "etrace", "--trace-capture", filepath.Join(dir, name+".cap"),
		"--pcs", filepath.Join(dir, name+".{hart}.pcs")}, args...)
	if code, _, e := rv(t, append(run, prog)...); code > 1 {
		t.Fatalf("%v: exit %d: %s", run, code, e)
	}
	b, err := os.ReadFile(filepath.Join(dir, name+".cap"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFramingShortAndCut: the framing of an E-Trace trace system capture
// (one hart with data trace: a source bit; two harts: a source bit each)
// is detected from its first 500 bytes, and from the capture cut
// inside a frame (a debugger's dump of a wrapped buffer; periodic syncs,
// decoded with --allow-truncated); the framing line names the framing of
// the whole capture, and the PCs decoded are the start of those the
// simulator retired (the end of the trace, which is lost, a gap), or
// their end from a later sync on.
func TestFramingShortAndCut(t *testing.T) {
	demo := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	mt := filepath.Join("..", "..", "examples", "mt-shared", "mt-shared.elf")
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	for _, c := range []struct {
		name  string
		prog  string
		harts int
		args  []string
		what  string
	}{
		{"data", demo, 1, []string{"--max-instret", "40000", "--data-trace", "--resync", "16"},
			"E-Trace, UTDD, 1 source bit, data trace (instruction source 0, data source 1)"},
		{"harts", mt, 2, []string{"--resync", "16"}, "E-Trace, UTDD, 1 source bit"},
		{"plain", demo, 1, []string{"--max-instret", "40000", "--resync", "16"}, "E-Trace, UTDD, no source ID"},
	} {
		data := traceSysCapture(t, dir, c.name, c.prog, c.harts, c.args...)
		// a cut inside a frame, a quarter into the capture
		cfg := etrace.DefaultConfig()
		cfg.Encap = etrace.EncapUTDD
		if c.what != "E-Trace, UTDD, no source ID" {
			cfg.SrcBits = 1
		}
		cut := -1
		sc := etrace.NewScanner(bytes.NewReader(data), &cfg)
		for sc.Scan() {
			if fr := sc.Frame(); fr.Offset > int64(len(data)/4) && len(fr.Payload) > 2 {
				cut = int(fr.Offset) + 2
				break
			}
		}
		if len(data) < 600 || cut < 0 {
			t.Fatalf("%s: a capture of %d bytes, no frame to cut", c.name, len(data))
		}
		for _, part := range []struct {
			what  string
			bytes []byte
		}{{"first 500 bytes", data[:500]}, {fmt.Sprintf("from byte %d (inside a frame)", cut), data[cut:]}} {
			f := p(c.name + ".part")
			if err := os.WriteFile(f, part.bytes, 0o644); err != nil {
				t.Fatal(err)
			}
			for h := 0; h < c.harts; h++ {
				if h > 0 && len(part.bytes) == 500 {
					break // (the other hart's trace starts later)
				}
				args := []string{"decode", "--image", c.prog, "--pcs", p("part.pcs"), "--src", strconv.Itoa(h), f}
				if cut > 0 && part.bytes[0] == data[cut] && len(part.bytes) == len(data)-cut {
					args = append(args, "--allow-truncated")
				}
				code, _, e := rv(t, args...)
				what, _, ok := framingLine(e)
				if code != 0 && code != 3 || !ok || what != c.what {
					t.Fatalf("%s, %s: exit %d, want the framing %q detected: %s", c.name, part.what, code, c.what, e)
				}
				got, want := hexPCs(readLines(t, p("part.pcs"))), strings.Join(readLines(t, p(fmt.Sprintf("%s.%d.pcs", c.name, h))), " ")
				switch {
				case len(got) < 2:
					t.Errorf("%s, %s, hart %d: %d PCs decoded", c.name, part.what, h, len(got))
				case part.what == "first 500 bytes" && !strings.HasPrefix(want, strings.Join(got, " ")):
					t.Errorf("%s, %s, hart %d: the %d PCs decoded are not the first retired", c.name, part.what, h, len(got))
				case part.what != "first 500 bytes" && !strings.HasSuffix(want, strings.Join(got, " ")):
					t.Errorf("%s, %s, hart %d: the %d PCs decoded are not the last retired", c.name, part.what, h, len(got))
				}
			}
		}
	}
}

// TestFramingCorrupt: an E-Trace trace system capture (two harts with
// split data trace) with bytes flipped (some in its start, where the
// framing is detected) decodes without framing options in the framing of
// the clean capture, which the framing line names, with gaps that say
// where it is damaged (exit 3): not in another framing without a word.
func TestFramingCorrupt(t *testing.T) {
	mt := filepath.Join("..", "..", "examples", "mt-shared", "mt-shared.elf")
	dir := t.TempDir()
	data := traceSysCapture(t, dir, "mt", mt, 2, "--data-trace", "--data-protocol", "split")
	f := filepath.Join(dir, "mt.cap")
	code, _, e := rv(t, "decode", "--image", mt, f)
	what, _, ok := framingLine(e)
	if code != 0 || !ok || !strings.Contains(what, "data trace of 2 harts") {
		t.Fatalf("clean capture: exit %d: %s", code, e)
	}
	for _, every := range []int{97, 301, 1000} {
		bad := slices.Clone(data)
		for i := 40; i < len(bad); i += every {
			bad[i] ^= 0x24
		}
		g := filepath.Join(dir, "bad.cap")
		if err := os.WriteFile(g, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, e := rv(t, "decode", "--image", mt, g)
		w, _, ok := framingLine(e)
		if code != 3 || !ok || w != what || !strings.Contains(e, "gap at byte") {
			t.Errorf("a byte in %d flipped: exit %d, want gaps and the framing %q said: %s", every, code, what, e)
		}
	}
}

// TestFramingAmbiguous: a capture whose frames read as E-Trace in two
// framings that decode the same packets to different flows (the UTDD type
// field, instruction trace, over no source ID; or a source ID of 2 bits,
// every frame of source 2; a one-hart data trace of sources 1 and 3, or
// hart 1's of two) stops the decode with an error naming both
// framings and their options; the type field's and the 2-bit source
// ID's each decode the capture to exactly the PCs the simulator retired.
func TestFramingAmbiguous(t *testing.T) {
	demo := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	traceSysCapture(t, dir, "tf", demo, 1, "--max-instret", "30000", "--type-field")
	f := filepath.Join(dir, "tf.cap")
	want := readLines(t, filepath.Join(dir, "tf.0.pcs"))
	for _, proto := range []string{"etrace", "auto"} {
		code, _, e := rv(t, "decode", "--protocol", proto, "--image", demo, "--pcs", filepath.Join(dir, "x.pcs"), f)
		if code != 1 || !strings.Contains(e, "the framing of the trace is ambiguous") ||
			!strings.Contains(e, "(--protocol etrace --encap utdd --src-bits 2;") || !strings.Contains(e, "(--protocol etrace --encap utdd --type-field;") {
			t.Errorf("decode --protocol %s: exit %d, want both framings named: %s", proto, code, e)
		}
	}
	// a one-hart data trace with instruction source 1 and data source 3
	// reads as hart 1's of two just as well
	traceSysCapture(t, dir, "sd", demo, 1, "--max-instret", "30000", "--data-trace", "--src-bits", "2", "--src-id", "1", "--data-src-id", "3")
	code, _, e := rv(t, "decode", "--image", demo, filepath.Join(dir, "sd.cap"))
	if code != 1 || !strings.Contains(e, "the framing of the trace is ambiguous") ||
		!strings.Contains(e, "(--protocol etrace --encap utdd --src-bits 2 --data-trace --src-id 1 --data-src-id 3;") ||
		!strings.Contains(e, "(--protocol etrace --encap utdd --src-bits 2 --data-trace --data-harts 2;") {
		t.Errorf("one hart's data trace, sources 1 and 3: exit %d, want both framings named: %s", code, e)
	}
	for _, opts := range [][]string{{"--encap", "utdd", "--src-bits", "2"}, {"--encap", "utdd", "--type-field"}} {
		out := filepath.Join(dir, "y.pcs")
		code, _, e := rv(t, append(append([]string{"decode", "--protocol", "etrace"}, opts...), "--image", demo, "--pcs", out, f)...)
		if got := readLines(t, out); code != 0 || len(want) < 1000 || !equalStrings(got, want) {
			t.Errorf("decode %v: exit %d, %d PCs, %d retired: %s", opts, code, len(got), len(want), e)
		}
	}
}

// TestFramingWrongImage: a trace system capture (two harts) decoded
// without framing options with another program's image reads as UTDD
// frames, but no framing decodes an instruction of the image: the error
// says the image is the likely cause, not to drop framing options the
// command line did not give; decoded with the raw framing given, the error
// names the UTDD framing's options and detection.
func TestFramingWrongImage(t *testing.T) {
	demo := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	mt := filepath.Join("..", "..", "examples", "mt-shared", "mt-shared.elf")
	dir := t.TempDir()
	traceSysCapture(t, dir, "w", mt, 2)
	f := filepath.Join(dir, "w.cap")
	if code, _, e := rv(t, "decode", "--image", mt, "--pcs", filepath.Join(dir, "x.pcs"), f); code != 0 {
		t.Fatalf("the right image: exit %d: %s", code, e)
	}
	for _, args := range [][]string{{"--protocol", "etrace"}, {"--protocol", "auto"}} {
		code, _, e := rv(t, append(append([]string{"decode"}, args...), "--image", demo, f)...)
		if code != 1 || !strings.Contains(e, "wrong image?") || strings.Contains(e, "without framing options") {
			t.Errorf("%v, the wrong image: exit %d, want an error naming the image: %s", args, code, e)
		}
	}
	code, _, e := rv(t, "decode", "--protocol", "etrace", "--encap", "raw", "--image", mt, f)
	if code != 1 || !strings.Contains(e, "decode with --protocol etrace --encap utdd --src-bits 1") || !strings.Contains(e, "without framing options to detect the framing") {
		t.Errorf("--encap raw given: exit %d, want the UTDD framing's options: %s", code, e)
	}
}
