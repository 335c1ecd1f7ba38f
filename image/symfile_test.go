package image

import (
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadSymbolMap reads System.map and /proc/kallsyms lines: kinds,
// bindings, module names, hidden (zero) addresses and errors with the
// line.
func TestReadSymbolMap(t *testing.T) {
	text := "ffffffff80000000 T _start\nffffffff80001000 t local_fn\nffffffff81000000 D some_data\n" +
		"0000000000000000 T hidden\nffffffff82000000 t mod_fn\t[virtio_blk]\n0000000000000100 A abs_val\n" +
		"                 U undefined\nffffffff80002000 W weak_fn\n"
	syms, err := ReadSymbolMap(strings.NewReader(text), "k")
	if err != nil {
		t.Fatal(err)
	}
	want := []Symbol{{Name: "_start", Addr: 0xffffffff80000000, Kind: Func, Global: true},
		{Name: "local_fn", Addr: 0xffffffff80001000, Kind: Func}, {Name: "some_data", Addr: 0xffffffff81000000, Kind: Object, Global: true},
		{Name: "mod_fn", Addr: 0xffffffff82000000, Kind: Func}, {Name: "abs_val", Addr: 0x100, Abs: true, Global: true},
		{Name: "weak_fn", Addr: 0xffffffff80002000, Kind: Func, Global: true}}
	if len(syms) != len(want) {
		t.Fatalf("%d symbols, want %d: %+v", len(syms), len(want), syms)
	}
	for i := range want {
		if syms[i] != want[i] {
			t.Errorf("symbol %d: %+v, want %+v", i, syms[i], want[i])
		}
	}
	s := NewSet()
	s.AddBytes("code", 0xffffffff80000000, make([]byte, 0x3000))
	s.AddSymbols(syms)
	if name, off, ok := s.Symbolize(0xffffffff80001010); !ok || name != "local_fn" || off != 0x10 {
		t.Errorf("Symbolize: %s+%#x %v", name, off, ok)
	}
	for _, tc := range []struct{ text, want string }{
		{"ffffffff80000000 T\n", "k:1: want ADDRESS TYPE NAME"},
		{"ok\nzzzz T name\n", "k:1: want"},
		{"ffffffff80000000 T a\nxyz T name\n", "k:2: invalid hexadecimal address"},
		{"ffffffff80000000 Q name\n", "k:1: unknown symbol type"},
		{"ffffffff80000000 T name module\n", "k:1: want"},
	} {
		_, err := ReadSymbolMap(strings.NewReader(tc.text), "k")
		var se *SymbolFileError
		if err == nil || !errors.As(err, &se) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.text, err, tc.want)
		}
	}
}

// TestAddELFAt moves a position-independent program and its symbols, and
// limits one to a context.
func TestAddELFAt(t *testing.T) {
	code := []byte{0x13, 0, 0, 0, 0x67, 0x80, 0, 0} // nop; ret
	file := buildELF(elf.ELFCLASS64, elf.EM_RISCV, 0x0, []testSeg{{vaddr: 0x0, data: code, flags: elf.PF_X | elf.PF_R}},
		[]testSym{{name: "main", value: 0x4, size: 4, typ: elf.STT_FUNC, bind: elf.STB_GLOBAL}})
	path := filepath.Join(t.TempDir(), "pie")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	s := NewSet()
	if err := s.AddELFAt(path, 0x2aaaa000, nil); err != nil {
		t.Fatal(err)
	}
	if in, ok := s.Inst(0x2aaaa004); !ok || in.Raw != 0x8067 {
		t.Errorf("moved code: %v %v", in, ok)
	}
	if a, ok := s.Lookup("main"); !ok || a != 0x2aaaa004 {
		t.Errorf("moved symbol main at %#x %v", a, ok)
	}
	c := NewSet()
	ctx := uint64(7)
	if err := c.AddELFAt(path, 0x10000, &ctx); err != nil {
		t.Fatal(err)
	}
	if c.Contains(0x10004) || c.ForContext(6).Contains(0x10004) || !c.ForContext(7).Contains(0x10004) {
		t.Errorf("context image visible outside context 7, or not in it")
	}
	if err := s.AddELFAt(filepath.Join(t.TempDir(), "none"), 0, nil); err == nil {
		t.Error("AddELFAt of a missing file: no error")
	}
}
