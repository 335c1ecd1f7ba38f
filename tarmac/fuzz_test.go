package tarmac

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/internal/corpus"
)

// FuzzReader feeds arbitrary text to the Reader and the Decoder (both
// outputs): they must never panic, and every error must be a
// *SyntaxError or an I/O error naming the input.
//
//	go test -run XXX -fuzz FuzzReader ./tarmac
func FuzzReader(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.tarmac")
	if d := corpus.Dir(); d != "" {
		// tarmac-trace-utilities' parser tests: one line per corner of
		// the grammar.
		files = append(files, filepath.Join(d, "tarmac", "parsertest.txt"), filepath.Join(d, "tarmac", "parsertest-implicit-thumb.txt"))
	}
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte("1 clk cpu0 IT (1) 0000000080000000 00000013 RV64 M : nop\n1 clk cpu0 E 0000000080000004 M 0000000000000000 80000007 Interrupt_MachineTimer\n"))
	f.Add([]byte("LD 00000000 ........ 12345678\nST 0 ..\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), "fuzz")
		for i := 0; i < 10000; i++ {
			if _, err := r.Next(); err == io.EOF {
				break
			}
		}
		d := NewDecoder(NewReader(bytes.NewReader(data), "fuzz"), Options{Lenient: true})
		var c flow.Counter
		if err := d.Flow(&c); err != nil {
			t.Fatalf("lenient decoder failed: %v", err)
		}
		d = NewDecoder(NewReader(bytes.NewReader(data), "fuzz"), Options{})
		for {
			_, err := d.Next()
			if err != nil {
				break
			}
		}
	})
}
