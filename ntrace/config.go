package ntrace

import (
	"fmt"
	"sort"
	"strings"
)

// Mode is the instruction trace mode (trTeInstMode).
type Mode uint8

// Trace modes.
const (
	// BTM is Branch Trace Messaging (trTeInstMode=3): a DirectBranch
	// message per taken conditional branch.
	BTM Mode = 3
	// HTM is History Trace Messaging (trTeInstMode=6): conditional branch
	// outcomes collected as HIST bits.
	HTM Mode = 6
)

// String returns "btm" or "htm".
func (m Mode) String() string {
	switch m {
	case BTM:
		return "btm"
	case HTM:
		return "htm"
	}
	return fmt.Sprintf("mode%d", uint8(m))
}

// Implicit return modes (trTeInstImplicitReturnMode).
const (
	ReturnOff     = 0 // returns always reported
	ReturnCount   = 1 // simple nesting counter
	ReturnPartial = 2 // stack of partial (low) return addresses
	ReturnFull    = 3 // stack of full return addresses
)

// Periodic synchronisation modes (trTeInstSyncMode).
const (
	SyncOff       = 0 // no periodic sync
	SyncMessages  = 1 // count messages
	SyncCycles    = 2 // count hart clock cycles (the ingress time)
	SyncHalfwords = 3 // count instruction halfwords
)

// Config is the encoder configuration. Each field corresponds to a trace
// control of the RISC-V Trace Control Interface (named in its comment) or
// to an implementation parameter the specification leaves open. The
// decoder needs the fields marked (decoder).
type Config struct {
	Mode Mode // trTeInstMode (decoder)

	SrcBits int    // trTeSrcBits, 0..12; 0 when trTeInhibitSrc (decoder)
	SrcID   uint32 // trTeSrcID: this encoder's SRC value

	ICNTBits     int  // width of the I-CNT counter with its overflow bit (2..22); 0 means 22
	ICNTFullSync bool // BTM only: report a full I-CNT with SYNC=4 instead of ResourceFull RCODE=0

	HistBits        int  // HIST register width with its stop bit (2..32); 0 means 32
	RepeatedHistory bool // trTeInstEnRepeatedHistory: ResourceFull RCODE=2 and RepeatBranch (decoder)
	HRepeatBits     int  // width of the HREPEAT counter (1..18); 0 means 18
	RepeatBranch    bool // RepeatBranch messages (B-CNT) for identical branch messages
	// EagerHistFull reports a full HIST register as soon as it fills, as
	// the reference encoder does, instead of when the next branch needs
	// room (which lets the next flow message carry a full register).
	EagerHistFull bool
	BCntBits      int // width of the B-CNT counter (1..18); 0 means 18
	// HistPatterns lets the encoder choose the length of each
	// ResourceFull HIST record so that loops whose branch pattern does not
	// divide the HIST width still repeat (a freedom the specification
	// grants: any sequence of records with the same concatenated history).
	HistPatterns bool

	ImplicitReturn int // trTeInstImplicitReturnMode (0 = trTeInstEnImplicitReturn off)
	StackDepth     int // return stack entries (1..32; 0 means 32), or for ReturnCount the counter width in bits (1..5; 0 means 5)
	PartialBits    int // low return-address bits compared in ReturnPartial; 0 means 16

	SequentialJump bool // trTeInstEnSequentialJump (decoder)
	ExtendAddrMSB  bool // trTeInstExtendAddrMSB (decoder)
	AllJumps       bool // trTeInstEnAllJumps: direct jumps and calls reported like taken branches (decoder)
	// IndirectNoHist sends IndirectBranch instead of IndirectBranchHist in
	// HTM when the history is empty (allowed by "Rules of Generating
	// Messages").
	IndirectNoHist bool

	Timestamps bool // trTsEnable (decoder: TSTAMP is recognised without it)
	Context    bool // trTeContext: Ownership messages

	SyncMode int // trTeInstSyncMode
	SyncMax  int // trTeInstSyncMax: sync every 2^(SyncMax+4) units

	// FIFOBytes models the encoder's output FIFO (0: unlimited). The
	// FIFO drains DrainBytes every DrainCycles cycles of the ingress time
	// (the retired halfwords stand in for time when blocks carry none).
	// A message that does not fit is lost: the encoder then drops
	// everything until there is room, sends an Error message and restarts
	// with SYNC=7.
	FIFOBytes   int
	DrainBytes  int
	DrainCycles int

	StartSync   uint8 // SYNC code of the first message (default SyncReset, as the reference encoder)
	EndEVCode   uint8 // EVCODE of the final ProgTraceCorrelation (default EVCodeDebug)
	TrapBType1  bool  // report every trap with B-TYPE=1 instead of 2 (exception) / 3 (interrupt)
	ITypeWidth  int   // width of the ingress itype: 3 or 4 (0 means 4)
	XLEN        int   // 32 or 64 (0 means 64) (decoder)
	NoFinalSync bool  // do not emit the final ProgTraceCorrelation on Close
}

// icntLimit is the count at which the I-CNT counter is full: its most
// significant bit is the overflow flag (as in the specification's example
// "Examples of I-CNT Field Full Generation").
func (c *Config) icntLimit() uint64 {
	b := c.ICNTBits
	if b <= 1 || b > 22 {
		b = 22
	}
	return 1 << (b - 1)
}

func (c *Config) histBits() int {
	if c.HistBits < 2 || c.HistBits > 32 {
		return 32
	}
	return c.HistBits
}

func (c *Config) hrepeatMax() uint64 {
	b := c.HRepeatBits
	if b <= 0 || b > 18 {
		b = 18
	}
	return 1<<b - 1
}

