package ntrace

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sync/atomic"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/decode/walk"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// DecoderConfig is what the decoder must know about the encoder's
// configuration: the wire format (SRC width, ExtendAddrMSB, XLEN) and
// whether direct jumps were reported as taken branches. Everything else
// (implicit returns, sequential jumps, repeated history, timestamps) is
// recognised from the messages themselves; the mode may be given or
// learned.
type DecoderConfig struct {
	Wire     WireConfig
	AllJumps bool
	// Mode is the trace mode (BTM or HTM) when known. 0 learns it for
	// each source from the first message that shows it (a HIST field:
	// HTM; a DirectBranch: BTM). Once it is known, a message of the
	// other mode and, in HTM, a conditional branch walked without a HIST
	// bit are inconsistencies (gaps).
	Mode Mode
	// TrapBType says how the encoder reports traps in B-TYPE: 1 (always
	// 1) or 2 (2 for exceptions, 3 for interrupts); 0 learns it for each
	// source from the first trap. N-Trace asks for one or the other,
	// consistently: a trap reported the other way is an inconsistency.
	TrapBType int
	// ICNTBits is the width of the encoder's I-CNT counter with its
	// overflow bit (Config.ICNTBits) when known: a full counter is
	// reported at once, so an I-CNT beyond it (by more than the last
	// block retired) is wrong, and a ResourceFull or SYNC=4 below it is
	// too; a ResourceFull RCODE=0 must also say it was full where an
	// instruction ends, in a block that began with it not full. 0 checks
	// only the specification's maximum.
	ICNTBits int
	// NoICNTFullSync says the encoder reports a full I-CNT counter
	// (ICNTBits) with ResourceFull RCODE=0 only, never with SYNC=4
	// (Config.ICNTFullSync off): the end of a BTM trace is then checked
	// against the counter as that of an HTM trace (checkFullBlock).
	NoICNTFullSync bool
	// NoImplicitReturn and NoSequentialJump say the encoder has those
	// optimizations off (trTeInstImplicitReturnMode=0,
	// trTeInstEnSequentialJump=0): a return or a sequentially inferable
	// jump walked past without a message is then an inconsistency. By
	// default the decoder follows them whenever the trace needs it.
	NoImplicitReturn, NoSequentialJump bool
	// NoRepeatBranch and NoRepeatedHistory say the encoder sends no
	// RepeatBranch and no ResourceFull RCODE=2
	// (trTeInstEnRepeatedHistory=0): such a message is then an
	// inconsistency (a corrupt TCODE or RCODE).
	NoRepeatBranch, NoRepeatedHistory bool
	// BCntMax is the largest B-CNT the encoder's RepeatBranch counts
	// (Config.BCntBits), when known: with OwnEncoder, a branch message
	// equal to the last one is sent only after a RepeatBranch of that
	// count (checkRepeat). 0: not known.
	BCntMax uint64
	// NoContext says the encoder sends no Ownership messages
	// (trTeContext=0): one is then an inconsistency. By default the
	// decoder learns it at each sync (Ownership follows every sync when
	// enabled).
	NoContext bool
	// StopCodes, when not 0, has bit e set for each EVCODE the encoder
	// ends a trace with (ProgTraceCorrelation): another is an
	// inconsistency.
	StopCodes uint16
	// OwnEncoder says the trace comes from rvtrace's encoder
	// (DecoderConfigFrom sets it): message choices it never makes, such
	// as IndirectBranchSync in HTM, are then inconsistencies.
	OwnEncoder bool
	// StartSync is the SYNC code of the first message of a trace of
	// rvtrace's encoder (Config.StartSync; DecoderConfigFrom sets it):
	// with OwnEncoder, a sync after the end message has that code (a new
	// encoder, as when trTeEnable goes 0 -> 1 again) or SYNC=5 (trace
	// enable, after TraceOff). 0: any code.
	StartSync uint8
	// ReturnStack says the encoder predicts returns with a stack of full
	// addresses as deep as StackDepth (trTeInstImplicitReturnMode=3): a
	// return reported to the very address the stack predicts is then an
	// inconsistency.
	ReturnStack bool
	// ReturnPartialBits, when not 0, says the encoder predicts returns
	// with a stack as deep as StackDepth and compares only that many low
	// address bits (trTeInstImplicitReturnMode=2, Config.PartialBits): a
	// return reported to an address whose low bits are those the stack
	// predicts is then an inconsistency.
	ReturnPartialBits int
	// ShortestFields says the encoder writes every variable-length field
	// in its shortest form, as rvtrace's does: a field with a redundant
	// most significant chunk (an inserted byte, typically) is then
	// malformed. N-Trace does not require it, so it is off by default.
	ShortestFields bool
	// LazyHistFull says the encoder reports a full HIST register when the
	// next branch needs room in it (rvtrace's encoder without
	// Config.EagerHistFull and HistPatterns), so at a branch after the
	// record's last one: with ICNTBits known, a ResourceFull RCODE=0 sent
	// after such a record comes at that branch or later.
	LazyHistFull bool
	// ITypeWidth is the width of the itype of the ingress port that fed
	// the encoder (Config.ITypeWidth) when known. With 4 bits a direct
	// jump or call has its own itype (9, 11 or 15), so it ends its ingress
	// block and a trap right after one is a block of its own, as after a
	// conditional branch: a trap reported by a periodic sync message whose
	// walk ends on a direct jump is then an inconsistency. With 3 bits a
	// direct jump has itype 0 and a trap may end its block. 0: not known
	// (as 3).
	ITypeWidth int
	// NoIdle says the encoder sends no idle bytes (0xFF) between
	// messages, as rvtrace's does: idle bytes met while a source is being
	// decoded are then a gap (an inserted byte that ends a message early,
	// typically). N-Trace allows idles anywhere, so it is off by default.
	NoIdle bool
	// CountBits is the width of the encoder's nesting counter when it
	// uses the counting implicit return (trTeInstImplicitReturnMode=1):
	// the decoder mirrors the counter, so a return walked past with the
	// count at 0, or reported with a count above 0, is an inconsistency.
	// 0: not known.
	CountBits int
	// HistBits is the width of the encoder's HIST register with its stop
	// bit when known (and its records are not shortened, as
	// Config.HistPatterns does): a ResourceFull HIST record then has
	// exactly HistBits-1 history bits (or, repeated from a 32-bit register,
	// 28 or 30), and a flow message's HIST at most that. 0: not checked.
	HistBits int
	// SyncMode and SyncMax are the periodic sync controls
	// (trTeInstSyncMode, trTeInstSyncMax) when known: with SyncMessages
	// or SyncHalfwords, a periodic sync (SYNC=2) must come after the
	// period and not much later, or what the decoder walked since the
	// previous sync is wrong. 0 (SyncOff) checks nothing.
	SyncMode, SyncMax int
	// StackDepth bounds the decoder's return-address stack; it must be
	// at least the encoder's. 0 means 1024, enough for every mode.
	StackDepth int
	// JVT is the base address of the Zcmt jump table (the jvt CSR) when
	// the traced code uses cm.jt/cm.jalt; the decoder reads the targets
	// from the image, as N-Trace treats table jumps as inferable. 0 means
	// unknown: a table jump on the traced path is then a gap.
	JVT uint64
	// MaxInstructions stops decoding with ErrTooManyInstructions once
	// that many instructions were decoded (0: no limit). Repeat counts
	// let a few bytes describe billions of instructions; this bounds the
	// work a hostile or corrupt trace can cause.
	MaxInstructions uint64
	// Sources lists the SRC values of the encoders sharing the trace: a
	// message with another SRC is a gap in every source (its SRC field
	// is corrupt, or the configuration is wrong). nil accepts any SRC.
	Sources []uint32
	// VendorMessages says the encoder emits vendor-defined messages
	// (TCODE 56..62, ResourceFull RCODE 8..15) that carry no program
	// flow: they are then skipped with a warning. By default such a
	// message in a synchronised source is a gap: N-Trace leaves their
	// meaning to the vendor and warns that one may be a corrupt capture,
	// so the decoder cannot know the flow did not depend on it.
	VendorMessages bool
	// Decode holds the options every protocol's decoder shares.
	Decode decode.Options
}

// ErrTooManyInstructions is returned by Decode when
// DecoderConfig.MaxInstructions is reached.
var ErrTooManyInstructions = errors.New("instruction limit reached")

// Limits of the specification ("Maximum Field Sizes"), and the hard
// bounds the decoder keeps so that a corrupt field cannot ask for an
// unbounded walk.
const (
	maxICNTSpec = 1<<22 - 1 // NTRACE_MAX_ICNT: beyond it a value is used with a warning
	maxICNT     = 1<<32 - 1 // hard bound on one I-CNT value (and on the walk a message may ask for)
	maxHRepeat  = 1<<18 - 1 // NTRACE_MAX_HREPEAT
	maxBCnt     = 1<<18 - 1 // NTRACE_MAX_BCNT
	maxHist     = 1<<32 - 1 // NTRACE_MAX_HIST: 32 bits with the stop bit
)

// DecoderConfigFrom returns the decoder configuration matching an encoder
// configuration of rvtrace's encoder, with every check that knowing it
// allows (mode, B-TYPE style, I-CNT and HIST widths, sync period, the
// optimizations that are off, the implicit-return stack or counter,
// shortest-form fields, the EVCODEs sent). A decoder for a trace of
// unknown origin sets only Wire and AllJumps and learns the rest.
func DecoderConfigFrom(c Config) DecoderConfig {
	bt := 2
	if c.TrapBType1 {
		bt = 1
	}
	dc := DecoderConfig{Wire: c.Wire(), AllJumps: c.AllJumps, Mode: c.Mode, TrapBType: bt, SyncMode: c.SyncMode,
		SyncMax: c.SyncMax, ICNTBits: c.ICNTBits, NoICNTFullSync: !c.ICNTFullSync, NoImplicitReturn: c.ImplicitReturn == ReturnOff,
		NoSequentialJump: !c.SequentialJump, NoRepeatBranch: !c.RepeatBranch, NoRepeatedHistory: !c.RepeatedHistory,
		ShortestFields: true, NoIdle: true, NoContext: !c.Context, OwnEncoder: true,
		StopCodes: 1<<c.EndEVCode | 1<<EVCodeDisabled, ITypeWidth: 4}
	if c.ITypeWidth == 3 {
		dc.ITypeWidth = 3
	}
	if c.RepeatBranch {
		dc.BCntMax = c.bcntMax()
	}
	dc.StartSync = c.StartSync
	if dc.StartSync == 0 {
		dc.StartSync = SyncReset // (NewEncoder's default)
	}
	dc.LazyHistFull = c.Mode == HTM && !c.EagerHistFull && !c.HistPatterns
	if !c.HistPatterns && c.Mode == HTM {
		dc.HistBits = c.histBits()
	}
	if c.ImplicitReturn == ReturnFull || c.ImplicitReturn == ReturnPartial {
		dc.StackDepth = c.stackDepth() // the same stack: a return it could not predict has a message
		dc.ReturnStack = c.ImplicitReturn == ReturnFull
		if c.ImplicitReturn == ReturnPartial {
			dc.ReturnPartialBits = c.PartialBits
			if dc.ReturnPartialBits <= 0 || dc.ReturnPartialBits > 63 {
				dc.ReturnPartialBits = 16 // as the encoder
			}
		}
	}
	if c.ImplicitReturn == ReturnCount {
		dc.CountBits = c.StackDepth
		if dc.CountBits == 0 {
			dc.CountBits = maxCountBits
		}
	}
	return dc
}

// Decoder reconstructs the instruction flow from N-Trace messages and the
// program image (N-Trace chapter 11, "Decoding Algorithm Principles"),
// writing flow events to a sink. Messages of each SRC value are decoded
// independently; events carry the SRC in Event.Src.
//
// Integrity comes first (see package decode): every gap is a flow.KindGap
// event whose Err is a *decode.Error with the byte offset and index of the
// message. Every synchronising message met while its source is already
// synchronised is a checkpoint: where the message semantics make them
// comparable (a sync on linear code, a taken direct branch), the address
// the decoder reached must be the F-ADDR it states, or a gap with
// decode.ErrCheckpoint counts the instructions emitted since the last
// point known good as Suspect. Decoding then resumes at the next sync
// message, not at the disputed F-ADDR: it may be the corrupt part, and a
// walk from a wrong address often merges back into the true path before
// the next checkpoint, which would then not see it. A trace must
// start with a sync and end each source with ProgTraceCorrelation, unless
// DecoderConfig.Decode.AllowTruncated.
type Decoder struct {
	cfg DecoderConfig
	// w follows the address space of the source's context (w.Img: a view
	// of w.Base) with its blocks, and builds the range and gap events
	w       walk.Walker
	obs     flow.MessageObserver // the sink, when it counts messages
	xlen    int
	srcs    map[uint64]*srcState
	order   []*srcState // sources in the order they appeared
	one     *srcState   // fast path: the state of the last SRC seen
	oneID   uint64
	ev      flow.Event
	st      Stats
	cur     *Message // message being handled (for error offsets)
	curIdx  int64    // its index in the trace
	index   int64    // messages (and malformed byte runs) read so far
	anySync bool     // some source has synchronised
	// outsideSyncs counts the sync messages whose address is outside every
	// image, firstOutside is the first such address.
	outsideSyncs uint64
	firstOutside uint64
	cutMsg       bool // the trace ends inside a message
	pcKnown      bool // the last walk ended at an inferred address (s.pc)
	// the return address the stack held for a return ending the walk
	popped      uint64
	poppedOK    bool
	inferredEnd bool   // the walk ended on an uninferable jump the decoder inferred
	walkRanges  int    // ranges the I-CNT walk of the current message emitted
	ranges      uint64 // ranges emitted so far
	// of those, the ranges ending on a direct jump or call that a block
	// may go on past (joinJumps): the others each end a block
	walkJoins int
	joins     uint64
	// joinJumps says the ingress port may go on with a block past a
	// direct jump or call (an itype of 3 bits, or not known, without
	// AllJumps): the ranges the walk ends there are then not blocks
	// (srcState.chain).
	joinJumps bool
	// A decoder of a piece of the trace (parallel.go): revDep says that a
	// check read the last range before this decoder emitted one
	// (lastRange: it then depends on the range before the piece), openDep
	// that a decision depended on whether the instructions before the
	// piece hold some suspect (decode.Tally.Open).
	revDep, openDep bool
	// where the reader of the last loop that read to the end of its bytes
	// stopped: skipping bytes after an error, and the idle bytes read
	// since the last message; the reader of a piece that goes on from
	// there starts so (parallel.go)
	tailResync     bool
	tailIdles      int64
	pieces, redone int // of the last DecodeJobs
	// what the sources of a decoder of a piece start with when the
	// configuration does not say (the trace mode and B-TYPE style
	// learned up to the pieces joined), and where DecodeJobs keeps it
	seedMode  Mode
	seedBType int
	hint      atomic.Uint64
	// a decoder of a piece of a trace of several sources (multipar.go):
	// not nil while it decodes the piece, and the trace mode and B-TYPE
	// style each source learned up to the pieces joined (in DecodeJobs's
	// decoder)
	spec  *multiSpec
	hints srcHints
}

