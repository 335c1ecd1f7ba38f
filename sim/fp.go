package sim

import (
	"encoding/binary"
	"math"
	"math/big"
)

// Floating point.
//
// Every F/D operation is computed as follows. Special operands (NaN,
// infinity, zero) are dealt with first by the IEEE 754 / RISC-V rules
// (canonical NaN results, NV for signalling NaNs and invalid operations,
// DZ). Otherwise the exact mathematical result is formed with math/big:
// sums, products and fused multiply-adds exactly (4096-bit precision),
// quotients and square roots truncated to three bits beyond the target
// precision with a sticky bit for the rest. roundPack then rounds that
// value to the destination format in the requested mode (RNE, RTZ, RDN,
// RUP, RMM), handling overflow, subnormals and tininess after rounding as
// RISC-V specifies, and computes NX/UF/OF. In round-to-nearest-even, add,
// sub, mul, div and sqrt with normal operands and results take a fast path
// through Go's native arithmetic (which rounds to nearest even) and detect
// inexactness from exact error terms (TwoSum, math.FMA residuals); anything
// near the subnormal or overflow range falls back to the exact path.

// fflags bits.
const (
	fNX = 1
	fUF = 2
	fOF = 4
	fDZ = 8
	fNV = 16
)

// Rounding modes.
const (
	rmRNE = 0
	rmRTZ = 1
	rmRDN = 2
	rmRUP = 3
	rmRMM = 4
	rmDYN = 7
)

type fpFormat struct {
	exp, man uint // field widths
	bias     int
}

var (
	fmtS = fpFormat{8, 23, 127}
	fmtD = fpFormat{11, 52, 1023}
)

const (
	canonNaNS = 0x7fc00000
	canonNaND = 0x7ff8000000000000
	boxMask   = 0xffffffff00000000
)

func (f fpFormat) signBit() uint64 { return 1 << (f.exp + f.man) }
func (f fpFormat) expMax() uint64  { return 1<<f.exp - 1 }
func (f fpFormat) canonNaN() uint64 {
	switch f.man {
	case 10:
		return canonNaNH
	case 23:
		return canonNaNS
	}
	return canonNaND
}

func (f fpFormat) fields(v uint64) (neg bool, e uint64, m uint64) {
	return v&f.signBit() != 0, (v >> f.man) & f.expMax(), v & (1<<f.man - 1)
}

func (f fpFormat) isNaN(v uint64) bool {
	_, e, m := f.fields(v)
	return e == f.expMax() && m != 0
}

func (f fpFormat) isSNaN(v uint64) bool {
	return f.isNaN(v) && v>>(f.man-1)&1 == 0
}

func (f fpFormat) isInf(v uint64) bool {
	_, e, m := f.fields(v)
	return e == f.expMax() && m == 0
}

func (f fpFormat) isZero(v uint64) bool { return v&^f.signBit() == 0 }

func (f fpFormat) inf(neg bool) uint64 {
	v := f.expMax() << f.man
	if neg {
		v |= f.signBit()
	}
	return v
}

func (f fpFormat) zero(neg bool) uint64 {
	if neg {
		return f.signBit()
	}
	return 0
}

// toBig returns the exact value of a finite v.
func (f fpFormat) toBig(v uint64) *big.Float {
	neg, e, m := f.fields(v)
	z := new(big.Float).SetPrec(64)
	if e == 0 {
		z.SetUint64(m)
		z.SetMantExp(z, 1-f.bias-int(f.man))
	} else {
		z.SetUint64(m | 1<<f.man)
		z.SetMantExp(z, int(e)-f.bias-int(f.man))
	}
	if neg {
		z.Neg(z)
	}
	return z
}

