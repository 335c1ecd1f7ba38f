package sim

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/pmu"
)

const pmuTestELF = "../examples/pmu/pmutest.elf"

func pmuTestOrSkip(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(pmuTestELF); err != nil {
		t.Skipf("%s absent (scripts/build-pmu-tests.sh builds it): %v", pmuTestELF, err)
	}
}

// runPMUTest runs the S-mode PMU test program on the built-in SBI
// firmware, with or without the event model.
func runPMUTest(t *testing.T, model bool) (string, Result) {
	pmuTestOrSkip(t)
	var out bytes.Buffer
	m, err := New(Config{Stdout: &out, MaxInstret: 50_000_000})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadSBI(pmuTestELF); err != nil {
		t.Fatal(err)
	}
	if model {
		pm, err := pmu.New(pmu.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.SetEventModel(0, pm); err != nil {
			t.Fatal(err)
		}
	}
	res, err := m.Run()
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return out.String(), res
}

// TestSBIPMUProgram runs examples/pmu/pmutest.elf, which exercises every
// PMU function with valid and invalid arguments and checks every return
// value, known cache/predictor answers and the overflow interrupt.
func TestSBIPMUProgram(t *testing.T) {
	for _, model := range []bool{true, false} {
		out, res := runPMUTest(t, model)
		if res.ExitCode != 0 || !strings.Contains(out, "PMU TEST PASSED") {
			t.Errorf("model %v: exit code %d\n%s", model, res.ExitCode, out)
			continue
		}
		if model && strings.Contains(out, "checks skipped") {
			t.Errorf("cache checks skipped with the event model on")
		}
		// Without the model the events it alone counts are refused
		// with SBI_ERR_NOT_SUPPORTED (checked by the guest), not
		// counted as 0.
		if !model && !strings.Contains(out, "cache and branch events not supported") {
			t.Errorf("model off: the guest was not refused the cache events\n%s", out)
		}
		t.Logf("model %v: %s", model, out[strings.LastIndex(out[:len(out)-17], "\n")+1:])
	}
}
