package etrace

import (
	"bytes"
	"math/bits"
	"slices"
)

// SniffBytes is how much of a trace's start Sniff needs to judge it.
const SniffBytes = 16 << 10

// SniffResult says how well a prefix of bytes parses as framed E-Trace
// packets with a given configuration.
type SniffResult struct {
	// Bytes is the number of bytes examined (a frame cut by the end of the
	// prefix is not counted).
	Bytes int
	// Good is the number of those bytes in frames whose packet parses.
	Good int
	// Packets counts those packets, Syncs the format 3 packets among them.
	Packets, Syncs int
	// Errors counts framing errors and packets that do not parse.
	Errors int
}

// Score returns the share of the examined bytes that parse as E-Trace,
// from 0 (none) to 1 (all).
func (r SniffResult) Score() float64 {
	if r.Bytes == 0 {
		return 0
	}
	return float64(r.Good) / float64(r.Bytes)
}

// newSniffScanner returns a scanner of prefix framed as cfg says, with a
// buffer no larger than prefix needs.
func newSniffScanner(prefix []byte, cfg *Config) *Scanner {
	n := min(len(prefix)+2*maxFrame, scanBufSize)
	return &Scanner{cfg: cfg, r: bytes.NewReader(prefix), buf: make([]byte, n), raw: cfg.Encap == EncapRaw}
}

// Sniff parses prefix, the first bytes of a trace (SniffBytes are
// enough), as packets framed as cfg says, and tells how well they parse.
// It reads nothing else and never fails: bytes that are not E-Trace give
// a low score. A real capture scores close to 1; an N-Trace capture, a
// compressed file or text scores lower, since most of their bytes are
// not a valid frame header followed by a packet that parses.
func Sniff(prefix []byte, cfg *Config) SniffResult {
	var res SniffResult
	c := NewCodec(cfg)
	sc := newSniffScanner(prefix, cfg)
	var p Packet
	var dc *dataCodec
	dataCfg := cfg.Data
	if dataCfg == nil {
		// (CSR packets parse too: the support packet does not say
		// whether a trace has them)
		dataCfg = &DataConfig{DataWidth: 64, DAddressWidth: cfg.Params.IAddressWidth, CSR: true, CSRWidth: 64}
	}
	for {
		start := sc.Offset()
		if !sc.Scan() {
			if _, ok := sc.Err().(*FramingError); !ok || sc.Offset() >= int64(len(prefix)) && sc.Done() {
				break
			}
			res.Errors++
			res.Bytes += int(sc.Offset() - start)
			if sc.Done() {
				break
			}
			continue
		}
		n := int(sc.Offset() - start)
		res.Bytes += n
		fr := sc.Frame()
		if fr.Data {
			if dc == nil {
				dc = newDataCodec(dataCfg)
			}
			var dp DataPacket
			if dc.parse(fr.Payload, &dp) != nil {
				res.Errors++
			} else {
				res.Good += n
				res.Packets++
			}
			continue
		}
		if err := c.Parse(fr.Payload, fr.Support, &p); err != nil {
			res.Errors++
			continue
		}
		res.Good += n
		res.Packets++
		if p.Format == FormatSync {
			res.Syncs++
			if p.Subformat == SubSupport && cfg.Version == V2 {
				c.Options = OptionsFromBits(p.IOptions)
			}
		}
	}
	return res
}

// FramingGuess is a framing in which the start of a trace reads as E-Trace
// packets (SniffFramings).
type FramingGuess struct {
	// Config is the configuration given to SniffFramings with the
	// framing's fields set: Encap, SrcBits, SrcID, TypeField,
	// TimestampBytes and Data (the data trace's source IDs and packet
	// layout, nil for instruction trace alone).
	Config Config
	// Result is how well the start parses so.
	Result SniffResult
	// Sources are the source IDs of the frames (UTDD with a source ID
	// field: those that occur at least twice), in increasing order.
	Sources []uint32
}

// guessFloor is the least Score of a framing SniffFramings returns, and
// guessMargin how far below the best one it may be.
const (
	guessFloor  = 0.75
	guessMargin = 0.05
)

