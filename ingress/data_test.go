package ingress

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestDataCSVRoundTrip writes accesses of every kind and reads them back.
func TestDataCSVRoundTrip(t *testing.T) {
	in := []Access{
		{IAddr: 0x80000000, DAddr: 0x80001000, Data: 0xff, DType: DTypeLoad, DSize: 0},
		{IAddr: 0x80000004, DAddr: 0x80001003, Data: 0xdeadbeef, DType: DTypeStore, DSize: 2},
		{IAddr: 0x80000008, DAddr: 0x80001008, Data: 0xffffffffffffffff, SData: 1, DType: DTypeAtomicAdd, DSize: 3},
		{IAddr: 0x8000000c, DAddr: 0x80001010, Data: 0, SData: 0x80000000, DType: DTypeAtomicSwp, DSize: 2},
		{IAddr: 0x80000010, DAddr: 0x80001010, DType: DTypeSCFail, DSize: 2},
		{IAddr: 0x80000014, DAddr: 0x340, Data: 0x5, SData: 0xfffffffffffffff8, DType: DTypeCSRRC, DSize: 3},
		{IAddr: 0x80000018, DAddr: 0xc00, SData: 0x1234, DType: DTypeCSRRS, DSize: 2},
	}
	var buf bytes.Buffer
	w := NewDataCSVWriter(&buf)
	for i := range in {
		if err := w.Access(&in[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "iaddr,dtype,daddr,dsize,data\n") {
		t.Errorf("header: %q", buf.String())
	}
	if !strings.Contains(buf.String(), ",9,0x80001008,3,0xffffffffffffffff0000000000000001\n") {
		t.Errorf("atomic line: want load data above store data:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), ",6,0x340,3,0x5fffffffffffffff8\n") {
		t.Errorf("CSR line: want the operand above the value read:\n%s", buf.String())
	}
	r, err := NewDataCSVSource(&buf, "d.csv")
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		a, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if *a != in[i] {
			t.Errorf("line %d: %v, want %v", i+2, a, &in[i])
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("end: %v", err)
	}
}

// TestDataCSVErrors checks that malformed lines are errors naming the
// file and line.
func TestDataCSVErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"iaddr,dtype,daddr,dsize\n", "d.csv:1: no data column"},
		{"iaddr,dtype,daddr,dsize,data,x\n", "d.csv:1: unknown column \"x\""},
		{"iaddr,dtype,daddr,dsize,data\n0x10,2,0x100,2,0x1\n", "d.csv:2: dtype 2 is reserved"},
		{"iaddr,dtype,daddr,dsize,data\n0x10,0,0x100,4,0x1\n", "d.csv:2: dsize 4 out of range"},
		{"iaddr,dtype,daddr,dsize,data\n0x10,0,0x100,0,0x100\n", "d.csv:2: data 0x100 wider than the access"},
		{"iaddr,dtype,daddr,dsize,data\n\n0x10,0,0x100\n", "d.csv:3: 3 fields, the header has 5"},
		{"iaddr,dtype,daddr,dsize,data\n0x10,0,0x10g,0,0x1\n", "d.csv:2: daddr"},
		{"iaddr,dtype,daddr,dsize,data\n0x10,15,0x100,2,0x1\n", "d.csv:2: a failed store-conditional has no data"},
		{"iaddr,dtype,daddr,dsize,data\n0x10,8,0x102,2,0x1\n", "d.csv:2: atomic at 0x102 not aligned"},
		{"iaddr,dtype,daddr,dsize,data\n0x10,4,0x1340,3,0x1\n", "d.csv:2: CSR access to 0x1340"},
		{"iaddr,dtype,daddr,dsize,data\n0x10,5,0x340,1,0x1\n", "d.csv:2: CSR access to 0x340 of 2 bytes"},
	} {
		r, err := NewDataCSVSource(strings.NewReader(tc.text), "d.csv")
		if err == nil {
			_, err = r.Next()
		}
		var le *LineError
		if err == nil || !errors.As(err, &le) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q...", tc.text, err, tc.want)
		}
	}
}

// splitEvent is an access or a response of the split protocol.
type splitEvent struct {
	a    Access
	r    LoadResponse
	resp bool
}

