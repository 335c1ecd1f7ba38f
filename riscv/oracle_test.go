package riscv

// This file holds the machinery that compares Decode and Disasm with an
// independent disassembler: GNU objdump (binutils) or llvm-objdump. It
// parses their -d output, whether run now (objdump_test.go, live tests) or
// saved in testdata (fixture tests), and knows the few places where their
// text differs from Disasm's on purpose.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// oracle names the tool whose output is parsed.
type oracle int

const (
	gnu  oracle = iota // riscv64-linux-gnu-objdump (binutils 2.40)
	llvm               // llvm-objdump (LLVM 17 or later, for Zcb/Zcmp/Zcmt)
)

func (o oracle) String() string {
	if o == llvm {
		return "llvm-objdump"
	}
	return "objdump"
}

// dumpLine is one instruction of objdump -d output.
type dumpLine struct {
	addr uint64
	raw  uint32
	len  int
	mn   string   // mnemonic, "" for an unknown encoding
	args []string // operands, without symbols and comments
}

func (l dumpLine) text() string {
	if len(l.args) == 0 {
		return l.mn
	}
	return l.mn + " " + strings.Join(l.args, ",")
}

// parseDump parses the instruction lines of objdump -d or llvm-objdump -d
// output: "addr:<TAB>hex<TAB>mnemonic<TAB>operands" (GNU) or
// "addr: hex<TAB>mnemonic<TAB>operands" (LLVM).
func parseDump(out string) ([]dumpLine, error) {
	var lines []dumpLine
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		colon := strings.Index(line, ":")
		if colon < 0 || colon+1 >= len(line) || line[colon+1] != '\t' && line[colon+1] != ' ' {
			continue
		}
		addr, err := strconv.ParseUint(strings.TrimSpace(line[:colon]), 16, 64)
		if err != nil {
			continue
		}
		rest := strings.TrimLeft(line[colon+1:], " \t")
		hexPart, insn, _ := strings.Cut(rest, "\t")
		hexPart = strings.TrimSpace(hexPart)
		// GNU prints the instruction as one hex word; LLVM too, as
		// "8000" or "00150513".
		hexPart = strings.ReplaceAll(hexPart, " ", "")
		raw, err := strconv.ParseUint(hexPart, 16, 32)
		if err != nil {
			return nil, fmt.Errorf("bad instruction bits in %q", line)
		}
		dl := dumpLine{addr: addr, raw: uint32(raw), len: len(hexPart) / 2}
		insn = strings.TrimSpace(insn)
		// Drop comments ("# 0x1234 <sym>") and symbols ("<.text+0x24>").
		if i := strings.Index(insn, "#"); i >= 0 {
			insn = strings.TrimSpace(insn[:i])
		}
		if i := strings.Index(insn, "<"); i > 0 {
			insn = strings.TrimSpace(insn[:i])
		}
		mn, ops, _ := strings.Cut(insn, "\t")
		mn = strings.TrimSpace(mn)
		switch mn {
		case ".2byte", ".4byte", ".word", ".short", "<unknown>", "":
			mn = ""
			ops = ""
		}
		dl.mn = mn
		ops = strings.ReplaceAll(strings.TrimSpace(ops), ", ", ",")
		if ops != "" {
			dl.args = splitArgs(ops)
		}
		lines = append(lines, dl)
	}
	return lines, sc.Err()
}

