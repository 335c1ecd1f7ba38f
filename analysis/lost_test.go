package analysis

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
)

// A profile of a flow with gaps says so: the text profile's "lost" row
// gives the gaps and suspect instructions and lists the gaps; the HTML
// report has the lost card and a gap list; a clean flow's lost row says
// nothing was lost.
func TestLostRow(t *testing.T) {
	img, pcs := loadProgram(t, "calls")
	evs := pcsToFlow(t, img, pcs)
	half := len(evs) / 2
	build := func(gaps bool) *Profile {
		p := New(img, Options{})
		for i := range evs {
			if gaps && (i == half || i == half+10) {
				g := flow.Event{Kind: flow.KindGap, Offset: int64(1000 + i), Index: int64(i), Suspect: 5,
					Err: &decode.Error{Offset: int64(1000 + i), Index: int64(i), Err: fmt.Errorf("%w: at 0x10", decode.ErrCheckpoint)}}
				p.Event(&g)
			}
			p.Event(&evs[i])
		}
		p.Close()
		return p
	}
	p := build(true)
	var b bytes.Buffer
	if err := WriteText(&b, p, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	txt := b.String()
	for _, want := range []string{
		"lost          2 gaps, 10 suspect instructions",
		fmt.Sprintf("gap at byte %d (message %d): checkpoint address differs from the decoded flow: at 0x10; the 5 instructions before it are suspect", 1000+half, half),
		fmt.Sprintf("gap at byte %d (message %d)", 1010+half, half+10),
	} {
		if !strings.Contains(txt, want) {
			t.Errorf("text profile lacks %q:\n%s", want, txt[:min(len(txt), 800)])
		}
	}
	b.Reset()
	if err := WriteHTML(&b, p, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{`id="lost"`, `2 gaps, 10 suspect`, `id="gaps"`,
		fmt.Sprintf("<li>gap at byte %d (message %d): checkpoint address differs", 1000+half, half)} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
	clean := build(false)
	b.Reset()
	WriteText(&b, clean, TextOptions{})
	if !strings.Contains(b.String(), "lost          nothing: no gap in the trace") {
		t.Errorf("clean profile's lost row missing")
	}
	b.Reset()
	WriteHTML(&b, clean, ReportOptions{})
	if strings.Contains(b.String(), `id="gaps"`) || !strings.Contains(b.String(), "lost: no gap in the trace") {
		t.Errorf("clean report has a gap list or no lost card")
	}
}
