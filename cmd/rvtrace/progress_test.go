package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/corpus"
)

// progressLine matches a progress report: the input's bytes with their
// rate (decoders), or a count of instructions or ingress blocks with its
// rate, as analysis.Progress writes them ("\r" before, padded).
var progressLine = regexp.MustCompile(`\r[^\r\n]+: (\d+(\.\d+)? (B|KiB|MiB|GiB) [^\r\n]*(B|KiB|MiB|GiB)/s|\d+ (instructions|ingress blocks)[^\r\n]* \(\d+\.\d M/s\))`)

// shortProgress makes progress report at once and at every chance, for
// the duration of the test.
func shortProgress(t *testing.T) {
	d, i := progressDelay, progressInterval
	progressDelay, progressInterval = 0, 0
	t.Cleanup(func() { progressDelay, progressInterval = d, i })
}

// TestCLIProgress runs every long command three ways: with --progress
// (forced on, reporting at once), by default and with --progress=false.
// Forced on, stderr gets progress lines with a rate and a final line
// ending in a newline; by default (stderr is no terminal in tests) and
// when turned off it gets none; and stdout is the same byte for byte in
// the three runs.
func TestCLIProgress(t *testing.T) {
	shortProgress(t)
	elf := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	nex := filepath.Join(dir, "demo.nex")
	pcs := filepath.Join(dir, "demo.pcs")
	if code, _, e := rv(t, "run", "--trace", "ntrace", "--timestamps", "-o", nex, "--pcs", pcs, elf); code != 0 {
		t.Fatalf("run: exit %d: %s", code, e)
	}
	cmds := map[string][]string{
		"run":     {"run", elf},
		"run-max": {"run", "--max-instret", "100000", elf},
		"decode":  {"decode", "--image", elf, nex, "--pcs", "-"},
		"script":  {"script", "--image", elf, nex},
		"profile": {"profile", "--image", elf, nex},
		"report":  {"report", "--image", elf, nex, "-o", filepath.Join(dir, "r.html")},
		"encode":  {"encode", "--image", elf, "--pcs", pcs, "-o", filepath.Join(dir, "re.nex")},
		"tarmac":  {"tarmac", "--image", elf, "--pcs", pcs, "--write", filepath.Join(dir, "t.tarmac")},
	}
	if c := corpus.Dir(); c != "" {
		cmds["bench"] = []string{"bench", "--corpus", filepath.Join(c, "ntrace-refcode"), "--only", "median"}
	} else {
		t.Log("corpus absent: bench not run")
	}
	for name, args := range cmds {
		t.Run(name, func(t *testing.T) {
			code, out, e := rv(t, append(append([]string{}, args[0], "--progress"), args[1:]...)...)
			wantCode := 0
			if name == "run-max" {
				wantCode = 1 // the limit is an error
			}
			if code != wantCode {
				t.Fatalf("--progress: exit %d: %s", code, e)
			}
			if !progressLine.MatchString(e) {
				t.Errorf("--progress: no progress line with a rate on stderr: %q", e)
			}
			if !regexp.MustCompile(`\r[^\r\n]+, \d+(\.\d+)?(µs|ms|s) *\n`).MatchString(e) {
				t.Errorf("--progress: no final progress line (elapsed time, newline): %q", e)
			}
			if name == "run-max" && !strings.Contains(e, "instructions of 100000 (") {
				t.Errorf("--progress --max-instret: no total in the progress: %q", e)
			}
			if name == "decode" && !regexp.MustCompile(`demo\.nex: [^\r\n]* of [^\r\n]*\(\d+%\)[^\r\n]*ETA `).MatchString(e) {
				t.Errorf("decode --progress: no percentage and ETA from the file size: %q", e)
			}
			if strings.Contains(out, "\r") {
				t.Errorf("--progress: stdout holds a progress line")
			}
			for _, off := range [][]string{nil, {"--progress=false"}} {
				code2, out2, e2 := rv(t, append(append(append([]string{}, args[0]), off...), args[1:]...)...)
				if code2 != code || out2 != out {
					t.Errorf("%v: exit %d, stdout differs from the run with --progress (%d bytes against %d)", off, code2, len(out2), len(out))
				}
				if strings.Contains(e2, "\r") || progressLine.MatchString(e2) {
					t.Errorf("%v: progress on stderr: %q", off, e2)
				}
			}
		})
	}
}

// TestProgressFlag checks the values --progress takes.
func TestProgressFlag(t *testing.T) {
	for in, want := range map[string]string{"auto": "auto", "true": "true", "on": "true", "1": "true",
		"false": "false", "off": "false", "0": "false"} {
		var p progressFlag
		if err := p.Set(in); err != nil || p.String() != want {
			t.Errorf("Set(%q): %q, %v; want %q", in, p.String(), err, want)
		}
	}
	var p progressFlag
	if err := p.Set("sometimes"); err == nil {
		t.Errorf("Set(sometimes) accepted")
	}
	if !(&progressFlag{mode: "true"}).on() || (&progressFlag{mode: "false"}).on() {
		t.Errorf("on() ignores the mode")
	}
}
