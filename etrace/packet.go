package etrace

import (
	"fmt"
	"strings"

	"github.com/rvtrace/rvtrace/decode"
)

// Packet formats (the 2-bit format field).
const (
	FormatExt    = 0 // 2.0: optional efficiency extensions; 0.026: full-delta
	FormatBranch = 1 // diff-delta: branch map and optional differential address
	FormatAddr   = 2 // addr-only
	FormatSync   = 3 // sync: subformats below
)

// Format 3 subformats.
const (
	SubStart   = 0 // start of tracing, or resync
	SubTrap    = 1 // exception or interrupt
	SubContext = 2 // context change
	SubSupport = 3 // supporting information (2.0; te_support in 0.026)
)

// Format 0 subformats (2.0).
const (
	SubBranchCount = 0 // correctly predicted branches
	SubJumpCache   = 1 // jump target cache index
)

// Format 0 subformat 0 branch_fmt values.
const (
	BranchFmtNoAddr   = 0 // no address; the branch after the counted ones failed
	BranchFmtAddr     = 2 // address; if it is a branch, it was predicted correctly
	BranchFmtAddrFail = 3 // address of a branch that failed the prediction
)

// qual_status values of support packets.
const (
	QualNoChange  = 0 // no change to filter qualification
	QualEndedRep  = 1 // qualification ended; preceding te_inst sent to report the last instruction
	QualTraceLost = 2 // one or more packets lost
	QualEndedNtr  = 3 // qualification ended; preceding te_inst reports an uninferable discontinuity's target
)

// Packet is one te_inst (or support) packet with every field of every
// format; the fields a format does not have are zero. Address, Tval and
// the other fields hold wire values: Address is shifted right by
// iaddress_lsb_p and, in delta address mode, differential.
//
// Notify, Updiscon and Irreport are the meanings of the status bits (true
// when the bit differs from the bit before it); the writer and reader
// apply the XOR compression. Irdepth is meaningful only when Irreport is
// set.
type Packet struct {
	Format    uint8
	Subformat uint8

	Branch    uint8 // format 3.0/3.1: 0 = reported branch taken
	Privilege uint8
	Time      uint64
	Context   uint64
	Ecause    uint64
	Interrupt uint8
	Thaddr    uint8
	Address   uint64
	Tval      uint64

	Branches    uint8  // format 1, 0.1: valid bits of BranchMap (0: full 31-bit map and no address)
	BranchMap   uint32 // bit 0 the oldest branch; 1 = not taken
	BranchCount uint32 // format 0.0: correctly predicted branches minus 31
	BranchFmt   uint8  // format 0.0
	Index       uint32 // format 0.1: jump target cache index

	Notify   bool
	Updiscon bool
	Irreport bool
	Irdepth  uint32

	IEnable     uint8 // support: instruction trace enabled
	EncoderMode uint8
	QualStatus  uint8
	IOptions    uint64
	DEnable     uint8
	DLoss       uint8
	DOptions    uint8
}

// field names a packet field; fieldNames gives its name in dumps and CSV.
type field uint8

const (
	fFormat field = iota
	fSubformat
	fBranch
	fPrivilege
	fTime
	fContext
	fEcause
	fInterrupt
	fThaddr
	fAddress
	fTval
	fBranches
	fBranchMap
	fBranchCount
	fBranchFmt
	fIndex
	fNotify
	fUpdiscon
	fIrreport
	fIrdepth
	fIEnable
	fEncoderMode
	fQualStatus
	fIOptions
	fDEnable
	fDLoss
	fDOptions
	fMsgType     // 0.026 te_support: msg_type (0)
	fControlCode // 0.026 te_support: control_code (0x34)
	fSupportType // 0.026 te_support: support_type (0)
	numFields
)

var fieldNames = [numFields]string{
	"format", "subformat", "branch", "privilege", "time", "context", "ecause",
	"interrupt", "thaddr", "address", "tval", "branches", "branch_map",
	"branch_count", "branch_fmt", "index", "notify", "updiscon", "irreport",
	"irdepth", "ienable", "encoder_mode", "qual_status", "ioptions", "denable",
	"dloss", "doptions", "msg_type", "control_code", "support_type",
}

