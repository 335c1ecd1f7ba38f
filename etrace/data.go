package etrace

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"strings"

	"github.com/rvtrace/rvtrace/filter"
	"github.com/rvtrace/rvtrace/ingress"
)

// Data trace (E-Trace 2.0 chapters "Data Trace Interface" and "Data Trace
// Encoder Output Packets").
//
// The encoder takes the accesses of the unified data trace interface
// (ingress.Access, one per load, store or atomic, delivered before the
// ingress block of its instruction) and writes one data packet per access
// into the same byte stream as the te_inst packets, told apart by the
// framing: message type 3 in the raw framing (te_inst is 2), a source ID
// of its own in UTDD (DataConfig.SrcID), as the chapter suggests. The
// decoder side (DataJoiner) reads them back and gives every load and
// store instruction of the decoded flow its access.
//
// Decisions the specification leaves open, taken as follows:
//
//   - Both protocols are implemented (DataConfig.Split), and CSR packets
//     with DataConfig.CSR (datacsr.go says how). Atomics are supported,
//     so the format field is 3 bits.
//   - Split protocol: a load (lr included) is a split load request packet
//     (format 000/001 with lrid) when it retires and a split load data
//     packet (format 100) when its response comes; an atomic is a split
//     atomic packet (format 110 with lrid) and its load data comes in a
//     format 100 packet too: the table "Split atomic load data only" gives
//     that packet format 110, which the request packet has, with no field
//     to tell the two apart, so the load data packet, which names the
//     request by its lrid and repeats the size, serves both. Stores and
//     failed store-conditionals are unified packets (the interface has
//     their store data at retirement). The request's diff field is 1 bit
//     (0 full address, 1 differential address): it carries no data. The
//     split atomic's operand is the interface's sdata, the value stored
//     (the interface has no rs2, and the load data is not known yet).
//     With trTeDataNoAddr the request packets keep format, subtype, size,
//     lrid and (atomics) operand and drop diff and address, as the
//     data-only packets do; with trTeDataNoValue no load data packets are
//     written and atomic requests drop op_len and operand. A response
//     packet is written after its request packet, at the next ingress
//     block or at the end of the trace, whatever the te_inst packets do
//     meanwhile; the decoder holds the flow back from a load whose data
//     has not come yet. Address compression runs over requests and
//     stores (in packet order), value compression over stores and load
//     data packets (resp 01 XOR, 10 full, 11 difference; the first after
//     a synchronisation is full). A load data packet with resp 00 (error)
//     has no data field.
//   - Data packets of the accesses of an ingress block are written before
//     the te_inst packets the encoder writes for that block, so a decoder
//     has read the access of every instruction before any packet that
//     reports the instruction.
//   - Multi-access instructions: a Zcmp push or pop (one XLEN-bit access
//     per register of its list) and cbo.zero (eight doubleword stores, as
//     the simulator makes them; "any other future instructions with
//     similar characteristics") retire on the hart's interface once per
//     access, itype 0 but the last, as the section "Data Trace Interface
//     requirements" requires (sim.DataPort). The te_inst packets report
//     instructions executed and have no way to say that one retired
//     again, so the encoder component folds the retirements back into one
//     in front of its filters (ingress.Folder; an instruction is traced
//     or filtered whole), and the Encoder and DataEncoder take each
//     instruction once: feed them the interface through a Folder. The
//     instruction's data packets are consecutive, in the interface's
//     order, before the te_inst packets that report it, and the decoder
//     gives it as many accesses as its encoding makes (DataAccesses). A
//     trace is therefore the same bytes whether the hart retired the
//     instruction once (rvtrace before it followed the rule, or a hart
//     without data trace) or once per access; statistics count
//     instructions executed.
//   - Address compression (trTeDataAddrCompress): the address is the
//     difference to the previous address of an access of the same size
//     (of any kind), and the value the XOR with, or the difference to, the
//     previous value of the same size, whichever is shorter, else the full
//     value. The first packet of each size after a te_inst synchronisation
//     packet (format 3 subformat 0 or 1) is full (diff 00), as the
//     specification requires.
//   - The aligned formats (000, 010) are used when the address is aligned
//     to the size and so is the previous address it is reported against;
//     the difference is then shifted right by size. Otherwise the
//     unaligned format carries byte addresses or differences.
//   - Upper bytes of data and operand fields that sign extension restores
//     are dropped (data_len, op_len). In data-only packets the data field
//     is data_width_p bits, the value sign-extended from its size, and the
//     last field: sign-based compression trims it. Sign-based compression
//     applies to every data packet, as to te_inst packets.
//   - Atomics: operand is derived from the interface's load and store data
//     (the interface carries no rs2): the store data for swap, AND, OR, MIN
//     and MAX (op(load, store) = store for these), store-load for ADD and
//     store XOR load for XOR (both are rs2 exactly). data is the load data.
//     amomaxu and amominu are reported as max and min (the subtype table
//     has no unsigned codes; the decoder knows the instruction).
//   - CSR packets (datacsr.go): data is the value read from the CSR (its
//     value before the instruction, what rd receives) and operand rs1's
//     value or the uimm, as an atomic's data is the load data and its
//     operand rs2; the CSR operand field's section refers to the atomic
//     one (sec:csr-operand: "See sec:atomic-operand"), and the read-only
//     layout is "with address and read-only data", the data read. The
//     interface chapter's "Atomic and CSR accesses have either both load
//     and store data, or store data and an operand. For CSRs and unified
//     atomics, both values are reported via data, with the store data in
//     the LSBs and the load data or operand in the MSBs" is read as the
//     interface's data bus, not the packet's fields: taking the store
//     data as the packet's data would carry, for a csrrw, the same value
//     twice (store data = rs1 = operand) and lose the value read, which
//     nothing else recovers, whereas the value written follows from the
//     value read and the operand (op(read, operand) for RW, RS and RC, up
//     to WARL legalisation). The interface here (ingress.Access) carries
//     the value read in the store data's place (SData, the LSBs of the
//     data CSV's data) and the operand in the MSBs (Data).
//   - A failed store-conditional is an atomic packet with subtype 111
//     (the address-only table's "conditional store failure") in the
//     address-only layout (diff, address) when addresses are traced, and
//     with nothing after size in data-only mode.
//   - doptions in the support packet, 5 bits: bit 0 no data
//     (trTeDataNoValue), bit 1 no address (trTeDataNoAddr), bit 2 address
//     compression (trTeDataAddrCompress), bit 3 split protocol (which the
//     specification makes a discoverable parameter: the request packets
//     share their format codes with unified loads), bit 4 CSR accesses
//     traced (datacsr.go says why it is a run-time option and what the
//     fifth bit does to earlier traces); denable is 1.

