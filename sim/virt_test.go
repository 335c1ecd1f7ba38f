package sim

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/pmu"
)

// OpenSBI firmware of Debian's opensbi package.
var openSBIImages = []string{
	"/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_jump.elf",
	"/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_dynamic.elf",
}

func runOpenSBI(t *testing.T, fw string, model bool) (string, Result) {
	t.Helper()
	if _, err := os.Stat(fw); err != nil {
		t.Skipf("%s absent (apt-get install opensbi): %v", fw, err)
	}
	pmuTestOrSkip(t)
	var out bytes.Buffer
	m, err := New(Config{Stdout: &out, MaxInstret: 100_000_000})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadFirmware(fw, pmuTestELF); err != nil {
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

// TestOpenSBIPMUProgram boots Debian's OpenSBI (fw_jump and fw_dynamic)
// with the PMU test program as payload: the banner must appear and every
// check of the program pass over OpenSBI's PMU extension.
func TestOpenSBIPMUProgram(t *testing.T) {
	for _, fw := range openSBIImages {
		out, res := runOpenSBI(t, fw, true)
		if !strings.Contains(out, "OpenSBI v") {
			t.Errorf("%s: no OpenSBI banner\n%s", fw, out)
		}
		if res.ExitCode != 0 || !strings.Contains(out, "PMU TEST PASSED") {
			t.Errorf("%s: exit code %d\n%s", fw, res.ExitCode, out)
		}
	}
}