// srcState is the decoding state of one trace source.
type srcState struct {
	id        uint32
	context   uint64 // the source's context (Ownership)
	synced    bool   // decoding: s.pc is known
	seen      bool   // has synchronised at least once
	ended     bool   // ended cleanly by ProgTraceCorrelation
	lost      bool   // in a reported gap: skip to the next sync
	mode      Mode   // trace mode, given or learned (0: not known yet)
	btype     int    // trap B-TYPE style, given or learned (0: not known yet)
	ts        bool   // messages carry TSTAMP (learned at each sync)
	ctx       int8   // Ownership messages follow syncs: 1 yes, 0 no, -1 not known yet
	lastMsg   TCode  // previous message of the source
	prevMsg   TCode  // the one before the current message
	lastBT    uint64
	tally     decode.Tally // instructions emitted, and since the last point known good
	hwSync    uint64       // halfwords reported since the last sync
	msgSync   uint64       // messages since the last sync
	fillSync  uint64       // of which ResourceFull and Ownership messages
	dueExact  bool         // a branch message completed the sync period counting messages (checkDueWalk)
	dueRanges uint64       // Decoder.ranges-Decoder.joins after that message (checkDueBlock)
	dueHist   bool         // a HIST record (ResourceFull RCODE=1) completed the period (checkDueHist)
	dueFull   bool         // a ResourceFull RCODE=0 completed the period, or came after dueExact (checkDueFull)
	fullLast  bool         // the latter: the sync follows the block that filled the counter
	pc        uint64       // next instruction to execute
	addr      uint64       // reference for U-ADDR
	icntAcc   int64        // I-CNT reported by ResourceFull RCODE=0 since the last I-CNT field
	used      int64        // halfwords walked since the last I-CNT field
	stack     decode.ReturnStack
	calls     uint64 // the encoder's nesting counter (DecoderConfig.CountBits)
	callsMax  uint64
	last      lastBranch // last branch message, for RepeatBranch
	haveBr    bool
	lastBCnt  uint64 // B-CNT of the last RepeatBranch (checkRepeat)
	time      uint64
	hasTime   bool
	priv      ingress.Priv
	prevIn    *riscv.Inst // last instruction walked (sequential jumps)
	prevPC    uint64
	prevOK    bool
	// a FIFO overflow reported by an Error message, waiting for the sync
	// that resumes the trace
	ovPending bool
	ovErr     decode.Error
	ovPC      uint64
	ovPCKnown bool

	// Where ResourceFull RCODE=0 messages said the I-CNT counter was
	// full (halfwords since the last I-CNT field), not walked yet
	// (checkFullPoints): rfPts[rfHead:], the walk having reached rfPos;
	// rfBase is where the counter was last reset.
	rfPts         []int64
	rfHead        int
	rfPos, rfBase int64
	lastFull      uint64 // hwSync where the last ResourceFull RCODE=0 said the counter was full (0: none since the sync)
	// LazyHistFull: a HIST record was walked since the last ResourceFull
	// RCODE=0 (histRec), and the branch after it, where it was sent, must
	// end by histBound (when not 0), where a ResourceFull RCODE=0 sent
	// after it said the counter was full.
	histRec   bool
	histBound int64
	// LazyHistFull without repeated history: a HIST record came after a
	// ResourceFull RCODE=0 saying the counter was full after histFloor
	// halfwords (when not 0), so the branch after the record, where it was
	// sent, ends after that point: had it ended there, at the end of the
	// block that filled the counter, the record would have come first.
	histFloor int64
	// With Decoder.joinJumps: the halfwords of the ranges the walk of the
	// current message emitted last that each end on a direct jump or call
	// (0 after any other range; a message's walk begins a block), which
	// the block that goes on in the next range may hold too (chain), and
	// the same before the last range emitted (chainLast): the last block
	// retired began that much before that range at the earliest.
	chain, chainLast uint64
	// in a piece's primer (multipar.go): the source has had no sync
	// message in the piece yet, and its messages are not decoded
	wait bool
	// Of rvtrace's encoder, whose time matters counting cycles
	// (SyncCycles) and with timestamps: syncTime says whether the last
	// sync was sent at the start of an ingress block with that block's
	// time (1: on linear code, or a start), or with the time of the block
	// before (0: a pending jump's or trap's message, or after a return
	// its stack predicted), or is not known (-1: a piece's first sync
	// that may be either, parallel.go); syncInsts is
	// Stats.Instructions at that sync, syncTrap that a trap was reported
	// since (a trap may be a block of its own that retires nothing).
	syncTime  int8
	syncTrap  bool
	syncInsts uint64
	// Counting cycles with timestamps: syncAt is the time of the last
	// sync, and cycleDue says that a ResourceFull RCODE=0 stamped a sync
	// period after it or later came since (checkCycleTime).
	syncAt   uint64
	cycleDue bool
}

// lastBranch is what RepeatBranch repeats of the last branch message:
// its TCODE and flow fields (a whole Message is several times larger,
// and holds a pointer, which makes the copy for every branch message
// costly).
type lastBranch struct {
	tcode                    TCode
	has                      uint32
	btype, icnt, uaddr, hist uint64
	offset                   int64
}

// set records m.
func (b *lastBranch) set(m *Message) {
	b.tcode, b.has, b.offset, b.icnt = m.TCode, m.Has&lastBranchFields, m.Offset, m.V[FieldICNT]
	if b.has&^(1<<FieldICNT) != 0 {
		b.btype, b.uaddr, b.hist = m.V[FieldBTYPE], m.V[FieldUADDR], m.V[FieldHIST]
	}
}

// checkRepeat checks a branch message m of rvtrace's encoder with
// RepeatBranch on against the last one (prev is the TCODE of the message
// before m): the encoder counts a message equal to the last branch message
// it sent (a DirectBranch, or one whose U-ADDR is 0) in a RepeatBranch,
// and sends it again only once that count reached its maximum
// (DecoderConfig.BCntMax), right after the RepeatBranch of that count.
// (TestThreeBitIntegrity: DirectBranch I-CNT=47, RepeatBranch B-CNT=1,
// DirectBranch I-CNT=53, RepeatBranch B-CNT=1, the first I-CNT turned
// into 53.)
func (d *Decoder) checkRepeat(s *srcState, m *Message, prev TCode) error {
	l := &s.last
	if m.TCode != l.tcode || m.Has&lastBranchFields != l.has || m.V[FieldICNT] != l.icnt ||
		m.TCode != TCodeDirectBranch && m.V[FieldUADDR] != 0 {
		return nil
	}
	if l.has&^(1<<FieldICNT) != 0 && (m.V[FieldBTYPE] != l.btype || m.V[FieldUADDR] != l.uaddr || m.V[FieldHIST] != l.hist) {
		return nil
	}
	if prev == TCodeRepeatBranch && (d.cfg.BCntMax == 0 || s.lastBCnt == d.cfg.BCntMax) {
		return nil
	}
	return d.inconsistent("%s equal to the branch message at byte %d, which the encoder would count in a RepeatBranch",
		m.TCode, l.offset)
}

// lastBranchFields are the fields lastBranch keeps.
const lastBranchFields = 1<<FieldBTYPE | 1<<FieldICNT | 1<<FieldUADDR | 1<<FieldHIST

// message returns the recorded message (without TSTAMP).
func (b *lastBranch) message(m *Message) {
	*m = Message{TCode: b.tcode, Has: b.has, Offset: b.offset}
	m.V[FieldICNT] = b.icnt
	if b.has&^(1<<FieldICNT) != 0 {
		m.V[FieldBTYPE], m.V[FieldUADDR], m.V[FieldHIST] = b.btype, b.uaddr, b.hist
	}
}

// NewDecoder returns a decoder writing the flow to sink, or an error when
// cfg is not valid.
func NewDecoder(img *image.Set, sink flow.Sink, cfg DecoderConfig) (*Decoder, error) {
	if img == nil || sink == nil {
		return nil, errors.New("ntrace: NewDecoder needs an image and a sink")
	}
	if cfg.Wire.XLEN == 0 {
		cfg.Wire.XLEN = img.XLEN()
	}
	switch {
	case cfg.Wire.XLEN != 32 && cfg.Wire.XLEN != 64:
		return nil, fmt.Errorf("ntrace: XLEN must be 32 or 64, not %d", cfg.Wire.XLEN)
	case cfg.Wire.SrcBits < 0 || cfg.Wire.SrcBits > 12:
		return nil, fmt.Errorf("ntrace: trTeSrcBits must be 0..12, not %d", cfg.Wire.SrcBits)
	case cfg.Mode != 0 && cfg.Mode != BTM && cfg.Mode != HTM:
		return nil, fmt.Errorf("ntrace: trace mode must be BTM (3) or HTM (6), not %d", cfg.Mode)
	case cfg.SyncMode < 0 || cfg.SyncMode > 3 || cfg.SyncMax < 0 || cfg.SyncMax > 15:
		return nil, fmt.Errorf("ntrace: sync mode %d / sync max %d out of range (0..3, 0..15)", cfg.SyncMode, cfg.SyncMax)
	case cfg.ICNTBits != 0 && (cfg.ICNTBits < 2 || cfg.ICNTBits > 22):
		return nil, fmt.Errorf("ntrace: I-CNT width must be 2..22 bits, not %d", cfg.ICNTBits)
	case cfg.CountBits < 0 || cfg.CountBits > 32:
		return nil, fmt.Errorf("ntrace: nesting counter width must be 0..32 bits, not %d", cfg.CountBits)
	case cfg.HistBits != 0 && (cfg.HistBits < 2 || cfg.HistBits > 32):
		return nil, fmt.Errorf("ntrace: HIST width must be 2..32 bits, not %d", cfg.HistBits)
	case cfg.TrapBType < 0 || cfg.TrapBType > 2:
		return nil, fmt.Errorf("ntrace: trap B-TYPE must be 0 (learn), 1 or 2, not %d", cfg.TrapBType)
	case cfg.StackDepth < 0 || cfg.StackDepth > 1<<20:
		return nil, fmt.Errorf("ntrace: decoder stack depth must be 0..%d, not %d", 1<<20, cfg.StackDepth)
	case cfg.ITypeWidth != 0 && cfg.ITypeWidth != 3 && cfg.ITypeWidth != 4:
		return nil, fmt.Errorf("ntrace: itype width must be 0 (not known), 3 or 4, not %d", cfg.ITypeWidth)
	}
	for _, id := range cfg.Sources {
		if cfg.Wire.SrcBits == 0 && id != 0 || cfg.Wire.SrcBits > 0 && uint64(id) >= 1<<cfg.Wire.SrcBits {
			return nil, fmt.Errorf("ntrace: source %d does not fit in %d SRC bits", id, cfg.Wire.SrcBits)
		}
	}
	if cfg.StackDepth == 0 {
		cfg.StackDepth = 1024
	}
	d := &Decoder{cfg: cfg, xlen: cfg.Wire.XLEN, srcs: map[uint64]*srcState{}}
	d.joinJumps = cfg.ITypeWidth != 4 && !cfg.AllJumps
	d.w.Init(img, sink)
	d.obs, _ = sink.(flow.MessageObserver)
	return d, nil
}

// Stats returns counts of what was decoded so far.
func (d *Decoder) Stats() *Stats { return &d.st }

// Decode reads every message from r and decodes it. Malformed bytes and
// inconsistencies between trace and image are reported to the sink as
// gaps and decoding goes on from the next sync message. At the end, a
// source whose trace does not end with ProgTraceCorrelation is a gap with
// decode.ErrTruncated (unless AllowTruncated). Decode returns an error when
// reading fails, when the sink returns one, and as a *decode.Error when the
// input is empty (decode.ErrEmpty) or holds no sync message at all
// (decode.ErrNoSync).
func (d *Decoder) Decode(r io.Reader) error {
	rd := NewReader(r, d.cfg.Wire)
	if err := d.loop(rd, -1); err != nil {
		return err
	}
	d.st.Idles = rd.Idles()
	return d.end(rd.Offset())
}

// loop decodes the messages rd reads, up to the end of the stream or,
// when until is not negative, until rd has read up to byte until.
func (d *Decoder) loop(rd *Reader, until int64) error {
	var m Message
	idles := rd.Idles() - rd.before
	for until < 0 || rd.Offset() < until {
		err := rd.Next(&m)
		if err != nil {
			if err == io.EOF {
				d.tailResync, d.tailIdles = rd.resync, rd.Idles()-idles
				break
			}
			var fe *FormatError
			if errors.As(err, &fe) {
				d.st.Errors++
				idx := d.index
				d.index++
				if fe.EOF {
					d.cutMsg = true // the trace was cut: reported at the end
					continue
				}
				if err := d.gapAll(&decode.Error{Offset: fe.Offset, Index: idx,
					Err: fmt.Errorf("%w: %s", decode.ErrMalformed, fe.Msg)}); err != nil {
					return err
				}
				continue
			}
			return err
		}
		if n := rd.Idles() - idles; n > 0 {
			idles += n
			if d.cfg.NoIdle {
				if err := d.idleGap(&m, n); err != nil {
					return err
				}
			}
		}
		if err := d.Message(&m); err != nil {
			return err
		}
	}
	return nil
}

