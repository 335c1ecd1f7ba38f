package sideband

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// fakeMem is a Memory: pages by (context- and hart-independent) virtual
// page, with the global flag and physical frame each maps to. It counts
// the calls of PeekCode and FetchFrame.
type fakeMem struct {
	pages map[uint64][]byte // virtual page address: 4 KiB
	pa    map[uint64]uint64
	glob  map[uint64]bool
	gen   uint64 // TranslationGen
	ret   uint64 // BlockInstret

	peeks, frames int
}

func (m *fakeMem) PeekCode(hart int, va uint64, priv ingress.Priv, b []byte) (uint64, bool, bool) {
	m.peeks++
	pg := va &^ (PageSize - 1)
	p, ok := m.pages[pg]
	if !ok {
		return 0, false, false
	}
	copy(b, p[va-pg:])
	return m.pa[pg] + va - pg, m.glob[pg], true
}

func (m *fakeMem) FetchFrame(hart int, va uint64, priv ingress.Priv) (uint64, bool) {
	m.frames++
	pg := va &^ (PageSize - 1)
	if _, ok := m.pages[pg]; !ok {
		return 0, false
	}
	return m.pa[pg] + va - pg, true
}

func (m *fakeMem) TranslationGen(int) uint64      { return m.gen }
func (m *fakeMem) TranslationGenAddr(int) *uint64 { return &m.gen }
func (m *fakeMem) BlockInstret(int) uint64        { return m.ret }

