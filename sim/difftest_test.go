package sim

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/rvgen"
)

// Differential testing against qemu user mode (package rvgen generates
// the programs; examples/difftest/gen runs long campaigns by hand).

const difftestDir = "../examples/difftest"

// runDump runs a generated program on the simulator and compares its
// output with qemu's; it returns "" when they are equal.
func runDump(t *testing.T, path string, xlen int, want []byte) string {
	t.Helper()
	var out bytes.Buffer
	res, err := RunLinuxELF(path, []string{path}, []string{}, Config{Stdout: &out, Stderr: &out, MaxInstret: 50e6})
	got := out.Bytes()
	if err == nil && res.ExitCode == 0 && bytes.Equal(got, want) {
		return ""
	}
	var sb strings.Builder
	if err != nil {
		fmt.Fprintf(&sb, "simulator: %v\n", err)
	} else if res.ExitCode != 0 {
		fmt.Fprintf(&sb, "exit code %d\n", res.ExitCode)
	}
	gs, _ := rvgen.ParseDump(got, xlen)
	ws, werr := rvgen.ParseDump(want, xlen)
	if werr != nil {
		fmt.Fprintf(&sb, "qemu output: %v\n", werr)
	}
	for i := range ws {
		if i >= len(gs) {
			fmt.Fprintf(&sb, "case %d: no output from the simulator\n", i)
			break
		}
		if d := rvgen.Diff(gs[i], ws[i]); d != "" {
			fmt.Fprintf(&sb, "case %d (the %d-th of the program) differs:\n%s", i, i, d)
			break
		}
	}
	if len(gs) != len(ws) {
		fmt.Fprintf(&sb, "%d cases from the simulator, %d from qemu\n", len(gs), len(ws))
	}
	return sb.String()
}

// TestDifftestRecorded runs the pre-built random programs of
// examples/difftest and compares their register and memory dumps with the
// recorded output of qemu-riscv64 / qemu-riscv32 (no tools needed).
func TestDifftestRecorded(t *testing.T) {
	elfs, _ := filepath.Glob(filepath.Join(difftestDir, "*.elf"))
	if len(elfs) == 0 {
		t.Fatalf("no ELF files in %s", difftestDir)
	}
	for _, path := range elfs {
		name := strings.TrimSuffix(filepath.Base(path), ".elf")
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(strings.TrimSuffix(path, ".elf") + ".qemu")
			if err != nil {
				t.Fatal(err)
			}
			f, err := elf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			xlen := 64
			if f.Class == elf.ELFCLASS32 {
				xlen = 32
			}
			f.Close()
			if msg := runDump(t, path, xlen, want); msg != "" {
				t.Errorf("%s: output differs from qemu's:\n%s", path, msg)
			}
		})
	}
}

// difftestPrograms is how many random programs of 10 cases each
// TestDifftestQEMU builds per XLEN: RVTRACE_DIFFTEST=N sets it; 20 by
// default (200 cases of 200 instructions), 3 with -short.
func difftestPrograms(t *testing.T) int {
	if s := os.Getenv("RVTRACE_DIFFTEST"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("RVTRACE_DIFFTEST=%q", s)
		}
		return n
	}
	if testing.Short() {
		return 3
	}
	return 20
}

