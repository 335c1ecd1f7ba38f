package main

import (
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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

// The --pmu table of a Linux user-mode run agrees with --pmu-json count
// for count, and the TLB events (no address translation in Linux user
// mode) read <not supported> in both instead of 0; a bare-metal run
// counts them.
func TestRunPMUTableNotSupported(t *testing.T) {
	cc, err := exec.LookPath("riscv64-linux-gnu-gcc")
	if err != nil {
		t.Skip("riscv64-linux-gnu-gcc not installed")
	}
	dir := t.TempDir()
	src, prog := filepath.Join(dir, "p.c"), filepath.Join(dir, "p")
	os.WriteFile(src, []byte("int main(void){volatile int s=0;for(int i=0;i<1000;i++)s+=i;return 0;}\n"), 0o644)
	if b, err := exec.Command(cc, "-static", "-O2", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	for _, c := range []struct {
		prog  string
		tlbOK bool
	}{{prog, false}, {"../../examples/demo/demo.elf", true}} {
		js := filepath.Join(dir, "counts.json")
		code, _, table := rv(t, "run", "-q", "--pmu", "--pmu-json", js, c.prog)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.prog, code, table)
		}
		data, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Harts []struct {
				Events       map[string]uint64 `json:"events"`
				NotSupported []string          `json:"not_supported"`
			} `json:"harts"`
		}
		if err := json.Unmarshal(data, &rep); err != nil || len(rep.Harts) != 1 {
			t.Fatalf("%s: %v %s", c.prog, err, data)
		}
		rows := 0
		for _, l := range strings.Split(table, "\n") {
			f := strings.Fields(l)
			if len(f) < 2 || strings.HasPrefix(l, " Performance") || strings.Contains(l, "seconds") {
				continue
			}
			rows++
			if f[0] == "<not" {
				name := f[2]
				if _, ok := rep.Harts[0].Events[name]; ok || !slices.Contains(rep.Harts[0].NotSupported, name) {
					t.Errorf("%s: %s <not supported> in the table but not in the JSON", c.prog, name)
				}
				if c.tlbOK || !strings.Contains(name, "TLB") {
					t.Errorf("%s: %s not supported", c.prog, name)
				}
				continue
			}
			n, err := strconv.ParseUint(strings.ReplaceAll(f[0], ",", ""), 10, 64)
			if err != nil {
				t.Errorf("%s: row %q", c.prog, l)
				continue
			}
			if want, ok := rep.Harts[0].Events[f[1]]; !ok || want != n {
				t.Errorf("%s: %s = %d in the table, %d (%v) in the JSON", c.prog, f[1], n, want, ok)
			}
			if !c.tlbOK && strings.Contains(f[1], "TLB") {
				t.Errorf("%s: %s counted as %d in Linux user mode", c.prog, f[1], n)
			}
		}
		if rows < 20 {
			t.Errorf("%s: %d rows in\n%s", c.prog, rows, table)
		}
	}
}

// A guest fault names the function it happened in, at the address the
// ELF's symbol table gives.
func TestRunFaultSymbol(t *testing.T) {
	cc, err := exec.LookPath("riscv64-linux-gnu-gcc")
	if err != nil {
		t.Skip("riscv64-linux-gnu-gcc not installed")
	}
	dir := t.TempDir()
	src, prog := filepath.Join(dir, "p.c"), filepath.Join(dir, "p")
	os.WriteFile(src, []byte("__attribute__((noinline)) void boom(int x){if(x)__asm__ volatile(\"nop\\n.word 0\");}\nint main(int c,char**v){boom(c);return 0;}\n"), 0o644)
	if b, err := exec.Command(cc, "-static", "-O2", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := f.Symbols()
	f.Close()
	var boom uint64
	for _, s := range syms {
		if s.Name == "boom" {
			boom = s.Value
		}
	}
	if boom == 0 {
		t.Fatal("no symbol boom")
	}
	code, _, errs := rv(t, "run", "-q", prog)
	if code == 0 {
		t.Fatalf("illegal instruction ran: %s", errs)
	}
	m := regexp.MustCompile(`pc (0x[0-9a-f]+) <boom\+(0x[0-9a-f]+)>: instruction 0000 .*illegal instruction`).FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("no symbolized pc in %q", errs)
	}
	pc, _ := strconv.ParseUint(m[1], 0, 64)
	off, _ := strconv.ParseUint(m[2], 0, 64)
	if pc != boom+off {
		t.Errorf("pc %#x is not boom (%#x) + %#x", pc, boom, off)
	}
}
