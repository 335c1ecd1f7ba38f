// Package filter is the trace filtering and trigger stage that sits between
// the ingress port and a trace encoder (N-Trace or E-Trace). It follows the
// filtering chapter of the RISC-V Processor Trace 0.026 draft and the
// filter and comparator registers of the RISC-V Trace Control Interface
// (trTeFilter*, trTeComp*), plus the debug module's trace-on, trace-off and
// trace-notify trigger actions.
//
// A Config holds comparators and filters as the register fields describe
// them; Parse builds one from a small textual syntax (see Parse). New
// returns an ingress.Sink that passes the qualified blocks to the next
// sink and, when that sink implements ingress.Gated, calls TraceOff after
// the last block of each qualified stretch and Notify before a block whose
// last instruction a notify trigger or comparator selects.
//
// Qualification is decided per ingress block, as the hardware does: the
// comparators look at the block's iaddr (its first instruction), its
// context and, for traps, its tval. User sideband (impdef) values are
// matched against the context field, which is where both specifications
// say user information reaches the encoder. The package is hand-written
// from the register descriptions.
package filter

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rvtrace/rvtrace/ingress"
)

// Input selects what a comparator compares (trTeCompPInput/SInput).
type Input uint8

// Comparator inputs.
const (
	InAddr    Input = 0 // iaddr
	InContext Input = 1 // context
	InTval    Input = 2 // tval
)

// Func is a comparator function (trTeCompPFunction/SFunction).
type Func uint8

// Comparator functions, with the register's codes.
const (
	Eq     Func = 0
	Neq    Func = 1
	Lt     Func = 2
	Lte    Func = 3
	Gt     Func = 4
	Gte    Func = 5
	Never  Func = 6 // always false (primary) / mask (secondary, not supported)
	Always Func = 7
)

// MatchMode combines a comparator's primary and secondary results
// (trTeCompMatchMode).
type MatchMode uint8

// Match modes.
const (
	MatchP     MatchMode = 0 // primary result
	MatchPS    MatchMode = 1 // P && S
	MatchNotPS MatchMode = 2 // !(P && S)
	MatchLatch MatchMode = 3 // set when P, until the block after S
)

// Comparator is one trTeComp unit: a primary and a secondary comparison.
type Comparator struct {
	PInput, SInput Input
	PFunc, SFunc   Func
	PMatch, SMatch uint64
	Mode           MatchMode
	PNotify        bool // notify when the primary comparison matches (iaddr only)
	SNotify        bool

	latch bool
}

// Filter is one trTeFilter unit; its enabled conditions must all hold.
type Filter struct {
	MatchPrivilege bool
	Privileges     uint8 // trTeFilterMatchChoicePrivilege: bit n matches priv n
	MatchEcause    bool
	Ecauses        uint64 // trTeFilterMatchChoiceEcause: bit n matches cause n
	MatchInterrupt bool
	Interrupt      bool  // trTeFilterMatchValueInterrupt: 1 interrupts, 0 exceptions
	Comp           []int // comparator indexes that must match (up to 3)
	// data filters: a choice of access kinds (KindLoad...)
	MatchKind   bool
	Kinds       uint8
	MatchImpdef bool
	ImpdefValue uint64
	ImpdefMask  uint64

	active bool // inside a matching trap handler
	depth  int  // nested traps since it started
}

// Config is the filtering configuration.
type Config struct {
	Comparators []Comparator
	Filters     []Filter
	// Trigger actions of the debug module: trace-on, trace-off and
	// trace-notify when an instruction at one of these addresses retires.
	TraceOn, TraceOff, Notify []uint64
	// Data trace filters (see ParseData) and their comparators, whose
	// inputs are InAddr (the instruction's address) and InDAddr.
	DataComparators []Comparator
	DataFilters     []Filter
}

// Empty reports whether the configuration filters nothing.
func (c *Config) Empty() bool {
	return c == nil || len(c.Filters) == 0 && len(c.TraceOn) == 0 && len(c.TraceOff) == 0 && len(c.Notify) == 0 &&
		len(c.Comparators) == 0 && len(c.DataFilters) == 0
}

// Stats counts what the filter did.
type Stats struct {
	Blocks, Passed uint64
	Stops          uint64 // TraceOff calls
	Notifies       uint64
	DataPassed     uint64 // data accesses passed on
}

