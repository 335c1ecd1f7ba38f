package image

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rvtrace/rvtrace/riscv"
)

// Instruction encodings used by the synthetic tests.
const (
	nop    = 0x00000013 // addi x0, x0, 0
	cnop   = 0x0001     // c.nop
	beq    = 0x00000063 // beq x0, x0, .
	ret    = 0x00008067 // jalr x0, 0(ra)
	cret   = 0x8082     // c.jr ra
	ecall  = 0x00000073
	cj     = 0xa001 // c.j .
	jal    = 0x0000006f
	unimp0 = 0x0000 // the all-zero illegal instruction
)

// code assembles a mix of 16- and 32-bit instructions: values below
// 0x10000 whose low bits are not 11 are 16-bit.
func code(insts ...uint32) []byte {
	var b []byte
	for _, in := range insts {
		if in&3 != 3 && in < 0x10000 {
			b = binary.LittleEndian.AppendUint16(b, uint16(in))
		} else {
			b = binary.LittleEndian.AppendUint32(b, in)
		}
	}
	return b
}

func TestReadContains(t *testing.T) {
	s := NewSet()
	a := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	s.AddBytes("a", 0x1000, a)
	s.AddBytes("b", 0x1010, []byte{17, 18, 19, 20})   // adjacent
	s.AddBytes("c", 0x1004, []byte{0xc0, 0xc1})       // overlaps a
	s.AddBytes("d", 0x2000, []byte{0xd0, 0xd1, 0xd2}) // after a gap
	a[0] = 99                                         // AddBytes copies
	p := make([]byte, 32)
	n := s.Read(0x1000, p)
	want := []byte{1, 2, 3, 4, 0xc0, 0xc1, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	if !bytes.Equal(p[:n], want) {
		t.Errorf("Read(0x1000) = % x, want % x", p[:n], want)
	}
	if n := s.Read(0x1013, p); n != 1 || p[0] != 20 {
		t.Errorf("Read(0x1013) = %d bytes % x", n, p[:n])
	}
	if n := s.Read(0x1014, p); n != 0 {
		t.Errorf("Read(0x1014) = %d bytes, want 0 (unmapped)", n)
	}
	if n := s.Read(0x2001, p[:1]); n != 1 || p[0] != 0xd1 {
		t.Errorf("Read(0x2001) = %d bytes % x", n, p[:n])
	}
	for addr, want := range map[uint64]bool{0xfff: false, 0x1000: true, 0x1005: true, 0x1013: true, 0x1014: false, 0x1fff: false, 0x2002: true, 0x2003: false} {
		if got := s.Contains(addr); got != want {
			t.Errorf("Contains(%#x) = %v, want %v", addr, got, want)
		}
	}
	if got := len(s.Segments()); got != 4 {
		t.Errorf("%d segments, want 4", got)
	}
	if s.Entry() != 0x1000 {
		t.Errorf("Entry() = %#x, want the first image's address 0x1000", s.Entry())
	}
	// The end of the address space.
	s.AddBytes("top", ^uint64(0)-3, []byte{1, 2, 3, 4, 5, 6})
	if n := s.Read(^uint64(0)-3, p); n != 3 {
		t.Errorf("Read at the top of memory = %d bytes, want 3", n)
	}
}

func TestELFSegments(t *testing.T) {
	text := code(nop, cnop, beq)
	data := []byte{1, 2, 3, 4}
	for _, class := range []elf.Class{elf.ELFCLASS32, elf.ELFCLASS64} {
		file := buildELF(class, elf.EM_RISCV, 0x8000_0000, []testSeg{
			{vaddr: 0x8000_0000, data: text, flags: elf.PF_R | elf.PF_X},
			{vaddr: 0x8000_1000, data: data, memsz: 0x3000, flags: elf.PF_R | elf.PF_W},
		}, nil)
		s := NewSet()
		if err := s.AddELFReader("t.elf", bytes.NewReader(file)); err != nil {
			t.Fatal(err)
		}
		wantX := 32
		if class == elf.ELFCLASS64 {
			wantX = 64
		}
		if s.XLEN() != wantX || s.Entry() != 0x8000_0000 {
			t.Errorf("%v: XLEN %d entry %#x", class, s.XLEN(), s.Entry())
		}
		segs := s.Segments()
		want := []Segment{
			{Image: "t.elf", Addr: 0x8000_0000, MemSize: uint64(len(text)), FileSize: uint64(len(text)), Read: true, Exec: true},
			{Image: "t.elf", Addr: 0x8000_1000, MemSize: 0x3000, FileSize: 4, Read: true, Write: true},
		}
		if len(segs) != 2 || segs[0] != want[0] || segs[1] != want[1] {
			t.Errorf("Segments() = %+v, want %+v", segs, want)
		}
		p := make([]byte, 0x4000)
		if n := s.Read(0x8000_1000, p); n != 0x3000 || !bytes.Equal(p[:4], data) || !bytes.Equal(p[4:n], make([]byte, n-4)) {
			t.Errorf("Read(data) = %d bytes, % x...", n, p[:8])
		}
		// Zero fill decodes as the all-zero instruction, up to its last halfword.
		for _, addr := range []uint64{0x8000_1004, 0x8000_2000, 0x8000_3ffe} {
			if in, ok := s.Inst(addr); !ok || in.Len != 2 || in.Raw != 0 || in.Class != riscv.ClassIllegal {
				t.Errorf("Inst(%#x) in zero fill = %+v, %v", addr, in, ok)
			}
		}
		if _, ok := s.Inst(0x8000_4000); ok {
			t.Errorf("Inst past the segment: ok")
		}
		if _, err := s.Run(0x8000_2000); err == nil || !strings.Contains(err.Error(), "illegal instruction 0x0000") {
			t.Errorf("Run in zero fill: %v", err)
		}
	}
}

func TestInst(t *testing.T) {
	s := NewSet()
	s.AddBytes("a", 0x1000, append(code(nop, cnop, ret, cret), 0x13, 0x00)) // ends with half of a 32-bit instruction
	checks := []struct {
		addr uint64
		ok   bool
		raw  uint32
		len  uint8
	}{
		{0x1000, true, nop, 4},
		{0x1002, true, 0, 2}, // the upper half of nop: 0x0000
		{0x1004, true, cnop, 2},
		{0x1006, true, ret, 4},
		{0x100a, true, cret, 2},
		{0x100c, false, 0, 0}, // straddles the end
		{0x1001, false, 0, 0}, // odd
		{0x100e, false, 0, 0}, // unmapped
		{0x0, false, 0, 0},
	}
	check := func() {
		t.Helper()
		for _, c := range checks {
			in, ok := s.Inst(c.addr)
			if ok != c.ok || ok && (in.Raw != c.raw || in.Len != c.len) {
				t.Errorf("Inst(%#x) = raw %#x len %d ok %v, want raw %#x len %d ok %v", c.addr, in.Raw, in.Len, ok, c.raw, c.len, c.ok)
			}
			if ok && in != riscv.Decode(c.raw, s.XLEN()) {
				t.Errorf("Inst(%#x) = %+v, not riscv.Decode of its bits", c.addr, in)
			}
			if p := s.InstPtr(c.addr); (p != nil) != ok || p != nil && *p != in {
				t.Errorf("InstPtr(%#x) = %v, Inst = %+v, %v", c.addr, p, in, ok)
			}
		}
	}
	check()
	// Mapping the rest of the instruction makes it decodable: caches are
	// rebuilt when images are added.
	s.AddBytes("b", 0x100e, []byte{0, 0})
	checks[5].ok, checks[5].raw, checks[5].len = true, 0x0013, 4
	checks[7].ok, checks[7].raw, checks[7].len = true, 0, 2
	check()
}

func TestXLENAndEntry(t *testing.T) {
	e32 := buildELF(elf.ELFCLASS32, elf.EM_RISCV, 0x2000, []testSeg{{vaddr: 0x2000, data: code(cj), flags: elf.PF_X}}, nil)
	e64 := buildELF(elf.ELFCLASS64, elf.EM_RISCV, 0x3000, []testSeg{{vaddr: 0x3000, data: code(cj), flags: elf.PF_X}}, nil)
	x86 := buildELF(elf.ELFCLASS64, elf.EM_X86_64, 0x4000, []testSeg{{vaddr: 0x4000, data: []byte{0x90}, flags: elf.PF_X}},
		[]testSym{{name: "host_fn", value: 0x4000, size: 1, typ: elf.STT_FUNC, bind: elf.STB_GLOBAL}})

	s := NewSet()
	if s.XLEN() != 64 {
		t.Errorf("default XLEN %d", s.XLEN())
	}
	s.AddBytes("raw", 0x1000, code(cj))
	must(t, s.AddELFReader("x86", bytes.NewReader(x86)))
	if s.XLEN() != 64 || s.Entry() != 0x4000 {
		t.Errorf("after a foreign ELF: XLEN %d entry %#x", s.XLEN(), s.Entry())
	}
	if a, ok := s.Lookup("host_fn"); !ok || a != 0x4000 {
		t.Errorf("symbol of a foreign ELF: %#x %v", a, ok)
	}
	must(t, s.AddELFReader("e32", bytes.NewReader(e32)))
	must(t, s.AddELFReader("e64", bytes.NewReader(e64)))
	if s.XLEN() != 32 || s.Entry() != 0x2000 {
		t.Errorf("first RISC-V ELF is ELF32: XLEN %d entry %#x", s.XLEN(), s.Entry())
	}
	// 0x2085 is c.jal on RV32 and c.addiw ra, 1 on RV64.
	s.AddBytes("cjal", 0x5000, code(0x2085))
	if in, _ := s.Inst(0x5000); in.Class == riscv.ClassLinear {
		t.Errorf("RV32 c.jal decoded as linear")
	}
	s.SetXLEN(64)
	if in, _ := s.Inst(0x5000); in.Class != riscv.ClassLinear || s.XLEN() != 64 {
		t.Errorf("after SetXLEN(64), c.addiw decoded as %v", in.Class)
	}
	s.SetXLEN(7)
	must(t, s.AddELFReader("e32", bytes.NewReader(e32)))
	if s.XLEN() != 64 {
		t.Errorf("SetXLEN was overridden: %d", s.XLEN())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestELFErrors(t *testing.T) {
	good := buildELF(elf.ELFCLASS64, elf.EM_RISCV, 0x1000, []testSeg{{vaddr: 0x1000, data: code(nop, ret), flags: elf.PF_X}}, nil)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, b, 0o644))
		return p
	}
	// p_filesz of the first program header, at 64+32.
	bigFilesz := bytes.Clone(good)
	binary.LittleEndian.PutUint64(bigFilesz[64+32:], 1<<40)
	binary.LittleEndian.PutUint64(bigFilesz[64+40:], 1<<41)
	fileszOverMemsz := bytes.Clone(good)
	binary.LittleEndian.PutUint64(fileszOverMemsz[64+40:], 2)
	wrap := bytes.Clone(good)
	binary.LittleEndian.PutUint64(wrap[64+16:], ^uint64(0)-2)

	for _, c := range []struct {
		path, want string
	}{
		{filepath.Join(dir, "missing.elf"), "missing.elf"},
		{write("text.elf", []byte("hello, world, this is no ELF file at all......................................")), "not a valid ELF file"},
		{write("trunc.elf", good[:40]), "trunc.elf"},
		{write("bigfilesz.elf", bigFilesz), "file ends after"},
		{write("filesz.elf", fileszOverMemsz), "larger than p_memsz"},
		{write("wrap.elf", wrap), "end of the address space"},
	} {
		s := NewSet()
		err := s.AddELF(c.path)
		if err == nil {
			t.Errorf("AddELF(%s): no error", c.path)
			continue
		}
		if !strings.Contains(err.Error(), filepath.Base(c.path)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("AddELF(%s) = %q, want the file name and %q", filepath.Base(c.path), err, c.want)
		}
		if len(s.Segments()) != 0 || s.Contains(0x1000) {
			t.Errorf("AddELF(%s) failed but changed the Set", c.path)
		}
	}
	if err := NewSet().AddRaw(filepath.Join(dir, "missing.bin"), 0); err == nil || !strings.Contains(err.Error(), "missing.bin") {
		t.Errorf("AddRaw(missing) = %v", err)
	}
	s := NewSet()
	must(t, s.AddRaw(write("raw.bin", code(nop, ret)), 0x4000))
	if in, ok := s.Inst(0x4004); !ok || in.Raw != ret {
		t.Errorf("raw image: Inst = %+v %v", in, ok)
	}
}

