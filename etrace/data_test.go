package etrace

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
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

func (r *memRecorder) Inst(int, uint64, uint64, uint32, ingress.Priv) error               { return nil }
func (r *memRecorder) IntReg(int, int, uint64) error                                      { return nil }
func (r *memRecorder) FPReg(int, int, uint64) error                                       { return nil }
func (r *memRecorder) CSR(int, uint16, uint64) error                                      { return nil }
func (r *memRecorder) Trap(int, uint64, ingress.Priv, bool, uint64, uint64, uint64) error { return nil }
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
	evs    []portEvent // the blocks and accesses, in order
}

// simProgram returns the path of a test program: the examples' Linux
// programs, or a corpus ELF (skipping without the corpus).
func simProgram(t testing.TB, name string) (path string, linux bool) {
	t.Helper()
	if strings.HasPrefix(name, "testdata/") {
		return name, false // a bare-metal program of this package
	}
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
	evs := &portRecorder{}
	r.port = sim.NewDataPort(m, teeData{de, evs})
	r.port.Next = rec
	if cfg.Data.Split {
		if err := r.port.SetSplit(de.cfg.LRIDWidth); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.SetObserver(0, r.port); err != nil {
		t.Fatal(err)
	}
	if err := m.SetIngress(0, r.port.Ingress(teeBlocks{de, evs})); err != nil {
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
	r.evs = evs.evs
	return r
}

// replay encodes the blocks and accesses of a run with cfg.
func replay(t testing.TB, r *dataRun, cfg Config) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc, err := NewEncoder(&buf, cfg, r.img)
	if err != nil {
		t.Fatal(err)
	}
	de, err := NewDataEncoder(enc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range r.evs {
		e := &r.evs[i]
		if e.access {
			err = de.Access(&e.acc)
		} else if e.isResp {
			err = de.Response(&e.resp)
		} else {
			err = de.Block(&e.blk)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := de.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
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
			// one live run; the other configurations encode what it
			// recorded (the first, its replay, must give the same bytes)
			var r *dataRun
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
					var trace []byte
					if r == nil {
						r = runData(t, prog, bm, cfg)
						if r.port.Inexact+r.port.Late > 0 {
							t.Logf("%s: %d inexact, %d late sc failures", name, r.port.Inexact, r.port.Late)
						}
						trace = r.trace
						if again := replay(t, r, cfg); !bytes.Equal(again, trace) {
							t.Errorf("%s: replayed blocks and accesses give another trace", name)
						}
					} else {
						trace = replay(t, r, cfg)
					}
					s, err := decodeData(t, cfg, r.img, trace)
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

// TestDataPacketLayout checks data packets bit for bit against the
// specification's tables, packing the fields independently.
func TestDataPacketLayout(t *testing.T) {
	pack := packFields
	d := &DataConfig{DataWidth: 64, DAddressWidth: 64}
	c := newDataCodec(d)
	if c.sizeBits != 2 {
		t.Fatalf("size field %d bits, want 2 (max(1, clog2(clog2(64/8+1))))", c.sizeBits)
	}
	var st dataState
	var p DataPacket
	// a full 4-byte load at an aligned address: format 000, size 10, diff
	// 00, data_len 11, 32 bits of data, address >> 2
	a := ingress.Access{DType: ingress.DTypeLoad, DSize: 2, DAddr: 0x80001000, Data: 0x12345678}
	c.encodeAccess(&st, &a, true, &p)
	got := c.append(nil, &p)
	want := pack([2]uint64{0, 3}, [2]uint64{2, 2}, [2]uint64{0, 2}, [2]uint64{3, 2}, [2]uint64{0x12345678, 32}, [2]uint64{0x80001000 >> 2, 64})
	if !bytes.Equal(got, want) || got[0] != 0x90 || got[1] != 0xf1 {
		t.Errorf("full load: % x, want % x (starting 90 f1)", got, want)
	}
	// the next 4-byte store 8 bytes on, its value one more: format 010,
	// diff 01 (XOR data: as short as the difference, and preferred),
	// data_len 0, data 1, address +2 words
	a = ingress.Access{DType: ingress.DTypeStore, DSize: 2, DAddr: 0x80001008, Data: 0x12345679}
	c.encodeAccess(&st, &a, true, &p)
	got = c.append(nil, &p)
	want = pack([2]uint64{2, 3}, [2]uint64{2, 2}, [2]uint64{1, 2}, [2]uint64{0, 2}, [2]uint64{1, 8}, [2]uint64{2, 64})
	if !bytes.Equal(got, want) {
		t.Errorf("differential store: % x, want % x", got, want)
	}
	// an unaligned 2-byte load: format 001, full (first of its size),
	// data 0xff01 needs 2 bytes (1 byte would sign-extend to 0x0001)
	a = ingress.Access{DType: ingress.DTypeLoad, DSize: 1, DAddr: 0x80001003, Data: 0xff01}
	c.encodeAccess(&st, &a, true, &p)
	got = c.append(nil, &p)
	want = pack([2]uint64{1, 3}, [2]uint64{1, 2}, [2]uint64{0, 2}, [2]uint64{1, 1}, [2]uint64{0xff01, 16}, [2]uint64{0x80001003, 64})
	if !bytes.Equal(got, want) {
		t.Errorf("unaligned load: % x, want % x", got, want)
	}
	// amoadd.w, full: format 110, subtype 001, size, diff, op_len,
	// operand (store - load), data_len, data (load), address >> 2
	a = ingress.Access{DType: ingress.DTypeAtomicAdd, DSize: 2, DAddr: 0x80002000, Data: 5, SData: 7}
	st.reset()
	c.encodeAccess(&st, &a, true, &p)
	got = c.append(nil, &p)
	want = pack([2]uint64{6, 3}, [2]uint64{1, 3}, [2]uint64{2, 2}, [2]uint64{0, 2}, [2]uint64{0, 2}, [2]uint64{2, 8},
		[2]uint64{0, 2}, [2]uint64{5, 8}, [2]uint64{0x80002000 >> 2, 64})
	if !bytes.Equal(got, want) {
		t.Errorf("amoadd: % x, want % x", got, want)
	}
	// address only: format, size, diff (1 bit), address
	c = newDataCodec(&DataConfig{Fields: DataAddrOnly, DataWidth: 64, DAddressWidth: 64})
	st.reset()
	a = ingress.Access{DType: ingress.DTypeStore, DSize: 3, DAddr: 0x1000}
	c.encodeAccess(&st, &a, true, &p)
	a.DAddr = 0xff8
	c.encodeAccess(&st, &a, true, &p)
	got = c.append(nil, &p)
	want = pack([2]uint64{2, 3}, [2]uint64{3, 2}, [2]uint64{1, 1}, [2]uint64{^uint64(0), 64})
	if !bytes.Equal(got, want) {
		t.Errorf("address-only store, one doubleword back: % x, want % x", got, want)
	}
	// data only: format (a byte is always aligned), size, diff (2 bits),
	// data (data_width_p bits, sign-extended from the byte)
	c = newDataCodec(&DataConfig{Fields: DataValueOnly, DataWidth: 64, DAddressWidth: 64})
	st.reset()
	a = ingress.Access{DType: ingress.DTypeLoad, DSize: 0, DAddr: 0x1001, Data: 0x80}
	c.encodeAccess(&st, &a, true, &p)
	got = c.append(nil, &p)
	want = pack([2]uint64{0, 3}, [2]uint64{0, 2}, [2]uint64{0, 2}, [2]uint64{0xffffffffffffff80, 64})
	if !bytes.Equal(got, want) {
		t.Errorf("data-only byte load: % x, want % x", got, want)
	}
}

// TestDataCodecRoundTrip checks that every access decodes to itself
// through the packet layer, in every option.
func TestDataCodecRoundTrip(t *testing.T) {
	accs := []ingress.Access{
		{DType: ingress.DTypeLoad, DSize: 3, DAddr: 0x7fff_fff0, Data: 0xdead_beef_0000_0001},
		{DType: ingress.DTypeLoad, DSize: 3, DAddr: 0x7fff_fff8, Data: 0xdead_beef_0000_0002},
		{DType: ingress.DTypeStore, DSize: 0, DAddr: 0x13, Data: 0xff},
		{DType: ingress.DTypeStore, DSize: 1, DAddr: 0x15, Data: 0x8000},
		{DType: ingress.DTypeLoad, DSize: 2, DAddr: 0x102, Data: 0x7fffffff},
		{DType: ingress.DTypeLoad, DSize: 2, DAddr: 0x104, Data: 0x80000000},
		{DType: ingress.DTypeSCFail, DSize: 2, DAddr: 0x200},
		{DType: ingress.DTypeAtomicSwp, DSize: 2, DAddr: 0x200, Data: 1, SData: 0xffffffff},
		{DType: ingress.DTypeAtomicXor, DSize: 3, DAddr: 0x208, Data: 0x55, SData: 0xaa},
		{DType: ingress.DTypeAtomicAdd, DSize: 3, DAddr: 0x208, Data: 0xffffffffffffffff, SData: 0},
		{DType: ingress.DTypeAtomicMin, DSize: 3, DAddr: 0x210, Data: 9, SData: 3},
		{DType: ingress.DTypeStore, DSize: 3, DAddr: 0xffff_ffff_ffff_fff8, Data: 1},
	}
	for _, f := range []DataFields{DataAddrValue, DataAddrOnly, DataValueOnly} {
		for _, comp := range []bool{true, false} {
			d := &DataConfig{Fields: f, DataWidth: 64, DAddressWidth: 64}
			enc, dec := newDataCodec(d), newDataCodec(d)
			var es, ds dataState
			var p, q DataPacket
			for i, a := range accs {
				enc.encodeAccess(&es, &a, comp, &p)
				b := enc.append(nil, &p)
				if err := dec.parse(b, &q); err != nil {
					t.Fatalf("%v/%d: parse % x: %v", f, i, b, err)
				}
				var got ingress.Access
				if err := dec.decodeAccess(&ds, &q, &got); err != nil {
					t.Fatalf("%v/%d: %v", f, i, err)
				}
				want := a
				switch {
				case f == DataAddrOnly:
					want.Data, want.SData = 0, 0
				case f == DataValueOnly:
					want.DAddr = 0
				}
				if f == DataAddrOnly || a.DType == ingress.DTypeSCFail {
					want.Data, want.SData = 0, 0
				}
				if got != want {
					t.Errorf("%v/compress=%v/%d: decoded %v, want %v (packet % x)", f, comp, i, &got, &want, b)
				}
			}
		}
	}
}

// dataFrames returns the offsets and lengths of the data frames of a raw
// trace.
func dataFrames(t testing.TB, cfg Config, trace []byte) [][2]int {
	sc := NewScanner(bytes.NewReader(trace), &cfg)
	var out [][2]int
	for sc.Scan() {
		fr := sc.Frame()
		if fr.Data {
			out = append(out, [2]int{int(fr.Offset), int(sc.Offset() - fr.Offset)})
		}
	}
	if sc.Err() != nil {
		t.Fatal(sc.Err())
	}
	return out
}

// TestDataJoinMismatch removes, duplicates and corrupts data packets and
// checks that the joiner says so with the byte offset, and that what it
// joined before is a prefix of the simulator's records.
func TestDataJoinMismatch(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Data = &DataConfig{}
	r := runData(t, "memcpy.elf", sim.Coalesced, cfg)
	frames := dataFrames(t, cfg, r.trace)
	if len(frames) < 100 {
		t.Fatalf("%d data frames", len(frames))
	}
	for _, tc := range []struct {
		name string
		edit func(k int) []byte
	}{
		{"drop", func(k int) []byte {
			f := frames[k]
			return append(append([]byte{}, r.trace[:f[0]]...), r.trace[f[0]+f[1]:]...)
		}},
		{"duplicate", func(k int) []byte {
			f := frames[k]
			return append(append([]byte{}, r.trace[:f[0]+f[1]]...), r.trace[f[0]:]...)
		}},
		{"format", func(k int) []byte {
			b := append([]byte{}, r.trace...)
			b[frames[k][0]+1] |= 7 // reserved format 111
			return b
		}},
	} {
		for _, k := range []int{0, 1, len(frames) / 2, len(frames) - 1} {
			s, err := decodeData(t, cfg, r.img, tc.edit(k))
			if err != nil {
				t.Errorf("%s %d: %v", tc.name, k, err)
			}
			if len(s.issues) == 0 {
				t.Errorf("%s data packet %d (byte %d): no warning", tc.name, k, frames[k][0])
				continue
			}
			suspect := false
			for _, e := range s.issues {
				if e.Kind != flow.KindWarn || e.Offset < 0 {
					t.Errorf("%s %d: %v, want a warning with an offset", tc.name, k, &e)
				}
				suspect = suspect || strings.Contains(e.Err.Error(), "may be paired with the wrong instructions")
			}
			if k > 1 && tc.name != "format" && !suspect {
				// the accesses joined before the mismatch showed are
				// flagged (the lost packet shifted them)
				t.Errorf("%s %d: no warning counts the accesses joined before: %v", tc.name, k, s.issues)
			}
			got := records(s.data)
			n := min(len(got), len(r.recs))
			if tc.name != "drop" && tc.name != "duplicate" {
				compareRecs(t, tc.name, DataAddrValue, got[:n], r.recs[:n])
			}
		}
	}
}

// teeData sends accesses to both sinks.
type teeData [2]ingress.DataSink

func (t teeData) Access(a *ingress.Access) error {
	if err := t[0].Access(a); err != nil {
		return err
	}
	return t[1].Access(a)
}

// Response sends a load response to both sinks.
func (t teeData) Response(r *ingress.LoadResponse) error {
	if err := t[0].(ingress.SplitDataSink).Response(r); err != nil {
		return err
	}
	return t[1].(ingress.SplitDataSink).Response(r)
}

// teeBlocks sends blocks to both sinks.
type teeBlocks [2]ingress.Sink

func (t teeBlocks) Block(b *ingress.Block) error {
	if err := t[0].Block(b); err != nil {
		return err
	}
	return t[1].Block(b)
}

func (t teeBlocks) Close() error {
	err := t[0].Close()
	if e := t[1].Close(); err == nil {
		err = e
	}
	return err
}

// TestDataCSV writes the simulator's accesses and blocks as a data
// ingress CSV and an ingress CSV, reads them back side by side
// (DataMerger) into the encoder, and checks that the trace is byte for
// byte the one encoded live.
func TestDataCSV(t *testing.T) {
	for _, prog := range []string{"printf.elf", "br_j_asm.riscv"} {
		for _, bm := range []sim.BlockMode{sim.Coalesced, sim.PerInstruction} {
			path, linux := simProgram(t, prog)
			img := image.NewSet()
			if err := img.AddELF(path); err != nil {
				t.Fatal(err)
			}
			m, err := sim.New(sim.Config{Mode: bm, MaxInstret: 1_000_000})
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
			cfg := DefaultConfig()
			cfg.Data = &DataConfig{}
			var live, dcsv, icsv bytes.Buffer
			enc, _ := NewEncoder(&live, cfg, img)
			de, err := NewDataEncoder(enc)
			if err != nil {
				t.Fatal(err)
			}
			dw := ingress.NewDataCSVWriter(&dcsv)
			iopt := ingress.CSVOptions{Halfwords: true, Time: true, SIJump: true}
			iw := ingress.NewCSVWriter(&icsv, iopt)
			port := sim.NewDataPort(m, teeData{de, dw})
			if err := m.SetObserver(0, port); err != nil {
				t.Fatal(err)
			}
			if err := m.SetIngress(0, teeBlocks{de, iw}); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Run(); err != nil && !errors.Is(err, sim.ErrInstructionLimit) {
				t.Fatal(err)
			}
			if err := dw.Close(); err != nil {
				t.Fatal(err)
			}
			// read back
			src, err := ingress.NewCSVSource(bytes.NewReader(icsv.Bytes()), "i.csv", iopt)
			if err != nil {
				t.Fatal(err)
			}
			ds, err := ingress.NewDataCSVSource(bytes.NewReader(dcsv.Bytes()), "d.csv")
			if err != nil {
				t.Fatal(err)
			}
			var again bytes.Buffer
			enc2, _ := NewEncoder(&again, cfg, img)
			de2, _ := NewDataEncoder(enc2)
			mg := ingress.NewDataMerger(de2, ds)
			for {
				b, err := src.Next()
				if err != nil {
					if err.Error() != "EOF" {
						t.Fatal(err)
					}
					break
				}
				if err := mg.Block(b); err != nil {
					t.Fatal(err)
				}
			}
			if err := mg.Close(); err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%s/%v", prog, bm)
			if port.Accesses == 0 || mg.Accesses() != port.Accesses {
				t.Errorf("%s: %d accesses read back, %d written", name, mg.Accesses(), port.Accesses)
			}
			if !bytes.Equal(again.Bytes(), live.Bytes()) {
				t.Errorf("%s: trace from the CSV files (%d bytes) differs from the live one (%d bytes)", name, again.Len(), live.Len())
			}
		}
	}
}

// BenchmarkDecodeData measures decoding with the data packets joined to
// the flow (into a counting sink), against decoding the instruction
// trace alone of the same run; the metric is instructions per second
// (wall clock and CPU time). t1 (BenchmarkDecode/baseline, whose rate on
// an idle machine PERFORMANCE.md gives) calibrates a run on a busy one.
func BenchmarkDecodeData(b *testing.B) {
	b.Run("t1/instructions", func(b *testing.B) {
		img, pcs := loadT1(b)
		blocks := genBlocks(b, img, pcs, genOpts{})
		cfg := DefaultConfig()
		trace, _ := encode(b, cfg, nil, blocks)
		b.ResetTimer()
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			var c flow.Counter
			d, _ := NewDecoder(img, &c, cfg)
			if err := d.Decode(bytes.NewReader(trace)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(pcs))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Minstr/s")
		b.ReportMetric(float64(len(pcs))*float64(b.N)/(cpuTime()-cpu0)/1e6, "Minstr/cpu-s")
	})
	for _, prog := range []string{"memcpy.elf", "qsort.riscv", "coremark.riscv"} {
		for _, data := range []bool{false, true} {
			name := prog + "/instructions"
			if data {
				name = prog + "/with-data"
			}
			b.Run(name, func(b *testing.B) {
				cfg := DefaultConfig()
				cfg.Data = &DataConfig{}
				r := runData(b, prog, sim.Coalesced, cfg)
				trace := r.trace
				if !data {
					// the same run, instruction trace only
					var buf bytes.Buffer
					sc := NewScanner(bytes.NewReader(r.trace), &cfg)
					for sc.Scan() {
						if fr := sc.Frame(); !fr.Data {
							buf.WriteByte(byte(len(fr.Payload)) | msgTeInst<<5)
							buf.Write(fr.Payload)
						}
					}
					trace = buf.Bytes()
					cfg.Data = nil
				}
				var c flow.Counter
				b.ResetTimer()
				b.ReportAllocs()
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					c = flow.Counter{}
					var sink flow.Sink = &c
					var j *DataJoiner
					if data {
						j, _ = NewDataJoiner(&c, r.img, &cfg)
						sink = j
					}
					d, _ := NewDecoder(r.img, sink, cfg)
					if j != nil {
						d.Data = j
					}
					if err := d.Decode(bytes.NewReader(trace)); err != nil {
						b.Fatal(err)
					}
					if j != nil {
						j.Flush()
						if j.Joined() != r.stats.Accesses || j.Mismatches() != 0 {
							b.Fatalf("joined %d of %d accesses, %d warnings", j.Joined(), r.stats.Accesses, j.Mismatches())
						}
					}
				}
				if c.Instructions != r.instrs {
					b.Fatalf("decoded %d instructions, want %d", c.Instructions, r.instrs)
				}
				b.ReportMetric(float64(r.instrs)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Minstr/s")
				b.ReportMetric(float64(r.instrs)*float64(b.N)/(cpuTime()-cpu0)/1e6, "Minstr/cpu-s")
				if data {
					b.ReportMetric(float64(r.stats.Accesses)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Maccess/s")
				}
			})
		}
	}
}

// cpuTime returns the process's user and system CPU time in seconds (a
// benchmark's rate per CPU-second is steadier than per wall-clock second
// on a shared machine).
func cpuTime() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// portEvent is a block or an access, in the order the simulator sent
// them.
type portEvent struct {
	blk    ingress.Block
	acc    ingress.Access
	resp   ingress.LoadResponse
	access bool
	isResp bool
}

type portRecorder struct{ evs []portEvent }

func (r *portRecorder) Block(b *ingress.Block) error {
	r.evs = append(r.evs, portEvent{blk: *b})
	return nil
}
func (r *portRecorder) Close() error { return nil }
func (r *portRecorder) Access(a *ingress.Access) error {
	r.evs = append(r.evs, portEvent{acc: *a, access: true})
	return nil
}
func (r *portRecorder) Response(l *ingress.LoadResponse) error {
	r.evs = append(r.evs, portEvent{resp: *l, isResp: true})
	return nil
}

// recordPort runs prog and returns its blocks and accesses in order.
func recordPort(t *testing.T, prog string) (*image.Set, []portEvent) {
	path, linux := simProgram(t, prog)
	img := image.NewSet()
	if err := img.AddELF(path); err != nil {
		t.Fatal(err)
	}
	m, err := sim.New(sim.Config{MaxInstret: 1_000_000})
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
	rec := &portRecorder{}
	if err := m.SetObserver(0, sim.NewDataPort(m, rec)); err != nil {
		t.Fatal(err)
	}
	if err := m.SetIngress(0, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Run(); err != nil && !errors.Is(err, sim.ErrInstructionLimit) {
		t.Fatal(err)
	}
	return img, rec.evs
}

// TestDataSegments stops tracing in the middle of a run (as a filter
// does: TraceOff, blocks and accesses not given) and restarts it: the
// accesses of both segments are joined, none of the gap's. A capture
// cut in the middle of a segment joins nothing of that segment (its
// first data packets cannot be paired) and says so.
func TestDataSegments(t *testing.T) {
	img, evs := recordPort(t, "printf.elf")
	cut1, cut2 := len(evs)/3, 2*len(evs)/3
	// cut after a block: the accesses before a block are its own
	for evs[cut1-1].access {
		cut1++
	}
	for evs[cut2-1].access {
		cut2++
	}
	cfg := DefaultConfig()
	cfg.ResyncPeriod = 32
	cfg.Data = &DataConfig{}
	var buf bytes.Buffer
	enc, _ := NewEncoder(&buf, cfg, img)
	de, err := NewDataEncoder(enc)
	if err != nil {
		t.Fatal(err)
	}
	var want []ingress.Access
	for i := range evs {
		if i >= cut1 && i < cut2 {
			if i == cut1 {
				if err := de.TraceOff(); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		e := &evs[i]
		if e.access {
			want = append(want, e.acc)
			err = de.Access(&e.acc)
		} else {
			err = de.Block(&e.blk)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := de.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := decodeData(t, cfg, img, buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range s.issues {
		t.Errorf("%v", &e)
	}
	if len(s.data) != len(want) {
		t.Fatalf("%d accesses decoded, %d traced", len(s.data), len(want))
	}
	for i := range want {
		if got := s.data[i].Access; got != want[i] {
			t.Fatalf("access %d: %v, want %v", i, &got, &want[i])
		}
	}
	// a capture that starts in the second segment, after its first
	// sync packet
	frames := dataFrames(t, cfg, buf.Bytes())
	start := frames[len(frames)*3/4][0]
	tcfg := cfg
	tcfg.Decode.AllowTruncated = true
	s, err = decodeData(t, tcfg, img, buf.Bytes()[start:])
	if err != nil {
		t.Fatal(err)
	}
	if len(s.data) != 0 {
		t.Errorf("truncated capture: %d accesses joined, want none", len(s.data))
	}
	warned := false
	for _, e := range s.issues {
		warned = warned || e.Kind == flow.KindWarn && strings.Contains(e.Err.Error(), "not joined")
	}
	if !warned || s.instrs == 0 {
		t.Errorf("truncated capture: %d instructions, warnings %v", s.instrs, s.issues)
	}
}

// TestDataDecodeFrame checks the fast path of the joiner's packet decoder
// against parse and decodeAccess on random and real payloads.
func TestDataDecodeFrame(t *testing.T) {
	for _, f := range []DataFields{DataAddrValue, DataAddrOnly, DataValueOnly, DataAddrValue + 16} {
		daw := 64
		if f == DataAddrValue+16 {
			// a narrower address field
			f, daw = DataAddrValue, 40
		}
		d := &DataConfig{Fields: f, DataWidth: 64, DAddressWidth: daw}
		c1, c2 := newDataCodec(d), newDataCodec(d)
		var s1, s2 dataState
		seed := uint64(1)
		for i := 0; i < 200000; i++ {
			seed = seed*6364136223846793005 + 1442695040888963407
			n := 1 + int(seed>>60)%9
			if i%5000 == 0 {
				s1.reset()
				s2.reset()
			}
			var pl [9]byte
			for k := 0; k < n; k++ {
				pl[k] = byte(seed >> (8 * uint(k%8)) * uint64(k+1))
			}
			for k := n; k < len(pl); k++ {
				pl[k] = byte(seed>>32) | 0x5a // bytes after the payload: not its own
			}
			var p DataPacket
			var a1, a2 ingress.Access
			err1 := c1.parse(pl[:n], &p)
			if err1 == nil {
				err1 = c1.decodeAccess(&s1, &p, &a1)
			}
			err2 := c2.decodeFrame(pl[:n], &s2, &a2, &p)
			if (err1 == nil) != (err2 == nil) || err1 == nil && a1 != a2 || s1 != s2 {
				t.Fatalf("%v: payload % x: parse+decodeAccess %v %v, decodeFrame %v %v", f, pl[:n], &a1, err1, &a2, err2)
			}
		}
	}
}

// TestByteLenRef checks byteLen against its definition: the fewest low
// bytes from which sign extension restores the value.
func TestByteLenRef(t *testing.T) {
	ref := func(v uint64, size uint8) int {
		n := 1 << size
		v = sext(v, 8*n)
		for k := 1; k < n; k++ {
			if sext(v, 8*k) == v {
				return k
			}
		}
		return n
	}
	for z := uint8(0); z < 4; z++ {
		for _, v := range []uint64{0, 1, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff, 0x12345678, 0x80000000, 0xffffffff, 1 << 63, ^uint64(0), 0x7fffffffffffffff, 0xff80, 0xffffff80} {
			v &= sizeMask(z)
			if byteLen(v, z) != ref(v, z) {
				t.Errorf("%#x/%d: %d, want %d", v, z, byteLen(v, z), ref(v, z))
			}
		}
	}
}

// FuzzDataPacket checks that the data packet decoders never panic, that
// the joiner's fast path agrees with the generic one, and that a packet
// that decodes writes back to the same bytes.
func FuzzDataPacket(f *testing.F) {
	f.Add(byte(0), []byte{0x18, 0x04, 0x28, 0x07, 0x40, 0x00, 0x20})
	f.Add(byte(0), []byte{0x5a, 0x00, 0xf4})
	f.Add(byte(1), []byte{0x52, 0xff})
	f.Add(byte(2), []byte{0x06, 0x01, 0x02})
	f.Add(byte(16), []byte{0x05, 0x04, 0x34, 0x01}) // CSR (datacsr.go)
	f.Add(byte(16+32+8), []byte{0x2d, 0x80, 0x99, 0x00, 0x01})
	f.Fuzz(func(t *testing.T, sel byte, payload []byte) {
		d := &DataConfig{Fields: DataFields(sel % 3), DataWidth: 64, DAddressWidth: 64}
		if sel&4 != 0 {
			d.DataWidth, d.DAddressWidth = 32, 32
		}
		if sel&16 != 0 && d.Fields != DataValueOnly {
			d.CSR, d.CSRWidth = true, 64
			if sel&32 != 0 {
				d.CSRWidth = 32
			}
		}
		c1, c2 := newDataCodec(d), newDataCodec(d)
		var s1, s2 dataState
		if sel&8 != 0 {
			s1.valid, s2.valid = [4]bool{true, true, true, true}, [4]bool{true, true, true, true}
			s1.csrValid, s2.csrValid = true, true
		}
		var p, q DataPacket
		var a1, a2 ingress.Access
		err1 := c1.parse(payload, &p)
		if err1 == nil {
			if b := c1.append(nil, &p); !bytes.Equal(b, payload) {
				t.Fatalf("% x parses to %+v, which writes % x", payload, p, b)
			}
			err1 = c1.decodeAccess(&s1, &p, &a1)
		}
		err2 := c2.decodeFrame(payload, &s2, &a2, &q)
		if (err1 == nil) != (err2 == nil) || err1 == nil && a1 != a2 {
			t.Fatalf("% x: %v %v, fast path %v %v", payload, &a1, err1, &a2, err2)
		}
	})
}

// FuzzDataDecode decodes arbitrary bytes as a trace with data trace on:
// no panic, no hang, and every access joined is of the kind and size of
// its instruction.
func FuzzDataDecode(f *testing.F) {
	cfg := DefaultConfig()
	cfg.Data = &DataConfig{}
	cfg.Decode.AllowTruncated = true
	path := filepath.Join("..", "examples", "sim-tests", "setjmp.elf")
	img := image.NewSet()
	if err := img.AddELF(path); err != nil {
		f.Skip(err)
	}
	f.Add([]byte{0x1f, 0x40, 0x04, 0x13, 0xca, 0x41, 0x67, 0x18, 0x04, 0x28, 0x07, 0x40, 0x00, 0x20})
	f.Fuzz(func(t *testing.T, trace []byte) {
		s := &dataSink{}
		j, _ := NewDataJoiner(s, img, &cfg)
		d, _ := NewDecoder(img, j, cfg)
		d.Data = j
		d.MaxWalk = 1 << 16
		d.Decode(bytes.NewReader(trace))
		j.Close()
		var ops opCache
		for _, e := range s.data {
			in, ok := img.Inst(e.Addr)
			if !ok {
				t.Fatalf("access of %#x, outside the image", e.Addr)
			}
			if m := ops.get(in.Op &^ 0x8000); !compatible(&m, &e.Access) {
				t.Fatalf("%v joined to %v", &e, in)
			}
		}
	})
}

// warnSink keeps the warnings it is sent.
type warnSink struct{ warns []error }

func (w *warnSink) Event(e *flow.Event) error {
	if e.Kind == flow.KindWarn {
		w.warns = append(w.warns, e.Err)
	}
	return nil
}

func (w *warnSink) Close() error { return nil }

// A support packet that reports data packets lost (dloss) is a warning
// with its offset: the accesses after it cannot be paired silently.
func TestDataJoinLoss(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Data = &DataConfig{}
	r := runData(t, "memcpy.elf", sim.Coalesced, cfg)
	for _, dloss := range []uint8{0, 1} {
		w := &warnSink{}
		j, err := NewDataJoiner(w, r.img, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := &Packet{Format: FormatSync, Subformat: SubSupport, IEnable: 1, DEnable: 1, DLoss: dloss, DOptions: cfg.Data.DOptions()}
		if err := j.InstPacket(p, 1234); err != nil {
			t.Fatal(err)
		}
		switch {
		case dloss == 0 && len(w.warns) != 0:
			t.Errorf("dloss=0: %v", w.warns)
		case dloss == 1 && (len(w.warns) != 1 || !errors.Is(w.warns[0], decode.ErrOverflow) || !strings.Contains(w.warns[0].Error(), "byte 1234")):
			t.Errorf("dloss=1: %v, want one warning at byte 1234", w.warns)
		}
	}
}
