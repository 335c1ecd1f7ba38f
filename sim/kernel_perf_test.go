package sim

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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

// perfUserLoops is the loop count of perfUserWork.
const perfUserLoops = 5_000_000

// perfUserWork is a user-mode workload whose instruction count is known
// exactly: lui and addiw, perfUserLoops iterations of addi and bnez, two
// li, then the exit system call (an ecall raises an exception: it does not
// retire). It is linked at a fixed address, apart from every other
// process of the guest (busybox and perf are position-independent).
const perfUserWork = `
	.text
	.globl _start
_start:
	lui	t0, %hi(5000000)
	addiw	t0, t0, %lo(5000000)
1:	addi	t0, t0, -1
	bnez	t0, 1b
	li	a0, 0
	.globl	done
done:
	li	a7, 93
	ecall
`

// TestKernelPerfUser checks the guest's perf against the simulator on
// the user-mode instructions of one process: perf stat -e instructions:u
// (a programmable counter configured through the SBI PMU with S- and
// M-mode counting inhibited, virtualised per task by the kernel from the
// exec) counts perfUserWork, and a hook of the simulator counts every
// instruction that retires in U mode while that process's address space
// (satp) is current, from its first instruction to its last. The
// simulator's count is exactly the program's (2 + 2*perfUserLoops + 2),
// and perf's is within 1% of it. One boot of the kit's full initramfs
// (perf needs its libraries), with the workload added as /work.
func TestKernelPerfUser(t *testing.T) {
	if testing.Short() {
		t.Skip("a boot with perf takes minutes")
	}
	dir := linuxKit(t)
	initrd, err := os.ReadFile(filepath.Join(dir, "initramfs.cpio.gz"))
	if err != nil {
		t.Skipf("Linux kit absent (%v): run scripts/linux-kit.sh", err)
	}
	gcc, err := exec.LookPath("riscv64-linux-gnu-gcc")
	if err != nil {
		t.Skip("riscv64-linux-gnu-gcc not installed (Debian: gcc-riscv64-linux-gnu)")
	}
	tmp := t.TempDir()
	src, work := filepath.Join(tmp, "work.S"), filepath.Join(tmp, "work")
	if err := os.WriteFile(src, []byte(perfUserWork), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-march=rv64gc", "-mabi=lp64d", "-nostdlib", "-nostartfiles", "-static", "-no-pie",
		"-o", work, src).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	ef, err := elf.Open(work)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := ef.Symbols()
	ef.Close()
	if err != nil {
		t.Fatal(err)
	}
	var start, done uint64
	for _, s := range syms {
		switch s.Name {
		case "_start":
			start = s.Value
		case "done":
			done = s.Value
		}
	}
	if start == 0 || done == 0 {
		t.Fatalf("work: _start %#x, done %#x", start, done)
	}
	prog, err := os.ReadFile(work)
	if err != nil {
		t.Fatal(err)
	}
	// The kernel unpacks concatenated archives in order: /work is added
	// to the kit's initramfs.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(cpioFile("work", prog))
	zw.Close()
	myInitrd := filepath.Join(tmp, "initramfs.cpio.gz")
	if err := os.WriteFile(myInitrd, append(initrd, gz.Bytes()...), 0o644); err != nil {
		t.Fatal(err)
	}

	in := "perf stat -x, -e instructions:u /work\necho perf-done\nexit\n"
	var out bytes.Buffer
	m, err := New(Config{MaxInstret: 8_000_000_000, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	err = m.LoadKernel(Kernel{Image: filepath.Join(dir, "Image"), Initrd: myInitrd,
		Append: "console=ttyS0 rdinit=/init rvtrace.shell=1 quiet"})
	if err != nil {
		t.Fatal(err)
	}
	// The simulator's count: instructions retired in U mode (user
	// addresses: the lower half) while the workload's satp is current.
	h := m.Hart(0)
	var (
		satp     uint64 // the workload's, from its first instruction
		count    uint64
		running  bool
		finished bool
		starts   int
	)
	if err := m.SetPCHook(0, func(pc uint64) {
		if h.priv != privU || pc>>63 != 0 || finished {
			return
		}
		if pc == start && !running {
			satp, running = h.csr.satp, true
			starts++
		}
		if running && h.csr.satp == satp {
			count++
			if pc == done {
				running, finished = false, true
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	m.SetStdin(strings.NewReader(in))
	res, err := m.Run()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%v, exit code %d\nconsole:\n%s", err, res.ExitCode, tail(out.String()))
	}
	t.Logf("%d instructions", res.Instret)
	con := out.String()
	mt := regexp.MustCompile(`(?m)^(\d+),[^,\n]*,instructions:u`).FindStringSubmatch(con)
	if mt == nil || !strings.Contains(con, "perf-done") {
		t.Fatalf("no perf stat count on the console:\n%s", tail(con))
	}
	perf, _ := strconv.ParseUint(mt[1], 10, 64)
	const want = 2 + 2*perfUserLoops + 2
	t.Logf("workload: perf stat instructions:u %d, simulator %d (program: %d)", perf, count, uint64(want))
	if !finished || starts != 1 || count != want {
		t.Errorf("simulator counted %d user-mode instructions of the workload (finished %v, %d starts), want exactly %d",
			count, finished, starts, want)
	}
	if d := math.Abs(float64(perf)-float64(count)) / float64(count); d > 0.01 {
		t.Errorf("perf stat instructions:u %d, simulator %d: %.2f%% apart (want within 1%%)", perf, count, 100*d)
	}
}

// cpioFile returns a cpio archive (newc, as the kernel's initramfs
// unpacker reads it) holding one executable file.
func cpioFile(name string, data []byte) []byte {
	var b bytes.Buffer
	entry := func(ino int, name string, mode int, data []byte) {
		fmt.Fprintf(&b, "070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
			ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
		b.WriteString(name)
		b.WriteByte(0)
		for b.Len()%4 != 0 {
			b.WriteByte(0)
		}
		b.Write(data)
		for b.Len()%4 != 0 {
			b.WriteByte(0)
		}
	}
	entry(1, name, 0o100755, data)
	entry(2, "TRAILER!!!", 0, nil)
	return b.Bytes()
}