// Sink is the filter stage; it implements ingress.Sink and passes Gated
// calls of an upstream stage through. When the next stage takes data
// accesses (an ingress.DataSink, and for split loads an
// ingress.SplitDataSink) it is one too: it holds each access until the
// block of its instruction and passes it on when that block is traced and
// the data filters let it through (see data.go).
type Sink struct {
	cfg   Config
	next  ingress.Sink
	gated ingress.Gated
	data  ingress.DataSink
	held  []heldAccess
	// split requests, by lrid: passed on, held
	lridPassed, lridHeld []bool
	on                   bool // trigger state
	was                  bool // previous block was passed
	St                   Stats
}

// New returns the filter stage in front of next.
func New(cfg *Config, next ingress.Sink) *Sink {
	s := &Sink{next: next, on: true}
	if cfg != nil {
		s.cfg = *cfg
		s.cfg.Comparators = append([]Comparator(nil), cfg.Comparators...)
		s.cfg.Filters = append([]Filter(nil), cfg.Filters...)
		s.cfg.DataComparators = append([]Comparator(nil), cfg.DataComparators...)
		s.cfg.DataFilters = append([]Filter(nil), cfg.DataFilters...)
		if len(cfg.TraceOn) > 0 {
			s.on = false
		}
	}
	s.gated, _ = next.(ingress.Gated)
	s.data, _ = next.(ingress.DataSink)
	return s
}

func holds(b *ingress.Block, addrs []uint64) bool {
	if b.IRetire == 0 {
		return false
	}
	for _, a := range addrs {
		if a >= b.IAddr && a < b.NextAddr() {
			return true
		}
	}
	return false
}

func (c *Comparator) input(in Input, b *ingress.Block) uint64 {
	switch in {
	case InContext:
		return b.Context
	case InTval:
		return b.TVal
	}
	return b.IAddr
}

func compare(f Func, v, m uint64) bool {
	switch f {
	case Eq:
		return v == m
	case Neq:
		return v != m
	case Lt:
		return v < m
	case Lte:
		return v <= m
	case Gt:
		return v > m
	case Gte:
		return v >= m
	case Always:
		return true
	}
	return false
}

// eval returns the comparator output for b, and whether it asks for a
// notification.
func (c *Comparator) eval(b *ingress.Block) (bool, bool) {
	p := compare(c.PFunc, c.input(c.PInput, b), c.PMatch)
	s := compare(c.SFunc, c.input(c.SInput, b), c.SMatch)
	ntf := c.PNotify && p && c.PInput == InAddr || c.SNotify && s && c.SInput == InAddr
	switch c.Mode {
	case MatchPS:
		return p && s, ntf
	case MatchNotPS:
		return !(p && s), ntf
	case MatchLatch:
		if p {
			c.latch = true
		}
		out := c.latch
		if s && c.latch {
			c.latch = false // the block matching S is still included
		}
		return out, ntf
	}
	return p, ntf
}

// qualified evaluates the filters for b.
func (s *Sink) qualified(b *ingress.Block, comp []bool) bool {
	if len(s.cfg.Filters) == 0 {
		return true
	}
	q := false
	for i := range s.cfg.Filters {
		f := &s.cfg.Filters[i]
		ok := true
		if f.MatchPrivilege && f.Privileges&(1<<uint(b.Priv&7)) == 0 {
			ok = false
		}
		if f.MatchImpdef && b.Context&f.ImpdefMask != f.ImpdefValue&f.ImpdefMask {
			ok = false
		}
		for _, ci := range f.Comp {
			if ci < 0 || ci >= len(comp) || !comp[ci] {
				ok = false
			}
		}
		if f.MatchEcause || f.MatchInterrupt {
			ok = ok && f.trap(b)
		}
		q = q || ok
	}
	return q
}

// trap tracks the trap handler a filter matches: from the matching trap
// until the return from it (trap returns of nested traps are counted).
func (f *Filter) trap(b *ingress.Block) bool {
	if f.active {
		switch {
		case b.IType.IsTrap():
			f.depth++
		case b.IType == ingress.ITypeTrapReturn:
			if f.depth == 0 {
				f.active = false
				return true // the return itself is traced
			}
			f.depth--
		}
		return true
	}
	if !b.IType.IsTrap() {
		return false
	}
	intr := b.IType == ingress.ITypeInterrupt
	if f.MatchInterrupt && intr != f.Interrupt {
		return false
	}
	if f.MatchEcause {
		c := b.Cause &^ (1 << 63)
		if c >= 64 || f.Ecauses&(1<<c) == 0 {
			return false
		}
	}
	f.active, f.depth = true, 0
	return true
}

