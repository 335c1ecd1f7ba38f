package etrace

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/filter"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/sim"
)

// TestDataSplitRoundTrip traces the programs of TestDataRoundTrip with
// the split protocol (responses out of order, some after the te_inst
// packets that report their load) in every data option, both framings
// and both block modes: the decoded accesses are the simulator's memory
// records one for one, with no warning.
func TestDataSplitRoundTrip(t *testing.T) {
	progs := dataPrograms
	if testing.Short() {
		progs = progs[:2]
	}
	var heldBack, reordered uint64
	for _, prog := range progs {
		for _, bm := range []sim.BlockMode{sim.Coalesced, sim.PerInstruction} {
			var r *dataRun
			for _, f := range []DataFields{DataAddrValue, DataAddrOnly, DataValueOnly} {
				for _, encap := range []Encap{EncapRaw, EncapUTDD} {
					cfg := DefaultConfig()
					cfg.ResyncPeriod = 64
					cfg.Encap = encap
					if encap == EncapUTDD {
						cfg.SrcBits, cfg.SrcID = 4, 1
					}
					cfg.Data = &DataConfig{Fields: f, SrcID: 2, Split: true}
					name := fmt.Sprintf("%s/%v/%v/%v/split", prog, bm, f, encap)
					var trace []byte
					if r == nil {
						r = runData(t, prog, bm, cfg)
						trace = r.trace
						if again := replay(t, r, cfg); !bytes.Equal(again, trace) {
							t.Errorf("%s: replayed blocks and accesses give another trace", name)
						}
						reordered += outOfOrder(r.evs)
					} else {
						trace = replay(t, r, cfg)
					}
					s, j, err := decodeDataJ(t, cfg, r.img, trace)
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
					heldBack += j.heldBack
				}
			}
		}
	}
	// the test exercises what makes the split protocol hard
	if reordered == 0 {
		t.Errorf("no response came out of order")
	}
	if heldBack == 0 {
		t.Errorf("no load was joined before its data came")
	}
	t.Logf("%d responses out of order, %d loads joined before their data", reordered, heldBack)
}

// outOfOrder counts responses that answer a later request before an
// earlier one still in flight.
func outOfOrder(evs []portEvent) uint64 {
	var n uint64
	seq := map[uint32]int{} // lrid in flight -> request number
	k := 0
	for _, e := range evs {
		switch {
		case e.access && e.acc.Split:
			seq[e.acc.LRID] = k
			k++
		case e.isResp:
			me := seq[e.resp.LID]
			for _, o := range seq {
				if o < me {
					n++
					break
				}
			}
			delete(seq, e.resp.LID)
		}
	}
	return n
}

// decodeDataJ is decodeData returning the joiner too.
func decodeDataJ(t testing.TB, cfg Config, img *image.Set, trace []byte) (*dataSink, *DataJoiner, error) {
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
	return s, j, err
}

// A support packet whose doptions say another protocol (or other
// fields) than the joiner's configuration is a warning at its offset,
// and nothing is joined after it.
func TestDataJoinDOptions(t *testing.T) {
	for _, split := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.Data = &DataConfig{Split: split}
		w := &warnSink{}
		j, err := NewDataJoiner(w, image.NewSet(), &cfg)
		if err != nil {
			t.Fatal(err)
		}
		other := DataConfig{Split: !split}
		p := &Packet{Format: FormatSync, Subformat: SubSupport, IEnable: 1, DEnable: 1, DOptions: other.DOptions()}
		if err := j.InstPacket(p, 99); err != nil {
			t.Fatal(err)
		}
		if len(w.warns) != 1 || !errors.Is(w.warns[0], decode.ErrInconsistent) || !strings.Contains(w.warns[0].Error(), "split protocol") || !strings.Contains(w.warns[0].Error(), "byte 99") {
			t.Errorf("split=%v: warnings %v, want one naming the protocols at byte 99", split, w.warns)
		}
		if !j.suspended {
			t.Errorf("split=%v: still joining after the mismatch", split)
		}
	}
}

// packFields writes fields (value, width) LSB first, in table order, then
// drops the upper bytes sign extension restores.
func packFields(fields ...[2]uint64) []byte {
	var bits []byte
	for _, f := range fields {
		for i := uint64(0); i < f[1]; i++ {
			bits = append(bits, byte(f[0]>>i&1))
		}
	}
	for len(bits)%8 != 0 {
		bits = append(bits, bits[len(bits)-1])
	}
	out := make([]byte, len(bits)/8)
	for i, b := range bits {
		out[i/8] |= b << (i % 8)
	}
	for len(out) > 1 {
		n := len(out)
		if out[n-1] == 0 && out[n-2] < 0x80 || out[n-1] == 0xff && out[n-2] >= 0x80 {
			out = out[:n-1]
			continue
		}
		break
	}
	return out
}

