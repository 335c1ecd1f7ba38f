package riscv

import (
	"strconv"
	"strings"
	"sync"

	"golang.org/x/arch/riscv64/riscv64asm"
)

// xNames are the ABI names of the integer registers, as objdump prints them.
var xNames = [32]string{
	"zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2",
	"s0", "s1", "a0", "a1", "a2", "a3", "a4", "a5",
	"a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7",
	"s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6",
}

// fNames are the ABI names of the floating-point registers.
var fNames = [32]string{
	"ft0", "ft1", "ft2", "ft3", "ft4", "ft5", "ft6", "ft7",
	"fs0", "fs1", "fa0", "fa1", "fa2", "fa3", "fa4", "fa5",
	"fa6", "fa7", "fs2", "fs3", "fs4", "fs5", "fs6", "fs7",
	"fs8", "fs9", "fs10", "fs11", "ft8", "ft9", "ft10", "ft11",
}

// rmNames are the static rounding modes; 5 and 6 are reserved and 7 (dyn)
// is not printed.
var rmNames = [8]string{"rne", "rtz", "rdn", "rup", "rmm", "", "", "dyn"}

// XReg returns the ABI name of integer register n ("a0" for 10), or "" when
// n is not 0..31.
func XReg(n uint8) string {
	if n < 32 {
		return xNames[n]
	}
	return ""
}

// FReg returns the ABI name of floating-point register n ("fa0" for 10), or
// "" when n is not 0..31.
func FReg(n uint8) string {
	if n < 32 {
		return fNames[n]
	}
	return ""
}

// Disasm returns GNU-objdump-like text for the instruction at pc ("addi
// a0,a0,1", "beq a0,a1,0x80000010", c.jal printed as "jal 0x..." as objdump
// shows it), for xlen 32 or 64 and the extensions of [DefaultExt]. Branch
// and jump targets are absolute addresses in hex. Encodings that are not
// instructions print as ".insn 0x..." (the all-zero 16-bit parcel as
// "unimp", 48-bit and longer encodings as "unknown"). It never panics and
// is safe for concurrent use.
func Disasm(raw uint32, pc uint64, xlen int) string {
	return DisasmExt(raw, pc, xlen, DefaultExt(xlen))
}

// DisasmExt is [Disasm] for a given set of extensions.
func DisasmExt(raw uint32, pc uint64, xlen int, ext Ext) string {
	in := DecodeExt(raw, xlen, ext)
	return in.disasm(pc)
}

// String returns the instruction's text as [Disasm] prints it at address 0
// (so branch targets are the offsets).
func (i Inst) String() string { return i.disasm(0) }

func (i Inst) disasm(pc uint64) string {
	o := i.Op.row()
	if i.Class == ClassIllegal || i.Op&^opRV32 == OpIllegal {
		return illegalText(i)
	}
	if o.dis == disAsm {
		if s, ok := asmText(i, o, pc); ok {
			return s
		}
	}
	if s, ok := handText(i, o, pc); ok {
		return s
	}
	return illegalText(i)
}

// illegalText prints an encoding that is not an instruction.
func illegalText(i Inst) string {
	switch i.Len {
	case 2:
		if i.Raw&0xffff == 0 {
			return "unimp"
		}
		return ".insn 0x" + hex(uint64(i.Raw&0xffff), 4)
	case 4:
		return ".insn 0x" + hex(uint64(i.Raw), 8)
	}
	return "unknown"
}

// hex formats v in lower-case hex, zero-padded to at least width digits.
func hex(v uint64, width int) string {
	s := strconv.FormatUint(v, 16)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}

// targetText formats a branch or jump target as objdump does without
// symbols: "0x" and hex digits.
func targetText(i Inst, pc uint64) string {
	return "0x" + strconv.FormatUint(i.Target(pc), 16)
}

// asmMu serializes calls of riscv64asm.Decode.
var asmMu sync.Mutex

