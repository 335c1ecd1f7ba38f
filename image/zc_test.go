package image

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rvtrace/rvtrace/riscv"
)

// TestZcExtensions: a program whose Tag_RISCV_arch names Zcmp and Zcmt
// is decoded with them on RV64 too (where riscv.DefaultExt has Zcd), and
// an rv32gc program with Zcd on RV32 (where riscv.DefaultExt has Zcmp and
// Zcmt): the encodings the two share mean what the program was built for.
// The rv32gc program without its .riscv.attributes section is decoded
// with Zcd too, as the simulator runs a program that names neither
// (sim.Machine.setArch).
func TestZcExtensions(t *testing.T) {
	s := NewSet()
	if err := s.AddELF("../examples/sim-tests/zcmp/zcmp64.elf"); err != nil {
		t.Fatal(err)
	}
	if ext := s.Ext(); ext&riscv.ExtZcmp == 0 || ext&riscv.ExtZcmt == 0 || ext&riscv.ExtZcd != 0 {
		t.Errorf("zcmp64.elf: extensions %v", ext)
	}
	for name, op := range map[string]string{"push_fault": "cm.push", "pop_fault": "cm.pop", "jt_fault": "cm.jt"} {
		a, ok := s.Lookup(name)
		if !ok {
			t.Fatalf("no symbol %s", name)
		}
		if in, ok := s.Inst(a); !ok || in.Op.String() != op {
			t.Errorf("%s: %v, want %s", name, in.Op, op)
		}
	}

	cc, err := exec.LookPath("riscv64-linux-gnu-gcc")
	if err != nil {
		t.Skip("riscv64-linux-gnu-gcc not installed: no rv32gc program")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "fsdsp.S")
	if err := os.WriteFile(src, []byte(".globl _start\n_start:\n\tc.fsdsp fs0, 8(sp)\n\tc.fldsp fs0, 8(sp)\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "fsdsp.elf")
	if out, err := exec.Command(cc, "-march=rv32gc", "-mabi=ilp32d", "-nostdlib", "-static", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	s = NewSet()
	if err := s.AddELF(prog); err != nil {
		t.Fatal(err)
	}
	start, _ := s.Lookup("_start")
	for i, want := range []string{"c.fsdsp", "c.fldsp"} {
		if in, ok := s.Inst(start + uint64(2*i)); !ok || in.Op.String() != want {
			t.Errorf("rv32gc: %v, want %s", in.Op, want)
		}
	}

	objcopy, err := exec.LookPath("riscv64-linux-gnu-objcopy")
	if err != nil {
		t.Skip("riscv64-linux-gnu-objcopy not installed: no program without attributes")
	}
	bare := filepath.Join(dir, "fsdsp-noattr.elf")
	if out, err := exec.Command(objcopy, "--remove-section=.riscv.attributes", prog, bare).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	s = NewSet()
	if err := s.AddELF(bare); err != nil {
		t.Fatal(err)
	}
	if ext := s.Ext(); ext&riscv.ExtZcd == 0 || ext&(riscv.ExtZcmp|riscv.ExtZcmt) != 0 {
		t.Errorf("rv32gc without attributes: extensions %v", ext)
	}
	for i, want := range []string{"c.fsdsp", "c.fldsp"} {
		if in, ok := s.Inst(start + uint64(2*i)); !ok || in.Op.String() != want {
			t.Errorf("rv32gc without attributes: %v, want %s", in.Op, want)
		}
	}
}
