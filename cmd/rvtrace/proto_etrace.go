package main

import (
	"flag"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/filter"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	tproto "github.com/rvtrace/rvtrace/protocol"
	"github.com/rvtrace/rvtrace/tracectl"
)

func init() {
	registerProtocol(&protocol{
		name:    "etrace",
		summary: "RISC-V Efficient Trace (E-Trace) 2.0, or the 0.026 draft layout",
		encoder: etraceEncoderFlags,
		decoder: etraceDecoderFlags,
		dumper:  etraceDumperFlags,
	})
}

// etraceConfigFlags registers the E-Trace configuration flags shared by
// encode, decode and dump (the decoder and dumper must be given the same
// ones as the encoder).
func etraceConfigFlags(fs *flag.FlagSet) func() (etrace.Config, error) {
	version := fs.String("etrace-version", "2.0", "packet layout: 2.0 (ratified) or 0.026 (draft)")
	config := fs.String("config", "", "hardware parameters `file` (name = value lines with the specification's parameter names, e.g. iaddress_width_p = 32)")
	encap := fs.String("encap", "raw", "framing: raw (reference flow .te_inst_raw) or utdd (Unformatted Trace & Diagnostic Data encapsulation; run --harts N>1 uses it, with one --src-bits source ID per hart, and decode then separates the harts); decode detects the framing when no framing option is given")
	full := fs.Bool("full-address", false, "full address mode (default: delta address mode)")
	implExc := fs.Bool("implicit-exception", false, "implicit exception mode: omit trap handler addresses (needs --tvec)")
	tvec := fs.Uint64("tvec", 0, "trap vector (mtvec) for implicit exception mode; bit 0 = vectored interrupts")
	sij := fs.Bool("sijump", false, "sequentially inferable jump mode")
	ir := fs.String("implicit-return", "off", "implicit return mode: off, counter (call_counter_size_p 4; the encoder warns and resynchronises at returns that go elsewhere than after their call, which a counter cannot trace) or stack (return_stack_size_p 3: reports them)")
	bp := fs.Bool("branch-prediction", false, "branch prediction mode (format 0 branch counts)")
	jtc := fs.Bool("jump-target-cache", false, "jump target cache mode (format 0 cache indexes)")
	all := fs.Bool("all-modes", false, "enable every optional mode but full address")
	resync := fs.Int("resync", 0, "resynchronise every N te_inst packets (0: never); trTeInstSyncMax counts 2^(trTeInstSyncMax+4) packets, so N is a power of two from 16 to 524288")
	srcBits := fs.Int("src-bits", 0, "utdd: width of the source ID field (trTeSrcBits)")
	srcID := fs.Uint("src-id", 0, "utdd: source ID (trTeSrcID)")
	typeField := fs.Bool("type-field", false, "utdd: 2-bit trace type after the source ID")
	tsBytes := fs.Int("timestamp-bytes", 0, "utdd: timestamp size in bytes (0: none)")
	var context *bool
	fs.BoolFunc("context", "nocontext_p = 0: format 3 packets carry the context (process ID), and a context change is reported (default: the parameters', no context)", func(s string) error {
		v, err := strconv.ParseBool(s)
		context = &v
		return err
	})
	dataTrace := fs.Bool("data-trace", false, "data trace: one packet per load, store and atomic (two per split load: --data-protocol), joined to the decoded instructions")
	dataFields := fs.String("data-fields", "addr,data", "data trace packet contents: addr,data, addr (trTeDataNoValue) or data (trTeDataNoAddr)")
	dataSrcID := fs.Int("data-src-id", -1, "utdd: source ID of the data trace packets (default: --src-id + 1)")
	dataHarts := fs.Int("data-harts", 0, "utdd: data trace of N harts (run --harts N sets it): hart h's instruction packets carry source ID h, its data packets N+h; decode joins each hart's")
	dataProto := fs.String("data-protocol", "unified", "data trace interface protocol: unified, or split (loads and atomics as a request and a later response, with split request and load data packets; lrid_width_p 3)")
	dataCompress := fs.Bool("data-compress", true, "data trace: differential addresses and XOR or difference values after the first of each size (trTeDataAddrCompress 2); false sends every address and value in full (trTeDataAddrCompress 0). A decoder must be given the same")
	dataCSR := fs.Bool("data-csr", false, "data trace: CSR accesses too, one format 101 packet per retired csrrw/csrrs/csrrc(i) with the CSR number, the value read (the CSR's value before, what rd receives) and the operand (rs1 or uimm); not with --data-fields data (no CSR packet without the CSR number). The support packet announces it (doptions bit 4), so decode needs no flag; given to decode or dump, it expects CSR packets whatever the support packet says (for traces that do not announce them). Decoded, a CSR access is a data object (value read, operand) in --jsonl and the R record of rd (not x0) in --tarmac; no R record of the CSR (the value written is legalised by the CSR, the trace does not give it exactly)")
	dataCSRWidth := fs.Int("data-csr-width", 0, "data trace of CSR accesses: width of the hart's CSRs, 32 or 64 (0: data_width_p, 64); an RV32 program needs 32, to trace them (--data-csr) and to decode them (announced or not)")
	dataFilter := filter.DataFlag(fs)
	return func() (etrace.Config, error) {
		c := etrace.DefaultConfig()
		var err error
		if c.Version, err = etrace.ParseVersion(*version); err != nil {
			return c, err
		}
		if *config != "" {
			if err := noteInput(*config); err != nil {
				return c, err
			}
			if err := etrace.LoadConfig(*config, &c.Params); err != nil {
				return c, err
			}
		}
		if context != nil {
			c.Params.NoContext = !*context
		}
		if c.Encap, err = etrace.ParseEncap(*encap); err != nil {
			return c, err
		}
		o := &c.Options
		o.FullAddress, o.ImplicitException, o.SIJump = *full, *implExc, *sij
		o.BranchPrediction, o.JumpTargetCache = *bp, *jtc
		if *all {
			o.ImplicitException, o.SIJump, o.BranchPrediction, o.JumpTargetCache = true, true, true, true
			if *ir == "off" {
				*ir = "stack"
			}
		}
		switch *ir {
		case "off", "":
		case "counter":
			o.ImplicitReturn = true
			if c.Params.CallCounterSize == 0 && c.Params.ReturnStackSize == 0 {
				c.Params.CallCounterSize = 4
			}
		case "stack":
			o.ImplicitReturn = true
			if c.Params.CallCounterSize == 0 && c.Params.ReturnStackSize == 0 {
				c.Params.ReturnStackSize = 3
			}
		default:
			return c, fmt.Errorf("--implicit-return must be off, counter or stack")
		}
		if *tvec != 0 {
			c.Params.TVec = *tvec
		}
		c.ResyncPeriod = *resync
		c.SrcBits, c.SrcID, c.TypeField, c.TimestampBytes = *srcBits, uint32(*srcID), *typeField, *tsBytes
		if *dataTrace {
			f, err := etrace.ParseDataFields(*dataFields)
			if err != nil {
				return c, fmt.Errorf("--data-fields: %v", err)
			}
			id := uint32(*srcID) + 1
			if *srcBits > 0 && *srcBits < 32 {
				id &= 1<<*srcBits - 1
			}
			if *dataSrcID >= 0 {
				id = uint32(*dataSrcID)
			}
			if *dataHarts > 1 {
				if *dataSrcID >= 0 {
					return c, fmt.Errorf("--data-src-id is one hart's: with --data-harts %d, hart h's data packets carry source ID %d+h", *dataHarts, *dataHarts)
				}
				id = uint32(*dataHarts) + uint32(*srcID)
			}
			split, err := etrace.ParseDataProtocol(*dataProto)
			if err != nil {
				return c, fmt.Errorf("--data-protocol: %v", err)
			}
			c.Data = &etrace.DataConfig{Fields: f, SrcID: id, Split: split, NoCompress: !*dataCompress, Harts: max(*dataHarts, 0),
				CSR: *dataCSR, CSRWidth: *dataCSRWidth}
			fc, err := dataFilter()
			if err != nil {
				return c, fmt.Errorf("--data-filter: %v", err)
			}
			if fc.HasData() {
				c.Data.Filter = &fc
			}
		} else if dataFlagSet(fs) {
			n := len(dataFlags) - 1
			return c, fmt.Errorf("--%s and --%s need --data-trace", strings.Join(dataFlags[:n], ", --"), dataFlags[n])
		}
		return c, c.Check()
	}
}