// Layouts: the fields of each format in transmission order. Widths, and
// whether a field is present at all, come from fieldWidth.
var (
	layoutV2 = [4][4][]field{
		FormatExt: {
			SubBranchCount: {fFormat, fSubformat, fBranchCount, fBranchFmt, fAddress, fNotify, fUpdiscon, fIrreport, fIrdepth},
			SubJumpCache:   {fFormat, fSubformat, fIndex, fBranches, fBranchMap, fIrreport, fIrdepth},
		},
		FormatBranch: {{fFormat, fBranches, fBranchMap, fAddress, fNotify, fUpdiscon, fIrreport, fIrdepth}},
		FormatAddr:   {{fFormat, fAddress, fNotify, fUpdiscon, fIrreport, fIrdepth}},
		FormatSync: {
			SubStart:   {fFormat, fSubformat, fBranch, fPrivilege, fTime, fContext, fAddress},
			SubTrap:    {fFormat, fSubformat, fBranch, fPrivilege, fTime, fContext, fEcause, fInterrupt, fThaddr, fAddress, fTval},
			SubContext: {fFormat, fSubformat, fPrivilege, fTime, fContext},
			SubSupport: {fFormat, fSubformat, fIEnable, fEncoderMode, fQualStatus, fIOptions, fDEnable, fDLoss, fDOptions},
		},
	}
	layoutV026 = [4][4][]field{
		FormatExt:    {{fFormat, fBranches, fBranchMap, fAddress}},
		FormatBranch: {{fFormat, fBranches, fBranchMap, fAddress}},
		FormatAddr:   {{fFormat, fAddress}},
		FormatSync: {
			SubStart:   {fFormat, fSubformat, fContext, fPrivilege, fBranch, fAddress},
			SubTrap:    {fFormat, fSubformat, fContext, fPrivilege, fBranch, fAddress, fEcause, fInterrupt, fTval},
			SubContext: {fFormat, fSubformat, fContext, fPrivilege},
			SubSupport: {fMsgType, fControlCode, fSupportType, fIEnable, fEncoderMode, fQualStatus},
		},
	}
)

// te_support constants of the 0.026 draft.
const (
	v026SupportControlCode = 0x34
)

// branchMapBitsV2 returns the branch_map width for a branches value in
// 2.0 (1, 3, 7, 15 or 31; 31 for 0).
func branchMapBitsV2(n uint8) int {
	switch {
	case n == 0:
		return 31
	case n == 1:
		return 1
	case n <= 3:
		return 3
	case n <= 7:
		return 7
	case n <= 15:
		return 15
	}
	return 31
}

// branchMapBitsV026 returns the branch-map width for a branches value in
// the 0.026 draft (1, 9, 17, 25 or 31; 31 for 0).
func branchMapBitsV026(n uint8) int {
	switch {
	case n == 0:
		return 31
	case n == 1:
		return 1
	case n <= 9:
		return 9
	case n <= 17:
		return 17
	case n <= 25:
		return 25
	}
	return 31
}

// Codec writes and reads packets for one configuration. Options tracks
// the ioptions of the latest support packet when reading (format 0
// subformats and implicit exception addresses depend on them).
type Codec struct {
	Version Version
	Params  Params
	Options Options

	w bitWriter
	r bitReader
}

// NewCodec returns a codec for cfg.
func NewCodec(cfg *Config) *Codec {
	return &Codec{Version: cfg.Version, Params: cfg.Params, Options: cfg.Options}
}

// layout returns the field list of p's format, or nil if the format does
// not exist.
func (c *Codec) layout(p *Packet) []field {
	if p.Format > 3 || p.Subformat > 3 {
		return nil
	}
	if c.Version == V026 {
		if p.Format == FormatSync {
			return layoutV026[3][p.Subformat]
		}
		return layoutV026[p.Format][0]
	}
	switch p.Format {
	case FormatSync:
		return layoutV2[3][p.Subformat]
	case FormatExt:
		return layoutV2[0][p.Subformat]
	}
	return layoutV2[p.Format][0]
}