// roundPack rounds x (non-zero, finite; truncated toward zero when sticky
// is set, the true value being slightly larger in magnitude) to format f.
func (f fpFormat) roundPack(x *big.Float, sticky bool, rm int) (uint64, uint64) {
	neg := x.Signbit()
	ax := new(big.Float).Abs(x)
	e := ax.MantExp(nil) - 1 // ax = 1.xxx * 2^e
	emin := 1 - f.bias
	p := int(f.man) + 1
	var flags uint64
	round := func(prec int) (ip *big.Int, inexact bool, inc bool) {
		// ip = trunc(ax * 2^(prec-1-e)), r = remainder
		q := new(big.Float).SetPrec(0).SetMantExp(ax, prec-1-e)
		q.SetPrec(ax.Prec() + 64)
		q.SetMantExp(ax, prec-1-e)
		ip, _ = q.Int(nil)
		fr := new(big.Float).SetPrec(q.Prec()).Sub(q, new(big.Float).SetInt(ip))
		c := fr.Cmp(big.NewFloat(0.5))
		nonzero := fr.Sign() != 0 || sticky
		above := c > 0 || (c == 0 && sticky)
		half := c == 0 && !sticky
		switch rm {
		case rmRNE:
			inc = above || (half && ip.Bit(0) == 1)
		case rmRMM:
			inc = above || half
		case rmRDN:
			inc = neg && nonzero
		case rmRUP:
			inc = !neg && nonzero
		}
		if inc {
			ip.Add(ip, big.NewInt(1))
		}
		return ip, nonzero, inc
	}
	if e >= emin {
		ip, inexact, _ := round(p)
		if ip.BitLen() > p {
			ip.Rsh(ip, 1)
			e++
		}
		if e+f.bias >= int(f.expMax()) {
			return f.overflow(neg, rm), fOF | fNX
		}
		if inexact {
			flags |= fNX
		}
		v := uint64(e+f.bias)<<f.man | ip.Uint64()&(1<<f.man-1)
		if neg {
			v |= f.signBit()
		}
		return v, flags
	}
	// tiny before rounding: tininess is detected after rounding with an
	// unbounded exponent
	ipFull, _, _ := round(p)
	tiny := !(e == emin-1 && ipFull.BitLen() > p)
	prec := p - (emin - e)
	var v uint64
	var inexact bool
	if prec >= 1 {
		var ip *big.Int
		ip, inexact, _ = round(prec)
		v = ip.Uint64() // may carry into the exponent field: min normal
	} else {
		// below half the smallest subnormal's position: round from zero
		inexact = true
		switch {
		case rm == rmRUP && !neg, rm == rmRDN && neg:
			v = 1
		case (rm == rmRNE || rm == rmRMM) && prec == 0:
			// exactly between 0 and the smallest subnormal or above
			half := new(big.Float).SetMantExp(big.NewFloat(1), emin-int(f.man)-1)
			c := ax.Cmp(half)
			if c > 0 || (c == 0 && sticky) || (c == 0 && rm == rmRMM) {
				v = 1
			}
		}
	}
	if inexact {
		flags |= fNX
		if tiny {
			flags |= fUF
		}
	}
	if neg {
		v |= f.signBit()
	}
	return v, flags
}

func (f fpFormat) overflow(neg bool, rm int) uint64 {
	maxFinite := (f.expMax()-1)<<f.man | (1<<f.man - 1)
	switch {
	case rm == rmRTZ, rm == rmRDN && !neg, rm == rmRUP && neg:
		if neg {
			return maxFinite | f.signBit()
		}
		return maxFinite
	}
	return f.inf(neg)
}

// packExact rounds an exact big result, handling exact zero.
func (f fpFormat) packExact(x *big.Float, rm int) (uint64, uint64) {
	if x.Sign() == 0 {
		return f.zero(rm == rmRDN), 0
	}
	return f.roundPack(x, false, rm)
}

const bigPrec = 4096

func newBig() *big.Float { return new(big.Float).SetPrec(bigPrec) }

// nanOperands handles NaN inputs of arithmetic: the result is the
// canonical NaN, with NV when one is signalling.
func (f fpFormat) nanOperands(vs ...uint64) (uint64, uint64, bool) {
	nan, snan := false, false
	for _, v := range vs {
		if f.isNaN(v) {
			nan = true
			if f.isSNaN(v) {
				snan = true
			}
		}
	}
	if !nan {
		return 0, 0, false
	}
	if snan {
		return f.canonNaN(), fNV, true
	}
	return f.canonNaN(), 0, true
}

