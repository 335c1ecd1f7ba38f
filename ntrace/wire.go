package ntrace

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
)

// MSEO codes: the two least significant bits of every byte.
const (
	mseoNormal   = 0 // start of message, or middle of a field
	mseoEndField = 1 // last byte of a variable-length field
	mseoReserved = 2 // reserved
	mseoEndMsg   = 3 // last byte of a message (0xFF alone: idle)
	idleByte     = 0xFF
)

// MaxMessageBytes bounds the length of one message the Reader accepts.
// Standard messages are at most 38 bytes; vendor messages may be longer.
// Anything longer than this is treated as corruption (a trace of all
// zeros would otherwise be one endless message).
const MaxMessageBytes = 256

// maxVarFieldBits is the longest value a standard variable-length field can
// hold (the 64-bit TSTAMP).
const maxVarFieldBits = 64

// WireConfig is what both directions of the wire need to know beyond the
// bytes themselves: the width of the SRC field (trTeSrcBits; 0 when the
// field is not sent) and whether address fields are sign-extended
// (trTeInstExtendAddrMSB) for an XLEN-bit hart.
type WireConfig struct {
	SrcBits       int
	ExtendAddrMSB bool
	XLEN          int // 32 or 64; 0 means 64
}

func (c *WireConfig) addrBits() int {
	if c.XLEN == 32 {
		return 31
	}
	return 63
}

// FormatError reports bytes that do not form a valid message. Offset is
// the byte offset where the problem was seen.
type FormatError struct {
	Offset int64
	Msg    string
	// EOF is set when the stream ends inside the message (a trace cut
	// short), not on bytes that are wrong.
	EOF bool
}

func (e *FormatError) Error() string { return fmt.Sprintf("byte %d: %s", e.Offset, e.Msg) }

// ---------------------------------------------------------------- writer

// encoder state for packing MDO bits into bytes.
type packer struct {
	out []byte
	cur uint8 // MDO bits collected for the current byte
	nb  uint  // number of bits in cur (0..5)
}

func (p *packer) put(v uint64, n uint) {
	for n > 0 {
		k := 6 - p.nb
		if k > n {
			k = n
		}
		p.cur |= uint8(v&(1<<k-1)) << p.nb
		p.nb += k
		v >>= k
		n -= k
		if p.nb == 6 {
			p.out = append(p.out, p.cur<<2|mseoNormal)
			p.cur, p.nb = 0, 0
		}
	}
}

// endField closes a variable-length field: pad the current byte with zeros
// and mark the field's last byte with code.
func (p *packer) endField(code uint8) {
	if p.nb > 0 {
		p.out = append(p.out, p.cur<<2|code)
		p.cur, p.nb = 0, 0
		return
	}
	p.out[len(p.out)-1] = p.out[len(p.out)-1]&^3 | code
}

// varWidth returns how many bits a variable-length field holding v takes
// when it starts with `free` bits left in the current byte: the smallest
// width free+6k (k >= 0, at least 1 bit in all) that holds v. For address
// fields under ExtendAddrMSB the width must also make the top transmitted
// bit a correct extension of the value (the decoder copies it up to the
// top address bit).
func varWidth(v uint64, free uint, extend bool, addrBits int) uint {
	if free == 0 {
		free = 6
	}
	w := free
	if !extend {
		for n := uint(bits.Len64(v)); w < n; w += 6 {
		}
		return w
	}
	a := uint(addrBits)
	for ; w < a; w += 6 {
		top := v >> (w - 1) // the transmitted top bit and everything above it
		if top == 0 || top == 1<<(a-w+1)-1 {
			return w
		}
	}
	return w
}