func (c *Config) bcntMax() uint64 {
	b := c.BCntBits
	if b <= 0 || b > 18 {
		b = 18
	}
	return 1<<b - 1
}

// maxCountBits is the widest nesting counter of the counting implicit
// return mode: 31 nested calls, as "Implicit Return Optimization" bounds
// the call stack at 32 levels.
const maxCountBits = 5

func (c *Config) stackDepth() int {
	if c.StackDepth <= 0 || c.StackDepth > 32 {
		return 32
	}
	return c.StackDepth
}

// Wire returns the wire-level part of the configuration.
func (c *Config) Wire() WireConfig {
	return WireConfig{SrcBits: c.SrcBits, ExtendAddrMSB: c.ExtendAddrMSB, XLEN: c.XLEN}
}

// Validate reports configurations the specification does not allow.
func (c *Config) Validate() error {
	switch {
	case c.Mode != BTM && c.Mode != HTM:
		return fmt.Errorf("trTeInstMode must be 3 (BTM) or 6 (HTM), not %d", c.Mode)
	case c.SrcBits < 0 || c.SrcBits > 12:
		return fmt.Errorf("trTeSrcBits must be 0..12, not %d", c.SrcBits)
	case c.SrcBits > 0 && uint64(c.SrcID) >= 1<<c.SrcBits:
		return fmt.Errorf("trTeSrcID %d does not fit in %d SRC bits", c.SrcID, c.SrcBits)
	case c.ICNTBits != 0 && (c.ICNTBits < 2 || c.ICNTBits > 22):
		return fmt.Errorf("I-CNT width must be 2..22 bits, not %d", c.ICNTBits)
	case c.HistBits != 0 && (c.HistBits < 2 || c.HistBits > 32):
		return fmt.Errorf("HIST width must be 2..32 bits, not %d", c.HistBits)
	case c.ImplicitReturn < 0 || c.ImplicitReturn > 3:
		return fmt.Errorf("trTeInstImplicitReturnMode must be 0..3, not %d", c.ImplicitReturn)
	case c.ImplicitReturn != 0 && c.ITypeWidth == 3:
		return fmt.Errorf("implicit return needs the 4-bit itype (calls and returns are not reported by a 3-bit port)")
	case c.StackDepth < 0 || c.StackDepth > 32:
		return fmt.Errorf("return stack depth must be 1..32, not %d", c.StackDepth)
	case c.ImplicitReturn == ReturnCount && c.StackDepth > maxCountBits:
		return fmt.Errorf("with the counting implicit return (mode 1) the stack depth is the width of the nesting counter: at most %d bits (%d nested calls), not %d; N-Trace allows no call stack deeper than 32, so a decoder keeps no more return addresses",
			maxCountBits, 1<<maxCountBits-1, c.StackDepth)
	case c.ICNTFullSync && c.Mode != BTM:
		return fmt.Errorf("SYNC=4 for a full I-CNT is only allowed in BTM")
	case c.SyncMode < 0 || c.SyncMode > 3:
		return fmt.Errorf("trTeInstSyncMode must be 0..3, not %d", c.SyncMode)
	case c.SyncMax < 0 || c.SyncMax > 15:
		return fmt.Errorf("trTeInstSyncMax must be 0..15, not %d", c.SyncMax)
	case c.ITypeWidth != 0 && c.ITypeWidth != 3 && c.ITypeWidth != 4:
		return fmt.Errorf("itype width must be 3 or 4, not %d", c.ITypeWidth)
	case c.FIFOBytes < 0 || c.FIFOBytes > 0 && c.FIFOBytes < 2*MaxStandardMessage:
		return fmt.Errorf("the FIFO must hold at least two messages (%d bytes)", 2*MaxStandardMessage)
	case c.FIFOBytes > 0 && (c.DrainBytes <= 0 || c.DrainCycles <= 0):
		return fmt.Errorf("a FIFO needs a drain rate (DrainBytes per DrainCycles)")
	case c.XLEN != 0 && c.XLEN != 32 && c.XLEN != 64:
		return fmt.Errorf("XLEN must be 32 or 64, not %d", c.XLEN)
	}
	return nil
}

// Presets are named configurations. The ref-* ones reproduce the five
// configurations of the N-Trace reference code's published results
// (see ../shared/corpus/ntrace-refcode/README.md); "best" turns on every
// optimization for the smallest trace.
var Presets = map[string]Config{
	"ref-btm":     {Mode: BTM, HistBits: 32},
	"ref-htm":     {Mode: HTM, HistBits: 32, IndirectNoHist: true, EagerHistFull: true},
	"ref-htm-rpt": {Mode: HTM, HistBits: 32, RepeatedHistory: true, IndirectNoHist: true, EagerHistFull: true},
	"ref-htm-cs8": {Mode: HTM, HistBits: 32, ImplicitReturn: ReturnFull, StackDepth: 8, IndirectNoHist: true,
		EagerHistFull: true},
	"ref-htm-best": {Mode: HTM, HistBits: 32, RepeatedHistory: true,
		ImplicitReturn: ReturnFull, StackDepth: 8, IndirectNoHist: true, EagerHistFull: true},
	"best": {Mode: HTM, HistBits: 32, RepeatedHistory: true, HistPatterns: true, RepeatBranch: true,
		ImplicitReturn: ReturnFull, StackDepth: 32, SequentialJump: true, IndirectNoHist: true,
		ExtendAddrMSB: true},
	"btm": {Mode: BTM},
	"htm": {Mode: HTM},
}

// PresetNames returns the preset names, sorted.
func PresetNames() string {
	var n []string
	for k := range Presets {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}
