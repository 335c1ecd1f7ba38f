package ingress

import (
	"fmt"
	"strings"
	"testing"
)

// mergeLog records what a DataMerger delivers.
type mergeLog struct{ calls []string }

func (l *mergeLog) Block(b *Block) error {
	l.calls = append(l.calls, fmt.Sprintf("block %#x", b.IAddr))
	return nil
}
func (l *mergeLog) Close() error { return nil }
func (l *mergeLog) Access(a *Access) error {
	l.calls = append(l.calls, fmt.Sprintf("access %#x %#x", a.IAddr, a.DAddr))
	return nil
}

// TestDataMergerPerInst: accesses with the same instruction address go
// with one retirement as many as the instruction makes (PerInst: a Zcmp
// push of two registers), the next one with the next retirement; without
// PerInst each retirement takes one.
func TestDataMergerPerInst(t *testing.T) {
	csv := "iaddr,dtype,daddr,dsize,data\n" +
		"0x100,1,0x1000,2,1\n0x100,1,0xffc,2,2\n" + // the push at 0x100, first block
		"0x100,1,0x2000,2,3\n0x100,1,0x1ffc,2,4\n" // again, second block
	blocks := []Block{{IAddr: 0x100, IRetire: 2, IType: ITypeDirectJump}, {IAddr: 0x100, IRetire: 2, IType: ITypeDirectJump}}
	for _, c := range []struct {
		per  func(uint64) int
		want string
	}{
		{func(uint64) int { return 2 }, "access 0x100 0x1000, access 0x100 0xffc, block 0x100, access 0x100 0x2000, access 0x100 0x1ffc, block 0x100"},
		{nil, "access 0x100 0x1000, block 0x100, access 0x100 0xffc, block 0x100"},
	} {
		src, err := NewDataCSVSource(strings.NewReader(csv), "d.csv")
		if err != nil {
			t.Fatal(err)
		}
		l := &mergeLog{}
		m := NewDataMerger(l, src)
		m.PerInst = c.per
		for i := range blocks {
			if err := m.Block(&blocks[i]); err != nil {
				t.Fatal(err)
			}
		}
		err = m.Close()
		if got := strings.Join(l.calls, ", "); got != c.want {
			t.Errorf("PerInst %v: %s, want %s", c.per != nil, got, c.want)
		}
		if (err != nil) != (c.per == nil) || err != nil && !strings.Contains(err.Error(), "belongs to no block") {
			t.Errorf("PerInst %v: Close: %v", c.per != nil, err)
		}
	}
}

// TestDataMergerSplitPerInst: with the split protocol, a response
// signalled between the requests of one retirement (a Zcmp pop of two
// registers retired once, PerInst 2) is delivered in its place and the retirement
// still takes both requests; the next retirement of the same
// instruction takes the next two. Without PerInst the second request is
// taken for the next retirement, and the last is left over: an error.
func TestDataMergerSplitPerInst(t *testing.T) {
	const csv = "iaddr,dtype,daddr,dsize,data,lrid,lresp,lid,ldata,time\n" +
		"0x100,0,0x1000,3,,0,,,,\n" + // the pop at 0x100 (time 1), first register
		",,,,,,2,7,0x5,0x1\n" + // a response of time 1, between its requests
		"0x100,0,0x1008,3,,1,,,,\n" + // second register
		"0x100,0,0x2000,3,,2,,,,\n0x100,0,0x2008,3,,3,,,,\n" // the pop again (time 2)
	for _, c := range []struct {
		per  func(uint64) int
		want string
	}{
		{func(uint64) int { return 2 }, "access 0x100, response 7, access 0x100, block 0x100 t1, access 0x100, access 0x100, block 0x100 t2, close"},
		{nil, "access 0x100, response 7, block 0x100 t1, access 0x100, block 0x100 t2"},
	} {
		src, err := NewDataCSVSource(strings.NewReader(csv), "d.csv")
		if err != nil {
			t.Fatal(err)
		}
		s := &splitRec{}
		m := NewDataMerger(s, src)
		m.PerInst = c.per
		for i := uint64(1); i <= 2; i++ {
			// (a pop-return: a pop with itype 0 cannot retire again
			// right after itself but as its own repeated retirement)
			if err := m.Block(&Block{IAddr: 0x100, IRetire: 1, IType: ITypeReturn, Time: i}); err != nil {
				t.Fatal(err)
			}
		}
		err = m.Close()
		if g := strings.Join(s.got, ", "); g != c.want {
			t.Errorf("PerInst %v: delivered %s\nwant      %s", c.per != nil, g, c.want)
		}
		if (err != nil) != (c.per == nil) || err != nil && !strings.Contains(err.Error(), "belongs to no block") {
			t.Errorf("PerInst %v: Close: %v", c.per != nil, err)
		}
	}
}
