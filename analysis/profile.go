package analysis

import (
	"fmt"
	"math/bits"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// Options configure a Profile.
type Options struct {
	// OnSpan, when set, is called for every function activation when it
	// ends (returns, is replaced by a tail call or unwound), in the order
	// activations end. Chrome trace output is built on it.
	OnSpan func(s *Span)
	// OnEnter, when set, is called for every function activation when it
	// begins, with the fields known then (End is Begin, Insts 0). Every
	// activation entered ends (OnSpan) before the one entered before it
	// on the same source: the calls of one source form a stack.
	OnEnter func(s *Span)
	// MaxDepth bounds the shadow call stack of each source; a deeper
	// stack (calls that never return, such as context switches) is
	// restarted. 0 means 8192.
	MaxDepth int
	// MaxNodes bounds the call tree; calls past it are counted in their
	// caller. 0 means 4 million.
	MaxNodes int
	// FixedInstSize, when not 0, is the size in bytes of every
	// instruction (4 for A64 and A32 code read from an Arm Tarmac trace);
	// otherwise sizes come from decoding the image as RISC-V.
	FixedInstSize int
}

// Span is one activation of a function: from Begin to End counted in
// instructions executed by its source, and from BeginTime to EndTime in
// the flow's time units when Timed (the source had a timestamp before the
// activation began).
type Span struct {
	Func       *Function
	Src        uint32
	Depth      int // 0 for the outermost frame
	Begin, End uint64
	// BeginTime and EndTime are valid when Timed.
	BeginTime, EndTime uint64
	Timed              bool
	// Insts is the number of instructions the activation executed,
	// including its callees.
	Insts uint64
	// Priv is the privilege level at the activation's entry, when
	// PrivKnown (the flow reported it with a context event before).
	Priv      ingress.Priv
	PrivKnown bool
	// Lo and Hi are, for the [unknown] stand-in (Func.Name "[unknown]"),
	// the lowest and highest address the activation executed (at
	// OnEnter both are its first address); 0 for other functions.
	Lo, Hi uint64
}

// Label is the span's name as the timelines show it: the function's
// name, and for the [unknown] stand-in its addresses ("[unknown]
// 0x1000-0x10fe", "[unknown] 0x1000" for one address).
func (s *Span) Label() string {
	if s.Func == nil || s.Func.Name != unknownName || s.Func.End != 0 {
		if s.Func == nil {
			return ""
		}
		return s.Func.Name
	}
	if s.Lo == s.Hi {
		return fmt.Sprintf("%s %#x", unknownName, s.Lo)
	}
	return fmt.Sprintf("%s %#x-%#x", unknownName, s.Lo, s.Hi)
}

// Node is a node of the call tree: one function reached by one path of
// calls from the root.
type Node struct {
	Func     *Function // nil for the root
	Parent   *Node
	Children []*Node
	// Calls counts the entries into the node: calls, tail calls (a jump
	// to another function's entry that replaces the caller's frame) and
	// trap entries.
	Calls uint64
	// Self is the number of instructions executed in the node's function
	// itself; SelfCycles the time attributed to them.
	Self       uint64
	SelfCycles uint64
	// Inclusive and InclCycles add those of all descendants (set by
	// Profile.Close).
	Inclusive  uint64
	InclCycles uint64
	// Trap marks a node entered by an exception or interrupt.
	Trap bool
	kids map[*Function]*Node
	id   uint32 // order of creation; the root is 0
	// site is the address of the call instruction in the parent's
	// function when siteState is siteOne: every entry came from there.
	site      uint64
	siteState uint8
}

// The states of Node.site.
const (
	siteNone  = iota // no entry yet
	siteOne          // every entry came from the call at site
	siteMixed        // entries from several sites, or without a call
)

// noteSite records an entry into n from the call at site (ok false: an
// entry without a call instruction, such as a trap).
func (n *Node) noteSite(site uint64, ok bool) {
	switch {
	case !ok:
		n.siteState = siteMixed
	case n.siteState == siteNone:
		n.site, n.siteState = site, siteOne
	case n.siteState == siteOne && n.site != site:
		n.siteState = siteMixed
	}
}

// Profile is a flow.Sink that builds every analysis of the flow in one
// pass: a flat profile per function and per source line (instructions,
// and cycles when the flow has timestamps), the call tree with inclusive
// and exclusive counts, coverage and the trace cost per function. The
// writers of this package (folded stacks, pprof, lcov, text, HTML) render
// a closed Profile.
//
// Memory is bounded by the program, not the trace: the Profile keeps one
// counter per distinct instruction range and one node per distinct call
// path. Handling a range does not allocate once the tables are warm.
//
// Calls and returns come from the flow's range end types (and from the
// program image when a 3-bit ingress port reported them as plain jumps).
// A return pops to the frame whose call site it returns to; when no frame
// matches (longjmp, exceptions unwinding), to the innermost frame whose
// function contains the target. A jump to another function's entry is a
// tail call: it replaces the current frame. A trap pushes a frame for the
// handler that its trap return pops. A gap in the trace restarts the
// stack.
type Profile struct {
	img  *image.Set
	opt  Options
	syms *symtab

	ranges rangeTable
	root   *Node
	nodes  int
	srcs   []*srcState

	insts  uint64
	cycles uint64
	timed  bool
	events [16]uint64
	traps  uint64
	gaps   uint64
	// privInsts counts the instructions per privilege level (ingress.Priv)
	privInsts [8]uint64
	// suspect sums the gaps' Suspect counts; gapList describes the first
	// MaxGapList gaps.
	suspect uint64
	gapList []string

	// trace cost
	traceSize   int64
	offsets     bool
	curOff      int64
	offFns      []fnCount
	unattrBytes uint64
	fnBytes     []uint64 // by function ID
	msgs        map[string]*MsgStat
	msgOrder    []string

	closed bool
	res    *results
}

// fnCount is a number of instructions of a function.
type fnCount struct {
	fn *Function
	n  uint64
}

// srcState is the shadow call stack and clock of one trace source.
type srcState struct {
	src    uint32
	frames []frame
	at     uint64 // the address a new frame is entered at
	// what the last range's end asks of the next range
	pend     pendKind
	callSite uint64
	trapEPC  uint64
	trapIntr bool
	// privilege level, from the last context event
	priv      ingress.Priv
	privKnown bool
	// clock
	insts     uint64
	time      uint64
	timed     bool // has had a time event
	pendCyc   []cycEntry
	compactAt int
}

type pendKind uint8

const (
	pendNone pendKind = iota
	pendCall
	pendReturn
	pendJump
	pendTrap
	pendTrapReturn
	pendResync
)

// frame is one activation on a shadow stack.
type frame struct {
	node    *Node
	fn      *Function
	site    uint64 // address of the call instruction
	hasSite bool
	trap    bool
	timed   bool   // the source had a time at entry
	begin   uint64 // time at entry
	insts0  uint64 // instructions executed before entry
	priv    ingress.Priv
	privOK  bool
	lo, hi  uint64 // the [unknown] stand-in: addresses executed
}

// cycEntry is a count of instructions waiting for the next timestamp to
// be given their share of cycles.
type cycEntry struct {
	slot int32
	node *Node
	n    uint64
}

// New returns an empty Profile for a flow over img (which may be nil:
// then every address is in the [unknown] function and there are no
// source lines).
func New(img *image.Set, opt Options) *Profile {
	if opt.MaxDepth <= 0 {
		opt.MaxDepth = 8192
	}
	if opt.MaxNodes <= 0 {
		opt.MaxNodes = 4 << 20
	}
	p := &Profile{img: img, opt: opt, syms: newSymtab(img), root: &Node{}, curOff: -1}
	p.ranges.init()
	p.fnBytes = make([]uint64, len(p.syms.all))
	return p
}

// PrivInstructions returns the instructions counted per privilege level,
// indexed by ingress.Priv: where the time went, kernel (S) or user (U).
func (p *Profile) PrivInstructions() [8]uint64 { return p.privInsts }

// Image returns the program image the profile was made for (may be nil).
func (p *Profile) Image() *image.Set { return p.img }

// Funcs returns every function of the image, indexed by Function.ID;
// Funcs()[0] is the [unknown] stand-in.
func (p *Profile) Funcs() []*Function { return p.syms.all }

// Lookup returns the function containing addr.
func (p *Profile) Lookup(addr uint64) *Function { return p.syms.lookup(addr) }

// Root returns the root of the call tree: a node without function whose
// children are the outermost frames seen.
func (p *Profile) Root() *Node { return p.root }

// Instructions returns the number of instructions in the flow.
func (p *Profile) Instructions() uint64 { return p.insts }

// Cycles returns the time covered by the flow's timestamps, attributed to
// instructions (0 without timestamps).
func (p *Profile) Cycles() uint64 { return p.cycles }

// HasCycles reports whether the flow had timestamps that advanced.
func (p *Profile) HasCycles() bool { return p.cycles > 0 }

// Traps returns the number of trap events; Gaps the number of gaps.
func (p *Profile) Traps() uint64 { return p.traps }

// Gaps returns the number of gap events (trace lost).
func (p *Profile) Gaps() uint64 { return p.gaps }

// MaxGapList bounds the gaps a Profile describes in GapList.
const MaxGapList = 100

// Suspect returns the number of instructions the gaps called suspect
// (the sum of their flow.Event.Suspect): they are counted in the profile
// but may be wrong.
func (p *Profile) Suspect() uint64 { return p.suspect }

// GapList describes the first MaxGapList gaps, one line each
// (flow.DescribeGap).
func (p *Profile) GapList() []string { return p.gapList }

// EventCount returns the number of events of kind k.
func (p *Profile) EventCount(k flow.Kind) uint64 {
	if int(k) < len(p.events) {
		return p.events[k]
	}
	return 0
}

func (p *Profile) state(src uint32) *srcState {
	if int(src) < len(p.srcs) && p.srcs[src] != nil {
		return p.srcs[src]
	}
	if src > 1<<16 {
		src = 1 << 16 // bound the table; such sources share a stack
	}
	for len(p.srcs) <= int(src) {
		p.srcs = append(p.srcs, nil)
	}
	if p.srcs[src] == nil {
		p.srcs[src] = &srcState{src: src, compactAt: 1 << 16}
	}
	return p.srcs[src]
}

// Event adds one flow event to the profile.
func (p *Profile) Event(e *flow.Event) error {
	if int(e.Kind) < len(p.events) {
		p.events[e.Kind]++
	}
	switch e.Kind {
	case flow.KindRange:
		if e.Offset >= 0 {
			p.offset(e.Offset)
		}
		p.privInsts[e.Priv&7] += e.N
		p.rangeEvent(e)
	case flow.KindTime:
		p.timeEvent(p.state(e.Src), e.Time)
	case flow.KindTrap:
		p.traps++
		st := p.state(e.Src)
		st.pend, st.trapEPC, st.trapIntr = pendTrap, e.Addr, e.Interrupt
	case flow.KindGap:
		p.gaps++
		p.suspect += e.Suspect
		if len(p.gapList) < MaxGapList {
			p.gapList = append(p.gapList, flow.DescribeGap(e))
		}
		st := p.state(e.Src)
		p.unwind(st, 0)
		st.pend = pendNone
	case flow.KindContext:
		st := p.state(e.Src)
		st.priv, st.privKnown = e.Priv, true
	case flow.KindStop:
		st := p.state(e.Src)
		if st.pend == pendNone {
			st.pend = pendResync
		}
	}
	return nil
}

// rangeEvent handles a range: the hot path.
func (p *Profile) rangeEvent(e *flow.Event) {
	n := e.N
	if n == 0 {
		return
	}
	st := p.state(e.Src)
	p.insts += n

	// Where does the range start, relative to the stack?
	var top *frame
	if len(st.frames) > 0 {
		top = &st.frames[len(st.frames)-1]
	}
	if st.pend != pendNone || top == nil || !top.fn.Contains(e.Start) || top.fn == p.syms.unknown {
		p.enter(st, e.Start)
		top = &st.frames[len(st.frames)-1]
	}
	fn := top.fn
	if fn != p.syms.unknown && e.Last >= fn.End {
		// The range runs past the end of the function (code falling
		// through into the next one): split it.
		p.straddle(st, e.Start, e.Last, n)
	} else {
		if fn == p.syms.unknown {
			top.lo, top.hi = min(top.lo, e.Start), max(top.hi, e.Last)
		}
		slot := p.ranges.add(e.Start, e.Last, n, top.node)
		top.node.Self += n
		if st.timed {
			st.addCycles(slot, top.node, n)
		}
		if p.offsets {
			p.addOffFn(fn, n)
		}
		st.insts += n
	}

	// What does the range's end ask of the next one?
	switch e.End {
	case ingress.ITypeDirectCall, ingress.ITypeIndirectCall:
		st.pend, st.callSite = pendCall, e.Last
	case ingress.ITypeReturn:
		st.pend = pendReturn
	case ingress.ITypeTrapReturn:
		st.pend = pendTrapReturn
	case ingress.ITypeDirectJump, ingress.ITypeIndirectJump, ingress.ITypeCoSwap,
		ingress.ITypeOtherDirect, ingress.ITypeOtherIndirect:
		st.pend = pendJump
	case ingress.ITypeNone, ingress.ITypeUninferable:
		// A 3-bit port reports inferable jumps and calls as none and
		// every indirect one as uninferable: ask the image.
		st.pend = p.classifyLast(e.Last, e.End)
		if st.pend == pendCall {
			st.callSite = e.Last
		}
	default:
		st.pend = pendNone
	}
}

// classifyLast classifies the last instruction of a range from the image.
func (p *Profile) classifyLast(addr uint64, end ingress.IType) pendKind {
	if p.img == nil {
		if end == ingress.ITypeUninferable {
			return pendJump
		}
		return pendNone
	}
	in, ok := p.img.Inst(addr)
	if !ok {
		return pendNone
	}
	switch in.Class {
	case riscv.ClassJump, riscv.ClassIndirect, riscv.ClassTableJump:
		switch in.Link {
		case riscv.LinkCall:
			return pendCall
		case riscv.LinkReturn:
			return pendReturn
		}
		return pendJump
	case riscv.ClassPopRet:
		return pendReturn
	case riscv.ClassTrapReturn:
		return pendTrapReturn
	}
	return pendNone
}

// enter makes the top of st's stack the frame that addr runs in, as the
// pending end of the previous range says.
func (p *Profile) enter(st *srcState, addr uint64) {
	st.at = addr
	fn := p.syms.lookup(addr)
	pend := st.pend
	st.pend = pendNone
	if len(st.frames) == 0 {
		p.push(st, p.root, fn, false, 0, false)
		return
	}
	switch pend {
	case pendCall:
		p.call(st, fn, st.callSite, true, false)
		return
	case pendTrap:
		p.call(st, fn, 0, false, true)
		return
	case pendReturn:
		// Pop to the frame whose call site the target follows.
		for i := len(st.frames) - 1; i >= 1; i-- {
			f := &st.frames[i]
			if f.hasSite && (addr == f.site+2 || addr == f.site+4) {
				p.unwind(st, i)
				p.fixTop(st, fn, addr)
				return
			}
		}
	case pendTrapReturn:
		for i := len(st.frames) - 1; i >= 1; i-- {
			if st.frames[i].trap {
				p.unwind(st, i)
				p.fixTop(st, fn, addr)
				return
			}
		}
	}
	top := &st.frames[len(st.frames)-1]
	if top.fn.Contains(addr) && top.fn != p.syms.unknown {
		return
	}
	if pend == pendJump && fn.Start == addr && fn != p.syms.unknown {
		p.replace(st, fn) // tail call
		return
	}
	p.fixTop(st, fn, addr)
}

// fixTop makes the top frame's function contain addr: unwinding to the
// innermost frame that does (longjmp, a return past frames), else
// replacing the top frame's function (a jump into another function).
func (p *Profile) fixTop(st *srcState, fn *Function, addr uint64) {
	top := &st.frames[len(st.frames)-1]
	if top.fn == fn {
		return
	}
	if fn != p.syms.unknown {
		for i := len(st.frames) - 2; i >= 0; i-- {
			if st.frames[i].fn == fn {
				p.unwind(st, i+1)
				return
			}
		}
	}
	p.replace(st, fn)
}

// child returns the child of n for fn, creating it.
func (p *Profile) child(n *Node, fn *Function) *Node {
	if n.kids != nil {
		if c, ok := n.kids[fn]; ok {
			return c
		}
	} else {
		for _, c := range n.Children {
			if c.Func == fn {
				return c
			}
		}
	}
	if p.nodes >= p.opt.MaxNodes {
		return n
	}
	p.nodes++
	c := &Node{Func: fn, Parent: n, id: uint32(p.nodes)}
	n.Children = append(n.Children, c)
	if n.kids != nil {
		n.kids[fn] = c
	} else if len(n.Children) > 8 {
		n.kids = make(map[*Function]*Node, 16)
		for _, k := range n.Children {
			n.kids[k.Func] = k
		}
	}
	return c
}

// push adds a frame for fn under parent.
func (p *Profile) push(st *srcState, parent *Node, fn *Function, hasSite bool, site uint64, trap bool) {
	if len(st.frames) >= p.opt.MaxDepth {
		p.unwind(st, 0)
		parent = p.root
	}
	n := p.child(parent, fn)
	n.Calls++
	if trap {
		n.Trap = true
	}
	if n != parent {
		n.noteSite(site, hasSite)
	}
	st.frames = append(st.frames, frame{node: n, fn: fn, site: site, hasSite: hasSite, trap: trap,
		timed: st.timed, begin: st.time, insts0: st.insts, priv: st.priv, privOK: st.privKnown, lo: st.at, hi: st.at})
	p.beginSpan(st)
}

// call pushes a frame for a call (or trap) from the top frame.
func (p *Profile) call(st *srcState, fn *Function, site uint64, hasSite, trap bool) {
	parent := st.frames[len(st.frames)-1].node
	p.push(st, parent, fn, hasSite, site, trap)
}

// replace ends the top frame and puts fn in its place (tail call, jump).
func (p *Profile) replace(st *srcState, fn *Function) {
	top := st.frames[len(st.frames)-1]
	p.endSpan(st, &top, len(st.frames)-1)
	st.frames = st.frames[:len(st.frames)-1]
	parent := p.root
	if len(st.frames) > 0 {
		parent = st.frames[len(st.frames)-1].node
	}
	n := p.child(parent, fn)
	n.Calls++
	if n != parent {
		n.noteSite(top.site, top.hasSite)
	}
	st.frames = append(st.frames, frame{node: n, fn: fn, site: top.site, hasSite: top.hasSite, trap: top.trap,
		timed: st.timed, begin: st.time, insts0: st.insts, priv: st.priv, privOK: st.privKnown, lo: st.at, hi: st.at})
	p.beginSpan(st)
}

// beginSpan reports the activation of the top frame to OnEnter.
func (p *Profile) beginSpan(st *srcState) {
	if p.opt.OnEnter == nil {
		return
	}
	f := &st.frames[len(st.frames)-1]
	s := Span{Func: f.fn, Src: st.src, Depth: len(st.frames) - 1, Begin: f.insts0, End: f.insts0,
		Timed: f.timed, BeginTime: f.begin, EndTime: f.begin, Priv: f.priv, PrivKnown: f.privOK}
	if f.fn == p.syms.unknown {
		s.Lo, s.Hi = f.lo, f.hi
	}
	p.opt.OnEnter(&s)
}

// unwind pops frames until len(st.frames) == depth.
func (p *Profile) unwind(st *srcState, depth int) {
	for len(st.frames) > depth {
		i := len(st.frames) - 1
		p.endSpan(st, &st.frames[i], i)
		st.frames = st.frames[:i]
	}
}

func (p *Profile) endSpan(st *srcState, f *frame, depth int) {
	if p.opt.OnSpan == nil {
		return
	}
	s := Span{Func: f.fn, Src: st.src, Depth: depth, Begin: f.insts0, End: st.insts, Insts: st.insts - f.insts0,
		Timed: f.timed, BeginTime: f.begin, EndTime: st.time, Priv: f.priv, PrivKnown: f.privOK}
	if f.fn == p.syms.unknown {
		s.Lo, s.Hi = f.lo, f.hi
	}
	p.opt.OnSpan(&s)
}

// straddle attributes a range that runs across function boundaries,
// instruction by instruction: each function's part is counted as a range
// of its own.
func (p *Profile) straddle(st *srcState, start, last, n uint64) {
	var run, runStart, runLast uint64
	flush := func() {
		if run == 0 {
			return
		}
		top := &st.frames[len(st.frames)-1]
		if top.fn == p.syms.unknown {
			top.lo, top.hi = min(top.lo, runStart), max(top.hi, runLast)
		}
		slot := p.ranges.add(runStart, runLast, run, top.node)
		top.node.Self += run
		if st.timed {
			st.addCycles(slot, top.node, run)
		}
		if p.offsets {
			p.addOffFn(top.fn, run)
		}
		// Advance the clock as each function's part is done, so that
		// the activation the next part replaces ends here.
		st.insts += run
		run = 0
	}
	p.forEachInst(start, last, n, func(addr uint64, count uint64) {
		top := &st.frames[len(st.frames)-1]
		if !p.syms.contains(top.fn, addr) {
			flush()
			fn := p.syms.lookup(addr)
			st.at = addr
			p.replace(st, fn) // falling through into the next function
		}
		if run == 0 {
			runStart = addr
		}
		runLast = addr
		run += count
	})
	flush()
}

// forEachInst calls f for the address of each instruction of a range
// (count 1 each); when the addresses cannot be known (no image, odd
// sizes) it calls f(start, n) once.
func (p *Profile) forEachInst(start, last, n uint64, f func(addr, count uint64)) {
	if n == 1 {
		f(start, 1)
		return
	}
	span := last - start
	if span == (n-1)*4 || span == (n-1)*2 {
		step := span / (n - 1)
		for a, i := start, uint64(0); i < n; a, i = a+step, i+1 {
			f(a, 1)
		}
		return
	}
	if step := uint64(p.opt.FixedInstSize); step > 0 {
		if span == (n-1)*step {
			for a, i := start, uint64(0); i < n; a, i = a+step, i+1 {
				f(a, 1)
			}
			return
		}
		f(start, n)
		return
	}
	if p.img != nil {
		a := start
		var i uint64
		for ; i < n-1 && a < last; i++ {
			in, ok := p.img.Inst(a)
			if !ok || in.Len == 0 {
				break
			}
			f(a, 1)
			a += uint64(in.Len)
		}
		if a == last && i == n-1 {
			f(last, 1)
			return
		}
		// The image disagrees with the range: put the rest at the end.
		if rest := n - i; rest > 0 {
			f(last, rest)
		}
		return
	}
	f(start, n)
}

// addCycles records n instructions waiting for the next timestamp.
func (st *srcState) addCycles(slot int32, node *Node, n uint64) {
	if k := len(st.pendCyc); k > 0 {
		last := &st.pendCyc[k-1]
		if last.slot == slot && last.node == node {
			last.n += n
			return
		}
	}
	st.pendCyc = append(st.pendCyc, cycEntry{slot, node, n})
	if len(st.pendCyc) >= st.compactAt {
		st.compactCycles()
		// amortised: compact again only when the list has doubled
		st.compactAt = max(1<<16, 2*len(st.pendCyc))
	}
}

// compactCycles merges the entries of the same slot and node, so that
// the pending list stays bounded by the program's size.
func (st *srcState) compactCycles() {
	type key struct {
		slot int32
		node *Node
	}
	m := make(map[key]int, len(st.pendCyc)/4)
	out := st.pendCyc[:0]
	for _, c := range st.pendCyc {
		k := key{c.slot, c.node}
		if i, ok := m[k]; ok {
			out[i].n += c.n
			continue
		}
		m[k] = len(out)
		out = append(out, c)
	}
	st.pendCyc = out
}

// timeEvent distributes the time since the last timestamp over the
// instructions executed since, in proportion to their number.
func (p *Profile) timeEvent(st *srcState, t uint64) {
	if !st.timed {
		st.timed, p.timed = true, true
		st.time = t
		st.pendCyc = st.pendCyc[:0]
		return
	}
	if t <= st.time {
		if t < st.time {
			st.time = t // the clock went back (reset): restart
		}
		return
	}
	delta := t - st.time
	st.time = t
	var total uint64
	for _, c := range st.pendCyc {
		total += c.n
	}
	if total == 0 {
		return
	}
	p.cycles += delta
	var cum, given uint64
	for _, c := range st.pendCyc {
		cum += c.n
		// share = floor(delta*cum/total) - given, without overflow
		hi, lo := bits.Mul64(delta, cum)
		q, _ := bits.Div64(hi, lo, total)
		share := q - given
		given = q
		c.node.SelfCycles += share
		if c.slot >= 0 {
			p.ranges.slots[c.slot].cycles += share
		}
	}
	st.pendCyc = st.pendCyc[:0]
}

// Close finishes the profile: it ends every open activation and computes
// the inclusive counts and the per-function and per-line tables. Close
// may be called more than once.
func (p *Profile) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	for _, st := range p.srcs {
		if st != nil {
			p.unwind(st, 0)
		}
	}
	p.flushOffset(p.traceSize)
	inclusive(p.root)
	return nil
}

// inclusive computes the inclusive counts of the tree under n.
func inclusive(n *Node) {
	// iterative post-order, as recursion can be deep
	type item struct {
		n    *Node
		next int
	}
	stack := []item{{n, 0}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next < len(top.n.Children) {
			c := top.n.Children[top.next]
			top.next++
			stack = append(stack, item{c, 0})
			continue
		}
		nd := top.n
		nd.Inclusive, nd.InclCycles = nd.Self, nd.SelfCycles
		for _, c := range nd.Children {
			nd.Inclusive += c.Inclusive
			nd.InclCycles += c.InclCycles
		}
		stack = stack[:len(stack)-1]
	}
}
