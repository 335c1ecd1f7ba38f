package ntrace

import (
	"fmt"
	"io"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/ingress"
)

// Stats counts what an encoder or a reader has seen.
type Stats struct {
	Bytes        int64
	Messages     int64
	Idles        int64
	Errors       int64             // malformed messages (reader) or Error messages (encoder)
	ByTCode      [64]int64         // messages by TCODE
	BytesByTCode [64]int64         // bytes by TCODE
	Instructions uint64            // instructions decoded (the encoder leaves it to its caller, which knows the source)
	Halfwords    uint64            // their size in halfwords
	Blocks       uint64            // ingress blocks encoded
	Syncs        map[uint64]uint64 // sync messages by SYNC reason (encoder only)

	// Decoder only.
	Gaps         int64 // gap events reported
	Warnings     int64 // warning events reported
	OverlongICNT int64 // I-CNT values beyond NTRACE_MAX_ICNT that were used
	Checkpoints  int64 // sync messages whose F-ADDR was compared with the decoded flow

	// Overflows counts FIFO overflows: Error messages sent (encoder) or
	// read (decoder).
	Overflows int64
	// Encoder only: messages dropped by FIFO overflows, and the
	// instruction halfwords retired between the last message sent before
	// an overflow and the sync that restarted the trace (not traced).
	Dropped       int64
	LostHalfwords uint64
}

// BitsPerInstruction returns the trace size in bits per instruction.
func (s *Stats) BitsPerInstruction() float64 {
	if s.Instructions == 0 {
		return 0
	}
	return float64(s.Bytes*8) / float64(s.Instructions)
}

func (s *Stats) count(m *Message) {
	s.Messages++
	s.ByTCode[m.TCode&63]++
	s.BytesByTCode[m.TCode&63] += int64(m.Size)
	s.Bytes += int64(m.Size)
}

// pending kinds: what the encoder waits for the next block to complete.
const (
	pendNone     = iota
	pendIndirect // an uninferable jump, call, return or trap return
	pendTrap     // an exception or interrupt: the handler is the next address
	pendDirect   // BTM: taken branch turned into a DirectBranchSync
)

// Encoder turns ingress blocks into N-Trace messages. It implements
// ingress.Sink (and ingress.Gated for filters and triggers). Create it
// with NewEncoder; call Close at the end of the trace.
type Encoder struct {
	cfg     Config
	w       *Writer
	msg     Message // reused for every message
	st      Stats
	sizeBuf [MaxMessageBytes]byte

	started bool // a sync message has been sent since start/enable
	stopped bool // tracing was stopped by TraceOff

	icnt    uint64 // halfwords since I-CNT was last sent
	icntMax uint64 // cfg.icntLimit(): I-CNT is full at this count
	hist    uint64 // HIST register with stop bit
	histLen int    // history bits in hist
	addr    uint64 // last address sent (U-ADDR reference)

	// the pending message, completed by the next block's address
	pend      int
	pendBType uint64
	pendTime  uint64
	pendPred  bool   // a return whose target the stack predicts
	pendAddr  uint64 // the predicted target
	syncDue   bool   // the next flow message becomes a sync (periodic)
	syncCount uint64 // progress towards the next periodic sync

	// implicit return
	stack    decode.ReturnStack // return addresses (ReturnPartial, ReturnFull), as the decoder keeps them
	calls    uint64             // nesting counter (ReturnCount)
	callsMax uint64

	// repeated history (RCODE=2)
	rptHist  uint64
	rptLen   int
	rptCount uint64
	pat      patternState // HistPatterns
	// refPat, when set (by tests only), plans the HistPatterns records
	// instead of pat: the straightforward reference planner the tests
	// compare pat's output bytes with.
	refPat histPlanner

	// repeated branch messages (RepeatBranch)
	lastBr  Message
	haveBr  bool
	brCount uint64

	// time
	lastTime uint64
	haveTime bool
	curTime  uint64

	// ownership
	priv    ingress.Priv
	context uint64
	ownSent bool

	// sequential jumps: instructions retired since the last message
	sinceMsg uint64

	// notify requested by a trigger
	notify       bool
	syncTimeBase uint64 // time of the last sync (SyncCycles)
	icntSyncDue  bool   // a full I-CNT waits for the next address (SYNC=4)

	// output FIFO model
	fifoLevel float64
	fifoTime  uint64
	sawTime   bool
	lost      bool   // messages are being dropped
	restart   bool   // the next sync is a restart after overflow
	lostMsgs  uint64 // messages dropped
	hwSent    uint64 // halfwords retired when the last message was sent
	lostFrom  uint64 // hwSent when the current overflow began

	closed bool

	// fastBr: the configuration lets Block take a conditional branch by
	// its fast path (HTM, no context, no halfword or cycle sync counting)
	// whenever the state is quiet (see Block); histFullAt is
	// cfg.histBits()-1.
	fastBr     bool
	histFullAt int
}

