package sim

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/ntrace"
	"github.com/rvtrace/rvtrace/riscv"
)

// The Zcmp/Zcmt program of examples/sim-tests/zcmp (built for RV32 and
// RV64 by scripts/build-zcmp-tests.sh): it checks every register and
// memory word push, pop, popret, popretz, the double moves and the table
// jumps leave against values computed by hand from the specification's
// pseudo-code, and faults in the middle of a push, a pop and a table
// jump. Its exit code is the number of the first failing check.
const zcmpDir = "../examples/sim-tests/zcmp"

func zcmpELF(xlen int) string { return filepath.Join(zcmpDir, fmt.Sprintf("zcmp%d.elf", xlen)) }

func TestZcmpProgram(t *testing.T) {
	for _, xlen := range []int{32, 64} {
		res, err := RunELF(zcmpELF(xlen), Config{MaxInstret: 1e5})
		if err != nil {
			t.Fatalf("RV%d: %v", xlen, err)
		}
		if res.ExitCode != 0 {
			t.Errorf("RV%d: check %d of zcmp.S failed (100+ means an unexpected trap with mcause = code-100)", xlen, res.ExitCode)
		}
	}
}

// TestZcmpArch: the ISA string chooses what c.fsdsp's encodings are. The
// program's Tag_RISCV_arch names Zcmp and Zcmt; told the hart is rv32imac
// (Zca without Zcd, Zcmp or Zcmt), its first cm.push is an illegal
// instruction; an ISA of the other XLEN is refused.
func TestZcmpArch(t *testing.T) {
	f, err := elf.Open(zcmpELF(32))
	if err != nil {
		t.Fatal(err)
	}
	arch, err := riscv.ELFArch(f)
	f.Close()
	if err != nil || arch != "rv32i2p1_m2p0_zicsr2p0_zmmul1p0_zca1p0_zcmp1p0_zcmt1p0" {
		t.Fatalf("Tag_RISCV_arch %q, %v", arch, err)
	}
	res, err := RunELF(zcmpELF(32), Config{MaxInstret: 1e5, Arch: "rv32imac"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 100+causeIllegal {
		t.Errorf("rv32imac: exit code %d, want %d (an illegal instruction)", res.ExitCode, 100+causeIllegal)
	}
	res, err = RunELF(zcmpELF(32), Config{MaxInstret: 1e5, Arch: "rv32imac_zcmp_zcmt"})
	if err != nil || res.ExitCode != 0 {
		t.Errorf("rv32imac_zcmp_zcmt: exit code %d, %v", res.ExitCode, err)
	}
	if _, err := RunELF(zcmpELF(32), Config{MaxInstret: 1e5, Arch: "rv64gc"}); err == nil || !strings.Contains(err.Error(), "RV64") {
		t.Errorf("rv64gc for an RV32 program: %v", err)
	}
}

// zcmDecodeExt is what the riscv package decodes for a hart with zc.
func zcmDecodeExt(zc zcSet) riscv.Ext {
	return riscv.ExtC | riscv.ExtD | riscv.ExtF | zc.ext()
}

// TestZcmDecode compares the simulator's decoding of every encoding of
// c.fsdsp's space (quadrant 2, funct3 101) with the riscv package's (whose
// Zcmp and Zcmt decoding and disassembly are checked against LLVM): the
// same ones are legal, table jumps have the same index, and push and pop
// the stack_adj of the disassembly.
func TestZcmDecode(t *testing.T) {
	for _, xlen := range []int{32, 64} {
		for _, zc := range []zcSet{0, zcZcmp | zcNoZcd, zcZcmt | zcNoZcd, zcZcmp | zcZcmt | zcNoZcd} {
			ext := zcmDecodeExt(zc)
			for bits := uint32(0); bits < 1<<11; bits++ {
				raw := 0xa002 | bits<<2
				d := decodeZc(raw, xlen, zc)
				in := riscv.DecodeExt(raw, xlen, ext)
				text := riscv.DisasmExt(raw, 0, xlen, ext)
				legal := d.op != opIllegal
				if d.op == opFSD {
					legal = true
				}
				if legal != (in.Class != riscv.ClassIllegal) {
					t.Fatalf("RV%d %v: %#04x (%s): op %d, riscv class %v", xlen, zc, raw, text, d.op, in.Class)
				}
				switch d.op {
				case opCMJT, opCMJALT:
					if uint8(d.imm) != in.Index || ingress.IType(d.itype) != ingress.ITypeOf(in, true) {
						t.Fatalf("%#04x (%s): index %d, itype %d", raw, text, d.imm, d.itype)
					}
				case opCMPOPRET, opCMPOPRETZ:
					if ingress.IType(d.itype) != ingress.ITypeOf(in, true) {
						t.Fatalf("%#04x (%s): itype %d", raw, text, d.itype)
					}
					fallthrough
				case opCMPUSH, opCMPOP:
					adj, err := strconv.Atoi(text[strings.LastIndexByte(text, ',')+1:])
					if err != nil || int64(adj) != d.imm && int64(-adj) != d.imm {
						t.Fatalf("%#04x (%s): stack_adj %d", raw, text, d.imm)
					}
				case opCMMVSA01, opCMMVA01S:
					if !strings.HasSuffix(text, riscv.XReg(d.rs1)+","+riscv.XReg(d.rs2)) {
						t.Fatalf("%#04x (%s): registers x%d, x%d", raw, text, d.rs1, d.rs2)
					}
				}
			}
		}
	}
}

// zcmModel checks, instruction by instruction, what the hart reports to
// its observer for the Zcmp and Zcmt instructions against the
// specification's pseudo-code, applied to a shadow copy of the registers
// (from the register writes reported) and of memory (the stores
// reported, over the ELF file's contents).
type zcmModel struct {
	t    *testing.T
	xlen int
	mem  map[uint64]byte
	x    [32]uint64
	jvt  uint64

	pc, raw uint32
	have    bool
	regs    [][2]uint64 // register writes of the instruction: number, value
	mems    []memRec
	next    uint64 // expected pc of the next instruction (0: any)

	counts map[string]int
	traps  []string
}

// The register lists of push and pop (specification: "xreg_list" by
// rlist, accessed "for(i in 27,26,25,24,23,22,21,20,19,18,9,8,1)") and
// stack_adj_base by rlist for RV32 and RV64, as the specification's
// tables give them.
var (
	specOrder    = []uint64{27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 9, 8, 1}
	specListLen  = [16]int{4: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13}
	specAdjBase  = map[int][16]uint64{32: {4: 16, 16, 16, 16, 32, 32, 32, 32, 48, 48, 48, 64}, 64: {4: 16, 16, 32, 32, 48, 48, 64, 64, 80, 80, 96, 112}}
	specPushList = func(rlist uint32) []uint64 {
		n := specListLen[rlist]
		return specOrder[len(specOrder)-n:]
	}
)

// specSreg is the register of the s-register specifier in the low 3 bits
// of r: xreg = {r[2:1]>0, r[2:1]==0, r[2:0]} (specification, cm.mvsa01).
func specSreg(r uint32) uint64 {
	r &= 7
	x := uint64(r)
	if r>>1 > 0 {
		x |= 16
	} else {
		x |= 8
	}
	return x
}

func (z *zcmModel) load(a uint64, n int) uint64 {
	var v uint64
	for i := 0; i < n; i++ {
		v |= uint64(z.mem[a+uint64(i)]) << (8 * i)
	}
	return v
}

// norm is v as the observer reports registers: XLEN bits.
func (z *zcmModel) norm(v uint64) uint64 {
	if z.xlen == 32 {
		return uint64(uint32(v))
	}
	return v
}

// check verifies the instruction reported last and applies its effects.
func (z *zcmModel) check() {
	t := z.t
	if !z.have {
		return
	}
	z.have = false
	b := uint64(z.xlen / 8)
	in := riscv.DecodeExt(z.raw, z.xlen, riscv.ExtC|riscv.ExtZcmp|riscv.ExtZcmt)
	name := in.Op.String()
	var wantRegs [][2]uint64
	var wantMems []memRec
	next := uint64(0)
	x := z.x
	rlist, spimm := z.raw>>4&15, uint64(z.raw>>2&3)
	switch name {
	case "cm.push":
		adj := specAdjBase[z.xlen][rlist] + spimm*16
		addr := x[2] - b
		for _, r := range specPushList(rlist) {
			wantMems = append(wantMems, memRec{write: true, addr: addr & (1<<z.xlen - 1), val: x[r] & (1<<(8*b) - 1), size: int(b)})
			addr -= b
		}
		wantRegs = [][2]uint64{{2, z.norm(x[2] - adj)}}
	case "cm.pop", "cm.popret", "cm.popretz":
		adj := specAdjBase[z.xlen][rlist] + spimm*16
		addr := x[2] + adj - b
		var ra uint64
		for _, r := range specPushList(rlist) {
			v := z.load(addr, int(b))
			wantMems = append(wantMems, memRec{addr: addr, val: v, size: int(b)})
			wantRegs = append(wantRegs, [2]uint64{r, z.norm(v)})
			if r == 1 {
				ra = z.norm(v)
			}
			addr -= b
		}
		wantRegs = append(wantRegs, [2]uint64{2, z.norm(x[2] + adj)})
		if name == "cm.popretz" {
			wantRegs = append(wantRegs, [2]uint64{10, 0})
		}
		if name != "cm.pop" {
			next = ra &^ 1
		}
	case "cm.mvsa01":
		wantRegs = [][2]uint64{{specSreg(z.raw >> 7), x[10]}, {specSreg(z.raw >> 2), x[11]}}
	case "cm.mva01s":
		wantRegs = [][2]uint64{{10, x[specSreg(z.raw>>7)]}, {11, x[specSreg(z.raw>>2)]}}
	case "cm.jt", "cm.jalt":
		next = z.load(z.jvt&^63+uint64(in.Index)*b, int(b)) &^ 1
		if name == "cm.jalt" {
			wantRegs = [][2]uint64{{1, z.norm(uint64(z.pc) + 2)}}
		}
	}
	if strings.HasPrefix(name, "cm.") {
		z.counts[name]++
		if fmt.Sprint(z.regs) != fmt.Sprint(wantRegs) {
			t.Errorf("%#x %s: registers written %x, want %x", z.pc, riscv.DisasmExt(z.raw, uint64(z.pc), z.xlen, riscv.ExtC|riscv.ExtZcmp|riscv.ExtZcmt), z.regs, wantRegs)
		}
		if fmt.Sprint(z.mems) != fmt.Sprint(wantMems) {
			t.Errorf("%#x %s: accesses %+v, want %+v", z.pc, name, z.mems, wantMems)
		}
	}
	for _, r := range z.regs {
		z.x[r[0]] = r[1]
	}
	for _, m := range z.mems {
		if m.write {
			for i := 0; i < m.size; i++ {
				z.mem[m.addr+uint64(i)] = byte(m.val >> (8 * i))
			}
		}
	}
	z.next = next
	z.regs, z.mems = z.regs[:0], z.mems[:0]
}

func (z *zcmModel) Inst(hart int, time uint64, pc uint64, raw uint32, priv ingress.Priv) error {
	z.check()
	if z.next != 0 && pc != z.next {
		z.t.Errorf("the instruction after the jump at %#x is at %#x, want %#x", z.pc, pc, z.next)
	}
	z.pc, z.raw, z.have, z.next = uint32(pc), raw, true, 0
	return nil
}
func (z *zcmModel) IntReg(hart int, n int, v uint64) error {
	z.regs = append(z.regs, [2]uint64{uint64(n), v})
	return nil
}
func (z *zcmModel) FPReg(hart int, n int, v uint64) error { return nil }
func (z *zcmModel) CSR(hart int, n uint16, v uint64) error {
	if n == csrJvt {
		z.jvt = v
	}
	return nil
}
func (z *zcmModel) Mem(hart int, write bool, addr uint64, size int, v uint64) error {
	z.mems = append(z.mems, memRec{write: write, addr: addr, val: v, size: size})
	return nil
}
func (z *zcmModel) Trap(hart int, time uint64, priv ingress.Priv, intr bool, cause, epc, tval uint64) error {
	z.check()
	z.next = 0
	z.traps = append(z.traps, fmt.Sprintf("cause %d at %#x tval %#x", cause, epc, tval))
	return nil
}

// TestZcmpObserved runs the program with an observer that checks the
// register writes, memory accesses and next pc of every Zcmp and Zcmt
// instruction against the specification's pseudo-code (zcmModel): one
// access per register, in the pseudo-code's order, and none of the
// attempts that trapped (a push whose third store faults, a pop whose
// second load faults, a table jump whose entry faults).
func TestZcmpObserved(t *testing.T) {
	for _, xlen := range []int{32, 64} {
		t.Run(fmt.Sprintf("RV%d", xlen), func(t *testing.T) {
			z := &zcmModel{t: t, xlen: xlen, mem: map[uint64]byte{}, counts: map[string]int{}}
			f, err := elf.Open(zcmpELF(xlen))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range f.Progs {
				data := make([]byte, p.Filesz)
				if _, err := p.ReadAt(data, 0); err != nil {
					t.Fatal(err)
				}
				for i, c := range data {
					z.mem[p.Vaddr+uint64(i)] = c
				}
			}
			f.Close()
			m, err := New(Config{MaxInstret: 1e5})
			if err != nil {
				t.Fatal(err)
			}
			if err := m.LoadELF(zcmpELF(xlen)); err != nil {
				t.Fatal(err)
			}
			if err := m.SetObserver(0, z); err != nil {
				t.Fatal(err)
			}
			res, err := m.Run()
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("exit code %d, %v", res.ExitCode, err)
			}
			z.check()
			want := map[string]int{"cm.push": 4, "cm.pop": 2, "cm.popret": 1, "cm.popretz": 1,
				"cm.mvsa01": 2, "cm.mva01s": 2, "cm.jt": 3, "cm.jalt": 2}
			if fmt.Sprint(z.counts) != fmt.Sprint(want) {
				t.Errorf("retired %v, want %v", z.counts, want)
			}
			b := uint64(xlen / 8)
			wantTraps := []string{
				fmt.Sprintf("cause %d at %#x tval %#x", causeStoreAccess, sym(t, zcmpELF(xlen), "push_fault"), 0x20000000-b),
				fmt.Sprintf("cause %d at %#x tval %#x", causeLoadAccess, sym(t, zcmpELF(xlen), "pop_fault"), 0x20000000-b),
				fmt.Sprintf("cause %d at %#x tval %#x", causeFetchAccess, sym(t, zcmpELF(xlen), "jt_fault"), 0x7ffff000+2*b),
			}
			if fmt.Sprint(z.traps) != fmt.Sprint(wantTraps) {
				t.Errorf("traps %q, want %q", z.traps, wantTraps)
			}
		})
	}
}

// sym returns the address of a symbol of an ELF file.
func sym(t *testing.T, path, name string) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("%s: no symbol %s", path, name)
	return 0
}

