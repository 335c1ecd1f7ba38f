package tracectl

import (
	"fmt"
	mbits "math/bits"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/filter"
	"github.com/rvtrace/rvtrace/ntrace"
)

// Impl is the implementation parameters of an encoder component: what no
// register of the Trace Control Interface holds, and what silicon fixes
// when the component is built (the widths of its counters, its output
// FIFO, the framing of its output...). Settings takes from the registers
// every field that a register holds and the rest from here; SetImpl
// clears the register-held fields, so that they can only come from the
// registers. The package documentation lists which option is which.
type Impl struct {
	// NTrace holds the N-Trace encoder's parameters (ICNTBits, HistBits,
	// HRepeatBits, BCntBits, RepeatBranch, HistPatterns, EagerHistFull,
	// StackDepth, PartialBits, IndirectNoHist, FIFOBytes, DrainBytes,
	// DrainCycles, StartSync, EndEVCode, TrapBType1, ITypeWidth,
	// NoFinalSync).
	NTrace ntrace.Config
	// ETrace holds the E-Trace encoder's: the packet layout (Version),
	// the hardware parameters but nocontext_p and notime_p, the framing
	// (Encap, TypeField, TimestampBytes). Data, when not nil, is the
	// hart's data trace interface, which gives the encoder data trace
	// (trTeDataImplemented = 1 with the E-Trace format): its hardware
	// parameters DataWidth, DAddressWidth, Split, LRIDWidth and the UTDD
	// source ID of the data packets (SrcID; with Harts > 1, Harts +
	// trTeSrcID instead); Fields, NoCompress and Filter come from the
	// registers (data.go).
	ETrace etrace.Config
	// Triggers holds the trace actions of the hart's debug triggers
	// (Sdtrig mcontrol action 2 trace-on, 3 trace-off, 4 trace-notify, at
	// instruction addresses): they belong to the hart's trigger module,
	// not to the encoder, and take effect when trTeInstTrigEnable is 1.
	Triggers filter.Config
	// OnPacket, if set, is given each E-Trace packet as it is written
	// (an observation port, as a packet CSV).
	OnPacket func(*etrace.Packet)
}

// DefaultImpl returns the implementation parameters of the encoders of
// System: the N-Trace encoder's defaults, and E-Trace 2.0 with its
// default parameters, iaddress_width_p = xlen, packets framed in the
// Unformatted Trace & Diagnostic Data encapsulation (whose null packet
// 0x00 can pad the sink's last word; the raw layout has no idle byte).
func DefaultImpl(xlen int) Impl {
	c := etrace.DefaultConfig()
	c.Params.IAddressWidth = xlen
	c.Encap = etrace.EncapUTDD
	return Impl{ETrace: c}
}

// SetImpl sets the encoder's implementation parameters, which take effect
// when it is next enabled. The fields a register holds are cleared.
func (e *Encoder) SetImpl(im Impl) error {
	n := &im.NTrace
	n.Mode, n.SrcBits, n.SrcID, n.RepeatedHistory, n.ImplicitReturn = 0, 0, 0, false, 0
	n.SequentialJump, n.ExtendAddrMSB, n.AllJumps, n.Timestamps, n.Context = false, false, false, false, false
	n.SyncMode, n.SyncMax, n.XLEN = 0, 0, 0
	c := &im.ETrace
	c.Options, c.SrcBits, c.SrcID, c.ResyncPeriod = etrace.Options{}, 0, 0, 0
	c.Params.NoContext, c.Params.NoTime = true, true
	c.Decode = etrace.DefaultConfig().Decode
	if c.Data != nil {
		d := *c.Data
		d.Fields, d.NoCompress, d.Filter = etrace.DataAddrValue, false, nil
		c.Data = &d
	}
	t := im.Triggers
	im.Triggers = filter.Config{TraceOn: t.TraceOn, TraceOff: t.TraceOff, Notify: t.Notify}
	e.impl = im
	if e.active() {
		e.fixFeatures(e.b.read(TeInstFeatures)) // the implicit return mode E-Trace reports
		e.fixData()
	}
	return nil
}

// FieldError is a register write whose value a field did not keep (a
// WARL field keeps only its legal values, and no field keeps more bits
// than it has), or a setting no register value expresses.
type FieldError struct {
	Register string // e.g. "trTeControl"
	Field    string // e.g. "trTeInstSyncMax"
	Wrote    uint64 // the value asked for
	Kept     uint64 // the value the field reads back
	Detail   string // why, when no write was made
}