// NewEncoder returns an encoder writing messages with cfg to w.
func NewEncoder(w io.Writer, cfg Config) (*Encoder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.StartSync == 0 {
		cfg.StartSync = SyncReset
	}
	e := &Encoder{cfg: cfg, w: NewWriter(w, cfg.Wire()), hist: 1, icntMax: cfg.icntLimit()}
	e.st.Syncs = map[uint64]uint64{}
	e.fastBr = cfg.Mode == HTM && !cfg.Context && cfg.SyncMode != SyncHalfwords && cfg.SyncMode != SyncCycles
	e.histFullAt = cfg.histBits() - 1
	if cfg.ImplicitReturn == ReturnPartial || cfg.ImplicitReturn == ReturnFull {
		e.stack = decode.NewReturnStack(cfg.stackDepth())
	}
	if cfg.ImplicitReturn == ReturnCount {
		w := cfg.StackDepth
		if w == 0 {
			w = maxCountBits
		}
		e.callsMax = 1<<uint(w) - 1
	}
	return e, nil
}

// MaxStandardMessage is the longest standard N-Trace message in bytes.
const MaxStandardMessage = 38

// fifoNow is the current time for the FIFO model.
func (e *Encoder) fifoNow() uint64 {
	if e.sawTime {
		return e.curTime
	}
	return e.st.Halfwords
}

// fifoRoom drains the FIFO up to now and returns the free bytes.
func (e *Encoder) fifoRoom() float64 {
	now := e.fifoNow()
	if now > e.fifoTime {
		e.fifoLevel -= float64(now-e.fifoTime) * float64(e.cfg.DrainBytes) / float64(e.cfg.DrainCycles)
		if e.fifoLevel < 0 {
			e.fifoLevel = 0
		}
		e.fifoTime = now
	}
	return float64(e.cfg.FIFOBytes) - e.fifoLevel
}

// fifoAccept reports whether m fits in the FIFO (and queues it), or marks
// the overflow.
func (e *Encoder) fifoAccept(m *Message) bool {
	if e.lost {
		return false
	}
	size, _ := AppendMessage(e.sizeBuf[:0], m, &e.w.cfg)
	if e.fifoRoom() < float64(len(size)) {
		e.lost = true
		e.lostFrom = e.hwSent
		e.st.Overflows++
		return false
	}
	e.fifoLevel += float64(len(size))
	return true
}

// fifoRecover sends the Error message after an overflow and arranges the
// restart with SYNC=7 at the next block.
func (e *Encoder) fifoRecover() error {
	e.lost = false
	m := &e.msg
	m.Reset(TCodeError)
	m.Set(FieldETYPE, ETypeFIFOOverrun).Set(FieldECODE, 1<<2) // program trace messages lost
	if err := e.emit(e.curTime); err != nil {
		return err
	}
	e.st.Errors++
	e.started, e.restart = false, true
	return nil
}

// Lost returns the number of messages dropped by FIFO overflows.
func (e *Encoder) Lost() uint64 { return e.lostMsgs }

// LossSummary describes what FIFO overflows lost ("" when none): the
// overflows, the messages dropped and the instruction halfwords retired
// while trace was lost, for the summary of a command.
func (e *Encoder) LossSummary() string {
	if e.st.Overflows == 0 {
		return ""
	}
	return fmt.Sprintf("FIFO overflowed %d times: %d messages dropped, %d instruction halfwords retired while trace was lost",
		e.st.Overflows, e.st.Dropped, e.st.LostHalfwords)
}

// Stats returns what the encoder has produced so far.
func (e *Encoder) Stats() *Stats { return &e.st }

// Config returns the encoder's configuration.
func (e *Encoder) Config() Config { return e.cfg }

// emit sends e.msg, adding SRC and the timestamp. Repeats of the last
// branch message still being counted are sent first: a RepeatBranch must
// directly follow the message it repeats.
func (e *Encoder) emit(t uint64) error {
	m := &e.msg
	if e.brCount > 0 && m.TCode != TCodeRepeatBranch {
		keep := *m
		m.Reset(TCodeRepeatBranch)
		m.Set(FieldBCNT, e.brCount)
		e.brCount = 0
		if err := e.emit(e.curTime); err != nil {
			return err
		}
		*m = keep
	}
	if e.cfg.SrcBits > 0 {
		m.Set(FieldSRC, uint64(e.cfg.SrcID))
	}
	if e.cfg.Timestamps {
		if e.haveTime && t < e.lastTime {
			t = e.lastTime // messages are sent in order; time never goes back
		}
		if m.TCode.IsSync() || !e.haveTime {
			m.Set(FieldTSTAMP, t)
		} else {
			m.Set(FieldTSTAMP, t-e.lastTime)
		}
		e.lastTime, e.haveTime = t, true
	}
	if e.cfg.FIFOBytes > 0 && !e.fifoAccept(m) {
		e.lostMsgs++
		e.st.Dropped++
		e.sinceMsg = 0
		return nil
	}
	e.hwSent = e.st.Halfwords
	if err := e.w.Write(m); err != nil {
		return err
	}
	e.st.count(m)
	e.sinceMsg = 0
	if e.cfg.SyncMode == SyncMessages {
		e.syncCount++
		e.checkSyncDue()
	}
	return nil
}

func (e *Encoder) checkSyncDue() {
	if e.cfg.SyncMode != SyncOff && e.syncCount >= 1<<uint(e.cfg.SyncMax+4) {
		e.syncDue = true
	}
}