func (f fpFormat) add(a, b uint64, rm int) (uint64, uint64) {
	if r, fl, ok := f.nanOperands(a, b); ok {
		return r, fl
	}
	ia, ib := f.isInf(a), f.isInf(b)
	switch {
	case ia && ib:
		if (a^b)&f.signBit() != 0 {
			return f.canonNaN(), fNV
		}
		return a, 0
	case ia:
		return a, 0
	case ib:
		return b, 0
	}
	if f.isZero(a) && f.isZero(b) {
		if (a^b)&f.signBit() == 0 {
			return a, 0
		}
		return f.zero(rm == rmRDN), 0
	}
	if rm == rmRNE {
		if r, fl, ok := f.addFast(a, b); ok {
			return r, fl
		}
	}
	x := newBig().Add(f.toBig(a), f.toBig(b))
	return f.packExact(x, rm)
}

func (f fpFormat) mul(a, b uint64, rm int) (uint64, uint64) {
	if r, fl, ok := f.nanOperands(a, b); ok {
		return r, fl
	}
	sign := (a ^ b) & f.signBit()
	ia, ib, za, zb := f.isInf(a), f.isInf(b), f.isZero(a), f.isZero(b)
	switch {
	case (ia && zb) || (ib && za):
		return f.canonNaN(), fNV
	case ia || ib:
		return f.inf(sign != 0), 0
	case za || zb:
		return sign, 0
	}
	if rm == rmRNE {
		if r, fl, ok := f.mulFast(a, b); ok {
			return r, fl
		}
	}
	x := newBig().Mul(f.toBig(a), f.toBig(b))
	return f.roundPack(x, false, rm)
}

func (f fpFormat) div(a, b uint64, rm int) (uint64, uint64) {
	if r, fl, ok := f.nanOperands(a, b); ok {
		return r, fl
	}
	sign := (a ^ b) & f.signBit()
	ia, ib, za, zb := f.isInf(a), f.isInf(b), f.isZero(a), f.isZero(b)
	switch {
	case (ia && ib) || (za && zb):
		return f.canonNaN(), fNV
	case ia:
		return f.inf(sign != 0), 0
	case ib:
		return sign, 0
	case zb:
		return f.inf(sign != 0), fDZ
	case za:
		return sign, 0
	}
	if rm == rmRNE {
		if r, fl, ok := f.divFast(a, b); ok {
			return r, fl
		}
	}
	q := new(big.Float).SetPrec(f.man + 4).SetMode(big.ToZero)
	q.Quo(f.toBig(a), f.toBig(b))
	return f.roundPack(q, q.Acc() != big.Exact, rm)
}

func (f fpFormat) sqrt(a uint64, rm int) (uint64, uint64) {
	if r, fl, ok := f.nanOperands(a); ok {
		return r, fl
	}
	if f.isZero(a) {
		return a, 0
	}
	if a&f.signBit() != 0 {
		return f.canonNaN(), fNV
	}
	if f.isInf(a) {
		return a, 0
	}
	if rm == rmRNE {
		if r, fl, ok := f.sqrtFast(a); ok {
			return r, fl
		}
	}
	// big.Float.Sqrt rounds but does not promise a direction: bring the
	// root down to the truncated value, then the residual gives the sticky
	// bit.
	x := f.toBig(a)
	s := new(big.Float).SetPrec(f.man + 4).SetMode(big.ToZero)
	s.Sqrt(x)
	sq := newBig().Mul(s, s)
	if sq.Cmp(x) > 0 {
		ulp := new(big.Float).SetMantExp(big.NewFloat(1), s.MantExp(nil)-int(f.man+4))
		s.Sub(s, ulp)
		sq = newBig().Mul(s, s)
	}
	return f.roundPack(s, sq.Cmp(x) != 0, rm)
}