// DataFields selects what data packets carry (the trTeDataNoValue and
// trTeDataNoAddr controls).
type DataFields uint8

// Data packet contents.
const (
	DataAddrValue DataFields = iota // address and data (the default)
	DataAddrOnly                    // address only (trTeDataNoValue)
	DataValueOnly                   // data only (trTeDataNoAddr)
)

// String returns "addr,data", "addr" or "data".
func (f DataFields) String() string {
	switch f {
	case DataAddrOnly:
		return "addr"
	case DataValueOnly:
		return "data"
	}
	return "addr,data"
}

// ParseDataFields parses "addr,data" (or "data,addr"), "addr" or "data".
func ParseDataFields(s string) (DataFields, error) {
	switch strings.ReplaceAll(strings.TrimSpace(s), " ", "") {
	case "addr,data", "data,addr", "":
		return DataAddrValue, nil
	case "addr":
		return DataAddrOnly, nil
	case "data":
		return DataValueOnly, nil
	}
	return 0, fmt.Errorf("etrace: data fields %q: want addr,data, addr or data", s)
}

// DataConfig configures data trace. Encoder and decoder must agree.
type DataConfig struct {
	Fields DataFields
	// NoCompress turns address and data compression off
	// (trTeDataAddrCompress = 0): every packet is full (diff 00).
	NoCompress bool
	// DataWidth is data_width_p (32, 64 or 128; 0 means 64).
	DataWidth int
	// DAddressWidth is daddress_width_p (0 means iaddress_width_p).
	DAddressWidth int
	// SrcID is the UTDD source ID of data packets (it must differ from
	// Config.SrcID); unused in the raw framing.
	SrcID uint32
	// Harts, when 2 or more, makes the trace one of several harts
	// (multidata.go): hart h's instruction packets carry source ID h
	// (Config.SrcID) and its data packets Harts + h (SrcID). 0 or 1: one
	// source, SrcID as given.
	Harts int
	// Split selects the split protocol: loads and atomics come as a
	// request (ingress.Access with Split set) and a later response
	// (ingress.LoadResponse), traced as split request and load data
	// packets.
	Split bool
	// LRIDWidth is lrid_width_p, the width of the lrid field of split
	// packets (1..16; 0 means 3).
	LRIDWidth int
	// CSR traces CSR accesses (dtype 4..6, one per retired Zicsr
	// instruction) in format 101 packets (datacsr.go). An encoder
	// announces it in the support packet (doptions bit 4), and a decoder
	// (DataJoiner, Dump) follows what each support packet announces;
	// set for a decoder, it makes it expect CSR packets whatever
	// doptions say (an override, for traces whose support packet does
	// not announce them).
	CSR bool
	// CSRWidth is the width of the hart's CSRs, 32 or 64 bits (data_len
	// and op_len are 2 or 3 bits); 0 means DataWidth. It is a hardware
	// parameter: a decoder reads the CSR packets that doptions announce
	// with it, whether CSR is set or not.
	CSRWidth int
	// Filter holds the data filters the trace was made with (its
	// DataFilters; see filter.Config.ParseData). The encoder does not use
	// it (the filter stage in front of it does); a DataJoiner expects an
	// access only of the memory instructions they let through, and with a
	// data address filter, which it cannot evaluate, it sends the
	// accesses without their instructions.
	Filter *filter.Config
}

