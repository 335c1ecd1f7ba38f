package etrace

import (
	"fmt"
	"io"
)

// Message types in the raw framing's header byte (bits 6:5), as the
// reference flow numbers them.
const (
	msgSupport026 = 0 // 0.026 te_support (rvtrace's choice; the draft has no framing)
	msgTeInst     = 2 // te_inst
)

// frameHeader returns the framing bytes before a payload of n bytes.
func (c *Config) frameHeader(dst []byte, n int, support026 bool, ts uint64) []byte {
	switch c.Encap {
	case EncapUTDD:
		extra := c.srcBytes()
		hdr := byte(n + extra)
		if support026 {
			hdr |= 1 << 5 // flow 1 carries the 0.026 te_support message
		}
		if c.TimestampBytes > 0 {
			hdr |= 0x80
		}
		dst = append(dst, hdr)
		if extra > 0 {
			v := uint64(c.SrcID) & mask(c.SrcBits)
			if c.TypeField {
				v |= 2 << uint(c.SrcBits) // instruction trace
			}
			for i := 0; i < extra; i++ {
				dst = append(dst, byte(v>>(8*uint(i))))
			}
		}
		for i := 0; i < c.TimestampBytes; i++ {
			dst = append(dst, byte(ts>>(8*uint(i))))
		}
		return dst
	}
	t := byte(msgTeInst)
	if support026 {
		t = msgSupport026
	}
	return append(dst, byte(n)|t<<5)
}

// srcBytes is the size of the UTDD source ID (and type) field.
func (c *Config) srcBytes() int {
	n := c.SrcBits
	if c.TypeField {
		n += 2
	}
	return (n + 7) / 8
}

// Frame is one packet found in a byte stream by a Scanner.
type Frame struct {
	Offset    int64  // byte offset of the framing header
	Payload   []byte // the packet payload (valid until the next Scan)
	Support   bool   // 0.026 te_support message
	SrcID     uint32 // UTDD source ID
	Timestamp uint64 // UTDD timestamp
	MsgType   uint8  // raw framing message type
}

// Scanner splits a framed byte stream into packets.
type Scanner struct {
	cfg  *Config
	data []byte
	off  int
	fr   Frame
	err  error
}

// NewScanner returns a scanner over data framed as cfg says.
func NewScanner(data []byte, cfg *Config) *Scanner { return &Scanner{cfg: cfg, data: data} }

// Scan advances to the next packet; it returns false at the end of the
// data or on a framing error (see Err). After an error, Scan resumes with
// the next byte, so a caller may continue to resynchronise.
func (s *Scanner) Scan() bool {
	s.err = nil
	for s.off < len(s.data) {
		start := s.off
		h := s.data[s.off]
		s.off++
		s.fr = Frame{Offset: int64(start)}
		n := int(h & 0x1f)
		switch s.cfg.Encap {
		case EncapUTDD:
			if n == 0 {
				continue // null.idle / null.align
			}
			extra := s.cfg.srcBytes()
			ts := 0
			if h&0x80 != 0 {
				ts = s.cfg.TimestampBytes
				if ts == 0 {
					s.err = fmt.Errorf("byte %d: UTDD header %#02x has extend set but no timestamp is configured", start, h)
					return false
				}
			}
			if n < extra || s.off+n+ts > len(s.data) {
				s.err = fmt.Errorf("byte %d: UTDD packet of length %d truncated or shorter than its source ID", start, n)
				s.off = len(s.data)
				return false
			}
			var v uint64
			for i := 0; i < extra; i++ {
				v |= uint64(s.data[s.off+i]) << (8 * uint(i))
			}
			s.fr.SrcID = uint32(v & mask(s.cfg.SrcBits))
			s.off += extra
			for i := 0; i < ts; i++ {
				s.fr.Timestamp |= uint64(s.data[s.off+i]) << (8 * uint(i))
			}
			s.off += ts
			n -= extra
			s.fr.Support = (h>>5)&3 == 1 && s.cfg.Version == V026
			if n == 0 {
				continue
			}
		default:
			if h&0x80 != 0 {
				s.err = fmt.Errorf("byte %d: header %#02x has bit 7 set", start, h)
				return false
			}
			s.fr.MsgType = (h >> 5) & 3
			if n == 0 {
				s.err = fmt.Errorf("byte %d: empty packet", start)
				return false
			}
			if s.off+n > len(s.data) {
				s.err = fmt.Errorf("byte %d: packet of %d bytes truncated (%d left)", start, n, len(s.data)-s.off)
				s.off = len(s.data)
				return false
			}
			switch s.fr.MsgType {
			case msgTeInst:
			case msgSupport026:
				if s.cfg.Version != V026 {
					s.err = fmt.Errorf("byte %d: message type 0 (0.026 te_support) in a 2.0 trace", start)
					s.off += n
					return false
				}
				s.fr.Support = true
			default:
				s.err = fmt.Errorf("byte %d: message type %d is not instruction trace", start, s.fr.MsgType)
				s.off += n
				return false
			}
		}
		s.fr.Payload = s.data[s.off : s.off+n]
		s.off += n
		return true
	}
	return false
}

// Frame returns the packet found by the last successful Scan.
func (s *Scanner) Frame() *Frame { return &s.fr }

// Err returns the framing error that stopped the last Scan, if any.
func (s *Scanner) Err() error { return s.err }

// Done reports whether all data has been consumed.
func (s *Scanner) Done() bool { return s.off >= len(s.data) }

// Writer frames and writes packets.
type Writer struct {
	cfg   Config
	codec *Codec
	w     io.Writer
	buf   []byte
	Bytes int64 // bytes written
	err   error
}

// NewWriter returns a writer of packets framed as cfg says.
func NewWriter(w io.Writer, cfg *Config) *Writer {
	return &Writer{cfg: *cfg, codec: NewCodec(cfg), w: w, buf: make([]byte, 0, 4096)}
}

// Write encodes and frames p; ts is the UTDD timestamp (ignored without
// one).
func (w *Writer) Write(p *Packet, ts uint64) error {
	if w.err != nil {
		return w.err
	}
	var tmp [64]byte
	pl, err := w.codec.Append(tmp[:0], p)
	if err != nil {
		return err
	}
	support := w.cfg.Version == V026 && p.Format == FormatSync && p.Subformat == SubSupport
	w.buf = w.cfg.frameHeader(w.buf, len(pl), support, ts)
	w.buf = append(w.buf, pl...)
	if len(w.buf) >= 4096-64 {
		return w.Flush()
	}
	return nil
}

// Flush writes what is buffered.
func (w *Writer) Flush() error {
	if w.err != nil || len(w.buf) == 0 {
		return w.err
	}
	n, err := w.w.Write(w.buf)
	w.Bytes += int64(n)
	w.buf = w.buf[:0]
	w.err = err
	return err
}
