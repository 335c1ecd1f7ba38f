package sim

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// segELF writes a 64-bit RISC-V executable with one PT_LOAD segment at
// vaddr (physical address too) of filesz bytes in the file and memsz in
// memory; its code is `j .`. typ is 2 (ET_EXEC).
func segELF(t *testing.T, vaddr, filesz, memsz uint64) string {
	t.Helper()
	le := binary.LittleEndian
	hdr := make([]byte, 0x100)
	copy(hdr, "\x7fELF\x02\x01\x01")
	le.PutUint16(hdr[16:], 2)   // ET_EXEC
	le.PutUint16(hdr[18:], 243) // EM_RISCV
	le.PutUint32(hdr[20:], 1)
	le.PutUint64(hdr[24:], vaddr)
	le.PutUint64(hdr[32:], 64) // e_phoff
	le.PutUint32(hdr[48:], 5)
	le.PutUint16(hdr[52:], 64)
	le.PutUint16(hdr[54:], 56)
	le.PutUint16(hdr[56:], 1)
	le.PutUint16(hdr[58:], 64)
	ph := hdr[64:]
	le.PutUint32(ph[0:], 1) // PT_LOAD
	le.PutUint32(ph[4:], 7)
	le.PutUint64(ph[8:], 0x100) // p_offset
	le.PutUint64(ph[16:], vaddr)
	le.PutUint64(ph[24:], vaddr)
	le.PutUint64(ph[32:], filesz)
	le.PutUint64(ph[40:], memsz)
	le.PutUint64(ph[48:], 0x1000)
	code := le.AppendUint32(hdr, 0x0000006f) // j .
	path := filepath.Join(t.TempDir(), "seg.elf")
	if err := os.WriteFile(path, code, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRAMLimit: memory a guest asks for is bounded: a 1 TiB segment, a
// segment whose bytes lie beyond the end of the file, or banks above
// MaxRAM are refused with an error naming the file and the size, before
// any host memory is reserved.
func TestRAMLimit(t *testing.T) {
	const tib = 1 << 40
	for _, tc := range []struct {
		name        string
		cfg         Config
		vaddr       uint64
		filesz      uint64
		memsz       uint64
		linux       bool
		want        []string
		isLimitErr  bool
		loadSucceed bool
	}{
		{"1 TiB bss", Config{}, 0x100000000, 4, tib, false, []string{"seg.elf", "segment at 0x100000000 of 1 TiB", "above the limit of 16 GiB"}, true, false},
		{"1 TiB bss, Linux", Config{}, 0x10000, 4, tib, true, []string{"seg.elf", "segments of 1 TiB", "above the limit of 16 GiB"}, true, false},
		{"1 TiB in the file", Config{}, 0x100000000, tib, tib, false, []string{"seg.elf", "beyond the end of the file"}, false, false},
		{"file size above memory size", Config{}, 0x80000000, 8, 4, false, []string{"seg.elf", "larger than its memory size"}, false, false},
		{"wraps", Config{}, 0xfffffffffffff000, 4, 0x10000, false, []string{"seg.elf", "beyond the 64-bit address space"}, false, false},
		{"--ram 30G", Config{RAMSize: 30 << 30}, 0x80000000, 4, 4, false, []string{"rvtrace run --ram", "30 GiB", "above the limit of 16 GiB"}, true, false},
		{"--ram 30G, Linux", Config{RAMSize: 30 << 30}, 0x10000, 4, 4, true, []string{"seg.elf", "30 GiB", "--ram", "above the limit of 16 GiB"}, true, false},
		{"MaxRAM raised above the host", Config{MaxRAM: 1 << 62}, 0x100000000, 4, tib, false, []string{"seg.elf", "of 1 TiB", "the host's RAM and swap"}, true, false},
		{"MaxRAM raised", Config{MaxRAM: 1 << 62}, 0x100000000, 4, 256 << 20, false, nil, false, true},
		{"MaxRAM lowered", Config{MaxRAM: 100 << 20}, 0x80000000, 4, 4, false, []string{"above the limit of 100 MiB"}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if host := hostMemory(); host == 0 || host >= tib {
				t.Skipf("host memory %d: the limits tested are not the binding ones", host)
			}
			path := segELF(t, tc.vaddr, tc.filesz, tc.memsz)
			m, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tc.linux {
				err = m.LoadLinuxELF(path, nil, nil)
			} else {
				err = m.LoadELF(path)
			}
			if tc.loadSucceed {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
			var le *RAMLimitError
			if errors.As(err, &le) != tc.isLimitErr {
				t.Errorf("RAMLimitError %v: %v", !tc.isLimitErr, err)
			}
		})
	}
}
