package flow

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// DefaultStrictHold is the number of events a Strict sink holds in memory
// before it spills them to a temporary file.
const DefaultStrictHold = 1 << 14

// Strict returns a sink that passes to next only instructions known good:
// it holds the events since the last point known good (a KindSync event:
// a fresh synchronisation or a checkpoint that passed) and, when a gap
// says that the last Suspect instructions before it may be wrong, drops
// them (splitting a range if the cut falls inside one, with img giving
// the instruction sizes) before passing the gap on. Traps and notify
// events after the cut are dropped with the instructions; context, time,
// stop and warning events are kept. The gap itself is passed unchanged,
// Suspect included, so that later sinks can say how many instructions
// were withheld.
//
// Memory stays bounded: Strict holds at most DefaultStrictHold events in
// memory; beyond that it appends them to a temporary file (created in
// os.TempDir and removed on Close), fixed-size binary records plus the
// text of warnings' errors, and replays the file at the next sync or gap.
// A spilled warning keeps its error's text but not its type. The cost of
// spilling is one write and one read of each spilled event; a trace that
// syncs every few thousand instructions never spills.
//
// The sink is a MessageObserver that passes message statistics on at once.
//
// If Suspect exceeds the instructions held (a decoder that counts from
// before the last KindSync), every held instruction is dropped; earlier
// ones have already been passed on and cannot be recalled.
func Strict(next Sink, img *image.Set) Sink {
	return &strict{next: next, img: img, max: DefaultStrictHold}
}

type strict struct {
	next Sink
	img  *image.Set
	max  int // events held in memory before spilling

	held  []Event // in memory, after the spilled ones
	heldN uint64  // instructions held (spilled and in memory)

	f       *os.File
	fw      *bufio.Writer
	spilled int // events in the file
	buf     []byte
	hdr     [eventBytes]byte
	err     error
}