func TestRun(t *testing.T) {
	s := NewSet()
	prog := code(nop, cnop, nop, beq, // 0x1000: run of 4, 7 halfwords, ends at 0x100a
		cnop, cret, // 0x100e
		nop, ecall, // 0x1012
		cnop, unimp0, // 0x101a: illegal
		nop, nop) // 0x101e: runs off the end at 0x1026
	s.AddBytes("p", 0x1000, prog)
	type want struct {
		n, hw    uint32
		last     uint64
		lastRaw  uint32
		errAddr  uint64
		errMatch string
	}
	cases := map[uint64]want{
		0x1000: {n: 4, hw: 7, last: 0x100a, lastRaw: beq},
		0x1004: {n: 3, hw: 5, last: 0x100a, lastRaw: beq},
		0x100a: {n: 1, hw: 2, last: 0x100a, lastRaw: beq},
		0x100e: {n: 2, hw: 2, last: 0x1010, lastRaw: cret},
		0x1012: {n: 2, hw: 4, last: 0x1016, lastRaw: ecall},
		0x101a: {errAddr: 0x101c, errMatch: "illegal instruction 0x0000"},
		0x101e: {errAddr: 0x1026, errMatch: "unmapped"},
		0x1001: {errAddr: 0x1001, errMatch: "misaligned"},
		0x9000: {errAddr: 0x9000, errMatch: "unmapped"},
	}
	check := func(s *Set, addr uint64) {
		t.Helper()
		w := cases[addr]
		r, err := s.Run(addr)
		if w.errMatch != "" {
			var e *Error
			if !errors.As(err, &e) || e.Addr != w.errAddr || e.Start != addr || !strings.Contains(e.Reason, w.errMatch) {
				t.Errorf("Run(%#x) = %+v, %v; want error %q at %#x", addr, r, err, w.errMatch, w.errAddr)
			}
			return
		}
		if err != nil || r.Start != addr || r.N != w.n || r.Halfwords != w.hw || r.LastAddr != w.last || r.Last.Raw != w.lastRaw {
			t.Errorf("Run(%#x) = %+v, %v; want %+v", addr, r, err, w)
			return
		}
		if r.End() != r.LastAddr+uint64(r.Last.Len) || !r.Contains(r.LastAddr) || r.Contains(r.End()) || !r.Contains(addr) {
			t.Errorf("Run(%#x): End/Contains inconsistent", addr)
		}
	}
	for addr := range cases {
		check(s, addr)
	}
	// Results do not depend on the order of calls (runs cached inside
	// other runs are reused).
	for _, order := range [][]uint64{{0x1004, 0x1000}, {0x100a, 0x1000}, {0x101c, 0x101a}, {0x1022, 0x101e}} {
		s := NewSet()
		s.AddBytes("p", 0x1000, prog)
		cases[0x101c] = want{errAddr: 0x101c, errMatch: "illegal"}
		cases[0x1022] = want{errAddr: 0x1026, errMatch: "unmapped"}
		for _, a := range order {
			check(s, a)
		}
	}
	// Cached: the same pointer again.
	r1, _ := s.Run(0x1000)
	r2, _ := s.Run(0x1000)
	if r1 != r2 {
		t.Errorf("Run not cached")
	}
}