// Error says which field did not keep which value.
func (e *FieldError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("%s.%s: %s", e.Register, e.Field, e.Detail)
	}
	return fmt.Sprintf("%s.%s does not keep %d (it reads back %d)", e.Register, e.Field, e.Wrote, e.Kept)
}

// fv is a field and the value to write to it.
type fv struct {
	name string
	v    uint64
}

func u64(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// setFields writes the fields fs of the register at off (the other fields
// keep their value) and checks that every one reads back as written.
func (e *Encoder) setFields(off uint32, fs ...fv) error {
	i := e.b.reg(off)
	r := &e.b.regs[i]
	v := e.b.val[i]
	for _, x := range fs {
		v = r.Field(x.name).set(v, uint32(x.v))
	}
	if err := e.WriteReg(off, v); err != nil {
		return err
	}
	got := e.b.val[i]
	for _, x := range fs {
		if k := uint64(r.Field(x.name).get(got)); k != x.v {
			return &FieldError{Register: r.Name, Field: x.name, Wrote: x.v, Kept: k}
		}
	}
	return nil
}

// Configure programs the encoder's registers for s as a debugger does,
// following the specification's "Enabling and Disabling" sequence: reset
// (trTeActive = 0), release from reset, the trace format, the features,
// filters, comparators and timestamp unit, then trTeEnable = 1 with
// trTeInstTracing = 1. Every field written is read back: one that does
// not keep its value is a *FieldError. The encoder then runs with
// Settings, which give back s's register-held fields (with the
// implementation parameters of SetImpl for the others). An E-Trace
// ResyncPeriod must be 2^(trTeInstSyncMax+4) packets.
func (e *Encoder) Configure(s Settings) error {
	if err := e.WriteReg(TeControl, 0); err != nil {
		return err
	}
	if err := e.WriteReg(TeControl, 1); err != nil {
		return err
	}
	ctl := []fv{{"trTeFormat", uint64(s.Format)}}
	var feat, src []fv
	var syncMode, syncMax uint64
	ts := false
	switch s.Format {
	case FormatNTrace:
		c := &s.NTrace
		ctl = append(ctl, fv{"trTeInstMode", uint64(c.Mode)}, fv{"trTeContext", u64(c.Context)})
		syncMode, syncMax = uint64(c.SyncMode), uint64(c.SyncMax)
		feat = append(feat, fv{"trTeInstEnSequentialJump", u64(c.SequentialJump)},
			fv{"trTeInstEnImplicitReturn", u64(c.ImplicitReturn != 0)},
			fv{"trTeInstEnRepeatedHistory", u64(c.RepeatedHistory)},
			fv{"trTeInstEnAllJumps", u64(c.AllJumps)},
			fv{"trTeInstExtendAddrMSB", u64(c.ExtendAddrMSB)})
		src = []fv{{"trTeSrcBits", uint64(c.SrcBits)}, {"trTeSrcID", uint64(c.SrcID)}}
		if c.ImplicitReturn != 0 {
			feat = append(feat, fv{"trTeInstImplicitReturnMode", uint64(c.ImplicitReturn)})
		}
		ts = c.Timestamps
	case FormatETrace:
		c := &s.ETrace
		o := &c.Options
		ctl = append(ctl, fv{"trTeContext", u64(!c.Params.NoContext)})
		if c.ResyncPeriod != 0 {
			p := c.ResyncPeriod
			if p < 16 || p&(p-1) != 0 {
				return &FieldError{Register: "trTeControl", Field: "trTeInstSyncMax", Wrote: uint64(p),
					Detail: fmt.Sprintf("a resynchronisation every %d packets is not 2^(trTeInstSyncMax+4) packets (16, 32, 64, ...)", p)}
			}
			syncMode, syncMax = 1, uint64(mbits.TrailingZeros(uint(p))-4)
		}
		feat = append(feat, fv{"trTeInstNoAddrDiff", u64(o.FullAddress)},
			fv{"trTeInstNoTrapAddr", u64(o.ImplicitException)},
			fv{"trTeInstEnSequentialJump", u64(o.SIJump)},
			fv{"trTeInstEnImplicitReturn", u64(o.ImplicitReturn)},
			fv{"trTeInstEnBranchPrediction", u64(o.BranchPrediction)},
			fv{"trTeInstEnJumpTargetCache", u64(o.JumpTargetCache)})
		src = []fv{{"trTeSrcBits", uint64(c.SrcBits)}, {"trTeSrcID", uint64(c.SrcID)}}
		ts = !c.Params.NoTime
	default:
		return &FieldError{Register: "trTeControl", Field: "trTeFormat", Wrote: uint64(s.Format), Detail: "not a format this encoder has"}
	}
	f := &s.Filter
	trig := len(f.TraceOn)+len(f.TraceOff)+len(f.Notify) > 0
	ctl = append(ctl, fv{"trTeInstSyncMode", syncMode}, fv{"trTeInstSyncMax", syncMax},
		fv{"trTeInstTrigEnable", u64(trig)}, fv{"trTeInhibitSrc", 0})
	// the format first: the features a format has depend on it
	if err := e.setFields(TeControl, ctl[0]); err != nil {
		return err
	}
	if err := e.setFields(TeControl, ctl[1:]...); err != nil {
		return err
	}
	// trTeSrcID must fit in trTeSrcBits: the width first
	if err := e.setFields(TeInstFeatures, src[0]); err != nil {
		return err
	}
	if err := e.setFields(TeInstFeatures, append(feat, src[1])...); err != nil {
		return err
	}
	if err := e.programFilters(f); err != nil {
		return err
	}
	if err := e.programData(&s); err != nil {
		return err
	}
	if ts {
		// the time input of the ingress port, as the encoder has it
		if err := e.setFields(TsControl, fv{"trTsActive", 1}, fv{"trTsCount", 1},
			fv{"trTsMode", TsModeExternal}, fv{"trTsEnable", 1}); err != nil {
			return err
		}
	}
	if err := e.setFields(TeControl, fv{"trTeInstTracing", 1}); err != nil {
		return err
	}
	if err := e.WriteReg(TeControl, e.b.val[0]|2); err != nil { // trTeEnable
		return err
	}
	if !e.enabled() {
		return e.Err()
	}
	return nil
}

// programFilters writes the filter and comparator units of f and
// trTeInstFilters.
func (e *Encoder) programFilters(f *filter.Config) error {
	if len(f.Filters) > NumFilters {
		return &FieldError{Register: "trTeInstFilters", Field: "trTeInstFilters", Wrote: uint64(len(f.Filters)),
			Detail: fmt.Sprintf("%d filters asked for, the encoder has %d", len(f.Filters), NumFilters)}
	}
	if len(f.Comparators) > NumComparators {
		return &FieldError{Register: "trTeComp0Control", Field: "trTeCompPInput", Wrote: uint64(len(f.Comparators)),
			Detail: fmt.Sprintf("%d comparators asked for, the encoder has %d", len(f.Comparators), NumComparators)}
	}
	for i := range f.Filters {
		if err := e.programFilter(i, &f.Filters[i], 0, false); err != nil {
			return err
		}
	}
	for j := range f.Comparators {
		if err := e.programComparator(j, &f.Comparators[j]); err != nil {
			return err
		}
	}
	if err := e.setFields(TeInstFilters, fv{"trTeInstFilters", 1<<len(f.Filters) - 1}); err != nil {
		return err
	}
	if !f.HasData() {
		return nil
	}
	// the data filters in the units after the instruction filters', with
	// their comparators after the instruction filters' comparators
	nf, nc := len(f.Filters), len(f.Comparators)
	if nf+len(f.DataFilters) > NumFilters {
		return &FieldError{Register: "trTeDataFilters", Field: "trTeDataFilters", Wrote: uint64(nf + len(f.DataFilters)),
			Detail: fmt.Sprintf("%d instruction and %d data filters asked for, the encoder has %d", nf, len(f.DataFilters), NumFilters)}
	}
	if nc+len(f.DataComparators) > NumComparators {
		return &FieldError{Register: "trTeComp0Control", Field: "trTeCompPInput", Wrote: uint64(nc + len(f.DataComparators)),
			Detail: fmt.Sprintf("%d instruction and %d data filter comparators asked for, the encoder has %d", nc, len(f.DataComparators), NumComparators)}
	}
	for i := range f.DataFilters {
		if err := e.programFilter(nf+i, &f.DataFilters[i], nc, true); err != nil {
			return err
		}
	}
	for j := range f.DataComparators {
		if err := e.programComparator(nc+j, &f.DataComparators[j]); err != nil {
			return err
		}
	}
	return e.setFields(TeDataFilters, fv{"trTeDataFilters", (1<<len(f.DataFilters) - 1) << nf})
}

// programFilter writes filter unit n: fl, an instruction filter or (data)
// a data filter, whose comparator k is unit firstComp+k.
func (e *Encoder) programFilter(n int, fl *filter.Filter, firstComp int, data bool) error {
	if len(fl.Comp) > 3 {
		return &FieldError{Register: fmt.Sprintf("trTeFilter%dControl", n), Field: "trTeFilterComp3", Wrote: uint64(len(fl.Comp)),
			Detail: fmt.Sprintf("a filter matches up to 3 comparators, not %d", len(fl.Comp))}
	}
	if data && (fl.MatchEcause || fl.MatchInterrupt || fl.MatchImpdef) {
		return &FieldError{Register: fmt.Sprintf("trTeFilter%dControl", n), Field: "trTeFilterMatchEcause",
			Detail: "a data filter matches privilege, dtype and comparators only"}
	}
	ctl := []fv{{"trTeFilterEnable", 1}, {"trTeFilterMatchPrivilege", u64(fl.MatchPrivilege)},
		{"trTeFilterMatchEcause", u64(fl.MatchEcause)}, {"trTeFilterMatchInterrupt", u64(fl.MatchInterrupt)},
		{"trTeFilterMatchImpdef", u64(fl.MatchImpdef)}}
	for k := 0; k < 3; k++ {
		m := fmt.Sprint(k + 1)
		if k < len(fl.Comp) {
			ctl = append(ctl, fv{"trTeFilterMatchComp" + m, 1}, fv{"trTeFilterComp" + m, uint64(firstComp + fl.Comp[k])})
		} else {
			ctl = append(ctl, fv{"trTeFilterMatchComp" + m, 0})
		}
	}
	type write struct {
		off uint32
		fs  []fv
	}
	var ws []write
	if data {
		ws = []write{
			{FilterMatchInst, []fv{{"trTeFilterMatchChoicePrivilege", uint64(fl.Privileges)}}},
			{FilterMatchData, []fv{{"trTeFilterMatchChoiceDtype", uint64(dtypesOf(fl.Kinds))}}},
			{FilterControl, append(ctl, fv{"trTeFilterMatchDtype", u64(fl.MatchKind)})},
		}
	} else {
		ws = []write{
			{FilterControl, ctl},
			{FilterMatchInst, []fv{{"trTeFilterMatchChoicePrivilege", uint64(fl.Privileges)}, {"trTeFilterMatchValueInterrupt", u64(fl.Interrupt)}}},
			{FilterEcauseLow, []fv{{"trTeFilterMatchChoiceEcauseLow", fl.Ecauses & 0xFFFFFFFF}}},
			{FilterEcauseHigh, []fv{{"trTeFilterMatchChoiceEcauseHigh", fl.Ecauses >> 32}}},
			{FilterImpdefValue, []fv{{"trTeFilterMatchValueImpdef", fl.ImpdefValue}}},
			{FilterImpdefMask, []fv{{"trTeFilterMatchMaskImpdef", fl.ImpdefMask}}},
		}
	}
	base := uint32(TeFilterBase + FilterStride*n)
	for _, w := range ws {
		if err := e.setFields(base+w.off, w.fs...); err != nil {
			return err
		}
	}
	return nil
}

// programData writes trTeDataControl: data tracing on with the packet
// contents and compression of s.ETrace.Data, or off. Without data trace
// (trTeDataImplemented = 0) it writes nothing, and asking for data trace
// is a *FieldError.
func (e *Encoder) programData(s *Settings) error {
	var d *etrace.DataConfig
	if s.Format == FormatETrace {
		d = s.ETrace.Data
	}
	if !e.dataImpl() {
		if d != nil {
			return &FieldError{Register: "trTeDataControl", Field: "trTeDataImplemented", Wrote: 1,
				Detail: "data trace is not implemented (trTeDataImplemented reads 0): the hart has no data trace interface, or the format is not E-Trace"}
		}
		return nil
	}
	if d == nil {
		return e.setFields(TeDataControl, fv{"trTeDataTracing", 0})
	}
	compress := uint64(2)
	if d.NoCompress {
		compress = 0
	}
	return e.setFields(TeDataControl, fv{"trTeDataTracing", 1},
		fv{"trTeDataNoValue", u64(d.Fields == etrace.DataAddrOnly)},
		fv{"trTeDataNoAddr", u64(d.Fields == etrace.DataValueOnly)},
		fv{"trTeDataAddrCompress", compress})
}

// programComparator writes comparator unit j.
func (e *Encoder) programComparator(j int, c *filter.Comparator) error {
	base := uint32(TeCompBase + FilterStride*j)
	for _, w := range []struct {
		off uint32
		fs  []fv
	}{
		{CompControl, []fv{{"trTeCompPInput", uint64(c.PInput)}, {"trTeCompSInput", uint64(c.SInput)},
			{"trTeCompPFunction", uint64(c.PFunc)}, {"trTeCompSFunction", uint64(c.SFunc)},
			{"trTeCompMatchMode", uint64(c.Mode)}, {"trTeCompPNotify", u64(c.PNotify)}, {"trTeCompSNotify", u64(c.SNotify)}}},
		{CompPMatchLow, []fv{{"trTeCompPMatchLow", c.PMatch & 0xFFFFFFFF}}},
		{CompPMatchHigh, []fv{{"trTeCompPMatchHigh", c.PMatch >> 32}}},
		{CompSMatchLow, []fv{{"trTeCompSMatchLow", c.SMatch & 0xFFFFFFFF}}},
		{CompSMatchHigh, []fv{{"trTeCompSMatchHigh", c.SMatch >> 32}}},
	} {
		if err := e.setFields(base+w.off, w.fs...); err != nil {
			return err
		}
	}
	return nil
}

// Warning returns what the encoder last started could not trace as asked
// (the E-Trace encoder's warning), or "".
func (e *Encoder) Warning() string {
	if w, ok := e.engine.(interface{ Warning() string }); ok {
		return w.Warning()
	}
	return ""
}

// LossSummary returns the N-Trace encoder's summary of the trace its
// output FIFO lost, or "".
func (e *Encoder) LossSummary() string {
	if l, ok := e.engine.(interface{ LossSummary() string }); ok {
		return l.LossSummary()
	}
	return ""
}

// EnableSinkAndFunnel prepares the path from the encoders to the RAM
// sink as a debugger does before it enables the encoders ("Enabling and
// Disabling"): the sink released from reset in its reset mode (its whole
// SRAM, wrapping, when it has one), its write pointer at trRamStart,
// then enabled; the funnel released from reset with every input enabled
// (trFunnelDisInput = 0), then enabled. Each write is read back.
func (s *System) EnableSinkAndFunnel() error {
	steps := []struct {
		addr     uint64
		v, check uint32
		what     string
	}{
		{s.SinkAddr() + RAMControl, 1, 1, "trRamControl.trRamActive"},
		{s.SinkAddr() + RAMWPHigh, 0, 0, "trRamWPHigh"},
		{s.SinkAddr() + RAMWPLow, 0, 0, "trRamWPLow"}, // set to trRamStartLow below
		{s.SinkAddr() + RAMControl, 3, 3, "trRamControl.trRamEnable"},
		{s.FunnelAddr() + FunnelControl, 1, 1, "trFunnelControl.trFunnelActive"},
		{s.FunnelAddr() + FunnelDisInput, 0, 0xFFFF, "trFunnelDisInput"},
		{s.FunnelAddr() + FunnelControl, 3, 3, "trFunnelControl.trFunnelEnable"},
	}
	for i, st := range steps {
		v := st.v
		switch i {
		case 1:
			v, _ = s.Read32(s.SinkAddr() + RAMStartHigh)
			st.check = ^uint32(0)
		case 2:
			v, _ = s.Read32(s.SinkAddr() + RAMStartLow)
			st.check = ^uint32(3)
		}
		if ok, err := s.Write32(st.addr, v); !ok || err != nil {
			return fmt.Errorf("trace system: writing %s: %v", st.what, err)
		}
		if got, _ := s.Read32(st.addr); got&st.check != v&st.check {
			return fmt.Errorf("trace system: %s reads back %#x after writing %#x", st.what, got&st.check, v&st.check)
		}
	}
	return nil
}
