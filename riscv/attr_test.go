package riscv

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestELFArch reads Tag_RISCV_arch from ELF files of the repository and
// compares it with what llvm-readelf -A prints for them (when installed)
// and with the ISA the file was built for.
func TestELFArch(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"../examples/sim-tests/zcmp/zcmp32.elf", "rv32i2p1_m2p0_zicsr2p0_zmmul1p0_zca1p0_zcmp1p0_zcmt1p0"},
		{"../examples/sim-tests/zcmp/zcmp64.elf", "rv64i2p1_m2p0_zicsr2p0_zmmul1p0_zca1p0_zcmp1p0_zcmt1p0"},
		{"../examples/sim-tests/memcpy.elf", "rv64i2p1_m2p0_a2p1_f2p2_d2p2_c2p0_zicsr2p0_zifencei2p0_zmmul1p0"},
	} {
		f, err := elf.Open(c.path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ELFArch(f)
		f.Close()
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", filepath.Base(c.path), got, err, c.want)
		}
		if readelf, err := exec.LookPath("llvm-readelf-19"); err == nil {
			out, err := exec.Command(readelf, "-A", c.path).Output()
			if err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`TagName: arch\s+Value: (\S+)`).FindSubmatch(out)
			if m == nil || string(m[1]) != got {
				t.Errorf("%s: llvm-readelf -A says %q, ELFArch %q", filepath.Base(c.path), m, got)
			}
		}
	}
	f, err := elf.Open("../examples/sim-tests/vm/sv39.elf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, err := ELFArch(f); err != nil || !strings.HasPrefix(got, "rv64i") {
		t.Errorf("sv39.elf: %q, %v", got, err)
	}
}

// attrSection builds a .riscv.attributes section: a "riscv" subsection
// with a Tag_File sub-subsection holding attrs (tag/value bytes), after a
// subsection of another vendor.
func attrSection(attrs []byte) []byte {
	var b bytes.Buffer
	b.WriteByte('A')
	other := append([]byte{0, 0, 0, 0}, "gnu\x00\x01\x02"...)
	binary.LittleEndian.PutUint32(other, uint32(len(other)))
	b.Write(other)
	sub := []byte{1, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(sub[1:], uint32(5+len(attrs)))
	sub = append(sub, attrs...)
	head := append([]byte{0, 0, 0, 0}, "riscv\x00"...)
	binary.LittleEndian.PutUint32(head, uint32(len(head)+len(sub)))
	b.Write(head)
	b.Write(sub)
	return b.Bytes()
}

// TestArchAttribute: tags with even numbers have ULEB128 values (skipped,
// multi-byte ones too), odd ones strings; other vendors' subsections are
// skipped; malformed sections are errors naming the byte.
func TestArchAttribute(t *testing.T) {
	attrs := []byte{4, 0x90, 0x01} // Tag_RISCV_stack_align = 144 (two-byte ULEB128)
	attrs = append(attrs, 67)      // an odd tag: a string
	attrs = append(attrs, "x\x00"...)
	attrs = append(attrs, 5)
	attrs = append(attrs, "rv32imac_zcmp\x00"...)
	sec := attrSection(attrs)
	if got, err := archAttribute(sec, binary.LittleEndian); err != nil || got != "rv32imac_zcmp" {
		t.Errorf("%q, %v", got, err)
	}
	if got, err := archAttribute(attrSection([]byte{6, 1}), binary.LittleEndian); err != nil || got != "" {
		t.Errorf("no arch: %q, %v", got, err)
	}
	for _, c := range []struct {
		data []byte
		want string
	}{
		{[]byte{'B'}, "byte 0: "},
		{sec[:3], "byte 1: truncated subsection length"},
		{sec[:len(sec)-1], "byte 11: subsection length"},
		{attrSection([]byte{5, 'r', 'v'}), "without its NUL"},
		{attrSection([]byte{4, 0x80}), "truncated value of attribute 4"},
	} {
		if _, err := archAttribute(c.data, binary.LittleEndian); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("% x: %v, want an error with %q", c.data, err, c.want)
		}
	}
}