// ParseDataProtocol parses "unified" or "split" (whether
// DataConfig.Split is set).
func ParseDataProtocol(s string) (split bool, err error) {
	switch strings.TrimSpace(s) {
	case "unified", "":
		return false, nil
	case "split":
		return true, nil
	}
	return false, fmt.Errorf("etrace: data protocol %q: want unified or split", s)
}

// doptions bits of the support packet, and the field's width.
const (
	doptNoValue  = 1 << 0
	doptNoAddr   = 1 << 1
	doptCompress = 1 << 2
	doptSplit    = 1 << 3
	doptCSR      = 1 << 4
	doptionBits  = 5
)

// DOptions returns the doptions field of the support packet.
func (d *DataConfig) DOptions() uint8 {
	var v uint8
	switch d.Fields {
	case DataAddrOnly:
		v |= doptNoValue
	case DataValueOnly:
		v |= doptNoAddr
	}
	if !d.NoCompress {
		v |= doptCompress
	}
	if d.Split {
		v |= doptSplit
	}
	if d.CSR {
		v |= doptCSR
	}
	return v
}

// doptString describes doptions bits.
func doptString(v uint8) string {
	f := DataAddrValue
	switch {
	case v&doptNoValue != 0 && v&doptNoAddr != 0:
		return "no address and no data"
	case v&doptNoValue != 0:
		f = DataAddrOnly
	case v&doptNoAddr != 0:
		f = DataValueOnly
	}
	s := f.String()
	if v&doptCompress == 0 {
		s += ", no compression"
	}
	if v&doptSplit != 0 {
		s += ", split protocol"
	} else {
		s += ", unified protocol"
	}
	if v&doptCSR != 0 {
		s += ", CSR accesses"
	}
	return s
}

// msgData is the raw framing's message type of data packets.
const msgData = 3

// checkData validates the data trace configuration of c.
func (c *Config) checkData() error {
	d := c.Data
	if d == nil {
		return nil
	}
	if c.Version != V2 {
		return fmt.Errorf("etrace: data trace needs E-Trace 2.0")
	}
	if d.DataWidth == 0 {
		d.DataWidth = 64
	}
	if d.DAddressWidth == 0 {
		d.DAddressWidth = c.Params.IAddressWidth
	}
	if d.DataWidth != 32 && d.DataWidth != 64 {
		return fmt.Errorf("etrace: data_width_p %d: 32 or 64 supported", d.DataWidth)
	}
	if d.DAddressWidth < 2 || d.DAddressWidth > 64 {
		return fmt.Errorf("etrace: daddress_width_p %d out of range 2..64", d.DAddressWidth)
	}
	if d.Fields > DataValueOnly {
		return fmt.Errorf("etrace: data fields %d", d.Fields)
	}
	if d.CSRWidth == 0 {
		d.CSRWidth = d.DataWidth
	}
	if d.CSRWidth != 32 && d.CSRWidth != 64 {
		return fmt.Errorf("etrace: CSR width %d: 32 or 64", d.CSRWidth)
	}
	if d.CSR && d.Fields == DataValueOnly {
		return fmt.Errorf("etrace: CSR data trace without addresses: the specification defines no CSR packet without the CSR number (trTeDataNoAddr)")
	}
	if d.Split && d.LRIDWidth == 0 {
		d.LRIDWidth = 3
	}
	if d.Split && (d.LRIDWidth < 1 || d.LRIDWidth > 16) {
		return fmt.Errorf("etrace: lrid_width_p %d out of range 1..16", d.LRIDWidth)
	}
	if err := d.checkHarts(c); err != nil {
		return err
	}
	if c.Encap == EncapUTDD {
		if c.SrcBits == 0 {
			return fmt.Errorf("etrace: data trace in UTDD framing needs a source ID field (trTeSrcBits > 0) to tell data packets from te_inst packets")
		}
		if uint64(d.SrcID)&^mask(c.SrcBits) != 0 || d.SrcID == c.SrcID {
			return fmt.Errorf("etrace: data source ID %d must fit %d bits and differ from the instruction trace's %d", d.SrcID, c.SrcBits, c.SrcID)
		}
	}
	return nil
}

// Data packet formats (the 3-bit format field).
const (
	DFmtLoadAligned    = 0 // unified load, aligned address
	DFmtLoadUnaligned  = 1 // unified load, unaligned address
	DFmtStoreAligned   = 2 // store, aligned address
	DFmtStoreUnaligned = 3 // store, unaligned address
	DFmtSplitData      = 4 // split load data (the response)
	DFmtCSR            = 5 // CSR (datacsr.go)
	DFmtAtomic         = 6 // unified atomic
	DFmtReserved       = 7
)

// Atomic subtypes, indexed by dtype - 8; subtype 7 is the conditional
// store failure.
const dsubSCFail = 7

// DataPacket is one data trace packet, its fields as the tables name
// them.
type DataPacket struct {
	Format  uint8
	Subtype uint8 // atomics, CSR
	Size    uint8
	LRID    uint32 // split requests and load data
	Resp    uint8  // split load data
	Diff    uint8
	DataLen uint8
	OpLen   uint8
	Data    uint64
	Operand uint64
	Address uint64 // CSR packets: the CSR number, addr_msbs and addr_lsbs
}