// f0Implied returns the format 0 subformat implied when f0s_width_p is 0.
func (c *Codec) f0Implied() uint8 {
	if c.Options.BranchPrediction || !c.Options.JumpTargetCache {
		return SubBranchCount
	}
	return SubJumpCache
}

// width returns the width of field f in p, given the fields before it;
// 0 means the field is absent.
func (c *Codec) width(f field, p *Packet) int {
	pr := &c.Params
	switch f {
	case fFormat:
		return 2
	case fSubformat:
		if p.Format == FormatExt {
			return pr.f0sBits()
		}
		return 2
	case fBranch, fInterrupt, fThaddr, fIEnable, fDEnable, fDLoss:
		return 1
	case fPrivilege:
		return pr.PrivilegeWidth
	case fTime:
		if pr.NoTime {
			return 0
		}
		return pr.TimeWidth
	case fContext:
		if pr.NoContext {
			return 0
		}
		return pr.ContextWidth
	case fEcause:
		return pr.EcauseWidth
	case fAddress:
		switch {
		case p.Format == FormatSync && p.Subformat == SubTrap && c.Version == V2 &&
			c.Options.ImplicitException && p.Thaddr == 1:
			return 0
		case (p.Format == FormatBranch || p.Format == FormatExt && c.Version == V026) && p.Branches == 0:
			return 0
		case p.Format == FormatExt && c.Version == V2 && p.BranchFmt == BranchFmtNoAddr:
			return 0
		}
		return pr.addrBits()
	case fTval:
		if p.Interrupt != 0 || c.Version == V026 && pr.NoTval {
			return 0
		}
		return pr.IAddressWidth
	case fBranches:
		return 5
	case fBranchMap:
		if c.Version == V026 {
			return branchMapBitsV026(p.Branches)
		}
		if p.Format == FormatExt && p.Branches == 0 {
			return 0
		}
		return branchMapBitsV2(p.Branches)
	case fBranchCount:
		return 32
	case fBranchFmt:
		return 2
	case fIndex:
		return pr.CacheSize
	case fNotify, fUpdiscon, fIrreport:
		if p.Format == FormatBranch && p.Branches == 0 ||
			p.Format == FormatExt && p.Subformat == SubBranchCount && p.BranchFmt == BranchFmtNoAddr {
			return 0
		}
		return 1
	case fIrdepth:
		if p.Format == FormatBranch && p.Branches == 0 ||
			p.Format == FormatExt && p.Subformat == SubBranchCount && p.BranchFmt == BranchFmtNoAddr {
			return 0
		}
		return pr.irdepthBits()
	case fEncoderMode:
		if c.Version == V026 {
			return 2
		}
		return 1
	case fQualStatus:
		return 2
	case fIOptions:
		return ioptionBits
	case fDOptions:
		return doptionBits
	case fMsgType:
		return 2
	case fControlCode:
		return 6
	case fSupportType:
		return 4
	}
	return 0
}

// get returns the wire value of a plain field of p.
func (p *Packet) get(f field) uint64 {
	switch f {
	case fFormat:
		return uint64(p.Format)
	case fSubformat:
		return uint64(p.Subformat)
	case fBranch:
		return uint64(p.Branch)
	case fPrivilege:
		return uint64(p.Privilege)
	case fTime:
		return p.Time
	case fContext:
		return p.Context
	case fEcause:
		return p.Ecause
	case fInterrupt:
		return uint64(p.Interrupt)
	case fThaddr:
		return uint64(p.Thaddr)
	case fAddress:
		return p.Address
	case fTval:
		return p.Tval
	case fBranches:
		return uint64(p.Branches)
	case fBranchMap:
		return uint64(p.BranchMap)
	case fBranchCount:
		return uint64(p.BranchCount)
	case fBranchFmt:
		return uint64(p.BranchFmt)
	case fIndex:
		return uint64(p.Index)
	case fIrdepth:
		return uint64(p.Irdepth)
	case fIEnable:
		return uint64(p.IEnable)
	case fEncoderMode:
		return uint64(p.EncoderMode)
	case fQualStatus:
		return uint64(p.QualStatus)
	case fIOptions:
		return p.IOptions
	case fDEnable:
		return uint64(p.DEnable)
	case fDLoss:
		return uint64(p.DLoss)
	case fDOptions:
		return uint64(p.DOptions)
	case fControlCode:
		return v026SupportControlCode
	}
	return 0
}