// Block encodes one ingress block.
func (e *Encoder) Block(b *ingress.Block) error {
	if it := b.IType; (it == ingress.ITypeNotTaken || it == ingress.ITypeTaken) && e.fastBr && b.IRetire > 0 &&
		e.started && e.pend == pendNone && !e.closed && !e.lost && !e.icntSyncDue && !e.notify && !e.syncDue {
		return e.fastBranch(b, uint64(it-ingress.ITypeNotTaken))
	}
	if e.closed {
		return fmt.Errorf("ntrace: Block after Close")
	}
	it := b.IType
	if e.cfg.ITypeWidth == 3 {
		it = it.To3Bit()
	}
	if b.IRetire == 0 && !it.IsTrap() {
		return nil // nothing retired and no trap: the other signals are undefined
	}
	e.curTime = b.Time
	if b.Time != 0 {
		e.sawTime = true
	}
	if e.lost && e.fifoRoom() >= 2*MaxStandardMessage {
		// Room again after an overflow: report the loss and restart.
		if err := e.fifoRecover(); err != nil {
			return err
		}
	}
	if !e.started {
		if err := e.start(b); err != nil {
			return err
		}
	} else if e.pend != pendNone {
		if err := e.complete(b.IAddr); err != nil {
			return err
		}
	} else if e.icntSyncDue {
		e.icntSyncDue = false
		m := &e.msg
		m.Reset(TCodeProgTraceSync)
		m.Set(FieldSYNC, SyncICNTFull).Set(FieldICNT, e.icnt).Set(FieldFADDR, b.IAddr>>1)
		if err := e.syncSent(b.IAddr, e.curTime, SyncICNTFull); err != nil {
			return err
		}
	} else if e.notify {
		e.notify = false
		if err := e.linearSync(b.IAddr, SyncTraceEvent); err != nil {
			return err
		}
	} else if e.syncDue {
		if err := e.linearSync(b.IAddr, SyncPeriodic); err != nil {
			return err
		}
	}
	if !e.cfg.Context {
		e.priv, e.context = b.Priv, b.Context
	} else if err := e.ownership(b); err != nil {
		return err
	}

	// Count the retired instructions.
	if b.IRetire > 0 {
		n := uint64(b.IRetire)
		e.icnt += n
		e.st.Halfwords += n
		e.sinceMsg += n
		if e.cfg.SyncMode == SyncHalfwords {
			e.syncCount += n
			e.checkSyncDue()
		}
	}
	e.st.Blocks++
	if e.cfg.SyncMode == SyncCycles && e.sawTime {
		e.syncCount = b.Time - e.lastSyncTime()
		e.checkSyncDue()
	}

	switch {
	case it.IsTrap():
		e.pend = pendTrap
		e.pendBType = BTypeException
		if it == ingress.ITypeInterrupt {
			e.pendBType = BTypeInterrupt
		}
		if e.cfg.TrapBType1 {
			e.pendBType = BTypeTrap
		}
		e.pendTime = b.Time
		e.pendPred = false
	case it == ingress.ITypeTaken || e.cfg.AllJumps && (it == ingress.ITypeDirectCall ||
		it == ingress.ITypeDirectJump || it == ingress.ITypeOtherDirect):
		if it.Pushes() {
			e.push(b.NextAddr())
		}
		if err := e.branch(true, b); err != nil {
			return err
		}
	case it == ingress.ITypeNotTaken:
		if err := e.branch(false, b); err != nil {
			return err
		}
	case it.Uninferable():
		// (a sequentially inferable jump leaves nothing pending: the
		// full counter is checked below)
		if err := e.uninferable(it, b); err != nil {
			return err
		}
	case it.Pushes(): // direct call
		e.push(b.NextAddr())
	}
	// A full I-CNT counter (its overflow bit set) not about to be sent in
	// a message is reported now; with SYNC=4 at the next instruction.
	if e.pend == pendNone && e.icnt >= e.icntMax {
		if e.cfg.ICNTFullSync {
			e.icntSyncDue = true
		} else if err := e.icntFull(); err != nil {
			return err
		}
	}
	return nil
}

// fastBranch is Block for the most frequent block: a conditional branch
// (taken when bit is 1) that retired instructions, in HTM, with fastBr
// set, trace started, nothing pending (no message waiting for this
// block's address, no sync or notification due, no FIFO overflow) and the
// encoder open. It does what the general path does for it, in the same
// order, with the common cases of the history (a bit added to the pattern
// planner's buffer, or to a HIST register that does not become full)
// inlined.
func (e *Encoder) fastBranch(b *ingress.Block, bit uint64) error {
	e.curTime = b.Time
	if b.Time != 0 {
		e.sawTime = true
	}
	e.priv, e.context = b.Priv, b.Context
	n := uint64(b.IRetire)
	e.icnt += n
	e.st.Halfwords += n
	e.sinceMsg += n
	e.st.Blocks++
	if e.cfg.HistPatterns && e.refPat == nil {
		s := &e.pat
		if i := s.buf.head + s.buf.n; !s.active && s.buf.n < patWindow-1 && i < patBufBits {
			s.buf.w[i>>6] |= bit << (i & 63) // bitBuf.push without its compaction
			s.buf.n++
		} else if err := s.add(e, bit); err != nil {
			return err
		}
	} else if !e.cfg.HistPatterns && e.histLen+1 < e.histFullAt {
		e.hist = e.hist<<1 | bit
		e.histLen++
	} else if err := e.branch(bit != 0, b); err != nil {
		return err
	}
	if e.pend == pendNone && e.icnt >= e.icntMax {
		if e.cfg.ICNTFullSync {
			e.icntSyncDue = true
		} else if err := e.icntFull(); err != nil {
			return err
		}
	}
	return nil
}

