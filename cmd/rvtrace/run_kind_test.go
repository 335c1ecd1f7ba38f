package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// rvtrace run tells a static Linux program from a bare-metal one without
// --linux, and --linux=false still forces bare metal.
func TestRunDetectsLinux(t *testing.T) {
	cc, err := exec.LookPath("riscv64-linux-gnu-gcc")
	if err != nil {
		t.Skip("riscv64-linux-gnu-gcc not installed (Debian: gcc-riscv64-linux-gnu, libc6-dev-riscv64-cross)")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "hello.c")
	prog := filepath.Join(dir, "hello")
	os.WriteFile(src, []byte("#include <stdio.h>\nint main(int c, char **v){printf(\"%s %d\\n\", v[1], c);return 7;}\n"), 0o644)
	if b, err := exec.Command(cc, "-static", "-O2", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, b)
	}
	code, out, errs := rv(t, "run", prog, "arg1")
	if code != 7 || out != "arg1 2\n" {
		t.Errorf("run static Linux program: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if !strings.Contains(errs, "Linux user-mode program (GNU ABI-tag note") {
		t.Errorf("no note saying the program was taken for Linux: %q", errs)
	}
	// Forced Linux says nothing about detection and runs the same.
	code, out, errs = rv(t, "run", "--linux", prog, "arg1")
	if code != 7 || out != "arg1 2\n" || strings.Contains(errs, "user-mode program (") {
		t.Errorf("--linux: exit %d, %q, %q", code, out, errs)
	}
	// Forced bare metal: glibc's start code faults without a Linux
	// environment, so the run fails instead of printing.
	code, out, _ = rv(t, "run", "--linux=false", prog, "arg1")
	if code == 7 || out != "" {
		t.Errorf("--linux=false ran it as Linux: exit %d, %q", code, out)
	}
	// A bare-metal program (tohost) runs bare-metal without a note.
	code, out, errs = rv(t, "run", "../../examples/demo/demo.elf")
	if code != 0 || !strings.HasPrefix(out, "demo: sorted=1") || strings.Contains(errs, "Linux") {
		t.Errorf("bare-metal demo: exit %d, %q, %q", code, out, errs)
	}
}
