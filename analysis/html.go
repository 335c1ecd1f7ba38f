package analysis

import (
	"cmp"
	"fmt"
	"html"
	"html/template"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ReportOptions configure WriteHTML.
type ReportOptions struct {
	// Title heads the report; Input describes what was analysed (file
	// names, protocol).
	Title, Input string
	// Funcs is the number of hot functions listed (0: 25).
	Funcs int
	// Bandwidth lists the trace-port configurations to show, typically
	// from BandwidthFor; empty shows none.
	Bandwidth []Bandwidth
	// BandwidthNote explains the assumptions (core clock, IPC).
	BandwidthNote string
	// FlameCallOrder lays the callees of each flame-graph frame out in
	// the order they were first called (an icicle of time) instead of by
	// weight, heaviest first.
	FlameCallOrder bool
}

// flame graph geometry
const (
	flameWidth  = 1200.0
	flameRow    = 17.0
	flameMinPx  = 0.3
	flameMaxDep = 256
)

type htmlFunc struct {
	Name, Where                                   string
	SelfPct, BarPct                               float64
	Self, Incl, Calls, SelfCyc, InclCyc, TraceByt uint64
}

type htmlBar struct {
	Label, Value string
	Pct          float64
}

type htmlLine struct {
	Where, Func string
	Insts       uint64
	Pct         float64
}

type htmlCov struct {
	File            string
	FuncsHit, Funcs int
	LinesHit, Lines int
	LinePct         float64
	Missed          []string
}

type htmlData struct {
	Title, Input          string
	Instructions, Cycles  uint64
	HasCycles             bool
	IPC                   string
	FuncsRun, FuncsTotal  int
	NoFile, NoFileHit     int    // functions without a source file (not in the coverage table)
	Unknown               uint64 // instructions outside every symbol
	Traps, Gaps, Suspect  uint64
	GapList               []string
	MoreGaps              uint64
	TraceBytes            int64
	BPI                   string
	TopFunc               string
	Funcs                 []htmlFunc
	MoreFuncs             int
	Flame                 template.HTML
	FlameHeight           int
	Lines                 []htmlLine
	Msgs, Costs           []htmlBar
	HasTrace              bool
	Bandwidth             []Bandwidth
	BandwidthNote         string
	Cov                   []htmlCov
	CovFuncsHit, CovFuncs int
	CovLinesHit, CovLines int
}

// WriteHTML writes a self-contained HTML report (no external resources;
// it opens in any browser): the run summary, the hot functions, a flame
// graph of the call tree (click to zoom, type to search), the hottest
// source lines, the trace statistics as charts (bytes by message type,
// trace cost per function, the bandwidth per port configuration) and the
// coverage per source file.
func WriteHTML(w io.Writer, p *Profile, opt ReportOptions) error {
	if opt.Funcs == 0 {
		opt.Funcs = 25
	}
	if opt.Title == "" {
		opt.Title = "rvtrace report"
	}
	p.Close()
	total := p.Instructions()
	fs := p.FuncStats()
	d := htmlData{
		Title: opt.Title, Input: opt.Input, Instructions: total, Cycles: p.Cycles(), HasCycles: p.HasCycles(),
		IPC: fmt.Sprintf("%.3f", p.IPC()), Traps: p.Traps(), Gaps: p.Gaps(),
		Suspect: p.Suspect(), GapList: p.GapList(), MoreGaps: p.Gaps() - uint64(len(p.GapList())),
		TraceBytes: p.TraceBytes(), BPI: fmt.Sprintf("%.3f", p.BitsPerInstruction()),
		Bandwidth: opt.Bandwidth, BandwidthNote: opt.BandwidthNote,
	}
	// The summary counts the functions of the image as the coverage
	// does: those that executed an instruction, [unknown] apart.
	c := p.Coverage()
	d.FuncsRun, d.FuncsTotal = c.FuncsHit, len(c.Funcs)
	for _, fc := range c.Funcs {
		if fc.Func.File == "" {
			d.NoFile++
			if fc.Hit() {
				d.NoFileHit++
			}
		}
	}
	d.Unknown = p.FuncStat(p.Funcs()[0]).Self
	var maxSelf uint64
	for _, f := range fs {
		maxSelf = max(maxSelf, f.Self)
	}
	for i, f := range fs {
		if i >= opt.Funcs {
			d.MoreFuncs = len(fs) - i
			break
		}
		hf := htmlFunc{Name: f.Func.Name, SelfPct: pct(f.Self, total), BarPct: pct(f.Self, maxSelf), Self: f.Self,
			Incl: f.Inclusive, Calls: f.Calls, SelfCyc: f.SelfCycles, InclCyc: f.InclCycles, TraceByt: f.TraceBytes}
		if f.Func.File != "" {
			hf.Where = fmt.Sprintf("%s:%d", filepath.Base(f.Func.File), f.Func.Line)
		}
		if f.Func.ID == 0 {
			hf.Name = p.UnknownLabel()
		}
		d.Funcs = append(d.Funcs, hf)
	}
	if len(fs) > 0 {
		d.TopFunc = p.FuncLabel(fs[0].Func)
	}
	d.Flame, d.FlameHeight = flameSVG(p, opt.FlameCallOrder)
	for i, l := range p.LineStats() {
		if i >= 20 {
			break
		}
		d.Lines = append(d.Lines, htmlLine{Where: fmt.Sprintf("%s:%d", filepath.Base(l.File), l.Line), Func: l.Func.Name,
			Insts: l.Insts, Pct: pct(l.Insts, total)})
	}
	// trace statistics
	msgs := p.Messages()
	var maxBits uint64
	for _, m := range msgs {
		maxBits = max(maxBits, m.Bits)
	}
	for _, m := range msgs {
		d.Msgs = append(d.Msgs, htmlBar{Label: m.Kind, Pct: pct(m.Bits, maxBits),
			Value: fmt.Sprintf("%s messages, %s bytes", Thousands(m.Count), Thousands((m.Bits+7)/8))})
	}
	costs := append([]FuncStat(nil), fs...)
	sort.SliceStable(costs, func(i, j int) bool { return costs[i].TraceBytes > costs[j].TraceBytes })
	var maxCost uint64
	if len(costs) > 0 {
		maxCost = costs[0].TraceBytes
	}
	for i, f := range costs {
		if i >= 15 || f.TraceBytes == 0 {
			break
		}
		bpi := 0.0
		if f.Self > 0 {
			bpi = float64(f.TraceBytes) * 8 / float64(f.Self)
		}
		d.Costs = append(d.Costs, htmlBar{Label: p.FuncLabel(f.Func), Pct: pct(f.TraceBytes, maxCost),
			Value: fmt.Sprintf("%s bytes, %.2f bits/instruction", Thousands(f.TraceBytes), bpi)})
	}
	d.HasTrace = d.TraceBytes > 0 || len(d.Msgs) > 0 || len(d.Costs) > 0
	// coverage
	d.CovFuncs, d.CovFuncsHit = len(c.Funcs), c.FuncsHit
	d.CovLines, d.CovLinesHit = c.LinesFound, c.LinesHit
	for _, f := range c.Files {
		hc := htmlCov{File: f.File, Funcs: len(f.Funcs), Lines: len(f.Lines)}
		for _, fc := range f.Funcs {
			if fc.Hit() {
				hc.FuncsHit++
			} else {
				hc.Missed = append(hc.Missed, fc.Func.Name)
			}
		}
		for _, l := range f.Lines {
			if l.Hits > 0 {
				hc.LinesHit++
			}
		}
		hc.LinePct = pct(uint64(hc.LinesHit), uint64(hc.Lines))
		d.Cov = append(d.Cov, hc)
	}
	return reportTmpl.Execute(w, d)
}

// flameSVG draws the call tree as a flame graph (root at the bottom), the
// callees of each frame by weight, heaviest first, or in call order.
func flameSVG(p *Profile, callOrder bool) (template.HTML, int) {
	total := p.root.Inclusive
	if total == 0 {
		return "", 0
	}
	type item struct {
		n     *Node
		x     float64
		depth int
	}
	var rects []item
	maxDepth := 0
	children := func(n *Node) []*Node {
		if callOrder {
			return n.Children
		}
		cs := slices.Clone(n.Children)
		slices.SortStableFunc(cs, func(a, b *Node) int { return cmp.Compare(b.Inclusive, a.Inclusive) })
		return cs
	}
	var stack []item
	x := 0.0
	for _, c := range children(p.root) {
		stack = append(stack, item{c, x, 0})
		x += float64(c.Inclusive) / float64(total) * flameWidth
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		w := float64(it.n.Inclusive) / float64(total) * flameWidth
		if w < flameMinPx || it.depth >= flameMaxDep {
			continue
		}
		rects = append(rects, it)
		maxDepth = max(maxDepth, it.depth)
		cx := it.x
		for _, c := range children(it.n) {
			stack = append(stack, item{c, cx, it.depth + 1})
			cx += float64(c.Inclusive) / float64(total) * flameWidth
		}
	}
	h := int(float64(maxDepth+1)*flameRow) + 2
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="flame-svg" xmlns="http://www.w3.org/2000/svg" width="100%%" viewBox="0 0 %d %d" preserveAspectRatio="none" height="%d">`, int(flameWidth), h, h)
	for _, r := range rects {
		w := float64(r.n.Inclusive) / float64(total) * flameWidth
		y := float64(h) - float64(r.depth+1)*flameRow - 1
		name := html.EscapeString(p.FuncLabel(r.n.Func))
		hue := 0
		for _, c := range r.n.Func.Name {
			hue = (hue*31 + int(c)) % 60
		}
		trap := ""
		if r.n.Trap {
			trap = " [trap]"
		}
		fmt.Fprintf(&b, `<g class="fr" data-x="%.3f" data-w="%.3f"><title>%s%s: %s instructions (%.2f%%), %s self, %s calls</title>`+
			`<rect x="%.3f" y="%.1f" width="%.3f" height="%.1f" fill="hsl(%d,85%%,58%%)"/><text x="%.3f" y="%.1f">%s</text></g>`,
			r.x, w, name, trap, Thousands(r.n.Inclusive), pct(r.n.Inclusive, total), Thousands(r.n.Self), Thousands(r.n.Calls),
			r.x, y, w, flameRow-1, hue, r.x+3, y+12, name)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()), h
}

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct": func(f float64) string { return fmt.Sprintf("%.2f%%", f) },
	"num": func(v any) string {
		switch n := v.(type) {
		case uint64:
			return Thousands(n)
		case int:
			return Thousands(uint64(n))
		case int64:
			return Thousands(uint64(n))
		}
		return fmt.Sprint(v)
	},
	"mbps": func(v float64) string {
		switch {
		case v >= 1e9:
			return fmt.Sprintf("%.2f Gbit/s", v/1e9)
		case v >= 1e6:
			return fmt.Sprintf("%.1f Mbit/s", v/1e6)
		}
		return fmt.Sprintf("%.0f kbit/s", v/1e3)
	},
	"mhz":  func(v float64) string { return fmt.Sprintf("%.1f MHz", v/1e6) },
	"util": func(v float64) string { return fmt.Sprintf("%.0f%%", v*100) },
	"over": func(v float64) bool { return v > 1 },
}).Parse(reportHTML))

const reportHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="rvtrace">
<title>{{.Title}}</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2330;background:#f6f7fa}
header{background:#1d2330;color:#fff;padding:14px 24px}header h1{margin:0;font-size:20px}header p{margin:4px 0 0;color:#b8c0d0}
main{padding:16px 24px;max-width:1400px}
section{background:#fff;border:1px solid #dde1ea;border-radius:6px;margin:0 0 16px;padding:12px 16px}
h2{font-size:16px;margin:0 0 10px}
.cards{display:flex;flex-wrap:wrap;gap:10px}.card{background:#f0f3f9;border-radius:5px;padding:8px 12px;min-width:140px}
.card b{display:block;font-size:18px}.card span{color:#5a6475;font-size:12px}
table{border-collapse:collapse;width:100%}th,td{padding:3px 8px;text-align:right;white-space:nowrap}
th{background:#eef1f6;font-weight:600}td.l,th.l{text-align:left}tr:nth-child(even) td{background:#fafbfd}
.bar{position:relative;min-width:160px}.bar i{position:absolute;left:0;top:3px;bottom:3px;background:#f08c3c;opacity:.45;border-radius:2px}
.bar span{position:relative}
.chart .row{display:flex;align-items:center;margin:2px 0}.chart .lab{width:260px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.chart .track{flex:1;background:#eef1f6;height:16px;border-radius:3px;margin:0 8px}.chart .fill{height:16px;background:#3c7df0;border-radius:3px}
.chart .val{width:300px;color:#5a6475;font-size:12px}
#flame-svg text{font:11px monospace;fill:#111;pointer-events:none}#flame-svg g.fr rect{stroke:#fff;stroke-width:.5;cursor:pointer}
#flame-svg g.fr.hit rect{fill:#d040d0}
.tools{margin:0 0 8px}.tools input{padding:3px 6px;width:260px}.tools button{margin-left:6px}
.bad{color:#c0262d;font-weight:600}.ok{color:#237a2c}
.muted{color:#5a6475}
</style></head>
<body data-top-function="{{.TopFunc}}" data-instructions="{{.Instructions}}">
<header><h1>{{.Title}}</h1>{{if .Input}}<p>{{.Input}}</p>{{end}}</header>
<main>
<section id="summary"><h2>Run summary</h2><div class="cards">
<div class="card"><b id="instructions">{{num .Instructions}}</b><span>instructions</span></div>
{{if .HasCycles}}<div class="card"><b>{{num .Cycles}}</b><span>cycles (time units)</span></div>
<div class="card"><b>{{.IPC}}</b><span>instructions per cycle</span></div>{{end}}
<div class="card"><b id="funcs-run">{{num .FuncsRun}}</b><span>functions executed (of <span id="funcs-total">{{num .FuncsTotal}}</span>)</span></div>
{{if .Unknown}}<div class="card"><b>{{num .Unknown}}</b><span>instructions outside every symbol ([unknown])</span></div>{{end}}
<div class="card"><b>{{num .Traps}}</b><span>traps</span></div>
{{if .Gaps}}<div class="card" id="lost"><b class="bad">{{num .Gaps}} gaps, {{num .Suspect}} suspect</b><span>lost: trace lost or undecodable, and instructions before it that may be wrong</span></div>{{else}}<div class="card" id="lost"><b>0</b><span>lost: no gap in the trace</span></div>{{end}}
{{if .TraceBytes}}<div class="card"><b>{{num .TraceBytes}}</b><span>trace bytes</span></div>
<div class="card"><b>{{.BPI}}</b><span>bits per instruction</span></div>{{end}}
{{if .CovLines}}<div class="card"><b>{{num .CovLinesHit}} / {{num .CovLines}}</b><span>source lines covered</span></div>{{end}}
</div></section>

{{if .Gaps}}<section id="gaps"><h2>Gaps</h2>
<p class="bad">The trace has {{.Gaps}} gaps: what ran there is missing from this report, and {{.Suspect}} instructions before them may be wrong.</p>
<ul>{{range .GapList}}<li>{{.}}</li>{{end}}</ul>{{if .MoreGaps}}<p class="muted">… and {{.MoreGaps}} more gaps.</p>{{end}}
</section>{{end}}

<section id="hot"><h2>Hot functions</h2>
<table><thead><tr><th class="l">function</th><th class="l">self</th><th>self instr.</th><th>inclusive</th><th>calls</th>
{{if .HasCycles}}<th>self cycles</th><th>incl. cycles</th>{{end}}{{if .HasTrace}}<th>trace bytes</th>{{end}}<th class="l">source</th></tr></thead><tbody>
{{range .Funcs}}<tr><td class="l">{{.Name}}</td><td class="l bar"><i style="width:{{printf "%.1f" .BarPct}}%"></i><span>{{pct .SelfPct}}</span></td>
<td>{{num .Self}}</td><td>{{num .Incl}}</td><td>{{num .Calls}}</td>{{if $.HasCycles}}<td>{{num .SelfCyc}}</td><td>{{num .InclCyc}}</td>{{end}}{{if $.HasTrace}}<td>{{num .TraceByt}}</td>{{end}}<td class="l muted">{{.Where}}</td></tr>
{{end}}</tbody></table>{{if .MoreFuncs}}<p class="muted">… and {{.MoreFuncs}} more functions.</p>{{end}}
</section>

<section id="flame"><h2>Flame graph</h2>
<div class="tools"><input id="search" placeholder="search functions (regular expression)"><button id="reset">reset zoom</button> <span id="flame-status" class="muted">click a frame to zoom</span></div>
{{.Flame}}
</section>

{{if .Lines}}<section id="lines"><h2>Hot source lines</h2>
<table><thead><tr><th class="l">line</th><th class="l">function</th><th>instructions</th><th>share</th></tr></thead><tbody>
{{range .Lines}}<tr><td class="l">{{.Where}}</td><td class="l">{{.Func}}</td><td>{{num .Insts}}</td><td>{{pct .Pct}}</td></tr>{{end}}
</tbody></table></section>{{end}}

<section id="trace-stats"><h2>Trace statistics</h2>
{{if not .HasTrace}}<p class="muted">No trace bytes: this flow did not come from an encoded trace.</p>{{end}}
{{if .Msgs}}<h3>Bytes by message type</h3><div class="chart" id="chart-messages">
{{range .Msgs}}<div class="row"><div class="lab">{{.Label}}</div><div class="track"><div class="fill" style="width:{{printf "%.1f" .Pct}}%"></div></div><div class="val">{{.Value}}</div></div>{{end}}
</div>{{end}}
{{if .Costs}}<h3>Trace cost per function</h3><div class="chart" id="chart-cost">
{{range .Costs}}<div class="row"><div class="lab">{{.Label}}</div><div class="track"><div class="fill" style="width:{{printf "%.1f" .Pct}}%"></div></div><div class="val">{{.Value}}</div></div>{{end}}
</div>{{end}}
{{if .Bandwidth}}<h3>Bandwidth</h3>{{if .BandwidthNote}}<p class="muted">{{.BandwidthNote}}</p>{{end}}
<table id="bandwidth"><thead><tr><th>port width</th><th>port clock</th><th>needed</th><th>port carries</th><th>utilisation</th><th>lowest port clock</th></tr></thead><tbody>
{{range .Bandwidth}}<tr><td>{{.PortBits}} bits</td><td>{{mhz .PortHz}}</td><td>{{mbps .NeedBitsPerSec}}</td><td>{{mbps .PortBitsPerSec}}</td>
<td class="{{if over .Utilization}}bad{{else}}ok{{end}}">{{util .Utilization}}</td><td>{{mhz .MinPortHz}}</td></tr>{{end}}
</tbody></table>{{end}}
</section>

<section id="coverage"><h2>Coverage</h2>
<p id="cov-funcs"><b>{{num .CovFuncsHit}}</b> of <b>{{num .CovFuncs}}</b> functions executed{{if .NoFile}} ({{num .NoFileHit}} of {{num .NoFile}} without source file, not listed below){{end}}.</p>
{{if .Cov}}<table><thead><tr><th class="l">source file</th><th>functions</th><th>lines</th><th class="l">line coverage</th><th class="l">functions not run</th></tr></thead><tbody>
{{range .Cov}}<tr><td class="l">{{.File}}</td><td>{{num .FuncsHit}} / {{num .Funcs}}</td><td>{{num .LinesHit}} / {{num .Lines}}</td>
<td class="l bar"><i style="width:{{printf "%.1f" .LinePct}}%;background:#3ca050"></i><span>{{pct .LinePct}}</span></td><td class="l">{{range $i, $m := .Missed}}{{if $i}}, {{end}}{{$m}}{{end}}</td></tr>{{end}}
</tbody></table>{{else}}<p class="muted">No source files (the image has no DWARF line information).</p>{{end}}
</section>
</main>
<script>
(function(){
  var svg = document.getElementById('flame-svg');
  var status = document.getElementById('flame-status');
  if (!svg) { document.body.setAttribute('data-rendered','no-flame'); return; }
  var W = 1200, frames = Array.prototype.slice.call(svg.querySelectorAll('g.fr'));
  function fit() {
    frames.forEach(function(g){
      var r = g.querySelector('rect'), t = g.querySelector('text');
      var w = parseFloat(r.getAttribute('width')), full = t.getAttribute('data-full') || t.textContent;
      t.setAttribute('data-full', full);
      var chars = Math.floor((w - 6) / 6.6);
      t.textContent = chars < 2 ? '' : (full.length > chars ? full.slice(0, chars - 1) + '\u2026' : full);
    });
  }
  function zoom(x0, w0) {
    var k = W / w0;
    frames.forEach(function(g){
      var x = parseFloat(g.getAttribute('data-x')), w = parseFloat(g.getAttribute('data-w'));
      var nx = (x - x0) * k, nw = w * k, r = g.querySelector('rect'), t = g.querySelector('text');
      var vis = nx + nw > 0.01 && nx < W - 0.01;
      g.style.display = vis ? '' : 'none';
      // clip to the view: an ancestor of the zoomed frame spans it all,
      // its label at the left edge, readable
      var cx = Math.max(nx, 0), cw = Math.min(nx + nw, W) - cx;
      r.setAttribute('x', cx); r.setAttribute('width', Math.max(cw, 0)); t.setAttribute('x', cx + 3);
    });
    fit();
  }
  frames.forEach(function(g){
    g.addEventListener('click', function(){
      zoom(parseFloat(g.getAttribute('data-x')), parseFloat(g.getAttribute('data-w')));
      status.textContent = 'zoomed to ' + g.querySelector('text').getAttribute('data-full');
    });
  });
  document.getElementById('reset').addEventListener('click', function(){ zoom(0, W); status.textContent = 'click a frame to zoom'; });
  document.getElementById('search').addEventListener('input', function(e){
    var re; try { re = new RegExp(e.target.value); } catch (x) { return; }
    var n = 0;
    frames.forEach(function(g){
      var hit = e.target.value !== '' && re.test(g.querySelector('text').getAttribute('data-full'));
      g.classList.toggle('hit', hit); if (hit) n++;
    });
    status.textContent = e.target.value ? n + ' frames match' : 'click a frame to zoom';
  });
  fit();
  // report.html#zoom=NAME opens zoomed to the first frame of NAME
  var m = /^#zoom=(.+)$/.exec(location.hash);
  if (m) {
    var name = decodeURIComponent(m[1]);
    frames.some(function(g){
      if (g.querySelector('text').getAttribute('data-full') !== name) return false;
      g.dispatchEvent(new MouseEvent('click')); return true;
    });
  }
  document.body.setAttribute('data-rendered', 'yes');
  document.body.setAttribute('data-frames', String(frames.length));
})();
</script>
</body></html>
`

// Thousands formats n with a comma between groups of three digits
// ("1,234,567").
func Thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
