package tracectl

import (
	"fmt"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/filter"
	"github.com/rvtrace/rvtrace/ingress"
)

// E-Trace data trace through the registers (Trace Control Interface
// trTeDataControl, trTeDataFilters, the filters' dtype match and the
// comparators' daddr input; E-Trace 2.0 "Data Trace Interface", "Data
// Trace Encoder Output Packets" and "Filtering").
//
// The encoder has data trace when its format is E-Trace and its hart has
// a data trace interface: Impl.ETrace.Data, whose hardware parameters
// (data_width_p, daddress_width_p, the split protocol and lrid_width_p,
// the UTDD source ID of the data packets) no register holds. Then
// trTeDataImplemented reads 1 and the fields map onto etrace.DataConfig
// and the data filters of filter.Config. The data packets of one of N
// harts (DataConfig.Harts = N > 1) carry source ID N + trTeSrcID, the
// layout a decoder of the harts' data trace reads (etrace's Demux,
// rvtrace decode --data-harts N): they follow a reprogrammed trTeSrcID,
// which must then be below N (IDs N to 2N-1 are the data packets'; a
// write of trTeEnable = 1 with another is refused, see
// Encoder.RefusedEnables). One hart's data source ID is the parameter's.
//
//	trTeDataTracing        data packets are written (sampled when trTeEnable
//	                       goes to 1: writes while the encoder is enabled are
//	                       ignored, because the data trace encoder and what a
//	                       decoder is told, denable and doptions of the
//	                       support packet, are fixed for a trace)
//	trTeDataNoValue        DataConfig.Fields = DataAddrOnly
//	trTeDataNoAddr         DataConfig.Fields = DataValueOnly (both set at once
//	                       is not kept: a packet carries one or the other)
//	trTeDataAddrCompress   0: NoCompress (full addresses and values); 2:
//	                       differential addresses, values XOR or difference
//	                       (E-Trace's compression); 1 and 3 are not kept
//	trTeDataFilters        the filters qualifying data (filter.Config
//	                       DataFilters); a filter's privilege match, dtype
//	                       match (unions of loads, stores, atomics) and
//	                       comparators on iaddr or daddr (match modes 0..2)
//	                       apply to accesses; a filter selected for data that
//	                       matches an ecause, an interrupt or impdef, or a
//	                       comparator on context or tval, or in mode 3, is
//	                       refused when trTeEnable is written 1 (Err), as is
//	                       an instruction filter matching dtype or daddr
//	trTeDataTrigEnable     tied to 0; trTeDataStallEna, trTeDataDropEna tied
//	                       to 0 (the encoder neither stalls nor drops data
//	                       trace on purpose)
//	trTeDataStallOrOverflow  set with trTeInstStallOrOverflow when trace is
//	                       lost while data tracing is on (the packets lost may
//	                       have been data packets)
//
// An access is traced when its instruction is (trTeInstTracing, the
// instruction filters and triggers) and, with trTeDataFilters, a data
// filter lets it through. Accesses (and split load responses) reach the
// encoder through DataSink; the component holds them until the ingress
// block of their instruction, and passes them on when that block is
// traced, so that an encoder restarted after lost trace starts clean.

// dataEvent is an access or (resp) a split load response held until the
// next block.
type dataEvent struct {
	a    ingress.Access
	r    ingress.LoadResponse
	resp bool
}

// maxHeldData bounds the accesses held without an ingress block.
const maxHeldData = 1 << 16

// DataSink returns the encoder's data trace interface input, or nil when
// its hart has none (Impl.ETrace.Data is nil). The accesses of the hart
// (and, with the split protocol, the load responses) go there, each
// before the ingress block of its instruction.
func (e *Encoder) DataSink() ingress.SplitDataSink {
	if e.impl.ETrace.Data == nil {
		return nil
	}
	return dataInput{e}
}

// dataInput is the encoder's data trace interface input.
type dataInput struct{ e *Encoder }

