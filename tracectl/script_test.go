package tracectl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/ingress"
)

// probeScript sets up an SRAM sink, the funnel and an HTM encoder before
// the first instruction, turns tracing on at START and disables the
// encoder at STOP.
const probeScript = `# a probe
write ram.trRamControl trRamActive=1
write ram.trRamWPLow 0
write ram.trRamControl trRamActive=1,trRamEnable=1
write funnel.trFunnelControl 1
write funnel.trFunnelControl 3
write enc0.trTeControl trTeActive=1
write trTeInstFeatures trTeInstEnImplicitReturn=1,trTeInstImplicitReturnMode=3
write trTeControl 0x1000061     # active, HTM, N-Trace
write trTeControl 0x1000063     # enabled
expect trTeControl 2 mask 2
at START write trTeControl trTeActive=1,trTeEnable=1,trTeInstTracing=1,trTeInstMode=6,trTeFormat=1
at STOP
write trTeControl 0x1000061
wait trTeControl 0xA 0x8
read trRamWPLow
at end read ram.trRamControl
`

// A probe script run on the corpus program t1, fed one block per
// instruction: the capture decodes to exactly the executed instructions
// from the start point to the stop point, whether the points are
// instruction counts or addresses.
func TestProbeCorpus(t *testing.T) {
	img, pcData, want := loadT1(t)
	first := func(pc uint64) int {
		for i, p := range want {
			if p == pc {
				return i
			}
		}
		return -1
	}
	// an address first executed well inside the run, and one after it
	a := want[len(want)/3]
	ia := first(a)
	var b uint64
	for _, p := range want[ia+50:] {
		if first(p) > ia+50 {
			b = p
			break
		}
	}
	ib := -1
	for i := ia + 1; i < len(want); i++ {
		if want[i] == b {
			ib = i
			break
		}
	}
	if ib < 0 {
		t.Fatal("no stop address")
	}
	for _, c := range []struct {
		start, stop string
		from, to    int
	}{
		{"100", "600", 100, 600},
		{fmt.Sprintf("pc:%#x", a), fmt.Sprintf("pc:%#x", b), ia, ib},
	} {
		text := strings.NewReplacer("START", c.start, "STOP", c.stop).Replace(probeScript)
		sc, err := ParseScript("probe.txt", strings.NewReader(text), img.Lookup)
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewSystem(1, img, 64<<10, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		p := sc.Probe(s, s.Encoders[0], &out)
		src := ingress.NewPCSource(bytes.NewReader(pcData), "t1", img, ingress.PCOptions{PerInstruction: true})
		for {
			blk, err := src.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Block(blk); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.End(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "probe.txt:16: at "+c.stop) || !strings.Contains(out.String(), "probe.txt:17: at end") {
			t.Errorf("reads not reported: %s", out.String())
		}
		capt, err := s.StopAndCapture()
		if err != nil {
			t.Fatal(err)
		}
		got := decodeNTrace(t, img, capt.Bytes, capt.Settings.NTrace)
		if len(got.gaps) > 0 || !equalPCs(got.pcs, want[c.from:c.to]) {
			t.Errorf("at %s..%s: decoded %d instructions, gaps %v; want the %d executed from %d to %d", c.start, c.stop,
				len(got.pcs), got.gaps, c.to-c.from, c.from, c.to)
		}
	}
}

// Script errors name the file and the line.
func TestParseScriptErrors(t *testing.T) {
	lookup := func(name string) (uint64, bool) { return 0x1000, name == "main" }
	for _, c := range []struct{ text, want string }{
		{"write trTeControl\n", "s.txt:1: write: want \"write REG VALUE\""},
		{"\n\nfrobnicate trTeControl 1\n", "s.txt:3: unknown command \"frobnicate\""},
		{"at\n", "s.txt:1: at: missing the point"},
		{"at soon write trTeControl 1\n", "s.txt:1: point \"soon\""},
		{"at sym:nosuch\n", "s.txt:1: sym:nosuch: no symbol \"nosuch\""},
		{"write enc99.trTeControl 1\n", "s.txt:1: component \"enc99\""},
		{"write trTeControl 0x100000000\n", "s.txt:1: value \"0x100000000\""},
		{"write trTeControl trTeInstMode=9\n", "s.txt:1: trTeInstMode=9 does not fit in 3 bits"},
		{"write 0x3000002 1\n", "s.txt:1: register \"0x3000002\""},
		{"write 0x3000000 trTeActive=1\n", "s.txt:1: value \"trTeActive=1\": fields need a register name"},
		{"write funnel.trTeControl 1\n", "s.txt:1: no register \"trTeControl\" in the trace funnel"},
	} {
		_, err := ParseScript("s.txt", strings.NewReader(c.text), lookup)
		var se *ScriptError
		if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one with %q", c.text, err, c.want)
		}
	}
	sc, err := ParseScript("s.txt", strings.NewReader("at sym:main+4 write enc1.TRTECONTROL trteactive=1\n"), lookup)
	if err != nil {
		t.Fatal(err)
	}
	g := sc.groups[0]
	if g.kind != pointPC || g.n != 0x1004 || g.cmds[0].reg.comp != 1 || g.cmds[0].reg.off != TeControl || g.cmds[0].val != 1 {
		t.Errorf("parsed %+v", g)
	}
}