// etraceMultiHart sets the framing of a trace of several harts: the UTDD
// encapsulation, whose source ID field (--src-bits) tells the harts'
// packets apart; the raw framing has none.
func etraceMultiHart(fs *flag.FlagSet) error {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "encap" })
	if e := fs.Lookup("encap"); set && e != nil && e.Value.String() != "utdd" {
		return fmt.Errorf("--encap %s has no source ID to tell the harts apart: a trace of several harts is framed with --encap utdd", e.Value)
	}
	return fs.Set("encap", "utdd")
}

// dataFlags are the data trace options etraceConfigFlags defines other
// than --data-trace, which they need: the one list of dataFlagSet, run's
// dataTraceArg and the error that names them.
var dataFlags = []string{"data-fields", "data-protocol", "data-compress", "data-filter", "data-src-id", "data-harts", "data-csr", "data-csr-width"}

// dataFlagSet reports whether a data trace option other than --data-trace
// was given.
func dataFlagSet(fs *flag.FlagSet) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || slices.Contains(dataFlags, f.Name) })
	return set
}

// etraceEncoderFlags returns the E-Trace encoder component of a hart,
// programmed through its registers with the configuration of the flags:
// the fields of the registers by register writes, the others as
// implementation parameters. With --data-trace the hart has a data trace
// interface (an implementation parameter, with the data packets' source
// ID, the protocol and the widths), and trTeDataControl and
// trTeDataFilters select the packets' contents, compression and data
// filters; the component is then also the interface's sink (its
// DataSink).
func etraceEncoderFlags(fs *flag.FlagSet) encoderFn {
	cfgf := etraceConfigFlags(fs)
	csvOut := fs.String("te-inst-csv", "", "also write the packets as the reference flow's te_inst CSV `file`")
	var dataIn *string
	if fs.Lookup("ingress-in") != nil {
		// encode (not run): the accesses come from a file
		dataIn = fs.String("data-ingress-in", "", "data ingress CSV `file` (one access per line: iaddr,dtype,daddr,dsize,data, in retirement order; with --data-protocol split also lrid,lresp,lid,ldata,time: a line per request and per response, the responses placed by the ingress CSV's time column) to encode with --data-trace")
	}
	return func(w io.Writer, img *image.Set, src int, fc *filter.Config, comp *tracectl.Encoder) (ingress.Sink, error) {
		cfg, err := cfgf()
		if err != nil {
			return nil, err
		}
		if src > 0 {
			// one encoder of several (run --harts N): its own source ID
			if cfg.Encap != etrace.EncapUTDD || src>>cfg.SrcBits != 0 {
				return nil, fmt.Errorf("E-Trace source %d needs --encap utdd and --src-bits of at least %d", src, bits.Len(uint(src)))
			}
			cfg.SrcID = uint32(src)
			if cfg.Data != nil && cfg.Data.Harts > 1 {
				// its data packets: source ID harts + hart
				cfg.Data.SrcID = uint32(cfg.Data.Harts + src)
			}
			if *csvOut != "" {
				return nil, fmt.Errorf("--te-inst-csv writes the packets of one hart (the CSV has no source column)")
			}
		}
		if dataIn != nil && (*dataIn != "") != (cfg.Data != nil) {
			return nil, fmt.Errorf("--data-trace and --data-ingress-in go together: the data trace encoder needs the accesses")
		}
		if cfg.Data != nil && *csvOut != "" {
			return nil, fmt.Errorf("--te-inst-csv does not take data trace packets: leave out --data-trace")
		}
		if comp != nil && cfg.Encap != etrace.EncapUTDD {
			return nil, fmt.Errorf("--encap %s: the RAM sink stores 32-bit words, and pads the last one with the null packet of the UTDD encapsulation: E-Trace through the trace system needs --encap utdd", cfg.Encap)
		}
		if cfg.Data != nil && dataIn != nil && *dataIn != "" && fc != nil && !fc.Empty() {
			return nil, fmt.Errorf("--data-ingress-in does not go through --filter, --trigger or --data-filter: filter the trace with rvtrace run")
		}
		if cfg.Data != nil && cfg.Data.Filter != nil {
			// the data filters are the filter stage's (fc): the
			// registers' trTeDataFilters
			cfg.Data.Filter = nil
		}
		im := tracectl.Impl{ETrace: cfg}
		s := tracectl.Settings{Format: tracectl.FormatETrace, ETrace: cfg}
		if fc != nil {
			s.Filter, im.Triggers = *fc, *fc
		}
		var sink *etraceCSVSink
		if *csvOut != "" {
			f, err := createOutput(*csvOut)
			if err != nil {
				return nil, err
			}
			cw := etrace.NewCSVWriter(f, &cfg)
			sink = &etraceCSVSink{f: f, cw: cw, err: new(error)}
			im.OnPacket = func(p *etrace.Packet) {
				if *sink.err == nil {
					*sink.err = cw.Write(p)
				}
			}
		}
		enc, err := encoderComponent(w, img, comp, s, im, etraceFlagOf)
		if err != nil {
			if sink != nil {
				sink.f.Close()
			}
			return nil, err
		}
		if cfg.Data != nil && dataIn != nil && *dataIn != "" {
			// encode: the accesses come from the data ingress CSV
			return etraceDataMerge(enc, *dataIn, img)
		}
		if sink == nil {
			return enc, nil
		}
		sink.Encoder = enc
		return sink, nil
	}
}