// set stores the wire value of a plain field into p.
func (p *Packet) set(f field, v uint64) {
	switch f {
	case fFormat:
		p.Format = uint8(v)
	case fSubformat:
		p.Subformat = uint8(v)
	case fBranch:
		p.Branch = uint8(v)
	case fPrivilege:
		p.Privilege = uint8(v)
	case fTime:
		p.Time = v
	case fContext:
		p.Context = v
	case fEcause:
		p.Ecause = v
	case fInterrupt:
		p.Interrupt = uint8(v)
	case fThaddr:
		p.Thaddr = uint8(v)
	case fAddress:
		p.Address = v
	case fTval:
		p.Tval = v
	case fBranches:
		p.Branches = uint8(v)
	case fBranchMap:
		p.BranchMap = uint32(v)
	case fBranchCount:
		p.BranchCount = uint32(v)
	case fBranchFmt:
		p.BranchFmt = uint8(v)
	case fIndex:
		p.Index = uint32(v)
	case fIrdepth:
		p.Irdepth = uint32(v)
	case fIEnable:
		p.IEnable = uint8(v)
	case fEncoderMode:
		p.EncoderMode = uint8(v)
	case fQualStatus:
		p.QualStatus = uint8(v)
	case fIOptions:
		p.IOptions = v
	case fDEnable:
		p.DEnable = uint8(v)
	case fDLoss:
		p.DLoss = uint8(v)
	case fDOptions:
		p.DOptions = uint8(v)
	}
}

// flag returns the meaning of a status bit field.
func (p *Packet) flag(f field) bool {
	switch f {
	case fNotify:
		return p.Notify
	case fUpdiscon:
		return p.Updiscon
	case fIrreport:
		return p.Irreport
	}
	return false
}

func (p *Packet) setFlag(f field, b bool) {
	switch f {
	case fNotify:
		p.Notify = b
	case fUpdiscon:
		p.Updiscon = b
	case fIrreport:
		p.Irreport = b
	}
}

// marshal writes p uncompressed into c.w. With raw set, status fields
// (notify, updiscon, irreport, irdepth) are taken as raw bit values from
// rawStatus instead of being derived from p's flags.
func (c *Codec) marshal(p *Packet, raw *[numFields]uint64) error {
	lay := c.layout(p)
	if lay == nil {
		return fmt.Errorf("etrace: no %s layout for format %d subformat %d", c.Version, p.Format, p.Subformat)
	}
	w := &c.w
	w.reset()
	for _, f := range lay {
		n := c.width(f, p)
		if n == 0 {
			continue
		}
		switch f {
		case fNotify, fUpdiscon, fIrreport:
			if raw != nil {
				w.put(raw[f], 1)
			} else {
				w.put(w.last()^b2u(p.flag(f)), 1)
			}
		case fIrdepth:
			switch {
			case raw != nil:
				w.put(raw[f], n)
			case p.Irreport:
				w.put(uint64(p.Irdepth), n)
			default:
				w.put(-w.last(), n) // all bits equal to irreport
			}
		case fSubformat:
			if p.Format == FormatExt && n == 0 {
				continue
			}
			w.put(p.get(f), n)
		default:
			v := p.get(f)
			if raw != nil && f != fControlCode && f != fMsgType {
				v = raw[f]
			}
			if n < 64 && v>>uint(n) != 0 && f != fAddress && f != fTval && f != fTime && f != fContext {
				return fmt.Errorf("etrace: %s value %#x does not fit in %d bits", fieldNames[f], v, n)
			}
			w.put(v, n)
		}
	}
	return nil
}