// TestZcmpTrace: the program's N-Trace (several modes, with implicit
// returns through cm.popret) and E-Trace decode to exactly the PCs the
// hart retired. cm.popret and cm.popretz are returns (itype 13) and
// cm.jt and cm.jalt direct jumps and calls (itype 11 and 9: N-Trace's
// table "Generating itype for different instructions"; its decoder reads
// the jump table, the E-Trace encoder and decoder treat them as
// uninferable).
func TestZcmpTrace(t *testing.T) {
	for _, xlen := range []int{32, 64} {
		img := image.NewSet()
		if err := img.AddELF(zcmpELF(xlen)); err != nil {
			t.Fatal(err)
		}
		jvt, ok := img.Lookup("__jvt_base$")
		if !ok {
			t.Fatal("no __jvt_base$")
		}
		run := func(sink ingress.Sink) []uint64 {
			m, err := New(Config{MaxInstret: 1e5})
			if err != nil {
				t.Fatal(err)
			}
			if err := m.LoadELF(zcmpELF(xlen)); err != nil {
				t.Fatal(err)
			}
			var pcs []uint64
			if err := m.SetPCHook(0, func(pc uint64) { pcs = append(pcs, pc) }); err != nil {
				t.Fatal(err)
			}
			if err := m.SetIngress(0, sink); err != nil {
				t.Fatal(err)
			}
			if res, err := m.Run(); err != nil || res.ExitCode != 0 {
				t.Fatalf("RV%d: exit code %d, %v", xlen, res.ExitCode, err)
			}
			if err := sink.Close(); err != nil {
				t.Fatal(err)
			}
			return pcs
		}
		for _, preset := range []string{"btm", "htm", "ref-htm-cs8", "best"} {
			cfg := ntrace.Presets[preset]
			cfg.XLEN = xlen
			var buf bytes.Buffer
			enc, err := ntrace.NewEncoder(&buf, cfg)
			if err != nil {
				t.Fatal(err)
			}
			pcs := run(enc)
			dc := ntrace.DecoderConfigFrom(cfg)
			dc.JVT = jvt
			got := &pcList{img: img}
			d, err := ntrace.NewDecoder(img, got, dc)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Decode(bytes.NewReader(buf.Bytes())); err != nil {
				t.Fatal(err)
			}
			if got.gaps != 0 || !equal(got.pcs, pcs) {
				t.Errorf("RV%d N-Trace %s: decoded %d PCs with %d gaps, want the %d executed", xlen, preset, len(got.pcs), got.gaps, len(pcs))
			}
		}
		for _, ir := range []bool{false, true} {
			cfg := etrace.DefaultConfig()
			cfg.Options.ImplicitReturn = ir
			var buf bytes.Buffer
			enc, err := etrace.NewEncoder(&buf, cfg, img)
			if err != nil {
				t.Fatal(err)
			}
			pcs := run(enc)
			got := &pcList{img: img}
			d, err := etrace.NewDecoder(img, got, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Decode(bytes.NewReader(buf.Bytes())); err != nil {
				t.Fatal(err)
			}
			if got.gaps != 0 || !equal(got.pcs, pcs) {
				t.Errorf("RV%d E-Trace (implicit return %v): decoded %d PCs with %d gaps, want the %d executed", xlen, ir, len(got.pcs), got.gaps, len(pcs))
			}
		}
	}
}

// blockList collects ingress blocks.
type blockList struct{ b []ingress.Block }

func (l *blockList) Block(b *ingress.Block) error { l.b = append(l.b, *b); return nil }
func (l *blockList) Close() error                 { return nil }

// TestZcmpIngress: the hart's ingress blocks for the program are the ones
// the PC-list ingress source (ingress.PCSource: riscv's decoding and
// ingress.ITypeOf) makes from the PCs it retired and its image: the same
// block boundaries and itypes (cm.popret 13, cm.jt 11, cm.jalt 9), but at
// the traps, whose blocks the PC list cannot tell apart from jumps.
func TestZcmpIngress(t *testing.T) {
	for _, xlen := range []int{32, 64} {
		img := image.NewSet()
		if err := img.AddELF(zcmpELF(xlen)); err != nil {
			t.Fatal(err)
		}
		m, err := New(Config{MaxInstret: 1e5})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.LoadELF(zcmpELF(xlen)); err != nil {
			t.Fatal(err)
		}
		var list strings.Builder
		if err := m.SetPCHook(0, func(pc uint64) { fmt.Fprintf(&list, "%#x\n", pc) }); err != nil {
			t.Fatal(err)
		}
		hart := &blockList{}
		if err := m.SetIngress(0, hart); err != nil {
			t.Fatal(err)
		}
		if res, err := m.Run(); err != nil || res.ExitCode != 0 {
			t.Fatalf("RV%d: exit code %d, %v", xlen, res.ExitCode, err)
		}
		src := ingress.NewPCSource(strings.NewReader(list.String()), "zcmp.pcs", img, ingress.PCOptions{})
		var fromPCs []ingress.Block
		for {
			b, err := src.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			fromPCs = append(fromPCs, *b)
		}
		key := func(bs []ingress.Block) []string {
			var k []string
			for _, b := range bs {
				if b.IType.IsTrap() || b.IRetire == 0 {
					continue
				}
				k = append(k, fmt.Sprintf("%#x+%d:%d", b.IAddr, b.IRetire, b.IType))
			}
			return k
		}
		got, want := key(hart.b), key(fromPCs)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("RV%d: the hart's blocks\n%v\ndiffer from the PC list's\n%v", xlen, got, want)
		}
		its := map[ingress.IType]int{}
		for _, b := range hart.b {
			its[b.IType]++
		}
		if its[ingress.ITypeReturn] < 2 || its[ingress.ITypeDirectJump] < 3 || its[ingress.ITypeDirectCall] < 2 {
			t.Errorf("RV%d: itypes %v: want the returns of cm.popret(z), the jumps of cm.jt, the calls of cm.jalt", xlen, its)
		}
	}
}

