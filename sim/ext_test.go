package sim

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/rvgen"
)

// TestDifftestQEMUExt is TestDifftestQEMU with the extensions qemu 7.2
// knows beyond those programs: Zbc, Zbkb, Zbkx and Zfh (rvgen.Config.Ext,
// qemu -cpu rvXX,zbc=true,zbkb=true,zbkx=true,Zfh=true). A quarter of the
// random items are from these extensions, and half of the FP registers
// start with NaN-boxed halves.
func TestDifftestQEMUExt(t *testing.T) {
	n := difftestPrograms(t)
	for _, xlen := range []int{64, 32} {
		t.Run(fmt.Sprintf("RV%d", xlen), func(t *testing.T) {
			cc, qemu, err := rvgen.Tools(xlen)
			if err != nil {
				t.Skipf("differential test against qemu skipped: %v", err)
			}
			dir := t.TempDir()
			fails := 0
			for s := uint64(1); s <= uint64(n); s++ {
				cfg := rvgen.Config{XLEN: xlen, Seed: s, Cases: 10, Insts: 200, Ext: true}
				src := filepath.Join(dir, fmt.Sprintf("p%d.S", s))
				prog := strings.TrimSuffix(src, ".S")
				if err := rvgen.WriteFile(src, cfg); err != nil {
					t.Fatal(err)
				}
				if err := rvgen.BuildConfig(cc, src, prog, cfg); err != nil {
					t.Fatal(err)
				}
				want, code, err := rvgen.QEMUConfig(qemu, prog, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if code != 0 {
					t.Fatalf("seed %d: qemu exit code %d (a generator bug)", s, code)
				}
				if msg := runDump(t, prog, xlen, want); msg != "" {
					t.Errorf("RV%d seed %d (Ext) differs from qemu (reproduce with: go run ./examples/difftest/gen -ext -xlen %d -seed %d -minimize):\n%s",
						xlen, s, xlen, s, msg)
					if fails++; fails >= 3 {
						t.Fatal("too many failures")
					}
				}
			}
			t.Logf("RV%d: %d programs × 10 cases × 200 random instructions with Zbc/Zbkb/Zbkx/Zfh agree with %s", xlen, n, filepath.Base(qemu))
		})
	}
}
