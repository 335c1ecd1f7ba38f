package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/corpus"
)

// funnelScript is a debug probe's program for two harts: the RAM sink
// (SRAM) and the funnel enabled, then each hart's N-Trace encoder (HTM,
// implicit return) with a 1-bit SRC field holding its hart number,
// enabled and tracing before the first instruction.
const funnelScript = `write ram.trRamControl trRamActive=1
write ram.trRamWPLow 0
write ram.trRamControl trRamActive=1,trRamEnable=1
write funnel.trFunnelControl trFunnelActive=1
write funnel.trFunnelControl trFunnelActive=1,trFunnelEnable=1
write enc0.trTeControl trTeActive=1
write enc0.trTeInstFeatures trTeSrcBits=1,trTeSrcID=0,trTeInstEnImplicitReturn=1,trTeInstImplicitReturnMode=3
write enc0.trTeControl trTeActive=1,trTeEnable=1,trTeInstTracing=1,trTeInstMode=6,trTeFormat=1
write enc1.trTeControl trTeActive=1
write enc1.trTeInstFeatures trTeSrcBits=1,trTeSrcID=1,trTeInstEnImplicitReturn=1,trTeInstImplicitReturnMode=3
write enc1.trTeControl trTeActive=1,trTeEnable=1,trTeInstTracing=1,trTeInstMode=6,trTeFormat=1
expect enc1.trTeControl trTeEnable=1,trTeInstTracing=1 mask trTeEnable=1,trTeInstTracing=1
`

// TestFunnelTwoHartsCLI: rvtrace run --harts 2 with the trace system,
// both harts' encoders programmed by a host script, feeding the funnel
// into the RAM sink, read back with --trace-capture; rvtrace decode of the
// capture, source by source, gives exactly the PCs the simulator retired
// on that hart (run --pcs with {hart}: one file per hart).
func TestFunnelTwoHartsCLI(t *testing.T) {
	elf := corpus.Path(t, "ntrace-refcode/elf/mt-vvadd.riscv")
	dir := t.TempDir()
	script := filepath.Join(dir, "probe.txt")
	if err := os.WriteFile(script, []byte(funnelScript), 0o644); err != nil {
		t.Fatal(err)
	}
	capture := filepath.Join(dir, "cap.nex")
	code, _, stderr := rv(t, "run", "--harts", "2", "--max-instret", "1000000", "--trace-system", "--trace-script", script,
		"--trace-capture", capture, "--pcs", filepath.Join(dir, "pcs.{hart}"), elf)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "wrapped") {
		t.Fatalf("the RAM sink wrapped: %s", stderr)
	}
	for h := 0; h < 2; h++ {
		want, err := os.ReadFile(filepath.Join(dir, "pcs."+strconv.Itoa(h)))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(want), "\n"); n < 50000 {
			t.Fatalf("hart %d retired %d instructions only", h, n)
		}
		out := filepath.Join(dir, "dec."+strconv.Itoa(h))
		code, _, stderr := rv(t, "decode", "--protocol", "ntrace", "--src-bits", "1", "--src", strconv.Itoa(h), "--image", elf, "--pcs", out, capture)
		if code != 0 {
			t.Fatalf("decode --src %d: exit %d: %s", h, code, stderr)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("hart %d: the decoded PCs (%d bytes) differ from the %d bytes the simulator retired", h, len(got), len(want))
		}
	}
}
