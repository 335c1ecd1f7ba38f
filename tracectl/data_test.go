package tracectl

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/filter"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// The expected values below are written from the trTeDataControl,
// trTeDataFilters, trTeFilter<i>MatchData and trTeComp<j>Control tables
// of the Trace Control Interface specification and the E-Trace
// specification's table of the fields it applies (trTeDataNoValue,
// trTeDataNoAddr, trTeDataAddrCompress, trTeDataFilters).

// Bits of trTeDataControl (Trace Control Interface).
const (
	dcImplemented     = 1 << 0
	dcTracing         = 1 << 1
	dcTrigEnable      = 1 << 2
	dcStallOrOverflow = 1 << 3
	dcStallEna        = 1 << 4
	dcDrop            = 1 << 5
	dcDropEna         = 1 << 6
	dcNoValue         = 1 << 16
	dcNoAddr          = 1 << 17
	dcCompressShift   = 18
)

// dataEncoder returns an encoder component whose hart has a data trace
// interface (unified protocol, data packets on source ID 1), released
// from reset.
func dataEncoder(t *testing.T) *Encoder {
	t.Helper()
	e := NewEncoder(image.NewSet(), &bytes.Buffer{})
	im := DefaultImpl(64)
	im.ETrace.Data = &etrace.DataConfig{SrcID: 1}
	if err := e.SetImpl(im); err != nil {
		t.Fatal(err)
	}
	e.WriteReg(TeControl, 0)
	e.WriteReg(TeControl, 1)
	return e
}

// TestDataControlImplemented: trTeDataImplemented reads 1 only for the
// E-Trace format of an encoder whose hart has a data trace interface;
// every other field of trTeDataControl and trTeDataFilters reads 0 and
// ignores writes without data trace (N-Trace, or no interface).
func TestDataControlImplemented(t *testing.T) {
	all := uint32(0xFFFFFFFF)
	e := dataEncoder(t)
	// reset format is N-Trace: no data trace
	if f := e.ReadReg(TeControl) >> 24 & 7; f != FormatNTrace {
		t.Fatalf("reset trTeFormat %d", f)
	}
	for _, off := range []uint32{TeDataControl, TeDataFilters} {
		e.WriteReg(off, all)
		if v := e.ReadReg(off); v != 0 {
			t.Errorf("N-Trace: register %#x reads %#x after writing all ones, want 0", off, v)
		}
	}
	// the filters' dtype match and the comparators' daddr input are data
	// trace fields too
	e.WriteReg(TeFilterBase+FilterControl, 1<<24|1)
	e.WriteReg(TeFilterBase+FilterMatchData, DtypeLoads)
	e.WriteReg(TeCompBase+CompControl, 3|3<<2)
	if v := e.ReadReg(TeFilterBase + FilterControl); v != 1 {
		t.Errorf("N-Trace: trTeFilter0Control reads %#x, want 1 (no dtype match)", v)
	}
	if v := e.ReadReg(TeFilterBase + FilterMatchData); v != 0 {
		t.Errorf("N-Trace: trTeFilter0MatchData reads %#x, want 0", v)
	}
	if v := e.ReadReg(TeCompBase + CompControl); v&15 != 0 {
		t.Errorf("N-Trace: trTeComp0Control inputs read %#x, want 0 (no daddr input)", v&15)
	}
	// E-Trace: implemented
	e.WriteReg(TeControl, 1|FormatETrace<<24)
	if v := e.ReadReg(TeDataControl); v != dcImplemented {
		t.Errorf("E-Trace with a data interface: trTeDataControl reads %#x, want %#x (implemented, the rest at reset 0)", v, dcImplemented)
	}
	// back to N-Trace: the data fields are tied to 0 again (a comparator
	// input of daddr to iaddr, 0), the others keep their values
	e.WriteReg(TeDataControl, dcTracing|dcNoValue)
	e.WriteReg(TeFilterBase+FilterControl, 1<<24|1)
	e.WriteReg(TeFilterBase+FilterMatchData, DtypeLoads)
	e.WriteReg(TeCompBase+CompControl, 3|1<<2|1<<4) // daddr, context, function 1
	e.WriteReg(TeControl, 1|FormatNTrace<<24)
	for _, r := range []struct {
		off        uint32
		want       uint32
		what, name string
	}{
		{TeDataControl, 0, "0", "trTeDataControl"},
		{TeFilterBase + FilterControl, 1, "1 (enabled, no dtype match)", "trTeFilter0Control"},
		{TeFilterBase + FilterMatchData, 0, "0", "trTeFilter0MatchData"},
		{TeCompBase + CompControl, 1<<2 | 1<<4, "iaddr, context, function 1", "trTeComp0Control"},
	} {
		if v := e.ReadReg(r.off); v != r.want {
			t.Errorf("back to N-Trace: %s reads %#x, want %#x (%s)", r.name, v, r.want, r.what)
		}
	}
	// a write of the daddr input is not kept: the input keeps its value
	// (WARL)
	e.WriteReg(TeCompBase+FilterStride+CompControl, 1|2<<2) // context, tval
	e.WriteReg(TeCompBase+FilterStride+CompControl, 3|3<<2|1<<4)
	if v := e.ReadReg(TeCompBase + FilterStride + CompControl); v != 1|2<<2|1<<4 {
		t.Errorf("N-Trace: trTeComp1Control reads %#x after writing the daddr inputs over context and tval, want %#x", v, 1|2<<2|1<<4)
	}
	// E-Trace without a data interface
	e2 := NewEncoder(image.NewSet(), &bytes.Buffer{})
	e2.WriteReg(TeControl, 1)
	e2.WriteReg(TeControl, 1|FormatETrace<<24)
	e2.WriteReg(TeDataControl, all)
	if v := e2.ReadReg(TeDataControl); v != 0 {
		t.Errorf("E-Trace without a data interface: trTeDataControl reads %#x, want 0", v)
	}
	// held in reset: reads 0
	e.WriteReg(TeControl, 0)
	if v := e.ReadReg(TeDataControl); v != 0 {
		t.Errorf("in reset: trTeDataControl reads %#x", v)
	}
}

