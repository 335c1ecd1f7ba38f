package filter

import (
	"fmt"
	"strings"

	"github.com/rvtrace/rvtrace/ingress"
)

// Data trace filtering. The filtering chapter of E-Trace 2.0 gives
// comparators a daddress input and filters a multiple choice selection of
// dtype besides priv; a data filter here is a Filter of
// Config.DataFilters whose conditions are a privilege choice
// (MatchPrivilege), a choice of access kinds (MatchKind: load, store,
// atomic) and comparators of Config.DataComparators on the instruction
// address (InAddr) or the data access address (InDAddr). An access is
// traced when its instruction is (the instruction filters qualify its
// block) and, if there are data filters, one of them holds for it.

// InDAddr is the comparator input daddress (data filters only).
const InDAddr Input = 3

// Kinds of data access a data filter selects (Filter.Kinds bits).
const (
	KindLoad   = 1 << iota // dtype 0: loads (lr included)
	KindStore              // dtype 1 and 15: stores, store-conditionals (failed too)
	KindAtomic             // dtype 8..14: atomic memory operations
)

// KindOf returns the kind bit of a dtype (0 for CSR accesses).
func KindOf(t ingress.DType) uint8 {
	switch {
	case t == ingress.DTypeLoad:
		return KindLoad
	case t == ingress.DTypeStore || t == ingress.DTypeSCFail:
		return KindStore
	case t.IsAtomic():
		return KindAtomic
	}
	return 0
}

// HasData reports whether c has data filters.
func (c *Config) HasData() bool { return c != nil && len(c.DataFilters) > 0 }

// DataNeedsAddr reports whether a data filter compares the data access
// address: a decoder then cannot tell from an instruction whether its
// access was traced.
func (c *Config) DataNeedsAddr() bool {
	for i := range c.DataComparators {
		k := &c.DataComparators[i]
		if k.PInput == InDAddr && k.PFunc != Always && k.PFunc != Never || k.Mode != MatchP && k.SInput == InDAddr {
			return true
		}
	}
	return false
}

// DataQualified reports whether the data filters of c let through an
// access of kind (KindLoad...) at daddr, made by the instruction at iaddr
// running at privilege priv. With no data filter every access passes.
func (c *Config) DataQualified(kind uint8, iaddr, daddr uint64, priv ingress.Priv) bool {
	if !c.HasData() {
		return true
	}
	for i := range c.DataFilters {
		f := &c.DataFilters[i]
		if f.MatchPrivilege && f.Privileges&(1<<uint(priv&7)) == 0 {
			continue
		}
		if f.MatchKind && f.Kinds&kind == 0 {
			continue
		}
		ok := true
		for _, ci := range f.Comp {
			if !c.DataComparators[ci].evalData(iaddr, daddr) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (k *Comparator) evalData(iaddr, daddr uint64) bool {
	in := func(i Input) uint64 {
		if i == InDAddr {
			return daddr
		}
		return iaddr
	}
	p := compare(k.PFunc, in(k.PInput), k.PMatch)
	s := compare(k.SFunc, in(k.SInput), k.SMatch)
	switch k.Mode {
	case MatchPS:
		return p && s
	case MatchNotPS:
		return !(p && s)
	}
	return p
}

// ParseData adds one --data-filter specification to c: conditions
// separated by ';' that must all hold (one data filter); several
// specifications are alternatives. Conditions:
//
//	kind=load,store,atomic   access kinds (the filter's dtype choice)
//	priv=U,S,M,...           privilege of the instruction
//	daddr=LO-HI or daddr=A   data access address in [LO, HI), or equal to A
//	addr=LO-HI or addr=A     address of the instruction
//	cmp=INPUT:FUNC:VALUE     a raw comparison; INPUT daddr or addr
func (c *Config) ParseData(spec string) error {
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
				return fmt.Errorf("data filter: %w", err)
			}
		case "kind":
			f.MatchKind = true
			for _, p := range strings.Split(v, ",") {
				switch strings.TrimSpace(strings.ToLower(p)) {
				case "load":
					f.Kinds |= KindLoad
				case "store":
					f.Kinds |= KindStore
				case "atomic":
					f.Kinds |= KindAtomic
				default:
					return fmt.Errorf("data filter kind: %q is not load, store or atomic", p)
				}
			}
		case "daddr", "addr":
			in := InAddr
			if k == "daddr" {
				in = InDAddr
			}
			cmp, err := rangeComparator(in, v)
			if err != nil {
				return fmt.Errorf("data filter %s: %w", k, err)
			}
			f.Comp = append(f.Comp, c.addData(cmp))
		case "cmp":
			cmp, err := parseCmp(v, map[string]Input{"addr": InAddr, "daddr": InDAddr}, "data filter")
			if err != nil {
				return err
			}
			f.Comp = append(f.Comp, c.addData(cmp))
		default:
			return fmt.Errorf("unknown data filter condition %q (want kind, priv, daddr, addr or cmp)", cond)
		}
	}
	if len(f.Comp) > 3 {
		return fmt.Errorf("data filter %q: more than 3 comparators", spec)
	}
	c.DataFilters = append(c.DataFilters, f)
	return nil
}

