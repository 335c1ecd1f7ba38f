package sideband

import (
	"bytes"
	"crypto/sha256"
	"errors"
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

func (m *fakeMem) TranslationGen(int) uint64 { return m.gen }
func (m *fakeMem) BlockInstret(int) uint64   { return m.ret }

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
		{"rvtrace-sideband 3\n", `s:1: sideband version "3": this rvtrace reads versions 1 and 2`},
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
