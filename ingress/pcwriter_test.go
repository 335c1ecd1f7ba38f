package ingress

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

// TestPCWriterFormat compares PCWriter's lines with fmt's %#x for every
// digit count (and the values around each boundary), every hex digit in
// every position, and random PCs, across many buffer flushes, written one
// at a time (Write) and in batches of random sizes (WritePCs).
func TestPCWriterFormat(t *testing.T) {
	var pcs []uint64
	for k := 0; k <= 64; k++ {
		v := uint64(1) << k // k = 64 gives 0
		pcs = append(pcs, v, v-1, v+1)
	}
	for pos := 0; pos < 64; pos += 4 {
		for d := uint64(0); d < 16; d++ {
			pcs = append(pcs, d<<pos, d<<pos|0x8000000000000000, ^(d << pos))
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for len(pcs) < 100_000 { // about 8 flushes of the 256 KiB buffer
		pcs = append(pcs, r.Uint64()>>r.IntN(64))
	}
	var want bytes.Buffer
	for _, pc := range pcs {
		fmt.Fprintf(&want, "%#x\n", pc)
	}
	for _, batch := range []bool{false, true} {
		var got bytes.Buffer
		w := NewPCWriter(&got)
		if batch {
			for rest := pcs; len(rest) > 0; {
				k := min(len(rest), r.IntN(20_000))
				if err := w.WritePCs(rest[:k]); err != nil {
					t.Fatal(err)
				}
				rest = rest[k:]
			}
		} else {
			for _, pc := range pcs {
				if err := w.Write(pc); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			a, b := got.Bytes(), want.Bytes()
			i := 0
			for i < len(a) && i < len(b) && a[i] == b[i] {
				i++
			}
			t.Fatalf("batch %v: PC list differs from fmt's at byte %d (%d and %d bytes)", batch, i, len(a), len(b))
		}
	}
}

type failWriter struct{ n int }

var errDiskFull = errors.New("disk full")

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errDiskFull
}

// TestPCWriterError checks that a failed write is reported by the next
// Write once the buffer fills and by every Flush, and that nothing more is
// written after it.
func TestPCWriterError(t *testing.T) {
	f := &failWriter{}
	w := NewPCWriter(f)
	var err error
	for i := 0; i < 100_000 && err == nil; i++ {
		err = w.Write(0x80000000)
	}
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("Write after the buffer filled: %v, want %v", err, errDiskFull)
	}
	if err := w.Write(0x80000000); !errors.Is(err, errDiskFull) {
		t.Fatalf("Write after an error: %v", err)
	}
	if err := w.Flush(); !errors.Is(err, errDiskFull) {
		t.Fatalf("Flush after an error: %v", err)
	}
	if f.n != 1 {
		t.Fatalf("%d writes reached the failing writer, want 1", f.n)
	}
}

// TestPCWriterBatchError checks that WritePCs reports a failed write and
// every later call, and that nothing more is written after it.
func TestPCWriterBatchError(t *testing.T) {
	f := &failWriter{}
	w := NewPCWriter(f)
	pcs := make([]uint64, 50_000) // more than the buffer holds
	for i := range pcs {
		pcs[i] = 0x80000000 + uint64(i)*2
	}
	if err := w.WritePCs(pcs); !errors.Is(err, errDiskFull) {
		t.Fatalf("WritePCs past the buffer: %v, want %v", err, errDiskFull)
	}
	if err := w.WritePCs(pcs[:1]); !errors.Is(err, errDiskFull) {
		t.Fatalf("WritePCs after an error: %v", err)
	}
	if err := w.Flush(); !errors.Is(err, errDiskFull) {
		t.Fatalf("Flush after an error: %v", err)
	}
	if f.n != 1 {
		t.Fatalf("%d writes reached the failing writer, want 1", f.n)
	}
}

// benchPCs is a PC list like a program's: 8-digit addresses, mostly
// straight lines of 2- and 4-byte instructions.
func benchPCs() []uint64 {
	r := rand.New(rand.NewPCG(3, 4))
	pcs := make([]uint64, 1<<16)
	pc := uint64(0x80000000)
	for i := range pcs {
		if r.IntN(6) == 0 {
			pc = 0x80000000 + uint64(r.IntN(1<<16))*2
		} else {
			pc += uint64(2 + 2*r.IntN(2))
		}
		pcs[i] = pc
	}
	return pcs
}

// BenchmarkPCWriter formats PC lines one Write at a time (to io.Discard).
func BenchmarkPCWriter(b *testing.B) {
	pcs := benchPCs()
	w := NewPCWriter(io.Discard)
	b.SetBytes(int64(len(pcs)))
	for b.Loop() {
		for _, pc := range pcs {
			w.Write(pc)
		}
	}
	w.Flush()
}

// BenchmarkPCWriterBatch formats the same lines with WritePCs.
func BenchmarkPCWriterBatch(b *testing.B) {
	pcs := benchPCs()
	w := NewPCWriter(io.Discard)
	b.SetBytes(int64(len(pcs)))
	for b.Loop() {
		w.WritePCs(pcs)
	}
	w.Flush()
}