// Branches encodes the blocks at the front of bs that Block would take
// without sending a message in a quiet state (started, nothing pending or
// due), as Block would one by one, and returns how many it took: the
// conditional branches of fastBranch and, without AllJumps, the
// inferable jumps and calls. It stops before the first block that is
// not one (0: bs[0] is not) and after the first that did more than count
// its instructions, add its outcome to the history or push its return
// address (a message may have been sent, the state changed): the caller
// gives the next block to Block or to Branches again. The common case
// (the outcome added to the planner's buffer or to a HIST register that
// does not become full, the I-CNT counter not full) takes a few
// instructions per block.
func (e *Encoder) Branches(bs []ingress.Block) (int, error) {
	if len(bs) == 0 || !(e.fastBr && e.started && e.pend == pendNone && !e.closed && !e.lost &&
		!e.icntSyncDue && !e.notify && !e.syncDue) {
		return 0, nil
	}
	// itypes of the jumps that only count (jumps) and those that push
	// their return address (calls), by bit
	var jumps, calls uint32
	if !e.cfg.AllJumps {
		jumps = 1<<ingress.ITypeDirectJump | 1<<ingress.ITypeOtherDirect
		if e.cfg.ITypeWidth == 3 {
			jumps |= 1 << ingress.ITypeDirectCall // (folded to 0)
		} else {
			calls = 1 << ingress.ITypeDirectCall
		}
	}
	// room: instructions (halfwords) the I-CNT counter takes before it
	// is full, which Block or fastBranch report
	room := e.icntMax - min(e.icnt, e.icntMax)
	room0 := room
	i := 0
	switch {
	case e.cfg.HistPatterns && e.refPat == nil:
		s := &e.pat
		if s.active {
			break // every outcome goes to add
		}
		// j: where the next outcome goes in the buffer; end: where it is
		// full (add plans the window) or must be compacted
		w, head := &s.buf.w, uint(s.buf.head)
		j, end := head+uint(s.buf.n), head+uint(min(patWindow-1, patBufBits-int(head)))
		for {
			// (no call in this loop: its state stays in registers)
			for ; i < len(bs); i++ {
				b := &bs[i]
				n := uint64(b.IRetire)
				if n == 0 || n >= room {
					break
				}
				if bit := uint64(b.IType) - uint64(ingress.ITypeNotTaken); bit <= 1 {
					if j >= end {
						break
					}
					w[j>>6] |= bit << (j & 63) // bitBuf.push without its compaction
					j++
				} else if jumps>>(b.IType&31)&1 == 0 {
					break
				}
				room -= n
			}
			if !e.branchCall(bs, i, calls, room) {
				break
			}
			room -= uint64(bs[i].IRetire)
			i++
		}
		s.buf.n = int(j - head)
	case !e.cfg.HistPatterns:
		hist, histLen, histMax := e.hist, e.histLen, e.histFullAt-1
		for {
			for ; i < len(bs); i++ {
				b := &bs[i]
				n := uint64(b.IRetire)
				if n == 0 || n >= room {
					break
				}
				if bit := uint64(b.IType) - uint64(ingress.ITypeNotTaken); bit <= 1 {
					if histLen >= histMax {
						break
					}
					hist = hist<<1 | bit
					histLen++
				} else if jumps>>(b.IType&31)&1 == 0 {
					break
				}
				room -= n
			}
			if !e.branchCall(bs, i, calls, room) {
				break
			}
			room -= uint64(bs[i].IRetire)
			i++
		}
		e.hist, e.histLen = hist, histLen
	}
	// the state the blocks taken leave, as Block leaves it
	if i > 0 {
		last := &bs[i-1]
		e.curTime = last.Time
		for k := 0; k < i && !e.sawTime; k++ {
			e.sawTime = bs[k].Time != 0
		}
		e.priv, e.context = last.Priv, last.Context
		n := room0 - room
		e.icnt += n
		e.st.Halfwords += n
		e.sinceMsg += n
		e.st.Blocks += uint64(i)
	}
	if i == len(bs) {
		return i, nil
	}
	// bs[i] takes fastBranch's other paths, or is not for it at all
	b := &bs[i]
	if it := b.IType; it != ingress.ITypeNotTaken && it != ingress.ITypeTaken || b.IRetire == 0 {
		return i, nil
	}
	return i + 1, e.fastBranch(b, uint64(b.IType-ingress.ITypeNotTaken))
}

// branchCall reports whether bs[i] is a direct call Branches takes (its
// itype in calls, instructions retired, fewer than room), and pushes its
// return address when it is.
func (e *Encoder) branchCall(bs []ingress.Block, i int, calls uint32, room uint64) bool {
	if i >= len(bs) {
		return false
	}
	b := &bs[i]
	n := uint64(b.IRetire)
	if calls>>(b.IType&31)&1 == 0 || n == 0 || n >= room {
		return false
	}
	e.push(b.NextAddr())
	return true
}

