package riscv

import (
	"errors"
	"strings"
)

// Ext is a set of ISA extensions, for [DecodeExt] and [DisasmExt]. The base
// integer ISA (RV32I or RV64I), Zicsr, Zifencei and the privileged
// instructions (ecall, ebreak, mret, sret, dret, wfi, sfence.vma) are always
// present and have no bit.
type Ext uint32

// The extensions. ExtC is the compressed base (Zca); the compressed
// floating-point loads and stores are ExtZcf (RV32 only) and ExtZcd, as in
// the Zc* specification ("C" with F and D is ExtC|ExtZcf|ExtZcd).
const (
	ExtM   Ext = 1 << iota // integer multiply and divide
	ExtA                   // atomics
	ExtF                   // single-precision floating point
	ExtD                   // double-precision floating point
	ExtC                   // compressed instructions (Zca)
	ExtZcf                 // c.flw, c.fsw, c.flwsp, c.fswsp (RV32 only)
	ExtZcd                 // c.fld, c.fsd, c.fldsp, c.fsdsp
	ExtZba                 // address generation
	ExtZbb                 // basic bit manipulation
	ExtZbs                 // single-bit instructions
	ExtZcb                 // simple compressed instructions (c.lbu, c.mul, c.not, ...)
	// ExtZcmp is compressed push/pop and double moves. It reuses the
	// encodings of c.fsdsp, so the specification does not allow it with
	// Zcd; when both are set anyway, c.fsdsp's encodings mean Zcmp/Zcmt
	// (or are reserved) and the other Zcd instructions stay.
	ExtZcmp
	ExtZcmt // compressed table jumps (cm.jt, cm.jalt); shares c.fsdsp's encodings like ExtZcmp

	ExtZbc  // carry-less multiplication (clmul, clmulh, clmulr)
	ExtZbkb // bit manipulation for cryptography: pack, packh, packw, brev8, zip/unzip (RV32), and Zbb's rotates, rev8, andn, orn, xnor
	ExtZbkx // crossbar permutations (xperm4, xperm8)
	// ExtZfh is half-precision floating point. It includes Zfhmin:
	// DecodeExt adds ExtZfhmin when ExtZfh is set. Both need ExtF.
	ExtZfh
	ExtZfhmin      // minimal half precision: flh, fsh, fmv.x.h, fmv.h.x and the conversions to and from S (and D with ExtD)
	ExtZicbom      // cache-block management (cbo.clean, cbo.flush, cbo.inval)
	ExtZicboz      // cache-block zero (cbo.zero)
	ExtZicbop      // cache-block prefetch hints (prefetch.i/r/w, which are ori with rd=x0 otherwise)
	ExtZicond      // integer conditional operations (czero.eqz, czero.nez)
	ExtZihintpause // the pause hint (a fence, which is always decoded; the bit only names the extension)
	ExtZimop       // may-be-operations (mop.r.N, mop.rr.N)
	ExtZcmop       // compressed may-be-operations (c.mop.N); needs ExtC
	ExtSvinval     // fine-grained address-translation cache invalidation (sinval.vma, sfence.w.inval, sfence.inval.ir)

	// ExtG is IMAFD (with Zicsr and Zifencei, which are always present).
	ExtG = ExtM | ExtA | ExtF | ExtD
	// ExtGC is G plus all of C: Zca, Zcf (meaningful on RV32 only) and Zcd.
	ExtGC = ExtG | ExtC | ExtZcf | ExtZcd
	// ExtB is the B extension: Zba, Zbb and Zbs.
	ExtB = ExtZba | ExtZbb | ExtZbs

	// ExtLinux is the set of extensions beyond G, C and B that current
	// Linux kernels and toolchains use and that the simulator implements:
	// Zbc, Zbkb, Zbkx, Zfh (with Zfhmin), Zicbom, Zicboz, Zicbop, Zicond,
	// Zihintpause, Zimop, Zcmop and Svinval.
	ExtLinux = ExtZbc | ExtZbkb | ExtZbkx | ExtZfh | ExtZfhmin | ExtZicbom | ExtZicboz | ExtZicbop |
		ExtZicond | ExtZihintpause | ExtZimop | ExtZcmop | ExtSvinval

	// ExtRV64Default is what [Decode] assumes for XLEN 64:
	// RV64GC plus Zba, Zbb, Zbs, Zcb and ExtLinux
	// (rv64gc_zba_zbb_zbs_zcb_zbc_zbkb_zbkx_zfh_zfhmin_zicbom_zicboz_zicbop_zicond_zihintpause_zimop_zcmop_svinval).
	ExtRV64Default = ExtGC&^ExtZcf | ExtB | ExtZcb | ExtLinux
	// ExtRV32Default is what [Decode] assumes for XLEN 32: RV32IMAFD with
	// Zca and Zcf, Zba, Zbb, Zbs, Zcb, Zcmp, Zcmt and ExtLinux
	// (rv32imafd_zca_zcf_zba_zbb_zbs_zcb_zcmp_zcmt_zbc_...). Zcmp/Zcmt
	// exclude Zcd, so c.fld, c.fsd, c.fldsp and c.fsdsp are illegal; use
	// [DecodeExt] with ExtGC for an rv32gc core.
	ExtRV32Default = ExtG | ExtC | ExtZcf | ExtB | ExtZcb | ExtZcmp | ExtZcmt | ExtLinux
)

// DefaultExt returns the extensions [Decode] and [Disasm] assume for xlen:
// ExtRV32Default for 32 and ExtRV64Default otherwise.
func DefaultExt(xlen int) Ext {
	if xlen == 32 {
		return ExtRV32Default
	}
	return ExtRV64Default
}

