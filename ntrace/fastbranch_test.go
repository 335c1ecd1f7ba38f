package ntrace

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
)

// TestFastBranchMatchesBlock encodes the same block streams twice, once
// with Block's fast path for conditional branches (fastBranch) and once
// with it turned off so that every branch takes the general path, and
// requires the same bytes: fastBranch repeats part of Block, branch and
// the pattern planner's add, and must not drift from them. The configs
// are those where the fast path is on, with narrow HIST and I-CNT
// registers (so that it hands over to histFull and icntFull), eager and
// late HIST-full reporting, repeated branches, timestamps and a FIFO that
// overflows.
func TestFastBranchMatchesBlock(t *testing.T) {
	cfgs := map[string]Config{}
	for name, c := range Presets {
		cfgs[name] = c
	}
	for name, c := range plannerConfigs() {
		cfgs["planner-"+name] = c
	}
	for _, hb := range []int{2, 3, 5, 8} {
		for _, eager := range []bool{false, true} {
			c := Config{Mode: HTM, HistBits: hb, ICNTBits: 6, EagerHistFull: eager, Timestamps: true}
			cfgs[fmt.Sprintf("hist%d-eager=%v", hb, eager)] = c
		}
	}
	c := Presets["ref-htm-rpt"]
	c.RepeatBranch, c.ICNTBits = true, 8
	cfgs["repeat-branch"] = c
	c = Config{Mode: HTM, HistBits: 6, Timestamps: true, FIFOBytes: 2 * MaxStandardMessage, DrainBytes: 1, DrainCycles: 30}
	cfgs["fifo"] = c
	names := make([]string, 0, len(cfgs))
	for name := range cfgs {
		names = append(names, name)
	}
	sort.Strings(names)
	fast := 0
	for _, name := range names {
		cfg := cfgs[name]
		var on, off bytes.Buffer
		a, err := NewEncoder(&on, cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := NewEncoder(&off, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !a.fastBr {
			continue
		}
		fast++
		b.fastBr = false
		blocks := genBlocks(rand.New(rand.NewPCG(11, uint64(len(name)))), 30000)
		for i := range blocks {
			var ea, eb error
			if blocks[i].IAddr == 0 {
				ea, eb = a.TraceOff(), b.TraceOff()
			} else {
				c := blocks[i]
				ea, eb = a.Block(&blocks[i]), b.Block(&c)
			}
			if (ea == nil) != (eb == nil) {
				t.Fatalf("%s: block %d: fast path error %v, general path %v", name, i, ea, eb)
			}
		}
		if err := a.Close(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := b.Close(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		x, y := on.Bytes(), off.Bytes()
		if !bytes.Equal(x, y) {
			i := 0
			for i < len(x) && i < len(y) && x[i] == y[i] {
				i++
			}
			t.Errorf("%s: fast path output (%d bytes) differs from the general path's (%d bytes) at byte %d",
				name, len(x), len(y), i)
		}
	}
	if fast < 10 {
		t.Fatalf("only %d configs take the fast path", fast)
	}
}
