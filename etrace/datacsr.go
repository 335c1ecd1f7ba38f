package etrace

import (
	"fmt"

	"github.com/rvtrace/rvtrace/ingress"
)

// CSR data trace (E-Trace 2.0 section "CSR" of "Data Trace Encoder Output
// Packets", format 101), enabled by DataConfig.CSR. The packets:
//
//	address, data and operand  format 101, subtype (2), diff (2), data_len,
//	                           data, addr_msbs (6), op_len, operand,
//	                           addr_lsbs (6)
//	address and read-only data format 101, subtype, diff, data_len, data,
//	(addr[11:10] = 11)         addr_msbs, addr_lsbs
//	address only               format 101, subtype, addr_msbs, addr_lsbs
//
// Decisions the specification leaves open, taken as follows:
//
//   - The data field is the value read from the CSR (the CSR's value
//     before the instruction, what rd receives; ingress.Access.SData) and
//     the operand "Value from rs1 before operator applied" (rs1's value,
//     or the zero-extended uimm of the immediate forms;
//     ingress.Access.Data), as the data of an atomic packet is the load
//     data and its operand rs2 (data.go says why). The value written is
//     then the operand (RW), read | operand (RS) or read &^ operand (RC),
//     up to the CSR's WARL legalisation, which the trace does not show.
//     Every retired csrrw/csrrs/csrrc(i) is an access of its kind,
//     including those with rs1 x0 (no write) and rd x0: Zicsr says a
//     csrrw(i) with rd x0 "shall not read the CSR", and a hart that
//     honours it has no value for the data field, which every layout but
//     the address-only one (a configuration, trTeDataNoValue, not a
//     per-packet choice) requires; the specification gives no way to
//     mark it absent. The simulator reads the CSR for these too (its CSR
//     reads have no side effects), so data is always the CSR's value
//     before the instruction, read or not by a hardware hart.
//   - data_len and op_len are 2 bits for 32-bit CSRs and 3 for 64-bit
//     (DataConfig.CSRWidth); data is 8*(data_len+1) bits (the table's
//     "8 * (data_len 1)" misses the +), with the upper bytes that sign
//     extension restores dropped, as for loads and stores; so is the
//     operand's.
//   - diff is 2 bits (XOR and differential compression are both offered):
//     00 full data, 01 XOR with the previous CSR access's data, 11 the
//     difference to it, 10 reserved. The first CSR packet after a
//     synchronisation packet is full; so is every one with
//     trTeDataAddrCompress 0. The address is always the full CSR number.
//   - A CSR whose address has bits 11:10 set is read-only: an instruction
//     that would write it (csrrw, or csrrs/csrrc with a non-zero rs1 or
//     uimm field) raises an illegal-instruction exception and does not
//     retire, so the operand is 0 and the packet omits it. The encoder
//     refuses an access the read-only layout cannot carry, and the decoder
//     reports an RW packet of a read-only CSR as malformed.
//   - The address-only table (trTeDataNoValue) gives subtype 3 bits but
//     lists the 2-bit codes of the other two tables: it is read as 2 bits.
//     Its diff field ("0 or 1" bits) is left out: the address is always
//     full.
//   - The specification defines no CSR packet without an address: CSR
//     data trace with trTeDataNoAddr is refused (DataConfig check).
//   - Whether CSR accesses are traced is a run-time option, reported in
//     the support packet's doptions (bit 4). The specification makes
//     support for CSR accesses optional for an implementation ("Support
//     for both atomic and CSR accesses are independently optional"): that
//     is a parameter (the hart's interface has dtypes 4..6, the encoder
//     has CSR packets), as is the CSR width (CSRWidth, the hart's XLEN).
//     Whether an encoder that supports them traces them is chosen per
//     trace (rvtrace --data-csr, as --data-fields chooses
//     trTeDataNoValue), and the packets do not say it: a format 101
//     packet reads the same with or without it, but a decoder that does
//     not know it cannot tell a CSR instruction whose packet was lost
//     from one that has none. That is what the support packet is for:
//     "doptions: values of all data trace run-time configuration bits",
//     placeholders for "an implementation specific set of individual bits
//     - one for each of the optional modes supported by the encoder", and
//     the support packet is resent "if doptions change". So a decoder
//     learns it from each support packet (DataJoiner, Dump: a CSR packet
//     where the last support packet announced none is malformed, a CSR
//     instruction with no packet where it announced them is reported);
//     DataConfig.CSR on a decoder is an override (CSR packets expected
//     whatever doptions say), for traces whose support packet does not
//     announce them.
//   - doptions is 5 bits (data.go), the fifth the CSR bit; the width is
//     fixed for this implementation, as ioptions' 6 bits are (the
//     specification leaves both widths to the implementation and gives
//     no field that states them), and a decoder reads it as 5 bits
//     whatever it is told. doptions is the last field of the support
//     packet, so the bit is appended after the split bit: the packet is
//     21 bits, 3 bytes, as with 4. A trace without CSR of the unified
//     protocol (split bit 0) has the very same bytes as with the 4-bit
//     field: the appended 0 is what sign extension restores. With the
//     split protocol the appended 0 differs from the sign (the split
//     bit's 1), so those support packets change (the same length, the
//     last byte's top bits cleared); any other placement would move an
//     existing bit and change every data trace. A split trace of the
//     4-bit layout reads, with 5 bits, as announcing CSR accesses (the
//     sign extension of its split bit): decoded, its first CSR
//     instruction is reported as having no packet, never joined wrongly,
//     and the warning names that layout as a possible cause.
//   - The split protocol has no CSR packets of its own ("Unified CSR"
//     only): with DataConfig.Split CSR accesses are unified packets, as
//     stores are.