// Append appends p's compressed payload to dst.
func (c *Codec) Append(dst []byte, p *Packet) ([]byte, error) {
	if err := c.marshal(p, nil); err != nil {
		return dst, err
	}
	if n := c.w.compressedLen(); n > maxPayload {
		return dst, fmt.Errorf("etrace: packet of %d bytes exceeds %d", n, maxPayload)
	}
	return c.w.bytes(dst), nil
}

// Size returns the compressed payload size of p in bytes.
func (c *Codec) Size(p *Packet) int {
	if err := c.marshal(p, nil); err != nil {
		return maxPayload + 1
	}
	return c.w.compressedLen()
}

// Parse reads a payload into p. support tells the 0.026 te_support message
// apart from te_inst (the framing carries it); in 2.0 it is ignored.
func (c *Codec) Parse(payload []byte, support bool, p *Packet) error {
	*p = Packet{}
	if len(payload) == 0 {
		return fmt.Errorf("etrace: empty payload")
	}
	if len(payload) > maxPayload {
		return fmt.Errorf("etrace: payload of %d bytes exceeds %d", len(payload), maxPayload)
	}
	r := &c.r
	r.load(payload)
	if c.Version == V026 && support {
		p.Format, p.Subformat = FormatSync, SubSupport
		return c.unmarshal(p, layoutV026[3][3], nil)
	}
	p.Format = uint8(r.get(2))
	r.pos = 0
	switch {
	case p.Format == FormatSync:
		r.pos = 2
		p.Subformat = uint8(r.get(2))
		r.pos = 0
		if c.Version == V026 && p.Subformat == SubSupport {
			return fmt.Errorf("%w: etrace: reserved sync subformat 3", decode.ErrSkipped)
		}
	case p.Format == FormatExt && c.Version == V2:
		r.pos = 2
		if n := c.Params.f0sBits(); n > 0 {
			p.Subformat = uint8(r.get(n))
		} else {
			p.Subformat = c.f0Implied()
		}
		r.pos = 0
		if p.Subformat > SubJumpCache {
			return fmt.Errorf("%w: etrace: unknown format 0 subformat %d", decode.ErrSkipped, p.Subformat)
		}
		if p.Subformat == SubBranchCount && c.Params.BPredSize == 0 {
			return fmt.Errorf("etrace: branch count packet but bpred_size_p is 0")
		}
		if p.Subformat == SubJumpCache && c.Params.CacheSize == 0 {
			return fmt.Errorf("etrace: jump target cache packet but cache_size_p is 0")
		}
	}
	if err := c.unmarshal(p, c.layout(p), nil); err != nil {
		return err
	}
	if len(payload) > (c.r.pos+7)/8 {
		return fmt.Errorf("%w: etrace: payload of %d bytes longer than its %d-bit packet", decode.ErrMalformed, len(payload), c.r.pos)
	}
	// The bits that pad the packet to a whole byte repeat its last bit.
	if end := len(payload) * 8; c.r.pos > 0 && c.r.pos < end {
		sign := c.r.bit(c.r.pos - 1)
		for i := c.r.pos; i < end; i++ {
			if c.r.bit(i) != sign {
				return fmt.Errorf("%w: etrace: padding bit %d of a %d-bit packet differs from its sign", decode.ErrMalformed, i, c.r.pos)
			}
		}
	}
	return c.check(p)
}

// unmarshal reads the fields of lay from c.r into p; with raw non-nil the
// raw values of all fields are recorded too.
func (c *Codec) unmarshal(p *Packet, lay []field, raw *[numFields]uint64) error {
	r := &c.r
	r.pos = 0
	for _, f := range lay {
		n := c.width(f, p)
		if n == 0 {
			continue
		}
		switch f {
		case fNotify, fUpdiscon, fIrreport:
			prev := r.prev()
			v := r.get(1)
			p.setFlag(f, v != prev)
			if raw != nil {
				raw[f] = v
			}
		case fIrdepth:
			v := r.get(n)
			if p.Irreport {
				p.Irdepth = uint32(v)
			}
			if raw != nil {
				raw[f] = v
			}
		default:
			v := r.get(n)
			p.set(f, v)
			if raw != nil {
				raw[f] = v
			}
		}
	}
	if p.Format == FormatExt && c.Version == V2 && c.Params.f0sBits() == 0 {
		p.Subformat = c.f0Implied()
	}
	return nil
}

