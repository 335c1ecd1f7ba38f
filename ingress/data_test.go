package ingress

import (
	"bytes"
	"errors"
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