// csrField is one field of a CSR packet after format and subtype.
type csrField uint8

// CSR packet fields.
const (
	cfDiff     csrField = iota // 2 bits
	cfDataLen                  // 2 or 3 bits
	cfData                     // 8*(data_len+1) bits
	cfAddrMSBs                 // 6 bits: address[11:6]
	cfOpLen                    // 2 or 3 bits
	cfOperand                  // 8*(op_len+1) bits
	cfAddrLSBs                 // 6 bits: address[5:0]
)

// CSR packet layouts (the three tables of the specification), by
// csrVariant.
const (
	csrFull     = iota // address, data and operand
	csrReadOnly        // address and read-only data (addr[11:10] = 11)
	csrAddrOnly        // address only (trTeDataNoValue)
)

// csrLayouts lists the fields of each CSR packet layout in order.
var csrLayouts = [...][]csrField{
	csrFull:     {cfDiff, cfDataLen, cfData, cfAddrMSBs, cfOpLen, cfOperand, cfAddrLSBs},
	csrReadOnly: {cfDiff, cfDataLen, cfData, cfAddrMSBs, cfAddrLSBs},
	csrAddrOnly: {cfAddrMSBs, cfAddrLSBs},
}

// csrSubtypeReserved is the reserved CSR subtype (11).
const csrSubtypeReserved = 3

// csrReadOnlyAddr reports whether CSR number n is read-only (bits 11:10
// set).
func csrReadOnlyAddr(n uint64) bool { return n>>10&3 == 3 }

// csrVariant returns the layout of a CSR packet of CSR number addr.
func (c *dataCodec) csrVariant(addr uint64) int {
	switch {
	case c.fields == DataAddrOnly:
		return csrAddrOnly
	case csrReadOnlyAddr(addr):
		return csrReadOnly
	}
	return csrFull
}

// appendCSR encodes CSR packet p, sign-compressed, to dst.
func (c *dataCodec) appendCSR(dst []byte, p *DataPacket) []byte {
	b := &c.bw
	b.reset()
	b.put(DFmtCSR, 3)
	b.put(uint64(p.Subtype), 2)
	for _, f := range csrLayouts[c.csrVariant(p.Address)] {
		switch f {
		case cfDiff:
			b.put(uint64(p.Diff), 2)
		case cfDataLen:
			b.put(uint64(p.DataLen), c.csrLenBits)
		case cfData:
			b.put(p.Data, 8*(int(p.DataLen)+1))
		case cfAddrMSBs:
			b.put(p.Address>>6, 6)
		case cfOpLen:
			b.put(uint64(p.OpLen), c.csrLenBits)
		case cfOperand:
			b.put(p.Operand, 8*(int(p.OpLen)+1))
		case cfAddrLSBs:
			b.put(p.Address, 6)
		}
	}
	return b.bytes(dst)
}

// parseCSR reads the fields of a CSR packet after format (the reader is
// past it).
func (c *dataCodec) parseCSR(payload []byte, p *DataPacket) error {
	if !c.csr {
		return fmt.Errorf("CSR data packet (format 101) where the support packet announces no CSR data trace (doptions bit 4 clear; decode with --data-csr to expect them anyway)")
	}
	r := &c.dr
	p.Subtype = uint8(r.get(2))
	if p.Subtype == csrSubtypeReserved {
		return fmt.Errorf("reserved CSR subtype 11")
	}
	p.Size, p.LRID, p.Resp, p.Diff = c.csrSize, 0, 0, 0
	// the layout depends on address[11:10], which comes in addr_msbs:
	// read the fields of the full layout up to it, then go on with the
	// layout it selects
	var msbs uint64
	lay := csrLayouts[csrFull]
	if c.fields == DataAddrOnly {
		lay = csrLayouts[csrAddrOnly]
	}
	for i := 0; i < len(lay); i++ {
		switch lay[i] {
		case cfDiff:
			p.Diff = uint8(r.get(2))
			if p.Diff == 2 {
				return fmt.Errorf("reserved CSR diff 10")
			}
		case cfDataLen:
			p.DataLen = uint8(r.get(c.csrLenBits))
		case cfData:
			p.Data = r.get(8 * (int(p.DataLen) + 1))
		case cfAddrMSBs:
			msbs = r.get(6)
			if c.fields != DataAddrOnly && csrReadOnlyAddr(msbs<<6) {
				lay = csrLayouts[csrReadOnly]
			}
		case cfOpLen:
			p.OpLen = uint8(r.get(c.csrLenBits))
		case cfOperand:
			p.Operand = r.get(8 * (int(p.OpLen) + 1))
		case cfAddrLSBs:
			p.Address = msbs<<6 | r.get(6)
		}
	}
	return c.parseEnd(payload)
}