// AppendMessage encodes m after the bytes in dst and returns the extended
// slice. Fields are written in the order of the message table; SRC is
// written when cfg.SrcBits > 0 and TSTAMP when m has it. Messages with an
// unknown TCODE are written with their Raw payload.
func AppendMessage(dst []byte, m *Message, cfg *WireConfig) ([]byte, error) {
	p := packer{out: dst}
	if m.TCode > 63 {
		return dst, fmt.Errorf("TCODE %d does not fit in 6 bits", m.TCode)
	}
	p.put(uint64(m.TCode), 6)
	lay := layoutOf(m.TCode)
	if lay == nil {
		// Vendor or reserved message: the payload bytes as they are
		// (including any SRC field).
		for _, b := range m.Raw {
			p.put(uint64(b), 6)
		}
		p.out[len(p.out)-1] |= mseoEndMsg
		return p.out, nil
	}
	if cfg.SrcBits > 0 {
		p.put(m.V[FieldSRC], uint(cfg.SrcBits))
	}
	extend := cfg.ExtendAddrMSB
	ab := cfg.addrBits()
	for _, fs := range lay.Fields {
		if fs.When != nil && !fs.When(m) {
			continue
		}
		v := m.V[fs.F]
		if fs.Bits > 0 {
			if v>>fs.Bits != 0 {
				return dst, fmt.Errorf("%s: %s=%#x does not fit in %d bits", m.TCode, fs.F, v, fs.Bits)
			}
			p.put(v, uint(fs.Bits))
			continue
		}
		w := varWidth(v, 6-p.nb, extend && fs.F.IsAddress(), ab)
		p.put(v, w)
		p.endField(mseoEndField)
	}
	if m.Present(FieldTSTAMP) {
		v := m.V[FieldTSTAMP]
		p.put(v, varWidth(v, 6-p.nb, false, 0))
		p.endField(mseoEndField)
	}
	if p.nb > 0 {
		p.endField(mseoEndField)
	}
	p.out[len(p.out)-1] |= mseoEndMsg
	return p.out, nil
}

func layoutOf(t TCode) *layout {
	if int(t) < len(layouts) {
		return layouts[t]
	}
	return nil
}

// Writer writes messages to an io.Writer, buffering internally. It never
// allocates per message.
type Writer struct {
	cfg   WireConfig
	w     io.Writer
	buf   []byte
	n     int64 // bytes written so far (including buffered)
	count int64 // messages written
	err   error
}

// NewWriter returns a Writer that encodes messages with cfg onto w.
func NewWriter(w io.Writer, cfg WireConfig) *Writer {
	return &Writer{cfg: cfg, w: w, buf: make([]byte, 0, 64<<10)}
}

// Write encodes m and queues it for output. It sets m.Offset and m.Size.
func (w *Writer) Write(m *Message) error {
	if w.err != nil {
		return w.err
	}
	before := len(w.buf)
	var err error
	w.buf, err = AppendMessage(w.buf, m, &w.cfg)
	if err != nil {
		return err
	}
	m.Offset = w.n
	m.Size = len(w.buf) - before
	w.n += int64(m.Size)
	w.count++
	if len(w.buf) >= cap(w.buf)-64 {
		return w.Flush()
	}
	return nil
}

// WriteIdle queues n idle bytes (0xFF).
func (w *Writer) WriteIdle(n int) error {
	for i := 0; i < n; i++ {
		w.buf = append(w.buf, idleByte)
	}
	w.n += int64(n)
	if len(w.buf) >= cap(w.buf)-64 {
		return w.Flush()
	}
	return nil
}

// Flush writes buffered bytes to the underlying writer.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) > 0 {
		_, w.err = w.w.Write(w.buf)
		w.buf = w.buf[:0]
	}
	return w.err
}

// Bytes returns the number of bytes written so far; Messages the number of
// messages.
func (w *Writer) Bytes() int64    { return w.n }
func (w *Writer) Messages() int64 { return w.count }

// ---------------------------------------------------------------- reader

