package sim

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/ingress"
)

// recordSink keeps a copy of every block.
type recordSink struct {
	blocks []ingress.Block
	closed bool
}

func (r *recordSink) Block(b *ingress.Block) error {
	r.blocks = append(r.blocks, *b)
	return nil
}

func (r *recordSink) Close() error {
	r.closed = true
	return nil
}

// runTraced runs a corpus program with a recording sink on hart 0.
func runTraced(t *testing.T, path string, cfg Config) (*recordSink, Result) {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadELF(path); err != nil {
		t.Fatal(err)
	}
	rs := &recordSink{}
	if err := m.SetIngress(0, rs); err != nil {
		t.Fatal(err)
	}
	res, err := m.Run()
	if err != nil && !strings.Contains(err.Error(), "instruction limit") {
		t.Fatal(err)
	}
	if !rs.closed {
		t.Error("sink not closed")
	}
	return rs, res
}

// pcseqIType maps the reference's PCSEQ tags to 4-bit itypes.
var pcseqIType = map[string]ingress.IType{
	"L": 0, "B": 5, "BN": 4, "J": 11, "JI": 10, "C": 9, "CI": 8, "R": 13,
}

// TestIngressXrlePerInstruction checks the per-instruction blocks of xrle
// against the reference's PCSEQ file: address, size and type of each of
// the 164,959 instructions from main.
func TestIngressXrlePerInstruction(t *testing.T) {
	dir := corpusOrSkip(t)
	f, err := os.Open(filepath.Join(dir, "t1", "test-PCSEQ.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type rec struct {
		pc   uint64
		it   ingress.IType
		size int
	}
	var want []rec
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pcs, tag, ok := strings.Cut(sc.Text(), ",")
		if !ok {
			continue
		}
		pc, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(pcs), "0x"), 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		it, ok := pcseqIType[tag[:len(tag)-1]]
		if !ok {
			t.Fatalf("unknown tag %q", tag)
		}
		want = append(want, rec{pc, it, int(tag[len(tag)-1] - '0')})
	}
	rs, _ := runTraced(t, filepath.Join(dir, "elf", "xrle.riscv"), Config{Mode: PerInstruction, MaxInstret: 400000})
	i := 0
	for i < len(rs.blocks) && rs.blocks[i].IAddr != want[0].pc {
		i++
	}
	if len(rs.blocks)-i < len(want) {
		t.Fatalf("%d blocks from main, want at least %d", len(rs.blocks)-i, len(want))
	}
	for j, w := range want {
		b := rs.blocks[i+j]
		if b.IAddr != w.pc || b.IType != w.it || b.LastSize() != w.size || int(b.IRetire) != w.size/2 {
			t.Fatalf("instruction %d: block %+v, want pc %#x itype %v size %d", j, b, w.pc, w.it, w.size)
		}
		if b.Priv != ingress.PrivM {
			t.Fatalf("instruction %d: priv %v", j, b.Priv)
		}
	}
}

// TestIngressCoalescedMatchesPerInstruction checks that the coalesced
// blocks of a run are exactly the per-instruction blocks merged up to
// each non-zero itype: same instructions, same types, same times.
func TestIngressCoalescedMatchesPerInstruction(t *testing.T) {
	dir := corpusOrSkip(t)
	for _, name := range []string{"br_j_asm", "median", "embench-crc32"} {
		path := filepath.Join(dir, "elf", name+".riscv")
		cfg := Config{MaxInstret: 5_000_000, Timing: Timing{Load: 3, Mul: 4, Taken: 2}}
		per, _ := runTraced(t, path, Config{Mode: PerInstruction, MaxInstret: cfg.MaxInstret, Timing: cfg.Timing})
		co, _ := runTraced(t, path, cfg)
		k := 0
		for bi, b := range co.blocks {
			if b.IRetire == 0 {
				// a trap with nothing retired before it in the block
				p := per.blocks[k]
				if p.IRetire != 0 || p.IAddr != b.IAddr || p.IType != b.IType || p.Cause != b.Cause {
					t.Fatalf("%s: block %d %+v, per-instruction %+v", name, bi, b, p)
				}
				k++
				continue
			}
			if per.blocks[k].IAddr != b.IAddr {
				t.Fatalf("%s: block %d starts at %#x, instruction %d at %#x", name, bi, b.IAddr, k, per.blocks[k].IAddr)
			}
			var halfwords uint32
			for halfwords < b.IRetire {
				p := per.blocks[k]
				halfwords += p.IRetire
				last := halfwords == b.IRetire
				if !last && (p.IType != 0 || p.IAddr+uint64(p.IRetire)*2 != per.blocks[k+1].IAddr) {
					t.Fatalf("%s: block %d %+v merges instruction %+v", name, bi, b, p)
				}
				if last && (p.IType != b.IType || p.Time != b.Time || p.LastAddr() != b.LastAddr() ||
					p.ILastSize != b.ILastSize || p.Priv != b.Priv || p.Cause != b.Cause || p.TVal != b.TVal) {
					t.Fatalf("%s: block %d %+v ends with %+v", name, bi, b, p)
				}
				k++
			}
			if halfwords != b.IRetire {
				t.Fatalf("%s: block %d does not end on an instruction", name, bi)
			}
		}
		if k != len(per.blocks) {
			t.Fatalf("%s: coalesced blocks cover %d instructions of %d", name, k, len(per.blocks))
		}
	}
}

