package sim

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/tarmac"
)

// The Tarmac writer is a simulator observer.
var _ Observer = (*tarmac.Writer)(nil)

// TestTarmacFull runs corpus programs with a Tarmac writer attached and
// checks the trace against the simulator: as many IT records as retired
// instructions, the last R record of every integer register equal to the
// final register file, MR/MW records present, and the file read back by
// tarmac.Reader.
func TestTarmacFull(t *testing.T) {
	dir := corpusOrSkip(t)
	for _, name := range []string{"median.riscv", "qsort.riscv", "pmp.riscv"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, "elf", name)
			m, err := New(Config{})
			if err != nil {
				t.Fatal(err)
			}
			if err := m.LoadELF(path); err != nil {
				t.Fatal(err)
			}
			img := image.NewSet()
			if err := img.AddELF(path); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			w := tarmac.NewWriter(&buf, img, tarmac.WriterOptions{})
			if err := m.SetObserver(0, w); err != nil {
				t.Fatal(err)
			}
			res, err := m.Run()
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			// an untraced run retires the same instructions
			ref, err := RunELF(path, Config{})
			if err != nil || ref.Instret != res.Instret {
				t.Fatalf("untraced run: %d instructions (%v), traced %d", ref.Instret, err, res.Instret)
			}
			r := tarmac.NewReader(&buf, name)
			var insts, mems, traps uint64
			last := map[string]uint64{}
			for {
				rec, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				switch rec.Kind {
				case tarmac.KindInst:
					insts++
				case tarmac.KindReg:
					last[rec.Reg] = rec.Value
				case tarmac.KindMem:
					mems++
				case tarmac.KindEvent:
					traps++
				}
			}
			if insts != res.Instret {
				t.Errorf("%d IT records, %d instructions retired", insts, res.Instret)
			}
			if mems == 0 {
				t.Error("no MR/MW records")
			}
			if strings.HasPrefix(name, "pmp") && traps == 0 {
				t.Error("no E records")
			}
			h := m.Hart(0)
			checked := 0
			for i := 1; i < 32; i++ {
				n := tarmac.Reg(i).String()
				v, ok := last[n]
				if !ok {
					continue
				}
				checked++
				if v != h.Reg(i) {
					t.Errorf("%s: last R record %#x, register file %#x", n, v, h.Reg(i))
				}
			}
			if checked < 10 {
				t.Errorf("only %d registers written in the trace", checked)
			}
			t.Logf("%d instructions, %d memory records, %d events, %d registers checked", insts, mems, traps, checked)
		})
	}
}
