package etrace

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/sim"
)

// csrProg is the CSR test program (testdata/csrdata/csrdata.S): 48
// iterations of 17 Zicsr instructions among loads and stores.
const (
	csrProg       = "testdata/csrdata/csrdata.elf"
	csrProgCount  = 48 * 17
	csrMscratch   = 0x340
	csrProgReadOn = 3 * 48 // cycle, instret, mhartid
)

// csrInst is what the hart's observer reports of one retired Zicsr
// instruction: its encoding, the value rd received (the value read), the
// CSR's value after a write (the Tarmac CSR record).
type csrInst struct {
	pc            uint64
	raw           uint32
	rdVal, csrVal uint64
	rdSet, csrSet bool
}

// csrObs is a sim.Observer keeping the reports of Zicsr instructions.
type csrObs struct {
	insts []csrInst
	cur   bool // the last instruction is a Zicsr one (insts' last)
}

func isZicsr(raw uint32) bool { return raw&0x7f == 0x73 && raw>>12&3 != 0 }

func (o *csrObs) Inst(_ int, _ uint64, pc uint64, raw uint32, _ ingress.Priv) error {
	o.cur = isZicsr(raw)
	if o.cur {
		o.insts = append(o.insts, csrInst{pc: pc, raw: raw})
	}
	return nil
}
func (o *csrObs) IntReg(_ int, n int, v uint64) error {
	if o.cur && uint32(n) == o.insts[len(o.insts)-1].raw>>7&31 {
		c := &o.insts[len(o.insts)-1]
		c.rdVal, c.rdSet = v, true
	}
	return nil
}
func (o *csrObs) FPReg(int, int, uint64) error { return nil }
func (o *csrObs) CSR(_ int, n uint16, v uint64) error {
	if o.cur && uint32(n) == o.insts[len(o.insts)-1].raw>>20 {
		c := &o.insts[len(o.insts)-1]
		c.csrVal, c.csrSet = v, true
	}
	return nil
}
func (o *csrObs) Mem(int, bool, uint64, int, uint64) error                           { return nil }
func (o *csrObs) Trap(int, uint64, ingress.Priv, bool, uint64, uint64, uint64) error { return nil }

// runCSR runs the CSR test program with the data port reporting CSR
// accesses (split protocol with lrid_width_p 3 if split), recording the
// port's blocks and accesses and the observer's reports.
func runCSR(t *testing.T, split bool) (*dataRun, *csrObs) {
	t.Helper()
	return runCSRProg(t, csrProg, split)
}