// Block filters one block.
func (s *Sink) Block(b *ingress.Block) error {
	s.St.Blocks++
	var compBuf [8]bool
	comp := compBuf[:0]
	notify := holds(b, s.cfg.Notify)
	for i := range s.cfg.Comparators {
		m, n := s.cfg.Comparators[i].eval(b)
		comp = append(comp, m)
		notify = notify || n
	}
	turnOn := holds(b, s.cfg.TraceOn)
	turnOff := holds(b, s.cfg.TraceOff)
	if turnOn {
		s.on = true
	}
	q := s.on && s.qualified(b, comp)
	if turnOff {
		s.on = false
	}
	if len(s.held) > 0 {
		if err := s.flushData(b, q); err != nil {
			return err
		}
	}
	if !q {
		return s.stop()
	}
	if notify && s.gated != nil {
		s.St.Notifies++
		if err := s.gated.Notify(); err != nil {
			return err
		}
	}
	s.St.Passed++
	s.was = true
	return s.next.Block(b)
}

// stop ends a qualified stretch.
func (s *Sink) stop() error {
	if !s.was {
		return nil
	}
	s.was = false
	s.St.Stops++
	if s.gated != nil {
		return s.gated.TraceOff()
	}
	return nil
}

// TraceOff passes an upstream stop on.
func (s *Sink) TraceOff() error { return s.stop() }

// Notify passes an upstream notification on.
func (s *Sink) Notify() error {
	if s.gated != nil {
		return s.gated.Notify()
	}
	return nil
}

// Close closes the next sink (after passing on the responses held).
func (s *Sink) Close() error {
	if len(s.held) > 0 {
		if err := s.closeData(); err != nil {
			s.next.Close()
			return err
		}
	}
	return s.next.Close()
}

// Parse adds one --filter specification to c. A specification is a list
// of conditions separated by ';' that must all hold (one trTeFilter unit);
// several specifications are alternatives. Conditions:
//
//	priv=U,S,M,D,VU,VS       privilege levels (trTeFilterMatchChoicePrivilege)
//	addr=LO-HI               iaddr in [LO, HI) (a comparator: P >= LO, S < HI, P&&S)
//	addr=A                   iaddr == A
//	from=A,to=B              from the block at A to the block at B (a latch comparator)
//	context=V or context=LO-HI  context value or range [LO, HI)
//	tval=V or tval=LO-HI     trap value
//	ecause=N,M,...           trap handlers of these exception causes (until their return)
//	interrupt / exception    handlers of any interrupt / exception (trTeFilterMatchInterrupt)
//	impdef=V/MASK            user sideband (context) & MASK == V & MASK
//	cmp=INPUT:FUNC:VALUE     a raw primary comparison: INPUT addr, context or tval;
//	                         FUNC eq, neq, lt, lte, gt, gte or always
//
// Numbers are decimal or 0x-prefixed hex.
func (c *Config) Parse(spec string) error {
	var f Filter
	for _, cond := range strings.Split(spec, ";") {
		cond = strings.TrimSpace(cond)
		if cond == "" {
			continue
		}
		k, v, _ := strings.Cut(cond, "=")
		k = strings.TrimSpace(strings.ToLower(k))
		v = strings.TrimSpace(v)
		switch k {
		case "priv", "privilege":
			if err := f.parsePrivs(v); err != nil {
				return err
			}
		case "addr", "context", "tval":
			in := map[string]Input{"addr": InAddr, "context": InContext, "tval": InTval}[k]
			cmp, err := rangeComparator(in, v)
			if err != nil {
				return fmt.Errorf("filter %s: %w", k, err)
			}
			f.Comp = append(f.Comp, c.add(cmp))
		case "from":
			from, to, ok := strings.Cut(v, ",to=")
			if !ok {
				return fmt.Errorf("filter from=A,to=B: missing to")
			}
			a, err := parseNum(from)
			if err != nil {
				return err
			}
			b, err := parseNum(to)
			if err != nil {
				return err
			}
			f.Comp = append(f.Comp, c.add(Comparator{PFunc: Eq, PMatch: a, SFunc: Eq, SMatch: b, Mode: MatchLatch}))
		case "ecause":
			f.MatchEcause = true
			for _, p := range strings.Split(v, ",") {
				n, err := parseNum(p)
				if err != nil || n >= 64 {
					return fmt.Errorf("filter ecause: bad cause %q", p)
				}
				f.Ecauses |= 1 << n
			}
		case "interrupt":
			f.MatchInterrupt, f.Interrupt = true, true
		case "exception":
			f.MatchInterrupt, f.Interrupt = true, false
		case "impdef":
			val, m, _ := strings.Cut(v, "/")
			a, err := parseNum(val)
			if err != nil {
				return err
			}
			mk := ^uint64(0)
			if m != "" {
				if mk, err = parseNum(m); err != nil {
					return err
				}
			}
			f.MatchImpdef, f.ImpdefValue, f.ImpdefMask = true, a, mk
		case "cmp":
			cmp, err := parseCmp(v, map[string]Input{"addr": InAddr, "context": InContext, "tval": InTval}, "filter")
			if err != nil {
				return err
			}
			f.Comp = append(f.Comp, c.add(cmp))
		default:
			return fmt.Errorf("unknown filter condition %q", cond)
		}
	}
	if len(f.Comp) > 3 {
		return fmt.Errorf("filter %q: more than 3 comparators", spec)
	}
	c.Filters = append(c.Filters, f)
	return nil
}

