package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loopELF is an endless bare-metal loop with a branch taken one time in
// eight, so that its trace has messages all along:
//
//	loop: addi a0,a0,1; andi a1,a0,7; beqz a1,1f; addi a2,a2,1; 1: j loop
func loopELF(t *testing.T) string {
	return tinyELF(t, 64, 0x80000000, []uint32{0x00150513, 0x00757593, 0x00058463, 0x00160613, 0xff1ff06f}, false)
}

// TestHelperProcess is not a test: it runs the command line given in
// RVTRACE_HELPER_ARGS when the tests start their own binary as a
// subprocess (to send it signals).
func TestHelperProcess(t *testing.T) {
	args := os.Getenv("RVTRACE_HELPER_ARGS")
	if args == "" {
		t.Skip("helper process only")
	}
	os.Exit(mainWith(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
}

// helper returns a command running rvtrace with args in a subprocess.
func helper(t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "RVTRACE_HELPER_ARGS="+strings.Join(args, "\x1f"))
	return cmd
}

var runSummary = regexp.MustCompile(`rvtrace run: (\d+) instructions`)
var decodeSummary = regexp.MustCompile(`: (\d+) instructions(?: in \d+ ranges, \d+ traps, \d+ syncs)?, (\d+) gaps`)

// decodedCount decodes trace with prog and returns the instruction count,
// failing on any gap.
func decodedCount(t *testing.T, proto, prog, trace string) uint64 {
	t.Helper()
	code, _, e := rv(t, "decode", "--protocol", proto, "--image", prog, trace)
	m := decodeSummary.FindStringSubmatch(e)
	if code != 0 || m == nil || m[2] != "0" {
		t.Fatalf("decode %s: exit %d: %s", trace, code, e)
	}
	n, _ := strconv.ParseUint(m[1], 10, 64)
	return n
}

// TestRunStoppedBySignal: SIGINT or SIGTERM during `rvtrace run --trace`
// leaves a trace that decodes without a gap to exactly the instructions
// the run reports, and the exit code is 128+signal.
func TestRunStoppedBySignal(t *testing.T) {
	prog := loopELF(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		for _, proto := range []string{"ntrace", "etrace"} {
			t.Run(fmt.Sprintf("%v/%s", sig, proto), func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "f.bin")
				pcs := filepath.Join(t.TempDir(), "f.pcs")
				cmd := helper(t, "run", "--trace", proto, "-o", out, "--pcs", pcs, prog)
				var errb bytes.Buffer
				cmd.Stderr = &errb
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				// Signal once the run is under way (the PC list, written
				// from inside the run, has data), then a little later.
				for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
					if st, err := os.Stat(pcs); err == nil && st.Size() > 0 {
						break
					}
					if time.Since(start) > time.Minute {
						cmd.Process.Kill()
						t.Fatalf("the run did not start; stderr:\n%s", errb.String())
					}
				}
				time.Sleep(200 * time.Millisecond)
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				err := cmd.Wait()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 128+int(sig) {
					t.Fatalf("exit: %v, want %d; stderr:\n%s", err, 128+int(sig), errb.String())
				}
				if !strings.Contains(errb.String(), "stopped by") {
					t.Errorf("stderr does not say why the run stopped:\n%s", errb.String())
				}
				m := runSummary.FindStringSubmatch(errb.String())
				if m == nil {
					t.Fatalf("no summary:\n%s", errb.String())
				}
				ran, _ := strconv.ParseUint(m[1], 10, 64)
				if ran < 10000 {
					t.Fatalf("only %d instructions before the signal", ran)
				}
				if got := decodedCount(t, proto, prog, out); got != ran {
					t.Errorf("decoded %d instructions, the run retired %d", got, ran)
				}
				data, _ := os.ReadFile(pcs)
				if lines := uint64(bytes.Count(data, []byte("\n"))); lines != ran {
					t.Errorf("--pcs has %d lines, the run retired %d", lines, ran)
				}
			})
		}
	}
}

// TestRunMaxInstretTrace: --max-instret N stops after exactly N
// instructions with a complete trace of them.
func TestRunMaxInstretTrace(t *testing.T) {
	prog := loopELF(t)
	for _, proto := range []string{"ntrace", "etrace"} {
		for _, n := range []uint64{1, 7, 1000, 123457} {
			out := filepath.Join(t.TempDir(), "f.bin")
			code, _, e := rv(t, "run", "--max-instret", strconv.FormatUint(n, 10), "--trace", proto, "-o", out, prog)
			if code != 1 || !strings.Contains(e, "instruction limit") {
				t.Fatalf("%s %d: exit %d: %s", proto, n, code, e)
			}
			if got := decodedCount(t, proto, prog, out); got != n {
				t.Errorf("%s --max-instret %d: decoded %d instructions", proto, n, got)
			}
		}
	}
}

