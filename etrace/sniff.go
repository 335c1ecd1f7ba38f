package etrace

import "bytes"

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

// Sniff parses prefix, the first bytes of a trace (SniffBytes are
// enough), as packets framed as cfg says, and tells how well they parse.
// It reads nothing else and never fails: bytes that are not E-Trace give
// a low score. A real capture scores close to 1; an N-Trace capture, a
// compressed file or text scores lower, since most of their bytes are
// not a valid frame header followed by a packet that parses.
func Sniff(prefix []byte, cfg *Config) SniffResult {
	var res SniffResult
	c := NewCodec(cfg)
	sc := NewScanner(bytes.NewReader(prefix), cfg)
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
