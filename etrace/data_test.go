package etrace

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/sim"
)

// memRec is one MR/MW record as the simulator's observer reports it (the
// records its full Tarmac has).
type memRec struct {
	write bool
	addr  uint64
	size  int
	value uint64
}

func (m memRec) String() string {
	k := "MR"
	if m.write {
		k = "MW"
	}
	return fmt.Sprintf("%s%d %#x %#x", k, m.size, m.addr, m.value)
}

// memRecorder is a sim.Observer that keeps the Mem records.
type memRecorder struct{ recs []memRec }

func (r *memRecorder) Inst(int, uint64, uint64, uint32, ingress.Priv) error { return nil }
func (r *memRecorder) IntReg(int, int, uint64) error                        { return nil }
func (r *memRecorder) FPReg(int, int, uint64) error                         { return nil }
func (r *memRecorder) CSR(int, uint16, uint64) error                        { return nil }
func (r *memRecorder) Trap(int, uint64, bool, uint64, uint64, uint64) error { return nil }
func (r *memRecorder) Mem(_ int, write bool, addr uint64, size int, value uint64) error {
	r.recs = append(r.recs, memRec{write, addr, size, value})
	return nil
}

// dataRun is a simulator run traced with data trace on.
type dataRun struct {
	img    *image.Set
	trace  []byte
	recs   []memRec // the observer's records
	stats  DataStats
	instrs uint64
	port   *sim.DataPort
}

// simProgram returns the path of a test program: the examples' Linux
// programs, or a corpus ELF (skipping without the corpus).
func simProgram(t testing.TB, name string) (path string, linux bool) {
	t.Helper()
	if strings.HasSuffix(name, ".elf") {
		return filepath.Join("..", "examples", "sim-tests", name), true
	}
	path = filepath.Join(corpus, "elf", name)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("corpus not present (%v)", err)
	}
	return path, false
}

// runData runs prog on the simulator with the data port and the E-Trace
// encoder (cfg, with cfg.Data set) attached.
func runData(t testing.TB, prog string, mode sim.BlockMode, cfg Config) *dataRun {
	t.Helper()
	path, linux := simProgram(t, prog)
	r := &dataRun{img: image.NewSet()}
	if err := r.img.AddELF(path); err != nil {
		t.Fatal(err)
	}
	m, err := sim.New(sim.Config{Mode: mode, MaxInstret: 3_000_000})
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
	enc, err := NewEncoder(&buf, cfg, r.img)
	if err != nil {
		t.Fatal(err)
	}
	de, err := NewDataEncoder(enc)
	if err != nil {
		t.Fatal(err)
	}
	rec := &memRecorder{}
	r.port = sim.NewDataPort(m, de)
	r.port.Next = rec
	if err := m.SetObserver(0, r.port); err != nil {
		t.Fatal(err)
	}
	if err := m.SetIngress(0, de); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Run(); err != nil && !errors.Is(err, sim.ErrInstructionLimit) {
		t.Fatalf("%s: %v", prog, err)
	}
	if err := r.port.Flush(); err != nil {
		t.Fatal(err)
	}
	r.trace, r.recs, r.stats = buf.Bytes(), rec.recs, de.Stats()
	r.instrs = enc.Stats().Instructions
	return r
}

// dataSink collects the decoded accesses and the warnings and gaps.
type dataSink struct {
	data   []flow.Event
	issues []flow.Event
	instrs uint64
}

func (s *dataSink) Event(e *flow.Event) error {
	switch e.Kind {
	case flow.KindData:
		s.data = append(s.data, *e)
	case flow.KindWarn, flow.KindGap:
		s.issues = append(s.issues, *e)
	case flow.KindRange:
		s.instrs += e.N
	}
	return nil
}
func (s *dataSink) Close() error { return nil }

// decodeData decodes trace with the joiner.
func decodeData(t testing.TB, cfg Config, img *image.Set, trace []byte) (*dataSink, error) {
	t.Helper()
	s := &dataSink{}
	j, err := NewDataJoiner(s, img, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDecoder(img, j, cfg)
	if err != nil {
		t.Fatal(err)
	}
	d.Data = j
	err = d.Decode(bytes.NewReader(trace))
	if cerr := j.Close(); err == nil {
		err = cerr
	}
	return s, err
}

// records expands decoded access events into MR/MW records, as the
// simulator reports them (an atomic: its load, then its store).
func records(evs []flow.Event) []memRec {
	var out []memRec
	for i := range evs {
		a := &evs[i].Access
		if a.DType.Reads() {
			out = append(out, memRec{false, a.DAddr, a.Bytes(), a.Data})
		}
		switch {
		case a.DType.IsAtomic():
			out = append(out, memRec{true, a.DAddr, a.Bytes(), a.SData})
		case a.DType == ingress.DTypeStore:
			out = append(out, memRec{true, a.DAddr, a.Bytes(), a.Data})
		}
	}
	return out
}

// compareRecs compares decoded records with the simulator's, ignoring
// what the data option leaves out.
func compareRecs(t *testing.T, name string, f DataFields, got, want []memRec) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d decoded memory records, simulator has %d", name, len(got), len(want))
	}
	bad := 0
	for i := 0; i < min(len(got), len(want)); i++ {
		g, w := got[i], want[i]
		switch f {
		case DataAddrOnly:
			g.value, w.value = 0, 0
		case DataValueOnly:
			g.addr, w.addr = 0, 0
		}
		if g != w {
			t.Errorf("%s: record %d: decoded %v, simulator %v", name, i, g, w)
			if bad++; bad > 5 {
				return
			}
		}
	}
}

var dataPrograms = []string{
	"memcpy.elf", "misaligned.elf", "printf.elf", "setjmp.elf", "recursion.elf",
	"br_j_asm.riscv", "towers.riscv", "qsort.riscv", "dhrystone.riscv",
}

// TestDataRoundTrip traces the simulator's test programs with data trace
// in every data option, both framings and both block modes, and checks
// that the decoded accesses are the simulator's own memory records, one
// for one, with no warning.
func TestDataRoundTrip(t *testing.T) {
	progs := dataPrograms
	if testing.Short() {
		progs = progs[:2]
	}
	for _, prog := range progs {
		for _, bm := range []sim.BlockMode{sim.Coalesced, sim.PerInstruction} {
			for _, f := range []DataFields{DataAddrValue, DataAddrOnly, DataValueOnly} {
				for _, encap := range []Encap{EncapRaw, EncapUTDD} {
					cfg := DefaultConfig()
					cfg.ResyncPeriod = 64
					cfg.Encap = encap
					if encap == EncapUTDD {
						cfg.SrcBits, cfg.SrcID = 4, 1
					}
					cfg.Data = &DataConfig{Fields: f, SrcID: 2}
					name := fmt.Sprintf("%s/%v/%v/%v", prog, bm, f, encap)
					r := runData(t, prog, bm, cfg)
					if r.port.Inexact+r.port.Late > 0 {
						t.Logf("%s: %d inexact, %d late sc failures", name, r.port.Inexact, r.port.Late)
					}
					s, err := decodeData(t, cfg, r.img, r.trace)
					if err != nil {
						t.Errorf("%s: %v", name, err)
					}
					for _, e := range s.issues {
						t.Errorf("%s: %v", name, &e)
					}
					if s.instrs != r.instrs {
						t.Errorf("%s: decoded %d instructions, encoded %d", name, s.instrs, r.instrs)
					}
					compareRecs(t, name, f, records(s.data), r.recs)
					if len(r.recs) == 0 {
						t.Errorf("%s: no memory access", name)
					}
				}
			}
		}
	}
}
