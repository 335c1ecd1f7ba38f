package tarmac

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
)

// TestTarmacUnknownPriv writes a flow whose context events are removed
// (as an N-Trace without Ownership messages decodes): every instruction
// record's mode is "-" and every event record has no mode, never a
// guessed privilege. Read back, it is the same flow without context
// events (ranges and traps unchanged), and Next refuses its blocks. With
// the context events kept, the modes are those of the blocks.
func TestTarmacUnknownPriv(t *testing.T) {
	img, pcs := loadCalls(t)
	blocks := simBlocks(t, img, pcs)
	var buf bytes.Buffer
	w := NewWriter(&buf, img, WriterOptions{})
	for i := range blocks {
		w.Block(&blocks[i])
	}
	w.Close()
	var ref collect
	if err := NewDecoder(NewReader(bytes.NewReader(buf.Bytes()), "a"), Options{}).Flow(&ref); err != nil {
		t.Fatal(err)
	}
	var noCtx []flow.Event
	for _, e := range ref.evs {
		if e.Kind != flow.KindContext {
			noCtx = append(noCtx, e)
		}
	}
	if len(noCtx) == len(ref.evs) {
		t.Fatal("no context event in the reference flow")
	}
	var out bytes.Buffer
	w2 := NewWriter(&out, img, WriterOptions{})
	for i := range noCtx {
		if err := w2.Event(&noCtx[i]); err != nil {
			t.Fatal(err)
		}
	}
	w2.Close()
	its, es := 0, 0
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Fields(l)
		switch f[3] {
		case "IT":
			its++
			if f[8] != "-" {
				t.Fatalf("mode %q in %q, want -", f[8], l)
			}
		case "E":
			es++
			// E epc tval number desc: no mode
			if len(f) != 8 {
				t.Fatalf("event record %q: want no mode", l)
			}
		}
	}
	if its != len(pcs)+8 || es == 0 {
		t.Fatalf("%d instruction records, %d event records", its, es)
	}
	var again collect
	if err := NewDecoder(NewReader(bytes.NewReader(out.Bytes()), "b"), Options{}).Flow(&again); err != nil {
		t.Fatal(err)
	}
	if len(again.evs) != len(noCtx) {
		t.Fatalf("%d events read back, want %d", len(again.evs), len(noCtx))
	}
	for i := range noCtx {
		want, got := noCtx[i], again.evs[i]
		want.Priv, got.Priv = 0, 0
		if want.String() != got.String() {
			t.Fatalf("event %d: %s, read back %s", i, want.String(), got.String())
		}
	}
	_, err := NewDecoder(NewReader(bytes.NewReader(out.Bytes()), "b"), Options{}).Next()
	if err == nil || errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "line 1: privilege unknown") {
		t.Errorf("Next of a '-' trace: %v", err)
	}
	// With the context events: the blocks' modes.
	var withCtx bytes.Buffer
	w3 := NewWriter(&withCtx, img, WriterOptions{})
	for i := range ref.evs {
		w3.Event(&ref.evs[i])
	}
	w3.Close()
	if strings.Contains(withCtx.String(), " - :") {
		t.Errorf("unknown mode written after a context event")
	}
	if want := buf.String()[:strings.Index(buf.String(), "\n")]; !strings.HasPrefix(withCtx.String(), want) {
		t.Errorf("first record %q, want %q", withCtx.String()[:len(want)], want)
	}
}

// TestTarmacUnknownCause writes a flow whose traps carry no cause (as a
// decoded N-Trace has them): their event records say Exception_Unknown
// (or Interrupt_Unknown) with the number 7fffffff and no tval, never a
// cause the trace did not give, and read back as traps without a cause.
func TestTarmacUnknownCause(t *testing.T) {
	img, pcs := loadCalls(t)
	blocks := simBlocks(t, img, pcs)
	var buf bytes.Buffer
	w := NewWriter(&buf, img, WriterOptions{})
	for i := range blocks {
		w.Block(&blocks[i])
	}
	w.Close()
	var ref collect
	if err := NewDecoder(NewReader(bytes.NewReader(buf.Bytes()), "a"), Options{}).Flow(&ref); err != nil {
		t.Fatal(err)
	}
	traps := 0
	for i := range ref.evs {
		if e := &ref.evs[i]; e.Kind == flow.KindTrap {
			if !e.HasCause {
				t.Fatalf("event %d: a trap of the simulator's blocks without cause", i)
			}
			e.HasCause, e.Cause, e.TVal = false, 0, 0
			traps++
		}
	}
	if traps == 0 {
		t.Fatal("no trap in the reference flow")
	}
	var out bytes.Buffer
	w2 := NewWriter(&out, img, WriterOptions{})
	for i := range ref.evs {
		if err := w2.Event(&ref.evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	w2.Close()
	es := 0
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Fields(l)
		if f[3] != "E" {
			continue
		}
		es++
		// E epc mode number desc: no tval
		if len(f) != 8 || f[6] != "7fffffff" && f[6] != "ffffffff" ||
			f[7] != "Exception_Unknown" && f[7] != "Interrupt_Unknown" {
			t.Errorf("event record %q: want an unknown cause and no tval", l)
		}
	}
	if es != traps {
		t.Fatalf("%d event records, want %d", es, traps)
	}
	var again collect
	if err := NewDecoder(NewReader(bytes.NewReader(out.Bytes()), "b"), Options{}).Flow(&again); err != nil {
		t.Fatal(err)
	}
	if len(again.evs) != len(ref.evs) {
		t.Fatalf("%d events read back, want %d", len(again.evs), len(ref.evs))
	}
	for i := range ref.evs {
		if want, got := ref.evs[i].String(), again.evs[i].String(); want != got {
			t.Fatalf("event %d: %s, read back %s", i, want, got)
		}
	}
}