// dataCodec writes and reads data packets for one configuration.
type dataCodec struct {
	fields    DataFields
	split     bool
	lridw     int
	sizeBits  int
	dataWidth int
	daw       int
	bw        bitWriter
	dr        dataReader
	lay       [16]dlayout
	// fast: decodeFast applies (unified, address and data)
	fast    bool
	dawMask uint64     // mask(daw)
	heads   []fastHead // decodeFast's table, indexed by the first bits
	hbits   uint
	hmask   uint64 // 1<<hbits - 1
	// CSR packets: whether they are traced (DataConfig.CSR for an
	// encoder; for a decoder, what the last support packet announced, or
	// DataConfig.CSR, csrForce, set), their size (log2 of the CSR width
	// in bytes) and the width of data_len and op_len
	csr        bool
	csrForce   bool
	csrSize    uint8
	csrLenBits int
}

func clog2(n int) int {
	b := 0
	for 1<<b < n {
		b++
	}
	return b
}

func newDataCodec(d *DataConfig) *dataCodec {
	c := &dataCodec{
		fields:    d.Fields,
		split:     d.Split,
		lridw:     d.LRIDWidth,
		sizeBits:  max(1, clog2(clog2(d.DataWidth/8+1))),
		dataWidth: d.DataWidth,
		daw:       d.DAddressWidth,
		fast:      d.Fields == DataAddrValue && !d.Split,
		dawMask:   mask(d.DAddressWidth),
		csr:       d.CSR,
		csrForce:  d.CSR,
	}
	w := d.CSRWidth
	if w == 0 {
		w = d.DataWidth
	}
	c.csrSize = uint8(clog2(w / 8))
	c.csrLenBits = int(c.csrSize)
	for f := uint8(0); f < 8; f++ {
		c.lay[f] = c.makeLayout(f, 0)
		c.lay[8+f] = c.makeLayout(DFmtAtomic, f)
	}
	if c.fast {
		c.makeHeads()
		c.hmask = 1<<c.hbits - 1
	}
	return c
}

// layout of a packet, from its format, subtype and the configuration:
// which fields follow size.
type dlayout struct {
	diff    int  // diff field width
	operand bool // op_len, operand
	dataLen bool // data_len, data of 8*(data_len+1) bits
	dataW   bool // data of data_width_p bits
	address bool
}

func (c *dataCodec) layout(format, subtype uint8) dlayout {
	if format == DFmtAtomic {
		return c.lay[8+subtype&7]
	}
	return c.lay[format&7]
}

// makeLayout computes layout (lay[format] for the formats other than
// atomic, lay[8+subtype] for atomics).
func (c *dataCodec) makeLayout(format, subtype uint8) dlayout {
	atomic := format == DFmtAtomic
	if atomic && subtype == dsubSCFail {
		if c.fields == DataValueOnly {
			return dlayout{}
		}
		return dlayout{diff: 1, address: true}
	}
	switch c.fields {
	case DataAddrOnly:
		return dlayout{diff: 1, address: true}
	case DataValueOnly:
		return dlayout{diff: 2, operand: atomic, dataW: true}
	}
	return dlayout{diff: 2, operand: atomic, dataLen: true, address: true}
}

// isSplit reports whether packets of this format and subtype are split
// request or load data packets.
func (c *dataCodec) isSplit(format, subtype uint8) bool {
	return c.split && (format <= DFmtLoadUnaligned || format == DFmtSplitData || format == DFmtAtomic && subtype != dsubSCFail)
}

// append encodes p, sign-compressed, to dst.
func (c *dataCodec) append(dst []byte, p *DataPacket) []byte {
	if p.Format == DFmtCSR {
		return c.appendCSR(dst, p)
	}
	b := &c.bw
	b.reset()
	b.put(uint64(p.Format), 3)
	if p.Format == DFmtAtomic {
		b.put(uint64(p.Subtype), 3)
	}
	b.put(uint64(p.Size), c.sizeBits)
	if c.isSplit(p.Format, p.Subtype) {
		c.putSplit(p)
		return b.bytes(dst)
	}
	l := c.layout(p.Format, p.Subtype)
	b.put(uint64(p.Diff), l.diff)
	if l.operand {
		b.put(uint64(p.OpLen), int(p.Size))
		b.put(p.Operand, 8*(int(p.OpLen)+1))
	}
	if l.dataLen {
		b.put(uint64(p.DataLen), int(p.Size))
		b.put(p.Data, 8*(int(p.DataLen)+1))
	}
	if l.dataW {
		b.put(p.Data, c.dataWidth)
	}
	if l.address {
		b.put(p.Address, c.daw)
	}
	return b.bytes(dst)
}

