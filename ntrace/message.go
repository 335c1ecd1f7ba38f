// Package ntrace implements RISC-V N-Trace 1.0 (Nexus IEEE-5001 based
// trace): the MSEO/MDO wire codec, every message of the specification
// described once as a table, the encoder fed by ingress-port blocks, the
// decoder that turns bytes plus the program image back into the
// instruction flow, and a dump.
//
// Layers, each usable alone:
//
//   - wire: Writer and Reader move Messages to and from bytes (chapter 3,
//     "N-Trace Transmission Protocol"), driven by the layout table in this
//     file. The dump uses only this layer.
//   - Encoder: ingress.Block in, Messages out (chapters 2 and 7-10).
//   - Decoder: Messages plus image.Set in, flow.Event out (chapter 11).
//
// What the decoder shares with the E-Trace decoder lives below both
// protocols, in package decode: the gap type decode.Error and its causes,
// decode.Tally (the suspect count of every gap), decode.ReturnStack (the
// implicit returns), the classification of uninferable jumps
// (decode.Uninferable), the sequential-jump inference (decode.SeqTarget)
// and the exits of a block (decode.Block.Exit); and in package
// decode/walk: the walker that holds the address space followed with its
// blocks (decode.Blocks) and the epochs of code overwritten, and builds
// the range, gap and warning events. What is N-Trace's own stays here:
// the walks an I-CNT field, HIST bits and sync messages ask for, the
// nesting counter, table jumps through jvt, and the checks of every
// message against the program.
//
// Everything here is written by hand: no maintained Go library implements
// N-Trace, and the specification's own reference code is C.
package ntrace

import (
	"fmt"
	"strings"
)

// TCode is the transfer code of a message: its first, 6-bit field.
type TCode uint8

// The TCODEs of N-Trace 1.0 (table "Fields in Messages").
const (
	TCodeOwnership              TCode = 2
	TCodeDirectBranch           TCode = 3
	TCodeIndirectBranch         TCode = 4
	TCodeError                  TCode = 8
	TCodeProgTraceSync          TCode = 9
	TCodeDirectBranchSync       TCode = 11
	TCodeIndirectBranchSync     TCode = 12
	TCodeResourceFull           TCode = 27
	TCodeIndirectBranchHist     TCode = 28
	TCodeIndirectBranchHistSync TCode = 29
	TCodeRepeatBranch           TCode = 30
	TCodeProgTraceCorrelation   TCode = 33
	// TCodeVendorFirst and TCodeVendorLast bound the vendor-defined codes.
	TCodeVendorFirst TCode = 56
	TCodeVendorLast  TCode = 62
)

// Field names a message field. The order of the constants is the order in
// which fields appear in a message (the specification keeps fields that
// several messages share in the same order).
type Field uint8

// Message fields.
const (
	FieldSRC     Field = iota // message source (trTeSrcBits wide)
	FieldSYNC                 // synchronisation reason [4]
	FieldBTYPE                // branch type [2]
	FieldETYPE                // error type [4]
	FieldRCODE                // resource code [4]
	FieldEVCODE               // correlation event code [4]
	FieldCDF                  // number of CDATA fields [2]
	FieldPROCESS              // Ownership PROCESS [Var]
	FieldECODE                // error code [Var]
	FieldRDATA                // resource data [Var]
	FieldHREPEAT              // history repeat count [Var], RCODE=2 only
	FieldBCNT                 // branch repeat count [Var]
	FieldICNT                 // instruction count in halfwords [Var]
	FieldFADDR                // full address >> 1 [Var]
	FieldUADDR                // XOR-compressed address >> 1 [Var]
	FieldHIST                 // branch history with stop bit [Var]
	FieldTSTAMP               // timestamp [Var], last field, optional
	NumFields                 // number of fields
)

var fieldNames = [NumFields]string{
	"SRC", "SYNC", "B-TYPE", "ETYPE", "RCODE", "EVCODE", "CDF", "PROCESS",
	"ECODE", "RDATA", "HREPEAT", "B-CNT", "I-CNT", "F-ADDR", "U-ADDR", "HIST", "TSTAMP",
}