func TestRunTooLong(t *testing.T) {
	long := make([]uint32, MaxRun+10)
	for i := range long {
		long[i] = cnop
	}
	long = append(long, cret)
	s := NewSet()
	s.AddBytes("long", 0x10000, code(long...))
	// From 11 instructions in, the run is exactly MaxRun long.
	if r, err := s.Run(0x10000 + 2*11); err != nil || r.N != MaxRun {
		t.Fatalf("run of MaxRun: %+v, %v", r, err)
	}
	r, err := s.Run(0x10000)
	var e *Error
	if !errors.As(err, &e) || e.Addr != 0x10000+2*MaxRun || !strings.Contains(e.Reason, "no control-flow instruction") {
		t.Fatalf("Run of MaxRun+11: %+v, %v", r, err)
	}
	// Same answer from a Set with nothing cached.
	s2 := NewSet()
	s2.AddBytes("long", 0x10000, code(long...))
	if _, err2 := s2.Run(0x10000); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("uncached: %v, cached: %v", err2, err)
	}
}

// TestConcurrent decodes random memory from many goroutines at once and
// compares with a sequential decoding. Run with -race.
func TestConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	mem := make([]byte, 64<<10)
	for i := range mem {
		mem[i] = byte(rng.Uint32())
	}
	ref := NewSet()
	ref.AddBytes("m", 0x8000_0000, mem)
	s := NewSet()
	s.AddBytes("m", 0x8000_0000, mem)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range len(mem) / 2 {
				addr := 0x8000_0000 + uint64((i*7919+g*1237)%(len(mem)/2))*2
				if _, ok := s.Inst(addr); !ok && addr < 0x8000_0000+uint64(len(mem))-8 {
					t.Errorf("Inst(%#x) not ok", addr)
					return
				}
				s.Run(addr)
			}
		}()
	}
	wg.Wait()
	for i := 0; i < len(mem); i += 2 {
		addr := 0x8000_0000 + uint64(i)
		a, aok := s.Inst(addr)
		b, bok := ref.Inst(addr)
		if a != b || aok != bok {
			t.Fatalf("Inst(%#x) differs", addr)
		}
		ra, ea := s.Run(addr)
		rb, eb := ref.Run(addr)
		if (ea == nil) != (eb == nil) || ea != nil && ea.Error() != eb.Error() || ea == nil && *ra != *rb {
			t.Fatalf("Run(%#x) differs: %+v %v / %+v %v", addr, ra, ea, rb, eb)
		}
	}
}

