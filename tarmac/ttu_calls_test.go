package tarmac

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/internal/corpus"
)

// ttuCount is one row of tarmac-trace-utilities' tarmac-profile output:
// a function (its entry address) and the number of times it was called.
type ttuCount struct{ addr, calls uint64 }

// Outputs of tarmac-profile (tarmac-trace-utilities commit 629aafd, the
// corpus's source) on the corpus traces, without an image. The first row
// is the root, the function the trace starts in. quicksort's is in the
// corpus (profile-quicksort-addr.ref) and read from there. The ES-style
// traces give the same rows as their Fast Models twins; tarmac-profile
// rejects the gem5 trace (an MW16 record with its 16 bytes in one word),
// which is the same program as the aarch64 ones.
var ttuProfiles = map[string][]ttuCount{
	"calculator-aarch32-fastmodel.tarmac": {{0x20150, 1}, {0x202b0, 1}, {0x202fc, 2}, {0x204c4, 9}, {0x204e0, 1}, {0x20570, 1}, {0x205e8, 1}, {0x20618, 1}, {0x20640, 1}, {0x20678, 1}, {0x20764, 23}, {0x20784, 23}, {0x20b4c, 30}, {0x20b84, 30}, {0x20c60, 1}, {0x20ce8, 3}, {0x20e2c, 8}, {0x20ee4, 11}, {0x20fcc, 11}},
	"calculator-aarch64-fastmodel.tarmac": {{0x2105d4, 1}, {0x21073c, 1}, {0x21079c, 2}, {0x210990, 9}, {0x2109ac, 1}, {0x210a3c, 1}, {0x210ab8, 1}, {0x210ae4, 1}, {0x210b08, 1}, {0x210b3c, 1}, {0x210c04, 23}, {0x210c28, 23}, {0x210f38, 30}, {0x210f74, 30}, {0x211038, 1}, {0x2110c4, 3}, {0x2111f0, 8}, {0x2112a0, 11}, {0x211378, 11}},
	"calltest32.tarmac":                   {{0x200b4, 1}, {0x20118, 6}, {0x20128, 2}, {0x20138, 1}, {0x20148, 1}, {0x2015c, 1}, {0x20160, 1}, {0x20188, 1}, {0x201c0, 1}, {0x201d0, 1}},
	"calltest64.tarmac":                   {{0x210120, 1}, {0x210174, 7}, {0x210184, 1}, {0x210198, 1}, {0x21019c, 1}, {0x2101ac, 1}},
	"truncate/crash32m.tarmac":            {{0xe1, 1}},
}

func init() {
	ttuProfiles["calculator-aarch32-es-ld-st-style.tarmac"] = ttuProfiles["calculator-aarch32-fastmodel.tarmac"]
	ttuProfiles["calculator-aarch64-es-ld-st-style.tarmac"] = ttuProfiles["calculator-aarch64-fastmodel.tarmac"]
	ttuProfiles["calculator-aarch64-gem5.tarmac"] = ttuProfiles["calculator-aarch64-fastmodel.tarmac"]
}

// TestTarmacTTUCallCounts decodes the corpus traces into the flow and counts the
// calls into each address (ranges that end in a call, by target): every
// function tarmac-trace-utilities' profile lists has as many calls as it
// says (the root: one more than the calls into it). Calls that the
// decoder finds and that tool does not list must be calls that never
// return to their call site: that tool only counts a call when it sees
// the matching return, rvtrace counts the call instruction.
func TestTarmacTTUCallCounts(t *testing.T) {
	profiles := map[string][]ttuCount{}
	for k, v := range ttuProfiles {
		profiles[k] = v
	}
	ref, err := os.ReadFile(corpus.Path(t, "tarmac/profile-quicksort-addr.ref"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(ref), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		a, err1 := strconv.ParseUint(strings.TrimPrefix(f[0], "0x"), 16, 64)
		n, err2 := strconv.ParseUint(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("profile-quicksort-addr.ref: %q", l)
		}
		profiles["quicksort.tarmac"] = append(profiles["quicksort.tarmac"], ttuCount{a, n})
	}
	for name, want := range profiles {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(corpus.Path(t, filepath.Join("tarmac", name)))
			if err != nil {
				t.Fatal(err)
			}
			var c collect
			if err := NewDecoder(NewReader(bytes.NewReader(b), name), Options{}).Flow(&c); err != nil {
				t.Fatal(err)
			}
			calls := map[uint64]uint64{}
			sites := map[uint64][]uint64{} // target -> call sites
			returnsTo := map[uint64]bool{}
			var root uint64
			first := true
			for _, e := range c.evs {
				if e.Kind != flow.KindRange {
					continue
				}
				if first {
					root, first = e.Start, false
				}
				switch e.End {
				case ingress.ITypeDirectCall, ingress.ITypeIndirectCall:
					if e.HasTarget {
						calls[e.Target]++
						sites[e.Target] = append(sites[e.Target], e.Last)
					}
				case ingress.ITypeReturn:
					if e.HasTarget {
						returnsTo[e.Target] = true
					}
				}
			}
			listed := map[uint64]bool{}
			for i, w := range want {
				addr := w.addr &^ 1 // Thumb bit
				listed[addr] = true
				got := calls[addr]
				if i == 0 {
					if addr != root {
						t.Errorf("root %#x, tarmac-profile's %#x", root, addr)
					}
					got++
				}
				if got != w.calls {
					t.Errorf("%#x: %d calls, tarmac-profile %d", addr, got, w.calls)
				}
			}
			for target, n := range calls {
				if listed[target] {
					continue
				}
				for _, s := range sites[target] {
					// The call instruction is 4 bytes (A32, A64) or 2 or
					// 4 (T32).
					if returnsTo[s+4] || returnsTo[s+2] || returnsTo[(s+4)|1] || returnsTo[(s+2)|1] {
						t.Errorf("%#x: %d calls that tarmac-profile does not list, one from %#x returns", target, n, s)
					}
				}
			}
		})
	}
}