// asmText disassembles i with riscv64asm and rewrites its text into
// objdump's: ABI register names, absolute targets, static rounding modes
// and objdump's spelling where riscv64asm's differs.
func asmText(i Inst, o *opInfo, pc uint64) (string, bool) {
	var b [4]byte
	b[0], b[1], b[2], b[3] = byte(i.Raw), byte(i.Raw>>8), byte(i.Raw>>16), byte(i.Raw>>24)
	// riscv64asm.Decode records coverage in a package variable without a
	// lock, so calls must not overlap.
	asmMu.Lock()
	ai, err := riscv64asm.Decode(b[:i.Len])
	asmMu.Unlock()
	if err != nil || ai.Len != int(i.Len) {
		return "", false
	}
	text := riscv64asm.GNUSyntax(ai)
	mn, rest, _ := strings.Cut(text, " ")
	var args []string
	if rest != "" {
		args = strings.Split(rest, ",")
	}
	csrTok := ""
	for _, a := range ai.Args {
		if c, ok := a.(riscv64asm.CSR); ok {
			csrTok = strings.ToLower(c.String())
		}
	}
	for k, a := range args {
		if csrTok != "" && a == csrTok {
			args[k] = CSRName(i.Raw >> 20)
			continue
		}
		args[k] = abiArg(a)
	}
	switch {
	case i.Class == ClassBranch || i.Class == ClassJump:
		if len(args) > 0 {
			args[len(args)-1] = targetText(i, pc)
		}
	case o.chk == chkRM:
		if rm := i.Raw >> 12 & 7; rm != 7 {
			args = append(args, rmNames[rm])
		}
	}
	mn, args = fixAsm(i, o, pc, mn, args)
	if len(args) == 0 {
		return mn, true
	}
	return mn + " " + strings.Join(args, ","), true
}

// abiArg rewrites the register names of one riscv64asm operand ("x10",
// "f3", "8(x2)", "(x5)") to ABI names.
func abiArg(a string) string {
	if r, ok := regName(a); ok {
		return r
	}
	if open := strings.IndexByte(a, '('); open >= 0 && strings.HasSuffix(a, ")") {
		if r, ok := regName(a[open+1 : len(a)-1]); ok {
			return a[:open+1] + r + ")"
		}
	}
	return a
}

// regName maps "xN" or "fN" to its ABI name.
func regName(s string) (string, bool) {
	if len(s) < 2 || len(s) > 3 || s[0] != 'x' && s[0] != 'f' {
		return "", false
	}
	n, err := strconv.Atoi(s[1:])
	if err != nil || n < 0 || n > 31 {
		return "", false
	}
	if s[0] == 'x' {
		return xNames[n], true
	}
	return fNames[n], true
}

