// Package tracectl is the RISC-V Trace Control Interface (ratified 1.0)
// register model of a trace system: a trace encoder component per hart,
// a trace funnel and a trace RAM sink, each a 4 KiB block of 32-bit
// registers at the offsets of the specification's register map, with
// tr??Impl reporting the component type and version 1.0 so that a tool can
// discover them as the specification's "Reset and Discovery" section
// describes.
//
// One table per component (tables.go) carries the registers as the
// specification gives them: name, offset, and the fields with their bit
// ranges, access type (RW, RO, WARL, RW1C, W1) and reset value. The table
// drives reads, writes, WARL masking, reset and Dump; the few rules that
// tie one field's legal values to another's (the features of each trace
// format, trTeSrcID fitting trTeSrcBits, the RAM sink's addresses) are
// applied after the table's. Where the specification leaves a reset value
// undefined the table holds this implementation's choice. Registers that
// are not in a table read 0 and ignore writes.
//
// The encoder's registers select an N-Trace or E-Trace encoder
// (trTeFormat) and its configuration (Encoder.Settings maps them onto
// ntrace.Config, etrace.Config and filter.Config; E-Trace packets are
// framed in the Unformatted Trace & Diagnostic Data encapsulation, whose
// null packet pads the sink's last word as N-Trace's idle byte 0xFF does
// for N-Trace); setting trTeEnable
// starts that encoder, clearing it flushes it, and trTeInstTracing gates
// the hart's ingress blocks (Encoder.Block). Encoders write into the
// funnel, the funnel into the RAM sink, which stores 32-bit words in its
// SRAM or, in SMEM mode, in system memory. ReadTrace reads a capture back
// through the registers, as a tool does; RAMSink.Capture returns it
// directly. System places the components at their physical addresses:
// encoder of hart N at 0x0300_0000 + N*0x1000, funnel at 0x0301_8000, RAM
// sink at 0x0301_9000.
//
// A tool's side: Discover and DiscoverAt find the components, ReadTrace
// reads a sink's buffer through the registers, System.Stop and
// System.StopAndCapture stop the system and read it as a debugger does at
// the end of a run (a wrapped buffer from its first sync, FirstSync, with
// the bytes lost counted), RAMSink.DrainTo empties the buffer at each wrap
// so that nothing is lost, and a Script (ParseScript; the grammar is in
// Script's comment) is a debug probe's program of register writes, reads,
// checks and waits at instruction counts or symbols, run by a Probe on
// hart 0's ingress port between two blocks. System.SetBase moves the
// components.
//
// Timestamps: an encoder's unit counts its hart's clock (Internal Core)
// or shares the funnel's (Shared); the funnel's unit counts the system
// clock (Internal System), taken as the latest hart time its encoders
// have seen.
//
// Trace the funnel or the sink does not take is lost, never stalls the
// hart (trTeInstStallEna is tied to 0): it sets trTeInstStallOrOverflow,
// and the encoder then drops its output until it can send an in-band
// record of the loss (N-Trace Error message, E-Trace support packet with
// qual_status trace_lost) and restart, so decoders report the hole.
//
// Timestamp mode External: the encoder's timestamp is the time input of
// its hart's ingress port (the block's time) as it is.
//
// # The command line programs the registers
//
// rvtrace run --trace and rvtrace encode build each hart's encoder
// component (NewEncoder) and program it with Encoder.Configure, as a
// debugger writes the registers: every option that a register field holds
// is a register write, read back (a value the field does not keep is a
// *FieldError, reported naming the option, never changed silently), and
// the encoder is configured from the register state by Settings, exactly
// as when guest software writes the registers. What no register holds is
// an implementation parameter, fixed when silicon is built, given with
// Encoder.SetImpl (Impl). The options, by protocol (TCI: the Trace Control
// Interface specification; N: N-Trace 1.0; E: E-Trace 2.0):
//
//	option (rvtrace)          register field, or implementation parameter (Impl)    specification section
//	--trace ntrace|etrace     trTeControl.trTeFormat 1|0                            TCI Trace Encoder Control Interface
//	N --mode, --preset        trTeControl.trTeInstMode 3 (BTM) | 6 (HTM)            TCI trTeControl; N Main N-Trace Trace Modes
//	N --context, E --context  trTeControl.trTeContext (E: nocontext_p = !value)     TCI trTeControl; N Ownership Message
//	N --sync-mode             trTeControl.trTeInstSyncMode 0..3                     TCI trTeControl; N Synchronizing Messages
//	N --sync-max              trTeControl.trTeInstSyncMax 0..15                     TCI trTeControl
//	E --resync 2^(N+4)        trTeInstSyncMode 1 (packets), trTeInstSyncMax N       TCI trTeControl
//	--trigger                 trTeControl.trTeInstTrigEnable 1; the actions are     TCI Debug Trigger Module
//	                          the hart's Sdtrig triggers (Impl.Triggers)
//	N --seq-jump, E --sijump  trTeInstFeatures.trTeInstEnSequentialJump             TCI trTeInstFeatures; N Sequential Jump Optimization
//	N --implicit-return M     trTeInstEnImplicitReturn, trTeInstImplicitReturnMode  N Implicit Return Optimization
//	E --implicit-return       trTeInstEnImplicitReturn; counter or stack are the    E Implicit return mode; E Parameters and Discovery
//	                          parameters call_counter_size_p, return_stack_size_p
//	                          (Impl): trTeInstImplicitReturnMode reads 1 or 3
//	N --repeat                trTeInstFeatures.trTeInstEnRepeatedHistory            N Repeated History Optimization
//	N --all-jumps             trTeInstFeatures.trTeInstEnAllJumps                   TCI trTeInstFeatures
//	N --extend-addr-msb       trTeInstFeatures.trTeInstExtendAddrMSB                N Virtual Addresses Optimization
//	E --full-address          trTeInstFeatures.trTeInstNoAddrDiff                   E Full address mode
//	E --implicit-exception    trTeInstFeatures.trTeInstNoTrapAddr                   E Implicit exception mode
//	E --branch-prediction     trTeInstFeatures.trTeInstEnBranchPrediction           E Branch prediction mode
//	E --jump-target-cache     trTeInstFeatures.trTeInstEnJumpTargetCache            E Jump target cache mode
//	--src-bits, --src-id      trTeInstFeatures.trTeSrcBits 0..12, trTeSrcID         TCI trTeInstFeatures
//	N --timestamps,           trTsControl: trTsActive, trTsCount, trTsEnable,       TCI Timestamp Unit
//	E notime_p = 0            trTsMode External (the ingress port's time)
//	--filter                  trTeInstFilters, trTeFilter<i>*, trTeComp<j>*         TCI Trace Encoder Filter Registers
//	N --icnt-bits, --icnt-sync  Impl.NTrace ICNTBits, ICNTFullSync                  N I-CNT Details
//	N --hist-bits, --hrepeat-bits, --hist-patterns  Impl.NTrace                     N HIST Field Generation; Repeated History
//	N --repeat-branch         Impl.NTrace RepeatBranch                              N RepeatBranch Message
//	N --stack-depth, --partial-bits  Impl.NTrace StackDepth, PartialBits            N Implicit Return Optimization
//	N --indirect-nohist, --btype1, --start-sync  Impl.NTrace                        N Rules of Generating Messages
//	N --itype-width           Impl.NTrace ITypeWidth (the ingress port's width)     N Trace Ingress Port
//	N --fifo-bytes, --drain-* Impl.NTrace FIFOBytes, DrainBytes, DrainCycles        N Error Message (overflow)
//	E --etrace-version        Impl.ETrace Version (packet layout)                   E Change Log
//	E --config (but notime_p, nocontext_p)  Impl.ETrace Params                      E Parameters and Discovery
//	E --tvec                  Impl.ETrace Params.TVec (the hart's mtvec)            E Implicit exception mode
//	E --encap, --type-field,  Impl.ETrace Encap, TypeField, TimestampBytes          UTDD packet encapsulation
//	  --timestamp-bytes
//	E --te-inst-csv           Impl.OnPacket (an observation of the packets)         -
//	E --data-trace            Impl.ETrace.Data (the hart's data trace interface:    E Data Trace Interface
//	                          data_width_p, daddress_width_p, --data-protocol,
//	                          lrid_width_p, --data-src-id; of N harts the data
//	                          packets' ID is N + trTeSrcID); trTeDataTracing 1
//	E --data-fields addr|data trTeDataControl.trTeDataNoValue | trTeDataNoAddr    TCI trTeDataControl
//	E --data-compress=false   trTeDataControl.trTeDataAddrCompress 0 (else 2)     E Data Trace Encoder Output Packets
//	E --data-filter           trTeDataFilters, trTeFilter<i>* (MatchDtype),        TCI Trace Encoder Filter Registers
//	                          trTeComp<j>* (input daddr)
//
// E-Trace data trace is described in the comment at the top of data.go; System.SetTap
// records the funnel's output as well as the sink (rvtrace run -o with
// --trace-capture).
//
// Not modelled: N-Trace data trace (trTeDataImplemented reads 0 with the
// N-Trace format), data size filtering (trTeFilterMatchDsize), vendor
// debug trigger setup, external trigger inputs 1..7 and outputs, the PIB
// sink and the ATB bridge.
package tracectl
