package riscv

// The index narrows the rows of ops to try for an instruction word. For a
// 32-bit word the key is opcode[6:2], funct3 and funct7 (15 bits); for a
// 16-bit parcel it is bits 15:10, 6:5 and 1:0 (10 bits). A key maps to the
// number of a candidate list (idx32, idx16); lists32/lists16 give each
// list's run of rows in rows32/rows16 as start<<8 | count, in table order.
// Few distinct lists exist (about 200 for 32 bits), so the key tables are
// bytes and the rows they lead to are compact copies of the hot fields of
// ops: the whole index is about 35 KB.
var (
	idx32   [1 << 15]uint8
	lists32 []uint32
	rows32  []hotRow
	idx16   [1 << 10]uint8
	lists16 []uint32
	rows16  []hotRow
)

// hotRow holds what decode needs of a row of ops (28 bytes).
type hotRow struct {
	mask, match uint32
	need        Ext
	nz          uint32 // bits of which at least one must be set (0: none)
	op          uint16 // row number in ops
	rd, rs1     sel
	chk         check
	class       Class
	imm         immKind
}

// Bits of an instruction word that make up its index key.
const (
	keyBits32 = 0xfe00707c // funct7, funct3, opcode[6:2]
	keyBits16 = 0xfc63     // 15:10, 6:5, 1:0
)

func key32(x uint32) uint32 { return (x>>2)&0x1f<<10 | (x>>12)&7<<7 | x>>25 }
func key16(x uint32) uint32 { return (x>>10)&0x3f<<4 | (x>>5)&3<<2 | x&3 }

// Pseudo extension bits for the XLEN a row needs; decode adds the one for
// the XLEN it decodes for to the extensions it is given.
const (
	extRV32 Ext = 1 << 30
	extRV64 Ext = 1 << 31
)

// sel says where a register number comes from: (raw>>shift)&mask + add.
// A constant register k is {0, 0, k}.
type sel struct{ shift, mask, add uint8 }

var (
	selNone = sel{}
	selB7   = sel{7, 0x1f, 0}  // rd, or rs1 of CR/CI formats (bits 11:7)
	selB15  = sel{15, 0x1f, 0} // rs1 (bits 19:15)
	selC2   = sel{2, 7, 8}     // rd'/rs2' (bits 4:2)
	selC7   = sel{7, 7, 8}     // rs1'/rd' (bits 9:7)
	selK1   = sel{0, 0, 1}     // ra
	selK2   = sel{0, 0, 2}     // sp
	selK10  = sel{0, 0, 10}    // a0
	selSreg = sel{7, 7, 0xff}  // Zcmp sreg r1s' (bits 9:7), mapped by sreg
)

// immKind says which offset Decode puts in Imm.
type immKind uint8

const (
	immNone immKind = iota
	immI            // jalr
	immB
	immJ
	immCB
	immCJ
)

// formFields gives, for each form, where Rd, Rs1 and Imm come from.
var formFields = map[form]struct {
	rd, rs1 sel
	imm     immKind
}{
	fNone: {}, fFence: {}, fCNop: {}, fCEBreak: {}, fCMJT: {},
	fR: {selB7, selB15, immNone}, fR2: {selB7, selB15, immNone},
	fR4: {selB7, selB15, immNone}, fI: {selB7, selB15, immNone},
	fIJ: {selB7, selB15, immI}, fCSRI: {selB7, selNone, immNone},
	fU: {selB7, selNone, immNone}, fS: {selNone, selB15, immNone},
	fSfence: {selNone, selB15, immNone}, fB: {selNone, selB15, immB},
	fJ:  {selB7, selNone, immJ},
	fCR: {selB7, selB7, immNone}, fCI: {selB7, selB7, immNone},
	fCMv: {selB7, selNone, immNone}, fCLi: {selB7, selNone, immNone},
	fCJr: {selNone, selB7, immNone}, fCJalr: {selK1, selB7, immNone},
	fCSP16: {selK2, selK2, immNone}, fCIW: {selC2, selK2, immNone},
	fCLSP: {selB7, selK2, immNone}, fCSSP: {selNone, selK2, immNone},
	fCL: {selC2, selC7, immNone}, fCS: {selNone, selC7, immNone},
	fCA: {selC7, selC7, immNone}, fCB: {selNone, selC7, immCB},
	fCJ: {selNone, selNone, immCJ}, fCJal: {selK1, selNone, immCJ},
	fCMPP: {selK2, selK2, immNone}, fCMRet: {selNone, selK1, immNone},
	fCMVSA: {selSreg, selK10, immNone}, fCMVA: {selK10, selSreg, immNone},
	fCMJALT: {selK1, selNone, immNone},
}

