package tracectl

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/filter"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/ntrace"
)

// TestConfigureSettings: Configure writes the registers so that the
// encoder they start has exactly the configuration asked for: the
// register-held fields from the registers, the others from SetImpl.
func TestConfigureSettings(t *testing.T) {
	img := image.NewSet()
	ncfgs := []ntrace.Config{
		ntrace.Presets["best"],
		ntrace.Presets["ref-btm"],
		{Mode: ntrace.HTM, SrcBits: 12, SrcID: 4095, Timestamps: true, Context: true, SyncMode: 3, SyncMax: 15, AllJumps: true},
		{Mode: ntrace.BTM, ImplicitReturn: ntrace.ReturnCount, StackDepth: 4, ICNTBits: 6, FIFOBytes: 80, DrainBytes: 1, DrainCycles: 4},
		{Mode: ntrace.HTM, ImplicitReturn: 2, PartialBits: 8, SequentialJump: true, ExtendAddrMSB: true, SyncMode: 1, SyncMax: 0},
	}
	for _, c := range ncfgs {
		e := NewEncoder(img, &bytes.Buffer{})
		if err := e.SetImpl(Impl{NTrace: c}); err != nil {
			t.Fatal(err)
		}
		if err := e.Configure(Settings{Format: FormatNTrace, NTrace: c}); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		got, ok := e.LastSettings()
		want := c
		want.XLEN = 64
		if !ok || got.Format != FormatNTrace || !reflect.DeepEqual(got.NTrace, want) {
			t.Errorf("N-Trace: started with\n%+v\nwant\n%+v", got.NTrace, want)
		}
		if ctl := e.ReadReg(TeControl); ctl&7 != 7 {
			t.Errorf("trTeControl %#x: not active, enabled and tracing", ctl)
		}
	}
	base := etrace.DefaultConfig()
	base.Encap, base.TimestampBytes, base.TypeField = etrace.EncapUTDD, 4, true
	ecfgs := []etrace.Config{base, base, base}
	ecfgs[1].Options = etrace.Options{FullAddress: true, ImplicitException: true, SIJump: true, ImplicitReturn: true,
		BranchPrediction: true, JumpTargetCache: true}
	ecfgs[1].SrcBits, ecfgs[1].SrcID, ecfgs[1].ResyncPeriod = 3, 6, 1<<19
	ecfgs[2].Params.NoTime, ecfgs[2].Params.NoContext, ecfgs[2].ResyncPeriod = false, false, 16
	ecfgs[2].Version = etrace.V026
	for _, c := range ecfgs {
		e := NewEncoder(img, &bytes.Buffer{})
		if err := e.SetImpl(Impl{ETrace: c}); err != nil {
			t.Fatal(err)
		}
		if err := e.Configure(Settings{Format: FormatETrace, ETrace: c}); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		got, _ := e.LastSettings()
		want := c
		if err := want.Check(); err != nil {
			t.Fatal(err)
		}
		if got.Format != FormatETrace || !reflect.DeepEqual(got.ETrace, want) {
			t.Errorf("E-Trace: started with\n%+v\nwant\n%+v", got.ETrace, want)
		}
	}
}

// TestSetImplRegisterFieldsIgnored: the register-held fields of the
// implementation parameters have no effect; the registers' do.
func TestSetImplRegisterFieldsIgnored(t *testing.T) {
	e := NewEncoder(image.NewSet(), &bytes.Buffer{})
	im := Impl{NTrace: ntrace.Config{Mode: ntrace.BTM, SyncMode: 2, SyncMax: 9, Timestamps: true, HistBits: 8}}
	if err := e.SetImpl(im); err != nil {
		t.Fatal(err)
	}
	if err := e.Configure(Settings{Format: FormatNTrace, NTrace: ntrace.Config{Mode: ntrace.HTM}}); err != nil {
		t.Fatal(err)
	}
	got, _ := e.LastSettings()
	if want := (ntrace.Config{Mode: ntrace.HTM, HistBits: 8, XLEN: 64}); !reflect.DeepEqual(got.NTrace, want) {
		t.Errorf("started with %+v, want %+v", got.NTrace, want)
	}
	// data trace: the packet contents and compression are register
	// fields (trTeDataNoValue, trTeDataAddrCompress), not parameters
	c := DefaultImpl(64)
	c.ETrace.Data = &etrace.DataConfig{Fields: etrace.DataAddrOnly, NoCompress: true, SrcID: 1}
	if err := e.SetImpl(c); err != nil {
		t.Fatal(err)
	}
	et := etrace.DefaultConfig()
	et.Encap, et.SrcBits = etrace.EncapUTDD, 1
	et.Data = &etrace.DataConfig{}
	if err := e.Configure(Settings{Format: FormatETrace, ETrace: et}); err != nil {
		t.Fatal(err)
	}
	got, _ = e.LastSettings()
	if d := got.ETrace.Data; d == nil || d.Fields != etrace.DataAddrValue || d.NoCompress || d.SrcID != 1 {
		t.Errorf("started with data trace %+v, want addresses and values, compressed, source ID 1", d)
	}
}

