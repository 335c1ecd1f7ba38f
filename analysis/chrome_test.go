package analysis

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestChromeTrace checks the Chrome trace-event JSON: it parses, the
// outermost spans cover every instruction, and main's span matches main's
// inclusive count and nests inside _start's.
func TestChromeTrace(t *testing.T) {
	img, pcs := loadProgram(t, "calls")
	var buf bytes.Buffer
	c := NewChrome(&buf, img, Options{}, ChromeOptions{})
	feed(t, c, pcsToFlow(t, img, pcs))
	var doc struct {
		TraceEvents []struct {
			Name string  `json:"name"`
			Ph   string  `json:"ph"`
			Ts   float64 `json:"ts"`
			Dur  float64 `json:"dur"`
			Tid  int     `json:"tid"`
			Args struct {
				Instructions uint64 `json:"instructions"`
				Depth        int    `json:"depth"`
			} `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("invalid JSON: %v", err)
	}
	var outer uint64
	var start, mainTs, mainEnd float64
	var mainInsts uint64
	spans := 0
	for _, e := range doc.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		spans++
		if e.Args.Depth == 0 {
			outer += e.Args.Instructions
		}
		if e.Name == "_start" {
			start = e.Ts
		}
		if e.Name == "main" {
			mainTs, mainEnd, mainInsts = e.Ts, e.Ts+e.Dur, e.Args.Instructions
		}
	}
	if outer != uint64(len(pcs)) {
		t.Errorf("outermost spans cover %d instructions, want %d", outer, len(pcs))
	}
	p, _ := profileCalls(t)
	if fs := p.FuncStat(p.FuncByName("main")); mainInsts != fs.Inclusive || mainEnd-mainTs != float64(fs.Inclusive) {
		t.Errorf("main span: %d instructions, %v long; main inclusive %d", mainInsts, mainEnd-mainTs, fs.Inclusive)
	}
	if mainTs < start || spans < 100 {
		t.Errorf("main starts at %v before _start at %v, or too few spans (%d)", mainTs, start, spans)
	}
}
