package riscv

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// shtRISCVAttributes is the section type of .riscv.attributes
// (SHT_RISCV_ATTRIBUTES, RISC-V ELF psABI "Attributes").
const shtRISCVAttributes = elf.SectionType(0x70000003)

// tagRISCVArch is Tag_RISCV_arch, the ISA string the file was built for.
const tagRISCVArch = 5

// ELFArch returns the Tag_RISCV_arch attribute of a RISC-V ELF file (such
// as "rv32i2p1_zca1p0_zcmp1p0"), which [ParseArch] reads, or "" when the
// file has no .riscv.attributes section or no such attribute. A malformed
// section is an error naming the byte offset in it.
func ELFArch(f *elf.File) (string, error) {
	for _, s := range f.Sections {
		if s.Type != shtRISCVAttributes && s.Name != ".riscv.attributes" {
			continue
		}
		data, err := s.Data()
		if err != nil {
			return "", fmt.Errorf("riscv: section %s: %w", s.Name, err)
		}
		arch, err := archAttribute(data, f.ByteOrder)
		if err != nil {
			return "", fmt.Errorf("riscv: section %s: %w", s.Name, err)
		}
		return arch, nil
	}
	return "", nil
}

// archAttribute finds Tag_RISCV_arch in the contents of a
// .riscv.attributes section: a format version 'A', then subsections
// (length, vendor name) of which "riscv" holds the file attributes
// (Tag_File, length, tag/value pairs). Odd tags have NUL-terminated
// string values, even tags ULEB128 numbers.
func archAttribute(data []byte, bo binary.ByteOrder) (string, error) {
	if len(data) == 0 {
		return "", nil
	}
	if data[0] != 'A' {
		return "", fmt.Errorf("byte 0: attribute format version %#x, want 'A'", data[0])
	}
	off := 1
	for off < len(data) {
		if len(data)-off < 4 {
			return "", fmt.Errorf("byte %d: truncated subsection length", off)
		}
		n := int(bo.Uint32(data[off:]))
		if n < 4 || n > len(data)-off {
			return "", fmt.Errorf("byte %d: subsection length %d out of range", off, n)
		}
		sub, subOff := data[off+4:off+n], off+4
		off += n
		name, rest, ok := cstring(sub)
		if !ok {
			return "", fmt.Errorf("byte %d: vendor name without its NUL", subOff)
		}
		if name != "riscv" {
			continue
		}
		pos := subOff + len(sub) - len(rest)
		for len(rest) > 0 {
			tag, k := uleb(rest)
			if k == 0 || len(rest)-k < 4 {
				return "", fmt.Errorf("byte %d: truncated sub-subsection", pos)
			}
			m := int(bo.Uint32(rest[k:]))
			if m < k+4 || m > len(rest) {
				return "", fmt.Errorf("byte %d: sub-subsection length %d out of range", pos, m)
			}
			attrs := rest[k+4 : m]
			apos := pos + k + 4
			rest, pos = rest[m:], pos+m
			if tag != 1 { // not Tag_File: sections or symbols
				continue
			}
			for len(attrs) > 0 {
				t, k := uleb(attrs)
				if k == 0 {
					return "", fmt.Errorf("byte %d: truncated attribute tag", apos)
				}
				attrs, apos = attrs[k:], apos+k
				if t%2 == 1 {
					s, r, ok := cstring(attrs)
					if !ok {
						return "", fmt.Errorf("byte %d: string attribute %d without its NUL", apos, t)
					}
					if t == tagRISCVArch {
						return s, nil
					}
					apos += len(attrs) - len(r)
					attrs = r
					continue
				}
				_, k = uleb(attrs)
				if k == 0 {
					return "", fmt.Errorf("byte %d: truncated value of attribute %d", apos, t)
				}
				attrs, apos = attrs[k:], apos+k
			}
		}
	}
	return "", nil
}

// cstring splits a NUL-terminated string off b.
func cstring(b []byte) (string, []byte, bool) {
	for i, c := range b {
		if c == 0 {
			return string(b[:i]), b[i+1:], true
		}
	}
	return "", nil, false
}

// uleb decodes an unsigned LEB128 number at the start of b and returns it
// and its length, or length 0 when it is truncated or longer than 64
// bits.
func uleb(b []byte) (uint64, int) {
	var v uint64
	for i, c := range b {
		if i == 10 {
			return 0, 0
		}
		v |= uint64(c&0x7f) << (7 * uint(i))
		if c&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}
