package tracectl

import "fmt"

// Register offsets of the trace encoder (Trace Control Interface,
// "Summary of Trace Encoder Registers").
const (
	TeControl         = 0x000
	TeImpl            = 0x004
	TeInstFeatures    = 0x008
	TeInstFilters     = 0x00C
	TeDataControl     = 0x010
	TeDataFilters     = 0x01C
	TsControl         = 0x040
	TsCounterLow      = 0x048
	TsCounterHigh     = 0x04C
	TeTrigDbgControl  = 0x050
	TeTrigExtInCtrl   = 0x054
	TeTrigExtOutCtrl  = 0x058
	TeFilterBase      = 0x400 // + 0x20*i: trTeFilter<i>Control ...
	TeCompBase        = 0x600 // + 0x20*j: trTeComp<j>Control ...
	FilterStride      = 0x20
	FilterControl     = 0x00 // offsets inside a filter block
	FilterMatchInst   = 0x04
	FilterEcauseLow   = 0x08
	FilterEcauseHigh  = 0x0C
	FilterImpdefValue = 0x10
	FilterImpdefMask  = 0x14
	FilterMatchData   = 0x18
	CompControl       = 0x00 // offsets inside a comparator block
	CompPMatchLow     = 0x10
	CompPMatchHigh    = 0x14
	CompSMatchLow     = 0x18
	CompSMatchHigh    = 0x1C
)

// Register offsets of the trace funnel and the RAM sink.
const (
	FunnelControl  = 0x000
	FunnelImpl     = 0x004
	FunnelDisInput = 0x008

	RAMControl    = 0x000
	RAMImpl       = 0x004
	RAMStartLow   = 0x010
	RAMStartHigh  = 0x014
	RAMLimitLow   = 0x018
	RAMLimitHigh  = 0x01C
	RAMWPLow      = 0x020
	RAMWPHigh     = 0x024
	RAMRPLow      = 0x028
	RAMRPHigh     = 0x02C
	RAMData       = 0x040
	RAMPadDefault = 0xFF
)

// Sizes of this implementation.
const (
	// NumFilters and NumComparators are the trTeFilter and trTeComp units
	// each encoder implements (trTeFilterComp1..3 are 3-bit fields, so 8
	// comparators are addressable).
	NumFilters     = 8
	NumComparators = 8
	// MaxInputs is the number of funnel inputs (trFunnelDisInput is 16 bits).
	MaxInputs = 16
)

// Trace formats (trTeFormat).
const (
	FormatETrace = 0
	FormatNTrace = 1
)

// Instruction trace modes (trTeInstMode) this implementation keeps.
const (
	InstModeBTM = 3 // baseline: branch trace
	InstModeHTM = 6 // optimized: branch history
)

// Timestamp modes (trTsMode).
const (
	TsModeNone           = 0
	TsModeExternal       = 1 // an encoder's unit: the time input of its hart's ingress port
	TsModeInternalSystem = 2 // the funnel's unit: the system clock
	TsModeInternalCore   = 3 // an encoder's unit: its hart's clock
	TsModeShared         = 4 // an encoder sharing the funnel's timestamp
)