// fma computes a*b+c with negations: negProd negates a*b, negAdd negates c.
func (f fpFormat) fma(a, b, c uint64, negProd, negAdd bool, rm int) (uint64, uint64) {
	ia, ib, ic := f.isInf(a), f.isInf(b), f.isInf(c)
	za, zb := f.isZero(a), f.isZero(b)
	// inf * 0 is invalid even when c is a quiet NaN
	if (ia && zb) || (ib && za) {
		return f.canonNaN(), fNV
	}
	if r, fl, ok := f.nanOperands(a, b, c); ok {
		return r, fl
	}
	psign := (a ^ b) & f.signBit()
	if negProd {
		psign ^= f.signBit()
	}
	if negAdd {
		c ^= f.signBit()
	}
	switch {
	case ia || ib:
		if ic && (c&f.signBit()) != psign {
			return f.canonNaN(), fNV
		}
		return f.inf(psign != 0), 0
	case ic:
		return c, 0
	}
	if za || zb {
		if f.isZero(c) {
			if c&f.signBit() == psign {
				return c, 0
			}
			return f.zero(rm == rmRDN), 0
		}
		return c, 0
	}
	p := newBig().Mul(f.toBig(a), f.toBig(b))
	if psign != 0 != p.Signbit() {
		p.Neg(p)
	}
	x := newBig().Add(p, f.toBig(c))
	return f.packExact(x, rm)
}

// Fast paths (round to nearest even, normal operands and results).

func isNormal64(v float64) bool {
	a := math.Abs(v)
	return a >= 0x1p-1000 && a <= 0x1p1000
}

func (f fpFormat) addFast(a, b uint64) (uint64, uint64, bool) {
	if f.man == 52 {
		x, y := math.Float64frombits(a), math.Float64frombits(b)
		if !isNormal64(x) || !isNormal64(y) {
			return 0, 0, false
		}
		s := x + y
		if s == 0 || !isNormal64(s) {
			return 0, 0, false
		}
		bb := s - x
		e := (x - (s - bb)) + (y - bb)
		if e != 0 {
			return math.Float64bits(s), fNX, true
		}
		return math.Float64bits(s), 0, true
	}
	if f.man != 23 {
		return 0, 0, false // half precision: exact path
	}
	x, y := float64(math.Float32frombits(uint32(a))), float64(math.Float32frombits(uint32(b)))
	if !isNormal32(x) || !isNormal32(y) {
		return 0, 0, false
	}
	_, ex := math.Frexp(x)
	_, ey := math.Frexp(y)
	if ex-ey > 28 || ey-ex > 28 {
		return 0, 0, false
	}
	s := x + y // exact
	r := float32(s)
	if s == 0 || !isNormal32(float64(r)) {
		return 0, 0, false
	}
	if float64(r) != s {
		return uint64(math.Float32bits(r)), fNX, true
	}
	return uint64(math.Float32bits(r)), 0, true
}

func isNormal32(v float64) bool {
	a := math.Abs(v)
	return a >= 0x1p-120 && a <= 0x1p120
}

func (f fpFormat) mulFast(a, b uint64) (uint64, uint64, bool) {
	if f.man == 52 {
		x, y := math.Float64frombits(a), math.Float64frombits(b)
		p := x * y
		if !isNormal64(x) || !isNormal64(y) || !isNormal64(p) || math.Abs(p) < 0x1p-900 {
			return 0, 0, false
		}
		if math.FMA(x, y, -p) != 0 {
			return math.Float64bits(p), fNX, true
		}
		return math.Float64bits(p), 0, true
	}
	if f.man != 23 {
		return 0, 0, false // half precision: exact path
	}
	x, y := float64(math.Float32frombits(uint32(a))), float64(math.Float32frombits(uint32(b)))
	p := x * y // exact
	r := float32(p)
	if !isNormal32(p) {
		return 0, 0, false
	}
	if float64(r) != p {
		return uint64(math.Float32bits(r)), fNX, true
	}
	return uint64(math.Float32bits(r)), 0, true
}

func (f fpFormat) divFast(a, b uint64) (uint64, uint64, bool) {
	if f.man == 52 {
		x, y := math.Float64frombits(a), math.Float64frombits(b)
		q := x / y
		if !isNormal64(x) || !isNormal64(y) || !isNormal64(q) || math.Abs(x) < 0x1p-900 || math.Abs(q) < 0x1p-900 {
			return 0, 0, false
		}
		if math.FMA(-q, y, x) != 0 {
			return math.Float64bits(q), fNX, true
		}
		return math.Float64bits(q), 0, true
	}
	if f.man != 23 {
		return 0, 0, false // half precision: exact path
	}
	x, y := float64(math.Float32frombits(uint32(a))), float64(math.Float32frombits(uint32(b)))
	q := x / y
	r := float32(q) // double rounding is innocuous for division (53 >= 2*24+2)
	if !isNormal32(x) || !isNormal32(y) || !isNormal32(q) {
		return 0, 0, false
	}
	if float64(r) != q || math.FMA(-q, y, x) != 0 {
		return uint64(math.Float32bits(r)), fNX, true
	}
	return uint64(math.Float32bits(r)), 0, true
}