// TestDataSplitPacketLayout checks the split protocol's packets bit for
// bit against the specification's tables "Split load - Address only",
// "Split load - Data only" and "Split atomic with operand only", packing
// the fields independently, and decodes each back.
func TestDataSplitPacketLayout(t *testing.T) {
	type F = [2]uint64
	cfg := DataConfig{Split: true, LRIDWidth: 3, DataWidth: 64, DAddressWidth: 64}
	c := newDataCodec(&cfg)
	dc := newDataCodec(&cfg) // the decoding side
	var st, dst dataState
	var p, q DataPacket
	check := func(name string, want []byte) {
		t.Helper()
		got := c.append(nil, &p)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: % x, want % x", name, got, want)
		}
		if err := dc.parse(got, &q); err != nil {
			t.Errorf("%s: parse: %v", name, err)
		} else if q != p {
			t.Errorf("%s: parsed %+v, encoded %+v", name, q, p)
		}
	}
	request := func(name string, a ingress.Access, want []byte) {
		t.Helper()
		c.encodeRequest(&st, &a, true, &p)
		check(name, want)
		var b ingress.Access
		if err := dc.decodeRequest(&dst, &q, &b); err != nil {
			t.Errorf("%s: decode: %v", name, err)
		}
		a.IAddr, a.Data = 0, 0
		if cfg.Fields == DataValueOnly {
			a.DAddr = 0
		}
		if cfg.Fields == DataAddrOnly {
			a.SData = 0
		}
		if b != a {
			t.Errorf("%s: decoded %+v, want %+v", name, b, a)
		}
	}
	response := func(name string, r ingress.LoadResponse, size uint8, want []byte) {
		t.Helper()
		c.encodeResponse(&st, &r, size, true, &p)
		check(name, want)
		v, ok, err := dc.decodeResponse(&dst, &q)
		if err != nil || ok != (r.Resp == ingress.LRespOkay) || ok && v != r.Data {
			t.Errorf("%s: decoded %#x ok %v err %v, want %#x", name, v, ok, err, r.Data)
		}
	}
	ld := func(size uint8, addr uint64, lrid uint32) ingress.Access {
		return ingress.Access{DType: ingress.DTypeLoad, DSize: size, DAddr: addr, LRID: lrid, Split: true}
	}
	// a 4-byte load at an aligned address, the first: format 000, size
	// 10, lrid, diff 0 (full), address >> 2
	request("full request", ld(2, 0x80001000, 5), packFields(F{0, 3}, F{2, 2}, F{5, 3}, F{0, 1}, F{0x80001000 >> 2, 64}))
	// the next, unaligned, 6 bytes on: format 001, diff 1, byte difference
	request("differential unaligned request", ld(2, 0x80001006, 2), packFields(F{1, 3}, F{2, 2}, F{2, 3}, F{1, 1}, F{6, 64}))
	// load data of lrid 5, the first value of its size: format 100,
	// size, lrid, resp 10 (full), data (data_width_p bits)
	response("full load data", ingress.LoadResponse{LID: 5, Resp: ingress.LRespOkay, Data: 0x12345678}, 2,
		packFields(F{4, 3}, F{2, 2}, F{5, 3}, F{2, 2}, F{0x12345678, 64}))
	// lrid 2's, one more: resp 01 (XOR), data 1
	response("XOR load data", ingress.LoadResponse{LID: 2, Resp: ingress.LRespOkay, Data: 0x12345679}, 2,
		packFields(F{4, 3}, F{2, 2}, F{2, 3}, F{1, 2}, F{1, 64}))
	// lrid 1's, 0x12345680: XOR 0xf9 needs 2 bytes (its sign), the
	// difference 7 one: resp 11, data 7
	response("differential load data", ingress.LoadResponse{LID: 1, Resp: ingress.LRespOkay, Data: 0x12345680}, 2,
		packFields(F{4, 3}, F{2, 2}, F{1, 3}, F{3, 2}, F{7, 64}))
	// an error: resp 00 and no data field
	response("error", ingress.LoadResponse{LID: 3, Resp: ingress.LRespError}, 3, packFields(F{4, 3}, F{3, 2}, F{3, 3}, F{0, 2}))
	// amoadd.w: format 110, subtype 001, size, lrid, diff (full: the
	// previous word address is unaligned), op_len, operand (sdata),
	// address >> 2
	request("split atomic", ingress.Access{DType: ingress.DTypeAtomicAdd, DSize: 2, DAddr: 0x80002000, SData: 12, LRID: 1, Split: true},
		packFields(F{6, 3}, F{1, 3}, F{2, 2}, F{1, 3}, F{0, 1}, F{0, 2}, F{12, 8}, F{0x80002000 >> 2, 64}))

	// data only: requests are format (001: the address is unaligned),
	// size, lrid (and operand)
	cfg.Fields = DataValueOnly
	c, dc = newDataCodec(&cfg), newDataCodec(&cfg)
	st.reset()
	dst.reset()
	request("data-only request", ld(3, 0x80001001, 6), packFields(F{1, 3}, F{3, 2}, F{6, 3}))
	request("data-only atomic", ingress.Access{DType: ingress.DTypeAtomicSwp, DSize: 3, DAddr: 0x80001000, SData: 0x8000, LRID: 0, Split: true},
		packFields(F{6, 3}, F{0, 3}, F{3, 2}, F{0, 3}, F{2, 3}, F{0x8000, 24}))
	// address only: the atomic has no operand
	cfg.Fields = DataAddrOnly
	c, dc = newDataCodec(&cfg), newDataCodec(&cfg)
	st.reset()
	dst.reset()
	request("address-only atomic", ingress.Access{DType: ingress.DTypeAtomicMax, DSize: 3, DAddr: 0x80001000, SData: 3, LRID: 7, Split: true},
		packFields(F{6, 3}, F{5, 3}, F{3, 2}, F{7, 3}, F{0, 1}, F{0x80001000 >> 3, 64}))
	if err := dc.parse(packFields(F{4, 3}, F{3, 2}, F{7, 3}, F{2, 2}, F{1, 64}), &q); err == nil {
		t.Errorf("load data packet accepted in an address-only trace")
	}
}

