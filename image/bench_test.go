package image

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// benchSet loads coremark (RV64GC) from the corpus, or, without the
// corpus, 64 KiB of compressed and 32-bit nops ending in returns, and
// returns it with the address of every instruction in its executable
// segments.
func benchSet(b *testing.B) (*Set, []uint64) {
	b.Helper()
	s := NewSet()
	path := filepath.Join(corpusPath(), "elf", "coremark.riscv")
	if _, err := os.Stat(path); err == nil {
		if err := s.AddELF(path); err != nil {
			b.Fatal(err)
		}
	} else {
		rng := rand.New(rand.NewPCG(3, 4))
		var prog []uint32
		for len(prog) < 24<<10 {
			switch rng.IntN(8) {
			case 0:
				prog = append(prog, cret)
			case 1, 2, 3:
				prog = append(prog, cnop)
			default:
				prog = append(prog, nop)
			}
		}
		s.AddBytes("synthetic", 0x8000_0000, code(prog...))
	}
	var addrs []uint64
	for _, sg := range s.Segments() {
		if !sg.Exec {
			continue
		}
		for a := sg.Addr; a < sg.Addr+sg.FileSize; {
			in, ok := s.Inst(a)
			if !ok || in.Len == 0 {
				break
			}
			addrs = append(addrs, a)
			a += uint64(in.Len)
		}
	}
	// Shuffle, so that lookups jump around as a decoder's do.
	rand.New(rand.NewPCG(5, 6)).Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	return s, addrs
}

func BenchmarkInst(b *testing.B) {
	s, addrs := benchSet(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.Inst(addrs[i])
		if i++; i == len(addrs) {
			i = 0
		}
	}
}

func BenchmarkInstPtr(b *testing.B) {
	s, addrs := benchSet(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.InstPtr(addrs[i])
		if i++; i == len(addrs) {
			i = 0
		}
	}
}

func BenchmarkInstParallel(b *testing.B) {
	s, addrs := benchSet(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			s.Inst(addrs[i])
			if i++; i == len(addrs) {
				i = 0
			}
		}
	})
}

func BenchmarkRun(b *testing.B) {
	s, addrs := benchSet(b)
	for _, a := range addrs {
		s.Run(a)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.Run(addrs[i])
		if i++; i == len(addrs) {
			i = 0
		}
	}
}

func BenchmarkRunParallel(b *testing.B) {
	s, addrs := benchSet(b)
	for _, a := range addrs {
		s.Run(a)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			s.Run(addrs[i])
			if i++; i == len(addrs) {
				i = 0
			}
		}
	})
}

// BenchmarkRunCold is the cost of the first Run from every instruction of
// the program, with no page decoded yet: ns/op is per program.
func BenchmarkRunCold(b *testing.B) {
	s, addrs := benchSet(b)
	b.ReportAllocs()
	for b.Loop() {
		s.resetCaches()
		for _, a := range addrs {
			s.Run(a)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(addrs)), "ns/run")
}

// BenchmarkPageBuild is the cost of decoding one 4 KiB page.
func BenchmarkPageBuild(b *testing.B) {
	s, addrs := benchSet(b)
	b.ReportAllocs()
	for b.Loop() {
		s.resetCaches()
		s.Inst(addrs[0])
	}
}

func BenchmarkSymbolize(b *testing.B) {
	s, addrs := benchSet(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.Symbolize(addrs[i])
		if i++; i == len(addrs) {
			i = 0
		}
	}
}

func BenchmarkLine(b *testing.B) {
	path := filepath.Join(corpusPath(), "t1", "test.elf")
	if _, err := os.Stat(path); err != nil {
		b.Skip("corpus absent")
	}
	s := NewSet()
	if err := s.AddELF(path); err != nil {
		b.Fatal(err)
	}
	if _, _, ok := s.Line(0x20010188); !ok {
		b.Fatal("no line information")
	}
	b.ReportAllocs()
	a := uint64(0x20010188)
	for b.Loop() {
		s.Line(a)
		if a += 2; a >= 0x200107ac {
			a = 0x20010188
		}
	}
}

func BenchmarkAddELF(b *testing.B) {
	path := filepath.Join(corpusPath(), "elf", "coremark.riscv")
	if _, err := os.Stat(path); err != nil {
		b.Skip("corpus absent")
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := NewSet().AddELF(path); err != nil {
			b.Fatal(err)
		}
	}
}
