package analysis

import (
	"bufio"
	"encoding/binary"
	"io"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
)

// Field numbers and values of Perfetto's trace protocol (protos/perfetto/
// trace: trace.proto, trace_packet.proto, track_event/track_event.proto,
// track_event/track_descriptor.proto, interned_data/interned_data.proto).
const (
	pfTracePacket = 1 // Trace.packet

	pfTimestamp        = 8  // TracePacket.timestamp (ns)
	pfSequenceID       = 10 // TracePacket.trusted_packet_sequence_id
	pfTrackEvent       = 11 // TracePacket.track_event
	pfInternedData     = 12 // TracePacket.interned_data
	pfSequenceFlags    = 13 // TracePacket.sequence_flags
	pfTrackDescriptor  = 60 // TracePacket.track_descriptor
	pfSeqClearedState  = 1  // SEQ_INCREMENTAL_STATE_CLEARED
	pfSeqNeedsState    = 2  // SEQ_NEEDS_INCREMENTAL_STATE
	pfEventType        = 9  // TrackEvent.type
	pfEventNameIID     = 10 // TrackEvent.name_iid
	pfEventTrackUUID   = 11 // TrackEvent.track_uuid
	pfSliceBegin       = 1  // TrackEvent.TYPE_SLICE_BEGIN
	pfSliceEnd         = 2  // TrackEvent.TYPE_SLICE_END
	pfTrackUUID        = 1  // TrackDescriptor.uuid
	pfTrackName        = 2  // TrackDescriptor.name
	pfInternEventNames = 2  // InternedData.event_names
	pfNameIID          = 1  // EventName.iid
	pfNameName         = 2  // EventName.name
)

// Perfetto is a flow.Sink that writes function activations as a native
// Perfetto protobuf trace (a Trace of TracePackets with TrackEvent slice
// begin and end events), which ui.perfetto.dev and trace_processor load
// and which, unlike JSON, scales to long traces: the file grows by a few
// bytes per activation, function names are interned, and the writer keeps
// only the open call stacks in memory.
//
// It shows what the Chrome JSON writer shows, with the same tracks (one
// per hart and privilege level: TrackID, TrackName) and the same slices:
// activations of no instruction are left out; a slice of the [unknown]
// stand-in is named by its first address (it begins before the rest is
// known), where the JSON names it by all of them. Timestamps are
// nanoseconds: 1000 per instruction executed by the hart (so that 1 µs
// is one instruction, as in the JSON), or with PerfettoOptions.UseTime
// the flow's timestamps.
type Perfetto struct {
	*Profile
	w      *bufio.Writer
	opt    PerfettoOptions
	err    error
	closer io.Closer
	tracks map[uint32]bool
	names  map[string]uint64
	stacks map[uint32][]pfOpen
	pkt    []byte
	msg    []byte
	sub    []byte
	first  bool
}

// PerfettoOptions configure a Perfetto writer.
type PerfettoOptions struct {
	// UseTime places slices by the flow's timestamps (for activations
	// that began after the first timestamp), NsPerTimeUnit nanoseconds
	// per time unit (0 means 1), instead of 1000 ns per instruction.
	UseTime       bool
	NsPerTimeUnit float64
}

// pfOpen is an open activation: begun is set once its begin event has
// been written (when it has executed an instruction).
type pfOpen struct {
	s     Span
	begun bool
}

// NewPerfetto returns a Perfetto writer to w for a flow over img (which
// may be nil); popt configures its Profile (its OnEnter and OnSpan are
// replaced).
func NewPerfetto(w io.Writer, img *image.Set, popt Options, opt PerfettoOptions) *Perfetto {
	c := &Perfetto{w: bufio.NewWriterSize(w, 256<<10), opt: opt, tracks: map[uint32]bool{},
		names: map[string]uint64{}, stacks: map[uint32][]pfOpen{}, first: true}
	popt.OnEnter = c.enter
	popt.OnSpan = c.end
	c.Profile = New(img, popt)
	return c
}

// SetCloser makes Close also close cl (the output file).
func (c *Perfetto) SetCloser(cl io.Closer) { c.closer = cl }

func appendTag(b []byte, field, wire int) []byte {
	return binary.AppendUvarint(b, uint64(field)<<3|uint64(wire))
}

func appendVarintField(b []byte, field int, v uint64) []byte {
	return binary.AppendUvarint(appendTag(b, field, 0), v)
}

func appendBytesField(b []byte, field int, v []byte) []byte {
	b = binary.AppendUvarint(appendTag(b, field, 2), uint64(len(v)))
	return append(b, v...)
}