// TestDataCSVSplitRoundTrip writes the split protocol's requests (loads,
// an atomic with its store data), unified accesses (a store, a CSR
// access) and responses (okay and error) and reads them back, in order.
func TestDataCSVSplitRoundTrip(t *testing.T) {
	in := []splitEvent{
		{a: Access{IAddr: 0x80000000, DAddr: 0x80001000, DType: DTypeLoad, DSize: 3, Split: true, LRID: 5}},
		{a: Access{IAddr: 0x80000004, DAddr: 0x80001003, Data: 0xdeadbeef, DType: DTypeStore, DSize: 2}},
		{r: LoadResponse{LID: 5, Resp: LRespOkay, Data: 0xffffffffffffffff, Time: 0x11}, resp: true},
		{a: Access{IAddr: 0x80000008, DAddr: 0x80001008, SData: 0x1234, DType: DTypeAtomicAdd, DSize: 3, Split: true, LRID: 0}},
		{a: Access{IAddr: 0x8000000c, DAddr: 0x340, Data: 0x5, SData: 0x8, DType: DTypeCSRRC, DSize: 3}},
		{a: Access{IAddr: 0x80000010, DAddr: 0x80001010, DType: DTypeLoad, DSize: 0, Split: true, LRID: 65535}},
		{r: LoadResponse{LID: 65535, Resp: LRespError, Time: 0x20}, resp: true},
		{r: LoadResponse{LID: 0, Resp: LRespOkay, Data: 0, Time: 0x20}, resp: true},
	}
	var buf bytes.Buffer
	w := NewDataCSVWriter(&buf)
	w.SetSplit()
	for i := range in {
		var err error
		if in[i].resp {
			err = w.Response(&in[i].r)
		} else {
			err = w.Access(&in[i].a)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{
		"iaddr,dtype,daddr,dsize,data,lrid,lresp,lid,ldata,time\n",
		"0x80000000,0,0x80001000,3,,5,,,,\n",
		"0x80000004,1,0x80001003,2,0xdeadbeef,,,,,\n",
		",,,,,,2,5,0xffffffffffffffff,0x11\n",
		"0x80000008,9,0x80001008,3,0x1234,0,,,,\n",
		",,,,,,3,65535,,0x20\n",
	} {
		if !strings.Contains(buf.String(), l) {
			t.Errorf("no line %q in\n%s", l, buf.String())
		}
	}
	r, err := NewDataCSVSource(&buf, "d.csv")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Split() {
		t.Errorf("the split protocol's columns not recognised")
	}
	for i := range in {
		a, resp, err := r.NextEvent()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case in[i].resp && (resp == nil || *resp != in[i].r):
			t.Errorf("line %d: %v %v, want the response %+v", i+2, a, resp, in[i].r)
		case !in[i].resp && (a == nil || *a != in[i].a):
			t.Errorf("line %d: %v %v, want %v", i+2, a, resp, &in[i].a)
		}
	}
	if _, _, err := r.NextEvent(); err != io.EOF {
		t.Errorf("end: %v", err)
	}
	// the unified writer refuses split events
	u := NewDataCSVWriter(io.Discard)
	if err := u.Access(&in[0].a); err == nil {
		t.Errorf("unified writer: split request accepted")
	}
	if err := u.Response(&in[2].r); err == nil {
		t.Errorf("unified writer: response accepted")
	}
}

// TestDataCSVSplitErrors checks that malformed lines of the split
// protocol's CSV are errors naming the file and line.
func TestDataCSVSplitErrors(t *testing.T) {
	const h = "iaddr,dtype,daddr,dsize,data,lrid,lresp,lid,ldata,time\n"
	for _, tc := range []struct{ text, want string }{
		{"iaddr,dtype,daddr,dsize,data,lrid\n", "d.csv:1: the split protocol's columns are lrid, lresp, lid, ldata and time together: lresp is missing"},
		{"iaddr,dtype,daddr,dsize,data,time\n", "d.csv:1: the split protocol's columns are lrid, lresp, lid, ldata and time together: time is there without lrid"},
		{h + "0x10,,,,,,2,1,0x5,0x3\n", "d.csv:2: a load response (lresp given) with iaddr \"0x10\""},
		{h + ",,,,,,2,1,,0x3\n", "d.csv:2: lresp 2 with ldata \"\""},
		{h + ",,,,,,3,1,0x5,0x3\n", "d.csv:2: lresp 3 with ldata \"0x5\""},
		{h + ",,,,,,1,1,0x5,0x3\n", "d.csv:2: lresp 1: want 2 (okay) or 3 (error)"},
		{h + ",,,,,,2,1,0x5,\n", "d.csv:2: a load response with no time"},
		{h + ",,,,,,2,,0x5,0x3\n", "d.csv:2: a load response with no lid"},
		{h + "0x10,1,0x100,2,0x1,3,,,,\n", "d.csv:2: a split request (lrid given) of dtype 1"},
		{h + "0x10,0,0x100,2,0x1,3,,,,\n", "d.csv:2: a split load request with data \"0x1\""},
		{h + "0x10,0,0x100,2,,70000,,,,\n", "d.csv:2: lrid 70000 wider"},
		{h + "0x10,8,0x102,2,0x1,3,,,,\n", "d.csv:2: atomic at 0x102 not aligned"},
		{h + "0x10,8,0x100,2,0x100000000,3,,,,\n", "d.csv:2: data 0x100000000 wider than the access"},
		{h + "0x10,1,0x100,2,0x1,,,,,0x5\n", "d.csv:2: time \"0x5\" on an access line"},
	} {
		r, err := NewDataCSVSource(strings.NewReader(tc.text), "d.csv")
		if err == nil {
			_, _, err = r.NextEvent()
		}
		var le *LineError
		if err == nil || !errors.As(err, &le) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q...", tc.text, err, tc.want)
		}
	}
}

