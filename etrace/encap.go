package etrace

import (
	"errors"
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
	Data      bool   // a data trace packet (Config.Data set)
}

// FramingError is an error in the framing of a byte stream. A Scanner can
// go on after one: it resumes with the byte after the bad header.
type FramingError struct {
	Offset int64 // byte offset of the framing header
	Msg    string
}

func (e *FramingError) Error() string { return fmt.Sprintf("byte %d: %s", e.Offset, e.Msg) }

// scanBufSize is the size of a Scanner's buffer; a frame is at most 1 +
// 5 + 8 + 31 bytes (header, source ID and type, timestamp, payload).
const scanBufSize = 32 << 10

// maxFrame bounds the bytes of one frame.
const maxFrame = 64

// Scanner splits a framed byte stream, read from an io.Reader through a
// fixed-size buffer, into packets. It never holds more than its buffer of
// the stream, and allocates nothing per packet.
type Scanner struct {
	cfg    *Config
	r      io.Reader
	buf    []byte
	lo, hi int   // unread bytes: buf[lo:hi]
	base   int64 // stream offset of buf[0]
	eof    bool  // r returned io.EOF
	rerr   error // r returned another error
	fr     Frame
	err    error
	raw    bool // cfg.Encap is EncapRaw
	// pause, when not 0: Scan stops with errPaused instead of skipping
	// a UTDD null packet at or after this offset, so that parallel.go's
	// splitter can cut a long run of them
	pause int64
}

// errPaused is the error of a Scan stopped at Scanner.pause.
var errPaused = errors.New("etrace: scanner paused")

// NewScanner returns a scanner reading the byte stream from r, framed as
// cfg says.
func NewScanner(r io.Reader, cfg *Config) *Scanner {
	return &Scanner{cfg: cfg, r: r, buf: make([]byte, scanBufSize), raw: cfg.Encap == EncapRaw}
}

// Offset returns the stream offset of the next unread byte (after the
// last frame returned).
func (s *Scanner) Offset() int64 { return s.base + int64(s.lo) }

// avail reports whether n (at most maxFrame) bytes can be read, reading
// more as needed.
func (s *Scanner) avail(n int) bool {
	for empty := 0; s.hi-s.lo < n; {
		if s.eof || s.rerr != nil {
			return false
		}
		if len(s.buf)-s.hi < maxFrame {
			// move the unread tail to the front
			k := copy(s.buf, s.buf[s.lo:s.hi])
			s.base += int64(s.lo)
			s.lo, s.hi = 0, k
		}
		m, err := s.r.Read(s.buf[s.hi:])
		if m < 0 || m > len(s.buf)-s.hi {
			m, err = 0, fmt.Errorf("etrace: reader returned %d bytes", m)
		}
		s.hi += m
		switch {
		case err == io.EOF:
			s.eof = true
		case err != nil:
			s.rerr = err
		case m == 0:
			if empty++; empty >= 100 {
				s.rerr = io.ErrNoProgress
			}
		}
	}
	return true
}

// skipAll consumes what is left of the stream.
func (s *Scanner) skipAll() {
	s.lo = s.hi
	for s.avail(1) {
		s.lo = s.hi
	}
}

func (s *Scanner) frameErr(start int64, format string, args ...any) bool {
	s.err = &FramingError{Offset: start, Msg: fmt.Sprintf(format, args...)}
	return false
}

