package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// selectUsage is the part of the usage of every trace-reading command that
// describes the selectors.
const selectUsage = `
Selectors (analysis time; any combination, all must hold): --src N (one
trace source), --priv U|S|M (comma list), --ctx V, --from/--to X where X
is an instruction index (from 0), t:T a timestamp, or a symbol or 0xADDR (its
first execution; --to excludes it), --range LO-HI (hex addresses, HI
excluded; repeatable), --symbol NAME (the function's extent; repeatable),
--sample N (one instruction in N, each standing for N). Ranges are cut exactly
at the selection's edges. Gaps always pass; traps pass with the instruction
before them (or when their address is in --range); instructions before the
first context message have no known privilege or context.
`

// selectOpts are the selector flags.
type selectOpts struct {
	src             *int
	priv, ctx       *string
	from, to        *string
	ranges, symbols multiFlag
	sample          *uint64
}

// selectFlags registers the selectors every command that reads a trace
// takes: --src, --priv, --context, --from, --to, --range, --symbol,
// --sample.
func selectFlags(fs *flag.FlagSet) *selectOpts {
	o := &selectOpts{}
	o.src = fs.Int("src", -1, "select the trace source (hart, SRC field value) `N`; default all")
	o.priv = fs.String("priv", "", "select the instructions executed at these privilege `levels` (U, S, M, D, VU, VS; comma separated)")
	o.ctx = fs.String("ctx", "", "select the instructions executed in context `V` (process ID)")
	o.from = fs.String("from", "", "select from `X`: instruction index, t:TIMESTAMP, SYMBOL or 0xADDR (first execution)")
	o.to = fs.String("to", "", "select up to `X` (excluded; a timestamp included): as --from")
	fs.Var(&o.ranges, "range", "select the instructions at addresses `LO-HI` (hex, HI excluded; repeatable)")
	fs.Var(&o.symbols, "symbol", "select the instructions inside function `NAME` (repeatable)")
	o.sample = fs.Uint64("sample", 0, "keep one instruction in `N` (each stands for N: counts are samples)")
	return o
}

var privNames = map[string]ingress.Priv{"U": ingress.PrivU, "S": ingress.PrivS, "M": ingress.PrivM,
	"D": ingress.PrivD, "VU": ingress.PrivVU, "VS": ingress.PrivVS}

// selector builds the selector from the flags, with img for symbols.
func (o *selectOpts) selector(img *image.Set) (flow.Selector, error) {
	var s flow.Selector
	if *o.src >= 0 {
		s.HasSrc, s.Src = true, uint32(*o.src)
	}
	if *o.priv != "" {
		for _, p := range strings.Split(*o.priv, ",") {
			v, ok := privNames[strings.ToUpper(strings.TrimSpace(p))]
			if !ok {
				return s, fmt.Errorf("--priv %s: unknown privilege level %q (U, S, M, D, VU, VS)", *o.priv, p)
			}
			s.Privs |= 1 << v
		}
	}
	if *o.ctx != "" {
		v, err := strconv.ParseUint(*o.ctx, 0, 64)
		if err != nil {
			return s, fmt.Errorf("--ctx %s: not a number", *o.ctx)
		}
		s.HasContext, s.Context = true, v
	}
	var err error
	if s.From, err = parsePoint("from", *o.from, img); err != nil {
		return s, err
	}
	if s.To, err = parsePoint("to", *o.to, img); err != nil {
		return s, err
	}
	for _, r := range o.ranges {
		lo, hi, ok := strings.Cut(r, "-")
		a, err1 := parseHex(lo)
		b, err2 := parseHex(hi)
		if !ok || err1 != nil || err2 != nil || b <= a {
			return s, fmt.Errorf("--range %s: want LO-HI, hex addresses with LO < HI", r)
		}
		s.Ranges = append(s.Ranges, flow.AddrRange{Lo: a, Hi: b})
	}
	for _, name := range o.symbols {
		found := false
		for _, sym := range img.Symbols() {
			if sym.Name != name || sym.Abs {
				continue
			}
			if sym.Size == 0 {
				return s, fmt.Errorf("--symbol %s: the symbol has no size in the image: give its addresses with --range", name)
			}
			s.Ranges = append(s.Ranges, flow.AddrRange{Lo: sym.Addr, Hi: sym.Addr + sym.Size})
			found = true
		}
		if !found {
			return s, fmt.Errorf("--symbol %s: no such symbol in the image", name)
		}
	}
	s.Sample = *o.sample
	return s, nil
}

// parseHex parses a hex address, with or without 0x.
func parseHex(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	return strconv.ParseUint(s, 16, 64)
}

// parsePoint parses a --from or --to value.
func parsePoint(flagName, v string, img *image.Set) (flow.Point, error) {
	switch {
	case v == "":
		return flow.Point{}, nil
	case strings.HasPrefix(v, "t:"):
		t, err := strconv.ParseUint(v[2:], 0, 64)
		if err != nil {
			return flow.Point{}, fmt.Errorf("--%s %s: bad timestamp", flagName, v)
		}
		return flow.Point{Kind: flow.PointTime, V: t}, nil
	case strings.HasPrefix(v, "0x") || strings.HasPrefix(v, "0X"):
		a, err := parseHex(v)
		if err != nil {
			return flow.Point{}, fmt.Errorf("--%s %s: bad address", flagName, v)
		}
		return flow.Point{Kind: flow.PointAddr, V: a}, nil
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		return flow.Point{Kind: flow.PointIndex, V: n}, nil
	}
	a, ok := img.Lookup(v)
	if !ok {
		return flow.Point{}, fmt.Errorf("--%s %s: not an index, t:TIME, 0xADDR or a symbol of the image", flagName, v)
	}
	return flow.Point{Kind: flow.PointAddr, V: a}, nil
}

// selection is the selector stage of a command: nil when no selector was
// given.
type selection struct {
	sel flow.Selector
	s   *flow.Selection
}

// wrap returns sink behind flow.Select when a selector is given (sink
// itself, with the error, when the selector flags are wrong).
func (o *selectOpts) wrap(sink flow.Sink, img *image.Set) (flow.Sink, *selection, error) {
	sel, err := o.selector(img)
	if err != nil {
		return sink, nil, err
	}
	if !sel.Active() {
		return sink, nil, nil
	}
	s := flow.Select(sink, sel, img)
	return s, &selection{sel, s}, nil
}

// note returns the line saying what was selected ("" without selection).
func (s *selection) note() string {
	if s == nil {
		return ""
	}
	line := fmt.Sprintf("selected %d instructions", s.s.Selected())
	if s.sel.Sample > 1 {
		line = fmt.Sprintf("sampled: %d samples of one instruction in %d (each stands for %d instructions; counts are samples)",
			s.s.Selected(), s.sel.Sample, s.sel.Sample)
	}
	if u := s.s.Unknown(); u > 0 {
		line += fmt.Sprintf("; %d instructions left out because their privilege and context are unknown (no context message before them)", u)
	}
	return line
}

// report prints the selection note on stderr.
func (s *selection) report(name string) {
	if s != nil {
		fmt.Fprintf(stderr, "%s: %s\n", name, s.note())
	}
}