// TestDataControlWARL: the WARL read-back of each field of
// trTeDataControl and trTeDataFilters with data trace.
func TestDataControlWARL(t *testing.T) {
	e := dataEncoder(t)
	e.WriteReg(TeControl, 1|FormatETrace<<24)
	for _, tc := range []struct {
		name        string
		before, w   uint32
		want        uint32
		description string
	}{
		{"tracing", 0, dcTracing, dcImplemented | dcTracing, "trTeDataTracing keeps 1"},
		{"reserved", 0, 0xFF80 | 0xFFF00000, dcImplemented, "bits 15:7 and 31:20 are reserved"},
		{"implemented RO", 0, 0, dcImplemented, "trTeDataImplemented is read-only"},
		{"tied", 0, dcTrigEnable | dcStallEna | dcDropEna, dcImplemented, "trTeDataTrigEnable, trTeDataStallEna, trTeDataDropEna are tied to 0"},
		{"W1C status", 0, dcStallOrOverflow | dcDrop, dcImplemented, "trTeDataStallOrOverflow, trTeDataDrop read 0 (no loss) and writing 1 clears"},
		{"no value", 0, dcNoValue, dcImplemented | dcNoValue, "trTeDataNoValue keeps 1"},
		{"no addr", 0, dcNoAddr, dcImplemented | dcNoAddr, "trTeDataNoAddr keeps 1"},
		{"both", dcNoAddr, dcNoValue | dcNoAddr, dcImplemented | dcNoAddr, "no value and no address at once is not kept: the old choice stays"},
		{"compress 2", 0, 2 << dcCompressShift, dcImplemented | 2<<dcCompressShift, "differential compression is kept"},
		{"compress 1", 2 << dcCompressShift, 1 << dcCompressShift, dcImplemented | 2<<dcCompressShift, "XOR-only compression is not kept"},
		{"compress 3", 2 << dcCompressShift, 3 << dcCompressShift, dcImplemented | 2<<dcCompressShift, "protocol-defined compression is not kept"},
		{"compress 0", 2 << dcCompressShift, 0, dcImplemented, "full addresses are kept"},
	} {
		e.WriteReg(TeDataControl, tc.before)
		e.WriteReg(TeDataControl, tc.w)
		if v := e.ReadReg(TeDataControl); v != tc.want {
			t.Errorf("%s: wrote %#x over %#x, reads %#x, want %#x (%s)", tc.name, tc.w, tc.before, v, tc.want, tc.description)
		}
	}
	e.WriteReg(TeDataFilters, 0xFFFFFFFF)
	if v := e.ReadReg(TeDataFilters); v != 1<<NumFilters-1 {
		t.Errorf("trTeDataFilters reads %#x after writing all ones, want %#x (the %d filters; 31:16 reserved)", v, 1<<NumFilters-1, NumFilters)
	}
	// the filters' dtype choice: unions of loads, stores and atomics
	f0 := uint32(TeFilterBase + FilterMatchData)
	for _, tc := range []struct{ w, want uint32 }{
		{1 << 0, 1 << 0},             // loads
		{1<<1 | 1<<15, 1<<1 | 1<<15}, // stores and store-conditionals
		{0x7F00, 0x7F00},             // atomics
		{0x7F00 | 1, 0x7F01},         // atomics and loads
		{1 << 1, 0x7F01},             // stores without sc: not a choice the filter stage makes
		{1 << 8, 0x7F01},             // one atomic kind
		{0xFF<<16 | 1, 1},            // dsize choice: tied to 0
	} {
		e.WriteReg(f0, tc.w)
		if v := e.ReadReg(f0); v != tc.want {
			t.Errorf("trTeFilter0MatchData: wrote %#x, reads %#x, want %#x", tc.w, v, tc.want)
		}
	}
	e.WriteReg(TeFilterBase+FilterControl, 1|1<<24|1<<25)
	if v := e.ReadReg(TeFilterBase + FilterControl); v != 1|1<<24 {
		t.Errorf("trTeFilter0Control: reads %#x, want dtype match kept, dsize match tied to 0", v)
	}
	e.WriteReg(TeCompBase+CompControl, 3|3<<2)
	if v := e.ReadReg(TeCompBase + CompControl); v&15 != 15 {
		t.Errorf("trTeComp0Control: inputs read %#x, want daddr (3) for both", v&15)
	}
	// trTeDataTracing does not change while the encoder is enabled
	e.WriteReg(TeDataControl, dcTracing)
	e.WriteReg(TeInstFeatures, 1<<28) // trTeSrcBits 1: data packets need a source ID
	e.WriteReg(TeControl, e.ReadReg(TeControl)|2|4)
	if e.ReadReg(TeControl)&2 == 0 {
		t.Fatalf("not enabled: %v", e.Err())
	}
	e.WriteReg(TeDataControl, dcTracing|dcNoValue)
	e.WriteReg(TeDataControl, dcNoValue)
	if v := e.ReadReg(TeDataControl); v&dcTracing == 0 {
		t.Errorf("trTeDataTracing changed while the encoder is enabled: %#x", v)
	}
	e.WriteReg(TeControl, e.ReadReg(TeControl)&^2)
	e.WriteReg(TeDataControl, 0)
	if v := e.ReadReg(TeDataControl); v != dcImplemented {
		t.Errorf("disabled: trTeDataControl reads %#x, want tracing off", v)
	}
}

