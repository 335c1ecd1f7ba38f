// Package etrace implements the RISC-V Efficient Trace (E-Trace) instruction
// trace protocol: the te_inst packets of E-Trace 2.0 (the default) and of the
// 0.026 draft, their encapsulations, an encoder fed by ingress-port blocks
// and a decoder that rebuilds the executed instruction flow from the packets
// and the program image.
//
// The package is layered; each layer can be used alone:
//
//   - bits and packets (bits.go, packet.go): a te_inst packet is a Packet
//     value; its wire layout, for every format, subformat and version, is
//     described once as a table of fields (layouts) that the packet writer,
//     the packet reader, the CSV writer and reader and the dump all walk.
//     Sign-based compression is applied to every packet.
//   - framing (encap.go): the raw file layout of the E-Trace reference flow
//     (.te_inst_raw: one header byte with the payload length and message
//     type, then the payload, least significant byte first) and the
//     Unformatted Trace & Diagnostic Data Packet Encapsulation (UTDD) header.
//     A Scanner reads frames from any io.Reader through a fixed 32 KiB
//     buffer; the decoder (Decode), Dump and ToCSV stream through
//     it, so no trace is ever held in memory whole, and decoding
//     allocates nothing per packet. A header the scanner cannot trust
//     (a raw message type that is not instruction or data trace, a
//     zero length; a UTDD length that covers the source ID and no
//     payload or not even the source ID, source ID bits past its width,
//     a type field other than the source's, an extend bit clear in a
//     trace with timestamps, whose every frame the encoder timestamps) is
//     a FramingError, which the decoder reports as a gap; a UTDD frame of
//     a source ID other than the one a Decoder follows (without data
//     trace) is a gap too (decode.ErrUnknownSource).
//   - several sources (multi.go): one encoder per hart, each with its own
//     UTDD source ID, writing whole frames into a Funnel in the order they
//     are made; a Demux decodes such a stream with one Decoder per source
//     ID, tagging each flow event with it (flow.Event.Src). A frame
//     that cannot be read, or whose packet its source cannot parse, may
//     have held frames of any source (its length byte may be the
//     damaged part): it is a gap of every source following its program.
//   - the encoder (encoder.go): the reference compressed branch trace
//     algorithm of the specification, with every optional mode (full
//     address, implicit exception, sequentially inferable jumps, implicit
//     return with a call counter or a return stack, branch prediction, jump
//     target cache, periodic resynchronisation), driven by ingress.Block
//     records and by the ingress.Gated calls of a filter stage.
//   - the decoder (decoder.go): the decoder algorithm of the specification,
//     extended to the same optional modes, producing flow.Event values.
//   - data trace (data.go, dataenc.go, datajoin.go): the data packets of
//     the chapter "Data Trace Encoder Output Packets" (unified loads,
//     stores and atomics, with address and data, address only or data
//     only), written by a DataEncoder in front of the Encoder from the
//     accesses of the data trace interface (ingress.Access) and joined
//     back to the decoded flow by a DataJoiner (flow.KindData events).
//     Config.Data turns it on; data.go lists the decisions taken. On
//     several harts (multidata.go) DataConfig.Harts = N gives hart h's
//     data packets source ID N + h, and the Demux joins each hart's with a
//     DataJoiner of its own.
//
// # Gaps and checkpoints
//
// The decoder keeps the integrity rule of package decode: every
// instruction it emits was executed, in order, or lies inside a reported
// gap. A packet that cannot be read, or that disagrees with the program
// or with what the encoder would have sent (branch outcomes left over or
// missing, a branch where the image has none, an address outside the
// image, a reserved format, a 31-branch map all predicted correctly,
// ioptions changing while tracing, bits the encoder leaves at zero or at
// the sign, a reserved privilege, a context packet that changes the
// privilege, ...), is reported as a flow.KindGap event whose Err is a
// *decode.Error with the packet's byte offset and index, and decoding
// resumes at the next sync packet. Every sync packet and every address
// packet whose walk stops at the address it states is a checkpoint: a
// walk that cannot reach the stated address opens a decode.ErrCheckpoint
// gap naming both addresses, whose Suspect count is the instructions
// emitted since the last checkpoint that verified. A trace that does not
// start with a sync packet or does not end with the support packet that
// ends tracing is reported (decode.ErrTruncated) unless
// Config.Decode.AllowTruncated.
//
// The walk (walk.go) and the gaps use the layer both decoders share,
// below the protocols: from package decode the gap type decode.Error and
// its causes, decode.Tally, decode.ReturnStack (implicit returns),
// decode.Uninferable and decode.SeqTarget (sequentially inferable
// jumps), decode.Blocks with their links; from package decode/walk the
// walker that holds the address space followed with its blocks, follows
// code overwritten at given instruction counts, and builds the range, gap
// and warning events. What is E-Trace's own stays here: the walk modes a packet asks
// for (to an uninferable jump, to a reported address, to the last branch
// of a map), branch maps and counts with the predictor, the jump target
// cache, irreport/irdepth and the 0.026 double reports.
//
// # Privilege and context
//
// A format 3 subformat 0 or 1 packet states the privilege and context of
// the instruction it reports, and the decoded flow's context events put
// them exactly there: a sync packet that reports the first instruction
// after a privilege change (the target of an mret or sret) or a precise
// context change ends the range before that instruction, and the range
// at it starts after the context event, in the address space of the new
// context. A trap packet with thaddr=0 states the privilege the trap was
// taken from (the one a trap return returned to, when the trap is at its
// target): a context event precedes its trap event. Its address is the
// EPC only at the target of an uninferable discontinuity, as the
// specification's exception_address has it, and the range before it
// then ends at that discontinuity, which retired, with its itype (an
// mret's range ends as a trap return, as N-Trace's does); elsewhere the
// EPC is inferred from the program, as after a thaddr=1 packet. A trap packet
// right after a thaddr=0 one reports a trap taken before the earlier
// trap's handler ran: its EPC is that handler's first instruction, which
// the decoder gives when the trace determines it (an instruction fetch
// fault's tval, an EBREAK's; two exceptions taken to the same
// privilege share their handler; trapepc.go) and otherwise reports as
// unknown (0) with a flow.KindWarn event. A context packet (subformat 2)
// applies where it comes: imprecisely, as its name says.
//
// Everything here is hand-written from the specifications (E-Trace 2.0
// ratified, the 0.026 draft and the Trace Control Interface) rather than
// generated or ported: the specification's reference encoder is a flow chart
// and its decoder pseudo-code covers neither the branch predictor nor the
// return stack, so both sides are derived together here and kept in step by
// construction; the package's round-trip tests check that they are.
//
// # Decisions the specification leaves open
//
// The specification lets an encoder decide some things; this one decides
// them as follows, and its decoder relies on them:
//
//   - A format 0/1/2 packet that reports an address which is not the target
//     of an uninferable discontinuity (the last instruction before a trap, a
//     privilege change, a resynchronisation or the end of tracing) is always
//     followed by a format 3 subformat 0 or 1 packet or by a support packet
//     saying that tracing ended; the decoder looks one packet ahead to tell
//     the two cases apart, which is equivalent to the specification's
//     inferred_address mechanism.
//   - irreport/irdepth in such a packet give the return stack depth at the
//     reported instruction (sent when a return was inferred since the
//     previous packet); in a packet that reports the target of an
//     uninferable discontinuity they mark the mispredicted return.
//   - The decoder takes the first return it meets at the depth irdepth
//     gives for the mispredicted one (as the specification's decoder
//     does). A return inferred at that same depth since the last
//     instruction the decoder stopped at (setjmp returning, then longjmp
//     at the same depth; or any two returns at a depth a full stack
//     saturates) would be taken for it, so the encoder then pins the
//     decoder on the mispredicted return itself with a sync packet
//     (preceded, when branch outcomes are unreported, by a format 0/1/2
//     packet reporting the instruction before it; an inferred return
//     needs none, as the sync's walk cannot reach that instruction in
//     another call, see below) and reports its target as that of an uninferable jump
//     from an empty stack. It does the same when the instruction after a
//     mispredicted return is reported with a sync packet (a privilege or
//     precise context change, a resynchronisation), whose walk would
//     infer the return. Stats.Anchors counts these sync packets.
//   - With the call counter variant of implicit return (call_counter_size_p)
//     the specification defines no report of a return that goes
//     elsewhere than after its call: "any program that modifies return
//     addresses cannot be traced using this mode". The encoder keeps the
//     return addresses it sees, resynchronises before every such return
//     as above (so the trace stays exact for any decoder) and counts
//     them: Stats.RetMisses, and Encoder.Warning says so. An encoder
//     that does not check (the specification's minimal counter) treats
//     such a return as inferable and the decoder follows the call site
//     until the trace disagrees with the program: in call counter mode a
//     gap found after a return was inferred since the last checkpoint
//     says that this may be the cause (its Suspect count covers the
//     instructions followed since).
//   - The decoder stops on a reported instruction the first time its path
//     reaches it with no branch outcome left (as the specification's
//     decoder does, and with irdepth when irreport is set). A path with
//     no branch can execute an instruction twice, through inferable jumps
//     (an idle loop "j ."), sequentially inferable jumps or implicit
//     returns (two calls of a branch-free function); the specification's
//     encoder gives no way to tell which execution a later packet (a
//     trap, the end of tracing, a resynchronisation, a notification)
//     reports. This encoder keeps the address ranges executed since the
//     decoder's last stopping point or the last branch, and before a
//     block that comes back into one of them it pins the instruction
//     before it with a sync packet (a resynchronisation, which the
//     specification lets an encoder send at any instruction; preceded as
//     above by a packet reporting the instruction before when branch
//     outcomes are unreported: the pinned instruction was not executed
//     since the decoder's last stopping point or the last branch, so the
//     sync's walk stops at the right execution whatever the call depth),
//     so no reported instruction is ever ambiguous. An idle
//     loop "j ." thus costs one sync packet an iteration (6 bytes with a
//     32-bit address; marking format 2 packets as notifications instead
//     would claim trigger[2] requests that never came, and costs 10). No
//     pin is needed when the instruction before is an uninferable jump
//     whose target is reported: the decoder stops at the first one. The
//     notify bit is set only for a notification the hart requested
//     (Gated.Notify).
//   - A resynchronisation (ResyncPeriod te_inst packets since the last
//     sync) is the specification's three-state sequence: when branches
//     or an inferred return are unreported, a format 0/1/2 packet reports
//     the current instruction first (its updiscon bit set if it reports
//     the target of an uninferable jump), and the sync packet reports the
//     next one.
//   - Sign-based compression is applied to every packet in full: the
//     decoder reports a payload whose last byte sign extension would
//     restore as malformed (a corrupted packet could otherwise pass as a
//     valid one of another flow).
//   - In the UTDD framing with a timestamp (Config.TimestampBytes), every
//     frame carries it (the encapsulation lets a frame omit it, with its
//     extend bit clear): the decoder reports a frame without it as a
//     framing error (a damaged extend bit would otherwise shift the
//     frame's payload onto its timestamp bytes and change a packet
//     without a word). A trace from an encoder that omits timestamps has
//     gaps at those frames.
//   - The support packet's ioptions field is 6 bits: implicit return,
//     implicit exception, full address, jump target cache, branch
//     prediction (the reference flow's order) and sequentially inferable
//     jumps.
//
// The 0.026 layout has no notify, updiscon, irreport, irdepth or thaddr
// fields and no optional-extension format. With it, the encoder sends a
// zero-length address-only packet after a packet that reports the target of
// an uninferable discontinuity and precedes a format 3 packet, synchronises
// on a notify request, before a mispredicted return and instead of the
// notification that pins the decoder on a branch-free path that comes
// back to an instruction (after an address packet, a later execution of
// the reported instruction itself counts as coming back, because the
// decoder may stop on a double report without moving), and does not emit
// branch counts or jump target cache indexes (those modes keep their state
// but have no effect on the packets).
package etrace
