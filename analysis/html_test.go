package analysis

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// reportFor writes the HTML report of the calls program, with made-up
// trace messages so that the trace statistics charts have data.
func reportFor(t *testing.T) (string, *Profile) {
	t.Helper()
	img, pcs := loadProgram(t, "calls")
	evs := pcsToFlow(t, img, pcs)
	p := New(img, Options{})
	// Pretend each range came from a 3-byte message, every 10th a sync.
	for i := range evs {
		evs[i].Offset = int64(3 * i)
		kind := "IndirectBranchHist"
		if i%10 == 0 {
			kind = "ProgTraceSync"
		}
		p.Message(kind, int64(3*i), 24)
	}
	p.SetTraceSize(int64(3 * len(evs)))
	feed(t, p, evs)
	var bw []Bandwidth
	for _, w := range []int{1, 4, 16} {
		bw = append(bw, BandwidthFor(p.BitsPerInstruction(), 1e9, 1, w, 200e6))
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, p, ReportOptions{Title: "calls <test>", Input: "calls.elf", Bandwidth: bw,
		BandwidthNote: "core at 1 GHz, 1 instruction per cycle"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, p
}

func TestHTMLReportContent(t *testing.T) {
	path, p := reportFor(t)
	b, _ := os.ReadFile(path)
	s := string(b)
	for _, want := range []string{
		`<title>calls &lt;test&gt;</title>`, `id="summary"`, `id="hot"`, `id="flame-svg"`, `id="trace-stats"`,
		`id="chart-messages"`, `id="chart-cost"`, `id="bandwidth"`, `id="coverage"`,
		`data-top-function="fib"`, `>fib</td>`, `never_called`,
		`data-instructions="` + strconv.FormatUint(p.Instructions(), 10) + `"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(s, "http://") && !strings.Contains(s, `xmlns="http://www.w3.org/2000/svg"`) || strings.Contains(s, "https://") || strings.Contains(s, "<link") {
		t.Error("report refers to external resources")
	}
}

// chromium finds a headless-capable Chromium (Debian package chromium).
func chromium() string {
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// TestHTMLReportInBrowser opens the report in headless Chromium and checks
// the DOM after the page's script ran: the flame graph was laid out
// (data-rendered), with frames, and the tables are there.
func TestHTMLReportInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("chromium not installed (Debian: apt-get install chromium): skipping the headless-browser test")
	}
	path, _ := reportFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=5000", "--dump-dom", "file://"+path)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, errb.String())
	}
	dom := out.String()
	if !strings.Contains(dom, `data-rendered="yes"`) {
		t.Fatalf("the report's script did not run to the end; DOM:\n%.2000s\nstderr:\n%s", dom, errb.String())
	}
	m := regexp.MustCompile(`data-frames="(\d+)"`).FindStringSubmatch(dom)
	if m == nil || m[1] == "0" {
		t.Errorf("flame graph has no frames: %v", m)
	}
	for _, want := range []string{`id="hot"`, `>fib</td>`, `id="chart-messages"`, `id="bandwidth"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered DOM lacks %q", want)
		}
	}
}