// parse decodes a data packet payload into p.
func (c *dataCodec) parse(payload []byte, p *DataPacket) error {
	if len(payload) == 0 || len(payload) > maxPayload {
		return fmt.Errorf("data packet of %d bytes", len(payload))
	}
	r := &c.dr
	r.load(payload)
	p.Format = uint8(r.get(3))
	p.Subtype, p.OpLen, p.Operand, p.DataLen, p.Data, p.Address = 0, 0, 0, 0, 0, 0
	switch p.Format {
	case DFmtLoadAligned, DFmtLoadUnaligned, DFmtStoreAligned, DFmtStoreUnaligned:
	case DFmtAtomic:
		p.Subtype = uint8(r.get(3))
	case DFmtSplitData:
		if !c.split {
			return fmt.Errorf("split load data packet (format 100) in a unified trace")
		}
	case DFmtCSR:
		return c.parseCSR(payload, p)
	default:
		return fmt.Errorf("reserved data packet format 111")
	}
	p.Size = uint8(r.get(c.sizeBits))
	if 8<<p.Size > c.dataWidth {
		return fmt.Errorf("size %d wider than data_width_p %d", p.Size, c.dataWidth)
	}
	p.LRID, p.Resp, p.Diff = 0, 0, 0
	if c.isSplit(p.Format, p.Subtype) {
		if err := c.getSplit(p); err != nil {
			return err
		}
		return c.parseEnd(payload)
	}
	l := c.layout(p.Format, p.Subtype)
	p.Diff = uint8(r.get(l.diff))
	if l.diff == 2 && c.fields == DataValueOnly && p.Diff == 2 {
		return fmt.Errorf("reserved diff 10 in a data-only packet")
	}
	if l.operand {
		p.OpLen = uint8(r.get(int(p.Size)))
		p.Operand = r.get(8 * (int(p.OpLen) + 1))
	}
	if l.dataLen {
		p.DataLen = uint8(r.get(int(p.Size)))
		p.Data = r.get(8 * (int(p.DataLen) + 1))
	}
	if l.dataW {
		p.Data = r.get(c.dataWidth)
	}
	if l.address {
		p.Address = r.get(c.daw)
	}
	return c.parseEnd(payload)
}

// parseEnd checks what follows the last field of a packet read.
func (c *dataCodec) parseEnd(payload []byte) error {
	r := &c.dr
	if r.pos < r.n-8 {
		return fmt.Errorf("%d bytes after the last field", (r.n-r.pos)/8)
	}
	if r.pos < r.n && !r.padOK() {
		return fmt.Errorf("padding bits after the last field are not its sign")
	}
	if overlong(payload) {
		return fmt.Errorf("payload of %d bytes not fully sign-compressed", len(payload))
	}
	return nil
}

// dataReader reads the fields of a data packet payload (at most 31
// bytes), sign-extended past its end: the longest packet (an atomic with
// address and data, 64-bit values) is 208 bits, so 5 words of the
// payload and its sign cover every read.
type dataReader struct {
	w   [5]uint64
	n   int // payload bits
	pos int
}

func (r *dataReader) load(p []byte) {
	n := len(p)
	var fill uint64
	if p[n-1]&0x80 != 0 {
		fill = ^uint64(0)
	}
	for i := range r.w {
		switch s := 8 * i; {
		case s >= n:
			r.w[i] = fill
		case s+8 <= n:
			r.w[i] = binary.LittleEndian.Uint64(p[s:])
		default:
			var t [8]byte
			copy(t[:], p[s:])
			r.w[i] = binary.LittleEndian.Uint64(t[:]) | fill<<(8*uint(n-s))
		}
	}
	r.n, r.pos = 8*n, 0
}

// bit returns bit i of the sign-extended payload (i < 320).
func (r *dataReader) bit(i int) uint64 { return r.w[i>>6] >> uint(i&63) & 1 }

// padOK reports whether the bits from the read position to the end of the
// payload repeat the last bit read, as sign extension writes them.
func (r *dataReader) padOK() bool {
	s := r.bit(r.pos - 1)
	for i := r.pos; i < r.n; i++ {
		if r.bit(i) != s {
			return false
		}
	}
	return true
}

// get reads width (0..64) bits.
func (r *dataReader) get(width int) uint64 {
	i, o := r.pos>>6, uint(r.pos&63)
	r.pos += width
	if i >= len(r.w)-1 {
		return 0 // beyond every layout: parse reports the bytes left
	}
	v := r.w[i] >> o
	if o != 0 {
		v |= r.w[i+1] << (64 - o)
	}
	return v & mask(width)
}

// dataState is the compression state of one side (encoder or decoder):
// per access size, the previous address and value, valid since the last
// synchronisation.
//
// In a split trace, aval and vval tell whether the address and the value
// are known (requests make only the address known, load data packets
// only the value); valid is set from them for each unified packet (see
// splitPre).
type dataState struct {
	valid [4]bool
	aval  [4]bool
	vval  [4]bool
	addr  [4]uint64
	val   [4]uint64
	// CSR packets: the data of the previous one, valid since the last
	// synchronisation
	csrValid bool
	csrVal   uint64
}

func (s *dataState) reset() { *s = dataState{} }