func init() {
	for i := range ops {
		o := &ops[i]
		if o.len == 0 && i != int(OpIllegal) {
			o.len = 4
		}
		o.need = o.ext
		switch o.xlen {
		case 32:
			o.need |= extRV32
		case 64:
			o.need |= extRV64
		}
		f, ok := formFields[o.form]
		if !ok {
			panic("riscv: no formFields entry for the form of " + o.name)
		}
		o.rd, o.rs1, o.imm = f.rd, f.rs1, f.imm
	}
	lists32, rows32 = buildIndex(idx32[:], spec32)
	lists16, rows16 = buildIndex(idx16[:], spec16)
}

// maxCand is the most rows that can share an index key (5 in practice).
const maxCand = 8

// indexSpec describes one of the two indexes.
type indexSpec struct {
	n          uint8               // instruction length of its rows
	keyBits    uint32              // instruction bits that form the key
	unkey      func(uint32) uint32 // key back to instruction bits
	groupShift uint                // key>>groupShift groups keys for building
	groupBits  uint32              // instruction bits of the group part
}

var (
	spec32 = indexSpec{4, keyBits32, unkey32, 7, 0x707c}
	spec16 = indexSpec{2, keyBits16, unkey16, 4, 0xfc00}
)

func unkey32(k uint32) uint32 { return k>>10<<2 | k>>7&7<<12 | k&0x7f<<25 | 3 }
func unkey16(k uint32) uint32 { return k>>4<<10 | k>>2&3<<5 | k&3 }

// buildIndex fills idx for the rows of ops of length sp.n and returns the
// candidate lists and their rows. A row is a candidate for a key when it
// agrees with the key's bits on the bits its mask fixes. Equal lists, as
// those of neighbouring keys usually are, are shared.
func buildIndex(idx []uint8, sp indexSpec) (lists []uint32, rows []hotRow) {
	// Rows by group, to try fewer rows per key.
	type cand struct {
		mask, match uint32
		row         uint16
	}
	groups := make([][]cand, len(idx)>>sp.groupShift)
	for g := range groups {
		x := sp.unkey(uint32(g) << sp.groupShift)
		for i := range ops {
			o := &ops[i]
			if o.len == sp.n && (x^o.match)&o.mask&sp.groupBits == 0 {
				groups[g] = append(groups[g], cand{o.mask & sp.keyBits, o.match, uint16(i)})
			}
		}
	}
	type list struct {
		n    uint8
		rows [maxCand]uint16
	}
	ids := map[list]uint8{}
	var prev list
	for k := range idx {
		x := sp.unkey(uint32(k))
		var l list
		for _, c := range groups[k>>sp.groupShift] {
			if (x^c.match)&c.mask == 0 {
				if l.n == maxCand {
					panic("riscv: too many instructions share an index key")
				}
				l.rows[l.n] = c.row
				l.n++
			}
		}
		if k > 0 && l == prev {
			idx[k] = idx[k-1]
			continue
		}
		prev = l
		id, ok := ids[l]
		if !ok {
			if len(lists) > 0xff {
				panic("riscv: too many distinct index lists")
			}
			id = uint8(len(lists))
			ids[l] = id
			lists = append(lists, uint32(len(rows))<<8|uint32(l.n))
			for _, r := range l.rows[:l.n] {
				o := &ops[r]
				nz, chk := nonZero(o.chk)
				rows = append(rows, hotRow{
					mask: o.mask, match: o.match, need: o.need, nz: nz, op: r,
					rd: o.rd, rs1: o.rs1, chk: chk, class: o.class, imm: o.imm,
				})
			}
		}
		idx[k] = id
	}
	return lists, rows
}

