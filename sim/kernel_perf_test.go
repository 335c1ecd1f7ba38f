package sim

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/pmu"
)

// TestKernelPerf boots the kit's full initramfs (busybox and perf) and
// types into its shell: perf stat counts a busybox workload on the
// simulated counters (SBI PMU, with the event model for the branch and
// cache events), perf record samples it (counter overflow
// interrupts, Sscofpmf) and perf report names where the samples fell.
func TestKernelPerf(t *testing.T) {
	if testing.Short() {
		t.Skip("a boot with perf takes minutes")
	}
	dir := linuxKit(t)
	initrd := filepath.Join(dir, "initramfs.cpio.gz")
	if _, err := os.Stat(initrd); err != nil {
		t.Skipf("Linux kit absent (%v): run scripts/linux-kit.sh", err)
	}
	in := "perf stat -e cycles,instructions,branches,branch-misses,L1-dcache-load-misses /bin/busybox md5sum /bin/busybox\n" +
		"perf record -q -o /tmp/perf.data /bin/busybox md5sum /bin/busybox\n" +
		"perf report -q -i /tmp/perf.data --stdio --sort comm,dso | /bin/busybox head -5\n" +
		"echo perf-done\nexit\n"
	var out bytes.Buffer
	m, err := New(Config{MaxInstret: 12_000_000_000, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	err = m.LoadKernel(Kernel{Image: filepath.Join(dir, "Image"), Initrd: initrd,
		Append: "console=ttyS0 rdinit=/init rvtrace.shell=1 quiet"})
	if err != nil {
		t.Fatal(err)
	}
	// the event model counts branches and cache misses (as run --pmu)
	pm, err := pmu.New(pmu.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetEventModel(0, pm); err != nil {
		t.Fatal(err)
	}
	m.SetStdin(strings.NewReader(in))
	res, err := m.Run()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%v, exit code %d\nconsole:\n%s", err, res.ExitCode, tail(out.String()))
	}
	t.Logf("%d instructions", res.Instret)
	con := out.String()
	for _, re := range []string{
		`Performance counter stats for '/bin/busybox md5sum /bin/busybox'`,
		`\s[0-9][0-9,]{6,}\s+instructions`, `\s[0-9][0-9,]{6,}\s+cycles`, `\s[0-9][0-9,]{4,}\s+branches`,
		`\s[0-9][0-9,]*\s+branch-misses`, `\s[0-9][0-9,]*\s+L1-dcache-load-misses`,
		`\d+\.\d+%\s+busybox\s+busybox`, `perf-done`,
	} {
		if !regexp.MustCompile(re).MatchString(con) {
			t.Errorf("console lacks %s", re)
		}
	}
	if t.Failed() {
		t.Logf("console:\n%s", tail(con))
	}
}