// sext sign-extends the low bits of v.
func sext(v uint64, bits int) uint64 {
	if bits >= 64 {
		return v
	}
	s := uint(64 - bits)
	return uint64(int64(v<<s) >> s)
}

// byteLen returns the number of low bytes of v (a value of 2^size bytes)
// from which sign extension restores v: data_len + 1.
func byteLen(v uint64, size uint8) int {
	n := 1 << size
	s := int64(sext(v, 8*n))
	if s < 0 {
		s = ^s
	}
	// the significant bits and a sign bit, in whole bytes
	k := (bits.Len64(uint64(s)) + 8) / 8
	return min(k, n)
}

// sizeMask masks a value to 2^size bytes.
func sizeMask(size uint8) uint64 { return mask(8 << size) }

// encodeAccess fills p for access a and updates the state.
func (c *dataCodec) encodeAccess(s *dataState, a *ingress.Access, compress bool, p *DataPacket) {
	if a.DType.IsCSR() {
		c.encodeCSR(s, a, compress, p)
		return
	}
	z := a.DSize & 3
	*p = DataPacket{Size: z}
	m := sizeMask(z)
	if c.split {
		c.splitPre(s, z)
		defer c.splitPost(s, z)
	}
	full := !compress || !s.valid[z]
	prevAddr, prevVal := s.addr[z], s.val[z]
	align := uint64(1)<<z - 1
	if (a.DType.IsAtomic() || a.DType == ingress.DTypeSCFail) && prevAddr&align != 0 && c.fields != DataValueOnly {
		// an atomic's address is encoded aligned: it cannot be a
		// difference to an unaligned one
		full = true
	}
	aligned := a.DAddr&align == 0 && (full || prevAddr&align == 0)

	store := a.DType == ingress.DTypeStore
	switch {
	case a.DType.IsAtomic() || a.DType == ingress.DTypeSCFail:
		p.Format = DFmtAtomic
		if a.DType == ingress.DTypeSCFail {
			p.Subtype = dsubSCFail
		} else {
			p.Subtype = uint8(a.DType - ingress.DTypeAtomicSwp)
		}
	case store && aligned:
		p.Format = DFmtStoreAligned
	case store:
		p.Format = DFmtStoreUnaligned
	case aligned:
		p.Format = DFmtLoadAligned
	default:
		p.Format = DFmtLoadUnaligned
	}
	if p.Format == DFmtAtomic {
		// atomics are aligned (the interface guarantees it; the
		// encoder checked)
		aligned = true
	}
	l := c.layout(p.Format, p.Subtype)

	// address
	if l.address {
		daw := mask(c.daw)
		switch {
		case full:
			p.Address = a.DAddr & daw
		default:
			p.Address = (a.DAddr - prevAddr) & daw
		}
		if aligned {
			if full {
				p.Address >>= z
			} else {
				p.Address = uint64(int64(a.DAddr-prevAddr)>>z) & daw
			}
		}
	}

	// data
	val := a.Data & m
	hasVal := l.dataLen || l.dataW
	diff := uint8(0)
	if hasVal && !full && p.Subtype != dsubSCFail {
		// the shortest of full, XOR and difference
		best, bl := val, byteLen(val, z)
		diff = 2
		if x := (val ^ prevVal) & m; byteLen(x, z) < bl {
			best, bl, diff = x, byteLen(x, z), 1
		}
		if d := (val - prevVal) & m; byteLen(d, z) < bl {
			best, diff = d, 3
		}
		val = best
	}
	switch {
	case l.diff == 1:
		if !full {
			p.Diff = 1
		}
	case c.fields == DataValueOnly:
		// 00 full, 01 XOR, 11 difference
		if diff == 2 {
			diff = 0
		}
		p.Diff = diff
	default:
		// 00 full (sync), 01 XOR, 10 full data, 11 difference
		if !full {
			p.Diff = diff
		}
	}
	if l.operand {
		op := a.SData & m
		switch a.DType {
		case ingress.DTypeAtomicAdd:
			op = (a.SData - a.Data) & m
		case ingress.DTypeAtomicXor:
			op = (a.SData ^ a.Data) & m
		}
		p.OpLen = uint8(byteLen(op, z) - 1)
		p.Operand = op & mask(8*(int(p.OpLen)+1))
	}
	if l.dataLen {
		p.DataLen = uint8(byteLen(val, z) - 1)
		p.Data = val & mask(8*(int(p.DataLen)+1))
	}
	if l.dataW {
		p.Data = sext(val, 8<<z) & mask(c.dataWidth)
	}
	// state: a failed store-conditional carries no data, so the next
	// packet of its size is still full if this one was
	if p.Subtype != dsubSCFail || p.Format != DFmtAtomic {
		s.valid[z] = true
	}
	if l.address {
		s.addr[z] = a.DAddr
	}
	if hasVal {
		s.val[z] = a.Data & m
	}
}

