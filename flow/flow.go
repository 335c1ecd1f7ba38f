// Package flow is the decoded instruction flow: what a trace decoder
// recovers from trace bytes plus the program image, independent of the
// protocol it came from. Decoders (N-Trace, E-Trace, a Tarmac reader, the
// simulator) produce Events; sinks (PC lists, listings, JSON lines, Tarmac,
// profiles, statistics) consume them.
//
// The flow is a sequence of ranges of executed instructions, separated by
// events that explain the discontinuities between them: traps, trace
// synchronisation, privilege and context changes, timestamps and gaps where
// trace was lost.
package flow

import (
	"fmt"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// Kind is the type of a flow event.
type Kind uint8

// Event kinds.
const (
	// KindRange is a run of N instructions executed at consecutive addresses
	// from Start to Last (inclusive). End tells how the last instruction
	// left the run (taken branch, call, return, ...; ITypeNone when the run
	// ended for another reason, such as a trap or the end of the trace).
	// Target is the address executed next when the decoder knows it.
	KindRange Kind = iota
	// KindTrap is an exception (or, with Interrupt set, an interrupt) taken
	// after the preceding range. Addr is the address of the instruction
	// that trapped or would have executed next (the EPC) when known, Target
	// the handler address; Cause and TVal are set when the protocol
	// carries them (HasCause).
	KindTrap
	// KindSync marks a point where the decoder (re)synchronised: the next
	// range starts at Addr. Reason is the protocol's sync reason code.
	KindSync
	// KindContext reports the privilege level and context (process ID)
	// from here on.
	KindContext
	// KindTime carries a timestamp (Time) for the point in the flow where
	// it stands.
	KindTime
	// KindGap reports trace that was lost or could not be decoded; Err says
	// why (a *decode.Error from the trace decoders) and Offset where in the
	// trace, Index which message or packet. Suspect counts the instructions
	// already emitted since the last point known good that may be wrong (a
	// checkpoint found the decoder elsewhere); they are the last Suspect
	// instructions of the ranges before the gap. Decoding resumes at the
	// next sync. A gap at a sync whose address is outside every image
	// (decode.ErrOutsideImage) has that address in Addr.
	KindGap
	// KindStop reports that trace stopped (disabled, debug mode, end of
	// capture); Reason is the protocol's code for why.
	KindStop
	// KindNotify is a watchpoint or trace-notify report at Addr.
	KindNotify
	// KindWarn reports something the user should know that lost no trace
	// (a field beyond the specification's maximum that was still used);
	// Err says what and Offset where.
	KindWarn
	// KindData is a data access (data trace) of the instruction at Addr,
	// which is the last instruction of the range just before it: Access
	// holds the access (its IAddr is Addr), AccessHas which of its
	// address and data the trace carried. An atomic is one event with
	// the value loaded (Access.Data) and the value stored (Access.SData);
	// a CSR access (CSR data trace) has the CSR number in Access.DAddr,
	// the value read from the CSR (its value before the instruction,
	// what rd receives) in Access.SData and the operand (rs1 or uimm) in
	// Access.Data. Offset is the byte offset of
	// the data packet.
	KindData
	numKinds
)

var kindNames = [numKinds]string{"range", "trap", "sync", "context", "time", "gap", "stop", "notify", "warn", "data"}

// String returns the lower-case name of the kind.
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind%d", uint8(k))
}

