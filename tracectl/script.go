package tracectl

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rvtrace/rvtrace/ingress"
)

// A Script is a debug probe's program for the trace system: register
// writes, reads, checks and waits at points of the execution of hart 0.
// It is line oriented:
//
//	# a comment, to the end of the line
//	at POINT                   the following lines run at POINT
//	[at POINT] write REG VALUE
//	[at POINT] read REG        prints the value
//	[at POINT] expect REG VALUE [mask MASK]
//	[at POINT] wait REG MASK VALUE
//
// A line starting with "at POINT" runs there, and so do the lines after a
// line holding "at POINT" alone; lines before any "at" run before the
// first instruction. The points are reached in the order of the file: the
// commands at a point run the first time the hart reaches it after the
// commands of the previous point ran. POINT is
//
//	N              after N instructions (decimal or 0x hex): before instruction N, counting from 0
//	sym:NAME[+OFF] before the first instruction at the symbol's address (plus OFF)
//	pc:ADDR        before the first instruction at ADDR
//	end            after the run, before the trace is captured
//
// REG is a register of the specification's register map, by name
// (case-insensitive), prefixed with its component when the name does not
// tell it: "enc<N>." (the encoder of hart N; trTe* registers default to
// enc0), "funnel." (trFunnel*), "ram." (trRam*); trTs* registers are in
// every component and need the prefix. A number is a physical address.
// VALUE is a number or a comma-separated list of FIELD=N (the named
// fields of REG, the others 0). expect compares (the value read & MASK)
// with VALUE & MASK (MASK: all ones by default); wait reads until they
// are equal, at most 1000 times. A failed expect or wait is an error of
// the run; a point never reached is reported at the end.
//
// Errors name the file and line. The probe acts between two ingress
// blocks, so it needs one block per instruction (sim.PerInstruction); it
// is ordered exactly with the trace and with a guest's own stores to the
// trace registers (the simulator sends the ingress port through a store
// before it acts), but a guest's load of a trace register may run before
// the commands of a point at that very instruction.
type Script struct {
	name   string
	groups []scriptGroup
}

type pointKind uint8

const (
	pointCount pointKind = iota
	pointPC
	pointEnd
)

// scriptGroup is the commands run at one point.
type scriptGroup struct {
	line int    // of the "at"
	text string // the point as written
	kind pointKind
	n    uint64 // instruction count or address
	cmds []scriptCmd
}

type scriptCmd struct {
	line int
	op   string // write, read, expect, wait
	reg  regRef
	val  uint32
	mask uint32
}

// regRef is a register as a script names it.
type regRef struct {
	text string
	comp int // -1 funnel, -2 RAM sink, -3 absolute address, else the hart of an encoder
	off  uint32
	addr uint64
	reg  *Reg // nil for an address
}

// ScriptError is an error in a script, at a line.
type ScriptError struct {
	File string
	Line int
	Msg  string
}