// runCSRProg is runCSR for program prog.
func runCSRProg(t *testing.T, prog string, split bool) (*dataRun, *csrObs) {
	t.Helper()
	path, _ := simProgram(t, prog)
	r := &dataRun{img: image.NewSet()}
	if err := r.img.AddELF(path); err != nil {
		t.Fatal(err)
	}
	m, err := sim.New(sim.Config{MaxInstret: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadELF(path); err != nil {
		t.Fatal(err)
	}
	rec := &portRecorder{}
	obs := &csrObs{}
	mrec := &memRecorder{}
	r.port = sim.NewDataPort(m, rec)
	r.port.TraceCSR = true
	r.port.Next = multiObs{obs, mrec}
	if split {
		if err := r.port.SetSplit(3); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.SetObserver(0, r.port); err != nil {
		t.Fatal(err)
	}
	if err := m.SetIngress(0, r.port.Ingress(rec)); err != nil {
		t.Fatal(err)
	}
	res, err := m.Run()
	if err != nil {
		t.Fatalf("%s: %v", prog, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("%s: exit code %d", prog, res.ExitCode)
	}
	if err := r.port.Flush(); err != nil {
		t.Fatal(err)
	}
	r.evs, r.recs = rec.evs, mrec.recs
	return r, obs
}

// multiObs sends every observer call to both observers.
type multiObs [2]sim.Observer

func (m multiObs) Inst(h int, tm uint64, pc uint64, raw uint32, p ingress.Priv) error {
	m[0].Inst(h, tm, pc, raw, p)
	return m[1].Inst(h, tm, pc, raw, p)
}
func (m multiObs) IntReg(h int, n int, v uint64) error {
	m[0].IntReg(h, n, v)
	return m[1].IntReg(h, n, v)
}
func (m multiObs) FPReg(h int, n int, v uint64) error {
	m[0].FPReg(h, n, v)
	return m[1].FPReg(h, n, v)
}
func (m multiObs) CSR(h int, n uint16, v uint64) error {
	m[0].CSR(h, n, v)
	return m[1].CSR(h, n, v)
}
func (m multiObs) Mem(h int, w bool, a uint64, s int, v uint64) error {
	m[0].Mem(h, w, a, s, v)
	return m[1].Mem(h, w, a, s, v)
}
func (m multiObs) Trap(h int, tm uint64, p ingress.Priv, i bool, c, e, v uint64) error {
	m[0].Trap(h, tm, p, i, c, e, v)
	return m[1].Trap(h, tm, p, i, c, e, v)
}

// csrAccesses returns the CSR accesses among the port's events.
func csrAccesses(evs []portEvent) []ingress.Access {
	var out []ingress.Access
	for i := range evs {
		if evs[i].access && evs[i].acc.DType.IsCSR() {
			out = append(out, evs[i].acc)
		}
	}
	return out
}

// TestCSRDataPort checks the simulator's CSR accesses against what the
// hart reports of each Zicsr instruction (its Tarmac records: rd's new
// value is the value read, whatever the CSR) and against Zicsr's
// semantics on mscratch (a plain read-write register: each value read is
// the value the previous access left, the operand or the value read with
// the operand's bits set or cleared, which is also the hart's CSR record
// of a write; this covers the accesses with rd x0, which have no rd
// record).
func TestCSRDataPort(t *testing.T) {
	r, obs := runCSR(t, false)
	accs := csrAccesses(r.evs)
	if len(obs.insts) != csrProgCount || len(accs) != csrProgCount {
		t.Fatalf("%d Zicsr instructions retired, %d CSR accesses, want %d", len(obs.insts), len(accs), csrProgCount)
	}
	var next uint64 // mscratch after the previous access to it
	haveNext, readOnly, rdX0 := false, 0, 0
	for i, a := range accs {
		in := obs.insts[i]
		f3, rs1, rd := in.raw>>12&7, uint64(in.raw>>15&31), in.raw>>7&31
		n := uint64(in.raw >> 20)
		name := fmt.Sprintf("access %d (pc %#x, %08x)", i, in.pc, in.raw)
		want := ingress.DTypeCSRRW + ingress.DType(f3&3-1)
		if a.IAddr != in.pc || a.DAddr != n || a.DType != want || a.DSize != 3 || a.Split {
			t.Fatalf("%s: %v, want %s of CSR %#x, 8 bytes", name, &a, want, n)
		}
		write := f3&3 == 1 || rs1 != 0
		if f3 >= 5 && a.Data != rs1 {
			t.Errorf("%s: operand %#x, want the uimm %d", name, a.Data, rs1)
		}
		if f3 < 5 && rs1 == 0 && a.Data != 0 {
			t.Errorf("%s: operand %#x of x0", name, a.Data)
		}
		switch {
		case rd != 0 && !in.rdSet:
			t.Errorf("%s: the hart reported no value of rd x%d", name, rd)
		case rd != 0 && a.SData != in.rdVal:
			t.Errorf("%s: value read %#x, rd x%d received %#x", name, a.SData, rd, in.rdVal)
		case rd == 0:
			rdX0++
		}
		if write != in.csrSet {
			t.Errorf("%s: write %v, the hart's CSR record %v", name, write, in.csrSet)
		}
		if csrReadOnlyAddr(n) {
			readOnly++
		}
		if n != csrMscratch {
			continue
		}
		if haveNext && a.SData != next {
			t.Errorf("%s: value read %#x, the previous access left mscratch %#x", name, a.SData, next)
		}
		next, haveNext = a.SData, true
		if write {
			switch a.DType {
			case ingress.DTypeCSRRW:
				next = a.Data
			case ingress.DTypeCSRRS:
				next = a.SData | a.Data
			default:
				next = a.SData &^ a.Data
			}
			if in.csrVal != next {
				t.Errorf("%s: %s of %#x to %#x: mscratch %#x, the hart's record %#x", name, a.DType, a.Data, a.SData, next, in.csrVal)
			}
		}
	}
	if readOnly != csrProgReadOn {
		t.Errorf("%d accesses to read-only CSRs, want %d", readOnly, csrProgReadOn)
	}
	if rdX0 != 5*48 { // csrrw x0, csrrci x0, csrw, csrs, csrc
		t.Errorf("%d accesses with rd x0, want %d", rdX0, 5*48)
	}
}

// TestCSRDataRoundTrip encodes the CSR test program's accesses and
// decodes them: every decoded access (CSR, load, store) is the
// simulator's, one for one and with no warning, in both framings, with
// compression on and off, address and data or address only, and with the
// split protocol (its CSR packets are unified ones).
func TestCSRDataRoundTrip(t *testing.T) {
	for _, split := range []bool{false, true} {
		r, _ := runCSR(t, split)
		want := csrAccesses(r.evs)
		for _, f := range []DataFields{DataAddrValue, DataAddrOnly} {
			for _, nc := range []bool{false, true} {
				for _, encap := range []Encap{EncapRaw, EncapUTDD} {
					cfg := DefaultConfig()
					cfg.ResyncPeriod = 64
					cfg.Encap = encap
					if encap == EncapUTDD {
						cfg.SrcBits, cfg.SrcID = 4, 1
					}
					cfg.Data = &DataConfig{Fields: f, SrcID: 2, NoCompress: nc, CSR: true, Split: split}
					name := fmt.Sprintf("split=%v/%v/nocompress=%v/%v", split, f, nc, encap)
					trace := replay(t, r, cfg)
					s, err := decodeData(t, cfg, r.img, trace)
					if err != nil {
						t.Errorf("%s: %v", name, err)
					}
					for _, e := range s.issues {
						t.Errorf("%s: %v", name, &e)
					}
					var got []flow.Event
					for _, e := range s.data {
						if e.Access.DType.IsCSR() {
							got = append(got, e)
						}
					}
					if len(got) != len(want) {
						t.Fatalf("%s: %d CSR accesses decoded, %d traced", name, len(got), len(want))
					}
					for i, e := range got {
						w := want[i]
						if f == DataAddrOnly {
							w.Data, w.SData = 0, 0
							if e.AccessHas&flow.AccessData != 0 {
								t.Errorf("%s: access %d claims data", name, i)
							}
						}
						if e.Access != w || e.Addr != w.IAddr {
							t.Errorf("%s: access %d: decoded %v, traced %v", name, i, &e.Access, &w)
						}
					}
					compareRecs(t, name, f, records(s.data), r.recs)
				}
			}
		}
	}
}

// TestCSRPacketLayout checks CSR packets bit for bit against the
// specification's tables ("Packet format for Unified CSR ..."), packing
// the fields independently of the writer, and reads them back.
func TestCSRPacketLayout(t *testing.T) {
	pack := packFields
	type field = [2]uint64
	for _, tc := range []struct {
		name   string
		d      DataConfig
		accs   []ingress.Access // encoded in order; the last is checked
		want   []byte
		decode ingress.Access // what the last decodes to
	}{
		{
			// csrrw of mscratch reading 0x1234 and writing 0x77,
			// 64-bit CSRs, first after sync: format 101, subtype 00,
			// diff 00, data_len (3 bits) 1, 16 bits of data (the value
			// read), addr_msbs 0x340>>6, op_len 0, operand (the value
			// written), addr_lsbs
			name: "full rw 64",
			d:    DataConfig{CSR: true},
			accs: []ingress.Access{{DType: ingress.DTypeCSRRW, DSize: 3, DAddr: 0x340, SData: 0x1234, Data: 0x77}},
			want: pack(field{5, 3}, field{0, 2}, field{0, 2}, field{1, 3}, field{0x1234, 16}, field{0x340 >> 6, 6},
				field{0, 3}, field{0x77, 8}, field{0x340 & 63, 6}),
		},
		{
			// csrrs of mstatus reading 0x12345640 after a csrrw that
			// read 0x12345600 and wrote it: the difference 0x40 is as
			// short as the XOR, which is preferred (diff 01), one
			// byte; 32-bit CSRs: data_len and op_len 2 bits; operand
			// 0x1040 needs 2 bytes
			name: "xor rs 32",
			d:    DataConfig{CSR: true, CSRWidth: 32},
			accs: []ingress.Access{
				{DType: ingress.DTypeCSRRW, DSize: 2, DAddr: 0x300, SData: 0x12345600, Data: 0x12345640},
				{DType: ingress.DTypeCSRRS, DSize: 2, DAddr: 0x300, SData: 0x12345640, Data: 0x1040},
			},
			want: pack(field{5, 3}, field{1, 2}, field{1, 2}, field{0, 2}, field{0x40, 8}, field{0x300 >> 6, 6},
				field{1, 2}, field{0x1040, 16}, field{0x300 & 63, 6}),
		},
		{
			// csrrc of mscratch reading 1 less than the previous
			// value read (the csrrw before wrote it): difference -1,
			// one byte (diff 11)
			name: "diff rc",
			d:    DataConfig{CSR: true},
			accs: []ingress.Access{
				{DType: ingress.DTypeCSRRW, DSize: 3, DAddr: 0x340, SData: 0x100, Data: 0xff},
				{DType: ingress.DTypeCSRRC, DSize: 3, DAddr: 0x340, SData: 0xff, Data: 0x100},
			},
			want: pack(field{5, 3}, field{2, 2}, field{3, 2}, field{0, 3}, field{0xff, 8}, field{0x340 >> 6, 6},
				field{1, 3}, field{0x100, 16}, field{0x340 & 63, 6}),
		},
		{
			// csrr of cycle (0xc00: addr[11:10] = 11): the read-only
			// layout, no op_len and operand
			name: "read-only",
			d:    DataConfig{CSR: true},
			accs: []ingress.Access{{DType: ingress.DTypeCSRRS, DSize: 3, DAddr: 0xc00, SData: 0x12345}},
			want: pack(field{5, 3}, field{1, 2}, field{0, 2}, field{2, 3}, field{0x12345, 24}, field{0xc00 >> 6, 6},
				field{0xc00 & 63, 6}),
		},
		{
			// address only (trTeDataNoValue): subtype, addr_msbs,
			// addr_lsbs
			name: "address only",
			d:    DataConfig{CSR: true, Fields: DataAddrOnly},
			accs: []ingress.Access{{DType: ingress.DTypeCSRRC, DSize: 3, DAddr: 0x7c1, SData: 5, Data: 1}},
			want: pack(field{5, 3}, field{2, 2}, field{0x7c1 >> 6, 6}, field{0x7c1 & 63, 6}),
		},
	} {
		d := tc.d
		cfg := DefaultConfig()
		cfg.Data = &d
		if err := cfg.Check(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		c := newDataCodec(&d)
		var st dataState
		var p DataPacket
		for i := range tc.accs {
			if err := c.checkCSRAccess(&tc.accs[i]); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			c.encodeAccess(&st, &tc.accs[i], true, &p)
		}
		got := c.append(nil, &p)
		if !bytes.Equal(got, tc.want) {
			t.Errorf("%s: % x, want % x", tc.name, got, tc.want)
			continue
		}
		// the same sequence, each packet decoded in turn
		enc, dec := newDataCodec(&d), newDataCodec(&d)
		var es, ds dataState
		for i := range tc.accs {
			var q DataPacket
			enc.encodeAccess(&es, &tc.accs[i], true, &q)
			pl := enc.append(nil, &q)
			var a ingress.Access
			if err := dec.decodeFrame(pl, &ds, &a, &q); err != nil {
				t.Fatalf("%s: packet %d (% x): %v", tc.name, i, pl, err)
			}
			w := tc.accs[i]
			if d.Fields == DataAddrOnly {
				w.Data, w.SData = 0, 0
			}
			if a != w {
				t.Errorf("%s: packet %d decodes to %v, want %v", tc.name, i, &a, &w)
			}
		}
	}
}

// TestCSRRefused checks what the encoder and the configuration refuse:
// a CSR access the read-only layout cannot carry, of the wrong width, a
// CSR number past 12 bits, CSR trace without it configured, CSR trace in
// data-only mode; and that a decoder not told of CSR trace reports a
// CSR packet as malformed.
func TestCSRRefused(t *testing.T) {
	d := DataConfig{CSR: true}
	cfg := DefaultConfig()
	cfg.Data = &d
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	c := newDataCodec(&d)
	for _, a := range []ingress.Access{
		{DType: ingress.DTypeCSRRW, DSize: 3, DAddr: 0xc00},          // csrrw of a read-only CSR
		{DType: ingress.DTypeCSRRS, DSize: 3, DAddr: 0xf14, Data: 1}, // a write to one
		{DType: ingress.DTypeCSRRS, DSize: 2, DAddr: 0x340},          // 4 bytes, 64-bit CSRs
		{DType: ingress.DTypeCSRRS, DSize: 3, DAddr: 0x1340},         // past 12 bits
		{DType: ingress.DTypeCSRRS, DSize: 3, DAddr: 0x340, Split: true},
	} {
		if err := c.checkCSRAccess(&a); err == nil {
			t.Errorf("%v: accepted", &a)
		}
	}
	off := newDataCodec(&DataConfig{DataWidth: 64, DAddressWidth: 64})
	a := ingress.Access{DType: ingress.DTypeCSRRW, DSize: 3, DAddr: 0x340}
	if err := off.checkCSRAccess(&a); err == nil {
		t.Errorf("CSR access accepted with CSR trace off")
	}
	cfg.Data = &DataConfig{CSR: true, Fields: DataValueOnly}
	if err := cfg.Check(); err == nil {
		t.Errorf("CSR trace with data only accepted")
	}
	cfg.Data = &DataConfig{CSR: true, CSRWidth: 16}
	if err := cfg.Check(); err == nil {
		t.Errorf("16-bit CSRs accepted")
	}
	// a decoder without CSR trace: the packet is malformed
	var st dataState
	var p DataPacket
	c.encodeAccess(&st, &a, true, &p)
	pl := c.append(nil, &p)
	var q DataPacket
	var out ingress.Access
	var ds dataState
	if err := off.decodeFrame(pl, &ds, &out, &q); err == nil || !strings.Contains(err.Error(), "announces no CSR data trace") {
		t.Errorf("CSR packet decoded without CSR trace: %v", err)
	}
}

// TestCSRPacketMalformed checks that the decoder refuses CSR packets that
// no encoder writes: a reserved subtype or diff, data_len or op_len
// longer than the value needs, a compressed packet with nothing before,
// an RW of a read-only CSR, bytes after the last field.
func TestCSRPacketMalformed(t *testing.T) {
	d := DataConfig{CSR: true}
	cfg := DefaultConfig()
	cfg.Data = &d
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	c := newDataCodec(&d)
	put := func(p DataPacket) []byte {
		p.Format = DFmtCSR
		return c.append(nil, &p)
	}
	for _, tc := range []struct {
		name string
		pl   []byte
		want string
	}{
		{"reserved subtype", put(DataPacket{Subtype: 3, Address: 0x340}), "reserved CSR subtype"},
		{"reserved diff", put(DataPacket{Diff: 2, Address: 0x340}), "reserved CSR diff"},
		{"long data_len", put(DataPacket{DataLen: 1, Data: 5, Address: 0x340}), "data_len"},
		{"long op_len", put(DataPacket{OpLen: 2, Operand: 5, Address: 0x340}), "op_len"},
		{"compressed first", put(DataPacket{Diff: 1, Data: 5, Address: 0x340}), "no earlier CSR access"},
		{"rw of read-only", put(DataPacket{Address: 0xc01}), "read-only"},
		{"extra byte", append(put(DataPacket{Address: 0x340, Data: 1}), 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55), "after the last field"},
	} {
		var st dataState
		var a ingress.Access
		var p DataPacket
		err := c.decodeFrame(tc.pl, &st, &a, &p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s (% x): %v, want an error saying %q", tc.name, tc.pl, err, tc.want)
		}
	}
}

// TestCSRJoinCorrupt corrupts the CSR packets of a traced run, one at a
// time (one bit of each byte flipped, the packet dropped), and checks
// the integrity rule on the decoded CSR accesses: each is the traced
// access of its instruction, or a warning with a byte offset comes at or
// before the first one that is not (the only difference allowed
// unflagged is a corruption that is itself a valid packet: the test
// counts those).
func TestCSRJoinCorrupt(t *testing.T) {
	r, _ := runCSR(t, false)
	cfg := DefaultConfig()
	cfg.Data = &DataConfig{CSR: true}
	trace := replay(t, r, cfg)
	want := csrAccesses(r.evs)
	frames := dataFrames(t, cfg, trace)
	var csrFrames [][2]int
	for _, f := range frames {
		if trace[f[0]+1]&7 == DFmtCSR {
			csrFrames = append(csrFrames, f)
		}
	}
	if len(csrFrames) != len(want) {
		t.Fatalf("%d CSR packets, %d accesses", len(csrFrames), len(want))
	}
	flagged, silent := 0, 0
	check := func(name string, b []byte) {
		s, err := decodeData(t, cfg, r.img, b)
		if err != nil && !errors.Is(err, decode.ErrMalformed) {
			var de *decode.Error
			if !errors.As(err, &de) {
				t.Errorf("%s: %v", name, err)
			}
		}
		firstIssue := int64(-1)
		if len(s.issues) > 0 {
			firstIssue = s.issues[0].Offset
			flagged++
		}
		k := 0
		for _, e := range s.data {
			if !e.Access.DType.IsCSR() {
				continue
			}
			if k >= len(want) {
				t.Errorf("%s: more CSR accesses than traced", name)
				return
			}
			w := want[k]
			k++
			if e.Access == w && e.Addr == w.IAddr {
				continue
			}
			if firstIssue < 0 && err == nil {
				// allowed only if the bytes are a valid trace of what
				// was decoded: re-encoding it gives them
				if !csrReencodes(t, r, cfg, s.data, b) {
					t.Errorf("%s: CSR access %d decoded as %v, traced %v, with no warning", name, k-1, &e.Access, &w)
				}
				silent++
			}
			return
		}
		if k < len(want) && firstIssue < 0 && err == nil {
			t.Errorf("%s: %d CSR accesses of %d and no warning", name, k, len(want))
		}
	}
	for _, k := range []int{0, 1, 17, len(csrFrames) / 2, len(csrFrames) - 1} {
		f := csrFrames[k]
		check(fmt.Sprintf("drop %d", k), append(append([]byte{}, trace[:f[0]]...), trace[f[0]+f[1]:]...))
		for i := 1; i < f[1]; i++ {
			for bit := 0; bit < 8; bit++ {
				b := append([]byte{}, trace...)
				b[f[0]+i] ^= 1 << bit
				check(fmt.Sprintf("packet %d byte %d bit %d", k, i, bit), b)
			}
		}
	}
	t.Logf("%d corruptions flagged, %d valid traces of another flow", flagged, silent)
	if flagged == 0 {
		t.Errorf("no corruption flagged")
	}
}

// csrReencodes reports whether the run's blocks with the decoded CSR
// accesses in place of the traced ones encode to b.
func csrReencodes(t *testing.T, r *dataRun, cfg Config, decoded []flow.Event, b []byte) bool {
	var csr []ingress.Access
	for _, e := range decoded {
		if e.Access.DType.IsCSR() {
			csr = append(csr, e.Access)
		}
	}
	r2 := *r
	r2.evs = append([]portEvent{}, r.evs...)
	k := 0
	for i := range r2.evs {
		if e := &r2.evs[i]; e.access && e.acc.DType.IsCSR() {
			if k >= len(csr) {
				return false
			}
			e.acc = csr[k]
			k++
		}
	}
	return k == len(csr) && bytes.Equal(replay(t, &r2, cfg), b)
}

// TestCSRDump dumps a trace of the CSR test program: every CSR packet is
// listed with its fields in the order of its layout and the access it
// decodes to, which is the traced one.
func TestCSRDump(t *testing.T) {
	r, _ := runCSR(t, false)
	cfg := DefaultConfig()
	cfg.Data = &DataConfig{CSR: true}
	trace := replay(t, r, cfg)
	var out bytes.Buffer
	st, err := Dump(bytes.NewReader(trace), &out, &cfg)
	if err != nil || st.Errors > 0 {
		t.Fatalf("dump: %v, %d errors", err, st.Errors)
	}
	want := csrAccesses(r.evs)
	k := 0
	for _, l := range strings.Split(out.String(), "\n") {
		if !strings.Contains(l, "data format=5 ") {
			continue
		}
		if k >= len(want) {
			t.Fatalf("more CSR packets dumped than traced")
		}
		w := want[k]
		k++
		tail := fmt.Sprintf("-> %s csr %#x read=%#x operand=%#x", w.DType, w.DAddr, w.SData, w.Data)
		fields := "addr_msbs=%#x op_len="
		if csrReadOnlyAddr(w.DAddr) {
			fields = "addr_msbs=%#x addr_lsbs="
		}
		if !strings.HasSuffix(l, tail) || !strings.Contains(l, fmt.Sprintf(fields, w.DAddr>>6)) {
			t.Errorf("CSR packet %d: %q, want the fields and %q", k-1, l, tail)
		}
	}
	if k != len(want) {
		t.Errorf("%d CSR packets dumped, %d traced", k, len(want))
	}
}

// TestCSRDataRV32 traces the RV32 CSR test program: its CSR accesses are
// 4 bytes (32-bit values, negative ones not sign-extended past them),
// round-trip with 32-bit CSRs (2-bit data_len and op_len), and an encoder
// configured for 64-bit CSRs refuses them.
func TestCSRDataRV32(t *testing.T) {
	r, obs := runCSRProg(t, "testdata/csrdata/csrdata32.elf", false)
	want := csrAccesses(r.evs)
	if len(want) != 40*6 || len(obs.insts) != len(want) {
		t.Fatalf("%d CSR accesses, %d Zicsr instructions, want %d", len(want), len(obs.insts), 40*6)
	}
	for i, a := range want {
		if a.DSize != 2 || a.SData>>32 != 0 || a.Data>>32 != 0 {
			t.Fatalf("access %d: %v: not a 4-byte access", i, &a)
		}
		if in := obs.insts[i]; !in.rdSet || uint64(uint32(in.rdVal)) != a.SData {
			t.Errorf("access %d: value read %#x, rd received %#x (reported %v)", i, a.SData, in.rdVal, in.rdSet)
		}
	}
	cfg := DefaultConfig()
	cfg.Data = &DataConfig{CSR: true, CSRWidth: 32}
	s, err := decodeData(t, cfg, r.img, replay(t, r, cfg))
	if err != nil || len(s.issues) > 0 {
		t.Fatalf("decode: %v %v", err, s.issues)
	}
	k := 0
	for _, e := range s.data {
		if e.Access.DType.IsCSR() {
			if k >= len(want) || e.Access != want[k] {
				t.Fatalf("access %d decoded as %v", k, &e.Access)
			}
			k++
		}
	}
	if k != len(want) {
		t.Errorf("%d CSR accesses decoded, %d traced", k, len(want))
	}
	compareRecs(t, "rv32", DataAddrValue, records(s.data), r.recs)
	// 64-bit CSRs: refused with the reason
	cfg.Data = &DataConfig{CSR: true}
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
		if e := &r.evs[i]; e.access {
			err = de.Access(&e.acc)
		} else {
			err = de.Block(&e.blk)
		}
		if err != nil {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), "CSR access of 4 bytes with 64-bit CSRs") {
		t.Errorf("32-bit CSR accesses with 64-bit CSRs: %v", err)
	}
}

// TestCSRJoinDrop drops the packet of one CSR access whose successor is
// an access of the same kind to another CSR (rdcycle before rdinstret,
// rdinstret before csrr of mhartid): the joiner
// sees from the instruction's encoding that the next packet is not its
// access, warns with the packet's byte offset, and joins no access to a
// wrong instruction: the CSR accesses decoded are exactly those before
// the dropped one.
func TestCSRJoinDrop(t *testing.T) {
	r, _ := runCSR(t, false)
	cfg := DefaultConfig()
	cfg.Data = &DataConfig{CSR: true}
	trace := replay(t, r, cfg)
	want := csrAccesses(r.evs)
	var csrFrames [][2]int
	for _, f := range dataFrames(t, cfg, trace) {
		if trace[f[0]+1]&7 == DFmtCSR {
			csrFrames = append(csrFrames, f)
		}
	}
	for _, k := range []int{14, 15, 17 + 14, 17 + 15} {
		if want[k].DType != want[k+1].DType {
			t.Fatalf("access %d: %v, then %v: not of the same kind", k, &want[k], &want[k+1])
		}
		f := csrFrames[k]
		s, err := decodeData(t, cfg, r.img, append(append([]byte{}, trace[:f[0]]...), trace[f[0]+f[1]:]...))
		if err != nil {
			t.Fatal(err)
		}
		var got []ingress.Access
		for _, e := range s.data {
			if e.Access.DType.IsCSR() {
				got = append(got, e.Access)
			}
		}
		if len(got) != k {
			t.Errorf("drop %d: %d CSR accesses decoded, want the %d before it", k, len(got), k)
		}
		for i := range min(len(got), k) {
			if got[i] != want[i] {
				t.Errorf("drop %d: access %d decoded as %v, traced %v", k, i, &got[i], &want[i])
			}
		}
		if len(s.issues) == 0 || s.issues[0].Offset != int64(csrFrames[k+1][0]-f[1]) {
			t.Errorf("drop %d: want a warning at byte %d (the next CSR packet): %v", k, csrFrames[k+1][0]-f[1], s.issues)
		}
	}
}

// TestCSRAnnounced checks that CSR data trace is announced in the support
// packet (doptions bit 4, datacsr.go): the support packet's bytes are the
// specification's fields packed independently with a 5-bit doptions, the
// same bytes as the 4-bit field of earlier traces when the protocol is
// unified and CSR accesses are not traced; a decoder not told of CSR
// trace decodes the CSR trace to the same accesses as one told; and a
// trace whose announcement is damaged is flagged (cleared: the first CSR
// packet is a malformed one naming doptions; set on a trace without CSR
// packets: the first CSR instruction has no packet), with every access
// joined before the flag one the simulator traced.
func TestCSRAnnounced(t *testing.T) {
	for _, split := range []bool{false, true} {
		r, _ := runCSR(t, split)
		want := csrAccesses(r.evs)
		name := fmt.Sprintf("split=%v", split)

		cfg := DefaultConfig()
		cfg.Data = &DataConfig{Split: split, CSR: true}
		trace := replay(t, r, cfg)

		// the first frame is the support packet: its fields packed
		// with doptions of 5 bits and, for the comparison with the
		// earlier layout, of 4
		sc := NewScanner(bytes.NewReader(trace), &cfg)
		if !sc.Scan() || sc.Frame().Data {
			t.Fatalf("%s: the trace does not start with an instruction trace packet", name)
		}
		sup := sc.Frame().Payload
		split1 := uint64(0)
		if split {
			split1 = 1
		}
		pack := func(csr uint64, width uint64) []byte {
			return packFields([2]uint64{3, 2}, [2]uint64{3, 2}, [2]uint64{1, 1}, [2]uint64{0, 1}, [2]uint64{0, 2},
				[2]uint64{cfg.Options.Bits(), 6}, [2]uint64{1, 1}, [2]uint64{0, 1},
				[2]uint64{doptCompress | split1<<3 | csr<<4, width})
		}
		if w := pack(1, 5); !bytes.Equal(sup, w) {
			t.Errorf("%s: support packet % x, want % x", name, sup, w)
		}
		// the run without its CSR accesses, traced without CSR
		off := cfg
		d := *cfg.Data
		d.CSR = false
		off.Data = &d
		nr := *r
		nr.evs = nil
		for _, e := range r.evs {
			if !e.access || !e.acc.DType.IsCSR() {
				nr.evs = append(nr.evs, e)
			}
		}
		plainTrace := replay(t, &nr, off)
		sc = NewScanner(bytes.NewReader(plainTrace), &off)
		if !sc.Scan() || sc.Frame().Data {
			t.Fatalf("%s: the trace does not start with an instruction trace packet", name)
		}
		pl := sc.Frame().Payload
		if w := pack(0, 5); !bytes.Equal(pl, w) {
			t.Errorf("%s: support packet without CSR % x, want % x", name, pl, w)
		}
		if old := pack(0, 4); bytes.Equal(pl, old) == split {
			t.Errorf("%s: support packet without CSR % x, with 4-bit doptions % x: want them equal exactly when unified", name, pl, old)
		}

		// decoded without being told: the same accesses as told
		told, err := decodeData(t, cfg, r.img, trace)
		if err != nil {
			t.Fatal(err)
		}
		s, err := decodeData(t, off, r.img, trace)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range append(told.issues, s.issues...) {
			t.Errorf("%s: %v", name, &e)
		}
		if len(s.data) != len(told.data) {
			t.Fatalf("%s: %d accesses decoded untold, %d told", name, len(s.data), len(told.data))
		}
		n := 0
		for i := range s.data {
			if s.data[i] != told.data[i] {
				t.Errorf("%s: access %d: untold %v, told %v", name, i, &s.data[i].Access, &told.data[i].Access)
			}
			if s.data[i].Access.DType.IsCSR() {
				n++
			}
		}
		if n != len(want) || n == 0 {
			t.Errorf("%s: %d CSR accesses decoded, %d traced", name, n, len(want))
		}

		// the announcement cleared: flagged at the first CSR packet
		frames := dataFrames(t, cfg, trace)
		first := -1
		for _, f := range frames {
			if trace[f[0]+1]&7 == DFmtCSR {
				first = f[0]
				break
			}
		}
		// (payload bit 20, doptions bit 4, and the padding bits after
		// it, which repeat it: flipping bit 20 alone is a malformed
		// packet, a gap)
		bad := slices.Clone(trace)
		bad[1+2] ^= 1 << 4
		if s, _ = decodeData(t, off, r.img, bad); len(s.issues) == 0 || s.issues[0].Kind != flow.KindGap || s.issues[0].Offset != 0 {
			t.Errorf("%s: doptions bit 4 flipped alone: %v, want a gap at byte 0", name, s.issues)
		}
		bad[1+2] ^= 0xe0
		s, err = decodeData(t, off, r.img, bad)
		if err != nil {
			t.Fatal(err)
		}
		checkFlagged(t, name+"/cleared", s, r, first, "doptions bit 4")

		// the announcement set on a trace without CSR packets: flagged
		// at the first CSR instruction (the packet of the first store,
		// which comes after it, is taken for its packet and does not fit)
		if plainTrace[1+2]&(1<<4) != 0 {
			t.Fatalf("%s: a trace without CSR accesses announces them", name)
		}
		bad = slices.Clone(plainTrace)
		bad[1+2] ^= 0xf0
		s, err = decodeData(t, off, r.img, bad)
		if err != nil {
			t.Fatal(err)
		}
		checkFlagged(t, name+"/set", s, &nr, -1, "does not fit the csr-rw of CSR 0x340")
		// (split: the very bytes of the earlier 4-bit doptions layout,
		// which the warning names; unified: no such layout reads so)
		const hint = "a split protocol trace made with a 4-bit doptions field"
		if hinted := len(s.issues) > 0 && strings.Contains(s.issues[0].Err.Error(), hint); hinted != split {
			t.Errorf("%s/set: first warning %v: want the 4-bit doptions hint exactly when split", name, s.issues)
		}
		if split && !bytes.Equal(bad[1:1+len(pack(0, 4))], pack(0, 4)) {
			t.Errorf("%s/set: support packet % x, want the 4-bit layout % x", name, bad[1:1+len(pack(0, 4))], pack(0, 4))
		}
		// told of CSR trace (--data-csr), the decoder expects the
		// packets whatever doptions say: no hint
		if s, err = decodeData(t, cfg, r.img, plainTrace); err != nil {
			t.Fatal(err)
		}
		if len(s.issues) == 0 || strings.Contains(s.issues[0].Err.Error(), hint) {
			t.Errorf("%s/forced: %v: want a warning without the 4-bit doptions hint", name, s.issues)
		}
	}
}

// checkFlagged checks that decoded s has a warning saying what, at byte
// at (if not -1), and that the accesses joined before it are the first
// ones of run r (CSR accesses included), in order.
func checkFlagged(t *testing.T, name string, s *dataSink, r *dataRun, at int, what string) {
	t.Helper()
	var w *flow.Event
	for i := range s.issues {
		if strings.Contains(s.issues[i].Err.Error(), what) {
			w = &s.issues[i]
			break
		}
	}
	if w == nil {
		t.Errorf("%s: no warning saying %q: %v", name, what, s.issues)
		return
	}
	if at >= 0 && w.Offset != int64(at) {
		t.Errorf("%s: warning at byte %d, want %d: %v", name, w.Offset, at, w.Err)
	}
	var traced []ingress.Access
	for _, e := range r.evs {
		if e.access {
			traced = append(traced, e.acc)
		}
	}
	for i, e := range s.data {
		if i >= len(traced) || e.Access.DType != traced[i].DType || e.Access.DAddr != traced[i].DAddr || e.Addr != traced[i].IAddr {
			t.Errorf("%s: access %d joined (%v) is not the traced one", name, i, &e.Access)
			return
		}
	}
}