// FuzzDataSplitDecode decodes damaged split-protocol traces: no panic, no
// hang, and every access joined is one its instruction can make.
func FuzzDataSplitDecode(f *testing.F) {
	cfg := DefaultConfig()
	cfg.ResyncPeriod = 16
	cfg.Data = &DataConfig{Split: true}
	r := runData(f, "setjmp.elf", sim.Coalesced, cfg)
	cfg.Decode.AllowTruncated = true
	for _, n := range []int{64, 256, 1024, 4096} {
		f.Add(append([]byte(nil), r.trace[:min(n, len(r.trace))]...))
	}
	f.Fuzz(func(t *testing.T, trace []byte) {
		s := &dataSink{}
		j, err := NewDataJoiner(s, r.img, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := NewDecoder(r.img, j, cfg)
		d.Data = j
		d.MaxWalk = 1 << 16
		d.Decode(bytes.NewReader(trace))
		j.Close()
		var ops opCache
		for _, e := range s.data {
			in, ok := r.img.Inst(e.Addr)
			if !ok {
				t.Fatalf("access of %#x, outside the image", e.Addr)
			}
			if m := ops.get(in.Op &^ 0x8000); !compatible(&m, &e.Access) {
				t.Fatalf("%v joined to %v", &e, in)
			}
		}
		if j.waiting != 0 || j.dHead != len(j.dq) {
			t.Fatalf("events still held back after Close: %d waiting, %d held", j.waiting, len(j.dq)-j.dHead)
		}
	})
}

// A split request written whose response never comes, and a response
// with no request, are encoder errors, not a trace that decodes short.
func TestDataSplitEncoderErrors(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Data = &DataConfig{Split: true}
	img := image.NewSet()
	var buf bytes.Buffer
	enc, err := NewEncoder(&buf, cfg, img)
	if err != nil {
		t.Fatal(err)
	}
	de, _ := NewDataEncoder(enc)
	if err := de.Response(&ingress.LoadResponse{LID: 1, Resp: ingress.LRespOkay}); err == nil || !strings.Contains(err.Error(), "no request") {
		t.Errorf("response without request: %v", err)
	}
	enc, _ = NewEncoder(&buf, cfg, img)
	de, _ = NewDataEncoder(enc)
	if err := de.Access(&ingress.Access{IAddr: 0x100, DType: ingress.DTypeLoad, DSize: 2, Split: true, LRID: 1}); err != nil {
		t.Fatal(err)
	}
	if err := de.Access(&ingress.Access{IAddr: 0x104, DType: ingress.DTypeLoad, DSize: 2, Split: true, LRID: 1}); err == nil {
		t.Errorf("second request with an lrid in flight accepted")
	}
	enc, _ = NewEncoder(&buf, cfg, img)
	de, _ = NewDataEncoder(enc)
	if err := de.Access(&ingress.Access{IAddr: 0x100, DType: ingress.DTypeLoad, DSize: 2}); err == nil {
		t.Errorf("unified load on the split interface accepted")
	}
	enc, _ = NewEncoder(&buf, cfg, img)
	de, _ = NewDataEncoder(enc)
	if err := de.Access(&ingress.Access{IAddr: 0x100, DType: ingress.DTypeLoad, DSize: 2, Split: true, LRID: 1}); err != nil {
		t.Fatal(err)
	}
	if err := de.Close(); err == nil {
		t.Errorf("close with a request held and no response: no error")
	}
}

// splitTee records the requests and responses a data encoder is given,
// and passes them on.
type splitTee struct {
	de   *DataEncoder
	reqs []ingress.Access // with the data of their response
	open map[uint32]int   // lrid -> index in reqs
}

func (s *splitTee) Access(a *ingress.Access) error {
	s.reqs = append(s.reqs, *a)
	if a.Split {
		s.open[a.LRID] = len(s.reqs) - 1
	}
	return s.de.Access(a)
}

func (s *splitTee) Response(r *ingress.LoadResponse) error {
	s.reqs[s.open[r.LID]].Data = r.Data
	delete(s.open, r.LID)
	return s.de.Response(r)
}

func (s *splitTee) Block(b *ingress.Block) error { return s.de.Block(b) }
func (s *splitTee) Close() error                 { return s.de.Close() }
func (s *splitTee) TraceOff() error              { return s.de.TraceOff() }
func (s *splitTee) Notify() error                { return s.de.Notify() }

// TestDataSplitSegments traces a program with the split protocol through
// an instruction filter that turns tracing on and off many times (the
// blocks below an address): responses to requests traced before tracing
// stopped still come, those of requests not traced are dropped, and the
// decoded accesses are exactly the requests the encoder was given, with
// their responses' data.
func TestDataSplitSegments(t *testing.T) {
	for _, f := range []DataFields{DataAddrValue, DataValueOnly} {
		cfg := DefaultConfig()
		cfg.ResyncPeriod = 32
		cfg.Data = &DataConfig{Split: true, Fields: f}
		path, _ := simProgram(t, "printf.elf")
		img := image.NewSet()
		if err := img.AddELF(path); err != nil {
			t.Fatal(err)
		}
		m, err := sim.New(sim.Config{MaxInstret: 1_000_000})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.LoadLinuxELF(path, []string{path}, nil); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		enc, _ := NewEncoder(&buf, cfg, img)
		de, _ := NewDataEncoder(enc)
		tee := &splitTee{de: de, open: map[uint32]int{}}
		fc := &filter.Config{
			Comparators: []filter.Comparator{{PInput: filter.InAddr, PFunc: filter.Lt, PMatch: 0x20000}},
			Filters:     []filter.Filter{{Comp: []int{0}}},
		}
		fs := filter.New(fc, tee)
		port := sim.NewDataPort(m, fs)
		if err := port.SetSplit(3); err != nil {
			t.Fatal(err)
		}
		if err := m.SetObserver(0, port); err != nil {
			t.Fatal(err)
		}
		if err := m.SetIngress(0, port.Ingress(fs)); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Run(); err != nil && !errors.Is(err, sim.ErrInstructionLimit) {
			t.Fatal(err)
		}
		if fs.St.Stops < 10 || len(tee.reqs) < 1000 {
			t.Fatalf("%v: %d stops, %d accesses traced: the filter does not cut the run into segments", f, fs.St.Stops, len(tee.reqs))
		}
		s, err := decodeData(t, cfg, img, buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range s.issues {
			t.Errorf("%v: %v", f, &e)
		}
		if len(s.data) != len(tee.reqs) {
			t.Fatalf("%v: %d accesses decoded, %d traced", f, len(s.data), len(tee.reqs))
		}
		for i, w := range tee.reqs {
			g := s.data[i].Access
			if f == DataValueOnly {
				w.DAddr = 0
			}
			g.IAddr, w.IAddr = 0, 0
			if g != w {
				t.Fatalf("%v: access %d: %v, want %v", f, i, &g, &w)
			}
		}
		t.Logf("%v: %d segments, %d accesses", f, fs.St.Stops, len(tee.reqs))
	}
}
