package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tinyImage writes a raw RISC-V Linux Image whose code writes 'K' to the
// UART and shuts down through SBI SRST.
func tinyImage(t *testing.T) string {
	t.Helper()
	b := make([]byte, 64)
	le := binary.LittleEndian
	le.PutUint32(b[0:], 0x0400006f)   // j 64
	le.PutUint64(b[8:], 0x200000)     // text_offset
	le.PutUint64(b[16:], 0x10000)     // image_size
	le.PutUint32(b[32:], 2)           // header version 0.2
	copy(b[48:], "RISCV\x00\x00\x00") // magic
	copy(b[56:], "RSC\x05")           // magic2
	for _, w := range []uint32{
		0x100002b7, // lui t0, 0x10000
		0x04b00313, // li t1, 'K'
		0x00628023, // sb t1, 0(t0)
		0x535258b7, // lui a7, 0x53525
		0x35488893, // addi a7, a7, 0x354 (SRST)
		0x00000813, // li a6, 0 (system_reset)
		0x00000513, // li a0, 0 (shutdown)
		0x00000593, // li a1, 0 (no reason)
		0x00000073, // ecall
	} {
		b = le.AppendUint32(b, w)
	}
	p := filepath.Join(t.TempDir(), "Image")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCLIRunKernel boots a tiny Image on the built-in SBI and on OpenSBI
// fw_dynamic and fw_jump: its console output comes through, SBI SRST
// shutdown exits 0, --dtb-out writes the tree and --dtb boots with it.
func TestCLIRunKernel(t *testing.T) {
	img := tinyImage(t)
	dtb := filepath.Join(t.TempDir(), "virt.dtb")
	code, out, errb := rv(t, "run", "--machine", "virt", "--kernel", img, "--append", "console=ttyS0", "--dtb-out", dtb)
	if code != 0 || out != "K" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errb)
	}
	b, err := os.ReadFile(dtb)
	if err != nil || len(b) < 40 || binary.BigEndian.Uint32(b) != 0xd00dfeed || !bytes.Contains(b, []byte("console=ttyS0")) {
		t.Fatalf("--dtb-out wrote no tree with the command line (%v)", err)
	}
	code, out, errb = rv(t, "run", "--machine", "virt", "--kernel", img, "--dtb", dtb)
	if code != 0 || out != "K" {
		t.Fatalf("--dtb: exit %d, stdout %q, stderr %s", code, out, errb)
	}
	// the same code as an ELF (vmlinux-like) at 0x80200000
	elfKernel := tinyELF(t, 64, 0x80200000, []uint32{0x100002b7, 0x04b00313, 0x00628023, 0x535258b7, 0x35488893,
		0x00000813, 0x00000513, 0x00000593, 0x00000073}, false)
	code, out, errb = rv(t, "run", "--machine", "virt", "--kernel", elfKernel)
	if code != 0 || out != "K" {
		t.Fatalf("ELF kernel: exit %d, stdout %q, stderr %s", code, out, errb)
	}
	for _, fw := range []string{"fw_dynamic", "fw_jump"} {
		if _, err := os.Stat(filepath.Join(openSBIDir, fw+".elf")); err != nil {
			t.Logf("OpenSBI absent: %v", err)
			continue
		}
		code, out, errb = rv(t, "run", "--machine", "virt", "--firmware", fw, "--kernel", img)
		if code != 0 || !strings.Contains(out, "OpenSBI v") || !strings.HasSuffix(out, "K") {
			t.Errorf("%s: exit %d, stdout %q, stderr %s", fw, code, out, errb)
		}
	}
}

// TestCLIRunKernelErrors: bad kernel boots fail with a message naming
// the problem.
func TestCLIRunKernelErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk")
	if err := os.WriteFile(junk, bytes.Repeat([]byte{0x55}, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	img := tinyImage(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kernel", img}, "--kernel needs --machine virt"},
		{[]string{"--machine", "virt", "--kernel", filepath.Join(dir, "none")}, "no such file"},
		{[]string{"--machine", "virt", "--kernel", junk}, "neither an ELF nor a RISC-V Linux Image"},
		{[]string{"--machine", "virt", "--kernel", img, "--dtb", junk}, "not a flattened device tree"},
		{[]string{"--machine", "virt", "--kernel", img, "--drive", junk}, "not a non-zero multiple of 512"},
		{[]string{"--machine", "virt", "--kernel", img, "--ram", "32M"}, "outside 64 MiB"},
		{[]string{"--machine", "virt", "--kernel", img, "extra"}, "takes no program arguments"},
	} {
		code, _, errb := rv(t, append([]string{"run"}, tc.args...)...)
		if code == 0 || !strings.Contains(errb, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errb, tc.want)
		}
	}
}
