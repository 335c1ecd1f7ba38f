package image

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzAddELFReader checks that loading arbitrary bytes as an ELF file never
// panics, that errors name the file, and that lookups on whatever loaded
// do not panic either.
func FuzzAddELFReader(f *testing.F) {
	text := code(nop, cnop, beq, cret, 0x2001, unimp0, jal)
	syms := []testSym{
		{name: "main", value: 0x1000, size: 8, typ: elf.STT_FUNC, bind: elf.STB_GLOBAL},
		{name: "lbl", value: 0x1006, typ: elf.STT_NOTYPE, bind: elf.STB_LOCAL},
		{name: "obj", value: 0x2000, size: 4, typ: elf.STT_OBJECT, bind: elf.STB_GLOBAL},
	}
	for _, class := range []elf.Class{elf.ELFCLASS32, elf.ELFCLASS64} {
		f.Add(buildELF(class, elf.EM_RISCV, 0x1000, []testSeg{
			{vaddr: 0x1000, data: text, flags: elf.PF_R | elf.PF_X},
			{vaddr: 0x2000, data: []byte{1, 2, 3, 4}, memsz: 0x100, flags: elf.PF_R | elf.PF_W},
		}, syms))
	}
	// Small real programs, when the corpus is present.
	for _, name := range []string{"elf/test_discon_branch_exception.riscv", "elf/br_j_asm.riscv"} {
		if b, err := os.ReadFile(filepath.Join(corpusPath(), name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("\x7fELF"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := NewSet()
		err := s.AddELFReader("fuzz.elf", bytes.NewReader(data))
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.elf") {
				t.Fatalf("error does not name the file: %v", err)
			}
			if len(s.Segments()) != 0 || len(s.Symbols()) != 0 {
				t.Fatalf("failed load changed the Set")
			}
			return
		}
		var buf [16]byte
		probe := func(a uint64) {
			s.Inst(a)
			s.Inst(a + 2)
			s.Run(a)
			s.Symbolize(a)
			s.Line(a)
			s.Read(a, buf[:])
			s.Contains(a)
		}
		for _, sg := range s.Segments() {
			probe(sg.Addr)
			probe(sg.Addr + sg.FileSize)
			probe(sg.Addr + sg.MemSize - 2)
		}
		for _, sy := range s.Symbols() {
			probe(sy.Addr)
			s.Lookup(sy.Name)
			s.FormatAddr(sy.Addr)
		}
		probe(s.Entry())
	})
}