// etraceDataMerge feeds the data trace interface of the encoder
// component enc from the data ingress CSV file name.
func etraceDataMerge(enc *tracectl.Encoder, name string, img *image.Set) (ingress.Sink, error) {
	if err := noteInput(name); err != nil {
		return nil, err
	}
	f, err := openInput(name)
	if err != nil {
		return nil, err
	}
	ds, err := ingress.NewDataCSVSource(f, name)
	if err != nil {
		f.Close()
		return nil, err
	}
	// (the retirements of a multi-access instruction, once per access in
	// files run writes, are folded in front of the encoder, as run does)
	c := componentData{enc, enc.DataSink()}
	m := ingress.NewDataMerger(dataFolder(c, c, imageMulti(img)), ds)
	m.PerInst = func(iaddr uint64) int {
		if in := img.InstPtr(iaddr); in != nil {
			return etrace.DataAccesses(in)
		}
		return 1
	}
	return &dataMergeSink{m, f}, nil
}

// componentData is an encoder component with its data trace interface.
type componentData struct {
	*tracectl.Encoder
	data ingress.SplitDataSink
}

// Access passes an access to the component's data trace interface.
func (c componentData) Access(a *ingress.Access) error { return c.data.Access(a) }

// Response passes a split load response to the component's data trace
// interface.
func (c componentData) Response(r *ingress.LoadResponse) error { return c.data.Response(r) }