// encoderRegs is the trace encoder's register table: the specification's
// tables "trTeControl" .. "trTeComp<j>SMatchHigh", with the legal values
// this implementation keeps. Undefined reset values are this
// implementation's choice and marked undef.
var encoderRegs = func() []Reg {
	r := []Reg{
		{Name: "trTeControl", Offset: TeControl, Fields: []Field{
			bit("trTeActive", 0, RW, 0),
			bit("trTeEnable", 1, RW, 0),
			undef(bit("trTeInstTracing", 2, RW, 0)),
			bit("trTeEmpty", 3, RO, 1),
			undef(bits("trTeInstMode", 6, 4, WARL, InstModeHTM, InstModeBTM, InstModeHTM)),
			undef(bit("trTeContext", 9, WARL, 0)),
			undef(bit("trTeInstTrigEnable", 11, WARL, 0)),
			undef(bit("trTeInstStallOrOverflow", 12, W1C, 0)),
			undef(bit("trTeInstStallEna", 13, WARL, 0, 0)), // the encoder drops, never stalls
			undef(bit("trTeInhibitSrc", 15, WARL, 0)),
			undef(bits("trTeInstSyncMode", 17, 16, WARL, 0)),
			undef(bits("trTeInstSyncMax", 23, 20, WARL, 0)),
			undef(bits("trTeFormat", 26, 24, WARL, FormatNTrace, FormatETrace, FormatNTrace)),
		}},
		impl("trTe", CompEncoder,
			bits("trTeProtocolMajor", 19, 16, RO, 1),
			bits("trTeProtocolMinor", 23, 20, RO, 0)),
		{Name: "trTeInstFeatures", Offset: TeInstFeatures, Fields: []Field{
			undef(bit("trTeInstNoAddrDiff", 0, WARL, 0)),
			undef(bit("trTeInstNoTrapAddr", 1, WARL, 0)),
			undef(bit("trTeInstEnSequentialJump", 2, WARL, 0)),
			undef(bit("trTeInstEnImplicitReturn", 3, WARL, 0)),
			undef(bit("trTeInstEnBranchPrediction", 4, WARL, 0)),
			undef(bit("trTeInstEnJumpTargetCache", 5, WARL, 0)),
			undef(bits("trTeInstImplicitReturnMode", 7, 6, WARL, 3)),
			undef(bit("trTeInstEnRepeatedHistory", 8, WARL, 0)),
			undef(bit("trTeInstEnAllJumps", 9, WARL, 0)),
			undef(bit("trTeInstExtendAddrMSB", 10, WARL, 0)),
			undef(bits("trTeSrcID", 27, 16, WARL, 0)),
			undef(bits("trTeSrcBits", 31, 28, WARL, 0, valueRange(0, 12)...)),
		}},
		{Name: "trTeInstFilters", Offset: TeInstFilters, Fields: []Field{
			undef(bits("trTeInstFilters", 15, 0, WARL, 0)), // bits >= NumFilters are masked by the encoder
		}},
		// Data trace (E-Trace only, when the hart has a data trace
		// interface: Impl.ETrace.Data): trTeDataImplemented and the
		// fields' legal values depend on the format and on that, and are
		// set by the encoder (fixData); without data trace every field
		// reads 0.
		{Name: "trTeDataControl", Offset: TeDataControl, Fields: []Field{
			bit("trTeDataImplemented", 0, RO, 0),
			undef(bit("trTeDataTracing", 1, WARL, 0)),
			undef(bit("trTeDataTrigEnable", 2, WARL, 0, 0)), // data trace follows the instruction trace's triggers
			undef(bit("trTeDataStallOrOverflow", 3, W1C, 0)),
			undef(bit("trTeDataStallEna", 4, WARL, 0, 0)), // the encoder drops, never stalls
			undef(bit("trTeDataDrop", 5, W1C, 0)),
			undef(bit("trTeDataDropEna", 6, WARL, 0, 0)), // no suppression of data trace
			undef(bit("trTeDataNoValue", 16, WARL, 0)),
			undef(bit("trTeDataNoAddr", 17, WARL, 0)),
			// 0 full addresses, 2 differential (E-Trace's); no XOR-only
			// or protocol-defined choice
			undef(bits("trTeDataAddrCompress", 19, 18, WARL, 0, 0, 2)),
		}},
		{Name: "trTeDataFilters", Offset: TeDataFilters, Fields: []Field{
			undef(bits("trTeDataFilters", 15, 0, WARL, 0)), // bits >= NumFilters are masked by the encoder
		}},
		{Name: "trTsControl", Offset: TsControl, Fields: []Field{
			bit("trTsActive", 0, WARL, 0),
			undef(bit("trTsCount", 1, WARL, 0)),
			bit("trTsReset", 2, W1, 0),
			undef(bit("trTsRunInDebug", 3, WARL, 0, 0)), // no debug mode: hard-wired
			undef(bits("trTsMode", 6, 4, WARL, TsModeNone, TsModeNone, TsModeExternal, TsModeInternalCore, TsModeShared)),
			undef(bits("trTsPrescale", 9, 8, WARL, 0)),
			undef(bit("trTsEnable", 15, WARL, 0)),
			undef(bits("trTsVendor", 23, 16, WARL, 0, 0)),
			bits("trTsWidth", 29, 24, RO, 63),
		}},
		{Name: "trTsCounterLow", Offset: TsCounterLow, Fields: []Field{bits("trTsCounterLow", 31, 0, RO, 0)}},
		{Name: "trTsCounterHigh", Offset: TsCounterHigh, Fields: []Field{bits("trTsCounterHigh", 31, 0, RO, 0)}},
		// No vendor-specific debug trigger setup.
		{Name: "trTeTrigDbgControl", Offset: TeTrigDbgControl, Fields: []Field{
			undef(bits("trTeTrigDbgControl", 31, 0, WARL, 0, 0)),
		}},
		// One external trigger input (#0) with the trace-on, trace-off and
		// trace-notify actions; inputs 1..7 do not exist.
		{Name: "trTeTrigExtInControl", Offset: TeTrigExtInCtrl, Fields: []Field{
			undef(bits("trTeTrigExtInAction0", 3, 0, WARL, 0, 0, 2, 3, 4)),
			undef(bits("trTeTrigExtInActionN", 31, 4, WARL, 0, 0)),
		}},
		// No external trigger outputs.
		{Name: "trTeTrigExtOutControl", Offset: TeTrigExtOutCtrl, Fields: []Field{
			undef(bits("trTeTrigExtOutEvent0", 3, 0, WARL, 0, 0)),
			undef(bits("trTeTrigExtOutEventN", 31, 4, WARL, 0, 0)),
		}},
	}
	for i := 0; i < NumFilters; i++ {
		b := uint32(TeFilterBase + FilterStride*i)
		n := fmt.Sprintf("trTeFilter%d", i)
		r = append(r,
			Reg{Name: n + "Control", Offset: b + FilterControl, Fields: []Field{
				undef(bit("trTeFilterEnable", 0, WARL, 0)),
				undef(bit("trTeFilterMatchPrivilege", 1, WARL, 0)),
				undef(bit("trTeFilterMatchEcause", 2, WARL, 0)),
				undef(bit("trTeFilterMatchInterrupt", 3, WARL, 0)),
				undef(bit("trTeFilterMatchComp1", 4, WARL, 0)),
				undef(bits("trTeFilterComp1", 7, 5, WARL, 0)),
				undef(bit("trTeFilterMatchComp2", 8, WARL, 0)),
				undef(bits("trTeFilterComp2", 11, 9, WARL, 0)),
				undef(bit("trTeFilterMatchComp3", 12, WARL, 0)),
				undef(bits("trTeFilterComp3", 15, 13, WARL, 0)),
				undef(bit("trTeFilterMatchImpdef", 16, WARL, 0)),
				undef(bit("trTeFilterMatchDtype", 24, WARL, 0)),    // with data trace (fixData)
				undef(bit("trTeFilterMatchDsize", 25, WARL, 0, 0)), // no size filtering
			}},
			Reg{Name: n + "MatchInst", Offset: b + FilterMatchInst, Fields: []Field{
				undef(bits("trTeFilterMatchChoicePrivilege", 7, 0, WARL, 0)),
				undef(bit("trTeFilterMatchValueInterrupt", 8, WARL, 0)),
			}},
			Reg{Name: n + "MatchEcauseLow", Offset: b + FilterEcauseLow, Fields: []Field{
				undef(bits("trTeFilterMatchChoiceEcauseLow", 31, 0, WARL, 0)),
			}},
			Reg{Name: n + "MatchEcauseHigh", Offset: b + FilterEcauseHigh, Fields: []Field{
				undef(bits("trTeFilterMatchChoiceEcauseHigh", 31, 0, WARL, 0)),
			}},
			Reg{Name: n + "MatchValueImpdef", Offset: b + FilterImpdefValue, Fields: []Field{
				undef(bits("trTeFilterMatchValueImpdef", 31, 0, WARL, 0)),
			}},
			Reg{Name: n + "MatchMaskImpdef", Offset: b + FilterImpdefMask, Fields: []Field{
				undef(bits("trTeFilterMatchMaskImpdef", 31, 0, WARL, 0)),
			}},
			Reg{Name: n + "MatchData", Offset: b + FilterMatchData, Fields: []Field{
				undef(bits("trTeFilterMatchChoiceDtype", 15, 0, WARL, 0, dtypeChoices()...)),
				undef(bits("trTeFilterMatchChoiceDsize", 23, 16, WARL, 0, 0)),
			}},
		)
	}
	for j := 0; j < NumComparators; j++ {
		b := uint32(TeCompBase + FilterStride*j)
		n := fmt.Sprintf("trTeComp%d", j)
		r = append(r,
			Reg{Name: n + "Control", Offset: b + CompControl, Fields: []Field{
				// inputs: iaddr, context, tval; daddr with data trace (fixData)
				undef(bits("trTeCompPInput", 1, 0, WARL, 0)),
				undef(bits("trTeCompSInput", 3, 2, WARL, 0)),
				undef(bits("trTeCompPFunction", 6, 4, WARL, 0)),
				// function 6 of the secondary comparator (mask) is not implemented
				undef(bits("trTeCompSFunction", 10, 8, WARL, 0, 0, 1, 2, 3, 4, 5, 7)),
				undef(bits("trTeCompMatchMode", 13, 12, WARL, 0)),
				undef(bit("trTeCompPNotify", 14, WARL, 0)),
				undef(bit("trTeCompSNotify", 15, WARL, 0)),
			}},
			Reg{Name: n + "PMatchLow", Offset: b + CompPMatchLow, Fields: []Field{undef(bits("trTeCompPMatchLow", 31, 0, WARL, 0))}},
			Reg{Name: n + "PMatchHigh", Offset: b + CompPMatchHigh, Fields: []Field{undef(bits("trTeCompPMatchHigh", 31, 0, WARL, 0))}},
			Reg{Name: n + "SMatchLow", Offset: b + CompSMatchLow, Fields: []Field{undef(bits("trTeCompSMatchLow", 31, 0, WARL, 0))}},
			Reg{Name: n + "SMatchHigh", Offset: b + CompSMatchHigh, Fields: []Field{undef(bits("trTeCompSMatchHigh", 31, 0, WARL, 0))}},
		)
	}
	return r
}()

