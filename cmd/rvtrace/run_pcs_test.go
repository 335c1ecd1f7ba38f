package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/corpus"
)

// tarmacInst matches an instruction line of run --tarmac-full: the cpu
// and the PC.
var tarmacInst = regexp.MustCompile(`^\d+ clk cpu(\d+) IT \(\d+\) ([0-9a-f]+) `)

// tarmacPCs reads the PCs of each cpu's instruction lines, and of all
// of them in the order of the file.
func tarmacPCs(t *testing.T, path string) (map[int][]string, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pcs := map[int][]string{}
	var all []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := tarmacInst.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		cpu, _ := strconv.Atoi(m[1])
		pc, err := strconv.ParseUint(m[2], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		pcs[cpu] = append(pcs[cpu], fmt.Sprintf("%#x", pc))
		all = append(all, pcs[cpu][len(pcs[cpu])-1])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return pcs, all
}

// readPCLines reads a PC list file as lines.
func readPCLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// firstDiff is the index of the first line where a and b differ.
func firstDiff(a, b []string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// TestRunPCsMatchTarmac checks the PC lists of run --pcs (the simulator
// hands them over in batches, without stopping at every instruction)
// against the instructions of run --tarmac-full (an observer of every
// retirement, another process), hart by hart with a {hart} name, on
// compressed code, RV32, an interrupt and exceptions, PMP, two and four
// harts, S-mode on the built-in SBI and Linux user mode; and the one-file
// list of several harts against the Tarmac's lines in their order (the
// harts' turns interleaved as they ran).
func TestRunPCsMatchTarmac(t *testing.T) {
	elf := func(name string) string { return corpus.Path(t, "ntrace-refcode/elf/"+name+".riscv") }
	cases := []struct {
		name  string
		args  []string
		harts int
	}{
		{"coremark", []string{"--max-instret", "300000", elf("coremark")}, 1},
		{"br_j_asm", []string{elf("br_j_asm")}, 1},
		{"pmp", []string{"--max-instret", "200000", elf("pmp")}, 1},
		{"embench-crc32-rv32", []string{"--max-instret", "200000", elf("embench-crc32")}, 1},
		{"mt-vvadd", []string{"--harts", "2", elf("mt-vvadd")}, 2},
		{"mt-matmul-4", []string{"--harts", "4", elf("mt-matmul")}, 4},
		{"pmutest-sbi", []string{"--machine", "sbi", "../../examples/pmu/pmutest.elf"}, 1},
		{"linux-printf", []string{"--linux", "../../examples/sim-tests/printf.elf"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prog := c.args[len(c.args)-1]
			if _, err := os.Stat(prog); err != nil {
				t.Skipf("%s absent: %v", prog, err)
			}
			dir := t.TempDir()
			run := func(extra ...string) {
				t.Helper()
				args := append(append([]string{"run", "-q"}, extra...), c.args...)
				code, _, e := rv(t, args...)
				if code != 0 && !strings.Contains(e, "instruction limit") {
					t.Fatalf("rvtrace %s: exit %d: %s", strings.Join(args, " "), code, e)
				}
			}
			run("--pcs", filepath.Join(dir, "p.{hart}.pcs"))
			run("--tarmac-full", filepath.Join(dir, "full.tarmac"))
			want, order := tarmacPCs(t, filepath.Join(dir, "full.tarmac"))
			if len(want) != c.harts {
				t.Fatalf("Tarmac of %d cpus, want %d", len(want), c.harts)
			}
			for h := range c.harts {
				got := readPCLines(t, filepath.Join(dir, fmt.Sprintf("p.%d.pcs", h)))
				if len(want[h]) == 0 || !slices.Equal(got, want[h]) {
					t.Fatalf("hart %d: %d PCs, Tarmac %d; first difference at line %d", h, len(got), len(want[h]), firstDiff(got, want[h])+1)
				}
			}
			if c.harts > 1 {
				run("--pcs", filepath.Join(dir, "one.pcs"))
				got := readPCLines(t, filepath.Join(dir, "one.pcs"))
				if !slices.Equal(got, order) {
					t.Fatalf("one file of %d harts: %d PCs, Tarmac %d; first difference at line %d", c.harts, len(got), len(order), firstDiff(got, order)+1)
				}
			}
			t.Logf("%d harts, %d PCs", c.harts, len(order))
		})
	}
}