// Reader reads messages from an io.Reader. After a FormatError the reader
// has skipped to the next possible message start, so the caller can go on
// calling Next.
type Reader struct {
	cfg     WireConfig
	r       io.Reader
	buf     []byte
	pos     int   // next unread byte in buf
	end     int   // end of valid data in buf
	base    int64 // stream offset of buf[0]
	eof     bool
	rerr    error
	idles   int64
	resync  bool // skipping to the next end of message after an error
	payload [MaxMessageBytes]byte
	keep    bool   // keep a copy of each message's bytes in raw
	raw     []byte // bytes of the last message (when keep)
	// frame only finds where messages start and end, with their TCODE:
	// their fields are not parsed (parallel.go's splitter)
	frame bool
	// pause, when not 0: Next returns errPaused instead of skipping a
	// byte (idle, or after an error) at or after this offset, so that
	// parallel.go's splitter can cut a long run of them
	pause int64
	// before is the number of idle bytes read since the last message
	// before this reader's first byte (a reader going on with the bytes
	// of another: parallel.go)
	before int64
}

// errPaused is returned by Next at Reader.pause.
var errPaused = errors.New("ntrace: reader paused")

// NewReader returns a Reader decoding r with cfg.
func NewReader(r io.Reader, cfg WireConfig) *Reader {
	return &Reader{cfg: cfg, r: r, buf: make([]byte, 32<<10)}
}

// Idles returns the number of idle bytes skipped so far.
func (r *Reader) Idles() int64 { return r.idles }

// Offset returns the stream offset of the next unread byte.
func (r *Reader) Offset() int64 { return r.base + int64(r.pos) }

func (r *Reader) fill() bool {
	if r.eof {
		return false
	}
	if r.pos > 0 {
		n := copy(r.buf, r.buf[r.pos:r.end])
		r.base += int64(r.pos)
		r.pos, r.end = 0, n
	}
	for r.end < len(r.buf) {
		n, err := r.r.Read(r.buf[r.end:])
		r.end += n
		if err != nil {
			r.eof = true
			if err != io.EOF {
				r.rerr = err
			}
			break
		}
		if n == 0 {
			continue
		}
		break
	}
	return r.end > r.pos
}

func (r *Reader) byteAt() (byte, bool) {
	if r.pos >= r.end && !r.fill() {
		return 0, false
	}
	return r.buf[r.pos], true
}

// Next reads the next message into m. It returns io.EOF at the end of the
// stream, a *FormatError for bytes that are not a valid message (and has
// then skipped past them), or the underlying reader's error.
func (r *Reader) Next(m *Message) error {
	// Skip idles, and after an error everything up to an end of message.
	for {
		b, ok := r.byteAt()
		if !ok {
			if r.rerr != nil {
				return r.rerr
			}
			return io.EOF
		}
		if r.pause > 0 && (b == idleByte || r.resync) && r.Offset() >= r.pause {
			return errPaused
		}
		if b == idleByte {
			r.pos++
			if !r.resync {
				r.idles++
			}
			r.resync = false
			continue
		}
		if r.resync {
			r.pos++
			if b&3 == mseoEndMsg {
				r.resync = false
			}
			continue
		}
		switch b & 3 {
		case mseoNormal:
			return r.message(m)
		case mseoEndMsg:
			off := r.Offset()
			r.pos++
			return &FormatError{Offset: off, Msg: fmt.Sprintf("byte %#02x ends a message that never started", b)}
		default:
			off := r.Offset()
			r.pos++
			r.resync = true
			return &FormatError{Offset: off, Msg: fmt.Sprintf("byte %#02x: MSEO=%02b outside a message (reserved sequence)", b, b&3)}
		}
	}
}

