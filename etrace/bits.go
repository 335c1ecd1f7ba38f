package etrace

import "math/bits"

// maxPacketBits bounds an uncompressed packet: the largest layout (format
// 3 subformat 1 with every field 64 bits wide) is under 400 bits.
const maxPacketBits = 512

// maxPayload is the largest payload either framing can carry (a 5-bit
// length).
const maxPayload = 31

// bitWriter assembles a packet least significant bit first.
type bitWriter struct {
	w [maxPacketBits / 64]uint64
	n int
}

func (b *bitWriter) reset() { b.w = [maxPacketBits / 64]uint64{}; b.n = 0 }

// put appends the width low bits of v.
func (b *bitWriter) put(v uint64, width int) {
	if width <= 0 {
		return
	}
	v &= mask(width)
	i, o := b.n>>6, uint(b.n&63)
	b.w[i] |= v << o
	if o != 0 && int(o)+width > 64 {
		b.w[i+1] |= v >> (64 - o)
	}
	b.n += width
}

// last returns the most recently written bit (0 for an empty packet).
func (b *bitWriter) last() uint64 {
	if b.n == 0 {
		return 0
	}
	i := b.n - 1
	return b.w[i>>6] >> uint(i&63) & 1
}

// compressedLen returns the number of payload bytes after sign-based
// compression: the most significant bits equal to the last one are dropped
// but one, and the result is padded to whole bytes.
func (b *bitWriter) compressedLen() int {
	if b.n == 0 {
		return 1
	}
	msb := b.last()
	var fill uint64
	if msb != 0 {
		fill = ^uint64(0)
	}
	// Find the highest bit below n-1 that differs from msb.
	top := -1
	for i := (b.n - 2) >> 6; i >= 0 && b.n >= 2; i-- {
		x := b.w[i] ^ fill
		if lim := b.n - 1 - i*64; lim < 64 {
			x &= mask(lim)
		}
		if x != 0 {
			top = i*64 + 63 - bits.LeadingZeros64(x)
			break
		}
	}
	keep := top + 2 // the differing bit and one sign bit
	return (keep + 7) / 8
}

// byteAt returns payload byte k, sign-extended beyond the written bits.
func (b *bitWriter) byteAt(k int) byte {
	var fill uint64
	if b.last() != 0 {
		fill = 0xff
	}
	i := k * 8
	if i >= b.n {
		return byte(fill)
	}
	v := b.w[i>>6] >> uint(i&63) // (a byte never straddles two words)
	if r := b.n - i; r < 8 {
		v = v&(1<<uint(r)-1) | fill<<uint(r)
	}
	return byte(v)
}

// bytes appends the compressed payload to dst.
func (b *bitWriter) bytes(dst []byte) []byte {
	n := b.compressedLen()
	for k := 0; k < n; k++ {
		dst = append(dst, b.byteAt(k))
	}
	return dst
}

// bitReader reads a compressed payload, sign-extending it past its end.
type bitReader struct {
	w    [maxPacketBits / 64]uint64
	n    int // bits received
	pos  int
	sign uint64
}

func (r *bitReader) load(p []byte) {
	r.w = [maxPacketBits / 64]uint64{}
	r.pos = 0
	r.n = len(p) * 8
	for i, c := range p {
		r.w[i>>3] |= uint64(c) << uint(8*(i&7))
	}
	r.sign = 0
	if len(p) > 0 && p[len(p)-1]&0x80 != 0 {
		r.sign = 1
	}
}

// bit returns bit i of the sign-extended payload.
func (r *bitReader) bit(i int) uint64 {
	if i < 0 {
		return 0
	}
	if i >= r.n {
		return r.sign
	}
	return r.w[i>>6] >> uint(i&63) & 1
}

// get reads width bits.
func (r *bitReader) get(width int) uint64 {
	if width <= 0 {
		return 0
	}
	var v uint64
	p := r.pos
	r.pos += width
	if p+width <= r.n {
		i, o := p>>6, uint(p&63)
		v = r.w[i] >> o
		if o != 0 && int(o)+width > 64 {
			v |= r.w[i+1] << (64 - o)
		}
		return v & mask(width)
	}
	for j := 0; j < width; j++ {
		v |= r.bit(p+j) << uint(j)
	}
	return v
}

// prev returns the bit just before the read position.
func (r *bitReader) prev() uint64 { return r.bit(r.pos - 1) }