// checkICNTFull reports a full I-CNT counter once a pending jump turned
// out to need no message (an implicit return): with ResourceFull RCODE=0,
// or with SYNC=4 at next, the address that follows the jump.
func (e *Encoder) checkICNTFull(next uint64) error {
	if e.icnt < e.icntMax {
		return nil
	}
	if !e.cfg.ICNTFullSync {
		return e.icntFull()
	}
	m := &e.msg
	m.Reset(TCodeProgTraceSync)
	m.Set(FieldSYNC, SyncICNTFull).Set(FieldICNT, e.icnt).Set(FieldFADDR, next>>1)
	return e.syncSent(next, e.curTime, SyncICNTFull)
}

func (e *Encoder) lastSyncTime() uint64 { return e.syncTimeBase }

// start emits the first sync message of a trace (or after TraceOff).
func (e *Encoder) start(b *ingress.Block) error {
	reason := uint64(e.cfg.StartSync)
	if e.stopped {
		reason = SyncTraceEnable
	}
	if e.restart {
		reason, e.restart = SyncFIFORestart, false
		e.st.LostHalfwords += e.st.Halfwords - e.lostFrom // retired before this block, never traced
	}
	e.started, e.stopped = true, false
	e.resetState()
	m := &e.msg
	m.Reset(TCodeProgTraceSync)
	m.Set(FieldSYNC, reason).Set(FieldICNT, 0).Set(FieldFADDR, b.IAddr>>1)
	return e.syncSent(b.IAddr, b.Time, reason)
}

// syncSent emits e.msg (a sync message) and resets the encoder state.
func (e *Encoder) syncSent(addr, t uint64, reason uint64) error {
	if err := e.emit(t); err != nil {
		return err
	}
	e.st.Syncs[reason]++
	e.resetState()
	e.addr = addr
	e.syncTimeBase = t
	e.ownSent = false
	return nil
}

// resetState clears what a sync message resets.
func (e *Encoder) resetState() {
	e.icnt, e.hist, e.histLen = 0, 1, 0
	e.pend = pendNone
	e.stack.Reset()
	e.calls = 0
	e.rptCount, e.rptLen = 0, 0
	e.pat.reset()
	if e.refPat != nil {
		e.refPat.reset()
	}
	e.haveBr, e.brCount = false, 0
	e.syncDue, e.syncCount = false, 0
	e.icntSyncDue = false
}

// ownership emits Ownership messages after a sync and on privilege or
// context changes.
func (e *Encoder) ownership(b *ingress.Block) error {
	if !e.cfg.Context {
		e.priv, e.context = b.Priv, b.Context
		return nil
	}
	if e.ownSent && b.Priv == e.priv && b.Context == e.context {
		return nil
	}
	if err := e.flushRepeats(); err != nil {
		return err
	}
	ctxChanged := !e.ownSent || b.Context != e.context
	e.priv, e.context, e.ownSent = b.Priv, b.Context, true
	format := uint64(0)
	if ctxChanged {
		format = 2
	}
	m := &e.msg
	m.Reset(TCodeOwnership)
	m.Set(FieldPROCESS, ProcessField(format, b.Priv, b.Context))
	return e.emit(b.Time)
}

// ProcessField builds the PROCESS field of an Ownership message:
// {CONTEXT, V, PRV[1:0], FORMAT[1:0]}. FORMAT 0 carries only the privilege,
// 2 the scontext and 3 the hcontext.
func ProcessField(format uint64, p ingress.Priv, context uint64) uint64 {
	var prv, v uint64
	switch p {
	case ingress.PrivU:
	case ingress.PrivS:
		prv = 1
	case ingress.PrivM, ingress.PrivD:
		prv = 3
	case ingress.PrivVU:
		v = 1
	case ingress.PrivVS:
		v, prv = 1, 1
	}
	f := format | prv<<2 | v<<4
	if format >= 2 {
		f |= context << 5
	}
	return f
}

// ParseProcess splits a PROCESS field into its format, privilege and
// context.
func ParseProcess(f uint64) (format uint64, p ingress.Priv, context uint64) {
	format = f & 3
	prv, v := f>>2&3, f>>4&1
	switch {
	case v == 0 && prv == 0:
		p = ingress.PrivU
	case v == 0 && prv == 1:
		p = ingress.PrivS
	case v == 0 && prv == 3:
		p = ingress.PrivM
	case v == 1 && prv == 0:
		p = ingress.PrivVU
	case v == 1 && prv == 1:
		p = ingress.PrivVS
	default:
		p = ingress.Priv(2) // reserved encoding
	}
	if format >= 2 {
		context = f >> 5
	}
	return
}

// icntFull reports a full I-CNT with ResourceFull RCODE=0.
func (e *Encoder) icntFull() error {
	m := &e.msg
	m.Reset(TCodeResourceFull)
	m.Set(FieldRCODE, RCodeICNT).Set(FieldRDATA, e.icnt)
	e.icnt = 0
	return e.emit(e.curTime)
}