// Scan advances to the next packet; it returns false at the end of the
// stream, on a framing error (a *FramingError, see Err) or on a read
// error. UTDD null packets (a header with length 0) are skipped; a UTDD
// packet with a source ID but no payload is a framing error (no encoder
// makes one: a damaged length byte does). After a framing error, Scan resumes with the next byte, so a
// caller may continue to resynchronise while Done reports false.
func (s *Scanner) Scan() bool {
	if s.err != nil {
		s.err = nil
	}
	if s.raw && s.hi-s.lo > maxFrame {
		// the common case, whole in the buffer: a te_inst or data
		// packet in the raw framing
		h := s.buf[s.lo]
		n, t := int(h&0x1f), h>>5
		if n != 0 && (t == msgTeInst || t == msgData) {
			// field by field: a struct literal is built on the
			// stack and copied in wide loads that wait for its
			// narrow stores (a store-forwarding stall)
			f := &s.fr
			f.Offset = s.base + int64(s.lo)
			f.Payload = s.buf[s.lo+1 : s.lo+1+n]
			f.Support, f.SrcID, f.Timestamp = false, 0, 0
			f.MsgType, f.Data = t, t == msgData
			s.lo += 1 + n
			return true
		}
	}
	for s.avail(1) {
		start := s.Offset()
		h := s.buf[s.lo]
		s.lo++
		s.fr = Frame{Offset: start}
		n := int(h & 0x1f)
		switch s.cfg.Encap {
		case EncapUTDD:
			if n == 0 {
				if s.pause > 0 && start >= s.pause {
					s.lo--
					s.err = errPaused
					return false
				}
				continue // null.idle / null.align
			}
			extra := s.cfg.srcBytes()
			ts := s.cfg.TimestampBytes
			if h&0x80 != 0 && ts == 0 {
				return s.frameErr(start, "UTDD header %#02x has extend set but no timestamp is configured", h)
			}
			if n < extra {
				// a damaged length: go on with the next byte
				return s.frameErr(start, "UTDD packet of length %d shorter than its %d-byte source ID", n, extra)
			}
			if h&0x80 == 0 && ts > 0 {
				// The encoder timestamps every frame of a trace with
				// timestamps (Config.TimestampBytes). Read without
				// it, the frame would take its timestamp bytes for
				// the payload's first bytes and leave the payload's
				// last ones to be read as headers (null packets when
				// they are zero): a damaged extend bit would change a
				// packet without a word. Its length is likely intact:
				// go on after the frame as it would be with its
				// timestamp.
				if s.avail(n + ts) {
					s.lo += n + ts
				}
				return s.frameErr(start, "UTDD header %#02x has extend clear: every frame of a trace with a %d-byte timestamp carries one", h, ts)
			}
			if !s.avail(n + ts) {
				s.skipAll()
				return s.frameErr(start, "UTDD packet of length %d truncated", n)
			}
			var v uint64
			for i := 0; i < extra; i++ {
				v |= uint64(s.buf[s.lo+i]) << (8 * uint(i))
			}
			used := s.cfg.SrcBits
			if s.cfg.TypeField {
				used += 2
			}
			if v>>uint(used) != 0 {
				// the encoder leaves the bits past the source ID and
				// type at zero: a damaged field
				s.lo += n + ts
				return s.frameErr(start, "UTDD source ID field %#x has bits set beyond its %d bits of source ID and type", v, used)
			}
			s.fr.SrcID = uint32(v & mask(s.cfg.SrcBits))
			s.fr.Data = s.cfg.Data != nil && s.cfg.Data.isDataSrc(s.fr.SrcID)
			if s.cfg.TypeField {
				// the type says what the source ID does: instruction
				// trace (2), or data trace (3) from the data source
				want := uint64(msgTeInst)
				if s.fr.Data {
					want = msgData
				}
				if typ := v >> uint(s.cfg.SrcBits) & 3; typ != want {
					s.lo += n + ts
					return s.frameErr(start, "UTDD type field %d of source %d (want %d)", typ, s.fr.SrcID, want)
				}
			}
			s.lo += extra
			for i := 0; i < ts; i++ {
				s.fr.Timestamp |= uint64(s.buf[s.lo+i]) << (8 * uint(i))
			}
			s.lo += ts
			n -= extra
			s.fr.Support = (h>>5)&3 == 1 && s.cfg.Version == V026
			if n == 0 {
				// Only null packets (length 0) carry no payload: an
				// E-Trace packet is never empty, and a length byte
				// damaged to cover just the source ID would otherwise
				// lose a frame without a word.
				return s.frameErr(start, "UTDD packet of source %d has a source ID but no payload", s.fr.SrcID)
			}
		default:
			if h&0x80 != 0 {
				return s.frameErr(start, "header %#02x has bit 7 set", h)
			}
			s.fr.MsgType = (h >> 5) & 3
			if n == 0 {
				return s.frameErr(start, "empty packet")
			}
			if !s.avail(n) {
				left := s.hi - s.lo
				s.skipAll()
				return s.frameErr(start, "packet of %d bytes truncated (%d left)", n, left)
			}
			switch s.fr.MsgType {
			case msgTeInst:
			case msgData:
				// data trace (even when not configured: the decoder
				// says it skips them)
				s.fr.Data = true
			case msgSupport026:
				if s.cfg.Version != V026 {
					s.lo += n
					return s.frameErr(start, "message type 0 (0.026 te_support) in a 2.0 trace")
				}
				s.fr.Support = true
			default:
				s.lo += n
				return s.frameErr(start, "message type %d is not instruction trace", s.fr.MsgType)
			}
		}
		s.fr.Payload = s.buf[s.lo : s.lo+n]
		s.lo += n
		return true
	}
	s.err = s.rerr
	return false
}

