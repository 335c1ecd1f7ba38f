package sim

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// headerSyscalls returns the system call numbers the cross compiler's
// Linux headers define for xlen (asm/unistd.h preprocessed for riscv64 or
// riscv32): number to name.
func headerSyscalls(t *testing.T, xlen int) map[uint64]string {
	cc, err := exec.LookPath("riscv64-linux-gnu-gcc")
	if err != nil {
		t.Skip("riscv64-linux-gnu-gcc not installed (Debian: gcc-riscv64-linux-gnu, libc6-dev-riscv64-cross)")
	}
	args := []string{"-E", "-dM", "-include", "asm/unistd.h", "-"}
	if xlen == 32 {
		args = append([]string{"-march=rv32imac", "-mabi=ilp32"}, args...)
	}
	cmd := exec.Command(cc, args...)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v", cc, args, err)
	}
	def := regexp.MustCompile(`(?m)^#define (__NR3264|__NR)_(\w+) (\w+|\(__NR_arch_specific_syscall \+ \d+\))$`)
	nr3264 := map[string]uint64{}
	byName := map[string]string{}
	for _, m := range def.FindAllStringSubmatch(string(out), -1) {
		if m[1] == "__NR3264" {
			n, err := strconv.ParseUint(m[3], 10, 64)
			if err != nil {
				t.Fatalf("%q", m[0])
			}
			nr3264[m[2]] = n
			continue
		}
		byName[m[2]] = m[3]
	}
	res := map[uint64]string{}
	for name, v := range byName {
		if name == "syscalls" || name == "arch_specific_syscall" {
			continue // counts and bases, not calls
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if k, ok := archSpecific(out, name); ok {
			n, err = k, nil
		}
		if err != nil {
			k, ok := nr3264[strings.TrimPrefix(v, "__NR3264_")]
			if !ok {
				continue // aliases of other macros
			}
			n = k
		}
		if old, dup := res[n]; dup {
			t.Fatalf("two names for %d: %s, %s", n, old, name)
		}
		res[n] = name
	}
	if len(res) < 250 {
		t.Fatalf("only %d system calls in the headers", len(res))
	}
	return res
}

// archSpecific resolves "#define __NR_name (__NR_arch_specific_syscall + N)".
func archSpecific(out []byte, name string) (uint64, bool) {
	m := regexp.MustCompile(`(?m)^#define __NR_` + name + ` \(__NR_arch_specific_syscall \+ (\d+)\)$`).FindSubmatch(out)
	b := regexp.MustCompile(`(?m)^#define __NR_arch_specific_syscall (\d+)$`).FindSubmatch(out)
	if m == nil || b == nil {
		return 0, false
	}
	k, _ := strconv.ParseUint(string(m[1]), 10, 64)
	base, _ := strconv.ParseUint(string(b[1]), 10, 64)
	return base + k, true
}

// TestSyscallNames checks the system call name tables against the Linux
// headers of the cross compiler, both ways, for riscv64 and riscv32.
func TestSyscallNames(t *testing.T) {
	for _, xlen := range []int{64, 32} {
		hdr := headerSyscalls(t, xlen)
		for n, name := range hdr {
			if got, want := SyscallName(n, xlen), fmt.Sprintf("%s (%d)", name, n); got != want {
				t.Errorf("RV%d: %q, headers: %q", xlen, got, want)
			}
		}
		var top uint64 // the headers may be older than the table
		for n := range hdr {
			top = max(top, n)
		}
		for n := uint64(0); n <= top; n++ {
			if _, ok := hdr[n]; ok || n == 258 { // riscv_hwprobe: Linux 6.4, after some headers
				continue
			}
			if got := SyscallName(n, xlen); !strings.Contains(got, "not a riscv") && !strings.Contains(got, "riscv32 only") &&
				!strings.Contains(got, "no such") {
				t.Errorf("RV%d: %d is no system call in the headers; SyscallName says %q", xlen, n, got)
			}
		}
	}
}

// sysinfoC exercises sysinfo (the fields whose value qemu-riscv64, which
// passes the host's through, and the simulator must agree on, and the
// plausibility of the others), malloc, and two system calls the
// emulation does not implement.
const sysinfoC = `#include <stdio.h>
#include <stdlib.h>
#include <sys/sysinfo.h>
#include <unistd.h>
#include <sys/syscall.h>
int main(void) {
	struct sysinfo si;
	int r = sysinfo(&si);
	printf("sysinfo %d size %d\n", r, (int)sizeof si);
	printf("mem_unit %u totalhigh %lu freehigh %lu\n", si.mem_unit, si.totalhigh, si.freehigh);
	printf("totalram>=64MiB %d 0<freeram<=totalram %d procs>=1 %d uptime>=0 %d swap %d\n",
		si.totalram * si.mem_unit >= 64ul << 20, si.freeram > 0 && si.freeram <= si.totalram,
		si.procs >= 1, si.uptime >= 0, si.freeswap <= si.totalswap);
	char *p = malloc(1 << 20);
	printf("malloc %d\n", p != NULL);
	long e = syscall(SYS_personality, 0xffffffffUL); /* qemu-riscv64 has it, the simulator does not */
	e = syscall(1000);
	e = syscall(1000);
	printf("1000: %ld\n", e);
	return 0;
}
`

// TestLinuxSysinfoAndUnsupported: sysinfo answers what qemu-riscv64
// answers where that is deterministic and plausible values elsewhere; an
// unsupported system call is named once (number and name) on
// Config.Diagnostics.
func TestLinuxSysinfoAndUnsupported(t *testing.T) {
	cc, err := exec.LookPath("riscv64-linux-gnu-gcc")
	if err != nil {
		t.Skip("riscv64-linux-gnu-gcc not installed")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "si.c")
	prog := filepath.Join(dir, "si")
	if err := os.WriteFile(src, []byte(sysinfoC), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-static", "-O2", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	var out, diag bytes.Buffer
	m, err := New(Config{Stdout: &out, Stderr: &out, Diagnostics: &diag, MaxInstret: 10e6})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadLinuxELF(prog, nil, []string{}); err != nil {
		t.Fatal(err)
	}
	res, err := m.Run()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d: %v\n%s", res.ExitCode, err, out.String())
	}
	want := "sysinfo 0 size 112\nmem_unit 1 totalhigh 0 freehigh 0\n" +
		"totalram>=64MiB 1 0<freeram<=totalram 1 procs>=1 1 uptime>=0 1 swap 1\nmalloc 1\n1000: -1\n"
	if out.String() != want {
		t.Errorf("sim output:\n%s\nwant:\n%s", out.String(), want)
	}
	if q, err := exec.LookPath("qemu-riscv64"); err == nil {
		qout, err := exec.Command(q, prog).Output()
		if err != nil {
			t.Fatalf("qemu-riscv64: %v", err)
		}
		if string(qout) != out.String() {
			t.Errorf("qemu-riscv64 output:\n%s\nsim:\n%s", qout, out.String())
		}
	}
	if got := fmt.Sprint(m.UnsupportedSyscalls()); got != "[92 1000]" {
		t.Errorf("unsupported system calls %s, want [92 1000]", got)
	}
	d := diag.String()
	if strings.Count(d, "\n") != 2 || !strings.Contains(d, "personality (92)") || !strings.Contains(d, "1000 (no such riscv64 system call)") ||
		!strings.Contains(d, "ENOSYS") {
		t.Errorf("diagnostics:\n%s", d)
	}
}