// branch records a conditional branch outcome (or, with AllJumps, a direct
// jump as a taken branch).
func (e *Encoder) branch(taken bool, b *ingress.Block) error {
	if e.cfg.Mode == BTM {
		if !taken {
			return nil
		}
		if e.syncDue {
			e.pend = pendDirect
			e.pendTime = b.Time
			return nil
		}
		m := &e.msg
		m.Reset(TCodeDirectBranch)
		m.Set(FieldICNT, e.icnt)
		return e.branchMessage(b.Time)
	}
	bit := uint64(0)
	if taken {
		bit = 1
	}
	if e.cfg.HistPatterns {
		if e.refPat != nil {
			return e.refPat.add(e, bit)
		}
		return e.pat.add(e, bit)
	}
	full := e.cfg.histBits() - 1
	if !e.cfg.EagerHistFull && e.histLen == full {
		keep, n, err := e.histFull(e.hist, e.histLen)
		if err != nil {
			return err
		}
		e.hist, e.histLen = keep, n
	}
	e.hist = e.hist<<1 | bit
	e.histLen++
	if e.cfg.EagerHistFull && e.histLen == full {
		keep, n, err := e.histFull(e.hist, e.histLen)
		if err != nil {
			return err
		}
		e.hist, e.histLen = keep, n
	}
	return nil
}

// histFull reports a full HIST register (value h with its stop bit, n
// history bits). It returns what stays in the register (a stop bit and
// leftover bits).
//
// With repeated history, the record is held back and compared with the
// next full register: an identical one only counts a repeat (RCODE=2).
// With a 32-bit register, the second record is also checked for a period
// of 30 or 28 bits (30 and 28 have every divisor from 1 to 7, so loops of
// up to 7 branches repeat): the records become 30 or 28 bits long and the
// 1 or 3 bits of each register beyond them stay for the next record.
func (e *Encoder) histFull(h uint64, n int) (uint64, int, error) {
	if !e.cfg.RepeatedHistory {
		m := &e.msg
		m.Reset(TCodeResourceFull)
		m.Set(FieldRCODE, RCodeHist).Set(FieldRDATA, h)
		return 1, 0, e.emit(e.curTime)
	}
	if e.rptCount > 0 && e.rptCount < e.cfg.hrepeatMax() {
		shift := uint(n - e.rptLen)
		if h>>shift == e.rptHist {
			e.rptCount++
			return 1<<shift | h&(1<<shift-1), int(shift), nil
		}
		if e.rptCount == 1 && e.rptLen == 31 && n == 31 {
			for _, l := range []int{28, 30} {
				if periodic(e.rptHist, h, l) {
					shift := uint(31 - l)
					e.rptHist >>= shift
					e.rptLen, e.rptCount = l, 2
					keep := 2 * shift
					return 1<<keep | h&(1<<keep-1), int(keep), nil
				}
			}
		}
	}
	if err := e.flushRepeats(); err != nil {
		return 0, 0, err
	}
	e.rptHist, e.rptLen, e.rptCount = h, n, 1
	return 1, 0, nil
}

// periodic reports whether the first 2*l of the 62 history bits of two
// consecutive full 31-bit registers a and b (stop bits at bit 31) repeat
// with period l.
func periodic(a, b uint64, l int) bool {
	seq := (a&(1<<31-1))<<31 | b&(1<<31-1) // bit 61 is the oldest
	bit := func(i int) uint64 { return seq >> uint(61-i) & 1 }
	for i := l; i < 2*l; i++ { // two whole periods; the rest stays in HIST
		if bit(i) != bit(i-l) {
			return false
		}
	}
	return true
}

// flushRepeats emits the HIST record held for repeat detection, and a
// RepeatBranch for repeated branch messages.
func (e *Encoder) flushRepeats() error {
	if e.brCount > 0 {
		m := &e.msg
		m.Reset(TCodeRepeatBranch)
		m.Set(FieldBCNT, e.brCount)
		e.brCount = 0
		if err := e.emit(e.curTime); err != nil {
			return err
		}
	}
	if e.cfg.HistPatterns {
		var err error
		if e.refPat != nil {
			err = e.refPat.flushRun(e)
		} else {
			err = e.pat.flushRun(e)
		}
		if err != nil {
			return err
		}
	}
	if e.rptCount == 0 {
		return nil
	}
	m := &e.msg
	m.Reset(TCodeResourceFull)
	if e.rptCount == 1 {
		m.Set(FieldRCODE, RCodeHist).Set(FieldRDATA, e.rptHist)
	} else {
		m.Set(FieldRCODE, RCodeHistRepeat).Set(FieldRDATA, e.rptHist).Set(FieldHREPEAT, e.rptCount)
	}
	e.rptCount = 0
	return e.emit(e.curTime)
}

// takeHist returns the HIST field for a flow message and empties the
// register (in pattern mode, the bits not yet sent in records).
func (e *Encoder) takeHist() (uint64, error) {
	if e.cfg.HistPatterns {
		if e.refPat != nil {
			return e.refPat.take(e)
		}
		return e.pat.take(e)
	}
	if err := e.flushRepeats(); err != nil {
		return 0, err
	}
	h := e.hist
	e.hist, e.histLen = 1, 0
	return h, nil
}

