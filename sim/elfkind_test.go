package sim

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// crossCompile builds src (C) with riscv64-linux-gnu-gcc and the flags.
func crossCompile(t *testing.T, src string, flags ...string) string {
	t.Helper()
	cc, err := exec.LookPath("riscv64-linux-gnu-gcc")
	if err != nil {
		t.Skip("riscv64-linux-gnu-gcc not installed (Debian: gcc-riscv64-linux-gnu, libc6-dev-riscv64-cross)")
	}
	dir := t.TempDir()
	c := filepath.Join(dir, "p.c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "p")
	if b, err := exec.Command(cc, append(flags, "-o", out, c)...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, b)
	}
	return out
}

func TestClassifyELF(t *testing.T) {
	const hello = "#include <stdio.h>\nint main(void){puts(\"hi\");return 0;}\n"
	// A program without libc, notes or build ID: only its entry point
	// (the Linux link base, 0x10000 region) tells it from bare metal.
	const bare = "void _start(void){for(;;);}\n"
	for _, c := range []struct {
		name string
		path func() string
		want ProgramKind
		why  string
	}{
		{"static glibc", func() string { return crossCompile(t, hello, "-static", "-O2") }, LinuxUser, "NT_GNU_ABI_TAG"},
		{"dynamic glibc", func() string { return crossCompile(t, hello, "-O2") }, LinuxUser, "PT_INTERP"},
		{"nostdlib", func() string {
			return crossCompile(t, bare, "-static", "-nostdlib", "-Wl,--build-id=none")
		}, LinuxUser, "entry"},
		{"bare-metal demo", func() string { return "../examples/demo/demo.elf" }, BareMetal, "tohost"},
		{"S-mode payload", func() string { return "../examples/pmu/pmutest.elf" }, BareMetal, "no Linux marks"},
		{"Linux sim test", func() string { return "../examples/sim-tests/funcptr.elf" }, LinuxUser, "NT_GNU_ABI_TAG"},
	} {
		k, why, err := ClassifyELF(c.path())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if k != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%s: %v (%s), want %v (%s)", c.name, k, why, c.want, c.why)
		}
	}
	if _, _, err := ClassifyELF("elfkind_test.go"); err == nil || !strings.Contains(err.Error(), "bad magic") {
		t.Errorf("not an ELF: %v", err)
	}
}

func TestLinuxABINote(t *testing.T) {
	bo := binary.LittleEndian
	note := func(name string, typ uint32, desc ...uint32) []byte {
		b := bo.AppendUint32(nil, uint32(len(name)))
		b = bo.AppendUint32(b, uint32(4*len(desc)))
		b = bo.AppendUint32(b, typ)
		b = append(b, name...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		for _, d := range desc {
			b = bo.AppendUint32(b, d)
		}
		return b
	}
	buildID := note("GNU\x00", 3, 1, 2, 3, 4, 5)
	linux := note("GNU\x00", ntGNUABITag, 0, 4, 15, 0)
	hurd := note("GNU\x00", ntGNUABITag, 1, 0, 5, 0)
	for _, c := range []struct {
		name string
		data []byte
		want bool
	}{
		{"linux after build id", append(append([]byte{}, buildID...), linux...), true},
		{"hurd", hurd, false},
		{"other owner", note("FDO\x00", ntGNUABITag, 0, 4, 15, 0), false},
		{"truncated", linux[:len(linux)-5], false},
		{"huge sizes", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0}, false},
		{"empty", nil, false},
	} {
		if got := linuxABINote(c.data, bo); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A guest error names the symbols of its addresses when given a
// formatter: the pc, and the tval of a fault whose tval is an address.
func TestGuestErrorSymbols(t *testing.T) {
	sym := func(a uint64) string {
		if a >= 0x1000 && a < 0x1100 {
			return fmt.Sprintf("%#x <boom+%#x>", a, a-0x1000)
		}
		return fmt.Sprintf("%#x", a)
	}
	e := &GuestError{PC: 0x1012, Raw: 0, Size: 4, Cause: causeLoadAccess, TVal: 0x1040,
		Msg: "load access fault (tval 0x1040): SIGSEGV", FormatAddr: sym}
	want := "pc 0x1012 <boom+0x12>: instruction 00000000"
	if got := e.Error(); !strings.Contains(got, want) || !strings.HasSuffix(got, "load access fault (tval 0x1040 <boom+0x40>): SIGSEGV") {
		t.Errorf("got %q", got)
	}
	// an illegal instruction's tval is its bits, not an address
	e.Cause, e.TVal, e.Msg = causeIllegal, 0x1050, "illegal instruction (tval 0x1050): SIGILL"
	if got := e.Error(); !strings.HasSuffix(got, "(tval 0x1050): SIGILL") {
		t.Errorf("got %q", got)
	}
	e.FormatAddr = nil
	if got := e.Error(); !strings.Contains(got, "pc 0x1012: ") {
		t.Errorf("without symbols: %q", got)
	}
}
