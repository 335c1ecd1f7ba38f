package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestZcmpPMUAccesses: the event model counts every access of a Zcmp
// push or pop, one per register of its list: on the Zcmp/Zcmt program
// (RV32 and RV64), L1-dcache-loads and L1-dcache-stores equal the MR and
// MW records the simulator's Tarmac trace has. They used to count a push
// or pop as one access (cm.popret and cm.popretz as none).
func TestZcmpPMUAccesses(t *testing.T) {
	dir := t.TempDir()
	mr, mw := regexp.MustCompile(`(?m) MR\d+ `), regexp.MustCompile(`(?m) MW\d+ `)
	for _, xlen := range []int{32, 64} {
		elf := filepath.Join("..", "..", "examples", "sim-tests", "zcmp", fmt.Sprintf("zcmp%d.elf", xlen))
		js, tm := filepath.Join(dir, "pmu.json"), filepath.Join(dir, "full.tarmac")
		if code, _, e := rv(t, "run", "-q", "--max-instret", "100000", "--pmu-json", js, "--tarmac-full", tm, elf); code != 0 {
			t.Fatalf("RV%d: run: exit %d: %s", xlen, code, e)
		}
		var counts struct {
			Harts []struct {
				Events map[string]uint64 `json:"events"`
			} `json:"harts"`
		}
		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &counts); err != nil || len(counts.Harts) != 1 {
			t.Fatalf("RV%d: %s: %v", xlen, js, err)
		}
		tb, err := os.ReadFile(tm)
		if err != nil {
			t.Fatal(err)
		}
		ev := counts.Harts[0].Events
		loads, stores := len(mr.FindAllIndex(tb, -1)), len(mw.FindAllIndex(tb, -1))
		if loads < 30 || stores < 30 || ev["L1-dcache-loads"] != uint64(loads) || ev["L1-dcache-stores"] != uint64(stores) {
			t.Errorf("RV%d: the event model counts %d loads and %d stores, the Tarmac trace has %d MR and %d MW records",
				xlen, ev["L1-dcache-loads"], ev["L1-dcache-stores"], loads, stores)
		}
	}
}