// splitRec records what a DataMerger delivers.
type splitRec struct{ got []string }

func (s *splitRec) Block(b *Block) error {
	s.got = append(s.got, fmt.Sprintf("block %#x t%d", b.IAddr, b.Time))
	return nil
}
func (s *splitRec) Access(a *Access) error {
	s.got = append(s.got, fmt.Sprintf("access %#x", a.IAddr))
	return nil
}
func (s *splitRec) Response(r *LoadResponse) error {
	s.got = append(s.got, fmt.Sprintf("response %d", r.LID))
	return nil
}
func (s *splitRec) Close() error { s.got = append(s.got, "close"); return nil }

// TestDataMergerSplit checks where a DataMerger delivers the responses
// of a split CSV: before the first block of their time or later, after
// the accesses before them, at Close after the last block; and that
// blocks without time are refused.
func TestDataMergerSplit(t *testing.T) {
	const csv = "iaddr,dtype,daddr,dsize,data,lrid,lresp,lid,ldata,time\n" +
		"0x100,0,0x1000,2,,0,,,,\n" + // the load at 0x100 (time 1)
		",,,,,,2,0,0x5,0x3\n" + // its response, with the instruction of time 3
		"0x108,1,0x1000,2,0x1,,,,,\n" + // the store at 0x108 (time 3)
		",,,,,,2,1,0x5,0x5\n" // after the last instruction
	s := &splitRec{}
	src, err := NewDataCSVSource(strings.NewReader(csv), "d.csv")
	if err != nil {
		t.Fatal(err)
	}
	m := NewDataMerger(s, src)
	for i, a := range []uint64{0x100, 0x104, 0x108} {
		// a loop body of three instructions: 0x100 again at time 4
		if err := m.Block(&Block{IAddr: a, IRetire: 2, Time: uint64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Block(&Block{IAddr: 0x100, IRetire: 2, Time: 4}); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	want := "access 0x100, block 0x100 t1, block 0x104 t2, response 0, access 0x108, block 0x108 t3, block 0x100 t4, response 1, close"
	if g := strings.Join(s.got, ", "); g != want {
		t.Errorf("delivered %s\nwant      %s", g, want)
	}
	src, _ = NewDataCSVSource(strings.NewReader(csv), "d.csv")
	m = NewDataMerger(&splitRec{}, src)
	err = m.Block(&Block{IAddr: 0x100, IRetire: 2})
	if err == nil {
		err = m.Block(&Block{IAddr: 0x104, IRetire: 2})
	}
	if err == nil || !strings.Contains(err.Error(), "time column") {
		t.Errorf("blocks without time: %v", err)
	}
}