// String returns the field's name as the specification writes it.
func (f Field) String() string {
	if f < NumFields {
		return fieldNames[f]
	}
	return fmt.Sprintf("field%d", uint8(f))
}

// IsAddress reports whether f is an address field (F-ADDR or U-ADDR),
// whose value is the address shifted right by one and which may be
// sign-extended under trTeInstExtendAddrMSB.
func (f Field) IsAddress() bool { return f == FieldFADDR || f == FieldUADDR }

// fieldSpec is one field in a message layout: Bits > 0 is a fixed-length
// field, Bits == 0 a variable-length one. When is a condition on fields
// already read (nil: always present).
type fieldSpec struct {
	F    Field
	Bits uint8
	When func(m *Message) bool
}

// layout describes one message type.
type layout struct {
	Name   string
	Fields []fieldSpec // after TCODE and SRC, before TSTAMP
}

func fixed(f Field, bits uint8) fieldSpec { return fieldSpec{F: f, Bits: bits} }
func variable(f Field) fieldSpec          { return fieldSpec{F: f} }

// The message table (N-Trace 1.0, "Fields in Messages" and the message
// detail tables). TCODE, the optional SRC and the optional TSTAMP are
// common to every message and not listed.
var layouts = [64]*layout{
	TCodeOwnership:      {"Ownership", []fieldSpec{variable(FieldPROCESS)}},
	TCodeDirectBranch:   {"DirectBranch", []fieldSpec{variable(FieldICNT)}},
	TCodeIndirectBranch: {"IndirectBranch", []fieldSpec{fixed(FieldBTYPE, 2), variable(FieldICNT), variable(FieldUADDR)}},
	TCodeError:          {"Error", []fieldSpec{fixed(FieldETYPE, 4), variable(FieldECODE)}},
	TCodeProgTraceSync:  {"ProgTraceSync", []fieldSpec{fixed(FieldSYNC, 4), variable(FieldICNT), variable(FieldFADDR)}},
	TCodeDirectBranchSync: {"DirectBranchSync", []fieldSpec{fixed(FieldSYNC, 4), variable(FieldICNT),
		variable(FieldFADDR)}},
	TCodeIndirectBranchSync: {"IndirectBranchSync", []fieldSpec{fixed(FieldSYNC, 4), fixed(FieldBTYPE, 2),
		variable(FieldICNT), variable(FieldFADDR)}},
	TCodeResourceFull: {"ResourceFull", []fieldSpec{fixed(FieldRCODE, 4), variable(FieldRDATA),
		{F: FieldHREPEAT, When: func(m *Message) bool { return m.Get(FieldRCODE) == RCodeHistRepeat }}}},
	TCodeIndirectBranchHist: {"IndirectBranchHist", []fieldSpec{fixed(FieldBTYPE, 2), variable(FieldICNT),
		variable(FieldUADDR), variable(FieldHIST)}},
	TCodeIndirectBranchHistSync: {"IndirectBranchHistSync", []fieldSpec{fixed(FieldSYNC, 4), fixed(FieldBTYPE, 2),
		variable(FieldICNT), variable(FieldFADDR), variable(FieldHIST)}},
	TCodeRepeatBranch: {"RepeatBranch", []fieldSpec{variable(FieldBCNT)}},
	TCodeProgTraceCorrelation: {"ProgTraceCorrelation", []fieldSpec{fixed(FieldEVCODE, 4), fixed(FieldCDF, 2),
		variable(FieldICNT), {F: FieldHIST, When: func(m *Message) bool { return m.Get(FieldCDF) == 1 }}}},
}

// String returns the message type's name ("IndirectBranchHist"), "Vendor56"
// for vendor codes and "Reserved12" for undefined ones.
func (t TCode) String() string {
	if int(t) < len(layouts) && layouts[t] != nil {
		return layouts[t].Name
	}
	if t >= TCodeVendorFirst && t <= TCodeVendorLast {
		return fmt.Sprintf("Vendor%d", uint8(t))
	}
	return fmt.Sprintf("Reserved%d", uint8(t))
}

