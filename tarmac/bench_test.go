package tarmac

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/internal/corpus"
)

// tarmacText writes the calls program's run as Tarmac.
func tarmacText(b *testing.B, noDisasm bool) ([]byte, uint64) {
	img, pcs := loadCalls(b)
	blocks := simBlocks(b, img, pcs)
	var buf bytes.Buffer
	w := NewWriter(&buf, img, WriterOptions{NoDisasm: noDisasm})
	for i := range blocks {
		w.Block(&blocks[i])
	}
	w.Close()
	return buf.Bytes(), uint64(len(pcs))
}

// BenchmarkDecodeTarmac measures reading Tarmac into the flow:
//
//	go test -run XXX -bench Tarmac ./tarmac
func BenchmarkDecodeTarmac(b *testing.B) {
	text, n := tarmacText(b, false)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var c flow.Counter
		if err := NewDecoder(NewReader(bytes.NewReader(text), "b"), Options{}).Flow(&c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "insts/s")
}

// BenchmarkWriteTarmac measures writing Tarmac (with disassembly) from
// blocks, in the steady state of a long run (disassembly cached).
func BenchmarkWriteTarmac(b *testing.B) {
	img, pcs := loadCalls(b)
	blocks := simBlocks(b, img, pcs)
	w := NewWriter(io.Discard, img, WriterOptions{})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range blocks {
			w.Block(&blocks[j])
		}
	}
	w.Close()
	b.ReportMetric(float64(len(pcs))*float64(b.N)/b.Elapsed().Seconds(), "insts/s")
}

// BenchmarkReadArmTarmac measures reading a real Arm Tarmac trace (gem5's,
// from the corpus) record by record, and decoding it into the flow.
func BenchmarkReadArmTarmac(b *testing.B) {
	text, err := os.ReadFile(corpus.Path(b, "tarmac/calculator-aarch64-gem5.tarmac"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("records", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			r := NewReader(bytes.NewReader(text), "b")
			for {
				if _, err := r.Next(); err == io.EOF {
					break
				} else if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("flow", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			var c flow.Counter
			if err := NewDecoder(NewReader(bytes.NewReader(text), "b"), Options{}).Flow(&c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