// extNames lists the extension bits with their ISA-string names, in the
// canonical order of ISA strings.
var extNames = []struct {
	name string
	ext  Ext
}{
	{"m", ExtM},
	{"a", ExtA},
	{"f", ExtF},
	{"d", ExtD},
	{"zca", ExtC},
	{"zcf", ExtZcf},
	{"zcd", ExtZcd},
	{"zba", ExtZba},
	{"zbb", ExtZbb},
	{"zbs", ExtZbs},
	{"zcb", ExtZcb},
	{"zcmp", ExtZcmp},
	{"zcmt", ExtZcmt},
	{"zbc", ExtZbc},
	{"zbkb", ExtZbkb},
	{"zbkx", ExtZbkx},
	{"zfh", ExtZfh},
	{"zfhmin", ExtZfhmin},
	{"zicbom", ExtZicbom},
	{"zicboz", ExtZicboz},
	{"zicbop", ExtZicbop},
	{"zicond", ExtZicond},
	{"zihintpause", ExtZihintpause},
	{"zimop", ExtZimop},
	{"zcmop", ExtZcmop},
	{"svinval", ExtSvinval},
}

// String returns the extensions as the tail of an ISA string, such as
// "m_a_f_d_zca_zcd" (single letters are separated too, for simplicity).
func (e Ext) String() string {
	var parts []string
	for _, n := range extNames {
		if e&n.ext != 0 {
			parts = append(parts, n.name)
		}
	}
	return strings.Join(parts, "_")
}

// ParseArch parses a RISC-V ISA string, such as "rv64gc_zba_zbb_zbs" or
// the Tag_RISCV_arch attribute of an ELF file
// ("rv32i2p1_m2p0_a2p1_c2p0_zcmp1p0"), into an XLEN and a set of extensions.
// Version numbers are ignored, letters and extensions this package does not
// know are skipped, and the implications of the specifications are applied:
// G is IMAFD plus Zicsr and Zifencei, C is Zca plus Zcf (RV32 with F) and Zcd
// (with D), B is Zba, Zbb and Zbs, Zce is Zca, Zcb and Zcmp (plus Zcmt and,
// on RV32 with F, Zcf), D implies F, Zfh implies Zfhmin, Zfh and Zfhmin
// imply F, Zcmop implies Zca, Zk, Zkn and Zks imply Zbkb and Zbkx, and
// Zcmp/Zcmt remove Zcd.
func ParseArch(s string) (xlen int, ext Ext, err error) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch {
	case strings.HasPrefix(s, "rv32"):
		xlen = 32
	case strings.HasPrefix(s, "rv64"):
		xlen = 64
	default:
		return 0, 0, errors.New("riscv: ISA string does not start with rv32 or rv64: " + s)
	}
	s = s[4:]
	// Single-letter extensions come first, each with an optional version
	// (2p1), up to the first underscore or multi-letter (z/s/x) extension;
	// tools also write them separated by underscores.
	var names []string
	for len(s) > 0 && s[0] != '_' && s[0] != 'z' && s[0] != 's' && s[0] != 'x' {
		l := s[:1]
		s = s[1:]
		for len(s) > 0 && (s[0] >= '0' && s[0] <= '9' || s[0] == 'p' && len(s) > 1 && s[1] >= '0' && s[1] <= '9') {
			s = s[1:]
		}
		names = append(names, l)
	}
	for _, part := range strings.Split(s, "_") {
		names = append(names, stripVersion(part))
	}
	var c, zce, zcdExplicit bool
	for _, name := range names {
		switch name {
		case "g":
			ext |= ExtG
		case "m":
			ext |= ExtM
		case "a":
			ext |= ExtA
		case "f":
			ext |= ExtF
		case "d":
			ext |= ExtD | ExtF
		case "c":
			c = true
		case "b":
			ext |= ExtB
		case "zce":
			zce = true
		case "zcd":
			zcdExplicit = true
		case "zk", "zkn", "zks":
			ext |= ExtZbkb | ExtZbkx // scalar crypto (Zbkc has no bit of its own)
		}
		for _, n := range extNames {
			if name == n.name && (name[0] == 'z' || name[0] == 's') {
				ext |= n.ext
			}
		}
	}
	if ext&ExtZfh != 0 {
		ext |= ExtZfhmin
	}
	if ext&ExtZfhmin != 0 {
		ext |= ExtF
	}
	if ext&ExtZcmop != 0 {
		ext |= ExtC
	}
	if c {
		ext |= ExtC
		if ext&ExtF != 0 && xlen == 32 {
			ext |= ExtZcf
		}
		if ext&ExtD != 0 {
			ext |= ExtZcd
		}
	}
	if zce {
		ext |= ExtC | ExtZcb | ExtZcmp | ExtZcmt
		if ext&ExtF != 0 && xlen == 32 {
			ext |= ExtZcf
		}
	}
	if ext&(ExtZcmp|ExtZcmt) != 0 && !zcdExplicit {
		ext &^= ExtZcd
	}
	if xlen == 64 {
		ext &^= ExtZcf
	}
	return xlen, ext, nil
}

// stripVersion removes a trailing version number ("2", "2p1") from an
// extension name in an ISA string.
func stripVersion(s string) string {
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	i := len(s)
	for i > 0 && isDigit(s[i-1]) {
		i--
	}
	if i == len(s) {
		return s
	}
	if i > 1 && s[i-1] == 'p' && isDigit(s[i-2]) {
		j := i - 1
		for j > 0 && isDigit(s[j-1]) {
			j--
		}
		return s[:j]
	}
	return s[:i]
}
