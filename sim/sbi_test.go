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

// TestSBIPMUInhibitFlags configures a counter through
// sbi_pmu_counter_config_matching with each inhibit flag and checks the
// mhpmevent bit it sets, as the ratified SBI numbers the flags (and Linux
// passes them: exclude_kernel is SET_SINH, bit 6; exclude_user SET_UINH,
// bit 5): VUINH 3, VSINH 4, UINH 5, SINH 6, MINH 7, onto mhpmevent's
// VUINH 58, VSINH 59, UINH 60, SINH 61, MINH 62 (Sscofpmf). M-mode
// counting is always inhibited.
func TestSBIPMUInhibitFlags(t *testing.T) {
	pmuTestOrSkip(t)
	m, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadSBI(pmuTestELF); err != nil {
		t.Fatal(err)
	}
	h := m.Hart(0)
	const instructions = 2 // SBI_PMU_HW_INSTRUCTIONS, type 0
	for _, c := range []struct {
		flag uint   // bit of the config flags
		bit  uint64 // mhpmevent bit
	}{{3, 58}, {4, 59}, {5, 60}, {6, 61}, {7, 62}} {
		ret, ctr := h.sbiConfigMatching(3, 1, 1<<1|1<<c.flag, instructions, 0)
		if ret != 0 || ctr != 3 {
			t.Fatalf("flag bit %d: config_matching returned %d, counter %d", c.flag, ret, ctr)
		}
		got := h.hpm.event[3] >> 58 & 0x1f
		want := uint64(1)<<(c.bit-58) | 1<<(62-58)
		if got != want {
			t.Errorf("flag bit %d: mhpmevent inhibit bits 62:58 = %05b, want %05b", c.flag, got, want)
		}
	}
}