// Known reports whether t is one of the standard messages of N-Trace 1.0.
func (t TCode) Known() bool { return int(t) < len(layouts) && layouts[t] != nil }

// IsSync reports whether messages of this type carry SYNC and F-ADDR.
func (t TCode) IsSync() bool {
	switch t {
	case TCodeProgTraceSync, TCodeDirectBranchSync, TCodeIndirectBranchSync, TCodeIndirectBranchHistSync:
		return true
	}
	return false
}

// B-TYPE values.
const (
	BTypeIndirect  = 0 // indirect jump, or a sync not related to execution
	BTypeTrap      = 1 // exception or interrupt
	BTypeException = 2 // exception (extension)
	BTypeInterrupt = 3 // interrupt (extension)
)

// RCODE values of ResourceFull.
const (
	RCodeICNT       = 0 // I-CNT full: RDATA is the I-CNT
	RCodeHist       = 1 // HIST full: RDATA is the HIST
	RCodeHistRepeat = 2 // HIST full and repeated HREPEAT times
)

// SYNC values (table "SYNC Field Values").
const (
	SyncExternalTrigger = 0
	SyncReset           = 1
	SyncPeriodic        = 2
	SyncDebugExit       = 3
	SyncICNTFull        = 4
	SyncTraceEnable     = 5
	SyncTraceEvent      = 6
	SyncFIFORestart     = 7
	SyncPowerUp         = 9
)

var syncNames = map[uint64]string{
	0: "external trigger", 1: "exit from reset", 2: "periodic", 3: "exit from debug",
	4: "I-CNT full", 5: "trace enable", 6: "trace event", 7: "restart after overflow",
	9: "exit from power-down",
}

// EVCODE values of ProgTraceCorrelation.
const (
	EVCodeDebug     = 0 // entry into debug mode
	EVCodeLowPower  = 1 // entry into low-power mode
	EVCodeDisabled  = 4 // program trace disabled
	EVCodeVendorMin = 8
)

var evcodeNames = map[uint64]string{0: "debug entry", 1: "low power", 4: "trace disabled"}

// ETYPE values of the Error message.
const (
	ETypeFIFOOverrun = 0
)

// Message is one decoded or to-be-encoded N-Trace message. Field values
// are held in V indexed by Field; Has records which fields are present.
// Address fields hold the field value (the address shifted right by one),
// after sign extension when the reader was told to extend.
type Message struct {
	TCode TCode
	Has   uint32 // bit f set when field f is present
	V     [NumFields]uint64
	// Offset is the byte offset of the message's first byte in the stream,
	// Size its length in bytes (set by the Reader and the Writer).
	Offset int64
	Size   int
	// Padded has bit f set when variable-length field f was read with
	// a redundant most significant chunk (zeros, or sign bits under
	// ExtendAddrMSB): a value an encoder writing the shortest form never
	// sends (set by the Reader).
	Padded uint32
	// Raw holds the 6-bit MDO values of the bytes after the first one of a
	// vendor or reserved message (SRC included); nil otherwise. From the
	// Reader it aliases the reader's buffer until the next call to Next.
	Raw []byte
}

// Reset clears m for reuse with a new TCODE.
func (m *Message) Reset(t TCode) {
	*m = Message{TCode: t}
}

// Set sets field f to v and marks it present.
func (m *Message) Set(f Field, v uint64) *Message {
	m.V[f] = v
	m.Has |= 1 << f
	return m
}

// Get returns the value of field f (0 when absent).
func (m *Message) Get(f Field) uint64 { return m.V[f] }

// Present reports whether field f is in the message.
func (m *Message) Present(f Field) bool { return m.Has&(1<<f) != 0 }

// String renders the message on one line: its name followed by every
// present field as NAME=value.
func (m *Message) String() string {
	var b strings.Builder
	b.WriteString(m.TCode.String())
	for f := Field(0); f < NumFields; f++ {
		if !m.Present(f) {
			continue
		}
		fmt.Fprintf(&b, " %s=%#x", f, m.V[f])
	}
	return b.String()
}
