package image

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestSeparateDebugFile strips a program built with a GNU build ID and
// puts its debug information (objcopy --only-keep-debug) where Debian's
// -dbgsym packages install it, in usr/lib/debug/.build-id/XX/REST.debug
// of the tree that holds the program: loading the stripped program finds
// every function nm lists in the unstripped one, at nm's address, and the
// same source lines. Without the debug file the stripped program has no
// symbols; a debug file of another build (another build ID) is an error
// naming it.
func TestSeparateDebugFile(t *testing.T) {
	objcopy, nm, readelf := binutil(t, "objcopy"), binutil(t, "nm"), binutil(t, "readelf")
	prog := compileC(t, "-Wl,--build-id=sha1")
	if prog == "" {
		t.Skip("riscv64-linux-gnu-gcc not installed")
	}
	m := regexp.MustCompile(`Build ID: ([0-9a-f]+)`).FindStringSubmatch(run(t, readelf, "-n", prog))
	if m == nil {
		t.Fatal("readelf -n shows no build ID")
	}
	id := m[1]
	root := t.TempDir()
	bin := filepath.Join(root, "usr", "bin", "prog")
	dbg := filepath.Join(root, "usr", "lib", "debug", ".build-id", id[:2], id[2:]+".debug")
	for _, d := range []string{filepath.Dir(bin), filepath.Dir(dbg)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run(t, objcopy, "--only-keep-debug", prog, dbg)
	run(t, objcopy, "--strip-all", prog, bin)

	s := NewSet()
	if err := s.AddELF(bin); err != nil {
		t.Fatal(err)
	}
	full := NewSet()
	if err := full.AddELF(prog); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(run(t, nm, prog), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || (f[1] != "T" && f[1] != "t") || strings.Contains(f[2], ".") {
			continue
		}
		addr, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		name, off, ok := s.Symbolize(addr)
		if !ok || off != 0 {
			t.Errorf("%s at %#x (nm): Symbolize gives %q+%#x, %v", f[2], addr, name, off, ok)
			continue
		}
		if wn, _, _ := full.Symbolize(addr); name != wn {
			t.Errorf("%#x: %q from the debug file, %q from the unstripped program", addr, name, wn)
		}
		gf, gl, gok := s.Line(addr)
		wf, wl, wok := full.Line(addr)
		if gf != wf || gl != wl || gok != wok {
			t.Errorf("%s: line %s:%d %v from the debug file, %s:%d %v unstripped", f[2], gf, gl, gok, wf, wl, wok)
		}
		n++
	}
	if n < 100 {
		t.Fatalf("only %d functions compared", n)
	}
	t.Logf("%d functions of nm found through the debug file", n)
	if a, ok := s.Lookup("main"); !ok || a == 0 {
		t.Errorf("Lookup(main) = %#x, %v", a, ok)
	}

	// Without the debug file: no symbols.
	if err := os.Rename(dbg, dbg+".away"); err != nil {
		t.Fatal(err)
	}
	bare := NewSet()
	if err := bare.AddELF(bin); err != nil {
		t.Fatal(err)
	}
	if _, ok := bare.Lookup("main"); ok {
		t.Error("the stripped program has symbols without its debug file")
	}
	// A debug file of another build.
	other := compileC(t, "-Wl,--build-id=sha1", "-O2")
	run(t, objcopy, "--only-keep-debug", other, dbg)
	wrong := NewSet()
	if err := wrong.AddELF(bin); err == nil || !strings.Contains(err.Error(), dbg) || !strings.Contains(err.Error(), "build ID") {
		t.Errorf("debug file of another build: %v", err)
	}
}