// TestOutputIsInput: an output that names an input of the command (the
// same file through another path, or a hard link) is refused before the
// input is touched, in every command.
func TestOutputIsInput(t *testing.T) {
	dir := t.TempDir()
	prog := loopELF(t)
	pcs := filepath.Join(dir, "prog.pcs")
	if code, _, e := rv(t, "run", "--max-instret", "100", "--pcs", pcs, prog); code != 1 {
		t.Fatalf("run: %d %s", code, e)
	}
	nex := filepath.Join(dir, "prog.nex")
	if code, _, e := rv(t, "encode", "--image", prog, "--pcs-in", pcs, "-o", nex); code != 0 {
		t.Fatalf("encode: %s", e)
	}
	link := filepath.Join(dir, "link.nex")
	if err := os.Link(nex, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "sub", "..", "prog.pcs")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, f := range []string{prog, pcs, nex} {
		before[f], _ = os.ReadFile(f)
	}
	for _, args := range [][]string{
		{"encode", "--image", prog, "--pcs-in", pcs, "-o", other},
		{"encode", "--image", prog, "--pcs-in", pcs, "-o", prog},
		{"decode", "--image", prog, nex, "--pcs", link},
		{"decode", "--image", prog, nex, "--flow", nex},
		{"dump", nex, "-o", link},
		{"convert", "--image", prog, "--pcs-in", pcs, "--to-pcs", pcs},
		{"convert", "--image", prog, "--pcs-in", pcs, "--to-ingress", prog},
		{"run", "--max-instret", "10", "--pcs", prog, prog},
		{"run", "--max-instret", "10", "--trace", "ntrace", "-o", prog, prog},
		{"profile", "--image", prog, nex, "-o", nex},
		{"profile", "--image", prog, nex, "--folded", link},
		{"report", "--image", prog, "--pcs-in", pcs, "-o", pcs},
		{"tarmac", "--image", prog, "--pcs-in", pcs, "--write", pcs},
	} {
		code, _, e := rv(t, args...)
		if code == 0 || !strings.Contains(e, "input") {
			t.Errorf("%v: exit %d: %q", args, code, e)
		}
	}
	for f, want := range before {
		if got, _ := os.ReadFile(f); !bytes.Equal(got, want) {
			t.Errorf("%s was changed", f)
		}
	}
	// Devices are not files whose content an output destroys.
	if code, _, e := rv(t, "decode", "--image", prog, nex, "--pcs", "/dev/null", "--flow", "/dev/null"); code != 0 {
		t.Errorf("two outputs on /dev/null: exit %d: %q", code, e)
	}
	// Two outputs on one file are refused too.
	if code, _, e := rv(t, "decode", "--image", prog, nex, "--pcs", pcs+"2", "--flow", pcs+"2"); code == 0 || !strings.Contains(e, "twice") {
		t.Errorf("two outputs on one file: exit %d: %q", code, e)
	}
}

// TestOutputWriteErrors: a full disk (/dev/full) on standard output or on
// an output file is an error naming the output, with a non-zero exit.
func TestOutputWriteErrors(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	prog := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	// The console of the guest on a full standard output (a subprocess,
	// so that standard output really is /dev/full).
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	cmd := helper(t, "run", prog)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = full, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(errb.String(), "writing standard output") ||
		!strings.Contains(errb.String(), "no space left") {
		t.Errorf("run > /dev/full: %v: %s", err, errb.String())
	}
	dir := t.TempDir()
	nex := filepath.Join(dir, "demo.nex")
	if code, _, e := rv(t, "run", "--trace", "ntrace", "-o", nex, prog); code != 0 {
		t.Fatalf("run: %s", e)
	}
	for _, args := range [][]string{
		{"run", "--trace", "ntrace", "-o", "/dev/full", prog},
		{"run", "--pcs", "/dev/full", prog},
		{"decode", "--image", prog, nex, "--pcs", "/dev/full"},
		{"decode", "--image", prog, nex, "--folded", "/dev/full"},
		{"dump", nex, "-o", "/dev/full"},
		{"profile", "--image", prog, nex, "-o", "/dev/full"},
	} {
		code, _, e := rv(t, args...)
		if code == 0 || !strings.Contains(e, "/dev/full") || !strings.Contains(e, "no space left") {
			t.Errorf("%v: exit %d: %q", args, code, e)
		}
	}
}

// TestRunRAMLimit: --ram beyond the guest RAM limit is a clear error
// naming the flag and the size, not an out-of-memory crash.
func TestRunRAMLimit(t *testing.T) {
	prog := loopELF(t)
	code, _, e := rv(t, "run", "--ram", "30G", prog)
	if code != 1 || !strings.Contains(e, "--ram") || !strings.Contains(e, "30 GiB") || !strings.Contains(e, "--max-ram") {
		t.Errorf("exit %d: %q", code, e)
	}
	code, _, e = rv(t, "run", "--linux", "--ram", "30G", prog)
	if code != 1 || !strings.Contains(e, "--ram") || !strings.Contains(e, "30 GiB") {
		t.Errorf("Linux: exit %d: %q", code, e)
	}
}

// TestRunMaxInstretExit: a program that ends within the limit, even on
// its very last instruction, exits normally.
func TestRunMaxInstretExit(t *testing.T) {
	prog := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	code, _, e := rv(t, "run", prog)
	m := runSummary.FindStringSubmatch(e)
	if code != 0 || m == nil {
		t.Fatalf("exit %d: %s", code, e)
	}
	n, _ := strconv.ParseUint(m[1], 10, 64)
	if code, _, e := rv(t, "run", "--max-instret", strconv.FormatUint(n, 10), prog); code != 0 {
		t.Errorf("--max-instret %d (the program's length): exit %d: %s", n, code, e)
	}
	if code, _, e := rv(t, "run", "--max-instret", strconv.FormatUint(n/2, 10), prog); code != 1 || !strings.Contains(e, "instruction limit") {
		t.Errorf("--max-instret %d: exit %d: %s", n/2, code, e)
	}
}