// TestDifftestQEMU generates random programs (integer, M, A with LR/SC,
// F/D in every rounding mode, Zba/Zbb/Zbs, compressed forms, branches),
// builds them with riscv64-linux-gnu-gcc and requires the simulator's
// register and memory dumps to equal qemu's byte for byte, on RV64
// (qemu-riscv64) and RV32 (qemu-riscv32). Seeds change with
// RVTRACE_DIFFTEST_SEED (default 1).
func TestDifftestQEMU(t *testing.T) {
	seed := uint64(1)
	if s := os.Getenv("RVTRACE_DIFFTEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			t.Fatalf("RVTRACE_DIFFTEST_SEED=%q", s)
		}
		seed = v
	}
	n := difftestPrograms(t)
	for _, xlen := range []int{64, 32} {
		t.Run(fmt.Sprintf("RV%d", xlen), func(t *testing.T) {
			cc, qemu, err := rvgen.Tools(xlen)
			if err != nil {
				t.Skipf("differential test against qemu skipped: %v", err)
			}
			dir := t.TempDir()
			fails := 0
			for s := seed; s < seed+uint64(n); s++ {
				cfg := rvgen.Config{XLEN: xlen, Seed: s, Cases: 10, Insts: 200}
				src := filepath.Join(dir, fmt.Sprintf("p%d.S", s))
				prog := strings.TrimSuffix(src, ".S")
				if err := rvgen.WriteFile(src, cfg); err != nil {
					t.Fatal(err)
				}
				if err := rvgen.Build(cc, src, prog, xlen); err != nil {
					t.Fatal(err)
				}
				want, code, err := rvgen.QEMU(qemu, prog)
				if err != nil {
					t.Fatal(err)
				}
				if code != 0 {
					t.Fatalf("seed %d: qemu exit code %d (a generator bug)", s, code)
				}
				if msg := runDump(t, prog, xlen, want); msg != "" {
					t.Errorf("RV%d seed %d differs from qemu (reproduce and shorten with: go run ./examples/difftest/gen -xlen %d -seed %d -minimize):\n%s",
						xlen, s, xlen, s, msg)
					if fails++; fails >= 3 {
						t.Fatal("too many failures")
					}
				}
			}
			t.Logf("RV%d: %d programs × 10 cases × 200 random instructions agree with %s", xlen, n, filepath.Base(qemu))
		})
	}
}

// runWords runs instructions in Linux user mode (the entry point of a
// recorded difftest program, overwritten) up to their exit system call
// and returns the hart.
func runWords(t *testing.T, words ...uint32) *Hart {
	t.Helper()
	m, err := New(Config{MaxInstret: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadLinuxELF(filepath.Join(difftestDir, "rv64-seed1.elf"), nil, []string{}); err != nil {
		t.Fatal(err)
	}
	var b []byte
	for _, w := range words {
		b = append(b, byte(w), byte(w>>8), byte(w>>16), byte(w>>24))
	}
	m.WriteMem(m.Entry(), b)
	if _, err := m.Run(); err != nil {
		t.Fatal(err)
	}
	return m.Hart(0)
}

// TestCtzwUpperBits: ctzw ignores the upper word and returns 32 for a
// zero low word (Zbb: "If the least-significant word is 0, the output is
// 32"), where qemu 7.2 counts in all 64 bits (examples/difftest/README.md).
func TestCtzwUpperBits(t *testing.T) {
	h := runWords(t,
		0x00100513, // li a0,1
		0x03f51513, // slli a0,a0,63
		0x6015159b, // ctzw a1,a0
		0x00100613, // li a2,1
		0x02061613, // slli a2,a2,32
		0x6016169b, // ctzw a3,a2
		0x6010171b, // ctzw a4,zero
		0xfff00793, // li a5,-1
		0x02079793, // slli a5,a5,32
		0x6017981b, // ctzw a6,a5
		0x05d00893, // li a7,93
		0x00000513, // li a0,0
		0x00000073, // ecall
	)
	for _, r := range []int{11, 13, 14, 16} {
		if v := h.Reg(r); v != 32 {
			t.Errorf("x%d = %d, want 32", r, v)
		}
	}
}

// TestFcvtWUSaturation: on RV64 the 32-bit results of fcvt.w[u], the
// saturated ones included, are sign-extended (the F chapter: for
// XLEN>32, FCVT.W[U].S sign-extends the 32-bit result to the destination
// register): fcvt.wu.s of +inf is 2^32-1 sign-extended, all ones.
// The simulator returned 0xffffffff (found by TestDifftestQEMU).
func TestFcvtWUSaturation(t *testing.T) {
	h := runWords(t,
		0x7f800537, // lui a0,0x7f800 (+inf)
		0xf0050553, // fmv.w.x fa0,a0
		0xc01515d3, // fcvt.wu.s a1,fa0,rtz
		0xc0051653, // fcvt.w.s a2,fa0,rtz
		0x05d00893, // li a7,93
		0x00000513, // li a0,0
		0x00000073, // ecall
	)
	if v := h.Reg(11); v != ^uint64(0) {
		t.Errorf("fcvt.wu.s of +inf = %#x, want all ones", v)
	}
	if v := h.Reg(12); v != 0x7fffffff {
		t.Errorf("fcvt.w.s of +inf = %#x, want 0x7fffffff", v)
	}
}