// TestDataSettings: every field of the data trace registers reaches the
// data trace configuration and the data filters.
func TestDataSettings(t *testing.T) {
	e := dataEncoder(t)
	e.WriteReg(TeControl, 1|FormatETrace<<24)
	e.WriteReg(TeInstFeatures, 2<<28|1<<16) // trTeSrcBits 2, trTeSrcID 1
	e.SetImpl(Impl{ETrace: func() etrace.Config {
		c := DefaultImpl(64).ETrace
		c.Data = &etrace.DataConfig{SrcID: 2, Split: true}
		return c
	}()})
	s, err := e.Settings()
	if err != nil {
		t.Fatal(err)
	}
	if s.ETrace.Data != nil {
		t.Errorf("trTeDataTracing 0: data trace %+v", s.ETrace.Data)
	}
	for _, tc := range []struct {
		ctl    uint32
		fields etrace.DataFields
		noComp bool
	}{
		{dcTracing | 2<<dcCompressShift, etrace.DataAddrValue, false},
		{dcTracing, etrace.DataAddrValue, true},
		{dcTracing | dcNoValue | 2<<dcCompressShift, etrace.DataAddrOnly, false},
		{dcTracing | dcNoAddr, etrace.DataValueOnly, true},
	} {
		e.WriteReg(TeDataControl, tc.ctl)
		s, err := e.Settings()
		if err != nil {
			t.Fatal(err)
		}
		d := s.ETrace.Data
		if d == nil || d.Fields != tc.fields || d.NoCompress != tc.noComp || !d.Split || d.SrcID != 2 || d.LRIDWidth != 3 {
			t.Errorf("trTeDataControl %#x: data trace %+v, want fields %v, no compression %v, split, source 2", tc.ctl, d, tc.fields, tc.noComp)
		}
	}
	// data filters: filter 1 (privilege M, stores and atomics, comparator
	// 2 on daddr in [0x1000, 0x2000)) qualifies data; filter 0 (M only)
	// qualifies instructions
	w := func(off, v uint32) { e.WriteReg(off, v) }
	w(TeFilterBase+FilterControl, 1|1<<1)
	w(TeFilterBase+FilterMatchInst, 1<<3)
	f1 := uint32(TeFilterBase + FilterStride)
	w(f1+FilterMatchInst, 1<<3)
	w(f1+FilterMatchData, DtypeStores|DtypeAtomics)
	w(f1+FilterControl, 1|1<<1|1<<24|1<<4|2<<5)
	c2 := uint32(TeCompBase + 2*FilterStride)
	w(c2+CompPMatchLow, 0x1000)
	w(c2+CompSMatchLow, 0x2000)
	w(c2+CompControl, 3|3<<2|uint32(filter.Gte)<<4|uint32(filter.Lt)<<8|uint32(filter.MatchPS)<<12)
	w(TeInstFilters, 1)
	w(TeDataFilters, 2)
	s, err = e.Settings()
	if err != nil {
		t.Fatal(err)
	}
	f := &s.Filter
	if len(f.Filters) != 1 || !f.Filters[0].MatchPrivilege || f.Filters[0].Privileges != 8 || f.Filters[0].MatchKind {
		t.Errorf("instruction filters %+v", f.Filters)
	}
	if len(f.DataFilters) != 1 {
		t.Fatalf("data filters %+v", f.DataFilters)
	}
	df := f.DataFilters[0]
	if !df.MatchPrivilege || df.Privileges != 8 || !df.MatchKind || df.Kinds != filter.KindStore|filter.KindAtomic || len(df.Comp) != 1 || df.Comp[0] != 2 {
		t.Errorf("data filter %+v", df)
	}
	k := f.DataComparators[2]
	if k.PInput != filter.InDAddr || k.SInput != filter.InDAddr || k.PFunc != filter.Gte || k.SFunc != filter.Lt || k.Mode != filter.MatchPS || k.PMatch != 0x1000 || k.SMatch != 0x2000 {
		t.Errorf("data comparator 2: %+v", k)
	}
	if !f.DataQualified(filter.KindStore, 0, 0x1800, ingress.PrivM) || f.DataQualified(filter.KindLoad, 0, 0x1800, ingress.PrivM) ||
		f.DataQualified(filter.KindStore, 0, 0x2000, ingress.PrivM) || f.DataQualified(filter.KindStore, 0, 0x1800, ingress.PrivU) {
		t.Errorf("the data filter does not qualify exactly stores and atomics in M to [0x1000, 0x2000)")
	}
	if s.ETrace.Data.Filter == nil || len(s.ETrace.Data.Filter.DataFilters) != 1 {
		t.Errorf("the data trace configuration does not carry the data filters for a decoder")
	}
	// what the data filter stage cannot evaluate is refused
	useC2 := uint32(1 | 1<<4 | 2<<5) // filter enabled, comparator 2
	for _, tc := range []struct {
		filterCtl, compCtl uint32
		want               string
	}{
		{1 | 1<<2, 0, "exception cause"},
		{1 | 1<<3, 0, "interrupt"},
		{1 | 1<<16, 0, "impdef"},
		{useC2, 1 | uint32(filter.Eq)<<4, "context or tval"},
		{useC2, 3 | 2<<2 | uint32(filter.MatchPS)<<12, "context or tval"},
		{useC2, 3 | 3<<2 | uint32(filter.MatchLatch)<<12, "match mode 3"},
	} {
		ctl, cc := e.ReadReg(f1+FilterControl), e.ReadReg(c2+CompControl)
		w(c2+CompControl, tc.compCtl)
		w(f1+FilterControl, tc.filterCtl)
		if _, err := e.Settings(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("trTeFilter1Control %#x, trTeComp2Control %#x: error %v, want one saying %q", tc.filterCtl, tc.compCtl, err, tc.want)
		}
		w(f1+FilterControl, ctl)
		w(c2+CompControl, cc)
	}
	if _, err := e.Settings(); err != nil {
		t.Fatalf("restored: %v", err)
	}
	// an instruction filter cannot match dtype or daddr
	w(TeInstFilters, 2)
	if _, err := e.Settings(); err == nil || !strings.Contains(err.Error(), "dtype") {
		t.Errorf("instruction filter with a dtype match: %v", err)
	}
	w(f1+FilterControl, 1|1<<4|2<<5)
	if _, err := e.Settings(); err == nil || !strings.Contains(err.Error(), "daddr") {
		t.Errorf("instruction filter with a daddr comparator: %v", err)
	}
}