// Event holds, flushes or cuts.
func (s *strict) Event(e *Event) error {
	if s.err != nil {
		return s.err
	}
	switch e.Kind {
	case KindSync:
		if err := s.release(s.heldN); err != nil {
			return err
		}
		return s.next.Event(e)
	case KindGap:
		keep := uint64(0)
		if e.Suspect < s.heldN {
			keep = s.heldN - e.Suspect
		}
		if err := s.release(keep); err != nil {
			return err
		}
		return s.next.Event(e)
	}
	if e.Kind == KindRange {
		s.heldN += e.N
	}
	if len(s.held) >= s.max {
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.held = append(s.held, *e)
	return nil
}

// release passes the held events on, keeping only the first keep
// instructions, and empties the hold.
func (s *strict) release(keep uint64) error {
	var passed uint64
	pass := func(e *Event) error {
		switch e.Kind {
		case KindRange:
			if passed >= keep {
				return nil
			}
			if passed+e.N > keep {
				c := *e
				if err := s.cut(&c, keep-passed); err != nil {
					return err
				}
				passed = keep
				return s.next.Event(&c)
			}
			passed += e.N
		case KindTrap, KindNotify:
			if passed >= keep && keep < s.heldN {
				return nil
			}
		}
		return s.next.Event(e)
	}
	if s.spilled > 0 {
		if err := s.replay(pass); err != nil {
			s.err = err
			return err
		}
	}
	for i := range s.held {
		if err := pass(&s.held[i]); err != nil {
			return err
		}
	}
	s.held = s.held[:0]
	s.heldN = 0
	return nil
}

// cut shortens range e to its first n instructions (0 < n < e.N).
func (s *strict) cut(e *Event, n uint64) error {
	pc := e.Start
	for i := uint64(1); i < n; i++ {
		in := e.ImageOr(s.img).InstPtr(pc)
		if in == nil || in.Len == 0 {
			return fmt.Errorf("strict: address %#x in a decoded range is not in the image", pc)
		}
		pc += uint64(in.Len)
	}
	e.N, e.Last = n, pc
	e.End, e.HasTarget, e.Target = 0, false, 0
	return nil
}

// Message passes the decoder's message statistics on to next when it is a
// MessageObserver, at once: they count trace bytes, which Strict does not
// withhold.
func (s *strict) Message(kind string, offset int64, bits int) {
	if o, ok := s.next.(MessageObserver); ok {
		o.Message(kind, offset, bits)
	}
}

// Close releases what is held (the flow ended without a gap saying it is
// suspect), removes the spill file and closes next.
func (s *strict) Close() error {
	err := s.err
	if err == nil {
		err = s.release(s.heldN)
	}
	if s.f != nil {
		s.f.Close()
		os.Remove(s.f.Name())
		s.f = nil
	}
	if e := s.next.Close(); err == nil {
		err = e
	}
	return err
}

// spill appends the events held in memory to the spill file.
func (s *strict) spill() error {
	if s.f == nil {
		f, err := os.CreateTemp("", "rvtrace-strict-*")
		if err != nil {
			s.err = fmt.Errorf("strict: %w", err)
			return s.err
		}
		s.f, s.fw = f, bufio.NewWriterSize(f, 1<<16)
	}
	for i := range s.held {
		s.buf = appendEvent(s.buf[:0], &s.held[i])
		if _, err := s.fw.Write(s.buf); err != nil {
			s.err = fmt.Errorf("strict: spilling to %s: %w", s.f.Name(), err)
			return s.err
		}
	}
	s.spilled += len(s.held)
	s.held = s.held[:0]
	return nil
}

// replay reads the spilled events back in order, passes each to fn and
// empties the file.
func (s *strict) replay(fn func(*Event) error) error {
	if err := s.fw.Flush(); err != nil {
		return fmt.Errorf("strict: %w", err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("strict: %w", err)
	}
	r := bufio.NewReaderSize(s.f, 1<<16)
	var e Event
	for i := 0; i < s.spilled; i++ {
		if err := readEvent(r, &e, &s.hdr); err != nil {
			return fmt.Errorf("strict: reading back %s: %w", s.f.Name(), err)
		}
		if err := fn(&e); err != nil {
			return err
		}
	}
	s.spilled = 0
	if err := s.f.Truncate(0); err != nil {
		return fmt.Errorf("strict: %w", err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("strict: %w", err)
	}
	s.fw.Reset(s.f)
	return nil
}

// eventWords is the number of 64-bit words of a spilled event record,
// after its 4 bytes of kind, end, flags and privilege; eventBytes the size
// of that fixed part (the error text follows).
const (
	eventWords = 15
	eventBytes = 4 + 8*eventWords
)

func appendEvent(b []byte, e *Event) []byte {
	var flags byte
	if e.Interrupt {
		flags |= 1
	}
	if e.HasCause {
		flags |= 2
	}
	if e.HasTarget {
		flags |= 4
	}
	b = append(b, byte(e.Kind), byte(e.End), flags, byte(e.Priv))
	for _, v := range [eventWords]uint64{uint64(e.Src), uint64(e.Reason), e.N, e.Start, e.Last, e.Addr,
		e.Target, e.Cause, e.TVal, e.Context, e.Time, uint64(e.Offset), uint64(e.Index), e.Suspect, 0} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	msg := ""
	if e.Err != nil {
		msg = e.Err.Error()
	}
	b = binary.AppendUvarint(b, uint64(len(msg)))
	return append(b, msg...)
}

func readEvent(r *bufio.Reader, e *Event, hdr *[eventBytes]byte) error {
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	var w [eventWords]uint64
	for i := range w {
		w[i] = binary.LittleEndian.Uint64(hdr[4+8*i:])
	}
	*e = Event{Kind: Kind(hdr[0]), End: ingress.IType(hdr[1]), Interrupt: hdr[2]&1 != 0, HasCause: hdr[2]&2 != 0,
		HasTarget: hdr[2]&4 != 0, Priv: ingress.Priv(hdr[3]), Src: uint32(w[0]), Reason: uint32(w[1]), N: w[2],
		Start: w[3], Last: w[4], Addr: w[5], Target: w[6], Cause: w[7], TVal: w[8], Context: w[9], Time: w[10],
		Offset: int64(w[11]), Index: int64(w[12]), Suspect: w[13]}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return err
	}
	if n > 0 {
		msg := make([]byte, n)
		if _, err := io.ReadFull(r, msg); err != nil {
			return err
		}
		e.Err = errors.New(string(msg))
	}
	return nil
}