// Event is one element of the decoded flow. Fields not listed for a Kind
// are zero. Events are passed by pointer and only valid during the call to
// the sink; a sink that keeps one must copy it.
type Event struct {
	Kind Kind
	// End is the itype of the last instruction of a range.
	End ingress.IType
	// Interrupt distinguishes interrupts from exceptions in KindTrap.
	Interrupt bool
	// HasCause is set when Cause and TVal are known.
	HasCause bool
	// HasTarget is set when Target is known.
	HasTarget bool
	// Priv is the privilege level (KindContext; also kept current on other
	// events by decoders that know it).
	Priv ingress.Priv
	// Src is the trace source (hart or encoder ID) the event belongs to.
	Src uint32
	// Reason is a protocol-specific code (sync reason, stop reason).
	Reason uint32
	// N is the number of instructions of a range.
	N uint64
	// Start and Last are the first and last instruction of a range.
	Start, Last uint64
	// Addr is the address a sync, trap or notify event refers to.
	Addr uint64
	// Target is where execution continues after a range or trap.
	Target uint64
	// Cause and TVal of a trap.
	Cause, TVal uint64
	// Context is the context value (KindContext).
	Context uint64
	// Time is the timestamp (KindTime), in the trace's time units.
	Time uint64
	// Offset is the byte offset in the trace of the message or packet that
	// produced the event (-1 when not from a byte stream).
	Offset int64
	// Index is the 0-based index of that message or packet (gaps and
	// warnings; -1 when unknown).
	Index int64
	// Suspect is, on a gap, the number of instructions emitted before it
	// since the last point known good (see KindGap).
	Suspect uint64
	// Err explains a gap.
	Err error
	// Access is the data access of a KindData event.
	Access ingress.Access
	// AccessHas tells which parts of Access the trace carried
	// (AccessAddr, AccessData).
	AccessHas uint8
	// Image, on a range, is the address space the range was decoded in
	// when it is not the image the decoder was given: the view of a
	// context or of a point in time of a system trace
	// (image.Set.View). Sinks that walk the instructions of a range use
	// [Event.ImageOr].
	Image *image.Set
}

// ImageOr returns e.Image, or img when it is nil.
func (e *Event) ImageOr(img *image.Set) *image.Set {
	if e.Image != nil {
		return e.Image
	}
	return img
}

// Bits of Event.AccessHas.
const (
	AccessAddr = 1 << iota // Access.DAddr is known
	AccessData             // Access.Data (and SData) are known
)

// String renders the event on one line, for listings and test failures.
func (e *Event) String() string {
	switch e.Kind {
	case KindRange:
		s := fmt.Sprintf("range %#x..%#x n=%d end=%s", e.Start, e.Last, e.N, e.End)
		if e.HasTarget {
			s += fmt.Sprintf(" next=%#x", e.Target)
		}
		return s
	case KindTrap:
		what := "exception"
		if e.Interrupt {
			what = "interrupt"
		}
		s := fmt.Sprintf("trap %s at %#x handler=%#x", what, e.Addr, e.Target)
		if e.HasCause {
			s += fmt.Sprintf(" cause=%#x tval=%#x", e.Cause, e.TVal)
		}
		return s
	case KindSync:
		return fmt.Sprintf("sync at %#x reason=%d", e.Addr, e.Reason)
	case KindContext:
		return fmt.Sprintf("context priv=%s context=%#x", e.Priv, e.Context)
	case KindTime:
		return fmt.Sprintf("time %d", e.Time)
	case KindGap:
		if e.Suspect > 0 {
			return fmt.Sprintf("gap at byte %d: %v (%d instructions before it suspect)", e.Offset, e.Err, e.Suspect)
		}
		return fmt.Sprintf("gap at byte %d: %v", e.Offset, e.Err)
	case KindWarn:
		return fmt.Sprintf("warning at byte %d: %v", e.Offset, e.Err)
	case KindStop:
		return fmt.Sprintf("stop reason=%d", e.Reason)
	case KindNotify:
		return fmt.Sprintf("notify at %#x", e.Addr)
	case KindData:
		a := &e.Access
		s := fmt.Sprintf("data %s pc=%#x size=%d", a.DType, e.Addr, a.Bytes())
		if e.AccessHas&AccessAddr != 0 {
			if a.DType.IsCSR() {
				s += fmt.Sprintf(" csr=%#x", a.DAddr)
			} else {
				s += fmt.Sprintf(" addr=%#x", a.DAddr)
			}
		}
		if e.AccessHas&AccessData != 0 && a.DType != ingress.DTypeSCFail {
			if a.DType.IsCSR() {
				s += fmt.Sprintf(" value=%#x operand=%#x", a.SData, a.Data)
			} else if a.DType.IsAtomic() {
				s += fmt.Sprintf(" load=%#x store=%#x", a.Data, a.SData)
			} else {
				s += fmt.Sprintf(" value=%#x", a.Data)
			}
		}
		return s
	}
	return e.Kind.String()
}

