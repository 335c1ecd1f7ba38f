package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/pmu"
)

// hartPC is one retirement as a PC list or hook saw it.
type hartPC struct {
	hart int
	pc   uint64
}

// pcCase is a program for the PC list tests: load sets up a machine made
// with cfg.
type pcCase struct {
	name string
	cfg  Config
	load func(t *testing.T, m *Machine)
}

// pcCases are programs that take every path of the interpreter: compressed
// code (coremark), RV32, an interrupt and an exception (br_j_asm), PMP,
// Sv39 with system calls delegated to S-mode, S-mode on the built-in SBI
// with the counter-overflow interrupt, a 32-bit instruction across a page
// boundary, self-modifying code, two harts sharing a list (with a quantum
// of 7 instructions), Linux user mode and the start of a kernel boot
// (those needing files absent here are left out).
func pcCases(t *testing.T) []pcCase {
	var cs []pcCase
	elfCase := func(name, path string, cfg Config) {
		cs = append(cs, pcCase{name, cfg, func(t *testing.T, m *Machine) {
			if err := m.LoadELF(path); err != nil {
				t.Fatal(err)
			}
		}})
	}
	if _, err := os.Stat(corpusDir); err == nil {
		dir := filepath.Join(corpusDir, "elf")
		elfCase("coremark", filepath.Join(dir, "coremark.riscv"), Config{MaxInstret: 1_000_000})
		elfCase("embench-cubic-rv32", filepath.Join(dir, "embench-cubic.riscv"), Config{MaxInstret: 2_000_000})
		elfCase("br_j_asm-interrupt", filepath.Join(dir, "br_j_asm.riscv"), Config{MaxInstret: 1_000_000})
		elfCase("pmp", filepath.Join(dir, "pmp.riscv"), Config{MaxInstret: 1_000_000})
		elfCase("mt-vvadd-2-harts", filepath.Join(dir, "mt-vvadd.riscv"), Config{Harts: 2, MaxInstret: 2_000_000})
		elfCase("median-quantum-7", filepath.Join(dir, "median.riscv"), Config{Quantum: 7, Harts: 2})
		cs = append(cs, pcCase{"page-crossing", Config{MaxInstret: 200}, loadPageCrossing},
			pcCase{"self-modifying", Config{MaxInstret: 1000}, loadSelfModifying})
	}
	elfCase("sv39bench", "../examples/bench/sv39bench.elf", Config{MaxInstret: 2_000_000})
	if _, err := os.Stat(pmuTestELF); err == nil {
		cs = append(cs, pcCase{"pmutest-sbi", Config{Stdout: io.Discard, MaxInstret: 50_000_000}, func(t *testing.T, m *Machine) {
			if err := m.LoadSBI(pmuTestELF); err != nil {
				t.Fatal(err)
			}
		}})
	}
	for _, name := range []string{"printf", "setjmp", "funcptr"} {
		path := filepath.Join(simTestsDir, name+".elf")
		if _, err := os.Stat(path); err != nil {
			continue
		}
		cs = append(cs, pcCase{"linux-" + name, Config{Stdout: io.Discard, Stderr: io.Discard, MaxInstret: 100e6}, func(t *testing.T, m *Machine) {
			if err := m.LoadLinuxELF(path, []string{path}, []string{}); err != nil {
				t.Fatal(err)
			}
		}})
	}
	if dir := linuxKitDir(); dir != "" {
		cs = append(cs, pcCase{"kernel-boot", Config{Stdout: io.Discard, Stderr: io.Discard, MaxInstret: 4_000_000}, func(t *testing.T, m *Machine) {
			err := m.LoadKernel(Kernel{Image: filepath.Join(dir, "Image"), Initrd: filepath.Join(dir, "initramfs-busybox.cpio.gz"),
				Append: "console=ttyS0 rdinit=/init"})
			if err != nil {
				t.Fatal(err)
			}
		}})
	}
	if len(cs) == 0 {
		t.Skip("no test programs (corpus, examples) here")
	}
	return cs
}

// linuxKitDir is the Linux kit's directory, or "" when it is absent.
func linuxKitDir() string {
	dir := os.Getenv("RVTRACE_LINUX_CACHE")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".cache", "rvtrace", "linux")
	}
	for _, f := range []string{"Image", "initramfs-busybox.cpio.gz"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return ""
		}
	}
	return dir
}

