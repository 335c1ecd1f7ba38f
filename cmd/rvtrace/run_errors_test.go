package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tinyELF writes a static executable with one segment at base holding the
// instructions (32-bit words, or 16-bit parcels for values below 0x10000
// when half is set) at base+0x100, the entry point.
func tinyELF(t *testing.T, xlen int, base uint64, insts []uint32, half bool) string {
	t.Helper()
	code := make([]byte, 0x100)
	for _, w := range insts {
		if half && w < 0x10000 {
			code = binary.LittleEndian.AppendUint16(code, uint16(w))
		} else {
			code = binary.LittleEndian.AppendUint32(code, w)
		}
	}
	le := binary.LittleEndian
	entry := base + 0x100
	var hdr []byte
	if xlen == 64 {
		hdr = make([]byte, 64+56)
		copy(hdr, "\x7fELF\x02\x01\x01")
		le.PutUint16(hdr[16:], 2)   // ET_EXEC
		le.PutUint16(hdr[18:], 243) // EM_RISCV
		le.PutUint32(hdr[20:], 1)
		le.PutUint64(hdr[24:], entry)
		le.PutUint64(hdr[32:], 64) // e_phoff
		le.PutUint32(hdr[48:], 5)  // RVC, double-float ABI
		le.PutUint16(hdr[52:], 64)
		le.PutUint16(hdr[54:], 56)
		le.PutUint16(hdr[56:], 1)
		le.PutUint16(hdr[58:], 64)
		ph := hdr[64:]
		le.PutUint32(ph[0:], 1) // PT_LOAD
		le.PutUint32(ph[4:], 7) // RWX
		le.PutUint64(ph[16:], base)
		le.PutUint64(ph[24:], base)
		le.PutUint64(ph[32:], uint64(len(code)))
		le.PutUint64(ph[40:], uint64(len(code)))
		le.PutUint64(ph[48:], 0x1000)
	} else {
		hdr = make([]byte, 52+32)
		copy(hdr, "\x7fELF\x01\x01\x01")
		le.PutUint16(hdr[16:], 2)
		le.PutUint16(hdr[18:], 243)
		le.PutUint32(hdr[20:], 1)
		le.PutUint32(hdr[24:], uint32(entry))
		le.PutUint32(hdr[28:], 52)
		le.PutUint32(hdr[36:], 5)
		le.PutUint16(hdr[40:], 52)
		le.PutUint16(hdr[42:], 32)
		le.PutUint16(hdr[44:], 1)
		le.PutUint16(hdr[46:], 40)
		ph := hdr[52:]
		le.PutUint32(ph[0:], 1)
		le.PutUint32(ph[8:], uint32(base))
		le.PutUint32(ph[12:], uint32(base))
		le.PutUint32(ph[16:], uint32(len(code)))
		le.PutUint32(ph[20:], uint32(len(code)))
		le.PutUint32(ph[24:], 7)
		le.PutUint32(ph[28:], 0x1000)
	}
	copy(code, hdr)
	path := filepath.Join(t.TempDir(), "prog.elf")
	if err := os.WriteFile(path, code, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunBadPrograms: guests that fault, loop or execute an unsupported
// instruction end `rvtrace run` with a non-zero exit code and a message
// naming the PC, the instruction bits and their disassembly.
func TestRunBadPrograms(t *testing.T) {
	const bare, lnx = 0x80000000, 0x10000
	for _, tc := range []struct {
		name  string
		xlen  int
		linux bool
		insts []uint32
		half  bool
		args  []string
		want  []string
	}{
		{"unsupported instruction", 64, false, []uint32{0x0000000b}, false, nil,
			[]string{"pc 0x80000100", "instruction 0000000b (.insn 0x0000000b)", "illegal instruction (tval 0xb)"}},
		{"unsupported instruction, Linux", 64, true, []uint32{0x00000013, 0x0000000b}, false, nil,
			[]string{"pc 0x10104", "instruction 0000000b (.insn 0x0000000b)", "illegal instruction", "SIGILL"}},
		{"vector instruction", 64, true, []uint32{0x0c0572d7}, false, nil, // vsetvli t0,a0,e8,m1,tu,mu
			[]string{"pc 0x10100", "instruction 0c0572d7", "SIGILL"}},
		// lui t0,0x40000; jr t0
		{"jump to unmapped memory", 64, false, []uint32{0x400002b7, 0x00028067}, false, nil,
			[]string{"pc 0x40000000", "instruction access fault (tval 0x40000000)"}},
		{"jump to unmapped memory, Linux", 64, true, []uint32{0x400002b7, 0x00028067}, false, nil,
			[]string{"pc 0x40000000", "instruction access fault (tval 0x40000000)", "SIGSEGV"}},
		// li a0,0; ld a1,0(a0)
		{"load from address 0, Linux", 64, true, []uint32{0x00000513, 0x00053583}, false, nil,
			[]string{"pc 0x10104", "instruction 00053583 (ld a1,0(a0))", "load access fault (tval 0x0)", "SIGSEGV"}},
		{"endless loop", 64, false, []uint32{0x0000006f}, false, []string{"--max-instret", "1000"},
			[]string{"pc 0x80000100", "instruction 0000006f (j 0x80000100)", "instruction limit 1000 reached"}},
		{"endless loop, Linux", 64, true, []uint32{0x0000006f}, false, []string{"--max-instret", "1000"},
			[]string{"pc 0x10100", "instruction 0000006f (j 0x10100)", "instruction limit 1000 reached"}},
		// RV32: c.flwsp fa0,0(sp) with FS off (c.ldsp on RV64)
		{"compressed FP with FS off, RV32", 32, false, []uint32{0x6502}, true, nil,
			[]string{"pc 0x80000100", "instruction 6502 (flw fa0,0(sp))", "illegal instruction"}},
		{"compressed FP with FS off, RV64", 64, false, []uint32{0x2502}, true, nil, // c.fldsp fa0,0(sp)
			[]string{"pc 0x80000100", "instruction 2502 (fld fa0,0(sp))", "illegal instruction"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := uint64(bare)
			args := []string{"run", "-q"}
			if tc.linux {
				base = lnx
				args = append(args, "--linux")
			}
			path := tinyELF(t, tc.xlen, base, tc.insts, tc.half)
			args = append(append(args, tc.args...), path)
			code, _, errOut := rv(t, args...)
			t.Logf("exit code %d: %s", code, strings.TrimSpace(errOut))
			if code == 0 {
				t.Fatalf("exit code 0; stderr %q", errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("message %q lacks %q", errOut, w)
				}
			}
			if strings.Contains(errOut, "panic") || strings.Count(errOut, "\n") != 1 {
				t.Errorf("want a one-line message, got %q", errOut)
			}
		})
	}
}
