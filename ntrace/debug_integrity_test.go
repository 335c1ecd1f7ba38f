package ntrace

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestDebugIntegrity(t *testing.T) {
	file := os.Getenv("DBG_FILE")
	if file == "" {
		t.Skip()
	}
	data, _ := os.ReadFile(file)
	lines := strings.Split(string(data), "\n")
	inner := func(l string) string { return l[strings.Index(l, "(")+1 : strings.LastIndex(l, ")")] }
	seed, _ := strconv.ParseInt(inner(lines[1]), 0, 64)
	var sel int
	if x := inner(lines[2]); strings.HasPrefix(x, "'") {
		r, _, _, _ := strconv.UnquoteChar(x[1:len(x)-1], '\'')
		sel = int(r)
	} else {
		sel, _ = strconv.Atoi(x)
	}
	n, _ := strconv.Atoi(inner(lines[3]))
	ops, _ := strconv.Unquote(inner(lines[4]))
	img, _ := integrityImage()
	cfg := integrityConfigs[sel%len(integrityConfigs)]
	cfg.XLEN = img.XLEN()
	truth := synthFlow(img, seed, 200+n%2800, true)
	trace, _ := encodePCs(img, truth, cfg)
	bad, desc := corrupt(trace, []byte(ops))
	t.Log(desc)
	var a, b bytes.Buffer
	Dump(bytes.NewReader(trace), &a, DumpOptions{Wire: cfg.Wire()})
	Dump(bytes.NewReader(bad), &b, DumpOptions{Wire: cfg.Wire()})
	al, bl := strings.Split(a.String(), "\n"), strings.Split(b.String(), "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		x, y := "", ""
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			t.Logf("%d:\n  good %s\n  bad  %s", i, x, y)
		}
	}
	why, rec := integrityCase(t, img, truth, cfg, trace, []byte(ops))
	t.Log(why)
	pcs, _ := rec.decodedPCs()
	for i := range pcs {
		if i >= len(truth) || pcs[i] != truth[i] {
			t.Logf("first diff at %d: got %#x want %#x", i, pcs[i], truth[min(i, len(truth)-1)])
			break
		}
	}
	t.Logf("decoded %d, truth %d, config %+v", len(pcs), len(truth), cfg)
	if again, err := encodePCs(img, pcs, cfg); err != nil {
		t.Logf("re-encode: %v", err)
	} else {
		var c bytes.Buffer
		Dump(bytes.NewReader(again), &c, DumpOptions{Wire: cfg.Wire()})
		cl := strings.Split(c.String(), "\n")
		for i := range cl {
			if i >= len(bl) || cl[i] != bl[i] {
				t.Logf("re-encoding differs at line %d:\n  again %s\n  bad   %s", i, cl[i], bl[min(i, len(bl)-1)])
				break
			}
		}
	}
	for _, it := range rec.items {
		if it.gap != nil {
			t.Logf("gap: %v", it.gap)
		}
	}
}