// loadPageCrossing loads the loop of TestPageCrossingInstruction at
// median's entry (page aligned): a 32-bit instruction across a page
// boundary, whose upper half a store patches (addi a0,a0,5 becomes
// addi a0,a0,7 from the second iteration).
func loadPageCrossing(t *testing.T, m *Machine) {
	if err := m.LoadELF(filepath.Join(corpusDir, "elf", "median.riscv")); err != nil {
		t.Fatal(err)
	}
	e := m.Entry()
	img := make([]byte, 0x4012)
	put32 := func(off int, w uint32) { binary.LittleEndian.PutUint32(img[off:], w) }
	put32(0x000, 0x00004317)                            // auipc t1,4 (t1 = the page after the boundary)
	put32(0x004, 0x07500393)                            // li t2,0x75 (upper half of addi a0,a0,7)
	put32(0x008, 0x00300593)                            // li a1,3
	put32(0x00c, 0x7ef0306f)                            // j 0x3ffa (above median, whose pages hold tohost)
	binary.LittleEndian.PutUint16(img[0x3ffa:], 0x0001) // c.nop
	binary.LittleEndian.PutUint16(img[0x3ffc:], 0x0001) // c.nop
	put32(0x3ffe, 0x00550513)                           // loop: addi a0,a0,5 (across the boundary)
	put32(0x4002, 0xfff58593)                           // addi a1,a1,-1
	put32(0x4006, 0x00731023)                           // sh t2,0(t1) (patch: addi a0,a0,7)
	put32(0x400a, 0xfe059ae3)                           // bnez a1,loop
	put32(0x400e, 0x0000006f)                           // j .
	m.WriteMem(e, img[:0x10])
	m.WriteMem(e+0x3ffa, img[0x3ffa:])
}

