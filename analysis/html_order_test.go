package analysis

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

type flameFrame struct {
	name    string
	x, w, y float64
}

// flameFrames parses the frames of a report's flame graph.
func flameFrames(t *testing.T, s string) []flameFrame {
	t.Helper()
	re := regexp.MustCompile(`<g class="fr" data-x="([0-9.]+)" data-w="([0-9.]+)"><title>[^<]*</title><rect x="[0-9.]+" y="([0-9.]+)"[^>]*/><text[^>]*>([^<]*)</text>`)
	var fs []flameFrame
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		w, _ := strconv.ParseFloat(m[2], 64)
		y, _ := strconv.ParseFloat(m[3], 64)
		fs = append(fs, flameFrame{m[4], x, w, y})
	}
	if len(fs) < 5 {
		t.Fatalf("only %d flame frames", len(fs))
	}
	return fs
}

// siblingsByWeight reports whether the callees of every frame are laid
// out heaviest first (the parent of a frame is the one a row below
// whose range holds it).
func siblingsByWeight(fs []flameFrame) (ok bool, groups int) {
	const eps = 0.01
	type key struct{ y, x float64 }
	kids := map[key][]flameFrame{}
	for _, c := range fs {
		parent := key{-1, -1}
		for _, p := range fs {
			if p.y-c.y > flameRow-eps && p.y-c.y < flameRow+eps && c.x >= p.x-eps && c.x+c.w <= p.x+p.w+eps {
				parent = key{p.y, p.x}
			}
		}
		kids[parent] = append(kids[parent], c)
	}
	ok = true
	for _, cs := range kids {
		if len(cs) < 2 {
			continue
		}
		groups++
		// left to right
		for i := range cs {
			for j := i + 1; j < len(cs); j++ {
				if cs[j].x < cs[i].x {
					cs[i], cs[j] = cs[j], cs[i]
				}
			}
		}
		for i := 1; i < len(cs); i++ {
			if cs[i].w > cs[i-1].w+eps {
				ok = false
			}
		}
	}
	return ok, groups
}

func TestHTMLFlameOrder(t *testing.T) {
	img, pcs := loadProgram(t, "calls")
	evs := pcsToFlow(t, img, pcs)
	gen := func(callOrder bool) string {
		p := New(img, Options{})
		feed(t, p, evs)
		var b bytes.Buffer
		if err := WriteHTML(&b, p, ReportOptions{FlameCallOrder: callOrder}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	ok, groups := siblingsByWeight(flameFrames(t, gen(false)))
	if !ok || groups == 0 {
		t.Errorf("flame graph callees not heaviest first (%d groups of siblings)", groups)
	}
	// The program calls a light function before a heavy one somewhere:
	// in call order the check above fails, so it can tell the orders.
	if ok, _ := siblingsByWeight(flameFrames(t, gen(true))); ok {
		t.Errorf("call-order flame graph is by weight too: the test cannot tell the orders apart")
	}
}

// The report's counts are grouped in thousands, and the functions the
// summary counts are those the coverage section counts, file by file.
func TestHTMLReportCounts(t *testing.T) {
	path, p := reportFor(t)
	b, _ := os.ReadFile(path)
	s := string(b)
	grab := func(re string) string {
		m := regexp.MustCompile(re).FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("report lacks %s", re)
		}
		return m[1]
	}
	num := func(v string) int {
		if !regexp.MustCompile(`^[1-9][0-9]{0,2}(,[0-9]{3})*$|^0$`).MatchString(v) {
			t.Errorf("%q not grouped in thousands", v)
		}
		n, _ := strconv.Atoi(strings.ReplaceAll(v, ",", ""))
		return n
	}
	if got := num(grab(`<b id="instructions">([0-9,]+)</b>`)); uint64(got) != p.Instructions() || got < 1000 {
		t.Errorf("instructions %d, profile %d", got, p.Instructions())
	}
	run, total := num(grab(`<b id="funcs-run">([0-9,]+)</b>`)), num(grab(`id="funcs-total">([0-9,]+)<`))
	covRun, covTotal := num(grab(`<p id="cov-funcs"><b>([0-9,]+)</b>`)), num(grab(`<p id="cov-funcs"><b>[0-9,]+</b> of <b>([0-9,]+)</b>`))
	if run != covRun || total != covTotal {
		t.Errorf("summary: %d of %d functions executed; coverage: %d of %d", run, total, covRun, covTotal)
	}
	// the per-file rows and the functions without a file add up
	sumHit, sumAll := 0, 0
	for _, m := range regexp.MustCompile(`<tr><td class="l">[^<]+</td><td>([0-9,]+) / ([0-9,]+)</td>`).FindAllStringSubmatch(s, -1) {
		sumHit += num(m[1])
		sumAll += num(m[2])
	}
	if m := regexp.MustCompile(`\(([0-9,]+) of ([0-9,]+) without source file`).FindStringSubmatch(s); m != nil {
		sumHit += num(m[1])
		sumAll += num(m[2])
	}
	if sumHit != run || sumAll != total {
		t.Errorf("coverage rows add up to %d of %d, summary says %d of %d", sumHit, sumAll, run, total)
	}
	// independent count: functions (not [unknown]) with instructions
	n := 0
	for _, f := range p.FuncStats() {
		if f.Func.ID != 0 && f.Self > 0 {
			n++
		}
	}
	if n != run {
		t.Errorf("%d functions have instructions, the report says %d", n, run)
	}
	// every number cell of the hot functions table is grouped
	for _, m := range regexp.MustCompile(`<td>([0-9,]{4,})</td>`).FindAllStringSubmatch(s, -1) {
		num(m[1])
	}
}

// headless runs Chromium on url with extra arguments and returns stdout.
func headless(t *testing.T, url string, args ...string) string {
	t.Helper()
	bin := chromium()
	if bin == "" {
		t.Skip("chromium not installed (Debian: apt-get install chromium): skipping the headless-browser test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=5000"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, url)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, errb.String())
	}
	return out.String()
}