func TestZeroAlloc(t *testing.T) {
	s := NewSet()
	s.AddBytes("p", 0x1000, code(nop, cnop, nop, beq, cnop, cret))
	s.Inst(0x1000)
	s.Run(0x1000)
	s.Run(0x100e)
	if n := testing.AllocsPerRun(100, func() {
		s.Inst(0x1004)
		s.Inst(0x100e)
		s.Inst(0x9000)
		s.InstPtr(0x1004)
		s.Run(0x1000)
		s.Run(0x100e)
		s.Symbolize(0x1000)
		s.Line(0x1000)
	}); n != 0 {
		t.Errorf("%v allocations per lookup", n)
	}
}

func TestSymbols(t *testing.T) {
	segs := []testSeg{
		{vaddr: 0x1000, data: make([]byte, 0x100), flags: elf.PF_R | elf.PF_X},
		{vaddr: 0x2000, data: make([]byte, 0x10), memsz: 0x100, flags: elf.PF_R | elf.PF_W},
	}
	syms := []testSym{
		{name: "_start", value: 0x1000, typ: elf.STT_NOTYPE, bind: elf.STB_GLOBAL}, // unsized label
		{name: "vector", value: 0x1008, typ: elf.STT_NOTYPE, bind: elf.STB_LOCAL},  // unsized label
		{name: "main", value: 0x1020, size: 0x20, typ: elf.STT_FUNC, bind: elf.STB_GLOBAL},
		{name: ".loop", value: 0x1030, typ: elf.STT_NOTYPE, bind: elf.STB_LOCAL}, // label inside main
		{name: "helper", value: 0x1040, size: 0x10, typ: elf.STT_FUNC, bind: elf.STB_LOCAL},
		{name: "__helper", value: 0x1040, size: 0x10, typ: elf.STT_FUNC, bind: elf.STB_LOCAL}, // alias
		{name: "tail", value: 0x10f0, typ: elf.STT_FUNC, bind: elf.STB_GLOBAL},                // unsized function
		{name: "buf", value: 0x2000, size: 0x40, typ: elf.STT_OBJECT, bind: elf.STB_GLOBAL},
		{name: "tohost", value: 0x2080, typ: elf.STT_NOTYPE, bind: elf.STB_GLOBAL},
		{name: "__stack_size", value: 0x400, typ: elf.STT_NOTYPE, bind: elf.STB_GLOBAL, shndx: elf.SHN_ABS},
		{name: "tls_var", value: 0x8, size: 4, typ: elf.STT_TLS, bind: elf.STB_GLOBAL, shndx: 2},
		{name: "helper", value: 0x2090, size: 4, typ: elf.STT_OBJECT, bind: elf.STB_GLOBAL}, // same name, global
		{name: "$x", value: 0x1000, typ: elf.STT_NOTYPE, bind: elf.STB_LOCAL},
		{name: "$xrv64i2p1_c2p0", value: 0x1000, typ: elf.STT_NOTYPE, bind: elf.STB_LOCAL},
		{name: "$d", value: 0x2000, typ: elf.STT_NOTYPE, bind: elf.STB_LOCAL},
		{name: "sect", value: 0x1000, typ: elf.STT_SECTION, bind: elf.STB_LOCAL},
		{name: "file.c", value: 0, typ: elf.STT_FILE, bind: elf.STB_LOCAL, shndx: elf.SHN_ABS},
	}
	s := NewSet()
	must(t, s.AddELFReader("syms.elf", bytes.NewReader(buildELF(elf.ELFCLASS64, elf.EM_RISCV, 0x1000, segs, syms))))

	got := s.Symbols()
	var names []string
	for _, sy := range got {
		names = append(names, sy.Name)
	}
	wantNames := "tls_var __stack_size _start vector main .loop __helper helper tail buf tohost helper"
	if strings.Join(names, " ") != wantNames {
		t.Errorf("Symbols() names = %q, want %q", strings.Join(names, " "), wantNames)
	}
	for _, sy := range got {
		switch sy.Name {
		case "main":
			if sy != (Symbol{Name: "main", Addr: 0x1020, Size: 0x20, Kind: Func, Global: true}) {
				t.Errorf("main = %+v", sy)
			}
		case "__stack_size":
			if !sy.Abs || sy.Kind != Other {
				t.Errorf("__stack_size = %+v", sy)
			}
		case "buf", "tls_var":
			if sy.Kind != Object {
				t.Errorf("%s = %+v", sy.Name, sy)
			}
		}
	}
	for name, want := range map[string]uint64{"main": 0x1020, "helper": 0x2090, "__stack_size": 0x400, "tohost": 0x2080} {
		if a, ok := s.Lookup(name); !ok || a != want {
			t.Errorf("Lookup(%s) = %#x, %v, want %#x", name, a, ok, want)
		}
	}
	if _, ok := s.Lookup("$x"); ok {
		t.Errorf("mapping symbol found")
	}
	for addr, want := range map[uint64]string{
		0x1000: "_start",
		0x1006: "_start+0x6",
		0x1008: "vector",
		0x101e: "vector+0x16",
		0x1020: "main",
		0x1034: "main+0x14", // .loop is inside main
		0x1040: "helper",    // the alias without underscores
		0x104e: "helper+0xe",
		0x1050: "helper+0x10", // past helper's size: the nearest preceding
		0x10f0: "tail",
		0x10fe: "tail+0xe",
		0x1100: "", // unmapped
		0x2008: "buf+0x8",
		0x2040: "buf+0x40",
		0x2080: "tohost",
		0x2088: "tohost+0x8",
		0x2090: "helper", // the object
		0x2094: "helper+0x4",
		0x2100: "",
		0x400:  "", // absolute symbols name no address
		0x8:    "",
	} {
		name, off, ok := s.Symbolize(addr)
		got := ""
		if ok {
			got = name
			if off != 0 {
				got = name + "+" + hex(off)
			}
		}
		if got != want {
			t.Errorf("Symbolize(%#x) = %q, want %q", addr, got, want)
		}
	}
	if got := s.FormatAddr(0x1034); got != "0x1034 <main+0x14>" {
		t.Errorf("FormatAddr = %q", got)
	}
	if got := s.FormatAddr(0x1020); got != "0x1020 <main>" {
		t.Errorf("FormatAddr = %q", got)
	}
	if got := s.FormatAddr(0x5000); got != "0x5000" {
		t.Errorf("FormatAddr = %q", got)
	}
	if Func.String() != "func" || Object.String() != "object" || Other.String() != "other" {
		t.Errorf("Kind.String")
	}
}

func hex(v uint64) string {
	const digits = "0123456789abcdef"
	s := ""
	for ; v != 0; v >>= 4 {
		s = string(digits[v&15]) + s
	}
	return "0x" + s
}