// fixAsm corrects riscv64asm's text where it differs from objdump's.
func fixAsm(i Inst, o *opInfo, pc uint64, mn string, args []string) (string, []string) {
	x := i.Raw
	switch o.name {
	case "jalr", "c.jalr", "c.jr":
		// objdump leaves out rd when it is ra and the offset when it is 0.
		rs := xNames[i.Rs1]
		if i.Imm != 0 {
			rs = strconv.FormatInt(i.Imm, 10) + "(" + rs + ")"
		}
		switch i.Rd {
		case 0:
			return mn, args // ret, jr rs, jr off(rs): riscv64asm agrees
		case 1:
			return "jalr", []string{rs}
		}
		return "jalr", []string{xNames[i.Rd], rs}
	case "add":
		// objdump keeps mv for c.mv and addi; a 32-bit add stays add.
		return "add", []string{xNames[i.Rd], xNames[i.Rs1], xNames[x>>20&0x1f]}
	case "slt":
		// objdump tests rs2 = x0 (sltz) before rs1 = x0 (sgtz).
		if x>>20&0x1f == 0 {
			return "sltz", []string{xNames[i.Rd], xNames[i.Rs1]}
		}
	case "add.uw":
		if x>>20&0x1f == 0 {
			return "zext.w", []string{xNames[i.Rd], xNames[i.Rs1]}
		}
	case "csrrwi":
		// The immediate forms of fsflags and fsrm.
		switch x >> 20 {
		case 0x001:
			return "fsflagsi", []string{xNames[i.Rd], strconv.Itoa(int(x >> 15 & 0x1f))}
		case 0x002:
			return "fsrmi", []string{xNames[i.Rd], strconv.Itoa(int(x >> 15 & 0x1f))}
		}
	case "addi":
		// objdump prints li for any rs1 = x0 but the nop.
		if i.Rd == 0 && i.Rs1 == 0 && x>>20 != 0 {
			return "li", []string{"zero", strconv.Itoa(int(int32(x) >> 20))}
		}
	case "bge", "blt":
		// With rs1 = x0 objdump prefers blez/bgtz rs2; riscv64asm tests
		// rs2 first. When both are x0, objdump says blez but bltz.
		if i.Rs1 == 0 && (o.name == "bge" || x>>20&0x1f != 0) {
			mn = "blez"
			if o.name == "blt" {
				mn = "bgtz"
			}
			return mn, []string{xNames[x>>20&0x1f], targetText(i, pc)}
		}
	case "ori":
		// riscv64asm prints Zicbop's prefetch.* for ori with rd = x0, which
		// is a HINT of the base ISA without Zicbop.
		if i.Rd == 0 {
			return "ori", []string{"zero", xNames[i.Rs1], strconv.Itoa(int(int32(x) >> 20))}
		}
	case "csrrw":
		// riscv64asm forgets the csrw alias for the cycle CSR.
		if i.Rd == 0 && x>>20 == 0xc00 && i.Rs1 != 0 {
			return "csrw", []string{"cycle", xNames[i.Rs1]}
		}
	case "csrrs":
		// The RV32 counter-high reads have aliases of their own.
		if i.XLen() == 32 && i.Rs1 == 0 && x>>20 >= 0xc80 && x>>20 <= 0xc82 {
			return [...]string{"rdcycleh", "rdtimeh", "rdinstreth"}[x>>20-0xc80], []string{xNames[i.Rd]}
		}
	case "c.lui":
		// riscv64asm sign-extends the upper immediate past 20 bits.
		return "lui", []string{xNames[i.Rd], "0x" + strconv.FormatUint(uint64(uint32(cImm6(x))&0xfffff), 16)}
	case "fsgnj.h", "fsgnjn.h", "fsgnjx.h":
		// riscv64asm knows the fmv/fneg/fabs aliases for S and D only.
		if i.Rs1 == uint8(x>>20&0x1f) {
			return map[string]string{"fsgnj.h": "fmv.h", "fsgnjn.h": "fneg.h", "fsgnjx.h": "fabs.h"}[o.name], []string{fNames[i.Rd], fNames[i.Rs1]}
		}
	case "fcvt.d.s", "fcvt.d.w", "fcvt.d.wu", "fcvt.s.h":
		// These conversions are exact: objdump prints the rounding mode
		// only when it is not the default rne.
		if rm := x >> 12 & 7; rm == 7 {
			args = append(args, "dyn")
		} else if rm == 0 && len(args) > 0 {
			args = args[:len(args)-1]
		}
	}
	return mn, args
}