// cmpFuncs names the comparator functions of a cmp= condition.
var cmpFuncs = map[string]Func{"eq": Eq, "neq": Neq, "lt": Lt, "lte": Lte, "gt": Gt, "gte": Gte, "always": Always}

// parseCmp parses the INPUT:FUNC:VALUE of a cmp= condition of a filter
// (what names it in errors), with the inputs it may compare.
func parseCmp(v string, inputs map[string]Input, what string) (Comparator, error) {
	parts := strings.Split(v, ":")
	if len(parts) != 3 {
		return Comparator{}, fmt.Errorf("%s cmp=INPUT:FUNC:VALUE, got %q", what, v)
	}
	in, ok := inputs[parts[0]]
	fn, ok2 := cmpFuncs[parts[1]]
	n, err := parseNum(parts[2])
	if !ok || !ok2 || err != nil {
		names := make([]string, 0, len(inputs))
		for k := range inputs {
			names = append(names, k)
		}
		sort.Strings(names)
		return Comparator{}, fmt.Errorf("%s cmp: bad %q (INPUT one of %s)", what, v, strings.Join(names, ", "))
	}
	return Comparator{PInput: in, PFunc: fn, PMatch: n}, nil
}

// ParseTrigger adds a --trigger specification: comma-separated
// on=ADDR, off=ADDR and notify=ADDR actions ('|' separates several
// addresses of one action).
func (c *Config) ParseTrigger(spec string) error {
	for _, part := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("trigger %q: want on=ADDR, off=ADDR or notify=ADDR", part)
		}
		var list *[]uint64
		switch strings.ToLower(k) {
		case "on":
			list = &c.TraceOn
		case "off":
			list = &c.TraceOff
		case "notify":
			list = &c.Notify
		default:
			return fmt.Errorf("unknown trigger action %q", k)
		}
		for _, a := range strings.Split(v, "|") {
			n, err := parseNum(a)
			if err != nil {
				return err
			}
			*list = append(*list, n)
		}
	}
	return nil
}

func (c *Config) add(cmp Comparator) int {
	c.Comparators = append(c.Comparators, cmp)
	return len(c.Comparators) - 1
}

func rangeComparator(in Input, v string) (Comparator, error) {
	if lo, hi, ok := strings.Cut(v, "-"); ok {
		a, err := parseNum(lo)
		if err != nil {
			return Comparator{}, err
		}
		b, err := parseNum(hi)
		if err != nil {
			return Comparator{}, err
		}
		return Comparator{PInput: in, SInput: in, PFunc: Gte, PMatch: a, SFunc: Lt, SMatch: b, Mode: MatchPS}, nil
	}
	a, err := parseNum(v)
	if err != nil {
		return Comparator{}, err
	}
	return Comparator{PInput: in, PFunc: Eq, PMatch: a}, nil
}

func parseNum(s string) (uint64, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 0, 64)
	if err != nil {
		return 0, fmt.Errorf("bad number %q", s)
	}
	return n, nil
}

// parsePrivs makes f match the privileges of the comma-separated list v.
func (f *Filter) parsePrivs(v string) error {
	f.MatchPrivilege = true
	for _, p := range strings.Split(v, ",") {
		n, err := parsePriv(p)
		if err != nil {
			return err
		}
		f.Privileges |= 1 << n
	}
	return nil
}

func parsePriv(s string) (uint, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "U", "0":
		return 0, nil
	case "S", "HS", "1":
		return 1, nil
	case "M", "3":
		return 3, nil
	case "D", "4":
		return 4, nil
	case "VU", "5":
		return 5, nil
	case "VS", "6":
		return 6, nil
	}
	return 0, fmt.Errorf("unknown privilege %q", s)
}
