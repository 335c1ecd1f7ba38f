package sim

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"testing"

	"github.com/rvtrace/rvtrace/pmu"
)

const regionELF = "../examples/pmu/region.elf"

// isControlTransfer reports whether the RISC-V instruction in the
// first bytes of b is a conditional branch, jal or jalr (compressed
// forms included): the model's branches event.
func isControlTransfer(b []byte) bool {
	lo := binary.LittleEndian.Uint16(b)
	if lo&3 == 3 {
		switch binary.LittleEndian.Uint32(b) & 0x7f {
		case 0x63, 0x6f, 0x67: // branch, jal, jalr
			return true
		}
		return false
	}
	f3 := lo >> 13
	switch lo & 3 {
	case 1: // c.j, c.beqz, c.bnez (RV64: no c.jal)
		return f3 == 5 || f3 == 6 || f3 == 7
	case 2: // c.jr, c.jalr
		return f3 == 4 && (lo>>2)&31 == 0 && (lo>>7)&31 != 0
	}
	return false
}

// TestPMURegionInstret runs examples/pmu/region.elf on the built-in SBI:
// the program counts the instructions (and, with the event model, the
// branches) of a region with SBI PMU counters, and the counts must
// equal what a PC hook sees retire from region_start to region_end
// (the counter_stop ecall, which retires before the counters stop).
func TestPMURegionInstret(t *testing.T) {
	if _, err := os.Stat(regionELF); err != nil {
		t.Skipf("%s absent (scripts/build-pmu-tests.sh builds it): %v", regionELF, err)
	}
	f, err := elf.Open(regionELF)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	addr := map[string]uint64{}
	for _, s := range syms {
		addr[s.Name] = s.Value
	}
	start, end, results := addr["region_start"], addr["region_end"], addr["results"]
	if start == 0 || end == 0 || results == 0 {
		t.Fatalf("region_start %#x, region_end %#x, results %#x: symbols missing", start, end, results)
	}
	for _, model := range []bool{false, true} {
		var out bytes.Buffer
		m, err := New(Config{Stdout: &out, MaxInstret: 1_000_000})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.LoadSBI(regionELF); err != nil {
			t.Fatal(err)
		}
		if model {
			pm, err := pmu.New(pmu.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if err := m.SetEventModel(0, pm); err != nil {
				t.Fatal(err)
			}
		}
		var in bool
		var instr, branches, regions uint64
		var raw [4]byte
		m.SetPCHook(0, func(pc uint64) {
			if pc == start {
				in = true
				regions++
			}
			if !in {
				return
			}
			instr++
			if m.ReadMem(pc, raw[:]) && isControlTransfer(raw[:]) {
				branches++
			}
			if pc == end {
				in = false
			}
		})
		res, err := m.Run()
		if err != nil {
			t.Fatalf("model %v: %v\n%s", model, err, out.String())
		}
		var r [32]byte
		if !m.ReadMem(results, r[:]) {
			t.Fatalf("cannot read results at %#x", results)
		}
		got := func(i int) uint64 { return binary.LittleEndian.Uint64(r[8*i:]) }
		if res.ExitCode != 0 || got(2) != 0 {
			t.Fatalf("model %v: exit code %d, error step %d\n%s", model, res.ExitCode, got(2), out.String())
		}
		if regions != 1 || in {
			t.Fatalf("model %v: region entered %d times, left %v", model, regions, !in)
		}
		if got(3) != 1 {
			t.Errorf("model %v: %d illegal-instruction traps in the region, want 1", model, got(3))
		}
		if got(0) != instr {
			t.Errorf("model %v: SBI PMU instructions %d, PC hook %d", model, got(0), instr)
		}
		switch {
		case !model && got(1) != ^uint64(0): // refused without the model (not counted as 0)
			t.Errorf("branches without the event model: %d, want ~0 (not supported, so not configured)", got(1))
		case model && got(1) != branches:
			t.Errorf("SBI PMU branches %d, PC hook %d", got(1), branches)
		}
		t.Logf("model %v: %d instructions, %d branches (PMU: %d, %d)", model, instr, branches, got(0), got(1))
	}
}