func (e *ScriptError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// ParseScript reads a script. lookup finds a symbol's address (for
// sym:NAME points); it may be nil.
func ParseScript(name string, r io.Reader, lookup func(string) (uint64, bool)) (*Script, error) {
	s := &Script{name: name}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	cur := -1
	for line := 1; sc.Scan(); line++ {
		fail := func(format string, args ...any) error {
			return &ScriptError{File: name, Line: line, Msg: fmt.Sprintf(format, args...)}
		}
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		w := strings.Fields(text)
		if len(w) == 0 {
			continue
		}
		if w[0] == "at" {
			if len(w) < 2 {
				return nil, fail("at: missing the point (N, sym:NAME, pc:ADDR or end)")
			}
			g, err := parsePoint(w[1], lookup)
			if err != nil {
				return nil, fail("%v", err)
			}
			g.line = line
			s.groups = append(s.groups, g)
			cur = len(s.groups) - 1
			w = w[2:]
			if len(w) == 0 {
				continue
			}
		} else if cur < 0 {
			s.groups = append(s.groups, scriptGroup{line: line, text: "0", kind: pointCount})
			cur = 0
		}
		c, err := parseCmd(w)
		if err != nil {
			return nil, fail("%v", err)
		}
		c.line = line
		s.groups[cur].cmds = append(s.groups[cur].cmds, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for i, g := range s.groups {
		if g.kind == pointEnd && i+1 < len(s.groups) && s.groups[i+1].kind != pointEnd {
			return nil, &ScriptError{File: name, Line: s.groups[i+1].line, Msg: "only \"at end\" can follow \"at end\""}
		}
	}
	return s, nil
}

// parseNum parses a decimal or 0x-prefixed number of up to 64 bits.
func parseNum(s string) (uint64, error) {
	v, err := strconv.ParseUint(strings.ReplaceAll(s, "_", ""), 0, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return v, nil
}

func parsePoint(p string, lookup func(string) (uint64, bool)) (scriptGroup, error) {
	g := scriptGroup{text: p}
	switch {
	case p == "end":
		g.kind = pointEnd
	case strings.HasPrefix(p, "sym:"):
		name, off := p[4:], uint64(0)
		if i := strings.IndexByte(name, '+'); i >= 0 {
			o, err := parseNum(name[i+1:])
			if err != nil {
				return g, err
			}
			name, off = name[:i], o
		}
		if lookup == nil {
			return g, fmt.Errorf("%s: no symbol table", p)
		}
		a, ok := lookup(name)
		if !ok {
			return g, fmt.Errorf("%s: no symbol %q in the program", p, name)
		}
		g.kind, g.n = pointPC, a+off
	case strings.HasPrefix(p, "pc:"):
		a, err := parseNum(p[3:])
		if err != nil {
			return g, err
		}
		g.kind, g.n = pointPC, a
	default:
		n, err := parseNum(p)
		if err != nil {
			return g, fmt.Errorf("point %q: want N, sym:NAME, pc:ADDR or end", p)
		}
		g.kind, g.n = pointCount, n
	}
	return g, nil
}

func parseCmd(w []string) (scriptCmd, error) {
	c := scriptCmd{op: w[0], mask: ^uint32(0)}
	want := map[string]int{"write": 3, "read": 2, "expect": 3, "wait": 4}[c.op]
	if want == 0 {
		return c, fmt.Errorf("unknown command %q (write, read, expect, wait)", c.op)
	}
	if c.op == "expect" && len(w) == 5 && w[3] == "mask" {
		want = 5
	}
	if len(w) != want {
		use := map[string]string{"write": "write REG VALUE", "read": "read REG", "expect": "expect REG VALUE [mask MASK]", "wait": "wait REG MASK VALUE"}[c.op]
		return c, fmt.Errorf("%s: want %q", c.op, use)
	}
	var err error
	if c.reg, err = parseReg(w[1]); err != nil {
		return c, err
	}
	switch c.op {
	case "write", "expect":
		if c.val, err = c.reg.value(w[2]); err != nil {
			return c, err
		}
		if want == 5 {
			if c.mask, err = c.reg.value(w[4]); err != nil {
				return c, err
			}
		}
	case "wait":
		if c.mask, err = c.reg.value(w[2]); err != nil {
			return c, err
		}
		if c.val, err = c.reg.value(w[3]); err != nil {
			return c, err
		}
	}
	return c, nil
}

// parseReg resolves a register name (or address).
func parseReg(s string) (regRef, error) {
	r := regRef{text: s}
	if s[0] >= '0' && s[0] <= '9' {
		a, err := parseNum(s)
		if err != nil || a%4 != 0 {
			return r, fmt.Errorf("register %q: want a name or a 4-byte aligned address", s)
		}
		r.comp, r.addr = -3, a
		return r, nil
	}
	comp, name := "", s
	if i := strings.IndexByte(s, '.'); i >= 0 {
		comp, name = strings.ToLower(s[:i]), s[i+1:]
	}
	ln := strings.ToLower(name)
	if comp == "" {
		switch {
		case strings.HasPrefix(ln, "trte"):
			comp = "enc0"
		case strings.HasPrefix(ln, "trfunnel"):
			comp = "funnel"
		case strings.HasPrefix(ln, "trram"):
			comp = "ram"
		default:
			return r, fmt.Errorf("register %q: in which component? (enc<N>.%s, funnel.%s or ram.%s)", s, name, name, name)
		}
	}
	var table []Reg
	switch {
	case comp == "funnel":
		r.comp, table = -1, funnelRegs
	case comp == "ram":
		r.comp, table = -2, ramRegs
	case strings.HasPrefix(comp, "enc"):
		h, err := strconv.Atoi(comp[3:])
		if err != nil || h < 0 || h >= MaxHarts {
			return r, fmt.Errorf("component %q: want enc0..enc%d, funnel or ram", comp, MaxHarts-1)
		}
		r.comp, table = h, encoderRegs
	default:
		return r, fmt.Errorf("component %q: want enc<N>, funnel or ram", comp)
	}
	for i := range table {
		if strings.EqualFold(table[i].Name, name) {
			r.reg, r.off = &table[i], table[i].Offset
			return r, nil
		}
	}
	return r, fmt.Errorf("no register %q in the %s", name, map[bool]string{true: "trace encoder", false: map[int]string{-1: "trace funnel", -2: "trace RAM sink"}[r.comp]}[r.comp >= 0])
}

// value parses a number or FIELD=N,... for the register.
func (r regRef) value(s string) (uint32, error) {
	if !strings.Contains(s, "=") {
		v, err := parseNum(s)
		if err != nil || v > 0xFFFFFFFF {
			return 0, fmt.Errorf("value %q: want a 32-bit number or a list FIELD=N,FIELD=N", s)
		}
		return uint32(v), nil
	}
	if r.reg == nil {
		return 0, fmt.Errorf("value %q: fields need a register name, not an address", s)
	}
	var v uint32
	for _, kv := range strings.Split(s, ",") {
		k, x, _ := strings.Cut(kv, "=")
		var f *Field
		for i := range r.reg.Fields {
			if strings.EqualFold(r.reg.Fields[i].Name, k) {
				f = &r.reg.Fields[i]
			}
		}
		if f == nil {
			var names []string
			for _, f := range r.reg.Fields {
				names = append(names, f.Name)
			}
			return 0, fmt.Errorf("%s has no field %q (%s)", r.reg.Name, k, strings.Join(names, ", "))
		}
		n, err := parseNum(x)
		if err != nil {
			return 0, err
		}
		if n > uint64(f.mask()>>f.Lo) {
			return 0, fmt.Errorf("%s=%d does not fit in %d bits", f.Name, n, f.Hi-f.Lo+1)
		}
		v = f.set(v, uint32(n))
	}
	return v, nil
}

// Probe runs a script as a debug probe attached to a trace system: it
// sits on hart 0's ingress port in front of the encoder and acts between
// two blocks, so that a register write at a point takes effect exactly
// between the instructions before it and the instructions from it.
type Probe struct {
	s     *Script
	sys   *System
	next  ingress.Sink
	out   io.Writer
	count uint64 // instructions passed on
	at    int    // the next group to run
	err   error  // the first failed check
}

// Probe returns the probe running s on sys, passing hart 0's blocks on to
// next and printing reads to out.
func (s *Script) Probe(sys *System, next ingress.Sink, out io.Writer) *Probe {
	return &Probe{s: s, sys: sys, next: next, out: out}
}

// errNotPerInstruction is returned for a block of several instructions.
var errNotPerInstruction = errors.New("the trace script's probe needs one ingress block per instruction")

// Block runs the commands whose point is reached, then passes b on.
func (p *Probe) Block(b *ingress.Block) error {
	if b.IRetire > 2 {
		return errNotPerInstruction
	}
	for p.at < len(p.s.groups) {
		g := &p.s.groups[p.at]
		if !(g.kind == pointCount && p.count >= g.n || g.kind == pointPC && b.IRetire > 0 && b.IAddr == g.n) {
			break
		}
		if err := p.run(g); err != nil {
			return err
		}
		p.at++
	}
	if b.IRetire > 0 {
		p.count++
	}
	return p.next.Block(b)
}

// Close closes the encoder behind the probe.
func (p *Probe) Close() error { return p.next.Close() }

// TraceOff passes trace-off on to the encoder behind the probe.
func (p *Probe) TraceOff() error {
	if g, ok := p.next.(ingress.Gated); ok {
		return g.TraceOff()
	}
	return nil
}

// Notify passes a notification on to the encoder behind the probe.
func (p *Probe) Notify() error {
	if g, ok := p.next.(ingress.Gated); ok {
		return g.Notify()
	}
	return nil
}

// End runs the commands "at end" and reports the points never reached
// and the first failed check.
func (p *Probe) End() error {
	for p.at < len(p.s.groups) {
		g := &p.s.groups[p.at]
		if g.kind != pointEnd {
			fmt.Fprintf(p.out, "rvtrace run: %s:%d: warning: at %s never reached (%d instructions run); %d points not run\n",
				p.s.name, g.line, g.text, p.count, len(p.s.groups)-p.at)
			break
		}
		if err := p.run(g); err != nil {
			return err
		}
		p.at++
	}
	return p.err
}

// addr is the physical address of a register.
func (p *Probe) addr(r regRef) (uint64, error) {
	switch {
	case r.comp == -3:
		return r.addr, nil
	case r.comp == -1:
		return p.sys.FunnelAddr() + uint64(r.off), nil
	case r.comp == -2:
		return p.sys.SinkAddr() + uint64(r.off), nil
	case r.comp >= len(p.sys.Encoders):
		return 0, fmt.Errorf("%s: no hart %d", r.text, r.comp)
	}
	return p.sys.EncoderAddr(r.comp) + uint64(r.off), nil
}

// failed records a failed check: the first is End's error, the others
// are printed.
func (p *Probe) failed(e error) {
	if p.err == nil {
		p.err = e
		return
	}
	fmt.Fprintf(p.out, "rvtrace run: %v\n", e)
}

// run runs the commands of a group.
func (p *Probe) run(g *scriptGroup) error {
	for i := range g.cmds {
		c := &g.cmds[i]
		fail := func(format string, args ...any) error {
			return &ScriptError{File: p.s.name, Line: c.line, Msg: fmt.Sprintf(format, args...)}
		}
		a, err := p.addr(c.reg)
		if err != nil {
			return fail("%v", err)
		}
		read := func() (uint32, error) {
			v, ok := p.sys.Read32(a)
			if !ok {
				return 0, fail("no trace register at %#x", a)
			}
			return v, nil
		}
		switch c.op {
		case "write":
			ok, err := p.sys.Write32(a, c.val)
			if !ok {
				return fail("no trace register at %#x", a)
			}
			if err != nil {
				return fail("write %s %#x: %v", c.reg.text, c.val, err)
			}
		case "read":
			v, err := read()
			if err != nil {
				return err
			}
			fmt.Fprintf(p.out, "rvtrace run: %s:%d: at %s (instruction %d): %s (%#x) = %#08x\n", p.s.name, c.line, g.text, p.count, c.reg.text, a, v)
		case "expect":
			v, err := read()
			if err != nil {
				return err
			}
			if v&c.mask != c.val&c.mask {
				p.failed(fail("at %s (instruction %d): expect %s & %#x == %#x: read %#08x", g.text, p.count, c.reg.text, c.mask, c.val&c.mask, v))
			}
		case "wait":
			done := false
			var v uint32
			for n := 0; n < pollLimit && !done; n++ {
				if v, err = read(); err != nil {
					return err
				}
				done = v&c.mask == c.val&c.mask
			}
			if !done {
				p.failed(fail("at %s (instruction %d): wait %s & %#x == %#x: still %#08x after %d reads", g.text, p.count, c.reg.text, c.mask, c.val&c.mask, v, pollLimit))
			}
		}
	}
	return nil
}