func (c *Config) addData(cmp Comparator) int {
	c.DataComparators = append(c.DataComparators, cmp)
	return len(c.DataComparators) - 1
}

// heldAccess is an access (or a split load response) the filter holds
// until the block of its instruction.
type heldAccess struct {
	a    ingress.Access
	r    ingress.LoadResponse
	resp bool
}

// Access holds a data access until the block that retires its
// instruction: whether it is traced depends on that block.
func (s *Sink) Access(a *ingress.Access) error {
	if s.data == nil {
		return fmt.Errorf("filter: data access, but the next stage takes none")
	}
	if len(s.held) >= 1<<16 {
		return fmt.Errorf("filter: %d data accesses without an ingress block", len(s.held))
	}
	s.held = append(s.held, heldAccess{a: *a})
	if a.Split {
		s.holdLRID(a.LRID)
	}
	return nil
}

// Response passes on the response of a split request that was passed
// on, in order with the accesses held, and drops the others.
func (s *Sink) Response(r *ingress.LoadResponse) error {
	sd, ok := s.data.(ingress.SplitDataSink)
	if !ok {
		return fmt.Errorf("filter: load response, but the next stage takes none")
	}
	if int(r.LID) < len(s.lridHeld) && s.lridHeld[r.LID] {
		s.held = append(s.held, heldAccess{r: *r, resp: true})
		return nil
	}
	if int(r.LID) < len(s.lridPassed) && s.lridPassed[r.LID] {
		s.lridPassed[r.LID] = false
		return sd.Response(r)
	}
	return nil // its request was not traced
}

// flushData passes on (pass) or drops the accesses held for block b.
func (s *Sink) flushData(b *ingress.Block, pass bool) error {
	for i := range s.held {
		h := &s.held[i]
		if h.resp {
			if s.lridPassed[h.r.LID] {
				s.lridPassed[h.r.LID] = false
				if err := s.data.(ingress.SplitDataSink).Response(&h.r); err != nil {
					return err
				}
			}
			continue
		}
		a := &h.a
		ok := pass && s.cfg.DataQualified(KindOf(a.DType), a.IAddr, a.DAddr, b.Priv)
		if ok {
			s.St.DataPassed++
			if err := s.data.Access(a); err != nil {
				return err
			}
		}
		if a.Split {
			s.setLRID(a.LRID, ok)
			s.lridHeld[a.LRID] = false
		}
	}
	s.held = s.held[:0]
	return nil
}

// setLRID notes whether the split request with lrid id was passed on.
func (s *Sink) setLRID(id uint32, passed bool) {
	for int(id) >= len(s.lridPassed) {
		s.lridPassed = append(s.lridPassed, false)
		s.lridHeld = append(s.lridHeld, false)
	}
	s.lridPassed[id] = passed
}

// holdLRID notes a split request held.
func (s *Sink) holdLRID(id uint32) {
	s.setLRID(id, false)
	s.lridHeld[id] = true
}

// closeData passes on the responses held whose requests were passed on;
// an access still held belongs to no block: an error.
func (s *Sink) closeData() error {
	for i := range s.held {
		h := &s.held[i]
		if !h.resp {
			return fmt.Errorf("filter: %d data accesses after the last ingress block (the first of the instruction at %#x)", len(s.held)-i, h.a.IAddr)
		}
		if s.lridPassed[h.r.LID] {
			s.lridPassed[h.r.LID] = false
			if err := s.data.(ingress.SplitDataSink).Response(&h.r); err != nil {
				return err
			}
		}
	}
	s.held = s.held[:0]
	return nil
}