// TestConfigureFieldErrors: a value a field does not keep is an error
// naming the register and the field, with the value asked for and the one
// kept, and the encoder is left disabled.
func TestConfigureFieldErrors(t *testing.T) {
	nt := func(c ntrace.Config) Settings { c.Mode = ntrace.HTM; return Settings{Format: FormatNTrace, NTrace: c} }
	et := func(f func(c *etrace.Config)) Settings {
		c := etrace.DefaultConfig()
		f(&c)
		return Settings{Format: FormatETrace, ETrace: c}
	}
	for _, tc := range []struct {
		s      Settings
		field  string
		wrote  uint64
		kept   uint64
		detail bool
	}{
		{nt(ntrace.Config{SyncMode: 1, SyncMax: 20}), "trTeInstSyncMax", 20, 4, false},
		{nt(ntrace.Config{SyncMode: 4}), "trTeInstSyncMode", 4, 0, false},
		{nt(ntrace.Config{SrcBits: 13}), "trTeSrcBits", 13, 0, false},
		{nt(ntrace.Config{SrcBits: 2, SrcID: 4}), "trTeSrcID", 4, 0, false},
		{nt(ntrace.Config{ImplicitReturn: 5}), "trTeInstImplicitReturnMode", 5, 1, false},
		{Settings{Format: FormatNTrace, NTrace: ntrace.Config{Mode: 4}}, "trTeInstMode", 4, InstModeHTM, false},
		{et(func(c *etrace.Config) { c.ResyncPeriod = 100 }), "trTeInstSyncMax", 100, 0, true},
		{et(func(c *etrace.Config) { c.ResyncPeriod = 1 << 20 }), "trTeInstSyncMax", 16, 0, false},
		{et(func(c *etrace.Config) { c.SrcBits = 14 }), "trTeSrcBits", 14, 0, false},
		{Settings{Format: 3}, "trTeFormat", 3, 0, true},
		{nt(ntrace.Config{}), "trTeFilterMatchValueImpdef", 1 << 40, 0, false},
		{nt(ntrace.Config{}), "trTeInstFilters", 9, 0, true},
	} {
		switch tc.field {
		case "trTeFilterMatchValueImpdef":
			tc.s.Filter.Filters = []filter.Filter{{MatchImpdef: true, ImpdefValue: 1 << 40, ImpdefMask: 1}}
		case "trTeInstFilters":
			tc.s.Filter.Filters = make([]filter.Filter, 9)
		}
		e := NewEncoder(image.NewSet(), &bytes.Buffer{})
		err := e.Configure(tc.s)
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: got %v, want a FieldError", tc.field, err)
			continue
		}
		if fe.Field != tc.field || fe.Wrote != tc.wrote || !tc.detail && fe.Kept != tc.kept || tc.detail != (fe.Detail != "") {
			t.Errorf("%s: got %+v (%v)", tc.field, fe, err)
		}
		if e.ReadReg(TeControl)&2 != 0 {
			t.Errorf("%s: the encoder was enabled", tc.field)
		}
	}
}

// TestExternalTimestamp: trTsMode External (1) takes the time input of
// the ingress port as it is: the encoder's timestamps are the blocks'
// times, and trTsCounter reads the last one.
func TestExternalTimestamp(t *testing.T) {
	e := NewEncoder(image.NewSet(), &bytes.Buffer{})
	if err := e.Configure(Settings{Format: FormatNTrace, NTrace: ntrace.Config{Mode: ntrace.HTM, Timestamps: true}}); err != nil {
		t.Fatal(err)
	}
	if m := e.ReadReg(TsControl) >> 4 & 7; m != TsModeExternal {
		t.Fatalf("trTsMode reads %d", m)
	}
	b := ingress.Block{IAddr: 0x1000, IRetire: 2, IType: ingress.ITypeNone, Time: 123456789012}
	if err := e.Block(&b); err != nil {
		t.Fatal(err)
	}
	if b.Time != 123456789012 {
		t.Errorf("the block's time was changed to %d", b.Time)
	}
	if lo, hi := e.ReadReg(TsCounterLow), e.ReadReg(TsCounterHigh); uint64(hi)<<32|uint64(lo) != 123456789012 {
		t.Errorf("trTsCounter reads %#x:%#x, want the time input 123456789012", hi, lo)
	}
}

// TestETraceReturnModeReported: trTeInstImplicitReturnMode of an E-Trace
// encoder reports how its implicit return is built: 1 with a call counter
// (call_counter_size_p) and no return stack, 3 with a return stack; a
// write of another value keeps it.
func TestETraceReturnModeReported(t *testing.T) {
	for _, tc := range []struct {
		counter, stack int
		want           uint32
	}{{4, 0, 1}, {0, 3, 3}, {0, 0, 3}} {
		c := etrace.DefaultConfig()
		c.Params.CallCounterSize, c.Params.ReturnStackSize = tc.counter, tc.stack
		c.Options.ImplicitReturn = true
		e := NewEncoder(image.NewSet(), &bytes.Buffer{})
		if err := e.SetImpl(Impl{ETrace: c}); err != nil {
			t.Fatal(err)
		}
		if err := e.Configure(Settings{Format: FormatETrace, ETrace: c}); err != nil {
			t.Fatal(err)
		}
		if m := e.ReadReg(TeInstFeatures) >> 6 & 3; m != tc.want {
			t.Errorf("counter %d, stack %d: mode reads %d, want %d", tc.counter, tc.stack, m, tc.want)
		}
		e.WriteReg(TeInstFeatures, e.ReadReg(TeInstFeatures)&^(3<<6)|2<<6)
		if m := e.ReadReg(TeInstFeatures) >> 6 & 3; m != tc.want {
			t.Errorf("counter %d, stack %d: mode 2 written, reads %d", tc.counter, tc.stack, m)
		}
	}
}
