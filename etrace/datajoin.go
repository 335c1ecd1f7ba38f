package etrace

import (
	"errors"
	"fmt"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/filter"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// DataHandler receives what a Decoder reads besides the te_inst packets it
// follows: the data trace packets (DataFrame, with the frame valid only
// during the call) and, before the decoder sees them, every te_inst packet
// (InstPacket). A DataJoiner is one.
type DataHandler interface {
	DataFrame(fr *Frame) error
	InstPacket(p *Packet, off int64) error
}

// Memory instruction kinds, for the join.
const (
	mNone = iota
	mLoad
	mStore
	mLR
	mSC
	mAMO
	mCSR // a Zicsr instruction (CSR data trace only)
)

// memOp is what the join knows of an instruction: its memory kind, the
// log2 of its access size, the number of accesses beyond the first
// (cbo.zero: the hart stores its 64-byte block as 8 doublewords, as the
// simulator does), and the dtypes of the accesses that fit it (want,
// alt): a load (load, lr), a store (store), a store or a failed one
// (sc), the AMO's.
type memOp struct {
	kind      uint8
	size      uint8
	more      uint8
	want, alt ingress.DType
}

// kindDTypes gives the dtypes of the accesses that fit each memory kind
// but AMOs (memOp.want, memOp.alt).
var kindDTypes = [...][2]ingress.DType{
	mLoad:  {ingress.DTypeLoad, ingress.DTypeLoad},
	mStore: {ingress.DTypeStore, ingress.DTypeStore},
	mLR:    {ingress.DTypeLoad, ingress.DTypeLoad},
	mSC:    {ingress.DTypeStore, ingress.DTypeSCFail},
}

// memOps lists the memory instructions by mnemonic (the access size is the
// log2 of the bytes accessed).
var memOps = func() map[string]memOp {
	m := map[string]memOp{}
	for _, l := range []struct {
		kind  uint8
		size  uint8
		names []string
	}{
		{mLoad, 0, []string{"lb", "lbu", "c.lbu"}},
		{mLoad, 1, []string{"lh", "lhu", "flh", "c.lhu", "c.lh"}},
		{mLoad, 2, []string{"lw", "lwu", "flw", "c.lw", "c.lwsp", "c.flw", "c.flwsp"}},
		{mLoad, 3, []string{"ld", "fld", "c.ld", "c.ldsp", "c.fld", "c.fldsp"}},
		{mStore, 0, []string{"sb", "c.sb"}},
		{mStore, 1, []string{"sh", "fsh", "c.sh"}},
		{mStore, 2, []string{"sw", "fsw", "c.sw", "c.swsp", "c.fsw", "c.fswsp"}},
		{mStore, 3, []string{"sd", "fsd", "c.sd", "c.sdsp", "c.fsd", "c.fsdsp"}},
		{mLR, 2, []string{"lr.w"}},
		{mLR, 3, []string{"lr.d"}},
		{mSC, 2, []string{"sc.w"}},
		{mSC, 3, []string{"sc.d"}},
	} {
		for _, n := range l.names {
			m[n] = memOp{kind: l.kind, size: l.size, want: kindDTypes[l.kind][0], alt: kindDTypes[l.kind][1]}
		}
	}
	m["cbo.zero"] = memOp{kind: mStore, size: 3, more: 7, want: ingress.DTypeStore, alt: ingress.DTypeStore}
	for _, a := range []struct {
		name string
		t    ingress.DType
	}{
		{"amoswap", ingress.DTypeAtomicSwp}, {"amoadd", ingress.DTypeAtomicAdd},
		{"amoand", ingress.DTypeAtomicAnd}, {"amoor", ingress.DTypeAtomicOr},
		{"amoxor", ingress.DTypeAtomicXor}, {"amomax", ingress.DTypeAtomicMax},
		{"amomaxu", ingress.DTypeAtomicMax}, {"amomin", ingress.DTypeAtomicMin},
		{"amominu", ingress.DTypeAtomicMin},
	} {
		m[a.name+".w"] = memOp{kind: mAMO, size: 2, want: a.t, alt: a.t}
		m[a.name+".d"] = memOp{kind: mAMO, size: 3, want: a.t, alt: a.t}
	}
	// CSR accesses: their size is the configuration's CSR width
	// (compatible)
	for _, c := range []struct {
		names []string
		t     ingress.DType
	}{
		{[]string{"csrrw", "csrrwi"}, ingress.DTypeCSRRW},
		{[]string{"csrrs", "csrrsi"}, ingress.DTypeCSRRS},
		{[]string{"csrrc", "csrrci"}, ingress.DTypeCSRRC},
	} {
		for _, n := range c.names {
			m[n] = memOp{kind: mCSR, want: c.t, alt: c.t}
		}
	}
	return m
}()

// opTable caches memOps by riscv.Op (without the RV32 flag): 0 unknown,
// else 1 + index into opVals.
type opCache struct {
	fast [1024]uint8 // 0: not looked up; 1: none; 2+: kind/size packed
	vals [1024]memOp
}

func (c *opCache) get(op riscv.Op) memOp {
	if int(op) < len(c.fast) {
		switch c.fast[op] {
		case 0:
		case 1:
			return memOp{}
		default:
			return c.vals[op]
		}
	}
	m := memOps[op.String()]
	if int(op) < len(c.fast) {
		c.vals[op] = m
		c.fast[op] = 1
		if m.kind != mNone {
			c.fast[op] = 2
		}
	}
	return m
}

// DataAccesses returns how many data accesses one execution of in makes
// as the data joiner pairs them with it: 1 for a load, a store, an
// atomic or a CSR instruction, 8 for cbo.zero (the simulator stores its
// block as 8 doublewords), one per register for a Zcmp push or pop, 0
// for an instruction that accesses no data.
func DataAccesses(in *riscv.Inst) int {
	m := memOps[(in.Op &^ 0x8000).String()]
	if m.kind == mNone {
		var ok bool
		if m, ok = pushPopOp(in); !ok {
			return 0
		}
	}
	return 1 + int(m.more)
}

// pushPopRegs is the number of registers of each Zcmp push/pop register
// list (rlist 4 to 15: {ra}, {ra, s0}, ... {ra, s0-s9}, {ra, s0-s11}).
var pushPopRegs = [16]uint8{4: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13}

// pushPopOp returns the memOp of a Zcmp push or pop (cm.push, cm.pop,
// cm.popret, cm.popretz): one XLEN-bit store or load per register of its
// list, in the order the hart makes them (the simulator's data port
// sends them all with the instruction's address, each with one of the
// instruction's retirements, which the encoder folds into one: see
// sim.DataPort and "Multi-access instructions" in data.go).
func pushPopOp(in *riscv.Inst) (memOp, bool) {
	if in.Raw&0xe003 != 0xa002 || in.Len != 2 { // quadrant 2, funct3 101
		return memOp{}, false
	}
	kind := uint8(mLoad)
	switch in.Op.String() {
	case "cm.push":
		kind = mStore
	case "cm.pop", "cm.popret", "cm.popretz":
	default:
		return memOp{}, false
	}
	n := pushPopRegs[in.Raw>>4&15]
	if n == 0 {
		return memOp{}, false
	}
	size := uint8(3)
	if in.XLen() == 32 {
		size = 2
	}
	return memOp{kind: kind, size: size, more: n - 1, want: kindDTypes[kind][0], alt: kindDTypes[kind][1]}, true
}

// memInst is a memory instruction of a run.
type memInst struct {
	addr uint64
	idx  uint32 // instructions before it in the run
	raw  uint32 // its encoding (CSR instructions: the CSR number, rs1/uimm)
	len  uint8
	op   memOp
}

// memRun lists the memory instructions from a start address on, as far
// as ranges starting there have reached.
type memRun struct {
	start uint64
	next  uint64 // address after the last instruction scanned
	n     uint32 // instructions scanned
	mems  []memInst
}

// queued is a decoded data packet waiting for its instruction.
type queued struct {
	a      ingress.Access
	off    int64
	idx    int64
	pend   bool // a split request whose load data has not come
	noData bool // a split request answered with an error
}

// splitSlot is what the joiner knows of one lrid of a split trace.
type splitSlot struct {
	state uint8  // slotFree...
	at    uint64 // slotQueued: the request's queue sequence number; slotDeferred: its event's index
}

// splitSlot states.
const (
	slotFree     = iota
	slotQueued   // the request is queued, no data yet
	slotDeferred // the request is joined; its event waits in the deferred queue
	slotDropped  // the request was dropped: its data is not joined
)

// deferredEv is a flow event held back behind a load waiting for its
// data (split protocol).
type deferredEv struct {
	ev   flow.Event
	wait bool
}

// maxDeferred bounds the events held back for loads waiting for their
// data.
const maxDeferred = 1 << 16

// maxQueued bounds the data packets held for instructions not yet
// decoded.
const maxQueued = 1 << 20

// DataJoiner joins data trace packets to the decoded instruction flow:
// placed between a Decoder (as its sink and its Data handler) and the
// sinks, it splits each range after every load, store and atomic
// instruction and sends a flow.KindData event with that instruction's
// access after it.
//
// In a split trace a request packet stands for its access, and the load
// data packet with its lrid, which may come after the te_inst packets
// that report the load, completes it: the joiner holds the flow back
// from a load whose data has not come (at most maxDeferred events; what
// is released without data is a warning). With data filters
// (DataConfig.Filter) the memory instructions they leave out expect no
// packet; a data address filter cannot be evaluated on instructions, so
// then the accesses are sent as their packets come, with no instruction
// (Addr 0), after one warning saying so.
//
// The data packets of an instruction come before any te_inst packet that
// reports it (see data.go), so the joiner queues them and takes one per
// memory instruction as the ranges come. Anything that does not fit is a
// flow.KindWarn event with the byte offset of the packet concerned: a
// memory instruction with no packet, a packet of another kind or size
// than its instruction, a malformed packet, packets left over at the end
// of tracing. After such a mismatch, and after a gap in the instruction
// trace, the joiner cannot tell which packet belongs to which instruction
// any more: it joins nothing until tracing restarts (a support packet
// that ends tracing), and then reports how many memory instructions it
// left without an access. It never pairs an access with an instruction it
// is not sure of.
type DataJoiner struct {
	next   flow.Sink
	img    *image.Set
	dc     *dataCodec
	fields DataFields
	has    uint8
	st     dataState
	pkt    DataPacket

	q         []queued // ring, a power of 2 long
	qHead, qN int
	qSeq      uint64 // sequence number of the queue's head

	// split protocol
	dopt uint8          // the support packet's doptions for this configuration
	filt *filter.Config // data filters, if any
	priv ingress.Priv   // privilege of the flow (its context events)
	// unpaired: a data address filter leaves the accesses unpaired
	unpaired, unpairedWarned bool
	split                    bool
	csr                      bool // CSR accesses are traced: Zicsr instructions have packets
	plain                    bool // unified, paired, address and data: DataFrame's fast path applies
	slots                    []splitSlot
	dq                       []deferredEv // events held back, from dHead on
	dHead                    int
	dBase                    uint64 // index of dq[0]
	waiting                  int    // events of dq waiting for their data
	relPend                  bool   // suspended: release the events held back at the next warning
	heldBack                 uint64 // loads joined before their data came
	frames                   int64  // data packets read
	segEnd                   bool   // a support packet ended tracing
	suspended                bool
	suspOff                  int64
	unjoined                 uint64 // memory instructions left without an access
	// unjoined when the last report of them was sent
	unjoinedMark uint64
	// joined and the byte offset when joining last (re)started
	joinedMark uint64
	markOff    int64
	dropped    uint64 // data packets dropped while suspended
	lastOff    int64
	ops        opCache
	runs       map[uint64]*memRun
	cache      [1024]*memRun
	sub, ev    flow.Event
	dev        flow.Event // data events
	joined     uint64
	mismatches uint64
}

// NewDataJoiner returns a joiner sending the flow, with the accesses, to
// next; img is the program image the decoder follows and cfg its
// configuration (Data must be set).
func NewDataJoiner(next flow.Sink, img *image.Set, cfg *Config) (*DataJoiner, error) {
	c := *cfg
	if c.Data == nil {
		return nil, fmt.Errorf("etrace: data joiner without a data configuration")
	}
	d := *c.Data
	c.Data = &d
	if err := c.Check(); err != nil {
		return nil, err
	}
	if img.HasContexts() || len(img.Epochs()) > 0 {
		// The joiner finds memory instructions in one address space.
		return nil, fmt.Errorf("etrace: data trace cannot yet be joined with per-context or time-varying images (a sideband)")
	}
	// Nothing is joined before the support packet that starts the
	// trace: a capture that starts later has lost the packets that pair
	// its first data packets with their instructions.
	j := &DataJoiner{next: next, img: img, dc: newDataCodec(&d), fields: d.Fields,
		q: make([]queued, 64), runs: map[uint64]*memRun{}, suspended: true, split: d.Split}
	if d.Split {
		j.slots = make([]splitSlot, 1<<d.LRIDWidth)
	}
	j.dopt = d.DOptions()
	j.csr = d.CSR
	if d.Filter.HasData() {
		j.filt = d.Filter
		if d.Filter.DataNeedsAddr() {
			if d.Split {
				return nil, fmt.Errorf("etrace: a data address filter with the split protocol cannot be decoded (the accesses cannot be paired with their instructions)")
			}
			j.unpaired = true
		}
	}
	j.plain = !j.split && !j.unpaired && j.dc.fast
	switch d.Fields {
	case DataAddrOnly:
		j.has = flow.AccessAddr
	case DataValueOnly:
		j.has = flow.AccessData
	default:
		j.has = flow.AccessAddr | flow.AccessData
	}
	return j, nil
}

// Joined returns the number of accesses joined to instructions.
func (j *DataJoiner) Joined() uint64 { return j.joined }

// Mismatches returns the number of warnings the joiner sent.
func (j *DataJoiner) Mismatches() uint64 { return j.mismatches }

// Unjoined returns the number of memory instructions left without an
// access.
func (j *DataJoiner) Unjoined() uint64 { return j.unjoined }

func (j *DataJoiner) warn(off, idx int64, cause error, what string) error {
	if j.relPend {
		j.relPend = false
		if err := j.release(off, "joining stopped", decode.ErrSkipped); err != nil {
			return err
		}
	}
	j.mismatches++
	j.ev = flow.Event{Kind: flow.KindWarn, Offset: off, Index: idx,
		Err: &decode.Error{Offset: off, Index: idx, What: what, Err: cause}}
	return j.emit(&j.ev)
}

// emit sends e on, behind the events held back if there are any.
func (j *DataJoiner) emit(e *flow.Event) error {
	if j.dHead == len(j.dq) {
		return j.next.Event(e)
	}
	return j.hold(e, false)
}

// hold appends e to the events held back.
func (j *DataJoiner) hold(e *flow.Event, wait bool) error {
	if len(j.dq)-j.dHead >= maxDeferred {
		if err := j.release(e.Offset, fmt.Sprintf("more than %d flow events waited for them", maxDeferred), decode.ErrOverflow); err != nil {
			return err
		}
		if !wait && j.dHead == len(j.dq) {
			return j.next.Event(e)
		}
	}
	if j.dHead > 1024 && 2*j.dHead > len(j.dq) {
		n := copy(j.dq, j.dq[j.dHead:])
		j.dq = j.dq[:n]
		j.dBase += uint64(j.dHead)
		j.dHead = 0
	}
	j.dq = append(j.dq, deferredEv{ev: *e, wait: wait})
	if wait {
		j.waiting++
	}
	return nil
}

// flushHeld sends the events held back up to the first still waiting.
func (j *DataJoiner) flushHeld() error {
	for j.dHead < len(j.dq) && !j.dq[j.dHead].wait {
		// advance first: the sink may call back
		d := &j.dq[j.dHead]
		j.dHead++
		if err := j.next.Event(&d.ev); err != nil {
			return err
		}
	}
	if j.dHead == len(j.dq) {
		j.dBase += uint64(len(j.dq))
		j.dq, j.dHead = j.dq[:0], 0
	}
	return nil
}

// release sends the events held back, the loads still waiting without
// their data, and warns about them.
func (j *DataJoiner) release(off int64, why string, cause error) error {
	if j.waiting == 0 {
		return j.flushHeld()
	}
	n, first := 0, uint64(0)
	for i := j.dHead; i < len(j.dq); i++ {
		d := &j.dq[i]
		if d.wait {
			if n == 0 {
				first = d.ev.Addr
			}
			n++
			d.wait = false
			d.ev.AccessHas &^= flow.AccessData
			j.slots[d.ev.Access.LRID].state = slotDropped
		}
	}
	j.waiting = 0
	if err := j.flushHeld(); err != nil {
		return err
	}
	return j.warn(off, -1, fmt.Errorf("%w: %d loads (the first at pc %#x) joined without their data: %s", cause, n, first, why), "data trace")
}

// suspend stops joining until tracing restarts, dropping the queue.
func (j *DataJoiner) suspend(off int64) {
	if !j.suspended {
		j.suspended, j.suspOff = true, off
	}
	j.dropped += uint64(j.qN)
	j.dropQueue()
	j.relPend = j.waiting > 0
}

// dropQueue empties the queue; the data of its split requests will not
// be joined.
func (j *DataJoiner) dropQueue() {
	if j.split {
		for i := range j.slots {
			if j.slots[i].state == slotQueued {
				j.slots[i].state = slotDropped
			}
		}
	}
	j.qSeq += uint64(j.qN)
	j.qHead, j.qN = 0, 0
}

// suspect says which accesses already joined may be paired wrongly: a
// packet lost or added earlier shifts the pairing until a mismatch shows.
func (j *DataJoiner) suspect() string {
	n := j.joined - j.joinedMark
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; the %d accesses joined since byte %d (the start of this stretch of tracing) may be paired with the wrong instructions", n, j.markOff)
}

// resume reports what was left unjoined and joins again.
func (j *DataJoiner) resume(off int64) error {
	if !j.suspended {
		return nil
	}
	j.suspended = false
	j.joinedMark, j.markOff = j.joined, off
	n, dr := j.unjoined-j.unjoinedMark, j.dropped
	j.dropped, j.unjoinedMark = 0, j.unjoined
	if n == 0 && dr == 0 {
		return nil
	}
	return j.warn(j.suspOff, -1, fmt.Errorf("%w: data trace not joined from byte %d to byte %d: %d load/store instructions left without their access, %d data packets dropped",
		decode.ErrSkipped, j.suspOff, off, n, dr), "data trace")
}

// endSegment handles the end of a traced segment: packets left over
// belong to no instruction.
func (j *DataJoiner) endSegment(off int64) error {
	j.segEnd = false
	if j.qN > 0 {
		f := j.q[j.qHead]
		n := j.qN
		j.dropQueue()
		if err := j.warn(f.off, f.idx, fmt.Errorf("%w: %d data packets (the first: %s of %d bytes) with no load or store instruction in the decoded flow%s",
			decode.ErrInconsistent, n, f.a.DType, f.a.Bytes(), j.suspect()), "data packet"); err != nil {
			return err
		}
	}
	return j.resume(off)
}

// DataFrame decodes a data packet and queues its access.
func (j *DataJoiner) DataFrame(fr *Frame) error {
	idx := j.frames
	j.frames++
	j.lastOff = fr.Offset
	if !j.segEnd && !j.suspended && j.plain && j.qN < len(j.q) {
		// the common case: a unified load or store with address and
		// data into the queue
		q := &j.q[(j.qHead+j.qN)&(len(j.q)-1)]
		if j.dc.decodeFast(fr.Payload, &j.st, &q.a) {
			q.off, q.idx, q.pend, q.noData = fr.Offset, idx, false, false
			j.qN++
			return nil
		}
	}
	return j.dataFrame(fr, idx)
}

// dataFrame is DataFrame for every packet.
func (j *DataJoiner) dataFrame(fr *Frame, idx int64) error {
	if j.segEnd {
		if err := j.endSegment(fr.Offset); err != nil {
			return err
		}
	}
	if j.suspended {
		j.dropped++
		return nil
	}
	if j.split {
		return j.splitFrame(fr, idx)
	}
	if j.unpaired {
		return j.unpairedFrame(fr, idx)
	}
	var q *queued
	if j.qN < len(j.q) {
		q = &j.q[(j.qHead+j.qN)&(len(j.q)-1)]
	} else {
		var err error
		if q, err = j.push(fr.Offset, idx); q == nil {
			return err
		}
	}
	if err := j.dc.decodeFrame(fr.Payload, &j.st, &q.a, &j.pkt); err != nil {
		j.suspend(fr.Offset)
		return j.warn(fr.Offset, idx, fmt.Errorf("%w: %w", decode.ErrMalformed, err), "data packet")
	}
	q.off, q.idx, q.pend, q.noData = fr.Offset, idx, false, false
	j.qN++
	return nil
}

// push returns the queue entry for the next packet (not yet counted in
// qN), or nil and what to return when the queue is full.
func (j *DataJoiner) push(off, idx int64) (*queued, error) {
	if j.qN == len(j.q) {
		if j.qN >= maxQueued {
			j.suspend(off)
			return nil, j.warn(off, idx, fmt.Errorf("%w: more than %d data packets ahead of the instruction trace", decode.ErrOverflow, maxQueued), "data packet")
		}
		nq := make([]queued, 2*len(j.q))
		for i := 0; i < j.qN; i++ {
			nq[i] = j.q[(j.qHead+i)&(len(j.q)-1)]
		}
		j.q, j.qHead = nq, 0
	}
	return &j.q[(j.qHead+j.qN)&(len(j.q)-1)], nil
}

// splitFrame decodes a data packet of a split trace: a request or a
// store is queued, load data goes to its request.
func (j *DataJoiner) splitFrame(fr *Frame, idx int64) error {
	p := &j.pkt
	malformed := func(err error) error {
		j.suspend(fr.Offset)
		return j.warn(fr.Offset, idx, fmt.Errorf("%w: %w", decode.ErrMalformed, err), "data packet")
	}
	if err := j.dc.parse(fr.Payload, p); err != nil {
		return malformed(err)
	}
	if p.Format == DFmtSplitData {
		return j.response(p, fr.Offset, idx)
	}
	q, err := j.push(fr.Offset, idx)
	if q == nil {
		return err
	}
	if j.dc.isSplit(p.Format, p.Subtype) {
		err = j.dc.decodeRequest(&j.st, p, &q.a)
	} else {
		err = j.dc.decodeAccess(&j.st, p, &q.a)
	}
	if err != nil {
		return malformed(err)
	}
	q.off, q.idx, q.pend, q.noData = fr.Offset, idx, false, false
	if q.a.Split && j.fields != DataAddrOnly {
		sl := &j.slots[q.a.LRID]
		if sl.state == slotQueued || sl.state == slotDeferred {
			return malformed(fmt.Errorf("request with lrid %d while the load of that lrid waits for its data", q.a.LRID))
		}
		q.pend = true
		sl.state, sl.at = slotQueued, j.qSeq+uint64(j.qN)
	}
	j.qN++
	return nil
}

// response gives the load data of packet p to its request.
func (j *DataJoiner) response(p *DataPacket, off, idx int64) error {
	sl := &j.slots[p.LRID]
	malformed := func(err error) error {
		j.suspend(off)
		return j.warn(off, idx, fmt.Errorf("%w: %w", decode.ErrMalformed, err), "data packet")
	}
	if sl.state == slotFree {
		return malformed(fmt.Errorf("load data for lrid %d, which has no request waiting", p.LRID))
	}
	v, ok, err := j.dc.decodeResponse(&j.st, p)
	if err != nil {
		return malformed(err)
	}
	var a *ingress.Access
	var d *deferredEv
	switch sl.state {
	case slotDropped:
		sl.state = slotFree
		j.dropped++
		return nil
	case slotQueued:
		q := &j.q[(j.qHead+int(sl.at-j.qSeq))&(len(j.q)-1)]
		q.pend, q.noData = false, !ok
		a = &q.a
	default:
		d = &j.dq[int(sl.at-j.dBase)]
		a = &d.ev.Access
	}
	sl.state = slotFree
	if a.DSize != p.Size {
		return malformed(fmt.Errorf("load data of %d bytes for the request of %d bytes with lrid %d", 1<<p.Size, a.Bytes(), p.LRID))
	}
	a.Data = v
	if d == nil {
		return nil
	}
	d.wait = false
	j.waiting--
	if !ok {
		d.ev.AccessHas &^= flow.AccessData
	}
	return j.flushHeld()
}

// InstPacket restarts data compression at synchronisation packets and
// notes the end of tracing.
func (j *DataJoiner) InstPacket(p *Packet, off int64) error {
	if j.segEnd {
		if err := j.endSegment(off); err != nil {
			return err
		}
	}
	j.lastOff = off
	if p.Format == FormatSync {
		switch p.Subformat {
		case SubStart, SubTrap:
			j.st.reset()
		case SubSupport:
			if p.DEnable != 0 && p.DOptions&^doptCSR != j.dopt&^doptCSR {
				// The packets are not what the joiner reads.
				j.suspend(off)
				if err := j.warn(off, -1, fmt.Errorf("%w: the support packet reports doptions %#x (%s), the decoder is configured for %#x (%s)",
					decode.ErrInconsistent, p.DOptions, doptString(p.DOptions), j.dopt&^doptCSR, doptString(j.dopt&^doptCSR)), "data trace"); err != nil {
					return err
				}
				return nil
			}
			if p.DEnable != 0 && p.DOptions&doptCSR != 0 && j.fields == DataValueOnly {
				// CSR packets without addresses do not exist
				j.suspend(off)
				return j.warn(off, -1, fmt.Errorf("%w: the support packet's doptions %#x announce CSR accesses without addresses (no address), for which the specification has no packet",
					decode.ErrInconsistent, p.DOptions), "data trace")
			}
			if p.DEnable != 0 {
				j.announce(p.DOptions)
			}
			if p.DLoss != 0 {
				// Data packets were dropped: what follows cannot be
				// paired until tracing restarts.
				j.suspend(off)
				if err := j.warn(off, -1, fmt.Errorf("%w: the support packet reports data trace packets lost (dloss)", decode.ErrOverflow), "data trace"); err != nil {
					return err
				}
			}
			// the start or end of a traced segment (trace_lost is
			// a gap: the joiner stays suspended past it)
			if p.QualStatus != QualTraceLost {
				j.segEnd = true
			}
		}
	}
	return nil
}

// announce follows the CSR bit of the doptions of a support packet
// (datacsr.go): Zicsr instructions have packets when it is set (or
// DataConfig.CSR forces it).
func (j *DataJoiner) announce(dopt uint8) {
	if j.dc.announce(dopt) {
		// the runs list the Zicsr instructions or not
		j.csr = j.dc.csr
		clear(j.runs)
		clear(j.cache[:])
	}
}

// run returns the memory instructions of the run from start, scanned at
// least through last.
func (j *DataJoiner) run(start, last uint64) *memRun {
	h := (start >> 1) & uint64(len(j.cache)-1)
	r := j.cache[h]
	if r == nil || r.start != start {
		r = j.runs[start]
		if r == nil {
			r = &memRun{start: start, next: start}
			j.runs[start] = r
		}
		j.cache[h] = r
	}
	for r.next <= last && r.next >= start {
		in := j.img.InstPtr(r.next)
		if in == nil || in.Len == 0 {
			break
		}
		if m := j.ops.get(in.Op &^ 0x8000); m.kind != mNone && (m.kind != mCSR || j.csr) {
			r.mems = append(r.mems, memInst{addr: r.next, idx: r.n, raw: in.Raw, len: in.Len, op: m})
		} else if m, ok := pushPopOp(in); ok {
			r.mems = append(r.mems, memInst{addr: r.next, idx: r.n, raw: in.Raw, len: in.Len, op: m})
		}
		r.n++
		r.next += uint64(in.Len)
	}
	return r
}

// Event passes the flow on, with the accesses of the ranges' memory
// instructions.
func (j *DataJoiner) Event(e *flow.Event) error {
	switch e.Kind {
	case flow.KindRange:
		if j.unpaired {
			return j.emit(e)
		}
		return j.rangeEvent(e)
	case flow.KindContext, flow.KindSync:
		j.priv = e.Priv
	case flow.KindGap:
		j.suspend(e.Offset)
		if j.relPend {
			j.relPend = false
			if err := j.release(e.Offset, "a gap in the instruction trace", decode.ErrSkipped); err != nil {
				return err
			}
		}
	}
	return j.emit(e)
}

func (j *DataJoiner) rangeEvent(e *flow.Event) error {
	r := j.run(e.Start, e.Last) // a run from e.Start: its memory instructions are at e.Start or after
	mems, last := r.mems, e.Last
	if len(mems) == 0 || mems[0].addr > last {
		return j.emit(e)
	}
	sub := &j.sub
	*sub = *e
	pos, posIdx := e.Start, uint32(0)
	for k := range mems {
		m := &mems[k]
		if m.addr > last {
			break
		}
		if j.filt != nil && !j.filt.DataQualified(memKinds[m.op.kind], m.addr, 0, j.priv) {
			continue // the data filters leave its access out
		}
		sub.Start, sub.Last = pos, m.addr
		sub.N = uint64(m.idx - posIdx + 1)
		if m.addr != last {
			sub.End, sub.HasTarget, sub.Target = ingress.ITypeNone, true, m.addr+uint64(m.len)
		} else {
			sub.End, sub.HasTarget, sub.Target = e.End, e.HasTarget, e.Target
		}
		var err error
		if j.dHead == len(j.dq) {
			err = j.next.Event(sub)
		} else {
			err = j.hold(sub, false)
		}
		if err != nil {
			return err
		}
		if err := j.join(m, e.Offset); err != nil {
			return err
		}
		for n := m.op.more; n > 0; n-- {
			if err := j.join(m, e.Offset); err != nil {
				return err
			}
		}
		pos, posIdx = m.addr+uint64(m.len), m.idx+1
	}
	if pos <= last && uint64(posIdx) < e.N {
		sub.Start, sub.Last, sub.N = pos, last, e.N-uint64(posIdx)
		sub.End, sub.HasTarget, sub.Target = e.End, e.HasTarget, e.Target
		return j.emit(sub)
	}
	return nil
}

// compatible reports whether an access fits a memory instruction.
func compatible(m *memOp, a *ingress.Access) bool {
	return a.DSize == m.size && (a.DType == m.want || a.DType == m.alt) && m.kind != mNone
}

// csrFits reports whether CSR access a fits the CSR instruction m: its
// kind and the CSR width, and what the packet carries of what the
// instruction's encoding fixes: the CSR number, and the operand of the
// immediate forms (uimm) and of rs1 = x0 (0).
func (j *DataJoiner) csrFits(m *memInst, a *ingress.Access) bool {
	if a.DType != m.op.want || a.DSize != j.dc.csrSize {
		return false
	}
	if j.has&flow.AccessAddr != 0 && a.DAddr != uint64(m.raw>>20) {
		return false
	}
	if rs1 := uint64(m.raw >> 15 & 31); j.has&flow.AccessData != 0 && (m.raw>>14&1 != 0 || rs1 == 0) {
		// csrr*i: the operand is uimm; csrr* with rs1 x0: 0
		return a.Data == rs1
	}
	return true
}

var memKindNames = [...]string{"", "load", "store", "lr", "sc", "atomic", "CSR instruction"}

// memKinds gives the data filters' kind of each memory instruction kind
// (none for CSR accesses, as filter.KindOf).
var memKinds = [...]uint8{0, filter.KindLoad, filter.KindStore, filter.KindLoad, filter.KindStore, filter.KindAtomic, 0}

// unpairedFrame decodes a data packet of a trace made with a data address
// filter and sends its access at once, with no instruction: which memory
// instructions have an access depends on addresses the decoder does not
// know. The first comes with a warning saying so.
func (j *DataJoiner) unpairedFrame(fr *Frame, idx int64) error {
	var a ingress.Access
	if err := j.dc.decodeFrame(fr.Payload, &j.st, &a, &j.pkt); err != nil {
		j.suspend(fr.Offset)
		return j.warn(fr.Offset, idx, fmt.Errorf("%w: %w", decode.ErrMalformed, err), "data packet")
	}
	if !j.unpairedWarned {
		j.unpairedWarned = true
		if err := j.warn(fr.Offset, idx, errors.New("a data address filter is in force: the data accesses cannot be tied to their instructions (their events carry no instruction address) and are listed where their packets come"), "data trace"); err != nil {
			return err
		}
	}
	ev := &j.dev
	ev.Kind, ev.Addr, ev.Offset, ev.Index, ev.Access, ev.AccessHas = flow.KindData, 0, fr.Offset, idx, a, j.has
	if a.DType == ingress.DTypeSCFail {
		ev.AccessHas &^= flow.AccessData
	}
	j.joined++
	return j.emit(ev)
}

// join sends the access of memory instruction m.
func (j *DataJoiner) join(m *memInst, off int64) error {
	if j.suspended || j.qN == 0 {
		return j.noPacket(m, off)
	}
	q := &j.q[j.qHead]
	if m.op.kind == mCSR {
		if !j.csrFits(m, &q.a) {
			return j.misfit(m, q)
		}
	} else if !compatible(&m.op, &q.a) {
		return j.misfit(m, q)
	}
	// j.dev keeps Kind and the zero fields between data events; one
	// assignment a field (a tuple assignment would copy the access
	// through a temporary)
	ev := &j.dev
	ev.Kind = flow.KindData
	ev.Addr = m.addr
	ev.Offset = q.off
	ev.Index = q.idx
	ev.Access = q.a
	ev.Access.IAddr = m.addr
	ev.AccessHas = j.has
	if q.a.DType == ingress.DTypeSCFail || q.noData {
		ev.AccessHas &^= flow.AccessData
	}
	pend := q.pend
	j.qHead = (j.qHead + 1) & (len(j.q) - 1)
	j.qN--
	j.qSeq++
	j.joined++
	if pend {
		// the data comes later: hold the flow back from here
		j.heldBack++
		if err := j.hold(ev, true); err != nil {
			return err
		}
		sl := &j.slots[ev.Access.LRID]
		sl.state, sl.at = slotDeferred, j.dBase+uint64(len(j.dq)-1)
		return nil
	}
	if j.dHead == len(j.dq) {
		return j.next.Event(ev)
	}
	return j.hold(ev, false)
}

// noPacket handles memory instruction m when no access can be joined to
// it: joining is suspended, or no packet came.
func (j *DataJoiner) noPacket(m *memInst, off int64) error {
	j.unjoined++
	if j.suspended {
		return nil
	}
	j.suspend(off)
	return j.warn(off, -1, fmt.Errorf("%w: the %s at pc %#x has no data packet%s%s", decode.ErrInconsistent, memKindNames[m.op.kind], m.addr, j.csrHint(m), j.suspect()), "data trace")
}

// csrHint returns, for a CSR instruction m that has no packet of its
// own, what may explain it when only the support packet made the
// decoder expect one: a split protocol trace of the earlier 4-bit
// doptions field reads, with 5 bits, as announcing CSR accesses
// (datacsr.go).
func (j *DataJoiner) csrHint(m *memInst) string {
	if m.op.kind != mCSR || j.dc.csrForce || j.dopt&doptSplit == 0 {
		return ""
	}
	return " (the support packet announces CSR accesses: a split protocol trace made with a 4-bit doptions field reads so)"
}

// misfit handles the packet q that does not fit memory instruction m.
func (j *DataJoiner) misfit(m *memInst, q *queued) error {
	j.unjoined++
	a := q.a
	qoff, qidx := q.off, q.idx
	j.suspend(qoff)
	if m.op.kind == mCSR {
		return j.warn(qoff, qidx, fmt.Errorf("%w: data packet (%s of CSR %#x, operand %#x) does not fit the %s of CSR %#x at pc %#x (encoding %#08x)%s%s",
			decode.ErrInconsistent, a.DType, a.DAddr, a.Data, m.op.want, m.raw>>20, m.addr, m.raw, j.csrHint(m), j.suspect()), "data packet")
	}
	return j.warn(qoff, qidx, fmt.Errorf("%w: data packet (%s of %d bytes) does not fit the %s of %d bytes at pc %#x%s",
		decode.ErrInconsistent, a.DType, a.Bytes(), memKindNames[m.op.kind], 1<<m.op.size, m.addr, j.suspect()), "data packet")
}

// Close reports packets left over and what was not joined, then closes
// the next sink.
func (j *DataJoiner) Close() error {
	if err := j.Flush(); err != nil {
		return err
	}
	return j.next.Close()
}

// Message forwards to the next sink if it is a flow.MessageObserver.
func (j *DataJoiner) Message(kind string, offset int64, bits int) {
	if o, ok := j.next.(flow.MessageObserver); ok {
		o.Message(kind, offset, bits)
	}
}

// SetIndex forwards to the next sink if it is a flow.Indexer.
func (j *DataJoiner) SetIndex(i uint64) {
	if x, ok := j.next.(flow.Indexer); ok {
		x.SetIndex(i)
	}
}

// Flush ends the flow like Close, without closing the next sink.
func (j *DataJoiner) Flush() error {
	if err := j.endSegment(j.lastOff); err != nil {
		return err
	}
	return j.release(j.lastOff, "their load data packets never came", decode.ErrTruncated)
}
