package tracectl

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/ntrace"
)

// Capture is the trace a debugger read from the RAM sink at the end of a
// run (System.StopAndCapture).
type Capture struct {
	// Bytes is the trace, oldest byte first. When the buffer wrapped it
	// starts at the first sync message/packet found in it: the bytes
	// before it (Skipped) are the end of a message whose start was
	// overwritten, or trace a decoder cannot follow without a sync.
	Bytes []byte
	// Wrapped is trRamWrap: the buffer wrapped and older trace was
	// overwritten.
	Wrapped bool
	// Overwritten is the number of bytes of trace lost by wrapping (the
	// simulator's count; a hardware tool knows only trRamWrap).
	Overwritten uint64
	// Skipped is the number of bytes of the unwound buffer dropped before
	// the first sync.
	Skipped int
	// Settings is the configuration of the encoder of hart 0 when it was
	// last enabled (else what its registers select): the format and what
	// a decoder needs.
	Settings Settings
	// Enabled reports whether the encoder of hart 0 was ever enabled.
	Enabled bool
}

// ErrNoSink is returned by StopAndCapture when the RAM sink was never
// released from reset: nothing was set up, nothing was captured.
var ErrNoSink = errors.New("the trace RAM sink is in reset (trRamActive = 0): no trace was set up")

// StopAndCapture stops the trace system and reads the RAM sink back the
// way the specification's "Enabling and Disabling" section tells a tool
// to, through the registers: it clears trTeEnable of every enabled
// encoder (which flushes it), trFunnelEnable, then trRamEnable (which
// stores the last incomplete word), and reads the buffer (ReadTrace).
// When the buffer wrapped, the capture starts at its first sync
// (FirstSync).
func (s *System) StopAndCapture() (*Capture, error) {
	firstErr := s.Stop()
	if errors.Is(firstErr, ErrNoSink) {
		return nil, firstErr
	}
	if err := s.Sink.Err(); err != nil {
		return nil, err
	}
	sink := s.SinkAddr()
	wp, _ := s.Read32(sink + RAMWPLow)
	c := &Capture{Wrapped: wp&1 != 0, Overwritten: s.Sink.Overwritten()}
	var mem io.ReaderAt
	if s.Sink.mem != nil {
		mem = s.Sink.mem
	}
	b, err := ReadTrace(s, sink, mem)
	if err != nil {
		return nil, err
	}
	c.Settings, c.Enabled = s.Encoders[0].LastSettings()
	if !c.Enabled {
		if c.Settings, err = s.Encoders[0].Settings(); err != nil {
			return nil, fmt.Errorf("the registers of the trace encoder of hart 0: %w", err)
		}
	}
	c.Bytes = b
	if c.Wrapped {
		off, err := FirstSync(b, c.Settings)
		if err != nil {
			return c, err
		}
		c.Bytes, c.Skipped = b[off:], off
	}
	return c, firstErr
}

// Stop stops the trace system through its registers as the specification's
// "Enabling and Disabling" section tells a tool to: it clears trTeEnable
// of every enabled encoder (which flushes it), then trFunnelEnable, then
// trRamEnable (which stores the last incomplete word). It returns
// ErrNoSink when the RAM sink is in reset, or the error of an encoder's
// flush.
func (s *System) Stop() error {
	var firstErr error
	for h := range s.Encoders {
		a := s.EncoderAddr(h)
		if v, _ := s.Read32(a); v&3 == 3 {
			if _, err := s.Write32(a, v&^2); err != nil && firstErr == nil {
				firstErr = fmt.Errorf("disabling the trace encoder of hart %d: %w", h, err)
			}
		}
	}
	if v, _ := s.Read32(s.FunnelAddr()); v&3 == 3 {
		s.Write32(s.FunnelAddr(), v&^2)
	}
	sink := s.SinkAddr()
	v, _ := s.Read32(sink)
	if v&1 == 0 {
		return ErrNoSink
	}
	if v&2 != 0 {
		s.Write32(sink, v&^2)
	}
	return firstErr
}

// FirstSync returns the offset of the first sync message (N-Trace) or
// sync packet (E-Trace) in b, a circular buffer unwound from a byte that
// may be inside a message or packet.
//
// N-Trace messages end with a byte whose MSEO bits are 11, so the first
// message boundary is after the first such byte; the first sync message
// is found from there.
//
// E-Trace packets in the UTDD encapsulation carry no boundary marker: every
// start within the longest frame is tried, and a start counts only when
// the whole rest of the buffer splits into frames from it. The true
// boundaries are among those splits, so a frame start every clean split
// shares is a true one; the first sync packet at such a start is
// returned, and an error when there is none (FirstSync does not guess).
func FirstSync(b []byte, set Settings) (int, error) {
	if set.Format == FormatNTrace {
		return firstSyncNTrace(b, set.NTrace)
	}
	return firstSyncETrace(b, &set.ETrace)
}

func firstSyncNTrace(b []byte, cfg ntrace.Config) (int, error) {
	start := -1
	for i, c := range b {
		if c&3 == 3 {
			start = i + 1
			break
		}
	}
	if start < 0 {
		return 0, fmt.Errorf("the wrapped trace buffer (%d bytes) holds no end of an N-Trace message", len(b))
	}
	rd := ntrace.NewReader(bytes.NewReader(b[start:]), cfg.Wire())
	var m ntrace.Message
	for {
		err := rd.Next(&m)
		if err == io.EOF {
			return 0, fmt.Errorf("the wrapped trace buffer (%d bytes) holds no N-Trace sync message", len(b))
		}
		var fe *ntrace.FormatError
		if errors.As(err, &fe) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if m.TCode.IsSync() {
			return start + int(m.Offset), nil
		}
	}
}

// etraceFrameMax bounds the bytes of one E-Trace frame (header, source ID
// and type, timestamp, payload).
const etraceFrameMax = 1 + 5 + 8 + 31

func firstSyncETrace(b []byte, cfg *etrace.Config) (int, error) {
	// count[i]: how many of the starts that split the rest of the buffer
	// into frames have a frame at byte i; sync[i]: that frame is a sync
	// packet.
	count := make([]int32, len(b))
	sync := make([]bool, len(b))
	clean := int32(0)
	var offs []int
	for k := 0; k < etraceFrameMax && k < len(b); k++ {
		sc := etrace.NewScanner(bytes.NewReader(b[k:]), cfg)
		offs = offs[:0]
		for sc.Scan() {
			fr := sc.Frame()
			o := k + int(fr.Offset)
			offs = append(offs, o)
			sync[o] = sync[o] || len(fr.Payload) > 0 && fr.Payload[0]&3 == 3 && fr.Payload[0]>>2&3 <= etrace.SubTrap
		}
		if sc.Err() != nil {
			continue // not a frame boundary
		}
		clean++
		for _, o := range offs {
			count[o]++
		}
	}
	if clean == 0 {
		return 0, fmt.Errorf("no start in the first %d bytes of the wrapped E-Trace buffer (%d bytes) splits it into packets", etraceFrameMax, len(b))
	}
	// The true packet boundaries split the buffer cleanly, so a boundary
	// shared by every clean split is a true one: the first sync packet
	// there is where decoding can start.
	for o := range b {
		if count[o] == clean && sync[o] {
			return o, nil
		}
	}
	return 0, fmt.Errorf("the wrapped E-Trace buffer (%d bytes) has no sync packet at a packet boundary every possible split agrees on", len(b))
}
