package sim

import (
	"debug/elf"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rvtrace/rvtrace/ingress"
)

// The virtual-memory programs of examples/sim-tests/vm (built by
// scripts/build-vm-tests.sh): M-mode builds Sv39 or Sv32 page tables and
// enters S-mode at a virtual alias of the program (VA = PA + 0x40000000),
// which checks translation, page faults (scause, stval, sepc), hardware
// A/D updates, SUM, MXR, sfence.vma, non-canonical addresses (Sv39),
// misaligned superpages and the reserved W-without-R encoding. The exit
// code is the number of the first failing check (0: all passed).
const vmDir = "../examples/sim-tests/vm"

const vmAlias = 0x40000000

func TestVirtualMemory(t *testing.T) {
	for _, name := range []string{"sv39", "sv32", "svpbmt"} {
		t.Run(name, func(t *testing.T) {
			res, err := RunELF(filepath.Join(vmDir, name+".elf"), Config{MaxInstret: 1e6})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 {
				t.Fatalf("check %d of %s.S failed (100+ means an unexpected trap into M-mode with mcause = code-100)", res.ExitCode, name)
			}
		})
	}
}

// TestVirtualMemoryQEMU runs the same programs on qemu-system's spike
// machine (HTIF), the reference the checks were validated on. svpbmt.S
// (Svpbmt and Svinval) is built for it with -DQEMU72, which leaves out
// the checks QEMU 7.2 does not make (see the program's header).
func TestVirtualMemoryQEMU(t *testing.T) {
	for _, c := range []struct{ name, qemu string }{{"sv39", "qemu-system-riscv64"}, {"sv32", "qemu-system-riscv32"}, {"svpbmt", "qemu-system-riscv64"}} {
		t.Run(c.name, func(t *testing.T) {
			q, err := exec.LookPath(c.qemu)
			if err != nil {
				t.Skipf("%s not installed (Debian: qemu-system-misc)", c.qemu)
			}
			prog := filepath.Join(vmDir, c.name+".elf")
			var cpu []string
			if c.name == "svpbmt" {
				cc, err := exec.LookPath("riscv64-linux-gnu-gcc")
				if err != nil {
					t.Skip("riscv64-linux-gnu-gcc not installed: svpbmt.S is built for QEMU with -DQEMU72")
				}
				prog = filepath.Join(t.TempDir(), "svpbmt-qemu72.elf")
				out, err := exec.Command(cc, "-march=rv64gc_svinval", "-mabi=lp64d", "-nostdlib", "-static", "-fno-pie", "-no-pie",
					"-Wl,--build-id=none", "-Wl,--no-warn-rwx-segments", "-T", filepath.Join(vmDir, "link.ld"),
					"-DQEMU72", "-o", prog, filepath.Join(vmDir, "svpbmt.S")).CombinedOutput()
				if err != nil {
					t.Fatalf("building svpbmt.S: %v\n%s", err, out)
				}
				cpu = []string{"-cpu", "rv64,svpbmt=on,svinval=on"}
			}
			cmd := exec.Command(q, append(cpu, "-M", "spike", "-nographic", "-bios", "none", "-kernel", prog)...)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("%s: check %d failed: %s", c.qemu, ee.ExitCode(), out)
			} else if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestVirtualMemoryIngress: the ingress port reports virtual addresses:
// S-mode blocks at the alias, the instruction page fault at the virtual
// address that faulted, the trap handler at stvec's virtual address.
func TestVirtualMemoryIngress(t *testing.T) {
	path := filepath.Join(vmDir, "sv39.elf")
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	sym := map[string]uint64{}
	for _, s := range syms {
		sym[s.Name] = s.Value
	}
	rs, res := runTraced(t, path, Config{})
	if res.ExitCode != 0 {
		t.Fatalf("exit code %d", res.ExitCode)
	}
	var sBlocks, fetchFault, storeFault, sfunc int
	for i, b := range rs.blocks {
		if b.Priv != ingress.PrivS {
			continue
		}
		sBlocks++
		// S-mode runs at the alias, or at 0x9000 (sfunc's page mapped a
		// second time), or faults at 0x6000: never at the physical
		// addresses, which the identity gigapage maps too
		switch {
		case b.IAddr >= 0xc0000000 && b.IAddr < 0xc0000000+1<<30:
		case b.IAddr>>12 == 0x9:
			sfunc++
			if b.IAddr != 0x9000+sym["sfunc"]&0xfff {
				t.Errorf("S-mode block at %#x, want sfunc's second mapping at 0x9000", b.IAddr)
			}
		case b.IAddr == 0x6000:
		default:
			t.Errorf("S-mode block at %#x: not a virtual address of the program", b.IAddr)
		}
		if sBlocks == 1 && b.IAddr != sym["s_main"]+vmAlias {
			t.Errorf("first S-mode block at %#x, want s_main's alias %#x", b.IAddr, sym["s_main"]+vmAlias)
		}
		if b.IType == ingress.ITypeException && b.Cause == causeFetchPageFault {
			fetchFault++
			if b.IRetire != 0 || b.IAddr != 0x6000 || b.TVal != 0x6000 {
				t.Errorf("instruction page fault block %+v, want IAddr = TVal = 0x6000, nothing retired", b)
			}
			if i+1 < len(rs.blocks) && rs.blocks[i+1].IAddr != sym["s_trap"]+vmAlias {
				t.Errorf("block after the fault at %#x, want stvec %#x", rs.blocks[i+1].IAddr, sym["s_trap"]+vmAlias)
			}
		}
		if b.IType == ingress.ITypeException && b.Cause == causeStorePageFault && b.TVal == 0x2008 {
			storeFault++
			if b.IRetire == 0 || b.LastAddr() < 0xc0000000 {
				t.Errorf("store page fault block %+v", b)
			}
		}
	}
	if sBlocks == 0 || fetchFault != 1 || storeFault != 1 || sfunc == 0 {
		t.Errorf("%d S-mode blocks, %d instruction page faults (want 1), %d store page faults at 0x2008 (want 1), %d blocks at 0x9000 (want some)",
			sBlocks, fetchFault, storeFault, sfunc)
	}
}
