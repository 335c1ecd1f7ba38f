package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reconfScript is examples/trace-self/probe.txt with N-Trace BTM while
// fib runs up to puts_, then the encoder disabled, switched to HTM and
// enabled again (tracing to the end).
const reconfScript = `write ram.trRamControl trRamActive=1
write ram.trRamWPLow 0
write ram.trRamControl trRamActive=1,trRamEnable=1
write funnel.trFunnelControl trFunnelActive=1
write funnel.trFunnelControl trFunnelActive=1,trFunnelEnable=1
write trTeControl trTeActive=1
write trTeControl trTeActive=1,trTeEnable=1,trTeInstMode=3,trTeFormat=1
at sym:fib
write trTeControl trTeActive=1,trTeEnable=1,trTeInstTracing=1,trTeInstMode=3,trTeFormat=1
at sym:puts_
write trTeControl trTeActive=1,trTeInstMode=3,trTeFormat=1
wait trTeControl trTeEnable=1,trTeEmpty=1 trTeEmpty=1
write trTeControl trTeActive=1,trTeInstMode=6,trTeFormat=1
write trTeControl trTeActive=1,trTeEnable=1,trTeInstTracing=1,trTeInstMode=6,trTeFormat=1
`

// TestHintReconfigured: a probe that switches the encoder from BTM to
// HTM between two enables gets, beside the decode command of the last
// settings, a warning naming the other settings' options (even with -q);
// each command decodes its part and shows the other as a gap: the BTM
// one gives exactly fib's PCs up to puts_ before its gap. The probe that
// keeps one configuration gets no warning.
func TestHintReconfigured(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "reconf.txt")
	if err := os.WriteFile(script, []byte(reconfScript), 0o666); err != nil {
		t.Fatal(err)
	}
	capture, ran := filepath.Join(dir, "re.nex"), filepath.Join(dir, "run.pcs")
	code, _, e := rv(t, "run", "-q", "--max-instret", "1000000", "--trace-script", script, "--trace-capture", capture, "--pcs", ran, ownDemo)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, e)
	}
	_, warn, ok := strings.Cut(e, "warning: the trace encoders were also enabled with settings that decode differently")
	if !ok {
		t.Fatalf("no warning of the two configurations: %s", e)
	}
	warn, _, _ = strings.Cut(warn, "\n")
	_, other, ok := strings.Cut(warn, "hart 0: ")
	if !ok || !strings.Contains(other, "--mode btm") {
		t.Fatalf("the warning does not give the BTM options: %s", warn)
	}
	if !strings.Contains(e, "decode with: rvtrace decode --protocol ntrace --mode htm") {
		t.Fatalf("the hint is not the HTM settings': %s", e)
	}
	want := segment(t, readLines(t, ran), "0x8000115a", "0x80001010")
	for _, c := range []struct {
		name string
		args []string
	}{{"btm", strings.Fields(other)}, {"htm", strings.Fields(strings.SplitN(strings.SplitN(e, "decode with: rvtrace decode ", 2)[1], "--image", 2)[0])}} {
		pcs := filepath.Join(dir, c.name+".pcs")
		args := append(append([]string{"decode"}, c.args...), "--image", ownDemo, capture, "--pcs", pcs)
		code, _, de := rv(t, args...)
		if code == 0 || !strings.Contains(de, " 1 gap,") {
			t.Errorf("%s: exit %d, want one gap: %s", c.name, code, de)
		}
		if got := readLines(t, pcs); c.name == "btm" && (len(got) < len(want) || !equalStrings(got[:len(want)], want)) {
			t.Errorf("btm: %d instructions, do not start with fib's %d up to puts_", len(got), len(want))
		}
	}

	code, _, e = rv(t, "run", "-q", "--max-instret", "1000000", "--trace-script", filepath.Join("..", "..", "examples", "trace-self", "probe.txt"),
		"--trace-capture", capture, ownDemo)
	if code != 0 || strings.Contains(e, "warning: the trace encoders") {
		t.Errorf("one configuration: exit %d: %s", code, e)
	}
}