// Frame returns the packet found by the last successful Scan.
func (s *Scanner) Frame() *Frame { return &s.fr }

// Err returns the error that stopped the last Scan, if any: a
// *FramingError, or the reader's error (other than io.EOF).
func (s *Scanner) Err() error { return s.err }

// Done reports whether the whole stream has been consumed (or reading it
// failed).
func (s *Scanner) Done() bool { return s.lo >= s.hi && (s.eof || s.rerr != nil) }

// Writer frames and writes packets.
type Writer struct {
	cfg   Config
	codec *Codec
	w     io.Writer
	buf   []byte
	Bytes int64 // bytes written
	err   error
	// syncs counts the format 3 subformat 0 and 1 packets written (data
	// trace compression restarts after each).
	syncs uint64
	// perPacket: w takes each frame as it is made (FrameWriter)
	perPacket bool
}

// FrameWriter is an io.Writer that takes each frame as soon as it is
// made when FramesAsMade reports true: a Funnel, or a writer passing the
// bytes on to one (such as a trace encoder component's output).
type FrameWriter interface {
	io.Writer
	FramesAsMade() bool
}

// NewWriter returns a writer of packets framed as cfg says. It buffers
// up to 4 KiB of frames, unless w is a FrameWriter that takes frames as
// made (a Funnel): then each frame is written as soon as it is made.
func NewWriter(w io.Writer, cfg *Config) *Writer {
	fw, ok := w.(FrameWriter)
	return &Writer{cfg: *cfg, codec: NewCodec(cfg), w: w, buf: make([]byte, 0, 4096), perPacket: ok && fw.FramesAsMade()}
}

// Write encodes and frames p; ts is the UTDD timestamp (ignored without
// one).
func (w *Writer) Write(p *Packet, ts uint64) error {
	if w.err != nil {
		return w.err
	}
	if p.Format == FormatSync && (p.Subformat == SubStart || p.Subformat == SubTrap) {
		w.syncs++
	}
	var tmp [64]byte
	pl, err := w.codec.Append(tmp[:0], p)
	if err != nil {
		return err
	}
	support := w.cfg.Version == V026 && p.Format == FormatSync && p.Subformat == SubSupport
	w.buf = w.cfg.frameHeader(w.buf, len(pl), support, ts)
	w.buf = append(w.buf, pl...)
	if len(w.buf) >= 4096-64 || w.perPacket {
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

// overlong reports whether payload pl ends with a byte that sign
// extension restores (its last byte all 0s or all 1s, as the top bit of
// the byte before): an encoder drops every such byte, so a packet that
// has one is malformed.
func overlong(pl []byte) bool {
	n := len(pl)
	return n >= 2 && (pl[n-1] == 0 && pl[n-2] < 0x80 || pl[n-1] == 0xff && pl[n-2] >= 0x80)
}
