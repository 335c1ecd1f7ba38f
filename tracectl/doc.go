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
// Not modelled: data trace (trTeData* read 0), the External timestamp mode,
// vendor debug trigger setup, external trigger inputs 1..7 and outputs,
// the PIB sink and the ATB bridge.
package tracectl