// Groups of dtype values a data filter's trTeFilterMatchChoiceDtype
// selects together: the data filter stage (package filter) tells loads,
// stores and atomics apart, so the legal choices are unions of these.
const (
	DtypeLoads   = 1 << 0       // dtype 0: loads (lr included)
	DtypeStores  = 1<<1 | 1<<15 // dtype 1 and 15: stores, store-conditionals (failed ones too)
	DtypeAtomics = 0x7F << 8    // dtype 8..14: atomic memory operations
)

// dtypeChoices lists the legal values of trTeFilterMatchChoiceDtype.
func dtypeChoices() []uint32 {
	var v []uint32
	for k := 0; k < 8; k++ {
		var x uint32
		for i, g := range []uint32{DtypeLoads, DtypeStores, DtypeAtomics} {
			if k&(1<<i) != 0 {
				x |= g
			}
		}
		v = append(v, x)
	}
	return v
}

// funnelRegs is the trace funnel's register table. Its timestamp unit
// counts the system clock (Internal System) and is shared by the encoders
// in the Shared mode.
var funnelRegs = []Reg{
	{Name: "trFunnelControl", Offset: FunnelControl, Fields: []Field{
		bit("trFunnelActive", 0, RW, 0),
		bit("trFunnelEnable", 1, RW, 0),
		bit("trFunnelEmpty", 3, RO, 1),
	}},
	impl("trFunnel", CompFunnel),
	{Name: "trFunnelDisInput", Offset: FunnelDisInput, Fields: []Field{
		undef(bits("trFunnelDisInput", 15, 0, WARL, 0)), // bits of missing inputs are masked by the funnel
	}},
	{Name: "trTsControl", Offset: TsControl, Fields: []Field{
		bit("trTsActive", 0, WARL, 0),
		undef(bit("trTsCount", 1, WARL, 0)),
		bit("trTsReset", 2, W1, 0),
		undef(bit("trTsRunInDebug", 3, WARL, 0, 0)),
		undef(bits("trTsMode", 6, 4, WARL, TsModeNone, TsModeNone, TsModeInternalSystem)),
		undef(bits("trTsPrescale", 9, 8, WARL, 0)),
		undef(bit("trTsEnable", 15, WARL, 0, 0)), // for trace encoders only
		undef(bits("trTsVendor", 23, 16, WARL, 0, 0)),
		bits("trTsWidth", 29, 24, RO, 63),
	}},
	{Name: "trTsCounterLow", Offset: TsCounterLow, Fields: []Field{bits("trTsCounterLow", 31, 0, RO, 0)}},
	{Name: "trTsCounterHigh", Offset: TsCounterHigh, Fields: []Field{bits("trTsCounterHigh", 31, 0, RO, 0)}},
}

