package analysis

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/ingress"
)

// TestSimulatorRunCallTree analyses the ingress blocks of a simulator run
// of calls.elf (the fixture of package tarmac) through BlockFlow: the
// call tree below main is the one calls.c defines, and the instruction
// count is the blocks'.
func TestSimulatorRunCallTree(t *testing.T) {
	img, _ := loadProgram(t, "calls")
	f, err := os.Open(filepath.Join("..", "tarmac", "testdata", "calls-sim.ingress.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	src, err := ingress.NewCSVSource(zr, "calls-sim.ingress.csv", ingress.CSVOptions{Halfwords: true})
	if err != nil {
		t.Fatal(err)
	}
	p := New(img, Options{})
	bf := NewBlockFlow(img, p)
	var halfwords uint64
	for {
		b, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		halfwords += uint64(b.IRetire)
		if err := bf.Block(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := bf.Close(); err != nil {
		t.Fatal(err)
	}
	// every instruction counted once: sizes add up to the halfwords
	var hw uint64
	for _, a := range p.AddrStats() {
		in, _ := img.Inst(a.Addr)
		hw += a.Insts * uint64(in.Len) / 2
	}
	if hw != halfwords {
		t.Errorf("profile covers %d halfwords, the blocks retired %d", hw, halfwords)
	}
	mains := findNodes(p, "main")
	if len(mains) != 1 {
		t.Fatalf("main appears %d times", len(mains))
	}
	user := map[string]bool{}
	for _, u := range userFuncs {
		user[u] = true
	}
	got := map[string]uint64{}
	var path []string
	walkTree(mains[0], func(n *Node, enter bool) {
		if !enter {
			path = path[:len(path)-1]
			return
		}
		path = append(path, n.Func.Name)
		for _, f := range path {
			if !user[f] {
				return
			}
		}
		got[strings.Join(path, ";")] += n.Calls
	})
	want := expectedTree()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d calls, want %d", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected call path %s", k)
		}
	}
}