// loadSelfModifying loads the program of TestSelfModifyingCode, with
// compressed instructions in the straight line the patch rewrites.
func loadSelfModifying(t *testing.T, m *Machine) {
	if err := m.LoadELF(filepath.Join(corpusDir, "elf", "median.riscv")); err != nil {
		t.Fatal(err)
	}
	var b []byte
	for _, w := range []uint32{
		0x00000297, // 0x00 auipc t0,0
		0x00000593, // 0x04 li a1,0
		0x00010001, // 0x08 target: c.nop; c.nop (patched into li a0,42)
		0x00158593, // 0x0c addi a1,a1,1
		0x0282a303, // 0x10 lw t1,0x28(t0)
		0x1062a023, // 0x14 sw t1,0x100(t0) (data in the code page)
		0x0062a423, // 0x18 sw t1,8(t0) (the patch)
		0x00200393, // 0x1c li t2,2
		0xfe75c4e3, // 0x20 blt a1,t2,target
		0x0000006f, // 0x24 j .
		0x02a00513, // 0x28 li a0,42
	} {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	m.WriteMem(m.Entry(), b)
}

// runPCs runs c once: with SetPCHook on every hart when hook, else with
// SetPCList, the harts sharing one record. extra adds more observers
// (after the PC list or hook is set).
func runPCs(t *testing.T, c pcCase, hook bool, extra func(m *Machine)) ([]hartPC, *Machine, Result, error) {
	t.Helper()
	m, err := New(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.load(t, m)
	var got []hartPC
	for h := 0; h < m.NumHarts(); h++ {
		if hook {
			err = m.SetPCHook(h, func(pc uint64) { got = append(got, hartPC{h, pc}) })
		} else {
			err = m.SetPCList(h, func(pcs []uint64) {
				for _, pc := range pcs {
					got = append(got, hartPC{h, pc})
				}
			})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if extra != nil {
		extra(m)
	}
	res, err := m.Run()
	return got, m, res, err
}

// comparePCs reports the first difference of two PC records.
func comparePCs(got, want []hartPC) error {
	for i := 0; i < len(got) && i < len(want); i++ {
		if got[i] != want[i] {
			return fmt.Errorf("retirement %d: hart %d pc %#x, want hart %d pc %#x", i, got[i].hart, got[i].pc, want[i].hart, want[i].pc)
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d retirements, want %d", len(got), len(want))
	}
	return nil
}

// TestPCListMatchesHook checks that SetPCList reports exactly the PCs,
// harts and order of SetPCHook (which stops at every retirement) on
// programs taking every path of the interpreter, alone and together with
// the coalesced and per-instruction ingress ports, the event model and
// the hook itself.
func TestPCListMatchesHook(t *testing.T) {
	for _, c := range pcCases(t) {
		t.Run(c.name, func(t *testing.T) {
			want, wm, wres, werr := runPCs(t, c, true, nil)
			if len(want) == 0 {
				t.Fatalf("no retirement (run: %v)", werr)
			}
			if uint64(len(want)) != wres.Instret {
				t.Fatalf("the hook saw %d retirements of %d", len(want), wres.Instret)
			}
			got, _, res, err := runPCs(t, c, false, nil)
			if fmt.Sprint(err) != fmt.Sprint(werr) || res.Instret != wres.Instret || res.ExitCode != wres.ExitCode {
				t.Fatalf("run with the list: %d instructions, exit %d, %v; with the hook: %d, %d, %v",
					res.Instret, res.ExitCode, err, wres.Instret, wres.ExitCode, werr)
			}
			if err := comparePCs(got, want); err != nil {
				t.Fatalf("PC list: %v", err)
			}
			var intr, exc uint64
			for _, h := range wm.harts {
				intr, exc = intr+h.nIntr, exc+h.nExc
			}
			t.Logf("%d PCs (%d harts), %d interrupts, %d exceptions, run: %v", len(want), max(c.cfg.Harts, 1), intr, exc, werr)
			for _, o := range []struct {
				name string
				set  func(t *testing.T, m *Machine)
			}{
				{"coalesced ingress", func(t *testing.T, m *Machine) {
					if err := m.SetIngress(0, &countSink{}); err != nil {
						t.Fatal(err)
					}
				}},
				{"event model", func(t *testing.T, m *Machine) {
					pm, err := pmu.New(pmu.Config{})
					if err != nil {
						t.Fatal(err)
					}
					if err := m.SetEventModel(0, pm); err != nil {
						t.Fatal(err)
					}
				}},
				{"hook too", func(t *testing.T, m *Machine) {
					if err := m.SetPCHook(0, func(uint64) {}); err != nil {
						t.Fatal(err)
					}
				}},
			} {
				got, _, _, _ := runPCs(t, c, false, func(m *Machine) { o.set(t, m) })
				want := want
				if o.name == "event model" {
					// its stall cycles change the flow of programs
					// that read the time or take timer interrupts
					want, _, _, _ = runPCs(t, c, true, func(m *Machine) { o.set(t, m) })
				}
				if err := comparePCs(got, want); err != nil {
					t.Errorf("PC list with %s: %v", o.name, err)
				}
			}
		})
	}
}

// TestPCListPerInstructionIngress checks the PC list beside the ingress
// port in per-instruction mode against the port's own blocks.
func TestPCListPerInstructionIngress(t *testing.T) {
	dir := corpusOrSkip(t)
	c := pcCase{"coremark", Config{Mode: PerInstruction, MaxInstret: 500_000}, func(t *testing.T, m *Machine) {
		if err := m.LoadELF(filepath.Join(dir, "elf", "coremark.riscv")); err != nil {
			t.Fatal(err)
		}
	}}
	rs := &recordSink{}
	got, _, _, err := runPCs(t, c, false, func(m *Machine) {
		if err := m.SetIngress(0, rs); err != nil {
			t.Fatal(err)
		}
	})
	if !errors.Is(err, ErrInstructionLimit) {
		t.Fatalf("run: %v", err)
	}
	var want []hartPC
	for _, b := range rs.blocks {
		if b.IRetire != 0 {
			want = append(want, hartPC{0, b.IAddr})
		}
	}
	if err := comparePCs(got, want); err != nil {
		t.Fatal(err)
	}
}

// stateSink records each block with what the hart shows during its call.
type stateSink struct {
	m    *Machine
	recs []blockState
}

type blockState struct {
	b                     ingress.Block
	blockRet, ret, cycles uint64
	pc                    uint64
}

func (s *stateSink) Block(b *ingress.Block) error {
	h := s.m.Hart(0)
	s.recs = append(s.recs, blockState{*b, s.m.BlockInstret(0), h.Instret(), h.Cycles(), h.PC()})
	return nil
}

func (s *stateSink) Close() error { return nil }

// TestIngressHartStateDuringBlock checks what a coalesced ingress sink
// (the sideband recorder, say) sees of the hart while it takes a block:
// BlockInstret is the number of instructions retired before the block's
// first one, and during a block ended by a jump or branch the hart's
// instret counts its last instruction, its pc is that instruction's and
// its cycle count is the block's Time. The positions come from the PC
// list of another run.
func TestIngressHartStateDuringBlock(t *testing.T) {
	dir := corpusOrSkip(t)
	for _, c := range []pcCase{
		{"coremark", Config{MaxInstret: 1_000_000, Timing: Timing{Load: 3, Mul: 4, Taken: 2}}, func(t *testing.T, m *Machine) {
			if err := m.LoadELF(filepath.Join(dir, "elf", "coremark.riscv")); err != nil {
				t.Fatal(err)
			}
		}},
		{"sv39bench", Config{MaxInstret: 1_000_000}, func(t *testing.T, m *Machine) {
			if err := m.LoadELF("../examples/bench/sv39bench.elf"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pcs, _, _, _ := runPCs(t, c, false, nil)
			var s stateSink
			runPCs(t, pcCase{c.name, c.cfg, func(t *testing.T, m *Machine) {
				c.load(t, m)
				s.m = m
				if err := m.SetIngress(0, &s); err != nil {
					t.Fatal(err)
				}
			}}, false, func(m *Machine) { m.SetPCList(0, nil) })
			cf := 0
			for i, r := range s.recs {
				b := &r.b
				if b.IRetire == 0 {
					continue
				}
				if r.blockRet >= uint64(len(pcs)) || pcs[r.blockRet].pc != b.IAddr {
					t.Fatalf("block %d at %#x: BlockInstret %d, not that instruction's position", i, b.IAddr, r.blockRet)
				}
				if b.IType == 0 || b.IType.IsTrap() {
					continue
				}
				cf++
				if r.ret == 0 || r.ret > uint64(len(pcs)) || pcs[r.ret-1].pc != b.LastAddr() || r.pc != b.LastAddr() || r.cycles != b.Time {
					t.Fatalf("block %d %+v: the hart showed instret %d, pc %#x, cycles %d", i, *b, r.ret, r.pc, r.cycles)
				}
			}
			if cf < 1000 {
				t.Fatalf("%d blocks ended by a jump or branch", cf)
			}
		})
	}
}