// ramRegs is the RAM sink's register table. The address registers'
// legal values depend on the mode and sizes; the sink legalizes them.
var ramRegs = []Reg{
	{Name: "trRamControl", Offset: RAMControl, Fields: []Field{
		bit("trRamActive", 0, RW, 0),
		bit("trRamEnable", 1, RW, 0),
		bit("trRamEmpty", 3, RO, 1),
		undef(bit("trRamMode", 4, WARL, 0)),
		undef(bit("trRamStopOnWrap", 8, WARL, 0)),
		undef(bits("trRamMemFormat", 10, 9, WARL, 0, 0)),
		undef(bits("trRamAsyncFreq", 14, 12, WARL, 0, 0)),
	}},
	impl("trRam", CompRAMSink,
		bit("trRamHasSRAM", 12, RO, 1),
		bit("trRamHasSMEM", 13, RO, 0)),
	{Name: "trRamStartLow", Offset: RAMStartLow, Fields: []Field{undef(bits("trRamStartLow", 31, 2, WARL, 0))}},
	{Name: "trRamStartHigh", Offset: RAMStartHigh, Fields: []Field{undef(bits("trRamStartHigh", 31, 0, WARL, 0))}},
	{Name: "trRamLimitLow", Offset: RAMLimitLow, Fields: []Field{undef(bits("trRamLimitLow", 31, 2, WARL, 0))}},
	{Name: "trRamLimitHigh", Offset: RAMLimitHigh, Fields: []Field{undef(bits("trRamLimitHigh", 31, 0, WARL, 0))}},
	{Name: "trRamWPLow", Offset: RAMWPLow, Fields: []Field{
		undef(bit("trRamWrap", 0, WARL, 0)),
		undef(bits("trRamWPLow", 31, 2, WARL, 0)),
	}},
	{Name: "trRamWPHigh", Offset: RAMWPHigh, Fields: []Field{undef(bits("trRamWPHigh", 31, 0, WARL, 0))}},
	{Name: "trRamRPLow", Offset: RAMRPLow, Fields: []Field{undef(bits("trRamRPLow", 31, 2, WARL, 0))}},
	{Name: "trRamRPHigh", Offset: RAMRPHigh, Fields: []Field{undef(bits("trRamRPHigh", 31, 0, WARL, 0))}},
	{Name: "trRamData", Offset: RAMData, Fields: []Field{undef(bits("trRamData", 31, 0, RO, 0))}},
}

// Registers returns copies of the register tables of the encoder, the
// funnel and the RAM sink, for documentation and tools.
func Registers() (encoder, funnel, ram []Reg) {
	return append([]Reg(nil), encoderRegs...), append([]Reg(nil), funnelRegs...), append([]Reg(nil), ramRegs...)
}
