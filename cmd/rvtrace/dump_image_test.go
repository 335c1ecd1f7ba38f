package main

import (
	"debug/elf"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// dump --image names the function of every full address of the N-Trace
// listing, and of every address of the E-Trace listing (made absolute);
// each name+offset is the address by the ELF's own symbol table.
// --bytes and E-Trace's --to-csv refuse --image.
func TestCLIDumpImageSymbols(t *testing.T) {
	prog := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	nex, ete := filepath.Join(dir, "d.nex"), filepath.Join(dir, "d.ete")
	for _, r := range [][]string{{"ntrace", nex}, {"etrace", ete}} {
		if code, _, e := rv(t, "run", "-q", "--trace", r[0], "-o", r[1], prog); code != 0 {
			t.Fatalf("run --trace %s: %s", r[0], e)
		}
	}
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := f.Symbols()
	f.Close()
	addrOf := map[string]uint64{}
	for _, s := range syms {
		addrOf[s.Name] = s.Value
	}
	code, out, e := rv(t, "dump", "--image", prog, nex)
	if code != 0 {
		t.Fatalf("dump --image: exit %d: %s", code, e)
	}
	re := regexp.MustCompile(`[FU]-ADDR=0x[0-9a-f]+ \[(0x[0-9a-f]+) <([^>+]+)(?:\+(0x[0-9a-f]+))?>\]`)
	n := 0
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		a, _ := strconv.ParseUint(m[1], 0, 64)
		var off uint64
		if m[3] != "" {
			off, _ = strconv.ParseUint(m[3], 0, 64)
		}
		base, ok := addrOf[m[2]]
		if !ok || base+off != a {
			t.Errorf("%s named %s+%#x; the symbol table puts %s at %#x", m[1], m[2], off, m[2], base)
		}
		n++
	}
	if n < 10 || strings.Count(out, "ADDR=") != n {
		t.Errorf("%d of %d address fields named", n, strings.Count(out, "ADDR="))
	}
	// without --image the listing is unchanged
	_, plain, _ := rv(t, "dump", nex)
	if strings.Contains(plain, " <") || regexp.MustCompile(` <[^>]*>\]`).ReplaceAllString(out, "]") != plain {
		t.Errorf("--image changed more than the names")
	}
	// E-Trace: every address a packet gives, made absolute.
	code, out, e = rv(t, "dump", "--image", prog, ete)
	if code != 0 {
		t.Fatalf("E-Trace dump --image: exit %d: %s", code, e)
	}
	reE := regexp.MustCompile(`address=0x[0-9a-f]+ \[(0x[0-9a-f]+) <([^>+]+)(?:\+(0x[0-9a-f]+))?>\]`)
	n = 0
	for _, m := range reE.FindAllStringSubmatch(out, -1) {
		a, _ := strconv.ParseUint(m[1], 0, 64)
		var off uint64
		if m[3] != "" {
			off, _ = strconv.ParseUint(m[3], 0, 64)
		}
		if base, ok := addrOf[m[2]]; !ok || base+off != a {
			t.Errorf("E-Trace: %s named %s+%#x; the symbol table puts %s at %#x", m[1], m[2], off, m[2], base)
		}
		n++
	}
	if n < 10 || strings.Count(out, "address=") != n {
		t.Errorf("E-Trace: %d of %d address fields named", n, strings.Count(out, "address="))
	}
	if code, _, e := rv(t, "dump", "--to-csv", "--image", prog, ete); code == 0 || !strings.Contains(e, "CSV") {
		t.Errorf("E-Trace dump --to-csv --image: exit %d, %q", code, e)
	}
	if code, _, e := rv(t, "dump", "--bytes", "--image", prog, nex); code == 0 || !strings.Contains(e, "--bytes") {
		t.Errorf("dump --bytes --image: exit %d, %q", code, e)
	}
}