// TestIngressTraps checks the trap blocks of br_j_asm: a machine timer
// interrupt taken after csrs mstatus (ending that block), the mret, and an
// illegal instruction reached by an indirect jump (a separate block with
// nothing retired, at the faulting address).
func TestIngressTraps(t *testing.T) {
	dir := corpusOrSkip(t)
	rs, res := runTraced(t, filepath.Join(dir, "elf", "br_j_asm.riscv"), Config{})
	if res.ExitCode != 0 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	var intr, exc, mret []ingress.Block
	for _, b := range rs.blocks {
		switch b.IType {
		case ingress.ITypeInterrupt:
			intr = append(intr, b)
		case ingress.ITypeException:
			exc = append(exc, b)
		case ingress.ITypeTrapReturn:
			mret = append(mret, b)
		}
	}
	if len(intr) != 1 || len(exc) != 1 || len(mret) != 1 {
		t.Fatalf("%d interrupt, %d exception, %d trap-return blocks", len(intr), len(exc), len(mret))
	}
	// interrupt: after csrs mstatus,t2 (0x8000017c, 4 bytes)
	if b := intr[0]; b.LastAddr() != 0x8000017c || b.ILastSize != 1 || b.Cause != 7 || b.IRetire == 0 {
		t.Errorf("interrupt block %+v", b)
	}
	// mret at 0x8000020c
	if b := mret[0]; b.LastAddr() != 0x8000020c || b.Priv != ingress.PrivM {
		t.Errorf("mret block %+v", b)
	}
	// illegal instruction 0x0000 at bad_opcode (0x80000222), reached by jr t0
	if b := exc[0]; b.IRetire != 0 || b.IAddr != 0x80000222 || b.Cause != causeIllegal || b.TVal != 0 {
		t.Errorf("exception block %+v", b)
	}
	// the block before it ends with jr t0 at 0x8000010c: a return (13),
	// t0 being x5, a link register
	for i, b := range rs.blocks {
		if b.IType == ingress.ITypeException {
			if p := rs.blocks[i-1]; p.IType != ingress.ITypeReturn || p.LastAddr() != 0x8000010c {
				t.Errorf("block before the exception: %+v", p)
			}
			if n := rs.blocks[i+1]; n.IAddr != 0x800001b0 {
				t.Errorf("block after the exception starts at %#x, want mtvec 0x800001b0", n.IAddr)
			}
		}
	}
}

// TestIngressItypeTable checks the static itypes of jumps against the
// N-Trace table "Generating itype for different instructions".
func TestIngressItypeTable(t *testing.T) {
	jalr := func(rd, rs uint32) uint32 { return rs<<15 | rd<<7 | 0x67 }
	jal := func(rd uint32) uint32 { return 0x0100006f | rd<<7 }
	for _, tc := range []struct {
		raw  uint32
		want uint8
	}{
		{jal(1), 9}, {jal(5), 9}, {jal(0), 11}, {jal(7), 15},
		{jalr(1, 6), 8}, {jalr(1, 1), 8}, {jalr(5, 5), 8}, {jalr(1, 5), 12}, {jalr(5, 1), 12},
		{jalr(0, 1), 13}, {jalr(7, 5), 13}, {jalr(0, 6), 10}, {jalr(7, 6), 14},
		{0x2005, 9},  // c.jal (RV32)
		{0x9282, 12}, // c.jalr t0
		{0x9302, 8},  // c.jalr t1
		{0x8082, 13}, // c.jr ra (ret)
		{0x8282, 13}, // c.jr t0: x5 is a link register
		{0x8302, 10}, // c.jr t1
		{0xa001, 11}, // c.j
	} {
		d := decode(tc.raw, 32)
		if d.itype != tc.want {
			t.Errorf("%08x: itype %d, want %d", tc.raw, d.itype, tc.want)
		}
	}
}
