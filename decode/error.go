// Package decode is the protocol-independent layer below the N-Trace
// (ntrace) and E-Trace (etrace) decoders: what every trace decoder needs
// whatever its wire format, as libipt's block layer and OpenCSD's code
// follower serve every protocol they decode.
//
// It holds the decode-error type every gap carries (Error, with byte
// offset, message or packet index, what was expected and the underlying
// cause) and the sentinel causes that callers test with errors.Is. The
// integrity rule both decoders keep is stated once here:
//
//	For any input bytes, every instruction a decoder emits is one the
//	program executed, in order, or it lies inside a reported gap. The only
//	undetectable differences are corruptions that are themselves a valid
//	trace of the decoded flow.
//
// Below the protocols it also holds what both decoders follow the program
// with:
//
//   - Blocks, the straight-line runs of the image with their successor
//     links (the walk from an address to the next instruction the trace
//     must decide on), and Block.Exit, where a block leads once the
//     outcome of its branch is known (the N-Trace walks use it; the
//     E-Trace walk spells it out in its switch, measurably faster there);
//   - the uninferable-target resolution: Uninferable classifies the
//     jumps whose target the image does not give, SeqTarget infers a
//     sequentially inferable jump from the constant load before it
//     (ingress.SeqTarget, which the encoders use as well), and
//     ReturnStack, the return-address stack, infers implicit returns;
//   - Tally, the count of instructions emitted since the last point known
//     good that every gap reports as suspect.
//
// Package decode/walk holds the walker both decoders embed: the address
// space followed (a view of the image per context and instruction count)
// with the blocks of each, and the builders of the range, gap and
// warning events (a package of its own because package flow reads
// Error). Package decode/parallel decodes the pieces of a trace at once,
// with the serial decode's result.
//
// A decoder reports a gap as a flow.KindGap event whose Err is an *Error.
// When a checkpoint (a sync message or packet, or any packet carrying a
// full address) disagrees with the address the decoder reached, the gap's
// Suspect field counts the instructions emitted since the last point known
// good: they may be wrong. flow.Strict withholds them instead.
package decode

import (
	"errors"
	"fmt"
	"strings"
)

// Error is an inconsistency or loss found while decoding a trace. It is
// what every gap event carries in flow.Event.Err, and what a decoder
// returns when decoding cannot go on at all.
type Error struct {
	// Offset is the byte offset in the trace of the message or packet
	// being decoded (-1 when unknown).
	Offset int64
	// Index is the 0-based index of that message or packet in the trace
	// (-1 when unknown).
	Index int64
	// What names the message or packet (its TCODE or format), "" if none.
	What string
	// Expected says what the decoder expected, "" if nothing specific.
	Expected string
	// Err is the underlying cause; it is often one of the sentinel errors
	// below, wrapped with detail.
	Err error
}

// Error renders the error on one line:
// "byte N, message I (WHAT): cause (expected X)", leaving out what is unknown.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Offset >= 0 {
		fmt.Fprintf(&b, "byte %d", e.Offset)
	}
	if e.Index >= 0 {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "message %d", e.Index)
	}
	if e.What != "" {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "(%s)", e.What)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("decode error")
	}
	if e.Expected != "" {
		fmt.Fprintf(&b, " (expected %s)", e.Expected)
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Sentinel causes, for errors.Is on a decode Error.
var (
	// ErrEmpty: the trace has no bytes at all.
	ErrEmpty = errors.New("the trace is empty")
	// ErrNoSync: the trace holds no sync message or packet, so nothing
	// can be decoded.
	ErrNoSync = errors.New("no sync message or packet in the trace")
	// ErrTruncated: the trace ends without the end message or packet its
	// encoder writes last (a capture cut short or a circular buffer).
	ErrTruncated = errors.New("the trace ends without its end message (truncated)")
	// ErrCheckpoint: a sync or full address states another address than
	// the one the decoder reached: something before it was decoded wrong.
	ErrCheckpoint = errors.New("checkpoint address differs from the decoded flow")
	// ErrInconsistent: the trace and the program image disagree (a branch
	// where the image has none, an I-CNT ending on the wrong kind of
	// instruction, history bits left over or missing, ...).
	ErrInconsistent = errors.New("trace and image disagree")
	// ErrOutsideImage: the flow reached an address outside every image.
	ErrOutsideImage = errors.New("address outside the program image")
	// ErrMalformed: bytes that do not form a valid message or packet.
	ErrMalformed = errors.New("malformed message")
	// ErrSkipped: a message was skipped (reserved, unknown or
	// vendor-defined TCODE or format) where the flow depended on it.
	ErrSkipped = errors.New("message skipped")
	// ErrUnknownSource: a SRC value that no configured source has.
	ErrUnknownSource = errors.New("unknown trace source")
	// ErrOverflow: the encoder reported lost trace (FIFO overflow, Error
	// message, or a gap the protocol signals).
	ErrOverflow = errors.New("trace lost by the encoder")
)

// Options are the decoding choices common to every protocol's decoder
// (ntrace.DecoderConfig.Decode, etrace.Config.Decode).
type Options struct {
	// AllowTruncated accepts a trace that does not start at a sync or
	// does not end with the end message, as a circular-buffer capture
	// does: decoding starts at the first sync and the missing end is not
	// reported as a gap.
	AllowTruncated bool
}