// handText disassembles the instructions riscv64asm does not know or gets
// wrong.
func handText(i Inst, o *opInfo, pc uint64) (string, bool) {
	x := i.Raw
	rdc := xNames[x>>2&7+8]  // rd'/rs2' (bits 4:2)
	rs1c := xNames[x>>7&7+8] // rs1'/rd' (bits 9:7)
	switch o.name {
	case "fence":
		return fenceText(x), true
	case "sret", "mret", "dret", "wfi", "sfence.w.inval", "sfence.inval.ir":
		return o.name, true
	case "sfence.vma":
		rs1, rs2 := x>>15&0x1f, x>>20&0x1f
		switch {
		case rs1 == 0 && rs2 == 0:
			return "sfence.vma", true
		case rs2 == 0:
			return "sfence.vma " + xNames[rs1], true
		}
		return "sfence.vma " + xNames[rs1] + "," + xNames[rs2], true
	case "sinval.vma":
		// objdump prints both operands, zero included.
		return "sinval.vma " + xNames[x>>15&0x1f] + "," + xNames[x>>20&0x1f], true
	case "rev8", "zext.h", "brev8", "zip", "unzip":
		return o.name + " " + xNames[i.Rd] + "," + xNames[i.Rs1], true
	case "pack", "packh", "packw", "xperm4", "xperm8":
		return o.name + " " + xNames[i.Rd] + "," + xNames[i.Rs1] + "," + xNames[x>>20&0x1f], true
	case "prefetch.i", "prefetch.r", "prefetch.w":
		return o.name + " " + strconv.Itoa(int(int32(x)>>25<<5)) + "(" + xNames[i.Rs1] + ")", true
	case "mop.r":
		n := x>>30&1<<4 | x>>26&3<<2 | x>>20&3
		return "mop.r." + strconv.Itoa(int(n)) + " " + xNames[i.Rd] + "," + xNames[i.Rs1], true
	case "mop.rr":
		n := x>>30&1<<2 | x>>26&3
		return "mop.rr." + strconv.Itoa(int(n)) + " " + xNames[i.Rd] + "," + xNames[i.Rs1] + "," + xNames[x>>20&0x1f], true
	case "c.mop":
		return "c.mop." + strconv.Itoa(int(x>>7&0x1f)), true
	case "fcvt.d.h", "fcvt.h.d":
		// fcvt.d.h is exact: like fcvt.d.s, objdump leaves out rne
		// rather than dyn.
		t := o.name + " " + fNames[i.Rd] + "," + fNames[i.Rs1]
		rm := x >> 12 & 7
		switch {
		case o.name == "fcvt.d.h" && rm == 7:
			t += ",dyn"
		case o.name == "fcvt.d.h" && rm == 0, rm == 7:
		default:
			t += "," + rmNames[rm]
		}
		return t, true
	// HINT encodings, which riscv64asm rejects, printed as objdump does.
	case "c.nop":
		if imm := cImm6(x); imm != 0 {
			return "c.nop " + strconv.Itoa(int(imm)), true
		}
		return "nop", true
	case "c.addi":
		return "addi " + xNames[i.Rd] + "," + xNames[i.Rd] + "," + strconv.Itoa(int(cImm6(x))), true
	case "c.li":
		return "c.li " + xNames[i.Rd] + "," + strconv.Itoa(int(cImm6(x))), true
	case "c.lui":
		return "c.lui " + xNames[i.Rd] + ",0x" + strconv.FormatUint(uint64(uint32(cImm6(x))&0xfffff), 16), true
	case "c.slli", "c.srli", "c.srai":
		shamt := x>>12&1<<5 | x>>2&0x1f
		if shamt == 0 {
			return o.name + "64 " + xNames[i.Rd], true
		}
		return o.name + " " + xNames[i.Rd] + ",0x" + strconv.FormatUint(uint64(shamt), 16), true
	case "c.mv", "c.add":
		return o.name + " " + xNames[i.Rd] + "," + xNames[x>>2&0x1f], true
	case "c.jal":
		return "jal " + targetText(i, pc), true
	case "c.flw", "c.fsw":
		reg := fNames[x>>2&7+8]
		off := x>>10&7<<3 | x>>6&1<<2 | x>>5&1<<6
		return o.name[2:] + " " + reg + "," + strconv.Itoa(int(off)) + "(" + rs1c + ")", true
	case "c.flwsp":
		off := x>>12&1<<5 | x>>4&7<<2 | x>>2&3<<6
		return "flw " + fNames[x>>7&0x1f] + "," + strconv.Itoa(int(off)) + "(sp)", true
	case "c.fswsp":
		off := x>>9&0xf<<2 | x>>7&3<<6
		return "fsw " + fNames[x>>2&0x1f] + "," + strconv.Itoa(int(off)) + "(sp)", true
	case "c.lbu", "c.sb":
		off := x>>6&1 | x>>5&1<<1
		return o.name[2:] + " " + rdc + "," + strconv.Itoa(int(off)) + "(" + rs1c + ")", true
	case "c.lhu", "c.lh", "c.sh":
		off := x >> 5 & 1 << 1
		return o.name[2:] + " " + rdc + "," + strconv.Itoa(int(off)) + "(" + rs1c + ")", true
	case "c.zext.b", "c.sext.b", "c.zext.h", "c.sext.h", "c.zext.w", "c.not":
		return o.name[2:] + " " + rs1c + "," + rs1c, true
	case "c.mul":
		return "mul " + rs1c + "," + rs1c + "," + rdc, true
	case "cm.push", "cm.pop", "cm.popret", "cm.popretz":
		rlist := x >> 4 & 0xf
		adj := stackAdj(rlist, x>>2&3, i.XLen())
		if o.name == "cm.push" {
			adj = -adj
		}
		return o.name + " " + rlistText(rlist) + "," + strconv.Itoa(adj), true
	case "cm.mvsa01", "cm.mva01s":
		return o.name + " " + xNames[sreg(x>>7&7)] + "," + xNames[sreg(x>>2&7)], true
	case "cm.jt", "cm.jalt":
		return o.name + " " + strconv.Itoa(int(i.Index)), true
	}
	return "", false
}