// dataMergeSink closes the data ingress file with the encoder.
type dataMergeSink struct {
	*ingress.DataMerger
	f io.Closer
}

func (s *dataMergeSink) Close() error {
	err := s.DataMerger.Close()
	if e := s.f.Close(); err == nil {
		err = e
	}
	return err
}

// etraceCSVSink closes the CSV file with the encoder.
type etraceCSVSink struct {
	*tracectl.Encoder
	f   io.WriteCloser
	cw  *etrace.CSVWriter
	err *error
}

func (s *etraceCSVSink) Close() error {
	err := s.Encoder.Close()
	if e := s.cw.Flush(); err == nil {
		err = e
	}
	if e := s.f.Close(); err == nil {
		err = e
	}
	if err == nil {
		err = *s.err
	}
	return err
}

func etraceDecoderFlags(fs *flag.FlagSet) decoderConfigFn {
	cfgf := etraceConfigFlags(fs)
	csvIn := fs.Bool("csv", false, "the trace is a te_inst CSV file (default for names ending in .te_inst)")
	return func(name string) (*decodeSetup, error) {
		cfg, err := cfgf()
		if err != nil {
			return nil, err
		}
		csv := *csvIn || strings.HasSuffix(name, ".te_inst") || strings.HasSuffix(name, ".csv")
		c := tproto.DefaultConfig() // the other protocols' defaults, for sniffing
		c.ETrace, c.ETraceCSV = cfg, csv
		s := &decodeSetup{cfg: c}
		if !csv {
			s.after = func(d tproto.Decoder, c *tproto.Config) {
				if h := etraceSourceHint(d, &c.ETrace); h != "" {
					fmt.Fprintf(stderr, "%s: hint: %s\n", name, h)
				}
			}
			if !framingGiven(fs, "etrace") {
				s.detect = detectETraceFraming
			}
		}
		return s, nil
	}
}