// message reads one message whose first byte is at r.pos.
func (r *Reader) message(m *Message) error {
	start := r.Offset()
	// Fast path: the whole message is in the buffer; parse it in place.
	buf := r.buf[r.pos:r.end]
	if len(buf) > MaxMessageBytes {
		buf = buf[:MaxMessageBytes]
	}
	for i, b := range buf {
		if b&3 == mseoReserved {
			break // the slow path reports it
		}
		if b&3 == mseoEndMsg {
			msg := buf[:i+1]
			r.pos += i + 1
			if r.keep {
				r.raw = append(r.raw[:0], msg...)
			}
			if r.frame {
				m.Reset(TCode(msg[0] >> 2))
				m.Offset, m.Size = start, i+1
				return nil
			}
			err := parseMessage(msg, m, &r.cfg, nil)
			m.Offset = start
			m.Size = i + 1
			if err != nil {
				return &FormatError{Offset: start, Msg: err.Error()}
			}
			return nil
		}
	}
	// Collect the bytes up to the end of message.
	n := 0
	for {
		b, ok := r.byteAt()
		if !ok {
			if r.rerr != nil {
				return r.rerr
			}
			return &FormatError{Offset: start, Msg: fmt.Sprintf("truncated message: stream ends after %d bytes without end of message", n), EOF: true}
		}
		if b&3 == mseoReserved {
			off := r.Offset()
			r.pos++
			r.resync = true
			return &FormatError{Offset: off, Msg: fmt.Sprintf("reserved MSEO=10 in byte %#02x of message starting at byte %d", b, start)}
		}
		if n == MaxMessageBytes {
			r.resync = true
			return &FormatError{Offset: start, Msg: fmt.Sprintf("message longer than %d bytes (corrupt trace?)", MaxMessageBytes)}
		}
		r.payload[n] = b
		n++
		r.pos++
		if b&3 == mseoEndMsg {
			break
		}
	}
	if r.keep {
		r.raw = append(r.raw[:0], r.payload[:n]...)
	}
	if r.frame {
		m.Reset(TCode(r.payload[0] >> 2))
		m.Offset, m.Size = start, n
		return nil
	}
	err := parseMessage(r.payload[:n], m, &r.cfg, nil)
	m.Offset = start
	m.Size = n
	if err != nil {
		return &FormatError{Offset: start, Msg: err.Error()}
	}
	return nil
}

// errField is a parse error detail.
var errTruncated = errors.New("truncated")

// fieldReader walks the MDO bits of one message's bytes.
type fieldReader struct {
	b  []byte
	bi int  // current byte
	bo uint // bits of b[bi] already consumed (0..6)
}

func (fr *fieldReader) done() bool { return fr.bi >= len(fr.b) }

// endByte is the index of the byte holding the last bit read.
func (fr *fieldReader) endByte() int {
	if fr.bo == 0 {
		return fr.bi - 1
	}
	return fr.bi
}

// fixed reads an n-bit fixed-length field.
func (fr *fieldReader) fixed(n uint) (uint64, error) {
	var v uint64
	var got uint
	for got < n {
		if fr.bi >= len(fr.b) {
			return 0, errTruncated
		}
		b := fr.b[fr.bi]
		k := 6 - fr.bo
		if k > n-got {
			k = n - got
		}
		v |= uint64(b>>(2+fr.bo)&(1<<k-1)) << got
		got += k
		fr.bo += k
		if fr.bo == 6 {
			if b&3 != mseoNormal && got < n {
				return 0, errors.New("fixed-length field crosses an end of field")
			}
			fr.bi++
			fr.bo = 0
		}
	}
	return v, nil
}

// variable reads a variable-length field: the rest of the current byte and
// every following byte up to one whose MSEO ends the field. It returns the
// value, its width in bits, and whether the message ends with it.
func (fr *fieldReader) variable() (v uint64, width uint, last bool, err error) {
	if fr.bi >= len(fr.b) {
		return 0, 0, false, errTruncated
	}
	if fr.bo > 0 && fr.b[fr.bi]&3 != mseoNormal && fr.bo == 6 {
		return 0, 0, false, errors.New("empty variable-length field")
	}
	for {
		if fr.bi >= len(fr.b) {
			return 0, 0, false, errTruncated
		}
		b := fr.b[fr.bi]
		k := 6 - fr.bo
		chunk := uint64(b>>(2+fr.bo)) & (1<<k - 1)
		if width < maxVarFieldBits {
			v |= chunk << width
			if width+k > maxVarFieldBits && chunk>>(maxVarFieldBits-width) != 0 {
				return 0, 0, false, fmt.Errorf("variable-length field longer than %d bits", maxVarFieldBits)
			}
		} else if chunk != 0 {
			return 0, 0, false, fmt.Errorf("variable-length field longer than %d bits", maxVarFieldBits)
		}
		width += k
		fr.bi++
		fr.bo = 0
		switch b & 3 {
		case mseoEndField:
			return v, width, false, nil
		case mseoEndMsg:
			return v, width, true, nil
		}
	}
}