func pattern(seed byte) []byte {
	b := make([]byte, PageSize)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// TestRecorderApply records a made-up system: a kernel page (global)
// that matches the image, a user page in two contexts that matches it
// at another offset, a page no image holds, and a page whose code is
// overwritten later. The sideband read back and applied gives each
// context, at each point in time, the bytes the fake memory had.
func TestRecorderApply(t *testing.T) {
	dir := t.TempDir()
	imgBytes := append(pattern(1), pattern(2)...)
	imgPath := filepath.Join(dir, "prog.bin")
	if err := os.WriteFile(imgPath, imgBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	const kern, user, lit = 0xffffffff80000000, 0x10000, 0x20000
	mem := &fakeMem{
		pages: map[uint64][]byte{kern: pattern(1), user: pattern(2), lit: pattern(9)},
		pa:    map[uint64]uint64{kern: 0x80000000, user: 0x80001000, lit: 0x80002000},
		glob:  map[uint64]bool{kern: true},
	}
	var out bytes.Buffer
	instret := uint64(0)
	r, err := NewRecorder(&out, mem, 1, func(int) uint64 { return instret }, []string{imgPath})
	if err != nil {
		t.Fatal(err)
	}
	blk := func(ctx, addr uint64, priv ingress.Priv) {
		t.Helper()
		if err := r.Hart(0).Block(&ingress.Block{IAddr: addr, IRetire: 8, Context: ctx, Priv: priv}); err != nil {
			t.Fatal(err)
		}
	}
	blk(1, kern+0x10, ingress.PrivS)
	blk(1, user+0x20, ingress.PrivU)
	blk(2, user+0x20, ingress.PrivU)
	blk(2, kern+0x10, ingress.PrivS) // global: recorded once
	blk(2, lit, ingress.PrivU)
	// the kernel page is patched at instruction 500, then runs again
	instret = 500
	r.CodeWritten(0x80000000 + 0x40)
	patched := pattern(1)
	copy(patched[0x40:], []byte{0x13, 0, 0, 0})
	mem.pages[kern] = patched
	instret = 800
	blk(3, kern+0x10, ingress.PrivS)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	st := r.Stats()
	if st.Matched != 3 || st.Literal != 1 || st.Patched != 1 || st.Changed != 1 {
		t.Errorf("stats %+v, want 3 matched, 1 literal, 1 patched (the kernel page, changed)", st)
	}
	sf, err := Read(bytes.NewReader(out.Bytes()), "t.side")
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(sf.Images) != 1 || sf.Images[0].SHA256 != sha256.Sum256(imgBytes) || len(sf.Records) != 6 {
		t.Fatalf("read back %d images, %d records", len(sf.Images), len(sf.Records))
	}
	if last := sf.Records[5]; last.Image != -1 || last.Start != kern+0x40 || last.End != kern+0x44 || last.Instret != 500 {
		t.Errorf("the patch of the kernel page: %+v", last)
	}
	set := image.NewSet()
	if err := sf.Apply(set, nil); err != nil {
		t.Fatal(err)
	}
	read := func(v *image.Set, a uint64) []byte {
		b := make([]byte, PageSize)
		if n := v.Read(a, b); n != PageSize {
			return nil
		}
		return b
	}
	for _, tc := range []struct {
		ctx, n, addr uint64
		want         []byte
	}{
		{1, 0, kern, pattern(1)},
		{7, 499, kern, pattern(1)},
		{7, 500, kern, patched},
		{1, 0, user, pattern(2)},
		{2, 900, user, pattern(2)},
		{2, 0, lit, pattern(9)},
		{3, 0, user, nil}, // context 3 never ran there
		{1, 0, lit, nil},
	} {
		if got := read(set.View(tc.ctx, tc.n), tc.addr); !bytes.Equal(got, tc.want) {
			t.Errorf("context %d at instruction %d, %#x: wrong bytes (nil: %v, want nil: %v)", tc.ctx, tc.n, tc.addr, got == nil, tc.want == nil)
		}
	}
	// a changed image file is refused, naming it
	if err := os.WriteFile(imgPath, pattern(5), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := sf.Apply(image.NewSet(), nil); err == nil || !strings.Contains(err.Error(), "prog.bin is not the file") {
		t.Errorf("Apply with a changed image: %v", err)
	}
}

// TestReadErrors: malformed sidebands are refused with FILE:LINE.
func TestReadErrors(t *testing.T) {
	img := "image 0x0 0x2000 " + strings.Repeat("ab", 32) + " /x/prog\n"
	for _, tc := range []struct {
		text, want string
	}{
		{"", "s:1: empty file"},
		{"rvtrace-sideband 4\n", `s:1: sideband version "4": this rvtrace reads versions 1 to 3`},
		{Magic + "\nxlen 0x21\n", `s:2: xlen: invalid XLEN "0x21"`},
		{Magic + "\nxlen 32\n", `s:2: xlen: invalid XLEN "32"`},
		{Magic + "\nxlen 0x20\nxlen 0x20\n", "s:3: xlen: a second xlen line"},
		{"rvtrace-sidebanc 2\n", "s:1: not a sideband file"},
		{Magic + "\nimage 0x1 0x10 " + strings.Repeat("ab", 32) + " p\n", "s:2: image: ID"},
		{Magic + "\nimage 0x0 0x10 abc p\n", "s:2: image: SHA256"},
		{Magic + "\nmap 0x0 * 0x1000 0x2000 0x0 0x0 0x0\n", "s:2: map: image 0x0 is not declared"},
		{Magic + "\n" + img + "map 0x0 * 0x2000 0x1000 0x0 0x0 0x0\n", "s:3: map: empty range"},
		{Magic + "\n" + img + "map 0x0 5 0x1000 0x2000 0x0 0x0 0x0\n", "s:3: map: invalid CTX"},
		{Magic + "\n" + img + "map * 0x1000 0x2000 0x0 0x0 0x0\n", `s:3: map: invalid HART "*"`},
		{Magic + "\n" + img + "map 0x100000 * 0x1000 0x2000 0x0 0x0 0x0\n", `s:3: map: invalid HART "0x100000"`},
		{Magic + "\n" + img + "map 0x0 * 0x1000 0x9000 0x0 0x0 0x0\n", "s:3: map: 0x8000 bytes at offset 0x0 run past the end"},
		{Magic + "\n" + img + "map 0x0 * 0x1000 0x2000 0x0 0x0\n", "s:3: map: want HART CTX"},
		{MagicV1 + "\n" + img + "map * 0x1000 0x2000 0x0 0x0\n", "s:3: map: want CTX"},
		{Magic + "\nbytes 0x0 * 0xff0 0x0 " + strings.Repeat("00", 32) + "\n", "s:2: bytes: 32 bytes at 0xff0 cross"},
		{Magic + "\nbytes 0x0 * 0x1000 0x0 0g\n", "s:2: bytes: HEX"},
		{Magic + "\nbytes 0x1 * 0x1000 0x0\n", "s:2: bytes: want HART CTX"},
		{Magic + "\nmmap * 0x1000\n", "s:2: unknown record"},
	} {
		_, err := Read(strings.NewReader(tc.text), "s")
		var se *SyntaxError
		if err == nil || !errors.As(err, &se) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.text, err, tc.want)
		}
	}
}

// TestRecorderRemap: a context's page that runs from another physical
// page after the translation changed is recorded again, stamped with
// the instruction count the block began at; while the translation
// generation stays the same nothing is looked up, and when it changes
// but the page is the same, the translation is checked (FetchFrame)
// without reading the page. A global page remapped is recorded again
// once, for every context.
func TestRecorderRemap(t *testing.T) {
	const user, kern = 0x10000, 0xffffffff80000000
	mem := &fakeMem{
		pages: map[uint64][]byte{user: pattern(1), kern: pattern(5)},
		pa:    map[uint64]uint64{user: 0x80001000, kern: 0x80100000},
		glob:  map[uint64]bool{kern: true},
	}
	var out bytes.Buffer
	r, err := NewRecorder(&out, mem, 1, func(int) uint64 { return 0 }, nil)
	if err != nil {
		t.Fatal(err)
	}
	blk := func(ctx, addr uint64) {
		t.Helper()
		if err := r.Hart(0).Block(&ingress.Block{IAddr: addr, IRetire: 4, Context: ctx, Priv: ingress.PrivU}); err != nil {
			t.Fatal(err)
		}
	}
	calls := func(peeks, frames int) {
		t.Helper()
		if mem.peeks != peeks || mem.frames != frames {
			t.Errorf("%d page reads, %d translations, want %d, %d", mem.peeks, mem.frames, peeks, frames)
		}
	}
	blk(1, user)
	blk(1, kern)
	blk(1, user+8)
	blk(1, user+16)
	calls(2, 0) // each page read once; the same generation: no lookup
	mem.gen++
	mem.ret = 40
	blk(1, user)
	calls(2, 1) // checked: the same physical page, not read again
	blk(1, user)
	calls(2, 1)
	// the kernel remaps the page to another physical page with other code
	mem.gen++
	mem.ret = 100
	mem.pages[user], mem.pa[user] = pattern(2), 0x80002000
	blk(1, user+4)
	calls(3, 2)
	// context 1 is given to a new process whose page holds the same code
	// as the last one, from a third physical page: nothing to record
	mem.gen++
	mem.ret = 150
	mem.pa[user] = 0x80003000
	blk(1, user)
	calls(4, 3)
	// the global page is remapped: recorded again, once
	mem.gen++
	mem.ret = 200
	mem.pages[kern], mem.pa[kern] = pattern(6), 0x80200000
	blk(2, kern)
	blk(1, kern)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	st := r.Stats()
	if st.Changed != 2 || st.Remapped != 2 || st.Literal != 4 {
		t.Errorf("stats %+v, want 2 changed, both remapped, 4 literal", st)
	}
	sf, err := Read(bytes.NewReader(out.Bytes()), "t.side")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rec := range sf.Records {
		got = append(got, fmt.Sprintf("%v %d %#x %d %d", rec.Global, rec.Context, rec.Start, rec.Instret, rec.Bytes[0]))
	}
	want := []string{"false 1 0x10000 0 1", "true 0 0xffffffff80000000 0 5", "false 1 0x10000 100 2", "true 0 0xffffffff80000000 200 6"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	set := image.NewSet()
	if err := sf.Apply(set, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ctx, n, addr uint64
		want         []byte
	}{
		{1, 99, user, pattern(1)},
		{1, 100, user, pattern(2)},
		{1, 199, kern, pattern(5)},
		{3, 200, kern, pattern(6)},
	} {
		b := make([]byte, PageSize)
		if n := set.View(tc.ctx, tc.n).Read(tc.addr, b); n != PageSize || !bytes.Equal(b, tc.want) {
			t.Errorf("context %d at instruction %d, %#x: wrong bytes", tc.ctx, tc.n, tc.addr)
		}
	}
}

// TestRecorderHarts: each hart's records carry the hart; a sideband of
// several harts loads as one address space per context when the harts
// agree and no code changed, and is refused, naming the line, when two
// harts ran other code at the same address of a context or when code
// changed while the system ran. Version 1 files read as hart 0's.
func TestRecorderHarts(t *testing.T) {
	const user = 0x10000
	mem := &fakeMem{pages: map[uint64][]byte{user: pattern(1)}, pa: map[uint64]uint64{user: 0x80001000}}
	var out bytes.Buffer
	r, err := NewRecorder(&out, mem, 2, func(int) uint64 { return 0 }, nil)
	if err != nil {
		t.Fatal(err)
	}
	for h, ctx := range []uint64{1, 2} {
		if err := r.Hart(h).Block(&ingress.Block{IAddr: user, IRetire: 4, Context: ctx}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Hart(0).Block(&ingress.Block{IAddr: user, IRetire: 4, Context: 2}); err != nil {
		t.Fatal(err)
	}
	// the sink of hart 0 closes first: hart 1 still records
	if err := r.Hart(0).Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Hart(1).Block(&ingress.Block{IAddr: user, IRetire: 4, Context: 3}); err != nil {
		t.Fatal(err)
	}
	if err := r.Hart(1).Close(); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"\nbytes 0x0 0x1 0x10000 0x0 ", "\nbytes 0x1 0x2 0x10000 0x0 ", "\nbytes 0x0 0x2 0x10000 0x0 ", "\nbytes 0x1 0x3 0x10000 0x0 "} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in\n%.300s", want, text)
		}
	}
	sf, err := Read(strings.NewReader(text), "h.side")
	if err != nil {
		t.Fatal(err)
	}
	if sf.Harts() != 2 {
		t.Errorf("%d harts", sf.Harts())
	}
	set := image.NewSet()
	if err := sf.Apply(set, nil); err != nil {
		t.Fatal(err)
	}
	for _, ctx := range []uint64{1, 2, 3} {
		b := make([]byte, 4)
		if n := set.View(ctx, 0).Read(user, b); n != 4 || !bytes.Equal(b, pattern(1)[:4]) {
			t.Errorf("context %d: %x", ctx, b[:n])
		}
	}
	hex := strings.Repeat("13000000", 2)
	for _, tc := range []struct{ text, want string }{
		{Magic + "\nbytes 0x0 0x1 0x10000 0x0 " + hex + "\nbytes 0x1 0x1 0x10000 0x0 13000000930000001300\n",
			"s:3: hart 1 ran other code at 0x10004 in context 0x1 than an earlier hart (line 2)"},
		{Magic + "\nbytes 0x0 * 0x10000 0x0 " + hex + "\nbytes 0x1 * 0x10000 0x5 " + hex + "\n",
			"s:3: hart 1: the code at 0x10000 changed at instruction 0x5 while the system ran"},
	} {
		sf, err := Read(strings.NewReader(tc.text), "s")
		if err != nil {
			t.Fatal(err)
		}
		if err := sf.Apply(image.NewSet(), nil); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.text, err, tc.want)
		}
	}
	// version 1: hart 0, the code changing is fine
	sf, err = Read(strings.NewReader(MagicV1+"\nbytes 0x1 0x10000 0x0 "+hex+"\nbytes 0x1 0x10000 0x5 "+strings.Repeat("01", 8)+"\n"), "v1")
	if err != nil {
		t.Fatal(err)
	}
	set = image.NewSet()
	if err := sf.Apply(set, nil); err != nil || sf.Records[1].Hart != 0 || sf.Harts() != 1 {
		t.Fatalf("version 1: %v, %+v", err, sf.Records)
	}
	b := make([]byte, 1)
	if set.View(1, 5).Read(0x10000, b); b[0] != 1 {
		t.Errorf("version 1: the bytes from instruction 5: %x", b)
	}
}

