package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// rvtrace report names its input in the title, takes --flame-order, and
// refuses an unknown order.
func TestCLIReportFlameOrder(t *testing.T) {
	elf := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	pcs := filepath.Join(dir, "demo.pcs")
	if code, _, e := rv(t, "run", "-q", "--pcs", pcs, elf); code != 0 {
		t.Fatalf("run: %s", e)
	}
	firstFrames := map[string]string{}
	for _, order := range []string{"weight", "time"} {
		html := filepath.Join(dir, order+".html")
		if code, _, e := rv(t, "report", "--image", elf, "--pcs-in", pcs, "--flame-order", order, "-o", html); code != 0 {
			t.Fatalf("report --flame-order %s: %s", order, e)
		}
		data, _ := os.ReadFile(html)
		s := string(data)
		if !strings.Contains(s, "<title>rvtrace report: "+pcs+"</title>") {
			t.Errorf("%s: title does not name the input %s", order, pcs)
		}
		var names []string
		for _, m := range regexp.MustCompile(`<g class="fr"[^>]*><title>([^:<]+)`).FindAllStringSubmatch(s, -1) {
			names = append(names, m[1])
		}
		if len(names) < 3 {
			t.Fatalf("%s: %d flame frames", order, len(names))
		}
		firstFrames[order] = strings.Join(names, ",")
	}
	if firstFrames["weight"] == firstFrames["time"] {
		t.Errorf("--flame-order time lays the frames out as weight does")
	}
	if code, _, e := rv(t, "report", "--image", elf, "--pcs-in", pcs, "--flame-order", "size", "-o", filepath.Join(dir, "x.html")); code == 0 || !strings.Contains(e, "--flame-order") {
		t.Errorf("unknown order accepted: exit %d, %q", code, e)
	}
}