// cImm6 is the signed 6-bit immediate of CI-format instructions (bits 12,
// 6:2).
func cImm6(x uint32) int32 {
	v := x>>12&1<<5 | x>>2&0x1f
	return int32(v<<26) >> 26
}

// rlistText prints a Zcmp register list: rlist 4 is {ra}, 5 {ra,s0}, 6..14
// {ra,s0-sN} and 15 {ra,s0-s11}.
func rlistText(rlist uint32) string {
	switch {
	case rlist == 4:
		return "{ra}"
	case rlist == 5:
		return "{ra,s0}"
	case rlist == 15:
		return "{ra,s0-s11}"
	}
	return "{ra,s0-s" + strconv.Itoa(int(rlist)-5) + "}"
}

// stackAdj is the stack adjustment of a Zcmp push/pop: the bytes the
// register list needs, rounded up to 16, plus spimm*16.
func stackAdj(rlist, spimm uint32, xlen int) int {
	n := int(rlist) - 3 // ra, s0..
	if rlist == 15 {
		n = 13
	}
	base := (n*xlen/8 + 15) &^ 15
	return base + int(spimm)*16
}

// fenceText prints a fence as objdump does: plain "fence" for iorw,iorw,
// fence.tso and pause by name, and "unknown" for an empty set. The
// reserved fields rd and rs1 are ignored, as the hardware must.
func fenceText(x uint32) string {
	fm, pred, succ := x>>28, x>>24&0xf, x>>20&0xf
	switch {
	case fm == 8 && pred == 3 && succ == 3:
		return "fence.tso"
	case fm == 0 && pred == 1 && succ == 0:
		return "pause"
	case pred == 0xf && succ == 0xf:
		return "fence"
	}
	return "fence " + fenceSet(pred) + "," + fenceSet(succ)
}

// fenceSet prints a fence predecessor or successor set ("iorw").
func fenceSet(s uint32) string {
	if s == 0 {
		return "unknown"
	}
	var b []byte
	for k, c := range "iorw" {
		if s&(8>>k) != 0 {
			b = append(b, byte(c))
		}
	}
	return string(b)
}
