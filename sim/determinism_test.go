package sim

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"testing"
)

// multiHartRun runs a program on several harts and returns a fingerprint
// of everything observable: each hart's retired-PC stream and ingress
// blocks (hashed), its counters, the console output and the exit code.
func multiHartRun(t *testing.T, path string, cfg Config) string {
	t.Helper()
	var out bytes.Buffer
	cfg.Stdout, cfg.Stderr = &out, &out
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadELF(path); err != nil {
		t.Fatal(err)
	}
	pcs := make([]uint64, m.NumHarts())
	sinks := make([]*recordSink, m.NumHarts())
	for i := range pcs {
		h := fnv.New64a()
		var b [8]byte
		if err := m.SetPCHook(i, func(pc uint64) {
			for k := range b {
				b[k] = byte(pc >> (8 * k))
			}
			h.Write(b[:])
			pcs[i] = h.Sum64()
		}); err != nil {
			t.Fatal(err)
		}
		sinks[i] = &recordSink{}
		if err := m.SetIngress(i, sinks[i]); err != nil {
			t.Fatal(err)
		}
	}
	res, err := m.Run()
	if err != nil {
		t.Fatal(err)
	}
	fp := fmt.Sprintf("exit %d instret %d exit-instret %d out %q\n", res.ExitCode, res.Instret, res.ExitInstret, out.String())
	for i, hs := range res.Harts {
		h := fnv.New64a()
		for _, b := range sinks[i].blocks {
			fmt.Fprintf(h, "%+v", b)
		}
		fp += fmt.Sprintf("hart %d: %+v pcs %#x blocks %d %#x\n", i, hs, pcs[i], len(sinks[i].blocks), h.Sum64())
	}
	return fp
}

// TestMultiHartDeterminism: a multi-hart run is a function of the program
// and the configuration: two runs give the same PC streams, ingress
// blocks, counters and output, with Spike's quantum and with a small odd
// one that interleaves the harts finely.
func TestMultiHartDeterminism(t *testing.T) {
	dir := corpusOrSkip(t)
	for _, c := range []struct {
		name  string
		harts int
		q     int
	}{{"mt-matmul", 4, 0}, {"mt-vvadd", 2, 7}, {"mt-matmul", 3, 13}} {
		t.Run(fmt.Sprintf("%s-%dharts-q%d", c.name, c.harts, c.q), func(t *testing.T) {
			path := filepath.Join(dir, "elf", c.name+".riscv")
			cfg := Config{Harts: c.harts, Quantum: c.q, MaxInstret: 50e6}
			a := multiHartRun(t, path, cfg)
			b := multiHartRun(t, path, cfg)
			if a != b {
				t.Fatalf("two runs differ:\n%s\n%s", a, b)
			}
		})
	}
}