// Access holds an access until the block of its instruction.
func (d dataInput) Access(a *ingress.Access) error { return d.e.holdData(dataEvent{a: *a}) }

// Response holds a split load response until the next block.
func (d dataInput) Response(r *ingress.LoadResponse) error {
	return d.e.holdData(dataEvent{r: *r, resp: true})
}

func (e *Encoder) holdData(ev dataEvent) error {
	if e.b.val[0]&3 != 3 || e.run == nil && !e.out.discard {
		// nothing traces (not active and enabled, or the encoder
		// failed): an access is dropped, and so is the response to a
		// request that went nowhere; while trace is lost (discard) the
		// encoder restarts at the next block, which takes the access
		return nil
	}
	if len(e.dheld) >= maxHeldData {
		err := fmt.Errorf("tracectl: %d data accesses without an ingress block", len(e.dheld))
		e.err = err
		return err
	}
	e.dheld = append(e.dheld, ev)
	e.fast = false // Block passes them on first
	return nil
}

// passData passes the accesses held on to the running encoder (the block
// of their instruction is traced) when it traces data, and the responses
// to the requests it was given; the others are dropped. With all false,
// the accesses are dropped (their block is not traced) but the responses
// to requests the encoder has are still passed on: it writes them.
func (e *Encoder) passData(all bool) error {
	ds, _ := e.run.(ingress.SplitDataSink)
	for i := range e.dheld {
		ev := &e.dheld[i]
		if ev.resp {
			id := ev.r.LID
			if ds == nil || int(id) >= len(e.reqRun) || !e.reqRun[id] {
				continue
			}
			e.reqRun[id] = false
			if err := ds.Response(&ev.r); err != nil {
				e.dheld = e.dheld[:0]
				e.err = err
				return err
			}
			continue
		}
		a := &ev.a
		pass := all && e.dataRun && ds != nil
		if a.Split && int(a.LRID) < len(e.reqRun) {
			e.reqRun[a.LRID] = pass
		}
		if !pass {
			continue
		}
		if err := ds.Access(a); err != nil {
			e.dheld = e.dheld[:0]
			e.err = err
			return err
		}
	}
	e.dheld = e.dheld[:0]
	return nil
}

// DataStats returns what the E-Trace data trace encoders this component
// started wrote (all of them: an encoder restarted after lost trace is a
// new one).
func (e *Encoder) DataStats() etrace.DataStats {
	s := e.dataDone
	if e.deng != nil {
		c := e.deng.Stats()
		s.Accesses += c.Accesses
		s.Bytes += c.Bytes
		s.Full += c.Full
	}
	return s
}

// endData counts the data encoder that stops, and forgets the requests
// it had.
func (e *Encoder) endData() {
	e.dataDone, e.deng = e.DataStats(), nil
	e.dataRun = false
	clear(e.reqRun)
}

// dataImpl reports whether data trace is implemented: the format is
// E-Trace and the hart has a data trace interface.
func (e *Encoder) dataImpl() bool {
	return e.impl.ETrace.Data != nil && e.b.field(TeControl, "trTeFormat") == FormatETrace
}

// Fields of the filter and comparator registers that only data trace
// uses.
const (
	filterMatchDtype = 1 << 24
	dtypeChoiceMask  = 0xFFFF
)

// fixData sets trTeDataImplemented, and without data trace ties the data
// trace fields to 0 (trTeDataControl, trTeDataFilters, the filters' dtype
// match, the daddr input of the comparators).
func (e *Encoder) fixData() {
	if e.dataImpl() {
		e.b.setField(TeDataControl, "trTeDataImplemented", 1)
		return
	}
	for i := range e.b.regs {
		e.b.val[i] = withoutData(e.b.regs[i].Offset, e.b.val[i], 0)
	}
}