// uninferable handles a block ending in an instruction whose target the
// decoder cannot infer.
func (e *Encoder) uninferable(it ingress.IType, b *ingress.Block) error {
	// Sequentially inferable jump: the auipc/lui/c.lui that loads its
	// target retired just before it with no message in between, so the
	// decoder sees both in one I-CNT walk.
	if e.cfg.SequentialJump && b.SIJump && sijumpIType(it) {
		inBlock := uint64(b.IRetire) > uint64(1)<<b.ILastSize
		if inBlock || e.sinceMsg > uint64(b.IRetire) {
			if it.Pops() {
				e.pop()
			}
			if it.Pushes() {
				e.push(b.NextAddr())
			}
			return nil
		}
	}
	e.pend = pendIndirect
	e.pendBType = BTypeIndirect
	e.pendTime = b.Time
	e.pendPred = false
	if e.cfg.ImplicitReturn != ReturnOff && it.Pops() {
		e.pendPred, e.pendAddr = e.pop()
	}
	if it.Pushes() {
		e.push(b.NextAddr())
	}
	return nil
}

// sijumpIType reports the itypes for which the ingress sijump signal
// counts (E-Trace: 6, 8, 10, 12 and 14).
func sijumpIType(it ingress.IType) bool {
	switch it {
	case ingress.ITypeUninferable, ingress.ITypeIndirectCall, ingress.ITypeIndirectJump,
		ingress.ITypeCoSwap, ingress.ITypeOtherIndirect:
		return true
	}
	return false
}

// push records a call's return address.
func (e *Encoder) push(ret uint64) {
	switch e.cfg.ImplicitReturn {
	case ReturnOff:
	case ReturnCount:
		if e.calls < e.callsMax {
			e.calls++
		}
	default:
		e.stack.Push(ret) // a full stack drops its oldest entry
	}
}

// pop returns the predicted return address, if the stack has one.
func (e *Encoder) pop() (bool, uint64) {
	switch e.cfg.ImplicitReturn {
	case ReturnCount:
		if e.calls == 0 {
			return false, 0
		}
		e.calls--
		return true, 0
	default:
		a, ok := e.stack.Pop()
		return ok, a
	}
}

// predicted reports whether the stacked prediction matches the target.
func (e *Encoder) predicted(target uint64) bool {
	if !e.pendPred {
		return false
	}
	switch e.cfg.ImplicitReturn {
	case ReturnCount:
		return true
	case ReturnPartial:
		bits := e.cfg.PartialBits
		if bits <= 0 || bits > 63 {
			bits = 16
		}
		mask := uint64(1)<<uint(bits) - 1
		return e.pendAddr&mask == target&mask
	}
	return e.pendAddr == target
}

// complete emits the pending message now that the next address is known.
func (e *Encoder) complete(next uint64) error {
	// Records of the history before the jump carry the jump's time.
	now := e.curTime
	e.curTime = e.pendTime
	defer func() { e.curTime = now }()
	kind := e.pend
	e.pend = pendNone
	if kind == pendIndirect && e.predicted(next) {
		// Implicit return: nothing to send.
		if e.syncDue {
			return e.linearSync(next, SyncPeriodic)
		}
		// No message carries I-CNT after all: a counter that the return's
		// block made full is reported now, before the next block counts
		// (the specification's overflow bit covers one ingress cycle).
		return e.checkICNTFull(next)
	}
	m := &e.msg
	sync := e.syncDue
	btype := e.pendBType
	if kind == pendDirect {
		m.Reset(TCodeDirectBranchSync)
		m.Set(FieldSYNC, SyncPeriodic).Set(FieldICNT, e.icnt).Set(FieldFADDR, next>>1)
		return e.syncSent(next, e.pendTime, SyncPeriodic)
	}
	if e.cfg.Mode == BTM {
		if sync {
			m.Reset(TCodeIndirectBranchSync)
			m.Set(FieldSYNC, SyncPeriodic).Set(FieldBTYPE, btype).Set(FieldICNT, e.icnt).Set(FieldFADDR, next>>1)
			return e.syncSent(next, e.pendTime, SyncPeriodic)
		}
		m.Reset(TCodeIndirectBranch)
		m.Set(FieldBTYPE, btype).Set(FieldICNT, e.icnt).Set(FieldUADDR, (next^e.addr)>>1)
		e.icnt = 0
		e.addr = next
		return e.branchMessage(e.pendTime)
	}
	h, err := e.takeHist()
	if err != nil {
		return err
	}
	if sync {
		m.Reset(TCodeIndirectBranchHistSync)
		m.Set(FieldSYNC, SyncPeriodic).Set(FieldBTYPE, btype).Set(FieldICNT, e.icnt).
			Set(FieldFADDR, next>>1).Set(FieldHIST, h)
		return e.syncSent(next, e.pendTime, SyncPeriodic)
	}
	if h == 1 && e.cfg.IndirectNoHist {
		m.Reset(TCodeIndirectBranch)
		m.Set(FieldBTYPE, btype).Set(FieldICNT, e.icnt).Set(FieldUADDR, (next^e.addr)>>1)
	} else {
		m.Reset(TCodeIndirectBranchHist)
		m.Set(FieldBTYPE, btype).Set(FieldICNT, e.icnt).Set(FieldUADDR, (next^e.addr)>>1).Set(FieldHIST, h)
	}
	e.icnt = 0
	e.addr = next
	return e.branchMessage(e.pendTime)
}

