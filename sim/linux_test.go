package sim

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const simTestsDir = "../examples/sim-tests"

// qemuRun runs a Linux program under qemu-riscv64 with an empty
// environment, stdout on a pipe, and returns its output, exit code and
// retired PCs (from -singlestep -d exec,nochain "Trace" lines).
func qemuRun(t *testing.T, elfPath string) ([]byte, int, []uint64) {
	t.Helper()
	qemu, err := exec.LookPath("qemu-riscv64")
	if err != nil {
		t.Skip("qemu-riscv64 not installed")
	}
	logf := filepath.Join(t.TempDir(), "trace.log")
	cmd := exec.Command(qemu, "-singlestep", "-d", "exec,nochain", "-D", logf, elfPath)
	cmd.Env = []string{}
	var out bytes.Buffer
	cmd.Stdout = &out
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	f, err := os.Open(logf)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var pcs []uint64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "Trace ") {
			continue
		}
		// Trace 0: 0x7f... [0000000000000000/0000000000010570/00207600/00000201] _start
		i := strings.IndexByte(line, '[')
		if i < 0 {
			continue
		}
		parts := strings.Split(line[i+1:], "/")
		if len(parts) < 2 {
			continue
		}
		pc, err := strconv.ParseUint(parts[1], 16, 64)
		if err != nil {
			t.Fatalf("bad trace line %q", line)
		}
		pcs = append(pcs, pc)
	}
	return out.Bytes(), code, pcs
}

// TestLinuxPrograms runs the guest programs of examples/sim-tests in Linux
// user mode: output, exit code and the sequence of retired PCs must equal
// qemu-riscv64's.
func TestLinuxPrograms(t *testing.T) {
	elfs, _ := filepath.Glob(filepath.Join(simTestsDir, "*.elf"))
	if len(elfs) == 0 {
		t.Skipf("no ELF files in %s (scripts/build-sim-tests.sh builds them)", simTestsDir)
	}
	for _, path := range elfs {
		name := strings.TrimSuffix(filepath.Base(path), ".elf")
		t.Run(name, func(t *testing.T) {
			wantOut, wantCode, wantPCs := qemuRun(t, path)
			var out bytes.Buffer
			m, err := New(Config{Stdout: &out, Stderr: &out, MaxInstret: 100e6})
			if err != nil {
				t.Fatal(err)
			}
			if err := m.LoadLinuxELF(path, []string{path}, []string{}); err != nil {
				t.Fatal(err)
			}
			var pcs []uint64
			m.SetPCHook(0, func(pc uint64) { pcs = append(pcs, pc) })
			res, err := m.Run()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), wantOut) {
				t.Errorf("output differs:\n--- sim\n%s\n--- qemu\n%s", out.Bytes(), wantOut)
			}
			if res.ExitCode != wantCode {
				t.Errorf("exit code %d, qemu %d", res.ExitCode, wantCode)
			}
			for i := 0; i < len(pcs) && i < len(wantPCs); i++ {
				if pcs[i] != wantPCs[i] {
					t.Fatalf("PC %d: %#x, qemu %#x (previous %#x)", i, pcs[i], wantPCs[i], pcs[max(i-1, 0)])
				}
			}
			if len(pcs) != len(wantPCs) {
				t.Fatalf("%d PCs, qemu %d", len(pcs), len(wantPCs))
			}
		})
	}
}