// Decode classifies one instruction for xlen 32 or 64 (any other value is
// taken as 64), with the extensions of [DefaultExt]. raw holds the
// instruction's bits: a 16-bit instruction in the low half (the high half,
// the next parcel in memory, is ignored), a 32-bit one whole, and the low 32
// bits of a longer one. It never panics and does not allocate.
func Decode(raw uint32, xlen int) Inst {
	have := ExtRV64Default | extRV64
	if xlen == 32 {
		have = ExtRV32Default | extRV32
	}
	return decode(raw, have)
}

// ExtZfhmin must follow ExtZfh for DecodeExt's implication.
var _ = [1]struct{}{}[ExtZfhmin-ExtZfh<<1]

// DecodeExt is [Decode] for a given set of extensions.
func DecodeExt(raw uint32, xlen int, ext Ext) Inst {
	x := extRV64
	if xlen == 32 {
		x = extRV32
	}
	ext |= ext & ExtZfh << 1 // Zfh includes Zfhmin, the next bit
	return decode(raw, ext&^(extRV32|extRV64)|x)
}

// decode decodes raw for the extensions have, which include the XLEN
// pseudo-bit. It is written as one function that returns a single
// composite literal of scalars, so that the result stays in registers.
func decode(raw uint32, have Ext) Inst {
	flag := Op(have>>30&1) << 15 // opRV32 when have holds extRV32
	var l uint32
	var rows []hotRow
	var n uint8
	switch {
	case raw&3 != 3:
		raw &= 0xffff
		l = lists16[idx16[key16(raw)]]
		rows, n = rows16, 2
	case raw&0x1f != 0x1f:
		l = lists32[idx32[key32(raw)]]
		rows, n = rows32, 4
	default:
		return Inst{Raw: raw, Len: uint8(Length(uint16(raw))), Class: ClassIllegal, Op: flag}
	}
	cand := rows[l>>8 : l>>8+l&0xff]
	for i := range cand {
		r := &cand[i]
		if raw&r.mask != r.match || r.need&^have != 0 || r.nz != 0 && raw&r.nz == 0 {
			continue
		}
		if r.chk != chkNone && !checkOK(r.chk, raw, have) {
			continue
		}
		rd := uint8(raw>>r.rd.shift)&r.rd.mask + r.rd.add
		rs1 := uint8(raw>>r.rs1.shift)&r.rs1.mask + r.rs1.add
		if r.rd.add == 0xff {
			rd = sreg(raw >> 7 & 7) // Zcmp sreg (cm.mvsa01)
		} else if r.rs1.add == 0xff {
			rs1 = sreg(raw >> 7 & 7) // Zcmp sreg (cm.mva01s)
		}
		var imm int64
		switch r.imm {
		case immI:
			imm = int64(int32(raw) >> 20)
		case immB:
			imm = offB(raw)
		case immJ:
			imm = offJ(raw)
		case immCB:
			imm = offCB(raw)
		case immCJ:
			imm = offCJ(raw)
		}
		var link Link
		var index uint8
		switch r.class {
		case ClassJump:
			link = jalLink(rd)
		case ClassTableJump:
			link = jalLink(rd)
			index = uint8(raw >> 2)
		case ClassIndirect:
			link = jalrLink(rd, rs1)
		case ClassPopRet:
			link = LinkReturn
		}
		return Inst{Raw: raw, Len: n, Class: r.class, Link: link, Rd: rd, Rs1: rs1, Index: index, Op: Op(r.op) | flag, Imm: imm}
	}
	return Inst{Raw: raw, Len: n, Class: ClassIllegal, Op: flag}
}