// legalizeData applies the WARL rules of the data trace fields after a
// write of the register at off whose value was old.
func (e *Encoder) legalizeData(off, old uint32) {
	i := e.b.reg(off)
	if !e.dataImpl() {
		e.b.val[i] = withoutData(off, e.b.val[i], old)
		return
	}
	switch off {
	case TeDataControl:
		v := e.b.val[i]
		const tracing, noValue, noAddr = 1 << 1, 1 << 16, 1 << 17
		if v&(noValue|noAddr) == noValue|noAddr {
			v = v&^(noValue|noAddr) | old&(noValue|noAddr)
		}
		if e.enabled() {
			v = v&^tracing | old&tracing
		}
		e.b.val[i] = v
	case TeDataFilters:
		e.b.val[i] &= 1<<NumFilters - 1
	}
}

// withoutData returns v, a value of the register at off, with the fields
// only data trace has legalized for an encoder without data trace:
// trTeDataControl and trTeDataFilters read 0, a filter's dtype match and
// choice keep their value in old, a comparator input of daddr is old's
// input instead (fixData passes old 0: the fields tied to 0).
func withoutData(off, v, old uint32) uint32 {
	keep := func(mask uint32) uint32 { return v&^mask | old&mask }
	switch {
	case off == TeDataControl || off == TeDataFilters:
		return 0
	case off >= TeFilterBase && off < TeFilterBase+FilterStride*NumFilters:
		switch off % FilterStride {
		case FilterControl:
			return keep(filterMatchDtype)
		case FilterMatchData:
			return keep(dtypeChoiceMask)
		}
	case off >= TeCompBase && off < TeCompBase+FilterStride*NumComparators && off%FilterStride == CompControl:
		for _, input := range []uint32{3, 3 << 2} { // trTeCompPInput, trTeCompSInput
			if v&input == uint32(filter.InDAddr)*(input/3) {
				v = keep(input)
			}
		}
	}
	return v
}

// dataConfig returns the data trace configuration the registers select,
// or nil when data is not traced.
func (e *Encoder) dataConfig() *etrace.DataConfig {
	if !e.dataImpl() || e.b.field(TeDataControl, "trTeDataTracing") == 0 {
		return nil
	}
	d := *e.impl.ETrace.Data // the hardware parameters
	if d.Harts > 1 {
		// one of several harts: its data packets carry source ID
		// Harts + trTeSrcID, following its instruction packets' ID
		d.SrcID = uint32(d.Harts) + e.b.field(TeInstFeatures, "trTeSrcID")
	}
	switch {
	case e.b.field(TeDataControl, "trTeDataNoValue") != 0:
		d.Fields = etrace.DataAddrOnly
	case e.b.field(TeDataControl, "trTeDataNoAddr") != 0:
		d.Fields = etrace.DataValueOnly
	default:
		d.Fields = etrace.DataAddrValue
	}
	d.NoCompress = e.b.field(TeDataControl, "trTeDataAddrCompress") == 0
	d.Filter = nil
	return &d
}

// kindsOf returns the access kinds (filter.KindLoad...) a legal
// trTeFilterMatchChoiceDtype selects.
func kindsOf(choice uint32) uint8 {
	var k uint8
	if choice&DtypeLoads != 0 {
		k |= filter.KindLoad
	}
	if choice&DtypeStores != 0 {
		k |= filter.KindStore
	}
	if choice&DtypeAtomics != 0 {
		k |= filter.KindAtomic
	}
	return k
}

// dtypesOf returns the trTeFilterMatchChoiceDtype of access kinds.
func dtypesOf(kinds uint8) uint32 {
	var v uint32
	if kinds&filter.KindLoad != 0 {
		v |= DtypeLoads
	}
	if kinds&filter.KindStore != 0 {
		v |= DtypeStores
	}
	if kinds&filter.KindAtomic != 0 {
		v |= DtypeAtomics
	}
	return v
}

// usesInput reports whether comparator k looks at input in: its primary
// comparison always, its secondary one in the match modes that use it.
func usesInput(k *filter.Comparator, in filter.Input) bool {
	return k.PInput == in || k.Mode != filter.MatchP && k.SInput == in
}