// check rejects field combinations the specification says cannot occur.
func (c *Codec) check(p *Packet) error {
	if c.Version == V2 && p.Format == FormatExt && p.Subformat == SubBranchCount && p.BranchFmt == 1 {
		return fmt.Errorf("etrace: format 0 branch_fmt 1 cannot occur")
	}
	if p.Branches > 31 {
		return fmt.Errorf("etrace: branches %d", p.Branches)
	}
	return nil
}

// privValid reports whether v is a privilege level of the E-Trace table
// "Privilege level (priv) encoding": 2 and 7 are reserved.
func privValid(v uint8) bool { return v != 2 && v != 7 }

// present reports which fields p has on the wire.
func (c *Codec) present(p *Packet) (out [numFields]bool) {
	for _, f := range c.layout(p) {
		if c.width(f, p) > 0 || f == fSubformat && p.Format != FormatExt {
			out[f] = true
		}
	}
	if p.Format == FormatExt && c.Version == V2 || p.Format == FormatSync {
		out[fSubformat] = true
	}
	out[fFormat] = true
	return out
}

// rawFields returns the raw wire values of p's fields.
func (c *Codec) rawFields(p *Packet) ([numFields]uint64, error) {
	var raw [numFields]uint64
	if err := c.marshal(p, nil); err != nil {
		return raw, err
	}
	// Re-read the uncompressed bits to recover raw status bit values.
	r := &c.r
	r.w = c.w.w
	r.n = c.w.n
	r.sign = c.w.last()
	var q Packet
	q.Format, q.Subformat = p.Format, p.Subformat
	if err := c.unmarshal(&q, c.layout(p), &raw); err != nil {
		return raw, err
	}
	raw[fFormat], raw[fSubformat] = uint64(p.Format), uint64(p.Subformat)
	return raw, nil
}

// FormatName returns a short name of p's format ("sync-start", "branch",
// ...).
func (c *Codec) FormatName(p *Packet) string {
	if c.Version == V026 {
		switch p.Format {
		case 0:
			return "full-delta"
		case 1:
			return "diff-delta"
		case 2:
			return "addr-only"
		}
	} else {
		switch p.Format {
		case 0:
			if p.Subformat == SubJumpCache {
				return "jump-cache"
			}
			return "branch-count"
		case 1:
			return "diff-delta"
		case 2:
			return "addr-only"
		}
	}
	switch p.Subformat {
	case SubStart:
		return "sync-start"
	case SubTrap:
		return "sync-trap"
	case SubContext:
		return "sync-context"
	}
	return "support"
}

// String renders p on one line with every field it has on the wire, in
// transmission order (the status bits as their meanings: notify=1 means
// the bit differs from the one before it).
func (c *Codec) String(p *Packet) string {
	var b strings.Builder
	b.WriteString(c.FormatName(p))
	have := c.present(p)
	for _, f := range c.layout(p) {
		if !have[f] || f == fFormat && false {
			continue
		}
		b.WriteByte(' ')
		b.WriteString(fieldNames[f])
		b.WriteByte('=')
		switch f {
		case fNotify, fUpdiscon, fIrreport:
			fmt.Fprintf(&b, "%d", b2u(p.flag(f)))
		case fAddress, fTval, fBranchMap:
			fmt.Fprintf(&b, "%#x", p.get(f))
		case fIOptions:
			fmt.Fprintf(&b, "%#x(%s)", p.IOptions, OptionsFromBits(p.IOptions))
		case fIrdepth:
			if p.Irreport {
				fmt.Fprintf(&b, "%d", p.Irdepth)
			} else {
				b.WriteString("-")
			}
		default:
			fmt.Fprintf(&b, "%d", p.get(f))
		}
	}
	return b.String()
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