// nonZero splits the constraint c into a field that must not be zero,
// which decode tests inline, and what is left for checkOK.
func nonZero(c check) (uint32, check) {
	switch c {
	case chkRdNZ, chkRs1NZ:
		return 0x0f80, chkNone // bits 11:7
	case chkRs2NZ:
		return 0x007c, chkNone // bits 6:2
	case chkNZ4SPN:
		return 0x1fe0, chkNone // bits 12:5
	case chkNZ16SP:
		return 0x107c, chkNone // bits 12, 6:2
	case chkLui:
		return 0x107c, chkLui // and rd != 2
	case chkRlist:
		return 0x00c0, chkNone // rlist >= 4: bit 7 or 6 of the field
	}
	return 0, c
}

// checkOK reports whether raw satisfies the constraint c.
func checkOK(c check, x uint32, ext Ext) bool {
	switch c {
	case chkRM:
		rm := x >> 12 & 7
		return rm != 5 && rm != 6
	case chkRdNZ, chkRs1NZ:
		return x>>7&0x1f != 0
	case chkRs2NZ:
		return x>>2&0x1f != 0
	case chkNZ4SPN:
		return x>>5&0xff != 0
	case chkNZ16SP:
		return x>>12&1 != 0 || x>>2&0x1f != 0
	case chkLui:
		return x>>7&0x1f != 2 && (x>>12&1 != 0 || x>>2&0x1f != 0)
	case chkRlist:
		return x>>4&0xf >= 4
	case chkMvsa:
		return x>>7&7 != x>>2&7
	case chkNoZcm:
		return ext&(ExtZcmp|ExtZcmt) == 0
	}
	return true
}

// isLink reports whether r is a link register (x1 or x5).
func isLink(r uint8) bool { return r == 1 || r == 5 }

// jalLink classifies jal rd (N-Trace 4-bit itype table): rd = link is a
// call, rd = x0 a plain jump, anything else another jump with linkage.
func jalLink(rd uint8) Link {
	switch {
	case isLink(rd):
		return LinkCall
	case rd == 0:
		return LinkNone
	}
	return LinkOther
}

// jalrLink classifies jalr rd, rs (N-Trace 4-bit itype table). c.jr rs is
// jalr x0, rs and c.jalr rs is jalr x1, rs, which gives the table's rows
// for them too.
func jalrLink(rd, rs uint8) Link {
	switch {
	case isLink(rd) && (!isLink(rs) || rd == rs):
		return LinkCall
	case isLink(rd):
		return LinkCoSwap
	case isLink(rs):
		return LinkReturn
	case rd == 0:
		return LinkNone
	}
	return LinkOther
}

// sreg maps a Zcmp sreg number (r1s', r2s') to its register: s0-s1 are x8-x9
// and s2-s7 are x18-x23.
func sreg(n uint32) uint8 {
	if n < 2 {
		return uint8(n) + 8
	}
	return uint8(n) + 16
}

// offB is the offset of a B-type (branch) instruction.
func offB(x uint32) int64 {
	v := x>>31<<12 | x>>7&1<<11 | x>>25&0x3f<<5 | x>>8&0xf<<1
	return int64(int32(v<<19) >> 19)
}

// offJ is the offset of a J-type (jal) instruction.
func offJ(x uint32) int64 {
	v := x>>31<<20 | x>>12&0xff<<12 | x>>20&1<<11 | x>>21&0x3ff<<1
	return int64(int32(v<<11) >> 11)
}

// offCB is the offset of c.beqz/c.bnez: offset[8|4:3] in bits 12|11:10 and
// offset[7:6|2:1|5] in bits 6:5|4:3|2.
func offCB(x uint32) int64 {
	v := x>>12&1<<8 | x>>10&3<<3 | x>>5&3<<6 | x>>3&3<<1 | x>>2&1<<5
	return int64(int32(v<<23) >> 23)
}

// offCJ is the offset of c.j/c.jal: offset[11|4|9:8|10|6|7|3:1|5] in bits
// 12:2.
func offCJ(x uint32) int64 {
	v := x>>12&1<<11 | x>>11&1<<4 | x>>9&3<<8 | x>>8&1<<10 | x>>7&1<<6 | x>>6&1<<7 | x>>3&7<<1 | x>>2&1<<5
	return int64(int32(v<<20) >> 20)
}