// SniffFramings parses prefix, the first bytes of a trace (SniffBytes are
// enough), in every framing rvtrace's encoders and the trace system write
// E-Trace in, and returns those in which it reads nearly as well as in the
// best one (and reads at all: a sync packet, three quarters of the bytes
// in packets that parse), in order of preference: the raw framing, then the
// UTDD encapsulation with a timestamp of 0 to 8 bytes, a source ID field
// of 0, 1 or 2 bytes, without and with the 2-bit type field, and for each
// the instruction trace alone before the data trace readings. base gives
// the rest of the configuration (version, parameters, modes); its framing
// fields are replaced.
//
// The source ID field's width (trTeSrcBits) is the narrowest that holds
// the IDs seen at least twice (every source sends a support and a sync
// packet: an ID seen once is a damaged field, which decoding reports): a
// wider field of the same bytes reads the same frames. With two sources or
// more, the data trace readings are the layouts of rvtrace run's data
// trace: one hart's instruction and data sources (either way round), or N
// harts' (hart h's instruction packets h, its data packets N + h, for each
// N the highest ID allows), with the data packet layout the doptions of
// the first support packet announce (unified or split protocol, address
// and value or one of them, compressed or not, CSR accesses), or every
// layout when the start has no support packet; with the
// type field, the type says which sources are data. SniffFramings never
// fails; bytes that are not E-Trace give no guess. Telling apart guesses
// that parse equally well needs the program (a trial decode: package
// protocol's ChooseFraming).
func SniffFramings(prefix []byte, base *Config) []FramingGuess {
	if len(prefix) > SniffBytes {
		prefix = prefix[:SniffBytes]
	}
	var out []FramingGuess
	add := func(prefix []byte, c Config, srcs []uint32) {
		r := Sniff(prefix, &c)
		if r.Syncs == 0 || r.Packets < 2 || r.Score() < guessFloor {
			return
		}
		out = append(out, FramingGuess{Config: c, Result: r, Sources: srcs})
	}
	raw := *base
	raw.Encap, raw.SrcBits, raw.SrcID, raw.TypeField, raw.TimestampBytes = EncapRaw, 0, 0, false, 0
	add(prefix, raw, nil)
	for ts := 0; ts <= 8; ts++ {
		u := *base
		u.Encap, u.SrcBits, u.SrcID, u.TypeField, u.TimestampBytes, u.Data = EncapUTDD, 0, 0, false, ts, nil
		add(prefix, u, nil)
		for k := 1; k <= 2; k++ {
			frequent, all := sourceFields(prefix, &u, k)
			for i, vals := range [][]uint32{frequent, all} {
				if len(vals) == 0 || i == 1 && slices.Equal(vals, frequent) {
					continue
				}
				guessSources(prefix, &u, k, vals, add)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	best := 0.0
	for _, g := range out {
		best = max(best, g.Result.Score())
	}
	keep := out[:0]
	for _, g := range out {
		if g.Result.Score() >= best-guessMargin {
			keep = append(keep, g)
		}
	}
	return keep
}

// sourceFields scans prefix framed as u (UTDD, no source ID field) says
// but with a source ID field of k whole bytes, and returns the values of
// that field seen in two frames or more (all), and those among them seen
// in one frame in 64 (frequent: not a damaged field's), in increasing
// order; nil when the frames do not read so (a framing error every tenth
// frame).
func sourceFields(prefix []byte, u *Config, k int) (frequent, all []uint32) {
	c := *u
	c.SrcBits = 8 * k
	sc := newSniffScanner(prefix, &c)
	seen := map[uint32]int{}
	frames, errs := 0, 0
	for {
		if sc.Scan() {
			frames++
			if len(seen) < 1024 {
				seen[sc.Frame().SrcID]++
			}
			continue
		}
		if _, ok := sc.Err().(*FramingError); !ok || sc.Done() {
			break
		}
		errs++
	}
	if frames < 2 || errs*10 > frames {
		return nil, nil
	}
	for v, n := range seen {
		if n >= 2 {
			all = append(all, v)
			if n*64 >= frames {
				frequent = append(frequent, v)
			}
		}
	}
	slices.Sort(all)
	slices.Sort(frequent)
	return frequent, all
}

// guessSources adds the readings of a source ID field of k bytes whose
// values are vals (sorted) to u's framing: the narrowest source ID that
// holds them, and a source ID below the 2-bit type field (2: instruction,
// 3: data) when the values have one.
func guessSources(prefix []byte, u *Config, k int, vals []uint32, add func([]byte, Config, []uint32)) {
	top := vals[len(vals)-1]
	c := *u
	c.SrcBits = max(bits.Len32(top), 8*(k-1)+1)
	guessData(prefix, &c, vals, nil, add)
	b := bits.Len32(top) - 2
	if b < 0 || (b+2+7)/8 != k {
		return
	}
	var ids []uint32
	var data []bool
	for _, v := range vals {
		t := v >> uint(b)
		if t != 2 && t != 3 {
			return
		}
		ids = append(ids, v&(1<<uint(b)-1))
		data = append(data, t == 3)
	}
	c.SrcBits, c.TypeField = b, true
	guessData(prefix, &c, ids, data, add)
}

// guessData adds the instruction trace reading of c's framing with the
// sources ids, and its data trace readings: data, when not nil, says
// which of ids are data sources (the type field).
func guessData(prefix []byte, c *Config, ids []uint32, data []bool, add func([]byte, Config, []uint32)) {
	srcs := slices.Clone(ids)
	slices.Sort(srcs)
	srcs = slices.Compact(srcs)
	if data == nil || !slices.Contains(data, true) {
		// (one decoder per source: Config.SrcID is not used)
		i := *c
		i.SrcID = 0
		add(prefix, i, srcs)
	}
	if len(srcs) < 2 {
		return
	}
	// isData tells whether the reading's data sources agree with the
	// type fields
	isData := func(d *DataConfig) bool {
		for j, id := range ids {
			if data != nil && data[j] != d.isDataSrc(id) {
				return false
			}
		}
		return true
	}
	// a reading: the instruction source of one hart and the data
	// trace's source IDs
	type reading struct {
		inst uint32
		data DataConfig
	}
	var readings []reading
	if len(srcs) == 2 {
		// one hart: instruction source and data source, either way
		readings = append(readings, reading{srcs[0], DataConfig{SrcID: srcs[1]}}, reading{srcs[1], DataConfig{SrcID: srcs[0]}})
	}
	// n harts: hart h's data packets n + h; n is at least half the
	// highest ID, more when the last harts made no access
	top := srcs[len(srcs)-1]
	for n := max(top/2+1, 2); n <= top && n <= top/2+16; n++ {
		readings = append(readings, reading{0, DataConfig{SrcID: n, Harts: int(n)}})
	}
	// the data packets' layouts: the one the support packet's doptions
	// announce, or every one when the start has none
	var layouts []DataConfig
	layout := func(fields DataFields, split, noCompress, csr bool) {
		dc := DataConfig{DataWidth: 64, DAddressWidth: c.Params.IAddressWidth, CSR: csr, CSRWidth: 64,
			Fields: fields, Split: split, NoCompress: noCompress}
		if split {
			dc.LRIDWidth = 3 // lrid_width_p: rvtrace run's
		}
		layouts = append(layouts, dc)
	}
	dopt, support := supportDOptions(prefix, c)
	switch {
	case support && dopt < 0:
		return // the trace says it has no data trace
	case support:
		fields := DataAddrValue
		switch dopt := uint8(dopt); {
		case dopt&doptNoValue != 0:
			fields = DataAddrOnly
		case dopt&doptNoAddr != 0:
			fields = DataValueOnly
		}
		layout(fields, dopt&doptSplit != 0, dopt&doptCompress == 0, dopt&doptCSR != 0)
	default:
		for _, split := range []bool{false, true} {
			for _, fields := range []DataFields{DataAddrValue, DataAddrOnly, DataValueOnly} {
				for _, noCompress := range []bool{false, true} {
					layout(fields, split, noCompress, fields != DataValueOnly)
				}
			}
		}
	}
	for _, r := range readings {
		d := *c
		d.SrcID = r.inst
		if !isData(&r.data) {
			continue
		}
		for _, l := range layouts {
			dc := l
			dc.SrcID, dc.Harts = r.data.SrcID, r.data.Harts
			d.Data = &dc
			add(prefix, d, srcs)
		}
	}
}

// supportDOptions returns the doptions of the first support packet of
// prefix framed as c says (without data trace: the data packets do not
// parse), or -1 when it says data trace is off (denable 0), and whether
// there is one.
func supportDOptions(prefix []byte, c *Config) (int, bool) {
	if c.Version != V2 {
		return 0, false
	}
	codec := NewCodec(c)
	sc := newSniffScanner(prefix, c)
	var p Packet
	for {
		if !sc.Scan() {
			if _, ok := sc.Err().(*FramingError); !ok || sc.Done() {
				return 0, false
			}
			continue
		}
		fr := sc.Frame()
		if codec.Parse(fr.Payload, fr.Support, &p) != nil || p.Format != FormatSync || p.Subformat != SubSupport {
			continue
		}
		if p.DEnable == 0 {
			return -1, true
		}
		return int(p.DOptions), true
	}
}