// TestDataOverflowStatus: trace lost while data is traced sets
// trTeDataStallOrOverflow with trTeInstStallOrOverflow; writing 1 clears
// it, and enabling the encoder clears it.
func TestDataOverflowStatus(t *testing.T) {
	e := NewEncoder(image.NewSet(), failWriter{})
	im := DefaultImpl(64)
	im.ETrace.Data = &etrace.DataConfig{SrcID: 1}
	if err := e.SetImpl(im); err != nil {
		t.Fatal(err)
	}
	c := etrace.DefaultConfig()
	c.Encap, c.SrcBits = etrace.EncapUTDD, 1
	c.Data = &etrace.DataConfig{}
	if err := e.Configure(Settings{Format: FormatETrace, ETrace: c}); err != nil {
		t.Fatal(err)
	}
	ds := e.DataSink()
	for i := 0; i < 3; i++ {
		if err := ds.Access(&ingress.Access{IAddr: 0x1000, DAddr: 0x8000, DType: ingress.DTypeStore, DSize: 3}); err != nil {
			t.Fatal(err)
		}
		if err := e.Block(&ingress.Block{IAddr: 0x1000, IRetire: 2, ILastSize: 1}); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()
	if v := e.ReadReg(TeDataControl); v&dcStallOrOverflow == 0 {
		t.Errorf("trace lost: trTeDataControl %#x has no trTeDataStallOrOverflow", v)
	}
	e.WriteReg(TeDataControl, e.ReadReg(TeDataControl)|dcStallOrOverflow)
	if v := e.ReadReg(TeDataControl); v&dcStallOrOverflow != 0 {
		t.Errorf("writing 1 did not clear trTeDataStallOrOverflow: %#x", v)
	}
	// lost again, then the encoder disabled and enabled
	e.WriteReg(TeControl, e.ReadReg(TeControl)&^2)
	e.WriteReg(TeControl, e.ReadReg(TeControl)|2)
	if err := ds.Access(&ingress.Access{IAddr: 0x1000, DAddr: 0x8000, DType: ingress.DTypeStore, DSize: 3}); err != nil {
		t.Fatal(err)
	}
	if err := e.Block(&ingress.Block{IAddr: 0x1000, IRetire: 2, ILastSize: 1}); err != nil {
		t.Fatal(err)
	}
	e.WriteReg(TeControl, e.ReadReg(TeControl)&^2)
	if v := e.ReadReg(TeDataControl); v&dcStallOrOverflow == 0 {
		t.Fatalf("trace lost again: trTeDataControl %#x has no trTeDataStallOrOverflow", v)
	}
	e.WriteReg(TeControl, e.ReadReg(TeControl)|2)
	if v := e.ReadReg(TeDataControl); v&dcStallOrOverflow != 0 {
		t.Errorf("enabling did not clear trTeDataStallOrOverflow: %#x", v)
	}
}

// failWriter takes nothing (a sink that cannot take the trace).
type failWriter struct{}

func (failWriter) Write(p []byte) (int, error) { return 0, ErrDropped }

// TestConfigureDataNotImplemented: asking for data trace from an
// encoder without it is an error naming trTeDataImplemented.
func TestConfigureDataNotImplemented(t *testing.T) {
	e := NewEncoder(image.NewSet(), &bytes.Buffer{})
	c := etrace.DefaultConfig()
	c.Encap, c.SrcBits = etrace.EncapUTDD, 1
	c.Data = &etrace.DataConfig{SrcID: 1}
	err := e.Configure(Settings{Format: FormatETrace, ETrace: c})
	if err == nil || !strings.Contains(err.Error(), "trTeDataImplemented") {
		t.Errorf("Configure with data trace on an encoder without it: %v", err)
	}
	if e.DataSink() != nil {
		t.Errorf("an encoder without a data trace interface has a data sink")
	}
}

// TestDataSrcIDOfHarts: the encoder of one of several harts with data
// trace (DataConfig.Harts = 2: hart h's data packets carry source ID
// 2 + h, the layout a decoder of the harts' data trace, etrace's Demux,
// reads) gives its data packets source ID 2 + trTeSrcID, following a
// reprogrammed trTeSrcID; a trTeSrcID of 2 or more (a data source's ID)
// does not enable it (trTeEnable reads 0), and RefusedEnables says why,
// until a legal one does.
func TestDataSrcIDOfHarts(t *testing.T) {
	e := NewEncoder(image.NewSet(), &bytes.Buffer{})
	im := DefaultImpl(64)
	im.ETrace.Data = &etrace.DataConfig{SrcID: 3, Harts: 2} // hart 1's
	if err := e.SetImpl(im); err != nil {
		t.Fatal(err)
	}
	e.WriteReg(TeControl, 0)
	e.WriteReg(TeControl, 1)
	e.WriteReg(TeControl, 1|FormatETrace<<24)
	e.WriteReg(TeDataControl, dcTracing|2<<dcCompressShift)
	const enable = 1 | 2 | 4 | FormatETrace<<24 // active, enabled, tracing
	for _, c := range []struct {
		id, data uint32
		ok       bool
	}{{1, 3, true}, {0, 2, true}, {2, 0, false}, {3, 0, false}, {1, 3, true}} {
		e.WriteReg(TeControl, 1|4|FormatETrace<<24) // disabled
		e.WriteReg(TeInstFeatures, 2<<28|c.id<<16)  // trTeSrcBits 2
		e.WriteReg(TeControl, enable)
		n0, _ := e.RefusedEnables()
		on := e.ReadReg(TeControl)&2 != 0
		if on != c.ok {
			t.Fatalf("trTeSrcID %d: trTeEnable reads %v, want %v (%v)", c.id, on, c.ok, e.Err())
		}
		if !c.ok {
			n, err := e.RefusedEnables()
			if n == 0 || err == nil || !strings.Contains(err.Error(), "must be below 2") {
				t.Errorf("trTeSrcID %d: refused enables %d (%v), want the reason", c.id, n, err)
			}
			continue
		}
		s, ok := e.LastSettings()
		if !ok || s.ETrace.SrcID != c.id || s.ETrace.Data == nil || s.ETrace.Data.SrcID != c.data {
			t.Errorf("trTeSrcID %d: the encoder runs with instruction source %d, data %+v; want data source %d", c.id, s.ETrace.SrcID, s.ETrace.Data, c.data)
		}
		if n, _ := e.RefusedEnables(); n != n0 {
			t.Errorf("trTeSrcID %d: enabled, yet counted as refused", c.id)
		}
	}
	if n, _ := e.RefusedEnables(); n != 2 {
		t.Errorf("%d refused enables counted, want 2", n)
	}
}