// end reports what the end of the trace tells: sources cut short, an
// overflow never resumed, an empty trace or one without any sync.
func (d *Decoder) end(total int64) error {
	if total == 0 {
		return &decode.Error{Offset: 0, Index: -1, Err: decode.ErrEmpty}
	}
	if !d.anySync && d.outsideSyncs > 0 {
		return &decode.Error{Offset: -1, Index: -1,
			Err: fmt.Errorf("%w: none of the %d sync messages has its address in the image (the first is %#x): wrong image?",
				decode.ErrOutsideImage, d.outsideSyncs, d.firstOutside)}
	}
	if !d.anySync {
		return &decode.Error{Offset: -1, Index: -1,
			Err: fmt.Errorf("%w: %d bytes, %d messages", decode.ErrNoSync, total, d.index)}
	}
	for _, s := range d.order {
		switch {
		case s.ovPending:
			if err := d.overflowGap(s, "the trace ends before it resumes"); err != nil {
				return err
			}
		case s.synced && !d.cfg.Decode.AllowTruncated:
			how := "the last message is complete"
			if d.cutMsg {
				how = "the last message is cut short"
			}
			if err := d.gap(s, &decode.Error{Offset: total, Index: d.index,
				Err: fmt.Errorf("%w: source %d stops after %#x at byte %d (%s)", decode.ErrTruncated, s.id,
					s.pc, total, how)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// failure is an inconsistency found while handling the current message; it
// becomes a gap.
type failure struct{ e *decode.Error }

func (f *failure) Error() string { return f.e.Error() }

// fail returns a failure of the current message with cause and detail.
func (d *Decoder) fail(cause error, format string, args ...any) error {
	return &failure{d.errAt(cause, format, args...)}
}

// errAt returns a decode error located at the current message.
func (d *Decoder) errAt(cause error, format string, args ...any) *decode.Error {
	e := &decode.Error{Offset: -1, Index: -1, Err: fmt.Errorf("%w: %s", cause, fmt.Sprintf(format, args...))}
	if d.cur != nil {
		e.Offset, e.Index, e.What = d.cur.Offset, d.curIdx, d.cur.TCode.String()
	}
	return e
}

func (d *Decoder) inconsistent(format string, args ...any) error {
	return d.fail(decode.ErrInconsistent, format, args...)
}

// idleGap reports n idle bytes before message m, from an encoder that
// sends none (DecoderConfig.NoIdle), as a gap in every source being
// decoded: the message before them may have been cut short by an inserted
// or altered byte.
func (d *Decoder) idleGap(m *Message, n int64) error {
	for _, s := range d.order {
		if s.synced {
			return d.gapAll(&decode.Error{Offset: m.Offset - n, Index: d.index, What: "idle bytes",
				Err: fmt.Errorf("%w: %d idle byte(s) (0xFF) before the message at byte %d, from an encoder that sends none",
					decode.ErrMalformed, n, m.Offset)})
		}
	}
	return nil
}

// gapAll reports a gap in every synchronised source (a malformed message,
// or one with an unknown SRC, cannot be attributed to one).
func (d *Decoder) gapAll(e *decode.Error) error {
	any, lost := false, false
	for _, s := range d.order {
		if s.synced {
			any = true
			if err := d.gap(s, e); err != nil {
				return err
			}
		}
		lost = lost || s.lost
	}
	if any || lost || !d.anySync && d.cfg.Decode.AllowTruncated {
		return nil // inside a gap already, or before the start of a circular buffer
	}
	for _, s := range d.order {
		if s.ended && d.anySuspect(s) {
			// Bad bytes after the end: what the source decoded unverified
			// may have been decoded from bad bytes too.
			any = true
			if err := d.gapWith(s, e, d.suspect(s)); err != nil {
				return err
			}
			s.lost, s.ended = false, true
		}
	}
	if any {
		return nil
	}
	d.st.Gaps++
	return d.w.Gap(0, 0, e, 0, 0, nil)
}

// nextEpoch follows the memory that holds from the instruction count
// reached on (code overwritten while the traced system ran:
// image.Set.AddTimedBytes).
func (d *Decoder) nextEpoch() {
	n := d.st.Instructions
	d.w.Advance(n)
	if s := d.one; s != nil {
		d.w.View(s.context, n)
	} else {
		d.w.View(0, n)
	}
}

// run returns the straight-line run at pc.
func (d *Decoder) run(pc uint64) (*decode.Block, error) {
	if d.w.Due(d.st.Instructions) {
		d.nextEpoch()
	}
	return d.w.Blocks.At(pc)
}

// walkErr turns a failure to form a run at pc into a gap cause.
func (d *Decoder) walkErr(pc uint64, err error) error {
	if !d.w.Img.Contains(pc) {
		return d.fail(decode.ErrOutsideImage, "the flow reaches %#x, outside every image", pc)
	}
	return d.inconsistent("at %#x: %v", pc, err)
}

func (d *Decoder) state(src uint64) *srcState {
	if d.one != nil && d.oneID == src {
		return d.one
	}
	return d.newState(src)
}

// newState returns the state of source src, creating it the first time.
//
//go:noinline
func (d *Decoder) newState(src uint64) *srcState {
	s := d.srcs[src]
	if s == nil {
		s = &srcState{id: uint32(src), stack: decode.NewReturnStack(d.cfg.StackDepth), mode: d.cfg.Mode,
			btype: d.cfg.TrapBType}
		if s.mode == 0 {
			s.mode = d.seedMode
		}
		if s.btype == 0 {
			s.btype = d.seedBType
		}
		if d.cfg.CountBits > 0 {
			s.callsMax = 1<<uint(d.cfg.CountBits) - 1
		}
		d.srcs[src] = s
		d.order = append(d.order, s)
	}
	d.one, d.oneID = s, src
	// The source's context (0 until an Ownership message says otherwise)
	// at the instruction count reached: code may have changed since the
	// source was last decoded.
	d.w.View(s.context, d.st.Instructions)
	return s
}

// Message decodes one message (Decode calls it for each message read).
func (d *Decoder) Message(m *Message) error {
	d.curIdx = d.index
	d.index++
	d.st.count(m)
	if d.obs != nil {
		d.obs.Message(m.TCode.String(), m.Offset, m.Size*8)
	}
	d.cur = m
	src := m.Get(FieldSRC)
	if d.cfg.Sources != nil && !d.knownSource(src) {
		return d.gapAll(d.errAt(decode.ErrUnknownSource, "SRC %d is none of the configured sources %v", src,
			d.cfg.Sources))
	}
	s := d.state(src)
	if s.wait {
		if err := d.waiting(s, m); err != nil || s.wait {
			return err
		}
	}
	s.msgSync++
	if m.TCode == TCodeResourceFull || m.TCode == TCodeOwnership {
		s.fillSync++
	}
	err := d.handle(s, m)
	if err == nil {
		return nil
	}
	if f, ok := err.(*failure); ok {
		return d.gap(s, f.e)
	}
	return err
}

func (d *Decoder) knownSource(src uint64) bool {
	for _, id := range d.cfg.Sources {
		if uint64(id) == src {
			return true
		}
	}
	return false
}

// fastTCodes[mode] has bit t set when neither checkMode nor limits has
// anything to check on a message with TCODE t (other than a sync) in a
// source of that mode (0, BTM or HTM; indexed by the mode's low 3 bits),
// unless the message has a HIST field, a field with a redundant chunk or
// an I-CNT beyond the specification's maximum. Messages of the other
// TCODEs depend on fields (ResourceFull, ProgTraceCorrelation,
// RepeatBranch) or tell the mode of a source that does not know it.
var fastTCodes = func() (t [8]uint64) {
	for _, mode := range []Mode{0, BTM, HTM} {
		for tc := TCode(0); tc < 64; tc++ {
			want, fixed := tcodeMode(tc)
			if fixed && (want == 0 || mode != 0 && want == mode) && tc != TCodeRepeatBranch {
				t[mode&7] |= 1 << tc
			}
		}
	}
	return t
}()

// tcodeMode returns the trace mode messages with TCODE t belong to (0:
// either), and whether it depends on t alone (not on fields).
func tcodeMode(t TCode) (Mode, bool) {
	switch t {
	case TCodeDirectBranch, TCodeDirectBranchSync:
		return BTM, true
	case TCodeIndirectBranchHist, TCodeIndirectBranchHistSync:
		return HTM, true
	case TCodeResourceFull, TCodeProgTraceCorrelation, TCodeIndirectBranchSync:
		return 0, false
	}
	return 0, true
}

// limits checks field values against the specification's maxima and the
// decoder's hard bounds. An I-CNT beyond NTRACE_MAX_ICNT is used, with a
// warning.
func (d *Decoder) limits(s *srcState, m *Message) error {
	if d.cfg.ShortestFields && m.Padded != 0 {
		f := Field(bits.TrailingZeros32(m.Padded))
		return d.fail(decode.ErrMalformed, "%s field with a redundant most significant chunk (not the shortest form)", f)
	}
	icnt := m.Get(FieldICNT)
	if m.TCode == TCodeResourceFull {
		switch m.Get(FieldRCODE) {
		case RCodeICNT:
			icnt = m.Get(FieldRDATA)
			if icnt == 0 || icnt < d.icntLimit() {
				return d.inconsistent("ResourceFull reports a full I-CNT of %d, below the counter's limit of %d", icnt,
					d.icntLimit())
			}
		case RCodeHist, RCodeHistRepeat:
			if h := m.Get(FieldRDATA); h < 2 || h > maxHist {
				return d.fail(decode.ErrMalformed, "ResourceFull HIST %#x has no history bit or more than 32 bits", h)
			}
			if n := bits.Len64(m.Get(FieldRDATA)) - 1; d.cfg.HistBits > 0 && n != d.cfg.HistBits-1 &&
				!(m.Get(FieldRCODE) == RCodeHistRepeat && d.cfg.HistBits == 32 && (n == 28 || n == 30)) {
				return d.inconsistent("ResourceFull HIST record of %d bits from a %d-bit HIST register", n, d.cfg.HistBits)
			}
			if m.Get(FieldRCODE) == RCodeHistRepeat && (m.Get(FieldHREPEAT) == 0 || m.Get(FieldHREPEAT) > maxHRepeat) {
				return d.fail(decode.ErrMalformed, "HREPEAT %d is outside 1..NTRACE_MAX_HREPEAT", m.Get(FieldHREPEAT))
			}
		}
	}
	if m.Present(FieldHIST) {
		if h := m.Get(FieldHIST); h == 0 || h > maxHist {
			return d.fail(decode.ErrMalformed, "HIST %#x has no stop bit or more than 32 bits", h)
		} else if n := bits.Len64(h) - 1; d.cfg.HistBits > 0 && n > d.cfg.HistBits-1 {
			return d.inconsistent("HIST field of %d bits from a %d-bit HIST register", n, d.cfg.HistBits)
		}
	}
	if m.TCode == TCodeRepeatBranch && (m.Get(FieldBCNT) == 0 || m.Get(FieldBCNT) > maxBCnt) {
		return d.fail(decode.ErrMalformed, "B-CNT %d is outside 1..NTRACE_MAX_BCNT", m.Get(FieldBCNT))
	}
	if icnt > maxICNTSpec {
		if icnt > maxICNT {
			return d.fail(decode.ErrMalformed, "I-CNT %d is beyond the decoder's bound of %d", icnt, uint64(maxICNT))
		}
		d.st.OverlongICNT++
		return d.warn(s, fmt.Errorf("I-CNT %d exceeds the N-Trace maximum (22 bits, %d); used as it is", icnt,
			maxICNTSpec))
	}
	return nil
}

// warn reports something the user should know that lost no trace.
func (d *Decoder) warn(s *srcState, err error) error {
	d.st.Warnings++
	return d.w.Warn(s.id, s.priv, &decode.Error{Offset: d.cur.Offset, Index: d.curIdx, What: d.cur.TCode.String(), Err: err})
}

// gap reports lost synchronisation, with the instructions emitted since
// the last point known good as suspect, and waits for the next sync.
func (d *Decoder) gap(s *srcState, e *decode.Error) error {
	n := d.suspect(s)
	if !s.synced {
		n = 0
	}
	return d.gapWith(s, e, n)
}

// gapWith sends the gap event with Suspect n and marks the source lost.
func (d *Decoder) gapWith(s *srcState, e *decode.Error, n uint64) error {
	return d.gapAddr(s, e, n, 0)
}

// gapAddr is gapWith for a gap at a sync message whose address addr is
// outside every image (0 for other gaps).
func (d *Decoder) gapAddr(s *srcState, e *decode.Error, n, addr uint64) error {
	s.synced, s.lost = false, true
	d.st.Gaps++
	return d.w.Gap(s.id, s.priv, e, n, addr, &s.tally)
}

func (d *Decoder) gapNoSuspect(s *srcState, e *decode.Error) error { return d.gapWith(s, e, 0) }

// overflowGap reports the span an Error message announced, from where the
// flow stopped to where it resumes (resume describes it).
func (d *Decoder) overflowGap(s *srcState, resume string) error {
	s.ovPending = false
	e := s.ovErr
	from := "an unknown address (the source was not being decoded)"
	if s.ovPCKnown {
		from = fmt.Sprintf("%#x", s.ovPC)
	}
	e.Err = fmt.Errorf("%w: %v: the flow stops after %s; %s", decode.ErrOverflow, e.Err, from, resume)
	return d.gapNoSuspect(s, &e)
}

func (d *Decoder) handle(s *srcState, m *Message) error {
	if !m.TCode.Known() {
		return d.unknown(s, m)
	}
	if m.TCode.IsSync() {
		return d.sync(s, m)
	}
	if !s.synced {
		return d.unsynced(s, m)
	}
	if m.Present(FieldTSTAMP) != s.ts {
		return d.fail(decode.ErrMalformed, "TSTAMP %s, unlike in this source's sync message", presence(m.Present(FieldTSTAMP)))
	}
	if s.ts && d.cfg.SyncMode == SyncCycles && d.cfg.OwnEncoder {
		if err := d.checkCycleTime(s, m); err != nil {
			return err
		}
	}
	fast := fastTCodes[s.mode&7]>>m.TCode&1 != 0
	if !fast {
		if err := d.checkMode(s, m); err != nil {
			return err
		}
	}
	if !fast || m.Padded != 0 || m.Has&(1<<FieldHIST) != 0 || m.V[FieldICNT] > maxICNTSpec {
		if err := d.limits(s, m); err != nil {
			return err
		}
	}
	prev, prevBT := s.lastMsg, s.lastBT
	s.prevMsg, s.lastMsg, s.lastBT = prev, m.TCode, m.Get(FieldBTYPE)
	if s.ctx < 0 {
		// "An Ownership message (if enabled) must be emitted immediately
		// after all synchronizing messages."
		s.ctx = 0
		if m.TCode == TCodeOwnership {
			s.ctx = 1
		}
	}
	switch m.TCode {
	case TCodeOwnership:
		if s.ctx == 0 || d.cfg.NoContext {
			return d.inconsistent("Ownership message in a trace whose sync message had none after it (trTeContext off)")
		}
		return d.ownership(s, m)
	case TCodeDirectBranch, TCodeIndirectBranch, TCodeIndirectBranchHist:
		if !d.cfg.NoRepeatBranch && s.haveBr && d.cfg.OwnEncoder {
			if err := d.checkRepeat(s, m, prev); err != nil {
				return err
			}
		}
		s.last.set(m)
		s.haveBr = true
		if d.cfg.SyncMode == SyncMessages {
			// (a RepeatBranch completing the period is sent along with
			// the message after it)
			if period := uint64(1) << uint(d.cfg.SyncMax+4); s.msgSync == period ||
				s.msgSync == period+1 && prev == TCodeRepeatBranch {
				s.dueExact = true
				err := d.branchMsg(s, m)
				s.dueRanges = d.ranges - d.joins
				return err
			}
		}
		if s.ts && prev.IsSync() && !s.syncTrap {
			if err := d.branchMsg(s, m); err != nil {
				return err
			}
			return d.checkSameBlock(s, m)
		}
		return d.branchMsg(s, m)
	case TCodeRepeatBranch:
		if d.cfg.NoRepeatBranch {
			return d.inconsistent("RepeatBranch message from an encoder that sends none")
		}
		if !s.haveBr {
			return d.inconsistent("RepeatBranch without a previous branch message since the last sync")
		}
		n := m.Get(FieldBCNT)
		s.lastBCnt = n
		var rep Message
		s.last.message(&rep) // the repeat's own TSTAMP applies once
		work := rep.Get(FieldICNT) + uint64(bits.Len64(rep.Get(FieldHIST)))
		if n*work > maxICNT {
			return d.fail(decode.ErrMalformed, "B-CNT %d repeats of a message of I-CNT %d exceed the decoder's bound", n,
				rep.Get(FieldICNT))
		}
		for i := uint64(0); i < n; i++ {
			if err := d.branchMsg(s, &rep); err != nil {
				return err
			}
		}
		return d.timestamp(s, m)
	case TCodeResourceFull:
		switch rc := m.Get(FieldRCODE); rc {
		case RCodeICNT:
			if d.cfg.ICNTBits != 0 {
				if err := d.fullPoint(s, int64(m.Get(FieldRDATA))); err != nil {
					return err
				}
			}
			s.icntAcc += int64(m.Get(FieldRDATA))
			if period := uint64(1) << uint(d.cfg.SyncMax+4); d.cfg.SyncMode == SyncMessages && d.cfg.ICNTBits != 0 {
				if s.dueExact {
					s.dueFull, s.fullLast = true, true
				} else if s.msgSync == period || s.msgSync == period+1 && prev == TCodeRepeatBranch {
					s.dueFull = true
				}
			}
		case RCodeHist:
			if err := d.hist(s, m.Get(FieldRDATA)); err != nil {
				return err
			}
			s.histRec = true
			if d.cfg.LazyHistFull && d.cfg.NoRepeatedHistory && s.icntAcc > 0 {
				// sent at the next branch, after the ResourceFull RCODE=0
				// sent before it (histFloor)
				s.histFloor = s.icntAcc
			}
			if d.cfg.SyncMode == SyncMessages && s.mode == HTM && d.cfg.LazyHistFull && d.cfg.NoRepeatedHistory &&
				s.msgSync == uint64(1)<<uint(d.cfg.SyncMax+4) {
				s.dueHist = true
			}
		case RCodeHistRepeat:
			if d.cfg.NoRepeatedHistory {
				return d.inconsistent("ResourceFull RCODE=2 from an encoder without repeated history")
			}
			h := m.Get(FieldRDATA)
			for n := m.Get(FieldHREPEAT); n > 0; n-- {
				if err := d.hist(s, h); err != nil {
					return err
				}
			}
			s.histRec = true
		default:
			if rc >= 8 && d.cfg.VendorMessages {
				if err := d.warn(s, fmt.Errorf("vendor-defined ResourceFull RCODE=%d skipped", rc)); err != nil {
					return err
				}
				break
			}
			return d.fail(decode.ErrSkipped, "ResourceFull with reserved or vendor RCODE=%d: the flow may depend on it", rc)
		}
		return d.timestamp(s, m)
	case TCodeProgTraceCorrelation:
		if ev := m.Get(FieldEVCODE); ev == 2 || ev == 3 || ev >= 5 && ev <= 7 || ev >= EVCodeVendorMin && !d.cfg.VendorMessages {
			return d.fail(decode.ErrMalformed, "reserved or vendor-defined EVCODE=%d", ev)
		}
		if d.cfg.StopCodes != 0 && d.cfg.StopCodes&(1<<m.Get(FieldEVCODE)) == 0 {
			return d.inconsistent("EVCODE=%d, which this encoder does not send", m.Get(FieldEVCODE))
		}
		if m.Get(FieldICNT) == 0 && m.Get(FieldHIST) <= 1 && (prev == TCodeIndirectBranch ||
			prev == TCodeIndirectBranchHist || prev == TCodeDirectBranchSync ||
			prevBT != BTypeIndirect && (prev == TCodeIndirectBranchSync || prev == TCodeIndirectBranchHistSync)) {
			// An encoder reports a jump's or trap's target when the
			// instruction there retires or traps: then I-CNT counts it,
			// or a trap message follows.
			return d.inconsistent("the trace stops at the target of the jump or trap before, with nothing executed there")
		}
		if m.Present(FieldHIST) {
			if err := d.hist(s, m.Get(FieldHIST)); err != nil {
				return err
			}
		}
		if err := d.finish(s, m.Get(FieldICNT), endStop); err != nil {
			return err
		}
		if s.dueFull {
			if err := d.checkDueFull(s); err != nil {
				return err
			}
		}
		if s.dueExact && s.mode == HTM {
			if err := d.checkDueBlock(s); err != nil {
				return err
			}
		} else if s.dueHist {
			if err := d.checkDueHist(s, m); err != nil {
				return err
			}
		}
		if d.msgsPastPeriod(s) && s.dueExact {
			if err := d.checkDueWalk(s); err != nil {
				return err
			}
		}
		if period := uint64(1) << uint(d.cfg.SyncMax+4); d.cfg.SyncMode == SyncHalfwords &&
			s.hwSync >= period+d.lastBlock(s) {
			// the period ran out before the last block: a sync was due
			return d.inconsistent("the trace ends %d halfwords after the last sync, a sync period (%d) without one",
				s.hwSync, period)
		}
		if err := d.timestamp(s, m); err != nil {
			return err
		}
		s.synced, s.ended = false, true
		d.ev = flow.Event{Kind: flow.KindStop, Src: s.id, Reason: uint32(m.Get(FieldEVCODE)), Offset: m.Offset,
			Addr: s.pc, Priv: s.priv}
		return d.w.Sink.Event(&d.ev)
	case TCodeError:
		d.errorMessage(s, m, true)
		return nil
	}
	return nil
}

func presence(b bool) string {
	if b {
		return "present"
	}
	return "absent"
}

// errorMessage records an Error message (FIFO overflow): the source is
// lost until the sync that resumes it, where the gap is reported.
func (d *Decoder) errorMessage(s *srcState, m *Message, pcKnown bool) {
	d.st.Overflows++
	if !s.ovPending {
		s.ovPending = true
		s.ovErr = decode.Error{Offset: m.Offset, Index: d.curIdx, What: m.TCode.String(),
			Err: fmt.Errorf("Error message ETYPE=%d ECODE=%#x", m.Get(FieldETYPE), m.Get(FieldECODE))}
		s.ovPC, s.ovPCKnown = s.pc, pcKnown
	}
	s.synced, s.lost, s.ended = false, true, false
}

// unknown handles a message with a reserved or vendor-defined TCODE.
func (d *Decoder) unknown(s *srcState, m *Message) error {
	vendor := m.TCode >= TCodeVendorFirst && m.TCode <= TCodeVendorLast
	if vendor && d.cfg.VendorMessages {
		return d.warn(s, fmt.Errorf("vendor-defined message %s skipped", m.TCode))
	}
	if !s.synced {
		return d.unsynced(s, m)
	}
	kind := "reserved"
	if vendor {
		kind = "vendor-defined"
	}
	return d.fail(decode.ErrSkipped, "%s TCODE %d: the message is skipped and the flow may depend on it", kind, m.TCode)
}

// unsynced handles a non-sync message of a source that is not being
// decoded.
func (d *Decoder) unsynced(s *srcState, m *Message) error {
	switch {
	case s.lost:
		if m.TCode == TCodeError {
			d.errorMessage(s, m, false)
		}
		return nil
	case !s.seen && !s.ended && m.TCode == TCodeProgTraceCorrelation && m.Get(FieldICNT) == 0:
		s.ended = true // "Trace starts disabled" (Corner Cases)
		return nil
	case !s.seen && !s.ended:
		if d.cfg.Decode.AllowTruncated {
			return nil // a circular buffer starts anywhere: decode from the first sync
		}
		// The message may belong to a source being decoded whose SRC
		// field is corrupt.
		e := d.errAt(decode.ErrSkipped, "message of source %d before its first sync message: the trace before it was lost",
			s.id)
		for _, o := range d.order {
			if o != s && o.synced {
				if err := d.gap(o, e); err != nil {
					return err
				}
			}
		}
		return d.gapNoSuspect(s, e)
	case m.TCode == TCodeError:
		// After the end: the message that stopped the trace may have been
		// lost ("Error Message" in the specification).
		d.errorMessage(s, m, true)
		return nil
	default:
		return d.gapWith(s, d.errAt(decode.ErrSkipped,
			"message of source %d after its ProgTraceCorrelation without a sync message before it", s.id), d.suspect(s))
	}
}

// checkMode checks that a message belongs to the source's trace mode, and
// learns the mode from it when it is not known.
func (d *Decoder) checkMode(s *srcState, m *Message) error {
	if d.cfg.OwnEncoder && s.mode == HTM && m.TCode == TCodeIndirectBranchSync {
		return d.inconsistent("IndirectBranchSync in an HTM trace, where this encoder sends IndirectBranchHistSync")
	}
	want, _ := tcodeMode(m.TCode)
	switch m.TCode {
	case TCodeResourceFull:
		if rc := m.Get(FieldRCODE); rc == RCodeHist || rc == RCodeHistRepeat {
			want = HTM
		}
	case TCodeProgTraceCorrelation:
		switch m.Get(FieldCDF) {
		case 0:
			want = BTM
		case 1:
			want = HTM
		default:
			return d.fail(decode.ErrMalformed, "reserved CDF=%d", m.Get(FieldCDF))
		}
	}
	if want == 0 {
		return nil
	}
	if s.mode == 0 {
		s.mode = want
		return nil
	}
	if s.mode != want {
		return d.inconsistent("%s message (%s) in a %s trace", m.TCode, want, s.mode)
	}
	return nil
}

// How the last instruction of an I-CNT walk is treated.
const (
	endIndirect = iota // explicit uninferable jump: the message gives the target
	endTaken           // BTM DirectBranch: a taken branch
	endTrap            // a trap follows: the last instruction was inferable
	endSync            // the message gives the next address (sync)
	endStop            // trace stops
)

// branchMsg decodes DirectBranch, IndirectBranch and IndirectBranchHist.
func (d *Decoder) branchMsg(s *srcState, m *Message) error {
	if m.Present(FieldHIST) {
		if err := d.hist(s, m.Get(FieldHIST)); err != nil {
			return err
		}
	}
	if m.TCode == TCodeDirectBranch {
		// (finish, unrolled on this hot path)
		if err := d.finishWalk(s, m.Get(FieldICNT), endTaken); err != nil {
			return err
		}
		if d.cfg.ICNTBits != 0 {
			if err := d.checkOvershoot(s, m.Get(FieldICNT)); err != nil {
				return err
			}
			if err := d.checkFullTaken(s); err != nil {
				return err
			}
		}
		if d.cfg.SyncMode != SyncOff {
			if err := d.checkNotDue(s); err != nil {
				return err
			}
		}
		return d.timestamp(s, m)
	}
	bt := m.Get(FieldBTYPE)
	if err := d.checkBType(s, bt); err != nil {
		return err
	}
	kind := endIndirect
	if bt != BTypeIndirect {
		kind = endTrap
	}
	if err := d.finish(s, m.Get(FieldICNT), kind); err != nil {
		return err
	}
	// A target outside every image is no error yet: a jump to a page
	// the hart cannot fetch from (a page not executable, or not mapped)
	// retires with that target, and the next message reports the fetch
	// fault with I-CNT 0. If the trace goes on from the target instead,
	// the walk from it reports the gap ("the flow reaches ..., outside
	// every image").
	target := d.unxor(s.addr, m.Get(FieldUADDR))
	if d.cfg.SyncMode != SyncOff {
		if err := d.checkNotDue(s); err != nil {
			return err
		}
	}
	if kind == endIndirect && d.predicted(target) {
		return d.inconsistent("a return to %#x reported, where the encoder's return stack predicts it", target)
	}
	s.addr = target
	if err := d.jumpTo(s, target, bt, m); err != nil {
		return err
	}
	return d.timestamp(s, m)
}

func (d *Decoder) unxor(ref, field uint64) uint64 {
	a := ref ^ field<<1
	if d.xlen == 32 {
		a &= 1<<32 - 1
	}
	return a
}

// checkBType checks that a trap is reported as the source's other traps
// are (B-TYPE 1, or 2 and 3), learning it from the first.
func (d *Decoder) checkBType(s *srcState, bt uint64) error {
	if bt == BTypeIndirect {
		return nil
	}
	style := 2
	if bt == BTypeTrap {
		style = 1
	}
	if s.btype == 0 {
		s.btype = style
		return nil
	}
	if s.btype != style {
		return d.inconsistent("trap reported with B-TYPE=%d where this source reports traps with B-TYPE %s", bt,
			map[int]string{1: "1", 2: "2 and 3"}[s.btype])
	}
	return nil
}

// jumpTo moves to target after an explicit jump or a trap.
func (d *Decoder) jumpTo(s *srcState, target uint64, btype uint64, m *Message) error {
	if btype != BTypeIndirect {
		d.ev = flow.Event{Kind: flow.KindTrap, Src: s.id, Addr: s.pc, Target: target, HasTarget: true,
			Interrupt: btype == BTypeInterrupt, Offset: m.Offset, Priv: s.priv}
		if err := d.w.Sink.Event(&d.ev); err != nil {
			return err
		}
		s.prevOK, s.syncTrap = false, true
	}
	s.pc = target
	return nil
}

// sync handles the four messages with SYNC and F-ADDR. Met while the
// source is being decoded, the message first completes the flow up to it
// and is a checkpoint; then it (re)starts decoding at F-ADDR.
func (d *Decoder) sync(s *srcState, m *Message) error {
	faddr := m.Get(FieldFADDR) << 1
	if d.xlen == 32 {
		faddr &= 1<<32 - 1
	}
	reason := m.Get(FieldSYNC)
	wasSynced := s.synced
	if reason == 8 || reason >= 10 && reason <= 13 || reason >= 14 && !d.cfg.VendorMessages {
		// A reserved or vendor SYNC: the message is suspect, F-ADDR too.
		return d.gap(s, d.errAt(decode.ErrMalformed, "reserved or vendor-defined SYNC=%d", reason))
	}
	if s.ended && d.cfg.OwnEncoder && reason != SyncTraceEnable && d.cfg.StartSync != 0 && reason != uint64(d.cfg.StartSync) {
		// rvtrace's encoder ends a trace for good, or stops it (EVCODE=4)
		// and starts it again with SYNC=5, or a new encoder starts a new
		// trace with its first SYNC (trTeEnable 0 -> 1 again:
		// tracectl's TestReenableOwnDecode): the end message before is
		// suspect (TestSyncAfterEnd: a ResourceFull RCODE=0 turned into
		// one ending the flow 48 halfwords early), and decoding starts
		// again here
		e := d.errAt(decode.ErrInconsistent, "SYNC=%d (%s) after the end message: rvtrace's encoder starts a trace again with SYNC=5 (trace enable) or, a new encoder, with SYNC=%d (%s)",
			reason, syncNames[reason], d.cfg.StartSync, syncNames[uint64(d.cfg.StartSync)])
		if err := d.gapWith(s, e, d.suspect(s)); err != nil {
			return err
		}
	}
	syncTime := d.syncTimeOf(m, reason, wasSynced)
	switch {
	case s.synced:
		if err := d.syncFlow(s, m, faddr, reason); err != nil {
			f, ok := err.(*failure)
			if !ok {
				return err
			}
			// The message disagrees with the flow, or its walk is
			// inconsistent: its F-ADDR may be the corrupt part, and a walk
			// from a wrong address often merges back into the true path
			// before the next checkpoint, which would then not see it.
			// Decoding resumes at the next sync message.
			return d.gap(s, f.e)
		}
	case s.ovPending:
		if err := d.overflowGap(s, fmt.Sprintf("it resumes at %#x with the %s at byte %d (message %d, SYNC=%d)",
			faddr, m.TCode, m.Offset, d.curIdx, reason)); err != nil {
			return err
		}
	case s.ended && d.cfg.Mode == 0:
		s.mode = 0 // the trace may have been reconfigured while off
	}
	if !wasSynced {
		if err := d.limits(s, m); err != nil {
			return d.gap(s, err.(*failure).e)
		}
	}
	if !d.w.Img.Contains(faddr) {
		if d.outsideSyncs == 0 {
			d.firstOutside = faddr
		}
		d.outsideSyncs++
		n := d.suspect(s)
		if !s.synced {
			n = 0
		}
		return d.gapAddr(s, d.errAt(decode.ErrOutsideImage, "F-ADDR %#x is outside every image", faddr), n, faddr)
	}
	if !s.synced {
		s.tally.Good() // a fresh start is a point known good
		if err := d.checkMode(s, m); err != nil {
			return d.gapNoSuspect(s, err.(*failure).e)
		}
	}
	// Full reset of the state, as the encoder did.
	s.synced, s.seen, s.lost, s.ended = true, true, false, false
	s.ctx, s.lastMsg, s.lastBT = -1, m.TCode, m.Get(FieldBTYPE)
	d.anySync = true
	s.ts = m.Present(FieldTSTAMP)
	s.pc, s.addr = faddr, faddr
	s.icntAcc, s.used = 0, 0
	s.rfPts, s.rfHead, s.lastFull = s.rfPts[:0], 0, 0
	s.histRec, s.histBound, s.histFloor = false, 0, 0
	s.chain, s.chainLast = 0, 0
	s.syncTime, s.syncTrap, s.syncInsts = syncTime, false, d.st.Instructions
	s.syncAt, s.cycleDue = m.Get(FieldTSTAMP), false
	if wasSynced && syncTime < 0 {
		// (the walk to the message says)
		s.syncTime = 0
		if d.pcKnown && !d.inferredEnd {
			s.syncTime = 1
		}
	}
	s.hwSync, s.msgSync, s.fillSync, s.dueExact, s.dueHist, s.dueFull, s.fullLast = 0, 0, 0, false, false, false, false
	s.stack.Reset()
	s.calls = 0
	s.haveBr = false
	s.prevOK = false
	if m.Present(FieldTSTAMP) {
		s.time, s.hasTime = m.Get(FieldTSTAMP), true
	}
	d.ev = flow.Event{Kind: flow.KindSync, Src: s.id, Addr: faddr, Reason: uint32(reason),
		Offset: m.Offset, Priv: s.priv}
	if err := d.w.Sink.Event(&d.ev); err != nil {
		return err
	}
	if s.hasTime && m.Present(FieldTSTAMP) {
		d.ev = flow.Event{Kind: flow.KindTime, Src: s.id, Time: s.time, Offset: m.Offset}
		return d.w.Sink.Event(&d.ev)
	}
	return nil
}

// syncFlow completes the flow up to a sync message met while decoding and
// checks the address it states against the one reached.
func (d *Decoder) syncFlow(s *srcState, m *Message, faddr, reason uint64) error {
	switch reason {
	case SyncFIFORestart:
		return d.fail(decode.ErrOverflow, "restart after a FIFO overflow (SYNC=7) with no Error message before it: trace was lost before %#x", faddr)
	case SyncDebugExit, SyncTraceEnable:
		return d.inconsistent("SYNC=%d (%s) while the trace runs (no ProgTraceCorrelation before it)", reason,
			syncNames[reason])
	case SyncReset, SyncPowerUp:
		// A reset without stopping moves the flow anywhere: nothing
		// verifies what was decoded up to it.
		return d.inconsistent("SYNC=%d (%s) while the trace runs: the flow before it cannot be checked", reason,
			syncNames[reason])
	case SyncExternalTrigger:
		if d.cfg.OwnEncoder {
			// (TestThreeBitIntegrity: a deleted byte turned a trap's
			// periodic sync into one with SYNC=0 and a shorter I-CNT)
			return d.inconsistent("SYNC=0 (external trigger) from rvtrace's encoder, which sends none")
		}
	}
	if m.Present(FieldTSTAMP) != s.ts {
		return d.fail(decode.ErrMalformed, "TSTAMP %s, unlike in this source's previous sync message",
			presence(m.Present(FieldTSTAMP)))
	}
	if err := d.checkMode(s, m); err != nil {
		return err
	}
	if err := d.limits(s, m); err != nil {
		return err
	}
	if m.Present(FieldHIST) {
		if err := d.hist(s, m.Get(FieldHIST)); err != nil {
			return err
		}
	}
	bt := m.Get(FieldBTYPE)
	if reason == SyncICNTFull && (bt != BTypeIndirect || s.mode == HTM) {
		// "I-CNT Details": a sync reports a full I-CNT on linear code, in BTM only
		return d.inconsistent("SYNC=4 (I-CNT full) with B-TYPE=%d in a %s trace", bt, s.mode)
	}
	if reason == SyncICNTFull && m.Get(FieldICNT)+uint64(s.icntAcc) < d.icntLimit() {
		return d.inconsistent("SYNC=4 (I-CNT full) with I-CNT %d, below the counter's limit of %d", m.Get(FieldICNT),
			d.icntLimit())
	}
	if reason == SyncTraceEvent && d.cfg.OwnEncoder && s.syncTime != 0 && !s.syncTrap &&
		d.st.Instructions == s.syncInsts {
		// rvtrace's encoder sends the Trace Event sync asked for at the
		// start of a block, not at the one the sync before began
		// (TestTimedIntegrity: a deleted byte turned a periodic sync into
		// a SYNC=6 with I-CNT=0 right after another)
		if s.syncTime < 0 {
			d.revDep = true // (how the sync before was sent depends on the walk before the piece)
		} else {
			return d.inconsistent("SYNC=6 (trace event) with nothing walked since the sync before, sent at the start of the same block")
		}
	}
	if reason == SyncICNTFull && d.cfg.NoICNTFullSync {
		// (TestTimedIntegrity: an inserted byte turned a periodic sync
		// in a loop of `j .` into a SYNC=4 with I-CNT 459, walking 452
		// more jumps; with a 22-bit counter nothing else bounds it)
		return d.inconsistent("SYNC=4 (I-CNT full) from an encoder that reports a full I-CNT counter with ResourceFull RCODE=0")
	}
	if err := d.checkBType(s, bt); err != nil {
		return err
	}
	kind := endSync
	switch {
	case m.TCode == TCodeDirectBranchSync:
		kind = endTaken
	case bt != BTypeIndirect:
		kind = endTrap
	case d.cfg.OwnEncoder && (m.TCode == TCodeIndirectBranchSync ||
		m.TCode == TCodeIndirectBranchHistSync && m.Get(FieldHIST) <= 1):
		// rvtrace's encoder syncs on linear code with ProgTraceSync, or
		// in HTM with IndirectBranchHistSync only to send pending
		// history: this one reports an uninferable jump, the last
		// instruction its I-CNT counts
		kind = endIndirect
	}
	if err := d.finish(s, m.Get(FieldICNT), kind); err != nil {
		return err
	}
	if s.prevMsg = s.lastMsg; d.msgsPastPeriod(s) && s.dueExact {
		if err := d.checkDueWalk(s); err != nil {
			return err
		}
	} else if s.dueExact && s.mode == HTM {
		if err := d.checkDueBlock(s); err != nil {
			return err
		}
	} else if s.dueHist {
		if err := d.checkDueHist(s, m); err != nil {
			return err
		}
	}
	if kind == endTrap {
		if err := d.checkTrapSync(s, m); err != nil {
			return err
		}
	}
	if s.dueFull && reason == SyncPeriodic {
		if err := d.checkDueFull(s); err != nil {
			return err
		}
	}
	if s.cycleDue && m.Get(FieldICNT) != 0 {
		return d.inconsistent("%s with I-CNT %d after the ResourceFull that reported the block the sync period ran out in, where the encoder syncs at the start of the next",
			m.TCode, m.Get(FieldICNT))
	}
	if reason == SyncPeriodic {
		if err := d.checkPeriod(s); err != nil {
			return err
		}
		if d.cfg.SyncMode == SyncCycles && d.cfg.OwnEncoder {
			if err := d.checkCycleSync(s, kind == endTrap); err != nil {
				return err
			}
		}
	} else if period := uint64(1) << uint(d.cfg.SyncMax+4); d.cfg.SyncMode == SyncHalfwords &&
		(reason == SyncICNTFull || reason == SyncTraceEvent) && s.hwSync >= period+d.lastBlock(s) {
		// The encoder sends a sync at the first block that begins after
		// the period ran out; a SYNC=4 or SYNC=6 due there takes the
		// periodic one's place, but the period may not have run out
		// before the last block (FuzzIntegrityNarrow's seed
		// e7f592befb7352c7: a trap message's I-CNT grown by 32
		// halfwords, the next sync a SYNC=4 123 halfwords after the
		// last sync with a period of 64)
		return d.inconsistent("SYNC=%d %d halfwords after the last sync, a sync period (%d) without one before the last block",
			reason, s.hwSync, period)
	}
	if kind == endTrap {
		return d.jumpTo(s, faddr, bt, m) // the handler: nothing to compare
	}
	if kind == endIndirect {
		if d.predicted(faddr) {
			// the encoder sends a sync on linear code after a return its
			// stack predicts
			return d.inconsistent("a return to %#x reported with %s, where the encoder's return stack predicts it",
				faddr, m.TCode)
		}
		return nil // the jump's target: F-ADDR is news
	}
	if !d.pcKnown && !(d.inferredEnd && m.TCode == TCodeProgTraceSync) {
		if d.cfg.OwnEncoder && m.TCode == TCodeProgTraceSync {
			// rvtrace's encoder sends ProgTraceSync at the start of a
			// block after one that needed no message: after an
			// uninferable jump it reports the jump (IndirectBranchSync)
			return d.inconsistent("ProgTraceSync whose I-CNT ends on the uninferable jump at %#x, which the encoder reports with a sync of its own",
				d.w.LastRange().Last)
		}
		return nil // an uninferable jump: F-ADDR is news
	}
	d.st.Checkpoints++
	if s.pc != faddr {
		return d.fail(decode.ErrCheckpoint, "F-ADDR states %#x but the decoded flow reached %#x", faddr, s.pc)
	}
	s.tally.Good()
	return nil
}

// syncTimeOf returns, for a sync message m of rvtrace's encoder with
// SYNC=reason, whether the encoder sent it at the start of an ingress
// block with that block's time (1), with the time of the block before
// (0), or whether only the walk to it tells (-1; wasSynced: the source
// was being decoded up to it). A trace starts (SYNC=1, 5, 7...) at the
// start of a block with its time. A DirectBranchSync, an
// IndirectBranchSync, a trap's sync and an IndirectBranchHistSync with
// no history bits are a pending branch's, jump's or trap's message, sent
// once the next block came with the time of the block before. A
// ProgTraceSync (or in HTM an IndirectBranchHistSync with B-TYPE=0 and
// history bits, which may also report a jump) on linear code is sent at
// the start of a block with its time, except after a return the
// encoder's stack predicted, where it takes the return's place and time:
// it may be either unless implicit returns are off
// (DecoderConfig.NoImplicitReturn), and the walk to it, ending on an
// address it knows and not on a return it inferred, tells (sync).
func (d *Decoder) syncTimeOf(m *Message, reason uint64, wasSynced bool) int8 {
	switch {
	case !d.cfg.OwnEncoder:
		return 0
	case reason != SyncPeriodic && reason != SyncICNTFull && reason != SyncTraceEvent:
		return 1
	case m.TCode == TCodeDirectBranchSync || m.TCode == TCodeIndirectBranchSync || m.Get(FieldBTYPE) != BTypeIndirect,
		m.TCode == TCodeIndirectBranchHistSync && m.Get(FieldHIST) <= 1: // (a jump's: see syncFlow)
		return 0
	case m.TCode == TCodeProgTraceSync && d.cfg.NoImplicitReturn:
		return 1
	}
	return -1
}

// checkCycleSync checks a periodic sync counting cycles (SyncCycles);
// trap says it reports a trap. rvtrace's encoder counts the cycles from
// the time of the sync before (its timestamp) and checks the count at the
// end of each block: once the period ran out, the sync comes at the
// start of the next block. A sync sent at the start of a block with that
// block's time (s.syncTime) restarts the count there, so that block's
// end cannot run it out: the next periodic sync walks two blocks at
// least, so two instructions (a block may end after any instruction;
// one that retires nothing is a trap's, s.syncTrap); a trap's sync
// (trap), whose trap's block runs the period out, one instruction at
// least. (TestTimedIntegrity: in a loop of `j .` at the end of a program,
// a ProgTraceSync's I-CNT 4 made 1 or 0 after another, and a trap's
// IndirectBranchSync I-CNT 4 made 0.)
func (d *Decoder) checkCycleSync(s *srcState, trap bool) error {
	if s.syncTime == 0 || s.syncTrap {
		return nil
	}
	n, least := d.st.Instructions-s.syncInsts, uint64(2)
	if trap {
		least = 1 // (the trap's own block runs the period out)
	}
	if n >= least {
		return nil
	}
	if s.syncTime < 0 {
		d.revDep = true // (how the sync before was sent depends on the walk before the piece)
		return nil
	}
	return d.inconsistent("periodic sync counting cycles %d instructions after the sync before, sent at the start of a block with its time, which restarted the count there: the period runs out at the end of a later block",
		n)
}

// checkCycleTime checks the time of a message without SYNC (TSTAMP
// relative to the message before) counting cycles (SyncCycles) against
// the time of the last sync (s.syncAt). rvtrace's encoder counts the
// cycles from that sync's time and checks the count at the end of each
// block, before it reports the block's branch, jump or trap: once the
// period ran out, that message becomes a sync, sent at the start of the
// next block, where a sync on linear code comes otherwise. So a branch or
// trap message stamped a period after the sync or later is never sent;
// and a ResourceFull RCODE=0 so stamped reports the counter the block
// that ran the period out filled, after which the next message that
// counts instructions is the sync (or the end message) at the start of the
// next block, with I-CNT=0. A HIST record (ResourceFull RCODE=1) so
// stamped, from an encoder that sends it when the next branch needs room
// (LazyHistFull, without repeated history), was sent at that branch,
// which ends the block the period ran out in: the sync's walk ends there
// (checkDueHist). (TestTimedIntegrity: after a ResourceFull RCODE=0 so
// stamped, an IndirectBranchHistSync's I-CNT 0 made 1 walked the return
// at F-ADDR, whose target F-ADDR then seemed to give; after a HIST record
// so stamped, one's I-CNT 14 made 15 did the same.)
func (d *Decoder) checkCycleTime(s *srcState, m *Message) error {
	period := uint64(16) << uint(d.cfg.SyncMax)
	at := s.time + m.Get(FieldTSTAMP)
	switch m.TCode {
	case TCodeDirectBranch, TCodeIndirectBranch, TCodeIndirectBranchHist:
		if at-s.syncAt >= period {
			return d.inconsistent("%s %d cycles after the last sync, past the sync period of %d, where the encoder sends a sync instead",
				m.TCode, at-s.syncAt, period)
		}
	case TCodeResourceFull:
		if m.Get(FieldRCODE) == RCodeHist && d.cfg.LazyHistFull && d.cfg.NoRepeatedHistory && s.mode == HTM &&
			at-s.syncAt >= period {
			s.dueHist = true // (checkDueHist)
		}
		if m.Get(FieldRCODE) != RCodeICNT {
			return nil
		}
		if s.cycleDue {
			return d.inconsistent("ResourceFull RCODE=0 after the one that reported the block the sync period ran out in, where the encoder sends a sync")
		}
		s.cycleDue = at-s.syncAt >= period
	case TCodeProgTraceCorrelation:
		if s.cycleDue && m.Get(FieldICNT) != 0 {
			return d.inconsistent("the end message counts I-CNT %d after the ResourceFull that reported the block the sync period ran out in, where the encoder syncs at the start of the next",
				m.Get(FieldICNT))
		}
	}
	return nil
}

// checkSameBlock checks the TSTAMP of a branch or trap message that
// directly follows a sync sent at the start of an ingress block with that
// block's time (s.syncTime), when that block is the one whose branch,
// jump or trap it reports: a DirectBranch or a jump's message whose walk
// since is one instruction (a block ends after it), or a trap's message
// whose walk since is none (the trap is a block of its own that retires
// nothing), no trap coming between (the caller checks s.syncTrap before
// the message's own trap sets it). rvtrace's encoder stamps both messages
// with that block's time: the message's TSTAMP is 0. (TestTimedIntegrity:
// in a loop of `j .` at the end of a program, a trap's IndirectBranch
// I-CNT 4 made 0 after a periodic ProgTraceSync.)
func (d *Decoder) checkSameBlock(s *srcState, m *Message) error {
	if s.syncTime == 0 || !d.cfg.OwnEncoder || m.Get(FieldTSTAMP) == 0 {
		return nil
	}
	n, want := d.st.Instructions-s.syncInsts, uint64(1)
	if m.TCode != TCodeDirectBranch && m.Get(FieldBTYPE) != BTypeIndirect {
		want = 0
	}
	if n != want {
		return nil
	}
	if s.syncTime < 0 {
		d.revDep = true // (how the sync was sent depends on the walk before the piece)
		return nil
	}
	what := "end"
	if want == 0 {
		what = "trap"
	}
	return d.inconsistent("%s with TSTAMP %d after the sync sent at the start of the block whose %s it reports, which stamps both with its time",
		m.TCode, m.Get(FieldTSTAMP), what)
}

// lastHalfwords returns the size in halfwords of the last range emitted
// (the block that last retired lies within it; the walker keeps the last
// range event, of this source as the message being decoded walked it).
func (d *Decoder) lastHalfwords(s *srcState) uint64 {
	r := d.lastRange()
	n := uint64(2)
	if in := d.w.Img.InstPtr(r.Last); in != nil && in.Len > 0 {
		n = uint64(in.Len / 2)
	}
	return (r.Last-r.Start)/2 + n
}

// lastBlockMax returns the most halfwords the last ingress block retired
// may hold: the last range emitted (lastHalfwords) and, when the port may
// go on with a block past a direct jump or call (a 3-bit itype:
// Decoder.joinJumps), the ranges emitted just before it that ended on one
// (s.chainLast).
func (d *Decoder) lastBlockMax(s *srcState) uint64 {
	return d.lastHalfwords(s) + s.chainLast
}

// lastRange returns the last range event this decoder emitted (the
// walker keeps it; its N is 0 before the first). A decoder of a piece
// reading it before it emitted one depends on the range before the piece
// (revDep, parallel.go).
func (d *Decoder) lastRange() *flow.Event {
	r := d.w.LastRange()
	if r.N == 0 {
		d.revDep = true
	}
	return r
}

// checkFullBlock checks a trap message or a trace's end message
// (ProgTraceCorrelation) whose I-CNT is at or past the full value of the
// encoder's counter (DecoderConfig.ICNTBits). The encoder reports a full
// counter at the end of the block that filled it (ResourceFull RCODE=0,
// or in BTM with SYNC=4 at the next block) unless that block leaves a
// message pending, which then carries the count: an uninferable jump, a
// trap, or in BTM a taken branch (or with AllJumps a direct jump) once a
// periodic sync is due (its message becomes the sync, sent at the next
// block); in HTM a branch only takes a HIST bit. A trap message's I-CNT
// is then that of the trap's own block: a trap ends a block only after
// an instruction the ingress port reports with itype 0 (not a conditional
// branch, nor an uninferable jump, nor with a 4-bit itype,
// DecoderConfig.ITypeWidth, or with AllJumps a direct jump or call), and
// a trap after any other instruction is a block of its own that retires
// nothing, after a block whose full counter was reported (FuzzIntegrityNarrow's
// seed 4693c1b523fd2cf6, a trap message's I-CNT 259 turned into 267,
// onto a direct jump). At the end of the trace the end message takes the
// pending message's place: its walk ends on such a jump or branch, or on
// the last instruction of a block that ended in a trap taken before its
// handler retired (the end message does not say so; FuzzIntegrityNarrow's
// seed narrow_end_trap is such a trace); with SYNC=4 in BTM
// (NoICNTFullSync not set), the sync due at the next block never came,
// and the walk may end anywhere. (rvtrace's encoder: OwnEncoder says
// SyncMode is the encoder's, so that SyncOff means no periodic sync.)
func (d *Decoder) checkFullBlock(s *srcState, kind int) error {
	r := d.w.LastRange()
	if r.N == 0 || r.Offset != d.cur.Offset || r.Src != s.id {
		return nil // (no range of this message)
	}
	stop := kind == endStop
	if stop && s.mode == BTM && !d.cfg.NoICNTFullSync {
		return nil
	}
	branchPend := stop && s.mode == BTM && (d.cfg.SyncMode != SyncOff || !d.cfg.OwnEncoder)
	switch r.End {
	case ingress.ITypeNone:
		return nil
	case ingress.ITypeTaken, ingress.ITypeNotTaken:
		if branchPend {
			return nil
		}
	case ingress.ITypeDirectJump, ingress.ITypeDirectCall, ingress.ITypeOtherDirect:
		if d.cfg.AllJumps && branchPend || !d.cfg.AllJumps && d.cfg.ITypeWidth != 4 {
			return nil
		}
	default:
		if stop {
			return nil // an uninferable jump (or a trap after it: what the end cannot tell)
		}
	}
	what := r.End.String()
	if in := d.w.Img.InstPtr(r.Last); in != nil {
		what = riscv.Disasm(in.Raw, r.Last, d.xlen) + " (" + what + ")"
	}
	if stop {
		return d.inconsistent("the trace ends with the %d-bit I-CNT counter full after the %s at %#x, which neither leaves a message pending nor may be followed by a trap in its block",
			d.cfg.ICNTBits, what, r.Last)
	}
	return d.inconsistent("trap with the %d-bit I-CNT counter full after the %s at %#x, which ends an ingress block: the encoder reports the full counter after that block and the trap with I-CNT=0",
		d.cfg.ICNTBits, what, r.Last)
}

// lastBlock bounds the size in halfwords of the last ingress block
// retired: within the last range emitted (and, when the port may go on
// with a block past a direct jump or call, the ranges before it that
// ended on one: s.chainLast), and after the point where a ResourceFull
// RCODE=0 said the counter was full, at the end of a block.
func (d *Decoder) lastBlock(s *srcState) uint64 {
	n := d.lastBlockMax(s)
	if s.lastFull != 0 && s.hwSync > s.lastFull && s.hwSync-s.lastFull < n {
		// (when the walk ends at that point, the last block is the one
		// that ends there)
		n = s.hwSync - s.lastFull
	}
	return n
}

// msgsPastPeriod reports, for a BTM trace with periodic sync counting
// messages, whether the messages since the last sync (before the current
// one) had reached the period before the current one was due (a
// RepeatBranch is sent along with the message after it). (In HTM, HIST
// records sent within a block blur the count.)
func (d *Decoder) msgsPastPeriod(s *srcState) bool {
	if d.cfg.SyncMode != SyncMessages || s.mode != BTM {
		return false
	}
	n, period := s.msgSync-1, uint64(1)<<uint(d.cfg.SyncMax+4)
	return n >= period+1 || n == period && s.prevMsg != TCodeRepeatBranch
}

// checkDueWalk checks the walk of a sync message (or of the end message)
// that came once the sync period had run out (BTM counting messages,
// msgsPastPeriod) at a branch message (s.dueExact). The encoder then
// turns the first flow message into a sync, or sends a ProgTraceSync at
// the start of the next ingress block: the message covers one block at
// most. (When an Ownership or ResourceFull message completed the period,
// the blocks retired before it are in the walk too: nothing is checked.)
// As in checkDueBlock, the walk's ranges are blocks with a 4-bit ingress
// itype (DecoderConfig.ITypeWidth); a 3-bit port may go on with a block
// past a direct jump or call, which ends a range (counting those made a
// gap of such an intact trace: TestDueWalkThreeBitPort), so then only
// the ranges that end otherwise count (Decoder.walkJoins).
func (d *Decoder) checkDueWalk(s *srcState) error {
	if n := d.walkRanges - d.walkJoins; (d.cfg.ITypeWidth == 4 || d.joinJumps) && n > 1 {
		return d.inconsistent("%s %d blocks after the sync period (%d messages) ran out", d.cur.TCode, n,
			s.msgSync-1)
	}
	return nil
}

// checkDueBlock checks, in HTM, the walk of a sync message (or of the
// end message) that came once a branch message completed the sync period
// counting messages (s.dueExact). rvtrace's encoder sends a branch message
// at the start of the ingress block after the jump it reports, and once
// the period ran out the block after that one begins with a sync (the
// pending jump's or trap's sync form, or one on linear code): the walk
// since the branch message, through the HIST records sent meanwhile and
// the sync's own, covers that one block. With a 4-bit ingress itype
// (DecoderConfig.ITypeWidth) every range the decoder emits but the last
// of a walk ends a block (a branch, a jump), so the walk emits one range
// at most (FuzzIntegrityNarrow's seed 2fa0dd14b6cf55a9 grew a sync's
// I-CNT by 4 halfwords past the block's taken branch to the next jump,
// an extra call that re-encodes otherwise). With 3 bits a direct jump or
// call may not end a block: only the ranges that end otherwise count
// (Decoder.joins; TestThreeBitIntegrity).
func (d *Decoder) checkDueBlock(s *srcState) error {
	if n := d.ranges - d.joins - s.dueRanges; (d.cfg.ITypeWidth == 4 || d.joinJumps) && n > 1 {
		return d.inconsistent("%s walks %d blocks after the sync period (%d messages) ran out, where the encoder sends a sync after one",
			d.cur.TCode, n, uint64(1)<<uint(d.cfg.SyncMax+4))
	}
	return nil
}

// checkDueFull checks a periodic sync, or the end message, that came
// once a ResourceFull RCODE=0 completed the sync period counting messages
// (s.dueFull; with DecoderConfig.ICNTBits known, so that s.lastFull is
// kept), or after a branch message completed it (s.dueExact,
// s.fullLast). rvtrace's encoder sends that message at the end of the
// ingress block that filled the counter, or after a return its stack
// predicted at the start of the next block, before it counts (not once a
// sync is due: it then syncs there); either way no message is pending,
// and the sync comes at the start of the next block after it: the walk
// from the point where the counter was full (or from a later such point)
// to the sync or the end covers nothing, or when the message completed
// the period after a predicted return, one block at most, which lies
// within the last range (and, with a 3-bit itype, the ranges before it
// that ended on a direct jump or call: s.chainLast). (TestDueSyncWalk:
// those syncs were left out before; a 3-bit BTM trace's end message
// I-CNT 0 turned into 3 after a ResourceFull sent once a trap message
// completed the period, in a loop of direct jumps, decoded 3 instructions
// too many.)
func (d *Decoder) checkDueFull(s *srcState) error {
	if s.lastFull == 0 || s.hwSync < s.lastFull {
		return nil
	}
	n, most := s.hwSync-s.lastFull, uint64(0)
	if !d.cfg.NoImplicitReturn && !s.fullLast {
		most = d.lastBlockMax(s)
	}
	if n > most {
		return d.inconsistent("%s walks %d halfwords after the ResourceFull that completed the sync period (%d messages), more than the encoder retires before its sync",
			d.cur.TCode, n, uint64(1)<<uint(d.cfg.SyncMax+4))
	}
	return nil
}

// checkDueHist checks, in HTM, the sync message (or the end message)
// that came once a HIST record (ResourceFull RCODE=1) completed the sync
// period counting messages (s.dueHist). rvtrace's encoder, without
// repeated history and with LazyHistFull, sends a full HIST record when
// the next branch needs room in the register: that branch's bit is the
// first of the next register, and it ends the ingress block being
// retired, after which the block that follows begins with a sync (on
// linear code, carrying that bit). So the message's HIST holds exactly
// one branch, on which its walk ends (TestCountReturnSync: a sync's I-CNT
// grown by 4 halfwords past that branch to the next jump).
func (d *Decoder) checkDueHist(s *srcState, m *Message) error {
	r := d.w.LastRange()
	if h := m.Get(FieldHIST); h >= 2 && h <= 3 && r.N != 0 && r.Offset == m.Offset && r.Src == s.id && r.End.IsBranch() {
		return nil
	}
	return d.inconsistent("%s after the HIST record sent once the sync period (trTeInstSyncMax=%d) ran out does not end on the branch that record was sent at",
		m.TCode, d.cfg.SyncMax)
}

// predicted reports whether the encoder's return stack predicted a return
// to target, the return the walk just passed (d.popped): the encoder then
// sends no message for it (ReturnStack, ReturnPartialBits). The seed
// 8a042b73c9f3997d of FuzzIntegrityNarrow: with partial addresses, an
// I-CNT shortened onto a return its stack predicted, whose target the
// message then seemed to give.
func (d *Decoder) predicted(target uint64) bool {
	if !d.poppedOK {
		return false
	}
	if d.cfg.ReturnStack {
		return d.popped == target
	}
	if b := d.cfg.ReturnPartialBits; b != 0 {
		return (d.popped^target)&(1<<uint(b)-1) == 0
	}
	return false
}

// checkTrapSync checks a trap reported by a sync message (the encoder's
// first flow message once a periodic sync is due). Every conditional
// branch and every uninferable jump (one the decoder infers: an implicit
// return, a sequentially inferable jump) ends an ingress block (its itype
// describes its last instruction), and a trap after one is a block of its
// own that retires nothing. So does a direct jump or call when the
// ingress itype has 4 bits (DecoderConfig.ITypeWidth; with 3 bits its
// itype is 0, and a trap may end its block). Had the sync been due when
// that block began, the encoder would have sent a ProgTraceSync there and
// then the trap with I-CNT=0; and within it, nothing brings the sync closer:
// counting halfwords, it retires none; counting messages, only an
// Ownership message could be sent there (or, in BTM, the branch message
// that completed the period was sent right before the walk, s.dueExact).
// So the last instruction the message's walk (HIST bits and I-CNT) ends
// on must not be one that ends a block.
func (d *Decoder) checkTrapSync(s *srcState, m *Message) error {
	if !d.cfg.OwnEncoder || d.w.LastRange().Offset != m.Offset || d.w.LastRange().Src != s.id {
		return nil // (no range of this message)
	}
	switch d.w.LastRange().End {
	case ingress.ITypeNone:
		return nil
	case ingress.ITypeDirectJump, ingress.ITypeDirectCall, ingress.ITypeOtherDirect:
		if d.cfg.ITypeWidth != 4 {
			return nil
		}
	}
	switch d.cfg.SyncMode {
	case SyncHalfwords:
	case SyncMessages:
		if !(d.cfg.NoContext || s.ctx == 0 || d.msgsPastPeriod(s) && s.dueExact) {
			return nil
		}
	default:
		return nil
	}
	what := d.w.LastRange().End.String()
	if in := d.w.Img.InstPtr(d.w.LastRange().Last); in != nil {
		what = riscv.Disasm(in.Raw, d.w.LastRange().Last, d.xlen) + " (" + what + ")"
	}
	return d.inconsistent("trap right after the %s at %#x, which ends an ingress block, reported by a sync message: the encoder sends a sync after that block and the trap with I-CNT=0",
		what, d.w.LastRange().Last)
}

// checkNotDue checks that a branch message without SYNC came before the
// sync period ran out: the encoder turns the first branch message after
// it into a sync. (Counting messages, HIST records and Ownership messages
// sent meanwhile blur the count: nothing is checked then.)
func (d *Decoder) checkNotDue(s *srcState) error {
	if d.cfg.SyncMode == SyncOff {
		return nil
	}
	if d.msgsPastPeriod(s) {
		return d.inconsistent("branch message without SYNC %d messages after the last sync, past the sync period",
			s.msgSync-1)
	}
	period := uint64(1) << uint(d.cfg.SyncMax+4)
	if d.cfg.SyncMode == SyncHalfwords && s.hwSync >= period {
		return d.inconsistent("branch message without SYNC %d halfwords after the last sync, past the sync period of %d",
			s.hwSync, period)
	}
	return nil
}

// checkPeriod checks a periodic sync against the sync period, when the
// configuration gives it: the encoder sends it at the first chance once
// the count since the previous sync reached the period.
func (d *Decoder) checkPeriod(s *srcState) error {
	period := uint64(1) << uint(d.cfg.SyncMax+4)
	switch d.cfg.SyncMode {
	case SyncHalfwords:
		// The count crossed the period in the last block retired, which
		// lies within the last range.
		last := d.lastBlock(s)
		if s.hwSync < period || s.hwSync > period-1+last {
			return d.inconsistent("periodic sync after %d halfwords, not at the period of %d (trTeInstSyncMax=%d)",
				s.hwSync, period, d.cfg.SyncMax)
		}
	case SyncMessages:
		// Messages before this one: a sync waits for a flow message, and
		// the ResourceFull (HIST or I-CNT full) and Ownership messages
		// sent meanwhile are not bounded (a long loop in HTM fills HIST
		// again and again), so only the others are.
		n := s.msgSync - 1
		if n < period || n-s.fillSync > 2*period+16 {
			return d.inconsistent("periodic sync after %d messages, not at the period of %d (trTeInstSyncMax=%d)",
				n, period, d.cfg.SyncMax)
		}
	}
	return nil
}

func (d *Decoder) timestamp(s *srcState, m *Message) error {
	if !m.Present(FieldTSTAMP) {
		return nil
	}
	s.time += m.Get(FieldTSTAMP)
	d.ev = flow.Event{Kind: flow.KindTime, Src: s.id, Time: s.time, Offset: m.Offset}
	return d.w.Sink.Event(&d.ev)
}

func (d *Decoder) ownership(s *srcState, m *Message) error {
	format, p, ctx := ParseProcess(m.Get(FieldPROCESS))
	if format == 1 || p == ingress.Priv(2) {
		return d.fail(decode.ErrMalformed, "PROCESS %#x has a reserved FORMAT or privilege encoding", m.Get(FieldPROCESS))
	}
	s.priv = p
	if format == 0 {
		// FORMAT 0 reports the privilege only: the context is unchanged
		ctx = s.context
	}
	s.context = ctx
	if d.w.Base.HasContexts() {
		// the images valid in this context (image.Set.View)
		d.w.View(ctx, d.st.Instructions)
	}
	d.ev = flow.Event{Kind: flow.KindContext, Src: s.id, Priv: p, Context: ctx, Offset: m.Offset,
		Reason: uint32(format)}
	if err := d.w.Sink.Event(&d.ev); err != nil {
		return err
	}
	return d.timestamp(s, m)
}

// ---------------------------------------------------------------- walking

// push and pop mirror the encoder's return-address stack and nesting
// counter.
func (s *srcState) push(a uint64) {
	if s.calls < s.callsMax {
		s.calls++
	}
	s.stack.Push(a)
}

func (s *srcState) pop() (uint64, bool) { return s.stack.Pop() }

// emitRange reports n instructions from start to last, hw halfwords.
func (d *Decoder) emitRange(s *srcState, start, last uint64, n, hw uint32, end ingress.IType, next uint64, hasNext bool) error {
	if s.rfHead < len(s.rfPts) {
		if err := d.checkFullPoints(s, start, last); err != nil {
			return err
		}
	}
	d.st.Instructions += uint64(n)
	d.walkRanges++
	d.ranges++
	if d.cfg.MaxInstructions > 0 && d.st.Instructions > d.cfg.MaxInstructions {
		s.tally.Emit(uint64(n))
		return ErrTooManyInstructions
	}
	ev := d.w.Range()
	ev.Src, ev.Start, ev.Last, ev.N, ev.End = s.id, start, last, uint64(n), end
	ev.Target, ev.HasTarget, ev.Priv, ev.Offset = next, hasNext, s.priv, d.cur.Offset
	if d.joinJumps {
		d.join(s, end, hw)
	}
	return d.w.Send(&s.tally)
}

// join keeps, when the ingress port may go on with a block past a direct
// jump or call (Decoder.joinJumps), the ranges the walk emits that end on
// one (srcState.chain, Decoder.joins) as emitRange emits a range of hw
// halfwords that ends as end says.
func (d *Decoder) join(s *srcState, end ingress.IType, hw uint32) {
	s.chainLast = s.chain
	switch end {
	case ingress.ITypeDirectJump, ingress.ITypeDirectCall, ingress.ITypeOtherDirect:
		s.chain += uint64(hw)
		d.walkJoins++
		d.joins++
	default:
		s.chain = 0
	}
}

// hist consumes the branch outcomes of a HIST value (stop bit first).
func (d *Decoder) hist(s *srcState, h uint64) error {
	if h == 0 {
		return d.inconsistent("HIST field without stop bit")
	}
	s.chain = 0 // (the message's walk begins a block)
	for bit := 62 - bits.LeadingZeros64(h); bit >= 0; bit-- {
		if err := d.walkToBranch(s, h>>uint(bit)&1 == 1); err != nil {
			return err
		}
		if s.histBound != 0 {
			if s.used > s.histBound {
				return d.inconsistent("a HIST record was sent at the branch ending %d halfwords after the I-CNT counter was reset, after the ResourceFull saying it was full after %d",
					s.used, s.histBound)
			}
			s.histBound = 0
		}
		if s.histFloor != 0 {
			if s.used <= s.histFloor {
				return d.inconsistent("a HIST record was sent at the branch ending %d halfwords after the I-CNT counter was reset, before the ResourceFull sent ahead of it saying it was full after %d",
					s.used, s.histFloor)
			}
			s.histFloor = 0
		}
	}
	if s.used-s.icntAcc > maxICNT {
		// (each bit's walk is bounded; this bounds a long repeat)
		return d.fail(decode.ErrMalformed, "HIST bits walk more than %d halfwords beyond the I-CNT reported", uint64(maxICNT))
	}
	return nil
}

// walkToBranch walks from the current PC through inferable instructions
// to the next conditional branch (or, with AllJumps, direct jump) and
// applies the outcome taken to it.
func (d *Decoder) walkToBranch(s *srcState, taken bool) error {
	for guard := 0; ; guard++ {
		if guard > 1<<16 {
			return d.inconsistent("no branch found for a HIST bit after %d runs", guard)
		}
		r, err := d.run(s.pc)
		if err != nil {
			return d.walkErr(s.pc, err)
		}
		last := &r.Inst
		s.used += int64(r.Halfwords)
		if d.isHistInst(last) {
			if !taken && last.Class == riscv.ClassJump {
				return d.inconsistent("direct jump at %#x reported as not taken", r.Last)
			}
			next, _, it := r.Exit(taken)
			if last.Class == riscv.ClassJump && last.Link == riscv.LinkCall {
				s.push(last.Next(r.Last))
			}
			return d.leave(s, r, it, d.mask(next))
		}
		next, it, err := d.inferNext(s, r, last, true)
		if err != nil {
			return err
		}
		if err := d.leave(s, r, it, next); err != nil {
			return err
		}
	}
}

// leave emits run r, which execution leaves for next as it says, and
// moves the PC there.
func (d *Decoder) leave(s *srcState, r *decode.Block, it ingress.IType, next uint64) error {
	if err := d.emitRange(s, r.Start, r.Last, r.N, r.Halfwords, it, next, true); err != nil {
		return err
	}
	s.setPrev(&r.Inst, r.Last)
	s.pc = next
	return nil
}

func (s *srcState) setPrev(in *riscv.Inst, pc uint64) { s.prevIn, s.prevPC, s.prevOK = in, pc, true }

// isHistInst reports whether the instruction takes a HIST bit.
func (d *Decoder) isHistInst(in *riscv.Inst) bool {
	return in.Class == riscv.ClassBranch || d.cfg.AllJumps && in.Class == riscv.ClassJump
}

// inferNext returns where execution continues after the control-flow
// instruction ending run r when the trace did not report it: direct jumps,
// implicit returns, sequentially inferable jumps, not-taken branches, and
// ecall/ebreak handled without a trap. mid tells whether more instructions
// follow in the walk (an explicit jump cannot be passed).
func (d *Decoder) inferNext(s *srcState, r *decode.Block, last *riscv.Inst, mid bool) (uint64, ingress.IType, error) {
	pc := r.Last
	switch last.Class {
	case riscv.ClassBranch:
		if s.mode == HTM {
			// (walkToBranch gives every branch its HIST bit before)
			return 0, ingress.ITypeNotTaken, d.noHist(r)
		}
		next, _, it := r.Exit(false)
		return next, it, nil
	case riscv.ClassJump:
		if d.cfg.AllJumps && s.mode == HTM {
			return 0, ingress.ITypeNone, d.noHist(r)
		}
		if last.Link == riscv.LinkCall {
			s.push(last.Next(pc))
		}
		next, _, it := r.Exit(true)
		return d.mask(next), it, nil
	case riscv.ClassECall, riscv.ClassEBreak, riscv.ClassLinear:
		next, _, it := r.Exit(false)
		return d.mask(next), it, nil
	case riscv.ClassIndirect, riscv.ClassPopRet:
		it := ingress.ITypeOf(*last, true)
		if t, ok := d.seqTarget(s, r, last); ok && !d.cfg.NoSequentialJump {
			if it.Pops() {
				s.pop()
				if s.calls > 0 {
					s.calls--
				}
			}
			if it.Pushes() {
				s.push(last.Next(pc))
			}
			return t, it, nil
		}
		if it.Pops() && !d.cfg.NoImplicitReturn {
			if s.callsMax > 0 {
				if s.calls == 0 {
					return 0, it, d.inconsistent("return at %#x passed without a message while the encoder's call count is 0", pc)
				}
				s.calls--
			}
			t, ok := s.pop()
			if !ok {
				return 0, it, d.inconsistent("return at %#x with no call on the stack (trace and image disagree)", pc)
			}
			if it.Pushes() {
				s.push(last.Next(pc))
			}
			return t, it, nil
		}
		return 0, it, d.inconsistent("indirect jump at %#x passed without a message (trace and image disagree)", pc)
	case riscv.ClassTableJump:
		it := ingress.ITypeOf(*last, true)
		t, err := d.tableTarget(last)
		if err != nil {
			return 0, it, d.inconsistent("table jump at %#x: %v", pc, err)
		}
		if last.Link == riscv.LinkCall {
			s.push(last.Next(pc))
		}
		return t, it, nil
	case riscv.ClassTrapReturn:
		return 0, ingress.ITypeTrapReturn, d.inconsistent("trap return at %#x passed without a message", pc)
	}
	return 0, ingress.ITypeNone, d.inconsistent("illegal instruction %#x at %#x on the traced path", last.Raw, pc)
}

// tableTarget reads the target of a Zcmt table jump from the jump table
// in the image.
func (d *Decoder) tableTarget(in *riscv.Inst) (uint64, error) {
	if d.cfg.JVT == 0 {
		return 0, errors.New("the jump table base (jvt) is not known to the decoder (--jvt)")
	}
	size := uint64(d.xlen / 8)
	addr := d.cfg.JVT&^63 + uint64(in.Index)*size
	var buf [8]byte
	if d.w.Img.Read(addr, buf[:size]) != int(size) {
		return 0, fmt.Errorf("jump table entry %d at %#x is not in the image", in.Index, addr)
	}
	t := uint64(buf[0]) | uint64(buf[1])<<8 | uint64(buf[2])<<16 | uint64(buf[3])<<24
	if size == 8 {
		t |= uint64(buf[4])<<32 | uint64(buf[5])<<40 | uint64(buf[6])<<48 | uint64(buf[7])<<56
	}
	return t &^ 1, nil
}

func (d *Decoder) mask(a uint64) uint64 {
	if d.xlen == 32 {
		return a & (1<<32 - 1)
	}
	return a
}

// seqTarget finds the target of an uninferable jump from the auipc/lui
// retired just before it.
func (d *Decoder) seqTarget(s *srcState, r *decode.Block, jmp *riscv.Inst) (uint64, bool) {
	var prev *riscv.Inst
	if r.N == 1 && s.prevOK && s.prevPC+uint64(s.prevIn.Len) == r.Last {
		prev = s.prevIn
	}
	return decode.SeqTarget(r, jmp, prev, s.prevPC, d.xlen)
}

// finish walks the rest of an I-CNT field: the instructions after the last
// HIST branch. kind says what the message tells about the last one.
func (d *Decoder) finish(s *srcState, icnt uint64, kind int) error {
	if err := d.finishWalk(s, icnt, kind); err != nil {
		return err
	}
	if d.cfg.ICNTBits == 0 {
		return nil
	}
	if err := d.checkOvershoot(s, icnt); err != nil {
		return err
	}
	if s.lastFull != 0 && s.lastFull == s.hwSync && (kind == endIndirect || kind == endSync && !d.pcKnown && !d.inferredEnd) {
		// The walk ends on an uninferable jump this message reports,
		// where a ResourceFull RCODE=0 said the counter was full: the
		// encoder reports a full counter at the end of a block only when
		// no message is pending, and a jump's message carries the count
		// (FuzzIntegrityNarrow's seed 969414b8ee2fd782: a flipped F-ADDR
		// bit sent the walk to a return whose target the next sync gave)
		r := d.w.LastRange()
		return d.inconsistent("ResourceFull reports the I-CNT counter full at the uninferable jump at %#x, which %s reports: the encoder sends the count in the jump's message",
			r.Last, d.cur.TCode)
	}
	if kind == endTaken {
		if err := d.checkFullTaken(s); err != nil {
			return err
		}
	}
	if (kind == endStop || kind == endTrap) && icnt >= d.icntLimit() {
		return d.checkFullBlock(s, kind)
	}
	return nil
}

// checkFullTaken checks the walk of a message reporting a taken branch
// (DirectBranch, DirectBranchSync) against a ResourceFull RCODE=0 saying
// the I-CNT counter was full exactly where it ends: the encoder sends the
// branch's message, which carries the count, at the branch (or, once a
// sync is due, at the next block), and reports a full counter only when
// no message is pending. (TestThreeBitIntegrity: a DirectBranch's I-CNT
// 6 turned into 0, after a ResourceFull whose RDATA of 47 ended on a
// taken branch, in BTM with a 6-bit counter.)
func (d *Decoder) checkFullTaken(s *srcState) error {
	if s.lastFull == 0 || s.lastFull != s.hwSync {
		return nil
	}
	return d.inconsistent("ResourceFull reports the I-CNT counter full at the taken branch at %#x, which %s reports: the encoder sends the count in the branch's message",
		d.w.LastRange().Last, d.cur.TCode)
}

// checkOvershoot checks an I-CNT against the width of the encoder's
// counter.
func (d *Decoder) checkOvershoot(s *srcState, icnt uint64) error {
	// (an I-CNT field reset the counter: what ResourceFull RCODE=0
	// messages said of it before was walked)
	s.histRec, s.histBound, s.histFloor = false, 0, 0
	if lim := d.icntLimit(); icnt >= lim+d.lastBlockMax(s) {
		// (the counter was full before the last block began, which
		// lies within the last range, or the ranges before it that
		// ended on a direct jump a block may go on past (chainLast):
		// FuzzIntegrityNarrow's seed 447abe05c9612854, where the last
		// instruction was compressed)
		return d.inconsistent("I-CNT %d overshoots the %d-bit counter (full at %d) by more than the last block",
			icnt, d.cfg.ICNTBits, lim)
	}
	return nil
}

// fullPoint takes the I-CNT r of a ResourceFull RCODE=0 message from an
// encoder whose counter width is known (DecoderConfig.ICNTBits), which
// reports a full counter at the end of the ingress block that filled it:
// at that point of the walk (the counter's value since it was last reset)
// an instruction ends, and the block began before the counter was full.
// HIST records sent before the message cover branches up to that point at
// most. The point is checked when the walk reaches it (checkFullPoints).
func (d *Decoder) fullPoint(s *srcState, r int64) error {
	if s.icntAcc == 0 {
		// the first since the counter was reset by an I-CNT field
		s.rfBase, s.rfPts, s.rfHead = 0, s.rfPts[:0], 0
	}
	p := s.icntAcc + r
	s.lastFull = s.hwSync + uint64(p)
	if d.cfg.LazyHistFull && s.histRec {
		// the branch after the last HIST record, where it was sent,
		// comes at p at the latest
		if s.histBound == 0 || p < s.histBound {
			s.histBound = p
		}
		s.histRec = false
	}
	if p < s.used {
		return d.inconsistent("ResourceFull reports the I-CNT counter full after %d halfwords, but the HIST records before it cover %d",
			p, s.used)
	}
	if s.rfHead == len(s.rfPts) {
		s.rfPts, s.rfHead, s.rfPos = s.rfPts[:0], 0, s.used
		if p == s.used {
			// (the walk is there: the last range ends at the point, and
			// the block that ends there began in it, or in the ranges
			// before it that ended on a direct jump a block may go on
			// past: chainLast)
			if r := d.lastRange(); r.N != 0 && r.Src == s.id &&
				s.used-int64(d.lastBlockMax(s))-s.rfBase >= int64(d.icntLimit()) {
				return d.fullTooLate(s, p, r.Start)
			}
			s.rfBase = p
			return nil
		}
	}
	s.rfPts = append(s.rfPts, p)
	return nil
}

// checkFullPoints checks the points where ResourceFull messages said the
// I-CNT counter was full (fullPoint) that lie in the range the walk
// emits next, from start to last. The range starts where an ingress
// block does (after a control-flow instruction, or at an address a
// message gave), so the block that filled the counter started in it at
// the earliest, or in the ranges before it that ended on a direct jump
// or call when the port may go on with a block past one (s.chain: with a
// 3-bit itype, TestPeriodThreeBitPort).
func (d *Decoder) checkFullPoints(s *srcState, start, last uint64) error {
	in := d.w.Img.InstPtr(last)
	if in == nil || in.Len == 0 {
		return nil // (the walk reports it)
	}
	from := s.rfPos
	s.rfPos += int64((last-start)/2) + int64(in.Len/2)
	for s.rfHead < len(s.rfPts) && s.rfPts[s.rfHead] <= s.rfPos {
		p := s.rfPts[s.rfHead]
		if from-int64(s.chain)-s.rfBase >= int64(d.icntLimit()) {
			return d.fullTooLate(s, p, start)
		}
		if p < s.rfPos {
			pc, at := start, from
			for {
				in := d.w.Img.InstPtr(pc)
				if in == nil || in.Len == 0 {
					return nil // (the walk reports it)
				}
				if at += int64(in.Len / 2); at >= p {
					break
				}
				pc = d.mask(pc + uint64(in.Len))
			}
			if at != p {
				return d.inconsistent("ResourceFull reports the I-CNT counter full after %d halfwords, inside the instruction at %#x",
					p-s.rfBase, pc)
			}
		}
		s.rfBase = p
		s.rfHead++
	}
	return nil
}

// fullTooLate reports a ResourceFull RCODE=0 at point p of the walk whose
// block, which cannot have begun before from, began with the counter full.
func (d *Decoder) fullTooLate(s *srcState, p int64, from uint64) error {
	return d.inconsistent("ResourceFull reports the I-CNT counter full after %d halfwords, but it was full (%d-bit counter) before the block from %#x that ends there began",
		p-s.rfBase, d.cfg.ICNTBits, from)
}

// icntLimit is the value at which the encoder's I-CNT counter is full (1
// when the width is not known).
func (d *Decoder) icntLimit() uint64 {
	if d.cfg.ICNTBits == 0 {
		return 1
	}
	return 1 << uint(d.cfg.ICNTBits-1)
}

func (d *Decoder) finishWalk(s *srcState, icnt uint64, kind int) error {
	s.hwSync += uint64(s.icntAcc) + icnt
	rem := s.icntAcc + int64(icnt) - s.used
	s.icntAcc, s.used = 0, 0
	d.pcKnown, d.poppedOK, d.inferredEnd = true, false, false
	d.walkRanges, d.walkJoins = 0, 0
	// (the message's walk begins a block; one of HIST bits ended on a branch)
	s.chain = 0
	if uint64(rem) > maxICNT { // (one test for both bounds)
		if rem < 0 {
			return d.inconsistent("I-CNT %d is smaller than the %d halfwords its history covers (HIST bits left over)",
				icnt, -rem+int64(icnt))
		}
		return d.fail(decode.ErrMalformed, "I-CNT fields add up to %d halfwords, beyond the decoder's bound", rem)
	}
	for rem > 0 {
		r, err := d.run(s.pc)
		if err != nil || int64(r.Halfwords) > rem {
			// The count ends inside this run (or the run cannot be formed):
			// walk instruction by instruction.
			return d.finishPartial(s, rem, kind)
		}
		rem -= int64(r.Halfwords)
		last := &r.Inst
		if rem == 0 {
			if s.mode == HTM && d.isHistInst(last) {
				return d.noHist(r)
			}
			return d.lastInst(s, r, last, kind)
		}
		// (inferNext checks that an HTM trace has no branch here)
		next, it, err := d.inferNext(s, r, last, true)
		if err != nil {
			return err
		}
		if err := d.leave(s, r, it, next); err != nil {
			return err
		}
	}
	if kind == endTaken {
		return d.inconsistent("DirectBranch with I-CNT=0 after its history")
	}
	if kind == endIndirect {
		// I-CNT ends exactly after the previous walk: the jump was the
		// instruction that ended it (a HIST branch cannot be a jump).
		return d.inconsistent("indirect branch message with no instruction for its jump")
	}
	return nil
}

// finishPartial walks rem halfwords that end before the control-flow
// instruction of the run at the PC: the message ends on a linear
// instruction (trap, sync, stop).
func (d *Decoder) finishPartial(s *srcState, rem int64, kind int) error {
	if d.w.Due(d.st.Instructions) {
		d.nextEpoch()
	}
	start, hw := s.pc, uint32(rem)
	pc := s.pc
	var n uint32
	var last *riscv.Inst
	var lastPC uint64
	for rem > 0 {
		in := d.w.Img.InstPtr(pc)
		if in == nil {
			return d.fail(decode.ErrOutsideImage, "the flow reaches %#x, outside every image", pc)
		}
		if in.Len == 0 {
			return d.inconsistent("reserved instruction encoding at %#x", pc)
		}
		hw := int64(in.Len / 2)
		if hw > rem {
			return d.inconsistent("I-CNT ends inside the %d-byte instruction at %#x", in.Len, pc)
		}
		if in.Class != riscv.ClassLinear && in.Class != riscv.ClassECall && in.Class != riscv.ClassEBreak &&
			in.Class != riscv.ClassIllegal && hw != rem {
			return d.inconsistent("control-flow instruction at %#x inside a straight run", pc)
		}
		rem -= hw
		n++
		last, lastPC = in, pc
		s.setPrev(in, pc)
		pc = d.mask(pc + uint64(in.Len))
	}
	if last.Class == riscv.ClassIllegal && kind != endTrap {
		return d.inconsistent("illegal instruction %#x at %#x on the traced path", last.Raw, lastPC)
	}
	if last.Class != riscv.ClassLinear && last.Class != riscv.ClassECall && last.Class != riscv.ClassEBreak &&
		last.Class != riscv.ClassIllegal {
		// cannot happen: a run ends at the first control-flow instruction
		return d.inconsistent("unexpected control flow at %#x", lastPC)
	}
	switch kind {
	case endTaken:
		return d.inconsistent("DirectBranch I-CNT ends at %#x, which is not a branch", lastPC)
	case endIndirect:
		// Only a custom (or unknown) instruction changing the flow is
		// traced as an indirect jump (N-Trace "Custom Instructions").
		if last.Class != riscv.ClassIllegal {
			return d.inconsistent("indirect branch message I-CNT ends at %#x, on %s, not a jump", lastPC,
				riscv.Disasm(last.Raw, lastPC, d.xlen))
		}
	}
	s.pc = pc
	return d.emitRange(s, start, lastPC, n, hw, ingress.ITypeNone, pc, kind != endIndirect)
}

// noHist reports the branch ending run r, passed in an I-CNT walk of an
// HTM trace, where every branch takes a HIST bit.
func (d *Decoder) noHist(r *decode.Block) error {
	return d.inconsistent("the %s at %#x has no HIST bit (history missing)",
		riscv.Disasm(r.Inst.Raw, r.Last, d.xlen), r.Last)
}

// lastInst applies the control-flow instruction that ends an I-CNT walk.
func (d *Decoder) lastInst(s *srcState, r *decode.Block, last *riscv.Inst, kind int) error {
	pc := r.Last
	switch kind {
	case endTaken:
		if last.Class != riscv.ClassBranch && !(d.cfg.AllJumps && last.Class == riscv.ClassJump) {
			return d.inconsistent("DirectBranch I-CNT ends at %#x, which is not a branch", pc)
		}
		next, _, it := r.Exit(true)
		next = d.mask(next)
		if last.Class == riscv.ClassJump && last.Link == riscv.LinkCall {
			s.push(last.Next(pc))
		}
		return d.leave(s, r, it, next)
	case endIndirect:
		it := ingress.ITypeOf(*last, true)
		switch {
		case decode.Uninferable(last.Class):
		case last.Class == riscv.ClassIllegal:
			// custom (or unknown) instruction traced as an indirect jump
		default:
			return d.inconsistent("indirect branch message ends at %#x, on %s, not an uninferable jump", pc,
				riscv.Disasm(last.Raw, pc, d.xlen))
		}
		if it.Pops() {
			if s.callsMax > 0 && s.calls > 0 {
				return d.inconsistent("return at %#x reported while the encoder's call count (%d) predicts it", pc, s.calls)
			}
			d.popped, d.poppedOK = s.pop()
		}
		if it.Pushes() {
			s.push(last.Next(pc))
		}
		s.setPrev(last, pc)
		// The target comes from the message: the caller sets s.pc.
		return d.emitRange(s, r.Start, pc, r.N, r.Halfwords, it, 0, false)
	}
	// endTrap, endSync, endStop: the last instruction's effect is inferred
	// when it can be; an uninferable one at a sync is resolved by F-ADDR.
	next, it, err := d.inferNext(s, r, last, false)
	if err != nil {
		if kind == endTrap {
			return err
		}
		// sync or stop: the next address comes from the message (or the
		// trace ends); report the range without a target
		d.pcKnown = false
		if err := d.emitRange(s, r.Start, pc, r.N, r.Halfwords, ingress.ITypeOf(*last, false), 0, false); err != nil {
			return err
		}
		s.setPrev(last, pc)
		return nil
	}
	if err := d.leave(s, r, it, next); err != nil {
		return err
	}
	if kind == endSync && last.Class != riscv.ClassJump && last.Class != riscv.ClassBranch && last.Class != riscv.ClassLinear {
		// an uninferable jump the decoder followed with its stack or a
		// sequential pair: F-ADDR tells where it really went, unless the
		// message is a sync on linear code, which an encoder sends after
		// a jump only when the jump was inferable (a predicted return)
		d.pcKnown, d.inferredEnd = false, true
	}
	return nil
}