// etraceSourceHint returns what the source IDs of a UTDD-framed trace
// that the decode d (configured with cfg) could not place suggest, naming
// the flags that decode it, or "" when every frame belonged to a source
// that synchronised. The frames themselves are gaps already (the decode
// exits non-zero); the hint is said once, not per frame. The likely
// cause: a trace of N harts with data trace (run --harts N --data-trace)
// carries hart h's instruction packets with source ID h and its data
// packets with N+h, which only --data-trace --data-harts N reads; without
// it, the data sources look like sources that never synchronise (no
// --data-trace) or belong to no source (--data-trace alone: one
// instruction and one data source).
func etraceSourceHint(d tproto.Decoder, cfg *etrace.Config) string {
	if cfg.Encap != etrace.EncapUTDD || cfg.SrcBits == 0 {
		return ""
	}
	var good, bad []uint32 // sources that synchronised; those no source has or that never did
	switch d := d.(type) {
	case *etrace.Demux:
		for _, id := range d.Sources() {
			if st := d.Source(id).Stats(); st.Sync[0]+st.Sync[1] == 0 {
				bad = append(bad, id)
			} else {
				good = append(good, id)
			}
		}
		bad = append(bad, d.ForeignSources()...)
	case interface{ ForeignSources() []uint32 }:
		bad = d.ForeignSources()
		good = []uint32{cfg.SrcID}
		if cfg.Data != nil {
			good = append(good, cfg.Data.SrcID)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	slices.Sort(bad)
	bad = slices.Compact(bad)
	slices.Sort(good)
	top := slices.Max(append(slices.Clone(good), bad...))
	// within: every ID of bad is from lo to hi
	within := func(lo, hi uint32) bool { return bad[0] >= lo && bad[len(bad)-1] <= hi }
	ids := make([]string, len(bad))
	for i, id := range bad {
		ids[i] = strconv.FormatUint(uint64(id), 10)
	}
	list := "source ID " + ids[0]
	if len(ids) > 1 {
		list = "source IDs " + strings.Join(ids, ", ")
	}
	var what string
	switch {
	case cfg.Data == nil:
		what = fmt.Sprintf("frames of %s never had a sync packet", list)
		// the harts: the sources that synchronised, if they are 0..n-1
		// (a hart that made no access has no data source)
		n := uint32(len(good))
		if n == 0 || good[n-1] != n-1 || !within(n, 2*n-1) {
			break
		}
		if n == 1 {
			return fmt.Sprintf("%s: they look like the data trace packets of a run --data-trace (source ID 1): decode with --data-trace (and the run's other --data-* options)", what)
		}
		return fmt.Sprintf("%s: they look like the data trace packets of a run --harts %d --data-trace (hart h's instruction packets carry source ID h, its data packets %d+h): decode with --data-trace --data-harts %d (and the run's other --data-* options; --src K selects hart K)",
			what, n, n, n)
	case cfg.Data.Harts > 1:
		what = fmt.Sprintf("frames of %s belong to no hart of --data-harts %d, or never had a sync packet", list, cfg.Data.Harts)
		// the harts whose data source IDs end at top, if each further
		// hart's data source is among those no hart has
		h, n := uint32(cfg.Data.Harts), top/2+1
		if n > h && within(2*h, 2*n-1) && len(bad) >= int(n-h) {
			return fmt.Sprintf("%s: the source IDs seen fit a data trace of %d harts (run --harts %d --data-trace): decode with --data-trace --data-harts %d", what, n, n, n)
		}
	default:
		what = fmt.Sprintf("frames of %s, which no configured source has (instruction source %d, data source %d)", list, cfg.SrcID, cfg.Data.SrcID)
		// the harts whose data source IDs end at top (--data-trace alone
		// configures instruction source 0 and data source 1: hart 1's
		// instruction packets are taken for data packets), if hart 0's
		// data source (n) is there
		n := top/2 + 1
		if n > 1 && cfg.SrcID == 0 && cfg.Data.SrcID == 1 && within(2, 2*n-1) && slices.Contains(bad, n) {
			return fmt.Sprintf("%s: they look like a data trace of %d harts (run --harts %d --data-trace: hart h's instruction packets carry source ID h, its data packets %d+h): decode with --data-trace --data-harts %d (and the run's other --data-* options; --src K selects hart K)",
				what, n, n, n, n)
		}
	}
	return fmt.Sprintf("%s: a source ID damaged in the trace, or a configuration other than the encoder's: give --src-bits as the encoder's trTeSrcBits, the sources' --src-id and --data-src-id, or for a data trace of N harts (run --harts N --data-trace) --data-trace --data-harts N; --src K selects one source", what)
}

func etraceDumperFlags(fs *flag.FlagSet) func() (*tproto.Config, error) {
	cfgf := etraceConfigFlags(fs)
	toCSV := fs.Bool("to-csv", false, "write the packets as the reference flow's te_inst CSV instead of a listing")
	return func() (*tproto.Config, error) {
		cfg, err := cfgf()
		if err != nil {
			return nil, err
		}
		c := &tproto.Config{ETrace: cfg}
		c.Dump.CSV = *toCSV
		return c, nil
	}
}
