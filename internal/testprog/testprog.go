// Package testprog loads the test programs of examples/analysis for tests:
// the ELF and the PCs qemu executed for it (NAME.pcs.gz, made by
// examples/analysis/build.sh).
package testprog

import (
	"bufio"
	"compress/gzip"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/internal/corpus"
)

// Load returns the image of examples/analysis/NAME.elf and its executed
// PCs, failing the test on any error.
func Load(tb testing.TB, name string) (*image.Set, []uint64) {
	tb.Helper()
	dir := filepath.Join(corpus.Root(), "examples", "analysis")
	img := image.NewSet()
	if err := img.AddELF(filepath.Join(dir, name+".elf")); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, name+".pcs.gz"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	var pcs []uint64
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		v, err := strconv.ParseUint(sc.Text(), 16, 64)
		if err != nil {
			tb.Fatalf("%s.pcs.gz: %v", name, err)
		}
		pcs = append(pcs, v)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return img, pcs
}