// branchMessage sends e.msg, a branch message without SYNC, or counts it
// as a repeat of the previous one (RepeatBranch).
func (e *Encoder) branchMessage(t uint64) error {
	if e.cfg.Mode == BTM {
		e.icnt = 0
	}
	if !e.cfg.RepeatBranch {
		return e.emit(t)
	}
	m := &e.msg
	if e.haveBr && m.TCode == e.lastBr.TCode && m.Has == e.lastBr.Has && m.V == e.lastBr.V &&
		(m.TCode == TCodeDirectBranch || m.Get(FieldUADDR) == 0) && e.brCount < e.cfg.bcntMax() {
		e.brCount++
		return nil
	}
	if err := e.emit(t); err != nil {
		return err
	}
	e.lastBr, e.haveBr = *m, true
	e.lastBr.Has &^= 1<<FieldTSTAMP | 1<<FieldSRC
	e.lastBr.V[FieldTSTAMP], e.lastBr.V[FieldSRC] = 0, 0
	return nil
}

// linearSync emits a synchronising message on linear code, before the
// instruction at next: ProgTraceSync, or IndirectBranchHistSync (B-TYPE=0)
// in HTM when history is pending.
func (e *Encoder) linearSync(next uint64, reason uint64) error {
	m := &e.msg
	if e.cfg.Mode == HTM {
		h, err := e.takeHist()
		if err != nil {
			return err
		}
		if h != 1 {
			m.Reset(TCodeIndirectBranchHistSync)
			m.Set(FieldSYNC, reason).Set(FieldBTYPE, BTypeIndirect).Set(FieldICNT, e.icnt).
				Set(FieldFADDR, next>>1).Set(FieldHIST, h)
			return e.syncSent(next, e.curTime, reason)
		}
	} else if err := e.flushRepeats(); err != nil {
		return err
	}
	m.Reset(TCodeProgTraceSync)
	m.Set(FieldSYNC, reason).Set(FieldICNT, e.icnt).Set(FieldFADDR, next>>1)
	return e.syncSent(next, e.curTime, reason)
}

// correlation emits ProgTraceCorrelation with everything the encoder
// holds: the end of a trace (or of a traced region).
func (e *Encoder) correlation(evcode uint64) error {
	// A jump or trap whose target never came is still counted in I-CNT:
	// the decoder walks up to it and stops there.
	e.pend = pendNone
	m := &e.msg
	if e.cfg.Mode == HTM {
		h, err := e.takeHist()
		if err != nil {
			return err
		}
		m.Reset(TCodeProgTraceCorrelation)
		m.Set(FieldEVCODE, evcode).Set(FieldCDF, 1).Set(FieldICNT, e.icnt).Set(FieldHIST, h)
	} else {
		if err := e.flushRepeats(); err != nil {
			return err
		}
		m.Reset(TCodeProgTraceCorrelation)
		m.Set(FieldEVCODE, evcode).Set(FieldCDF, 0).Set(FieldICNT, e.icnt)
	}
	e.icnt = 0
	return e.emit(e.curTime)
}

// TraceOff reports that tracing stops after the last block given (a
// filter or trigger turned it off): ProgTraceCorrelation with EVCODE=4.
// The next block restarts tracing with SYNC=5.
func (e *Encoder) TraceOff() error {
	if e.stopped {
		return nil
	}
	if !e.started {
		// Trace starts disabled (corner case table): say so.
		e.resetState()
		if err := e.correlation(EVCodeDisabled); err != nil {
			return err
		}
		e.stopped = true
		return nil
	}
	if err := e.correlation(EVCodeDisabled); err != nil {
		return err
	}
	e.started, e.stopped = false, true
	return nil
}

// Notify asks for the address that follows the next block to be reported
// with a Trace Event sync message (SYNC=6).
func (e *Encoder) Notify() error {
	e.notify = true
	return nil
}

// Close ends the trace with a ProgTraceCorrelation message (EVCODE from
// the configuration) and flushes the output.
func (e *Encoder) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	if e.lost {
		// The capture ends: the FIFO drains, and the Error message says
		// that the end of the trace was lost.
		e.st.LostHalfwords += e.st.Halfwords - e.lostFrom
		e.lost, e.cfg.FIFOBytes = false, 0
		m := &e.msg
		m.Reset(TCodeError)
		m.Set(FieldETYPE, ETypeFIFOOverrun).Set(FieldECODE, 1<<2)
		if err := e.emit(e.curTime); err != nil {
			return err
		}
		e.st.Errors++
		e.started = false
	} else if e.restart {
		// Lost until the end, Error message already sent.
		e.st.LostHalfwords += e.st.Halfwords - e.lostFrom
	}
	if e.started && !e.cfg.NoFinalSync {
		if err := e.correlation(uint64(e.cfg.EndEVCode)); err != nil {
			return err
		}
	}
	if err := e.w.Flush(); err != nil {
		return err
	}
	return nil
}