func (f fpFormat) sqrtFast(a uint64) (uint64, uint64, bool) {
	if f.man == 52 {
		x := math.Float64frombits(a)
		if !isNormal64(x) {
			return 0, 0, false
		}
		s := math.Sqrt(x)
		if math.FMA(-s, s, x) != 0 {
			return math.Float64bits(s), fNX, true
		}
		return math.Float64bits(s), 0, true
	}
	if f.man != 23 {
		return 0, 0, false // half precision: exact path
	}
	x := float64(math.Float32frombits(uint32(a)))
	if !isNormal32(x) {
		return 0, 0, false
	}
	s := math.Sqrt(x)
	r := float32(s)
	if float64(r) != s || math.FMA(-s, s, x) != 0 {
		return uint64(math.Float32bits(r)), fNX, true
	}
	return uint64(math.Float32bits(r)), 0, true
}

// Comparisons, min/max, classification.

// lt compares two non-NaN values.
func (f fpFormat) lt(a, b uint64) bool {
	na, nb := a&f.signBit() != 0, b&f.signBit() != 0
	if f.isZero(a) && f.isZero(b) {
		return false
	}
	switch {
	case na && !nb:
		return true
	case !na && nb:
		return false
	case !na:
		return a < b
	default:
		return a > b
	}
}

func (f fpFormat) minmax(a, b uint64, max bool) (uint64, uint64) {
	var fl uint64
	if f.isSNaN(a) || f.isSNaN(b) {
		fl = fNV
	}
	an, bn := f.isNaN(a), f.isNaN(b)
	switch {
	case an && bn:
		return f.canonNaN(), fl
	case an:
		return b, fl
	case bn:
		return a, fl
	}
	// -0 < +0 for fmin/fmax
	less := f.lt(a, b) || (f.isZero(a) && f.isZero(b) && a&f.signBit() != 0 && b&f.signBit() == 0)
	if less != max {
		return a, fl
	}
	return b, fl
}

func (f fpFormat) class(v uint64) uint64 {
	neg, e, m := f.fields(v)
	switch {
	case e == f.expMax() && m == 0:
		if neg {
			return 1 << 0
		}
		return 1 << 7
	case e == f.expMax():
		if f.isSNaN(v) {
			return 1 << 8
		}
		return 1 << 9
	case e == 0 && m == 0:
		if neg {
			return 1 << 3
		}
		return 1 << 4
	case e == 0:
		if neg {
			return 1 << 2
		}
		return 1 << 5
	}
	if neg {
		return 1 << 1
	}
	return 1 << 6
}

// toInt converts to a signed (bits 32 or 64) or unsigned integer with
// saturation (RISC-V: NaN and +inf give the largest value).
func (f fpFormat) toInt(v uint64, rm int, nbits uint, signed bool) (uint64, uint64) {
	var lo, hi *big.Int
	if signed {
		lo = new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), nbits-1))
		hi = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), nbits-1), big.NewInt(1))
	} else {
		lo = big.NewInt(0)
		hi = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), nbits), big.NewInt(1))
	}
	enc := func(x *big.Int) uint64 {
		r := x.Uint64()
		if x.Sign() < 0 {
			r = uint64(x.Int64())
		}
		if nbits == 32 {
			// 32-bit results, saturated ones included, are
			// sign-extended: fcvt.wu of +inf is all ones on RV64
			r = uint64(int64(int32(r)))
		}
		return r
	}
	if f.isNaN(v) || (f.isInf(v) && v&f.signBit() == 0) {
		return enc(hi), fNV
	}
	if f.isInf(v) {
		return enc(lo), fNV
	}
	x := f.toBig(v)
	neg := x.Signbit()
	ax := new(big.Float).Abs(x)
	ip, _ := ax.Int(nil)
	fr := newBig().Sub(ax, new(big.Float).SetInt(ip))
	inexact := fr.Sign() != 0
	c := fr.Cmp(big.NewFloat(0.5))
	inc := false
	switch rm {
	case rmRNE:
		inc = c > 0 || (c == 0 && ip.Bit(0) == 1)
	case rmRMM:
		inc = c >= 0
	case rmRDN:
		inc = neg && inexact
	case rmRUP:
		inc = !neg && inexact
	}
	if inc {
		ip.Add(ip, big.NewInt(1))
	}
	if neg {
		ip.Neg(ip)
	}
	if ip.Cmp(lo) < 0 {
		return enc(lo), fNV
	}
	if ip.Cmp(hi) > 0 {
		return enc(hi), fNV
	}
	r := enc(ip)
	if inexact {
		return r, fNX
	}
	return r, 0
}

