package etrace

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/rvtrace/rvtrace/filter"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/sim"
)

// pcRec is an MR/MW record of the simulator's observer with the
// instruction that made it.
type pcRec struct {
	memRec
	pc   uint64
	raw  uint32
	priv ingress.Priv
}

// kind classifies the record from the instruction's encoding alone: the
// A extension's lr is a load, sc a store, the others atomics.
func (r pcRec) kind() string {
	if r.raw&0x7f == 0x2f {
		switch r.raw >> 27 {
		case 2:
			return "load"
		case 3:
			return "store"
		}
		return "atomic"
	}
	if r.write {
		return "store"
	}
	return "load"
}

type pcRecorder struct {
	memRecorder
	pc   uint64
	raw  uint32
	priv ingress.Priv
	recs []pcRec
}

func (r *pcRecorder) Inst(_ int, _ uint64, pc uint64, raw uint32, priv ingress.Priv) error {
	r.pc, r.raw, r.priv = pc, raw, priv
	return nil
}
func (r *pcRecorder) Mem(_ int, write bool, addr uint64, size int, value uint64) error {
	r.recs = append(r.recs, pcRec{memRec{write, addr, size, value}, r.pc, r.raw, r.priv})
	return nil
}

// runFiltered runs prog with the data port feeding the filter stage fc
// in front of the data trace encoder, and returns the trace and every
// memory record (unfiltered).
func runFiltered(t *testing.T, prog string, cfg Config, fc *filter.Config) (*image.Set, []byte, []pcRec) {
	t.Helper()
	path, linux := simProgram(t, prog)
	img := image.NewSet()
	if err := img.AddELF(path); err != nil {
		t.Fatal(err)
	}
	m, err := sim.New(sim.Config{Mode: sim.Coalesced, MaxInstret: 1_000_000})
	if err != nil {
		t.Fatal(err)
	}
	if linux {
		err = m.LoadLinuxELF(path, []string{path}, nil)
	} else {
		err = m.LoadELF(path)
	}
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc, err := NewEncoder(&buf, cfg, img)
	if err != nil {
		t.Fatal(err)
	}
	de, err := NewDataEncoder(enc)
	if err != nil {
		t.Fatal(err)
	}
	fs := filter.New(fc, de)
	rec := &pcRecorder{}
	port := sim.NewDataPort(m, fs)
	port.Next = rec
	if cfg.Data.Split {
		if err := port.SetSplit(de.cfg.LRIDWidth); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.SetObserver(0, port); err != nil {
		t.Fatal(err)
	}
	if err := m.SetIngress(0, port.Ingress(fs)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Run(); err != nil && !errors.Is(err, sim.ErrInstructionLimit) {
		t.Fatalf("%s: %v", prog, err)
	}
	if err := port.Flush(); err != nil {
		t.Fatal(err)
	}
	return img, buf.Bytes(), rec.recs
}

// TestDataFilter traces programs through data filters (kinds, privilege,
// instruction and data address ranges, alternatives), in both protocols,
// and checks that the decoded accesses are exactly the simulator's
// memory records that pass, chosen here from the unfiltered records by a
// predicate written independently of the filter package. With a data
// address filter the accesses cannot be tied to instructions: the
// decoder says so once and lists them in order.
func TestDataFilter(t *testing.T) {
	for _, prog := range []string{"printf.elf", "memcpy.elf", "setjmp.elf"} {
		// the unfiltered records give the ranges used below
		cfg0 := DefaultConfig()
		cfg0.Data = &DataConfig{}
		_, _, all := runFiltered(t, prog, cfg0, &filter.Config{})
		if len(all) < 1000 {
			t.Fatalf("%s: %d memory records", prog, len(all))
		}
		mid := all[len(all)/2]
		plo, phi := mid.pc&^0xff, mid.pc&^0xff+0x100
		dlo, dhi := mid.addr&^0x3f, mid.addr&^0x3f+0x40
		for _, tc := range []struct {
			specs []string
			pred  func(r pcRec) bool
			byPC  bool // no data address condition: accesses paired with instructions
		}{
			{[]string{"kind=store"}, func(r pcRec) bool { return r.kind() == "store" }, true},
			{[]string{"kind=load,atomic"}, func(r pcRec) bool { return r.kind() != "store" }, true},
			{[]string{"priv=U;kind=load"}, func(r pcRec) bool { return r.priv == ingress.PrivU && r.kind() == "load" }, true},
			{[]string{"priv=S,M"}, func(r pcRec) bool { return r.priv == ingress.PrivS || r.priv == ingress.PrivM }, true},
			{[]string{fmt.Sprintf("addr=%#x-%#x", plo, phi)}, func(r pcRec) bool { return r.pc >= plo && r.pc < phi }, true},
			{[]string{"kind=store;" + fmt.Sprintf("addr=%#x-%#x", plo, phi), "kind=load"},
				func(r pcRec) bool { return r.kind() == "load" || r.kind() == "store" && r.pc >= plo && r.pc < phi }, true},
			{[]string{fmt.Sprintf("daddr=%#x-%#x", dlo, dhi)}, func(r pcRec) bool { return r.addr >= dlo && r.addr < dhi }, false},
			{[]string{fmt.Sprintf("daddr=%#x-%#x;kind=store", dlo, dhi), "kind=atomic"},
				func(r pcRec) bool {
					return r.kind() == "store" && r.addr >= dlo && r.addr < dhi || r.kind() == "atomic"
				}, false},
		} {
			var fc filter.Config
			for _, s := range tc.specs {
				if err := fc.ParseData(s); err != nil {
					t.Fatal(err)
				}
			}
			var want []memRec
			for _, r := range all {
				if tc.pred(r) {
					want = append(want, r.memRec)
				}
			}
			for _, split := range []bool{false, true} {
				if split && !tc.byPC {
					continue // not decodable (NewDataJoiner refuses it)
				}
				name := fmt.Sprintf("%s/%q/split=%v", prog, tc.specs, split)
				cfg := DefaultConfig()
				cfg.ResyncPeriod = 64
				cfg.Data = &DataConfig{Split: split, Filter: &fc}
				img, trace, recs := runFiltered(t, prog, cfg, &fc)
				if len(recs) != len(all) {
					t.Fatalf("%s: the run made %d records, the unfiltered one %d", name, len(recs), len(all))
				}
				s, err := decodeData(t, cfg, img, trace)
				if err != nil {
					t.Errorf("%s: %v", name, err)
				}
				warns := 0
				for _, e := range s.issues {
					if !tc.byPC && e.Kind == flow.KindWarn && warns == 0 {
						warns++
						continue
					}
					t.Errorf("%s: %v", name, &e)
				}
				if !tc.byPC && len(want) > 0 && warns != 1 {
					t.Errorf("%s: no warning that the accesses are not paired", name)
				}
				got := records(s.data)
				compareRecs(t, name, DataAddrValue, got, want)
				if tc.byPC {
					for i := range s.data {
						if e := &s.data[i]; e.Addr == 0 {
							t.Errorf("%s: access %d has no instruction", name, i)
							break
						}
					}
				}
				t.Logf("%s: %d of %d records", name, len(want), len(all))
			}
		}
	}
}

// TestDataFilterPrivilege traces a bare-metal program that loads and
// stores in M-mode, then in U-mode with calls into M-mode (ecall), through
// data filters on the privilege, in both protocols: the decoded accesses
// are exactly the simulator's memory records of the instructions that ran
// in the privileges let through (the privilege each record's instruction
// ran in, as the simulator's observer reports it), across every privilege
// change.
func TestDataFilterPrivilege(t *testing.T) {
	const prog = "testdata/privdata/privdata.elf"
	cfg0 := DefaultConfig()
	cfg0.Data = &DataConfig{}
	_, _, all := runFiltered(t, prog, cfg0, &filter.Config{})
	n := map[ingress.Priv]int{}
	for _, r := range all {
		n[r.priv]++
	}
	if n[ingress.PrivM] < 50 || n[ingress.PrivU] < 50 || len(n) != 2 {
		t.Fatalf("memory records by privilege: %v, want M and U", n)
	}
	for _, tc := range []struct {
		spec string
		pred func(r pcRec) bool
	}{
		{"priv=U", func(r pcRec) bool { return r.priv == ingress.PrivU }},
		{"priv=M", func(r pcRec) bool { return r.priv == ingress.PrivM }},
		{"priv=M;kind=store", func(r pcRec) bool { return r.priv == ingress.PrivM && r.kind() == "store" }},
		{"priv=U;kind=load", func(r pcRec) bool { return r.priv == ingress.PrivU && r.kind() == "load" }},
	} {
		var fc filter.Config
		if err := fc.ParseData(tc.spec); err != nil {
			t.Fatal(err)
		}
		var want []memRec
		for _, r := range all {
			if tc.pred(r) {
				want = append(want, r.memRec)
			}
		}
		for _, split := range []bool{false, true} {
			for _, resync := range []int{0, 16} {
				name := fmt.Sprintf("%q/split=%v/resync=%d", tc.spec, split, resync)
				cfg := DefaultConfig()
				cfg.ResyncPeriod = resync
				cfg.Data = &DataConfig{Split: split, Filter: &fc}
				img, trace, recs := runFiltered(t, prog, cfg, &fc)
				if len(recs) != len(all) {
					t.Fatalf("%s: the run made %d records, the unfiltered one %d", name, len(recs), len(all))
				}
				s, err := decodeData(t, cfg, img, trace)
				if err != nil {
					t.Errorf("%s: %v", name, err)
				}
				for _, e := range s.issues {
					t.Errorf("%s: %v", name, &e)
				}
				compareRecs(t, name, DataAddrValue, records(s.data), want)
				for i := range s.data {
					if e := &s.data[i]; e.Addr == 0 {
						t.Errorf("%s: access %d has no instruction", name, i)
						break
					}
				}
				t.Logf("%s: %d of %d records", name, len(want), len(all))
			}
		}
	}
}
