package etrace

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/sim"
)

// dumpAddrRe matches the absolute address DumpWith adds after an address
// field (or after the packet, for a handler from the trap vector).
var dumpAddrRe = regexp.MustCompile(`\[(0x[0-9a-f]+) <([^>]*)>\]|\[base unknown\]`)

// TestDumpSymbols dumps simulator traces (with traps) in every mode and
// both layouts with symbols: every address the listing shows is one the
// program executed (or the EPC of a trap), named as the symbolizer names it; every packet with
// an address field shows one, except jump target cache indexes; none is
// "base unknown" in a clean trace.
func TestDumpSymbols(t *testing.T) {
	for _, prog := range simPrograms[:4] {
		img, blocks := runSim(t, prog, sim.Coalesced, 100_000)
		executed := map[uint64]bool{}
		for _, pc := range retired(t, img, blocks) {
			executed[pc] = true
		}
		// and the EPC of a trap: the instruction after the last retired
		for _, b := range blocks {
			if b.IType.IsTrap() {
				executed[b.NextAddr()] = true
			}
		}
		for _, v := range []Version{V2, V026} {
			for _, m := range modes {
				cfg := DefaultConfig()
				cfg.Version = v
				m.set(&cfg)
				if m.name == "implicit-exception" || m.name == "all" {
					cfg.Params.TVec = trapVector(blocks)
				}
				name := fmt.Sprintf("%s/%s/%s", prog, v, m.name)
				data, _ := encode(t, cfg, img, blocks)
				if err := cfg.Check(); err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				sym := func(a uint64) string { return "f" + strconv.FormatUint(a, 16) }
				if _, err := DumpWith(bytes.NewReader(data), &out, &cfg, DumpOptions{Symbolize: sym}); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				named, fields := 0, 0
				for _, l := range strings.Split(out.String(), "\n") {
					ms := dumpAddrRe.FindAllStringSubmatch(l, -1)
					if strings.Contains(l, " address=") && !strings.Contains(l, "jump-cache") {
						fields++
						if len(ms) != 1 {
							t.Fatalf("%s: %d addresses named in %q", name, len(ms), l)
						}
					}
					for _, m := range ms {
						if m[1] == "" {
							t.Fatalf("%s: %q in a clean trace", name, l)
						}
						a, _ := strconv.ParseUint(m[1], 0, 64)
						if !executed[a] {
							t.Fatalf("%s: %q: %#x was not executed nor an EPC", name, l, a)
						}
						if m[2] != sym(a) {
							t.Fatalf("%s: %q: named %q, want %q", name, l, m[2], sym(a))
						}
						named++
					}
				}
				if fields < 3 || named < fields {
					t.Errorf("%s: %d addresses named, %d address fields", name, named, fields)
				}
			}
		}
	}
}

// TestDumpSymbolsLost checks that after a framing error a differential
// address shows "[base unknown]" until a sync packet gives a full address
// again, and that without symbols the listing is the plain one.
func TestDumpSymbolsLost(t *testing.T) {
	img, blocks := runSim(t, simPrograms[3], sim.Coalesced, 300_000)
	cfg := DefaultConfig()
	cfg.ResyncPeriod = 20
	data, _ := encode(t, cfg, img, blocks)
	// A header with bit 7 set between two packets, before a packet with
	// a differential address that follows no sync.
	sc := NewScanner(bytes.NewReader(data), &cfg)
	c := NewCodec(&cfg)
	var p Packet
	var at int64
	prevSync := true
	for i := 0; sc.Scan(); i++ {
		if err := c.Parse(sc.Frame().Payload, sc.Frame().Support, &p); err != nil {
			t.Fatal(err)
		}
		if i > 30 && !prevSync && c.present(&p)[fAddress] && p.Format != FormatSync {
			at = sc.Frame().Offset
			break
		}
		prevSync = p.Format == FormatSync
	}
	if at == 0 {
		t.Fatal("no packet to corrupt before")
	}
	bad := append(append(append([]byte{}, data[:at]...), 0x80), data[at:]...)
	sym := func(a uint64) string { return "" }
	var out, plain bytes.Buffer
	if _, err := DumpWith(bytes.NewReader(bad), &out, &cfg, DumpOptions{Symbolize: sym}); err != nil {
		t.Fatal(err)
	}
	if _, err := Dump(bytes.NewReader(bad), &plain, &cfg); err != nil {
		t.Fatal(err)
	}
	if got := regexp.MustCompile(` \[[^\]]*\]`).ReplaceAllString(out.String(), ""); got != plain.String() {
		t.Errorf("symbols changed more than the addresses")
	}
	lines := strings.Split(out.String(), "\n")
	errAt, unknown, after := -1, 0, false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "error:"):
			errAt = i
		case errAt < 0:
			if strings.Contains(l, "base unknown") {
				t.Fatalf("line %d: %q before the error", i, l)
			}
		case strings.Contains(l, "sync-start"):
			after = true
		case strings.Contains(l, "base unknown"):
			if after {
				t.Fatalf("line %d: %q after a sync", i, l)
			}
			unknown++
		case !after && strings.Contains(l, " address="):
			t.Fatalf("line %d: %q: a differential address named before a sync", i, l)
		}
	}
	if errAt < 0 || unknown == 0 || !after {
		t.Errorf("framing error at line %d, %d base unknown, sync after: %v", errAt, unknown, after)
	}
}