// A screenshot of the report shows the flame graph: a band of the
// frames' warm colours (hsl 0-60, 85%, 58%) across most of the width.
func TestHTMLReportScreenshot(t *testing.T) {
	path, _ := reportFor(t)
	shot := filepath.Join(t.TempDir(), "shot.png")
	headless(t, "file://"+path, "--screenshot="+shot, "--window-size=1400,4000", "--hide-scrollbars")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	im, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	bnd := im.Bounds()
	bestRow := 0
	for y := bnd.Min.Y; y < bnd.Max.Y; y++ {
		n := 0
		for x := bnd.Min.X; x < bnd.Max.X; x++ {
			r, g, b, _ := im.At(x, y).RGBA()
			r, g, b = r>>8, g>>8, b>>8
			// saturated warm: red high, blue low, green between
			if r > 200 && b < 110 && g > 40 && g <= r {
				n++
			}
		}
		bestRow = max(bestRow, n)
	}
	if bestRow < bnd.Dx()/2 {
		t.Errorf("no flame graph in the screenshot: widest warm row %d of %d pixels", bestRow, bnd.Dx())
	}
}

// Zoomed into a deep frame, its ancestors span the view with their
// labels at the left edge, readable.
func TestHTMLReportZoomLabels(t *testing.T) {
	path, _ := reportFor(t)
	b, _ := os.ReadFile(path)
	fs := flameFrames(t, string(b))
	// a frame above main that starts right of main's start (the page
	// zooms to the first frame of the name)
	var main flameFrame
	for _, f := range fs {
		if f.name == "main" {
			main = f
		}
	}
	first := map[string]bool{}
	top := ""
	for _, f := range fs {
		if !first[f.name] && f.y < main.y && f.x > main.x+10 && f.x+f.w <= main.x+main.w {
			top = f.name
			break
		}
		first[f.name] = true
	}
	if top == "" {
		t.Fatal("no frame to zoom to")
	}
	dom := headless(t, "file://"+path+"#zoom="+top, "--dump-dom")
	if !strings.Contains(dom, `data-rendered="yes"`) {
		t.Fatalf("script did not run:\n%.2000s", dom)
	}
	if !strings.Contains(dom, "zoomed to "+top) {
		t.Fatalf("not zoomed to %s", top)
	}
	// the root frames (main's ancestors chain starts at the bottom row)
	re := regexp.MustCompile(`<g class="fr"[^>]*><title>(main)[: ][^<]*</title><rect x="([-0-9.e]+)"[^>]*width="([-0-9.e]+)"[^>]*>(?:</rect>)?<text x="([-0-9.e]+)"[^>]*>([^<]*)</text>`)
	m := re.FindStringSubmatch(dom)
	if m == nil {
		i := strings.Index(dom, "<title>main")
		t.Fatalf("no frame of main in the zoomed DOM: %.600s", dom[max(i-100, 0):])
	}
	if m[2] != "0" || m[4] != "3" || m[5] != "main" {
		t.Errorf("ancestor main zoomed: rect x %s width %s, label at %s reads %q; want at the left edge, reading main", m[2], m[3], m[4], m[5])
	}
}