// decodeAccess rebuilds access a from packet p and updates the state. The
// instruction address is not set. has tells which fields the packet
// carried (flow.AccessAddr, flow.AccessData).
func (c *dataCodec) decodeAccess(s *dataState, p *DataPacket, a *ingress.Access) error {
	if p.Format == DFmtCSR {
		return c.decodeCSR(s, p, a)
	}
	z := p.Size
	m := sizeMask(z)
	*a = ingress.Access{DSize: z}
	if c.split {
		c.splitPre(s, z)
		defer c.splitPost(s, z)
	}
	switch p.Format {
	case DFmtLoadAligned, DFmtLoadUnaligned:
		a.DType = ingress.DTypeLoad
	case DFmtStoreAligned, DFmtStoreUnaligned:
		a.DType = ingress.DTypeStore
	case DFmtAtomic:
		if p.Subtype == dsubSCFail {
			a.DType = ingress.DTypeSCFail
		} else {
			a.DType = ingress.DTypeAtomicSwp + ingress.DType(p.Subtype)
		}
	}
	l := c.layout(p.Format, p.Subtype)
	full := p.Diff == 0
	if !full && !s.valid[z] {
		return fmt.Errorf("compressed data packet (diff %d) with no earlier access of size %d since the last synchronisation", p.Diff, 1<<z)
	}
	if l.address {
		aligned := p.Format == DFmtLoadAligned || p.Format == DFmtStoreAligned || p.Format == DFmtAtomic
		v := p.Address
		if full {
			if aligned {
				v <<= z
			}
		} else {
			d := sext(v, c.daw)
			if aligned {
				d <<= z
			}
			v = s.addr[z] + d
		}
		a.DAddr = v & mask(c.daw)
		s.addr[z] = a.DAddr
	}
	if l.dataLen || l.dataW {
		var raw uint64
		if l.dataLen {
			raw = sext(p.Data, 8*(int(p.DataLen)+1)) & m
			if byteLen(raw, z) != int(p.DataLen)+1 {
				return fmt.Errorf("data_len %d where %d bytes restore the value", p.DataLen, byteLen(raw, z))
			}
		} else {
			raw = p.Data & m
			if sext(raw, 8<<z)&mask(c.dataWidth) != p.Data {
				return fmt.Errorf("data field %#x is not a %d-byte value sign-extended", p.Data, 1<<z)
			}
		}
		code := p.Diff
		if l.dataW && code == 0 || full {
			code = 2
		}
		switch code {
		case 1:
			raw = (raw ^ s.val[z]) & m
		case 3:
			raw = (raw + s.val[z]) & m
		}
		a.Data = raw
		s.val[z] = raw
	}
	if l.operand {
		op := sext(p.Operand, 8*(int(p.OpLen)+1)) & m
		if byteLen(op, z) != int(p.OpLen)+1 {
			return fmt.Errorf("op_len %d where %d bytes restore the operand", p.OpLen, byteLen(op, z))
		}
		switch a.DType {
		case ingress.DTypeAtomicAdd:
			a.SData = (a.Data + op) & m
		case ingress.DTypeAtomicXor:
			a.SData = (a.Data ^ op) & m
		default:
			a.SData = op
		}
	}
	if p.Subtype != dsubSCFail || p.Format != DFmtAtomic {
		s.valid[z] = true
	}
	return nil
}

// decodeFrame decodes a data packet payload into access a (without its
// instruction address), as parse and decodeAccess do, with a fast path
// for the common packets: loads and stores of at most 8 bytes.
func (c *dataCodec) decodeFrame(payload []byte, s *dataState, a *ingress.Access, p *DataPacket) error {
	if c.fast && c.decodeFast(payload, s, a) {
		return nil
	}
	// atomics and split/CSR/reserved formats (format bit 2 set), long
	// packets, other options, and every packet the fast path refuses
	// (the generic path says why)
	if err := c.parse(payload, p); err != nil {
		return err
	}
	return c.decodeAccess(s, p, a)
}

// fastHead is what the first bits of a unified load or store packet with
// address and data (format, size, diff, data_len: 10 bits at most) say
// of its layout; dataCodec.heads holds one per value of those bits.
// Shift counts are for the payload word sign-extended from its last bit.
type fastHead struct {
	ok    bool  // a load or store (format 0..3) of a size data_width_p holds
	z     uint8 // size
	diff  uint8
	dlsh  uint8 // data: the word shifted left by dlsh, then right (arithmetic) by drsh
	drsh  uint8
	tsh   uint8 // data's top byte and the bit below: from bit (data bits - 9) & 63
	minOK uint8 // 2 when data_len is 0 (always the shortest)
	ash   uint8 // address: the word shifted right (arithmetic) by min(position, 63)
	endsh uint8 // min(end of the address - 1, 63)
	shift uint8 // address unit: size for the aligned formats, else 0
	cm    uint8 // 1: the address is a difference (diff != 0)
	pm    uint8 // 1: the data is compressed against the previous value (diff 01, 11)
	am    uint8 // 1: the data is a difference (diff 11), else an XOR
	dtype ingress.DType
	_     [2]uint8 // 16 bytes: the table index is a shift
}