// fieldHook, when given to parseMessage, is told of every field read: its
// width in bits and the index of the byte it ends in (for the byte dump).
type fieldHook func(f Field, width uint, endByte int)

// fieldTCODE is used with fieldHook for the TCODE field.
const fieldTCODE = NumFields

// parseMessage decodes the bytes of one complete message (first byte
// MSEO=00, last MSEO=11) into m using the layout table.
func parseMessage(b []byte, m *Message, cfg *WireConfig, hook fieldHook) error {
	fr := fieldReader{b: b}
	tc, _ := fr.fixed(6)
	m.Reset(TCode(tc))
	if hook != nil {
		hook(fieldTCODE, 6, 0)
	}
	if cfg.SrcBits > 0 {
		v, err := fr.fixed(uint(cfg.SrcBits))
		if err != nil {
			return fmt.Errorf("%s: SRC: %v", m.TCode, err)
		}
		m.Set(FieldSRC, v)
		if hook != nil {
			hook(FieldSRC, uint(cfg.SrcBits), fr.endByte())
		}
	}
	lay := layoutOf(m.TCode)
	if lay == nil {
		// Vendor or reserved: keep the MDO payload for the dump.
		for i := 1; i < len(b); i++ {
			b[i] >>= 2
		}
		m.Raw = b[1:]
		return nil
	}
	last := false
	for _, fs := range lay.Fields {
		if fs.When != nil && !fs.When(m) {
			continue
		}
		if last || fr.done() {
			return fmt.Errorf("%s: truncated message: missing %s", m.TCode, fs.F)
		}
		if fs.Bits > 0 {
			v, err := fr.fixed(uint(fs.Bits))
			if err != nil {
				return fmt.Errorf("%s: %s: %v", m.TCode, fs.F, err)
			}
			m.Set(fs.F, v)
			if hook != nil {
				hook(fs.F, uint(fs.Bits), fr.endByte())
			}
			continue
		}
		start := fr.bi
		v, w, l, err := fr.variable()
		if err != nil {
			return fmt.Errorf("%s: %s: %v", m.TCode, fs.F, err)
		}
		last = l
		if fr.bi-start > 1 && w > 6 {
			// The field spans bytes: is its last 6-bit chunk redundant?
			top, below := v>>(w-6), v>>(w-7)&1
			ext := cfg.ExtendAddrMSB && fs.F.IsAddress()
			if !ext && top == 0 || ext && (top == 0 && below == 0 || top == 0x3f && below == 1) {
				m.Padded |= 1 << fs.F
			}
		}
		if cfg.ExtendAddrMSB && fs.F.IsAddress() && w > 0 && w < uint(cfg.addrBits()) && v>>(w-1)&1 == 1 {
			v |= (1<<cfg.addrBits() - 1) &^ (1<<w - 1)
		}
		m.Set(fs.F, v)
		if hook != nil {
			hook(fs.F, w, fr.bi-1)
		}
	}
	if !last {
		if fr.done() {
			return fmt.Errorf("%s: fixed-length fields end the message", m.TCode)
		}
		v, w, l, err := fr.variable()
		if err != nil {
			return fmt.Errorf("%s: TSTAMP: %v", m.TCode, err)
		}
		m.Set(FieldTSTAMP, v)
		if hook != nil {
			hook(FieldTSTAMP, w, fr.bi-1)
		}
		if !l {
			return fmt.Errorf("%s: unexpected fields after TSTAMP", m.TCode)
		}
	}
	return nil
}