// splitArgs splits operands at commas outside braces ("{ra,s0-s1},-16").
func splitArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{', '(':
			depth++
		case '}', ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// oracleClass derives the control-flow class of an instruction from the
// oracle's mnemonic alone.
func oracleClass(l dumpLine) Class {
	switch l.mn {
	case "":
		return ClassIllegal
	case "unimp", "c.unimp":
		if l.len == 2 {
			return ClassIllegal
		}
	case "beq", "bne", "blt", "bge", "bltu", "bgeu", "beqz", "bnez", "blez", "bgez",
		"bltz", "bgtz", "bgt", "ble", "bgtu", "bleu", "c.beqz", "c.bnez":
		return ClassBranch
	case "j", "jal", "c.j", "c.jal":
		return ClassJump
	case "jr", "jalr", "ret", "c.jr", "c.jalr":
		return ClassIndirect
	case "cm.jt", "cm.jalt":
		return ClassTableJump
	case "cm.popret", "cm.popretz":
		return ClassPopRet
	case "mret", "sret", "dret":
		return ClassTrapReturn
	case "ecall":
		return ClassECall
	case "ebreak", "c.ebreak":
		return ClassEBreak
	}
	return ClassLinear
}

// abiNum maps an ABI or numeric register name to its number.
func abiNum(s string) (uint8, bool) {
	for i, n := range xNames {
		if n == s {
			return uint8(i), true
		}
	}
	switch s {
	case "fp":
		return 8, true
	case "x0":
		return 0, true
	}
	if strings.HasPrefix(s, "x") {
		n, err := strconv.Atoi(s[1:])
		if err == nil && n >= 0 && n < 32 {
			return uint8(n), true
		}
	}
	return 0, false
}

// baseReg returns the register of "reg" or "off(reg)".
func baseReg(s string) (uint8, bool) {
	if i := strings.IndexByte(s, '('); i >= 0 && strings.HasSuffix(s, ")") {
		s = s[i+1 : len(s)-1]
	}
	return abiNum(s)
}

// oracleLink works out the N-Trace 4-bit itype link role of a jump from the
// oracle's text, with its own reading of the table ("Generating itype for
// different instructions"), independent of Decode.
func oracleLink(l dumpLine) (Link, bool) {
	isL := func(r uint8) bool { return r == 1 || r == 5 }
	jalr := func(rd, rs uint8) Link {
		switch {
		case isL(rd) && !isL(rs):
			return LinkCall
		case isL(rd) && isL(rs) && rd == rs:
			return LinkCall
		case isL(rd) && isL(rs):
			return LinkCoSwap
		case !isL(rd) && isL(rs):
			return LinkReturn
		case rd == 0:
			return LinkNone
		}
		return LinkOther
	}
	switch l.mn {
	case "j", "c.j", "cm.jt":
		return LinkNone, true
	case "c.jal", "cm.jalt":
		return LinkCall, true
	case "cm.popret", "cm.popretz":
		return LinkReturn, true
	case "jal":
		rd := uint8(1)
		if len(l.args) == 2 {
			r, ok := abiNum(l.args[0])
			if !ok {
				return 0, false
			}
			rd = r
		}
		switch {
		case isL(rd):
			return LinkCall, true
		case rd == 0:
			return LinkNone, true
		}
		return LinkOther, true
	case "ret":
		return jalr(0, 1), true
	case "jr", "c.jr":
		if len(l.args) != 1 {
			return 0, false
		}
		rs, ok := baseReg(l.args[0])
		return jalr(0, rs), ok
	case "jalr", "c.jalr":
		switch len(l.args) {
		case 1:
			rs, ok := baseReg(l.args[0])
			return jalr(1, rs), ok
		case 2, 3:
			rd, ok1 := abiNum(l.args[0])
			rs, ok2 := baseReg(l.args[1])
			return jalr(rd, rs), ok1 && ok2
		}
	}
	return LinkNone, true
}

// gnuImmAlias maps binutils 2.40's spelling of register-immediate ALU
// instructions ("add a0,a0,1" for addi, "sll a0,a0,0x3" for slli, ...) to
// the ISA manual's (and Disasm's) mnemonic.
var gnuImmAlias = map[string]string{
	"add": "addi", "and": "andi", "or": "ori", "xor": "xori",
	"sll": "slli", "srl": "srli", "sra": "srai",
	"addw": "addiw", "sllw": "slliw", "srlw": "srliw", "sraw": "sraiw",
	"ror": "rori", "rorw": "roriw",
	"bclr": "bclri", "bset": "bseti", "binv": "binvi", "bext": "bexti",
	"csrrw": "csrrwi", "csrrs": "csrrsi", "csrrc": "csrrci",
}

// isNum reports whether an operand is an immediate number.
func isNum(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if strings.HasPrefix(s, "0x") {
		_, err := strconv.ParseUint(s[2:], 16, 64)
		return err == nil
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// normalize returns the oracle's text in Disasm's conventions, for the
// differences that are deliberate (see gnuImmAlias) or pure notation
// (targets with or without 0x). It is given the instruction's class as the
// oracle sees it.
func normalize(o oracle, l dumpLine, c Class, pc uint64) string {
	mn := l.mn
	args := append([]string(nil), l.args...)
	if mn == "" {
		if l.len == 2 {
			return fmt.Sprintf(".insn 0x%04x", l.raw)
		}
		return fmt.Sprintf(".insn 0x%08x", l.raw)
	}
	if o == gnu && len(args) == 3 && isNum(args[2]) {
		if m, ok := gnuImmAlias[mn]; ok {
			mn = m
		}
	}
	if o == gnu && len(args) == 2 && isNum(args[1]) {
		// "csrw csr,imm" is csrwi (and csrs, csrc likewise).
		switch mn {
		case "csrw", "csrs", "csrc":
			mn += "i"
		}
	}
	if (c == ClassBranch || c == ClassJump) && len(args) > 0 {
		t := args[len(args)-1]
		if o == gnu {
			t = "0x" + t
		}
		args[len(args)-1] = t
	}
	if o == llvm {
		// LLVM prints compressed-only instructions with their c. or
		// cm. names but the rest like GNU does; Disasm prints Zcb as
		// its 32-bit equivalent as GNU objdump (2.41 and later) does.
		if mn == "andi" && len(args) == 3 && args[2] == "255" {
			mn, args = "zext.b", args[:2]
		}
	}
	if len(args) == 0 {
		return mn
	}
	return mn + " " + strings.Join(args, ",")
}

// mismatches collects differences, reporting a few examples of each kind
// (kinds are named by the caller, usually after the instruction).
type mismatches struct {
	t     testing.TB
	what  string
	n     int
	kinds map[string]int
	order []string

	deviations map[string]int
}

const examplesPerKind = 3

func (m *mismatches) add(kind, format string, args ...any) {
	m.n++
	if m.kinds == nil {
		m.kinds = map[string]int{}
	}
	if m.kinds[kind] == 0 {
		m.order = append(m.order, kind)
	}
	m.kinds[kind]++
	if m.kinds[kind] <= examplesPerKind {
		m.t.Errorf("%s: "+format, append([]any{m.what}, args...)...)
	}
}

// deviate counts an instruction where Decode deliberately differs from the
// oracle.
func (m *mismatches) deviate(why string) {
	if m.deviations == nil {
		m.deviations = map[string]int{}
	}
	m.deviations[why]++
}

func (m *mismatches) done(total int) {
	for why, n := range m.deviations {
		m.t.Logf("%s: %d known deviations: %s", m.what, n, why)
	}
	if m.n == 0 {
		return
	}
	var b strings.Builder
	for _, k := range m.order {
		fmt.Fprintf(&b, " %s:%d", k, m.kinds[k])
	}
	m.t.Errorf("%s: %d of %d instructions differ; by kind:%s", m.what, m.n, total, b.String())
}

// deviation tells whether the oracle's verdict on l differs from Decode's
// for a known reason: where objdump (2.40) or llvm-objdump is more lenient
// than the ISA manual, or stricter about fields the manual says to ignore.
// It returns the reason, or "" when there is no known deviation.
func deviation(l dumpLine, xlen int, in Inst) string {
	x := l.raw
	if l.mn != "" && in.Class == ClassIllegal {
		// The oracle decodes what Decode rejects.
		switch {
		case len(l.args) > 0 && l.args[len(l.args)-1] == "unknown":
			return "reserved rounding mode 5 or 6 (illegal instruction)"
		case l.len == 4 && xlen == 32 && x&0x7f == opOPIMM && (x>>12&7 == 1 || x>>12&7 == 5) && x>>25&1 == 1:
			return "RV32 shift amount >= 32 (reserved)"
		case l.len == 2 && xlen == 32 && (x&0xf003 == 0x1002 || x&0xe803 == 0x8001 && x>>12&1 == 1):
			return "RV32 compressed shift amount >= 32 (reserved for custom use)"
		case l.len == 2 && x&0xe003 == 0x6001 && x>>12&1 == 0 && x>>2&0x1f == 0:
			return "c.lui/c.addi16sp with zero immediate (reserved)"
		case l.len == 2 && x&0xfc63 == 0xac22 && x>>7&7 == x>>2&7:
			return "cm.mvsa01 with r1s' = r2s' (reserved)"
		case l.mn == "uret" || l.mn == "hret" || l.mn == "sfence.vm":
			return "obsolete instruction of privileged spec 1.9 / N extension"
		case l.mn == "hinval.vvma" || l.mn == "hinval.gvma":
			return "Svinval's hypervisor instructions, printed without the H extension"
		}
	}
	if l.text() == "fence w,unknown" && in.Class == ClassLinear {
		return "pause (Zihintpause, a HINT of the base ISA) that binutils 2.40 prints as fence w,unknown"
	}
	if l.mn == "" && in.Class != ClassIllegal {
		// The oracle rejects what Decode accepts.
		switch in.Op.row().name {
		case "fence", "fence.i":
			return "fence with non-zero reserved fields (to be ignored by implementations)"
		case "fcvt.d.s", "fcvt.d.w", "fcvt.d.wu", "fcvt.s.h", "fcvt.d.h":
			return "exact conversion with a rounding mode other than rne"
		}
	}
	return ""
}

// compareLine checks Decode and Disasm of one oracle line, which was
// disassembled at its address for xlen with extensions ext.
func compareLine(m *mismatches, o oracle, l dumpLine, xlen int, ext Ext) {
	in := DecodeExt(l.raw, xlen, ext)
	if why := deviation(l, xlen, in); why != "" {
		m.deviate(why)
		return
	}
	want := oracleClass(l)
	if int(in.Len) != l.len && want != ClassIllegal {
		m.add(in.Op.String()+"/len", "%#x: Len %d, %s says %d", l.raw, in.Len, o, l.len)
		return
	}
	if in.Class != want {
		m.add(in.Op.String()+"/class:"+l.mn, "%#x (%s): class %v, %s says %v (%q)", l.raw, in.Op, in.Class, o, want, l.text())
		return
	}
	got := in.disasm(l.addr)
	norm := normalize(o, l, want, l.addr)
	if got != norm {
		m.add(in.Op.String()+"/text:"+l.mn, "%#x (%s): Disasm %q, %s says %q", l.raw, in.Op, got, o, l.text())
	}
	switch want {
	case ClassBranch, ClassJump:
		t, err := strconv.ParseUint(strings.TrimPrefix(l.args[len(l.args)-1], "0x"), 16, 64)
		if err != nil || in.Target(l.addr) != t {
			m.add(in.Op.String()+"/target", "%#x (%s): Target(%#x) = %#x, %s says %q", l.raw, in.Op, l.addr, in.Target(l.addr), o, l.text())
		}
	}
	switch want {
	case ClassJump, ClassIndirect, ClassTableJump, ClassPopRet:
		if lk, ok := oracleLink(l); !ok || lk != in.Link {
			m.add(in.Op.String()+"/link", "%#x (%s): Link %v, %s text %q gives %v", l.raw, in.Op, in.Link, o, l.text(), lk)
		}
	default:
		if in.Link != LinkNone {
			m.add(in.Op.String()+"/link", "%#x (%s): Link %v for a non-jump", l.raw, in.Op, in.Link)
		}
	}
}

// tool finds the first of names on PATH.
func tool(names ...string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

var (
	gnuAs      = tool("riscv64-linux-gnu-as", "riscv64-unknown-elf-as")
	gnuObjdump = tool("riscv64-linux-gnu-objdump", "riscv64-unknown-elf-objdump")
	llvmMC     = tool("llvm-mc-19", "llvm-mc-20", "llvm-mc-21", "llvm-mc-22", "llvm-mc-18", "llvm-mc-17", "llvm-mc")
	llvmDump   = tool("llvm-objdump-19", "llvm-objdump-20", "llvm-objdump-21", "llvm-objdump-22", "llvm-objdump-18", "llvm-objdump-17", "llvm-objdump")
)

// words holds instruction encodings to assemble with .insn.
func insnSource(words []uint32) string {
	var b strings.Builder
	for _, w := range words {
		if w&3 != 3 {
			fmt.Fprintf(&b, ".insn 0x%04x\n", w&0xffff)
		} else {
			fmt.Fprintf(&b, ".insn 0x%08x\n", w)
		}
	}
	return b.String()
}

// disassemble assembles src with the oracle's assembler for xlen and the
// given -march (GNU) or -mattr (LLVM) and returns its objdump -d output,
// with addresses starting at vma.
func disassemble(t testing.TB, o oracle, src string, xlen int, arch string, vma uint64) string {
	t.Helper()
	dir := t.TempDir()
	s := filepath.Join(dir, "in.s")
	obj := filepath.Join(dir, "in.o")
	if err := os.WriteFile(s, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var as, dump *exec.Cmd
	vmaArg := fmt.Sprintf("--adjust-vma=%#x", vma)
	if o == gnu {
		as = exec.Command(gnuAs, "-march="+arch, "-mno-relax", "-o", obj, s)
		dump = exec.Command(gnuObjdump, "-d", vmaArg, obj)
	} else {
		triple := fmt.Sprintf("-triple=riscv%d", xlen)
		as = exec.Command(llvmMC, triple, "-mattr="+arch+",-relax", "-filetype=obj", "-o", obj, s)
		dump = exec.Command(llvmDump, "-d", "--no-print-imm-hex", "--mattr="+arch, vmaArg, obj)
	}
	if out, err := as.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", as, err, out)
	}
	out, err := dump.Output()
	if err != nil {
		t.Fatalf("%v: %v", dump, err)
	}
	return string(out)
}