// makeHeads fills c.heads (for decodeFast).
func (c *dataCodec) makeHeads() {
	sb := uint(c.sizeBits)
	maxZ := uint(1)<<sb - 1
	c.hbits = 3 + sb + 2 + maxZ
	c.heads = make([]fastHead, 1<<c.hbits)
	for i := range c.heads {
		v := uint(i)
		format := uint8(v & 7)
		z := uint8(v >> 3 & (1<<sb - 1))
		if format > DFmtStoreUnaligned || z > 3 || 8<<z > c.dataWidth {
			continue
		}
		h := &c.heads[i]
		h.ok, h.z = true, z
		diff := uint8(v >> (3 + sb) & 3)
		h.diff = diff
		dl := uint(v >> (5 + sb) & (1<<z - 1))
		dbits := 8 * (dl + 1)
		dpos := 5 + sb + uint(z)
		apos := dpos + dbits
		end := apos + uint(c.daw)
		if dpos+dbits <= 64 {
			h.dlsh = uint8(64 - dpos - dbits)
			h.drsh = uint8(64 - dbits)
		} else {
			// the top of data is past the word: sign
			h.drsh = uint8(dpos)
		}
		h.tsh = uint8((dbits - 9) & 63)
		if dl == 0 {
			h.minOK = 2
		}
		h.ash = uint8(min(apos, 63))
		h.endsh = uint8(min(end-1, 63))
		if format&1 == 0 {
			h.shift = z
		}
		h.cm = (diff | diff>>1) & 1
		h.pm = diff & 1
		h.am = diff & (diff >> 1) & 1
		h.dtype = ingress.DTypeLoad
		if format >= DFmtStoreAligned {
			h.dtype = ingress.DTypeStore
		}
	}
}

// decodeFast decodes a unified load or store packet of at most 8 bytes
// with address and data into a, reading the fields straight from one
// word of the payload through the table of headers. It reports false,
// with s and a untouched, for any other packet and for any packet parse
// or decodeAccess would refuse (FuzzDataPacket and TestDataDecodeFrame
// check that both paths agree). The branches it takes depend on faults,
// not on the values: masks select full or compressed fields.
func (c *dataCodec) decodeFast(payload []byte, s *dataState, a *ingress.Access) bool {
	n := uint(len(payload))
	if n-1 >= 8 {
		// 1..8 bytes
		return false
	}
	// the payload in one word, sign-extended from its last bit as the
	// packet's fields are
	var w uint64
	if cap(payload) >= 8 {
		// one load of the 8 bytes from the payload on (the bytes
		// after it are replaced by the sign): no copy through memory
		w = binary.LittleEndian.Uint64(payload[:8:8])
	} else {
		var t [8]byte
		copy(t[:], payload)
		w = binary.LittleEndian.Uint64(t[:])
	}
	nb := 8 * n
	sh := (64 - nb) & 63
	sw := int64(w<<sh) >> sh
	// Every byte sign extension restores is dropped: the last byte and
	// the top bit of the one before are not all sign (the shift gives 0
	// or -1 when they are). (A one-byte packet, all sign past its byte,
	// is the shortest: a load or store repeated with the same address
	// and value.)
	if n > 1 && uint64(sw>>((nb-9)&63)+1) < 2 {
		return false
	}
	h := &c.heads[uint64(sw)&c.hmask]
	if !h.ok {
		return false
	}
	// The padding after the last field repeats its last bit (and the
	// bytes that field takes past the payload are those bits): from bit
	// end-1 on, the word is all sign. This also refuses a byte after
	// the fields (with the check above).
	if uint64(sw>>(h.endsh&63)+1) > 1 {
		return false
	}
	// data, sign-extended from its data_len+1 bytes; data_len is the
	// shortest: unless it is 0, the top byte of data and the bit below
	// it are not all sign
	raw := sw << (h.dlsh & 63) >> (h.drsh & 63)
	if uint64(raw>>(h.tsh&63)+1)|uint64(h.minOK) < 2 {
		return false
	}
	z := h.z & 3
	if !s.valid[z] && h.diff != 0 {
		return false // compressed with nothing to compress against
	}
	// address: full, or a difference to the previous one (counted in
	// units of the size in the aligned formats); what the payload holds
	// of it, sign-extended (the padding check made its bits past daw
	// the sign), masked to daw bits
	cm, pm, am := -uint64(h.cm), -uint64(h.pm), -uint64(h.am)
	daddr := (s.addr[z]&cm + uint64(sw>>(h.ash&63))<<(h.shift&3)) & c.dawMask
	// data: full (00, 10), XOR (01) or difference (11)
	prev := s.val[z] & pm
	v := ((uint64(raw)^prev)&^am | (uint64(raw)+prev)&am) & sizeMask(z)
	a.IAddr = 0
	a.DAddr = daddr
	a.Data = v
	a.SData = 0
	a.LRID = 0
	a.DType = h.dtype
	a.DSize = z
	a.Split = false
	s.addr[z] = daddr
	s.val[z] = v
	s.valid[z] = true
	return true
}