// BenchmarkRecorderBlock measures the recorder's cost per block (the
// simulator calls it for every block of every hart): blocks running
// through 4 pages of one context while the translation stays the same
// (the common case), and with the translation generation changing at
// every block (each block's page then checked with FetchFrame).
func BenchmarkRecorderBlock(b *testing.B) {
	for _, tc := range []struct {
		name    string
		genStep uint64
	}{{"stable", 0}, {"gen-every-block", 1}} {
		b.Run(tc.name, func(b *testing.B) {
			mem := &fakeMem{pages: map[uint64][]byte{}, pa: map[uint64]uint64{}}
			for i := uint64(0); i < 4; i++ {
				mem.pages[0x10000+i*PageSize] = pattern(byte(i))
				mem.pa[0x10000+i*PageSize] = 0x80000000 + i*PageSize
			}
			r, err := NewRecorder(io.Discard, mem, 1, func(int) uint64 { return 0 }, nil)
			if err != nil {
				b.Fatal(err)
			}
			hr := r.Hart(0)
			blk := ingress.Block{IRetire: 6, Context: 1, Priv: ingress.PrivU}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				// 8 blocks per page, then the next page
				blk.IAddr = 0x10000 + uint64(i>>3&3)*PageSize + uint64(i&7)*64
				mem.gen += tc.genStep
				if err := hr.Block(&blk); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestXLENRecord: the xlen line a Writer writes is read back and sets the
// image's register width, under an explicit SetXLEN; a version 2 file
// (no xlen line) reads with XLEN 0 and leaves the image's.
func TestXLENRecord(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b, 32, nil)
	if err := w.Write(&Record{Global: true, Start: 0x1000, End: 0x1004, Image: -1, Bytes: []byte{0x13, 0, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), Magic+"\nxlen 0x20\n") {
		t.Fatalf("written: %q", b.String())
	}
	sf, err := Read(strings.NewReader(b.String()), "s")
	if err != nil || sf.XLEN != 32 {
		t.Fatalf("read: XLEN %d, %v", sf.XLEN, err)
	}
	set := image.NewSet()
	if err := sf.Apply(set, nil); err != nil || set.XLEN() != 32 {
		t.Errorf("Apply: XLEN %d, %v", set.XLEN(), err)
	}
	set = image.NewSet()
	set.SetXLEN(64)
	if err := sf.Apply(set, nil); err != nil || set.XLEN() != 64 {
		t.Errorf("Apply under SetXLEN(64): XLEN %d, %v", set.XLEN(), err)
	}
	v2 := strings.Replace(b.String(), Magic+"\nxlen 0x20\n", MagicV2+"\n", 1)
	sf, err = Read(strings.NewReader(v2), "s")
	if err != nil || sf.XLEN != 0 || len(sf.Records) != 1 {
		t.Fatalf("version 2: XLEN %d, %d records, %v", sf.XLEN, len(sf.Records), err)
	}
}
