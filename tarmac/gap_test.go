package tarmac

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
)

// A gap in a decoded flow is written as a TraceGap E record that the
// reader reads back as an event record with the gap's offset, suspect
// count and index, and that the decoder takes as a break in the flow, not
// as a trap.
func TestWriterGapRecord(t *testing.T) {
	img := image.NewSet()
	code := bytes.Repeat([]byte{0x13, 0, 0, 0}, 16) // addi x0,x0,0
	img.AddBytes("nops", 0x1000, code)
	img.SetXLEN(64)
	var out bytes.Buffer
	w := NewWriter(&out, img, WriterOptions{NoDisasm: true})
	evs := []flow.Event{
		{Kind: flow.KindRange, Start: 0x1000, Last: 0x100c, N: 4, Offset: -1},
		{Kind: flow.KindGap, Offset: 0x1234, Index: 77, Suspect: 3,
			Err: &decode.Error{Offset: 0x1234, Index: 77, Err: decode.ErrCheckpoint}},
		{Kind: flow.KindRange, Start: 0x1020, Last: 0x1024, N: 2, Offset: -1},
	}
	for i := range evs {
		if err := w.Event(&evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := "0 clk cpu0 E 0000000000001234 00000003 0000004d TraceGap\n"
	if !strings.Contains(out.String(), want) {
		t.Fatalf("no gap record %q in:\n%s", want, out.String())
	}
	r := NewReader(bytes.NewReader(out.Bytes()), "gap.tarmac")
	found := false
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Tag == "E" {
			found = true
			if rec.Kind != KindEvent || rec.EventDesc != GapEventDesc || rec.Addr != 0x1234 ||
				!rec.HasValue1 || rec.Value1 != 3 || rec.EventNum != 77 {
				t.Errorf("gap record read as %+v", rec)
			}
		}
	}
	if !found {
		t.Fatal("the reader did not return the gap record")
	}
	var cnt flow.Counter
	d := NewDecoder(NewReader(bytes.NewReader(out.Bytes()), "gap.tarmac"), Options{XLEN: 64})
	if err := d.Flow(&cnt); err != nil {
		t.Fatal(err)
	}
	if cnt.Instructions != 6 || cnt.Traps != 0 {
		t.Errorf("read back %d instructions and %d traps, want 6 and 0", cnt.Instructions, cnt.Traps)
	}
}
