package ntrace

import "bytes"

// SniffBytes is how much of a trace's start Sniff needs to judge it.
const SniffBytes = 16 << 10

// SniffResult says how well a prefix of bytes parses as N-Trace messages
// with a given wire configuration.
type SniffResult struct {
	// Bytes is the number of bytes examined (a message cut by the end of
	// the prefix is not counted).
	Bytes int
	// Good is the number of those bytes in well-formed messages of a TCODE
	// that N-Trace 1.0 defines whose fixed fields hold defined values, and
	// in idle bytes.
	Good int
	// Messages counts those messages, Syncs the sync messages among them.
	Messages, Syncs int
	// Errors counts malformed messages, reserved MSEO sequences, reserved
	// or vendor TCODEs and undefined SYNC values.
	Errors int
	// FirstSync is the address of the first sync message (F-ADDR << 1)
	// when Syncs > 0.
	FirstSync uint64
}

// Score returns the share of the examined bytes that parse as N-Trace,
// from 0 (none) to 1 (all).
func (r SniffResult) Score() float64 {
	if r.Bytes == 0 {
		return 0
	}
	return float64(r.Good) / float64(r.Bytes)
}

// Sniff parses prefix, the first bytes of a trace (SniffBytes are
// enough), as N-Trace messages with cfg and tells how well they parse.
// It reads nothing else and never fails: bytes that are not N-Trace give
// a low score. A real N-Trace capture scores close to 1; an E-Trace
// capture, a compressed file or text scores far lower, because a quarter
// of random bytes carry the reserved MSEO code.
func Sniff(prefix []byte, cfg WireConfig) SniffResult {
	var res SniffResult
	r := NewReader(bytes.NewReader(prefix), cfg)
	var m Message
	for {
		start := r.Offset()
		idles := r.Idles()
		err := r.Next(&m)
		end := r.Offset()
		if err != nil {
			if _, ok := err.(*FormatError); !ok {
				break // io.EOF
			}
			if end >= int64(len(prefix)) {
				break // cut by the end of the prefix
			}
			res.Errors++
			res.Bytes += int(end - start)
			res.Good += int(r.Idles() - idles)
			continue
		}
		res.Bytes += int(end - start)
		res.Good += int(r.Idles() - idles)
		if !m.TCode.Known() || m.TCode.IsSync() && syncNames[m.Get(FieldSYNC)] == "" {
			res.Errors++
			continue
		}
		res.Good += m.Size
		res.Messages++
		if m.TCode.IsSync() {
			if res.Syncs == 0 {
				res.FirstSync = m.Get(FieldFADDR) << 1
			}
			res.Syncs++
		}
	}
	return res
}
