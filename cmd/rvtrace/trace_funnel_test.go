package main

import (
	"os"
	"path/filepath"
	"slices"
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
// The second run spells it --trace ntrace --preset best --trace-capture:
// the options program the same registers.
func TestFunnelTwoHartsCLI(t *testing.T) {
	elf := corpus.Path(t, "ntrace-refcode/elf/mt-vvadd.riscv")
	dir := t.TempDir()
	script := filepath.Join(dir, "probe.txt")
	if err := os.WriteFile(script, []byte(funnelScript), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("script", func(t *testing.T) { checkFunnelRun(t, dir, elf, "--trace-system", "--trace-script", script) })
	t.Run("options", func(t *testing.T) { checkFunnelRun(t, dir, elf, "--trace", "ntrace", "--preset", "best") })
	t.Run("etrace", func(t *testing.T) { checkFunnelRun(t, dir, elf, "--trace", "etrace", "--encap", "utdd", "--all-modes") })
}

// checkFunnelRun runs elf on two harts with the trace system and the
// options, captures the RAM sink and decodes it source by source.
func checkFunnelRun(t *testing.T, dir, elf string, opts ...string) {
	capture := filepath.Join(dir, "cap.nex")
	args := append([]string{"run", "--harts", "2", "--max-instret", "1000000"}, opts...)
	args = append(args, "--trace-capture", capture, "--pcs", filepath.Join(dir, "pcs.{hart}"), elf)
	code, _, stderr := rv(t, args...)
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
		dec := []string{"decode", "--protocol", "ntrace"}
		if slices.Contains(opts, "etrace") {
			// one UTDD source ID per hart, in the frames' headers
			dec = []string{"decode", "--protocol", "etrace", "--encap", "utdd", "--all-modes"}
		}
		code, _, stderr := rv(t, append(dec, "--src-bits", "1", "--src", strconv.Itoa(h), "--image", elf, "--pcs", out, capture)...)
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

// TestTraceOptionsThroughSink: --trace with --trace-capture (no -o)
// programs the trace system's encoder, funnel and RAM sink; on one hart
// the capture is the very bytes --trace -o writes (the encoder's output
// through the funnel), then the padding of the sink's last 32-bit word
// (N-Trace idle bytes 0xFF, E-Trace UTDD null packets 0x00). E-Trace's raw
// framing, which has no padding, is refused when asked for.
func TestTraceOptionsThroughSink(t *testing.T) {
	demo := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		pad  byte
	}{
		{[]string{"--trace", "ntrace", "--preset", "ref-htm-best", "--filter", "priv=M"}, 0xFF},
		{[]string{"--trace", "ntrace", "--preset", "btm", "--timestamps", "--sync-mode", "1", "--sync-max", "2"}, 0xFF},
		{[]string{"--trace", "etrace", "--encap", "utdd", "--all-modes", "--resync", "32"}, 0x00},
	} {
		direct := filepath.Join(dir, "direct")
		capture := filepath.Join(dir, "capture")
		base := []string{"run", "-q", "--max-instret", "100000"}
		if code, _, e := rv(t, append(append(append(base, tc.args...), "-o", direct), demo)...); code != 1 { // the instruction limit: exit 1
			t.Fatalf("%v -o: exit %d: %s", tc.args, code, e)
		}
		// --trace-capture-all: the 64 KiB SRAM would wrap
		if code, _, e := rv(t, append(append(append(base, tc.args...), "--trace-capture", capture, "--trace-capture-all"), demo)...); code != 1 {
			t.Fatalf("%v --trace-capture: exit %d: %s", tc.args, code, e)
		}
		want, err := os.ReadFile(direct)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(capture)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) < 1000 || len(got) != (len(want)+3)/4*4 || string(got[:len(want)]) != string(want) {
			t.Errorf("%v: the capture (%d bytes) is not the %d bytes of -o padded to a word", tc.args, len(got), len(want))
			continue
		}
		for _, b := range got[len(want):] {
			if b != tc.pad {
				t.Errorf("%v: padded with %#x", tc.args, b)
			}
		}
	}
	code, _, e := rv(t, "run", "-q", "--max-instret", "1000", "--trace", "etrace", "--encap", "raw", "--trace-capture", filepath.Join(dir, "raw"), demo)
	if code == 0 || !strings.Contains(e, "--encap raw: E-Trace through the trace system is framed in the UTDD encapsulation") {
		t.Errorf("E-Trace raw framing into the RAM sink: exit %d: %s", code, e)
	}
}