// TestZcmGuestErrorDisasm: a run stopped at an instruction of c.fsdsp's
// encodings names it as the hart decodes it (Zcmp's cm.push, or Zcd's
// c.fsdsp when the ISA has Zcd), not as the riscv package's default for
// the XLEN would (Zcd on RV64, Zcmp on RV32).
func TestZcmGuestErrorDisasm(t *testing.T) {
	for _, xlen := range []int{32, 64} {
		// the instructions retired before the first cm.push
		m, err := New(Config{MaxInstret: 1e5})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.LoadELF(zcmpELF(xlen)); err != nil {
			t.Fatal(err)
		}
		var n, at uint64
		found := false
		m.SetPCHook(0, func(pc uint64) {
			if found {
				return
			}
			if raw, size := m.harts[0].peekInst(pc); size == 2 && raw&0xe003 == 0xa002 && raw>>8&31 == 0x18 {
				found, at = true, pc
				return
			}
			n++
		})
		if _, err := m.Run(); !found {
			t.Fatalf("RV%d: no cm.push ran (%v)", xlen, err)
		}
		_, err = RunELF(zcmpELF(xlen), Config{MaxInstret: n})
		var ge *GuestError
		if !errors.As(err, &ge) || ge.PC != at {
			t.Fatalf("RV%d: stopped at %v, want the instruction at %#x", xlen, err, at)
		}
		if !strings.Contains(err.Error(), "(cm.push ") {
			t.Errorf("RV%d: %v: the instruction is not shown as cm.push", xlen, err)
		}
		// With Zcd (the program then stops at its write of jvt: stop
		// before), the same bits are c.fsdsp.
		arch := fmt.Sprintf("rv%dimafdc", xlen)
		_, err = RunELF(zcmpELF(xlen), Config{MaxInstret: 1, Arch: arch})
		if !errors.As(err, &ge) || ge.Ext&zcGroup != riscv.ExtZcd {
			t.Fatalf("RV%d %s: %v: extensions %#x", xlen, arch, err, ge.Ext)
		}
		ge.Raw, ge.Size = 0xb8f2, 2
		if !strings.Contains(ge.Error(), "(fsd ") {
			t.Errorf("RV%d %s: %v: b8f2 is not shown as c.fsdsp", xlen, arch, ge)
		}
	}
}