func (f fpFormat) fromInt(v uint64, signed bool, rm int) (uint64, uint64) {
	if v == 0 {
		return 0, 0 // +0 in every rounding mode
	}
	x := newBig()
	if signed {
		x.SetInt64(int64(v))
	} else {
		x.SetUint64(v)
	}
	return f.packExact(x, rm)
}

// convert converts between formats (from -> f).
func (f fpFormat) convert(from fpFormat, v uint64, rm int) (uint64, uint64) {
	if from.isNaN(v) {
		if from.isSNaN(v) {
			return f.canonNaN(), fNV
		}
		return f.canonNaN(), 0
	}
	neg := v&from.signBit() != 0
	if from.isInf(v) {
		return f.inf(neg), 0
	}
	if from.isZero(v) {
		return f.zero(neg), 0
	}
	return f.roundPack(from.toBig(v), false, rm)
}

// Register access.

// readS returns a single from an FP register: an improperly NaN-boxed
// value reads as the canonical NaN.
func (h *Hart) readS(r uint8) uint64 {
	v := h.f[r&31]
	if v&boxMask != boxMask {
		return canonNaNS
	}
	return v & 0xffffffff
}

func (h *Hart) writeF(r uint8, v uint64, dbl bool) {
	if !dbl {
		v |= boxMask
	}
	h.f[r&31] = v
	h.fsDirty()
}