// Sink consumes flow events. Event is called once per event in flow order;
// the event is only valid during the call. Close is called once at the end
// of the flow and flushes output.
type Sink interface {
	Event(e *Event) error
	Close() error
}

// MessageObserver is implemented by sinks that also want to see every
// message (N-Trace) or packet (E-Trace) the decoder reads, to count trace
// bytes by type: the decoder calls Message once per message, in stream
// order, with its type name, byte offset and size in bits.
type MessageObserver interface {
	Message(kind string, offset int64, bits int)
}

// RangeTally is implemented by sinks that only count range events (their
// number and instructions), whatever their order among the other events:
// when TalliesRanges is true, a decoder may pass n range events of ins
// instructions in all with one call to TallyRanges instead of the events
// (package decode/parallel does, for the pieces it decodes at once).
type RangeTally interface {
	TalliesRanges() bool
	TallyRanges(n, ins uint64)
}

// TalliesRanges reports whether s is a RangeTally that tallies ranges.
func TalliesRanges(s Sink) bool {
	t, ok := s.(RangeTally)
	return ok && t.TalliesRanges()
}

// Multi returns a sink that passes every event to each of sinks in order.
// It is a MessageObserver and an Indexer that forwards to those of sinks
// that are, and a RangeTally when each of sinks tallies ranges.
func Multi(sinks ...Sink) Sink { return multi(sinks) }

type multi []Sink

func (m multi) Event(e *Event) error {
	for _, s := range m {
		if err := s.Event(e); err != nil {
			return err
		}
	}
	return nil
}

func (m multi) Message(kind string, offset int64, bits int) {
	for _, s := range m {
		if o, ok := s.(MessageObserver); ok {
			o.Message(kind, offset, bits)
		}
	}
}

// TalliesRanges reports whether every sink tallies ranges.
func (m multi) TalliesRanges() bool {
	for _, s := range m {
		if !TalliesRanges(s) {
			return false
		}
	}
	return true
}

// TallyRanges passes the tally on to every sink.
func (m multi) TallyRanges(n, ins uint64) {
	for _, s := range m {
		s.(RangeTally).TallyRanges(n, ins)
	}
}

// SetIndex forwards to those of the sinks that are Indexers.
func (m multi) SetIndex(i uint64) {
	for _, s := range m {
		if x, ok := s.(Indexer); ok {
			x.SetIndex(i)
		}
	}
}

func (m multi) Close() error {
	var first error
	for _, s := range m {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// OnlySrc returns a sink that passes to next only the events of trace
// source src (hart or encoder ID); Close closes next.
func OnlySrc(next Sink, src uint32) Sink { return &onlySrc{next, src} }

type onlySrc struct {
	next Sink
	src  uint32
}

func (o *onlySrc) Event(e *Event) error {
	if e.Src != o.src {
		return nil
	}
	return o.next.Event(e)
}

func (o *onlySrc) Close() error { return o.next.Close() }

// Counter is a sink that counts instructions and events; it is the
// cheapest possible consumer, used to measure decoders.
type Counter struct {
	Instructions uint64
	Ranges       uint64
	Traps        uint64
	Gaps         uint64
	Events       [numKinds]uint64
}

// Event counts e.
func (c *Counter) Event(e *Event) error {
	if e.Kind < numKinds {
		c.Events[e.Kind]++
	}
	switch e.Kind {
	case KindRange:
		c.Instructions += e.N
		c.Ranges++
	case KindTrap:
		c.Traps++
	case KindGap:
		c.Gaps++
	}
	return nil
}

// TalliesRanges reports true: a Counter is a RangeTally.
func (c *Counter) TalliesRanges() bool { return true }

// TallyRanges counts n range events of ins instructions.
func (c *Counter) TallyRanges(n, ins uint64) {
	c.Events[KindRange] += n
	c.Ranges += n
	c.Instructions += ins
}

// Close does nothing.
func (c *Counter) Close() error { return nil }