// encodeCSR fills p for CSR access a and updates the state.
func (c *dataCodec) encodeCSR(s *dataState, a *ingress.Access, compress bool, p *DataPacket) {
	z := c.csrSize
	m := sizeMask(z)
	*p = DataPacket{Format: DFmtCSR, Subtype: uint8(a.DType - ingress.DTypeCSRRW), Size: z, Address: a.DAddr & 0xfff}
	v := c.csrVariant(p.Address)
	if v == csrAddrOnly {
		return
	}
	val := a.SData & m
	best := val
	if compress && s.csrValid {
		bl := byteLen(val, z)
		if x := (val ^ s.csrVal) & m; byteLen(x, z) < bl {
			best, bl, p.Diff = x, byteLen(x, z), 1
		}
		if d := (val - s.csrVal) & m; byteLen(d, z) < bl {
			best, p.Diff = d, 3
		}
	}
	p.DataLen = uint8(byteLen(best, z) - 1)
	p.Data = best & mask(8*(int(p.DataLen)+1))
	if v == csrFull {
		op := a.Data & m
		p.OpLen = uint8(byteLen(op, z) - 1)
		p.Operand = op & mask(8*(int(p.OpLen)+1))
	}
	s.csrValid, s.csrVal = true, val
}

// decodeCSR rebuilds CSR access a from packet p and updates the state.
func (c *dataCodec) decodeCSR(s *dataState, p *DataPacket, a *ingress.Access) error {
	z := c.csrSize
	m := sizeMask(z)
	*a = ingress.Access{DType: ingress.DTypeCSRRW + ingress.DType(p.Subtype), DSize: z, DAddr: p.Address}
	v := c.csrVariant(p.Address)
	if v == csrAddrOnly {
		return nil
	}
	if v == csrReadOnly && a.DType == ingress.DTypeCSRRW {
		return fmt.Errorf("CSR read-write packet of read-only CSR %#x (a csrrw of it cannot retire)", p.Address)
	}
	if p.Diff != 0 && !s.csrValid {
		return fmt.Errorf("compressed CSR packet (diff %d) with no earlier CSR access since the last synchronisation", p.Diff)
	}
	raw := sext(p.Data, 8*(int(p.DataLen)+1)) & m
	if int(p.DataLen)+1 > 1<<z || byteLen(raw, z) != int(p.DataLen)+1 {
		return fmt.Errorf("CSR data_len %d where %d bytes restore the value", p.DataLen, byteLen(raw, z))
	}
	switch p.Diff {
	case 1:
		raw = (raw ^ s.csrVal) & m
	case 3:
		raw = (raw + s.csrVal) & m
	}
	a.SData = raw
	if v == csrFull {
		op := sext(p.Operand, 8*(int(p.OpLen)+1)) & m
		if int(p.OpLen)+1 > 1<<z || byteLen(op, z) != int(p.OpLen)+1 {
			return fmt.Errorf("CSR op_len %d where %d bytes restore the operand", p.OpLen, byteLen(op, z))
		}
		a.Data = op
	}
	s.csrValid, s.csrVal = true, raw
	return nil
}

// announce applies doptions dopt of a support packet: CSR accesses are
// traced if it says so or the configuration forces it (a decoder's
// DataConfig.CSR). It reports whether that changed.
func (c *dataCodec) announce(dopt uint8) bool {
	on := c.csrForce || dopt&doptCSR != 0
	changed := on != c.csr
	c.csr = on
	return changed
}

// checkCSRAccess says why CSR access a cannot be traced with this
// configuration, or returns nil.
func (c *dataCodec) checkCSRAccess(a *ingress.Access) error {
	switch {
	case !c.csr:
		return fmt.Errorf("CSR data trace is off (DataConfig.CSR; rvtrace --data-csr)")
	case a.Split:
		return fmt.Errorf("a CSR access as a split request (CSR accesses are never split)")
	case a.DAddr > 0xfff:
		return fmt.Errorf("CSR number %#x out of range 0..0xfff", a.DAddr)
	case a.DSize != c.csrSize:
		return fmt.Errorf("CSR access of %d bytes with %d-bit CSRs (DataConfig.CSRWidth; rvtrace --data-csr-width)", a.Bytes(), 8<<c.csrSize)
	case c.fields != DataAddrOnly && csrReadOnlyAddr(a.DAddr) && (a.DType == ingress.DTypeCSRRW || a.Data&sizeMask(c.csrSize) != 0):
		return fmt.Errorf("%s of read-only CSR %#x with operand %#x: the read-only packet has no operand (such an instruction cannot retire)", a.DType, a.DAddr, a.Data)
	}
	return nil
}