// execFP executes an F/D instruction (FS already checked).
func (h *Hart) execFP(d *inst) bool {
	switch d.op {
	case opFLW, opFLD:
		size := uint64(4)
		if d.op == opFLD {
			size = 8
		}
		va := (h.x[d.rs1&31] + uint64(d.imm)) & h.amask
		v, ok := h.loadFP(va, size)
		if !ok {
			return false
		}
		h.writeF(d.rd, v, size == 8)
		return true
	case opFSW, opFSD:
		size := uint64(4)
		v := h.f[d.rs2&31]
		if d.op == opFSD {
			size = 8
		} else {
			v &= 0xffffffff
		}
		va := (h.x[d.rs1&31] + uint64(d.imm)) & h.amask
		return h.storeFP(va, size, v)
	}
	f := fmtS
	if d.dbl {
		f = fmtD
	}
	rm := int(d.rm)
	if rm == rmDYN {
		rm = int(h.csr.frm)
	}
	needRM := false
	switch d.fop {
	case fpADD, fpSUB, fpMUL, fpDIV, fpSQRT, fpMADD, fpMSUB, fpNMSUB, fpNMADD,
		fpCVTWf, fpCVTWUf, fpCVTLf, fpCVTLUf, fpCVTfW, fpCVTfWU, fpCVTfL, fpCVTfLU, fpCVTSD, fpCVTDS:
		needRM = true
	}
	if needRM && rm > rmRMM {
		h.illegal(d)
		return false
	}
	rd := func(r uint8) uint64 {
		if d.dbl {
			return h.f[r&31]
		}
		return h.readS(r)
	}
	a, b := rd(d.rs1), rd(d.rs2)
	var res, fl uint64
	toX := false // result goes to an integer register
	switch d.fop {
	case fpADD:
		res, fl = f.add(a, b, rm)
	case fpSUB:
		res, fl = f.add(a, b^f.signBit(), rm)
	case fpMUL:
		res, fl = f.mul(a, b, rm)
	case fpDIV:
		res, fl = f.div(a, b, rm)
	case fpSQRT:
		res, fl = f.sqrt(a, rm)
	case fpMADD, fpMSUB, fpNMSUB, fpNMADD:
		c := rd(d.rs3)
		res, fl = f.fma(a, b, c, d.fop == fpNMSUB || d.fop == fpNMADD, d.fop == fpMSUB || d.fop == fpNMADD, rm)
	case fpSGNJ:
		res = a&^f.signBit() | b&f.signBit()
	case fpSGNJN:
		res = a&^f.signBit() | (^b)&f.signBit()
	case fpSGNJX:
		res = a ^ b&f.signBit()
	case fpMIN:
		res, fl = f.minmax(a, b, false)
	case fpMAX:
		res, fl = f.minmax(a, b, true)
	case fpEQ, fpLT, fpLE:
		toX = true
		an, bn := f.isNaN(a), f.isNaN(b)
		if an || bn {
			if d.fop != fpEQ || f.isSNaN(a) || f.isSNaN(b) {
				fl = fNV
			}
			res = 0
			break
		}
		switch d.fop {
		case fpEQ:
			res = b2u(a == b || (f.isZero(a) && f.isZero(b)))
		case fpLT:
			res = b2u(f.lt(a, b))
		default:
			res = b2u(f.lt(a, b) || a == b || (f.isZero(a) && f.isZero(b)))
		}
	case fpCLASS:
		toX = true
		res = f.class(a)
	case fpMVXf:
		toX = true
		if d.dbl {
			if h.xlen == 32 {
				h.illegal(d)
				return false
			}
			res = h.f[d.rs1&31]
		} else {
			res = uint64(int64(int32(h.f[d.rs1&31])))
		}
	case fpMVfX:
		if d.dbl && h.xlen == 32 {
			h.illegal(d)
			return false
		}
		res = h.x[d.rs1&31]
		if !d.dbl {
			res &= 0xffffffff
		}
	case fpCVTWf, fpCVTWUf, fpCVTLf, fpCVTLUf:
		toX = true
		if (d.fop == fpCVTLf || d.fop == fpCVTLUf) && h.xlen == 32 {
			h.illegal(d)
			return false
		}
		nb := uint(32)
		if d.fop == fpCVTLf || d.fop == fpCVTLUf {
			nb = 64
		}
		res, fl = f.toInt(a, rm, nb, d.fop == fpCVTWf || d.fop == fpCVTLf)
	case fpCVTfW, fpCVTfWU, fpCVTfL, fpCVTfLU:
		v := h.x[d.rs1&31]
		switch d.fop {
		case fpCVTfW:
			v = uint64(int64(int32(v)))
		case fpCVTfWU:
			v = uint64(uint32(v))
		default:
			if h.xlen == 32 {
				h.illegal(d)
				return false
			}
		}
		res, fl = f.fromInt(v, d.fop == fpCVTfW || d.fop == fpCVTfL, rm)
	case fpCVTSD:
		res, fl = fmtS.convert(fmtD, h.f[d.rs1&31], rm)
	case fpCVTDS:
		res, fl = fmtD.convert(fmtS, h.readS(d.rs1), rm)
	default:
		h.illegal(d)
		return false
	}
	if fl != 0 {
		h.csr.fflags |= fl
		h.fsDirty()
	}
	if toX {
		if d.rd != 0 {
			h.x[d.rd&31] = h.sext32(res)
		}
		return true
	}
	h.writeF(d.rd, res, d.dbl)
	return true
}

func (h *Hart) loadFP(va, size uint64) (uint64, bool) {
	e := &h.rtlb[(va>>pageShift)&tlbMask]
	if e.tag == va>>pageShift && va&(size-1) == 0 {
		if size == 4 {
			return uint64(binary.LittleEndian.Uint32(e.page[va&pageMask:])), true
		}
		return binary.LittleEndian.Uint64(e.page[va&pageMask:]), true
	}
	return h.loadSlow(va, size)
}

func (h *Hart) storeFP(va, size, v uint64) bool {
	e := &h.wtlb[(va>>pageShift)&tlbMask]
	if e.tag == va>>pageShift && va&(size-1) == 0 {
		if size == 4 {
			binary.LittleEndian.PutUint32(e.page[va&pageMask:], uint32(v))
		} else {
			binary.LittleEndian.PutUint64(e.page[va&pageMask:], v)
		}
		return true
	}
	return h.storeSlow(va, size, v)
}