// dtISA returns the riscv,isa strings of a flattened device tree blob and
// the riscv,isa-extensions list, found by their values' starts.
func dtISA(blob []byte) (isa []string, exts []string) {
	for _, p := range []string{"rv32i", "rv64i"} {
		for off := 0; ; {
			i := bytes.Index(blob[off:], []byte(p))
			if i < 0 {
				break
			}
			s := blob[off+i:]
			s = s[:bytes.IndexByte(s, 0)]
			if string(s) != "rv64i" { // riscv,isa-base
				isa = append(isa, string(s))
			}
			off += i + len(s)
		}
	}
	if i := bytes.Index(blob, []byte("i\x00m\x00a\x00f\x00d\x00")); i >= 0 {
		s := blob[i:]
		end := bytes.Index(s, []byte("\x00\x00"))
		if end > 0 {
			exts = strings.Split(string(s[:end]), "\x00")
		}
	}
	return isa, exts
}

// TestZcmpDeviceTree: the device trees of a machine running the Zcmp/Zcmt
// program name Zca, Zcmp and Zcmt and not C (which with D means Zcd,
// whose encodings Zcmp and Zcmt take), and an rv64gc program's name C:
// each riscv,isa string, read back with riscv.ParseArch, has the
// compressed extensions the hart executes, and the kernel tree's
// riscv,isa-extensions list names them too.
func TestZcmpDeviceTree(t *testing.T) {
	for _, c := range []struct {
		elf  string
		xlen int
		zcmp bool
	}{{zcmpELF(32), 32, true}, {zcmpELF(64), 64, true}, {"../examples/sim-tests/memcpy.elf", 64, false}} {
		m, err := New(Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.LoadELF(c.elf); err != nil {
			t.Fatal(err)
		}
		blobs := map[string][]byte{"bare": m.makeDTB(), "virt": m.makeVirtDTB()}
		if c.xlen == 64 {
			f := &fdt{offs: map[string]uint32{}}
			m.fdtCPUsKernel(f)
			blobs["kernel"] = f.blob()
		}
		for name, blob := range blobs {
			isa, exts := dtISA(blob)
			if len(isa) == 0 {
				t.Fatalf("%s, %s tree: no riscv,isa", c.elf, name)
			}
			for _, s := range isa {
				xlen, ext, err := riscv.ParseArch(s)
				if err != nil || xlen != c.xlen {
					t.Errorf("%s, %s tree: %q: RV%d, %v", c.elf, name, s, xlen, err)
					continue
				}
				want := riscv.ExtZcd
				if c.zcmp {
					want = riscv.ExtZcmp | riscv.ExtZcmt
				}
				if ext&zcGroup != want || ext&riscv.ExtC == 0 {
					t.Errorf("%s, %s tree: %q has %v of Zcd/Zcmp/Zcmt, want %v", c.elf, name, s, ext&zcGroup, want)
				}
			}
			if name == "kernel" {
				got := strings.Join(exts, " ")
				has := strings.Contains(" "+got+" ", " zcmp ") && strings.Contains(" "+got+" ", " zca ") && !strings.Contains(" "+got+" ", " c ")
				if has != c.zcmp {
					t.Errorf("%s: riscv,isa-extensions %q", c.elf, got)
				}
			}
		}
	}
}