// writePacket writes c.pkt as one TracePacket of the Trace.
func (c *Perfetto) writePacket() {
	if c.err != nil {
		return
	}
	c.pkt = appendVarintField(c.pkt, pfSequenceID, 1)
	var hdr [11]byte
	h := appendTag(hdr[:0], pfTracePacket, 2)
	h = binary.AppendUvarint(h, uint64(len(c.pkt)))
	if _, c.err = c.w.Write(h); c.err == nil {
		_, c.err = c.w.Write(c.pkt)
	}
}

// track makes sure the track of s is described.
func (c *Perfetto) track(s *Span) uint64 {
	id := TrackID(s)
	uuid := uint64(id) + 1
	if c.tracks[id] {
		return uuid
	}
	c.tracks[id] = true
	c.pkt = c.pkt[:0]
	if c.first {
		c.first = false
		c.pkt = appendVarintField(c.pkt, pfSequenceFlags, pfSeqClearedState)
	}
	c.msg = appendVarintField(c.msg[:0], pfTrackUUID, uuid)
	c.msg = appendBytesField(c.msg, pfTrackName, []byte(TrackName(s)))
	c.pkt = appendBytesField(c.pkt, pfTrackDescriptor, c.msg)
	c.writePacket()
	return uuid
}

func (c *Perfetto) ts(s *Span, begin bool) uint64 {
	if c.opt.UseTime && s.Timed {
		t := s.EndTime
		if begin {
			t = s.BeginTime
		}
		if c.opt.NsPerTimeUnit > 0 {
			return uint64(float64(t) * c.opt.NsPerTimeUnit)
		}
		return t
	}
	if begin {
		return s.Begin * 1000
	}
	return s.End * 1000
}

// event writes a slice begin (with the function's name) or end.
func (c *Perfetto) event(s *Span, begin bool) {
	uuid := c.track(s)
	c.pkt = appendVarintField(c.pkt[:0], pfTimestamp, c.ts(s, begin))
	c.msg = c.msg[:0]
	if begin {
		c.msg = appendVarintField(c.msg, pfEventType, pfSliceBegin)
		// (the [unknown] stand-in is named by its first address:
		// the slice begins before the rest is known)
		name := s.Label()
		iid, ok := c.names[name]
		if !ok {
			iid = uint64(len(c.names) + 1)
			c.names[name] = iid
			c.sub = appendVarintField(c.sub[:0], pfNameIID, iid)
			c.sub = appendBytesField(c.sub, pfNameName, []byte(name))
			var in []byte
			in = appendBytesField(in, pfInternEventNames, c.sub)
			c.pkt = appendBytesField(c.pkt, pfInternedData, in)
		}
		c.msg = appendVarintField(c.msg, pfEventNameIID, iid)
	} else {
		c.msg = appendVarintField(c.msg, pfEventType, pfSliceEnd)
	}
	c.msg = appendVarintField(c.msg, pfEventTrackUUID, uuid)
	c.pkt = appendBytesField(c.pkt, pfTrackEvent, c.msg)
	c.pkt = appendVarintField(c.pkt, pfSequenceFlags, pfSeqNeedsState)
	c.writePacket()
}

// begin writes the begin events of the open activations of src that have
// executed an instruction by now (they began before now), outermost
// first.
func (c *Perfetto) begin(src uint32, now uint64) {
	st := c.stacks[src]
	for i := range st {
		if !st[i].begun && st[i].s.Begin < now {
			st[i].begun = true
			c.event(&st[i].s, true)
		}
	}
}

func (c *Perfetto) enter(s *Span) {
	c.begin(s.Src, s.Begin)
	c.stacks[s.Src] = append(c.stacks[s.Src], pfOpen{s: *s})
}

func (c *Perfetto) end(s *Span) {
	c.begin(s.Src, s.End)
	st := c.stacks[s.Src]
	if len(st) == 0 {
		return
	}
	top := st[len(st)-1]
	c.stacks[s.Src] = st[:len(st)-1]
	if top.begun {
		c.event(s, false)
	}
}

// Event adds a flow event.
func (c *Perfetto) Event(e *flow.Event) error {
	if c.err != nil {
		return c.err
	}
	return c.Profile.Event(e)
}

// Close ends the open activations and flushes the trace.
func (c *Perfetto) Close() error {
	c.Profile.Close()
	err := c.err
	if e := c.w.Flush(); err == nil {
		err = e
	}
	if c.closer != nil {
		if e := c.closer.Close(); err == nil {
			err = e
		}
	}
	return err
}
