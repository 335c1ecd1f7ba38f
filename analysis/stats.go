package analysis

import (
	"math/bits"
	"sort"
)

// MessageObserver is implemented by sinks that want to see every message
// (N-Trace) or packet (E-Trace) a decoder reads, to count trace bytes by
// message type. A decoder whose flow sink implements it calls Message once
// per message, in stream order, with the message's type name, its byte
// offset in the trace and its size in bits.
type MessageObserver interface {
	Message(kind string, offset int64, bits int)
}

// MsgStat counts the messages of one type.
type MsgStat struct {
	Kind  string
	Count uint64
	Bits  uint64
}

// Message counts one trace message (MessageObserver).
func (p *Profile) Message(kind string, offset int64, bits int) {
	if p.msgs == nil {
		p.msgs = map[string]*MsgStat{}
	}
	m := p.msgs[kind]
	if m == nil {
		m = &MsgStat{Kind: kind}
		p.msgs[kind] = m
		p.msgOrder = append(p.msgOrder, kind)
	}
	m.Count++
	if bits > 0 {
		m.Bits += uint64(bits)
	}
}

// AddMessages adds count messages of one type totalling bits, for decoders
// that report their statistics at the end rather than per message.
func (p *Profile) AddMessages(kind string, count, bits uint64) {
	if count == 0 {
		return
	}
	p.Message(kind, -1, 0)
	m := p.msgs[kind]
	m.Count += count - 1
	m.Bits += bits
}

// Messages returns the message counts by type, largest total size first.
func (p *Profile) Messages() []MsgStat {
	out := make([]MsgStat, 0, len(p.msgOrder))
	for _, k := range p.msgOrder {
		out = append(out, *p.msgs[k])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Bits > out[j].Bits })
	return out
}

// SetTraceSize tells the profile the size in bytes of the trace its flow
// was decoded from (the size of the file), so that the last message is
// attributed too and bits per instruction can be given. Call it before
// Close.
func (p *Profile) SetTraceSize(n int64) { p.traceSize = n }

// TraceBytes returns the size of the trace: as set by SetTraceSize, else
// the sum of the message sizes reported to Message, else the offset of the
// last message that produced instructions (a lower bound), else 0.
func (p *Profile) TraceBytes() int64 {
	if p.traceSize > 0 {
		return p.traceSize
	}
	var b uint64
	for _, m := range p.msgs {
		b += m.Bits
	}
	if b == 0 && p.offsets && p.curOff > 0 {
		return p.curOff
	}
	return int64((b + 7) / 8)
}

// BitsPerInstruction returns the trace size in bits divided by the number
// of instructions (0 when either is unknown).
func (p *Profile) BitsPerInstruction() float64 {
	if p.insts == 0 {
		return 0
	}
	return float64(p.TraceBytes()) * 8 / float64(p.insts)
}

// FuncTraceBytes returns the trace bytes attributed to fn: each message's
// bytes (from its offset to the next message's) are shared among the
// functions of the instructions it reported, in proportion to their
// number. It needs flow events with byte offsets.
func (p *Profile) FuncTraceBytes(fn *Function) uint64 {
	if fn.ID < len(p.fnBytes) {
		return p.fnBytes[fn.ID]
	}
	return 0
}

// UnattributedBytes returns the trace bytes of messages that reported no
// instructions before the next message with a different offset.
func (p *Profile) UnattributedBytes() uint64 { return p.unattrBytes }

// offset notes the byte offset of the message a range came from.
func (p *Profile) offset(off int64) {
	if !p.offsets {
		p.offsets = true
		p.curOff = off
		return
	}
	if off != p.curOff {
		p.flushOffset(off)
		p.curOff = off
	}
}

// addOffFn counts n instructions of fn for the current message.
func (p *Profile) addOffFn(fn *Function, n uint64) {
	if k := len(p.offFns); k > 0 && p.offFns[k-1].fn == fn {
		p.offFns[k-1].n += n
		return
	}
	p.offFns = append(p.offFns, fnCount{fn, n})
	if len(p.offFns) > 4096 {
		// merge by function to stay bounded
		m := map[*Function]int{}
		out := p.offFns[:0]
		for _, c := range p.offFns {
			if i, ok := m[c.fn]; ok {
				out[i].n += c.n
				continue
			}
			m[c.fn] = len(out)
			out = append(out, c)
		}
		p.offFns = out
	}
}

// flushOffset shares the bytes from the current message's offset up to
// next among the functions it reported.
func (p *Profile) flushOffset(next int64) {
	if !p.offsets || next <= p.curOff {
		p.offFns = p.offFns[:0]
		return
	}
	b := uint64(next - p.curOff)
	var total uint64
	for _, c := range p.offFns {
		total += c.n
	}
	if total == 0 {
		p.unattrBytes += b
		return
	}
	var cum, given uint64
	for _, c := range p.offFns {
		cum += c.n
		hi, lo := bits.Mul64(b, cum)
		q, _ := bits.Div64(hi, lo, total)
		if c.fn.ID < len(p.fnBytes) {
			p.fnBytes[c.fn.ID] += q - given
		}
		given = q
	}
	p.offFns = p.offFns[:0]
}

// Bandwidth is the trace bandwidth a configuration needs.
type Bandwidth struct {
	// PortBits is the width of the trace port in bits; PortHz its clock.
	PortBits int
	PortHz   float64
	// NeedBitsPerSec is the trace bandwidth the program needs: bits per
	// instruction times instructions per second (core clock times IPC).
	NeedBitsPerSec float64
	// PortBitsPerSec is what the port carries (PortBits * PortHz).
	PortBitsPerSec float64
	// Utilization is NeedBitsPerSec / PortBitsPerSec; above 1 the port
	// overflows.
	Utilization float64
	// MinPortHz is the lowest port clock that carries the trace at this
	// width.
	MinPortHz float64
}

// BandwidthFor computes the bandwidth needed to trace at bitsPerInst
// bits per instruction a core running at coreHz with ipc instructions per
// cycle, through a port portBits wide clocked at portHz.
func BandwidthFor(bitsPerInst, coreHz, ipc float64, portBits int, portHz float64) Bandwidth {
	need := bitsPerInst * coreHz * ipc
	b := Bandwidth{PortBits: portBits, PortHz: portHz, NeedBitsPerSec: need}
	b.PortBitsPerSec = float64(portBits) * portHz
	if b.PortBitsPerSec > 0 {
		b.Utilization = need / b.PortBitsPerSec
	}
	if portBits > 0 {
		b.MinPortHz = need / float64(portBits)
	}
	return b
}

// IPC returns instructions per time unit over the flow (instructions
// divided by cycles), 0 without timestamps.
func (p *Profile) IPC() float64 {
	if p.cycles == 0 {
		return 0
	}
	return float64(p.insts) / float64(p.cycles)
}
