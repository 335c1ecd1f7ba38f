package tarmac

import (
	"bytes"
	"strings"
)

// This file holds the grammar of one Tarmac line, in the dialects listed
// in the package documentation. It follows the forms Arm Fast Models,
// gem5, the Arm RTL Tarmac modules and tarmac-trace-utilities' parser
// accept, and rejects every line that is none of them.

// isUnit reports whether b is a timestamp unit the reader recognises
// after a time.
func isUnit(b []byte) bool {
	switch string(b) {
	case "clk", "tic", "tics", "ticks", "cyc", "cycle", "cycles",
		"fs", "ps", "ns", "us", "ms", "s", "cs":
		return true
	}
	return false
}

// smallerUnit is the unit a thousand times smaller, for timestamps
// written with a fraction ("10.356000us").
var smallerUnit = map[string]string{"s": "ms", "ms": "us", "us": "ns", "ns": "ps", "ps": "fs"}

// tagKind classifies a record tag (without a trailing colon); ok is false
// for words that are not tags.
func tagKind(t []byte) (Kind, bool) {
	switch string(t) {
	case "IT", "IS", "IF", "ES":
		return KindInst, true
	case "FD", "FI", "BR":
		return KindFlow, true
	case "R":
		return KindReg, true
	case "E", "EXC":
		return KindEvent, true
	case "LD", "ST":
		return KindMem, true
	case "R01", "R02", "R04", "R08", "W01", "W02", "W04", "W08":
		return KindMem, true
	case "CADI", "P", "CACHE", "TTW", "TTU", "TLB", "WALKCACHE", "SIGNAL", "INFO_EXCEPTION_REASON":
		// Records that say nothing about the instruction flow,
		// registers or memory.
		return KindOther, true
	}
	if isMemTag(t) {
		return KindMem, true
	}
	if len(t) >= 3 && t[0] == 'B' && (t[1] == 'R' || t[1] == 'W') && isDigit(t[2]) {
		return KindOther, true // memory bus trace
	}
	return KindOther, false
}

// isMemTag reports whether t is a memory access tag: M, an optional
// S/N/C (RTL: secure, non-secure, coprocessor), R, W or U, the size in
// bytes, and attribute letters, digits and underscores.
func isMemTag(t []byte) bool {
	if len(t) < 3 || t[0] != 'M' {
		return false
	}
	i := 1
	if (t[i] == 'S' || t[i] == 'N' || t[i] == 'C') && i+1 < len(t) && (t[i+1] == 'R' || t[i+1] == 'W') {
		i++
	}
	if t[i] != 'R' && t[i] != 'W' && t[i] != 'U' {
		return false
	}
	i++
	if i == len(t) || !isDigit(t[i]) {
		return false
	}
	for ; i < len(t); i++ {
		c := t[i]
		if !(isDigit(c) || c == '_' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// isCPUName reports whether b can name the component of a record
// ("cpu0", "cluster0.cpu1"): letters, digits, '.', '_' and '-', starting
// with a letter.
func isCPUName(b []byte) bool {
	if len(b) == 0 || !(b[0] >= 'A' && b[0] <= 'Z' || b[0] >= 'a' && b[0] <= 'z') {
		return false
	}
	for _, c := range b {
		if !(isDigit(c) || c == '.' || c == '_' || c == '-' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func allDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// isHexWord reports whether b is one or more hex digits.
func isHexWord(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if hexVal(c) < 0 {
			return false
		}
	}
	return true
}

// parseTime parses a timestamp: decimal digits, optionally with a
// fraction ("10.356000") when a unit follows, optionally with the unit
// attached ("271ns"). It returns the time, the unit ("" when none is
// attached) and whether b is a timestamp at all. A fraction is kept
// exactly by giving the time in a smaller unit (10.356000us is 10356000
// ps).
func parseTime(b []byte, next []byte) (t uint64, unit []byte, consumedNext bool, ok bool, err string) {
	if v, ok := parseDec(b); ok { // the usual "123 clk"
		if next != nil && isUnit(next) {
			return v, next, true, true, ""
		}
		return v, nil, false, true, ""
	}
	end := 0
	for end < len(b) && (isDigit(b[end]) || b[end] == '.') {
		end++
	}
	if end == 0 || !isDigit(b[0]) {
		return 0, nil, false, false, ""
	}
	num, u := b[:end], b[end:]
	if len(u) > 0 && !isUnit(u) {
		return 0, nil, false, false, ""
	}
	if len(u) == 0 && next != nil && isUnit(next) {
		u, consumedNext = next, true
	}
	dot := bytes.IndexByte(num, '.')
	if dot < 0 {
		v, okd := parseDec(num)
		if !okd {
			return 0, nil, false, true, "timestamp " + quote(num) + " out of range"
		}
		return v, u, consumedNext, true, ""
	}
	if len(u) == 0 {
		return 0, nil, false, false, "" // "1.5" alone is no timestamp
	}
	intPart, frac := num[:dot], num[dot+1:]
	if len(intPart) == 0 || bytes.IndexByte(frac, '.') >= 0 || !allDigits(frac) {
		return 0, nil, false, true, "bad timestamp " + quote(num)
	}
	us := string(u)
	digits := append([]byte(nil), intPart...)
	for len(frac) > 0 {
		s, okS := smallerUnit[us]
		if !okS {
			return 0, nil, false, true, "timestamp " + quote(num) + " has a fraction finer than 1 " + string(u) + " can give"
		}
		us = s
		for k := 0; k < 3; k++ {
			if len(frac) > 0 {
				digits = append(digits, frac[0])
				frac = frac[1:]
			} else {
				digits = append(digits, '0')
			}
		}
	}
	v, okd := parseDec(digits)
	if !okd {
		return 0, nil, false, true, "timestamp " + quote(num) + " out of range"
	}
	return v, []byte(us), consumedNext, true, ""
}

// trimColon drops a trailing colon ("SIGNAL:").
func trimColon(b []byte) []byte {
	if len(b) > 1 && b[len(b)-1] == ':' {
		return b[:len(b)-1]
	}
	return b
}

func quote(b []byte) string {
	const max = 40
	if len(b) > max {
		return "\"" + string(b[:max]) + "...\""
	}
	return "\"" + string(b) + "\""
}

// parse fills r.rec from line, which started indent bytes into the raw
// line.
func (r *Reader) parse(line []byte, indent int) error {
	rec := &r.rec
	*rec = Record{Line: r.line, Text: line, Time: r.time, CPU: r.cpu, Scale: r.scale, Executed: true}
	contTag, contCol := r.contTag, r.contCol
	r.contTag = ""
	if line[0] == '#' {
		rec.Tag = "#"
		return nil
	}
	r.tokenize(line)
	f := r.fields[:r.nfields]
	tok := func(i int) []byte { return line[f[i].start:f[i].end] }
	// The continuation line of an LD/ST record: a base address aligned
	// under the address of the record before, and its data.
	if contTag != "" && indent == contCol && isHexWord(tok(0)) && len(f) > 1 && isDataGroup(tok(1)) {
		rec.Tag = contTag
		rec.Kind = KindMem
		r.contTag, r.contCol = contTag, contCol
		err := r.parseLdSt(line, f)
		if err != nil {
			rec.Kind = KindOther
		}
		return err
	}
	i := 0
	var next []byte
	if len(f) > 1 {
		next = tok(1)
	}
	if t, unit, usedNext, ok, msg := parseTime(tok(0), next); ok {
		if msg != "" {
			return r.errorf("%s", msg)
		}
		rec.Time, rec.HasTime = t, true
		r.time = t
		i++
		if usedNext {
			i++
		}
		if len(unit) > 0 {
			rec.Scale = r.str(unit)
			r.scale = rec.Scale
		}
	}
	if i >= len(f) {
		return r.errorf("a timestamp without a record")
	}
	t0 := trimColon(tok(i))
	kind, isTag := tagKind(t0)
	if !isTag && i+1 < len(f) && isCPUName(tok(i)) {
		if k2, ok := tagKind(trimColon(tok(i + 1))); ok {
			rec.CPU = r.str(tok(i))
			r.cpu = rec.CPU
			i++
			kind, isTag = k2, true
			t0 = trimColon(tok(i))
		}
	}
	if !isTag {
		if i == 0 && string(tok(0)) == "Tarmac" {
			// The "Tarmac Text Rev 3t" header.
			rec.Tag = "Tarmac"
			return nil
		}
		return r.errorf("not a Tarmac record: unknown record tag %s", quote(tok(i)))
	}
	rec.Tag = r.str(t0)
	rec.Kind = kind
	if r.nfields == maxFields && kind != KindOther {
		return r.errorf("%s record with more than %d words", rec.Tag, maxFields-1)
	}
	args := f[i+1:]
	var err error
	switch kind {
	case KindInst:
		err = r.parseInst(line, args)
	case KindFlow:
		err = r.parseFlow(line, args)
	case KindReg:
		err = r.parseReg(line, args)
	case KindMem:
		if rec.Tag == "LD" || rec.Tag == "ST" {
			if len(args) > 0 {
				r.contTag, r.contCol = rec.Tag, indent+args[0].start
			}
			err = r.parseLdSt(line, args)
		} else {
			err = r.parseMem(line, args)
		}
	case KindEvent:
		if rec.Tag == "EXC" {
			err = r.parseExc(line, args)
		} else {
			err = r.parseEvent(line, args)
		}
	}
	if err != nil {
		rec.Kind = KindOther
	}
	return err
}

// parseInst parses the instruction records:
//
//	IT (id) addr opcode iset mode : disasm      Fast Models, gem5, RISC-V dialect
//	IT (addr) opcode iset mode : disasm         no address field: the bracket holds it
//	IT (addr:id) addr opcode T16 disasm         Cortex-M4 RTL: no mode, no colon
//	IT (addr:id) addr opcode A : disasm         Cortex-R5 RTL: no mode
//	IT addr opcode disasm                       M-profile RTL: implicit Thumb
//	ES (addr:opcode) iset mode: disasm          the ES style; opcode "--------": fetch failed
//	ES EXC [n] name, ES Reset                   events
//
// addr is vaddr{:paddr{_NS|_S}{,paddr2{_NS|_S}}}.
func (r *Reader) parseInst(line []byte, args []field) error {
	rec := &r.rec
	tok := func(i int) []byte { return line[args[i].start:args[i].end] }
	if rec.Tag == "IS" {
		rec.Executed = false
	}
	if len(args) == 0 {
		return r.errorf("%s record without an instruction", rec.Tag)
	}
	if s := string(tok(0)); s == "EXC" || s == "Reset" {
		// "ES EXC [0x00] Reset", "ES EXC Reset", "ES Reset": an event.
		rec.Kind = KindEvent
		if s == "EXC" {
			return r.parseExc(line, args[1:])
		}
		return r.parseExc(line, args)
	}
	j := 0
	seenColonInBracket := false
	if rec.Tag == "ES" {
		a := tok(0)
		if len(a) < 2 || a[0] != '(' || a[len(a)-1] != ')' {
			return r.errorf("ES record: expected (addr:opcode), found %s", quote(a))
		}
		a = a[1 : len(a)-1]
		k := bytes.IndexByte(a, ':')
		if k < 0 {
			return r.errorf("ES record: expected (addr:opcode), found %s", quote(tok(0)))
		}
		if err := r.setAddr(a[:k]); err != nil {
			return err
		}
		op := a[k+1:]
		if len(op) > 0 && allDashes(op) {
			rec.FetchFailed, rec.Executed = true, false
			rec.OpcodeBytes = len(op) / 2
		} else if err := r.setOpcode(op); err != nil {
			return err
		}
		j = 1
	} else {
		var bracket []byte
		hasBracket := false
		if a := tok(0); a[0] == '(' {
			if len(a) < 3 || a[len(a)-1] != ')' {
				return r.errorf("%s record: expected (inst_id), found %s", rec.Tag, quote(a))
			}
			bracket, hasBracket = a[1:len(a)-1], true
			if k := bytes.IndexByte(bracket, ':'); k >= 0 {
				// (addr:id): a copy of the address before the index.
				if !isHexWord(bracket[:k]) || !isHexWord(bracket[k+1:]) {
					return r.errorf("%s record: bad (addr:id) %s", rec.Tag, quote(a))
				}
				id, _ := parseHex(bracket[k+1:])
				rec.InstID, rec.HasInstID = id, true
				seenColonInBracket = true
				bracket = bracket[:k]
			}
			j = 1
		}
		if j+1 >= len(args) {
			return r.errorf("%s record needs an address, opcode and instruction set", rec.Tag)
		}
		if hasBracket && isISet(tok(j+1)) && !seenColonInBracket {
			// "IT (addr) opcode iset": the bracket holds the address.
			if err := r.setAddr(bracket); err != nil {
				return err
			}
			if err := r.setOpcode(tok(j)); err != nil {
				return err
			}
			j++
		} else {
			if hasBracket && !seenColonInBracket {
				id, ok := parseDec(bracket)
				if !ok {
					return r.errorf("%s record: bad instruction id %s", rec.Tag, quote(tok(0)))
				}
				rec.InstID, rec.HasInstID = id, true
			}
			if err := r.setAddr(tok(j)); err != nil {
				return err
			}
			if err := r.setOpcode(tok(j + 1)); err != nil {
				return err
			}
			j += 2
		}
		if !hasBracket && (j == len(args) || !isISet(tok(j))) {
			// The implicit-Thumb form: the rest is the disassembly.
			rec.ISet, rec.ImplicitISet = "T", true
			if j < len(args) {
				rec.Disasm = bytes.TrimSpace(line[args[j].start:])
			}
			return nil
		}
	}
	if j >= len(args) || !isISet(tok(j)) {
		found := []byte("end of line")
		if j < len(args) {
			found = tok(j)
		}
		return r.errorf("%s record: expected an instruction set (A, T, O, RV64...), found %s", rec.Tag, quote(found))
	}
	is := tok(j)
	t16t32 := string(is) == "T16" || string(is) == "T32"
	if t16t32 {
		is = is[:1]
	}
	rec.ISet = r.str(is)
	end := args[j].end
	j++
	switch {
	case j < len(args) && string(tok(j)) == ":":
		end = args[j].end // no mode
	case rec.Tag != "ES" && seenColonInBracket && t16t32:
		// Cortex-M4 RTL: neither mode nor colon.
	case j == len(args):
		if rec.Tag != "ES" {
			return r.errorf("%s record: expected the mode and ':' after the instruction set", rec.Tag)
		}
		return r.errorf("ES record: expected the mode after the instruction set")
	default:
		m := tok(j)
		end = args[j].end
		j++
		if bytes.HasSuffix(m, []byte(":")) {
			m = m[:len(m)-1]
		} else if j < len(args) && string(tok(j)) == ":" {
			end = args[j].end
		} else {
			return r.errorf("%s record: expected ':' after the mode %s", rec.Tag, quote(m))
		}
		if len(m) == 0 {
			return r.errorf("%s record: empty mode", rec.Tag)
		}
		rec.Mode = r.str(m)
	}
	d := bytes.TrimSpace(line[end:])
	if rec.Tag == "ES" && bytes.HasPrefix(d, []byte("CCFAIL")) && (len(d) == 6 || isSpace(d[6])) {
		rec.Executed = false
		d = bytes.TrimSpace(d[6:])
	}
	if rec.FetchFailed && len(d) > 0 {
		return r.errorf("ES record: disassembly %s for an instruction whose fetch failed", quote(d))
	}
	rec.Disasm = d
	return nil
}

func allDashes(b []byte) bool {
	for _, c := range b {
		if c != '-' {
			return false
		}
	}
	return len(b) > 0
}

// isISet reports whether b is an instruction set field.
func isISet(b []byte) bool {
	switch string(b) {
	case "A", "T", "T16", "T32", "X", "O", "RV32", "RV64":
		return true
	}
	return false
}

// parseExc parses what follows "EXC" (or "ES"): "[n] name", "name" or
// "Reset", an exception of the ES style.
func (r *Reader) parseExc(line []byte, args []field) error {
	rec := &r.rec
	rec.Kind = KindEvent
	tok := func(i int) []byte { return line[args[i].start:args[i].end] }
	j := 0
	if j < len(args) && tok(j)[0] == '[' {
		a := tok(j)
		if len(a) < 3 || a[len(a)-1] != ']' {
			return r.errorf("bad event number %s", quote(a))
		}
		v, ok := parseHex(trimHexPrefix(a[1 : len(a)-1]))
		if !ok {
			return r.errorf("bad event number %s", quote(a))
		}
		rec.EventNum = v
		j++
	}
	if j >= len(args) {
		return r.errorf("%s record without the name of the exception", rec.Tag)
	}
	rec.EventDesc = r.str(line[args[j].start:args[len(args)-1].end])
	return nil
}

// parseFlow parses "FD (id) addr target iset", "FI ..." and "BR (target) iset".
func (r *Reader) parseFlow(line []byte, args []field) error {
	rec := &r.rec
	tok := func(i int) []byte { return line[args[i].start:args[i].end] }
	rec.Indirect = rec.Tag == "FI"
	if rec.Tag == "BR" {
		if len(args) < 1 || len(args) > 2 {
			return r.errorf("BR record: expected (target) and an instruction set")
		}
		a := tok(0)
		if len(a) < 3 || a[0] != '(' || a[len(a)-1] != ')' {
			return r.errorf("BR record: expected (target), found %s", quote(a))
		}
		t, _, _, _, _, ok := parseAddr(a[1 : len(a)-1])
		if !ok {
			return r.errorf("BR record: bad target address %s", quote(a))
		}
		rec.Target = t
		if len(args) > 1 {
			if !isISet(tok(1)) {
				return r.errorf("BR record: bad instruction set %s", quote(tok(1)))
			}
			rec.ISet = r.str(tok(1))
		}
		return nil
	}
	if len(args) < 3 || len(args) > 4 {
		return r.errorf("%s record: expected (inst_id), an address, a target and an instruction set", rec.Tag)
	}
	a := tok(0)
	if len(a) < 2 || a[0] != '(' || a[len(a)-1] != ')' {
		return r.errorf("%s record: expected (inst_id), found %s", rec.Tag, quote(a))
	}
	id, ok := parseDec(a[1 : len(a)-1])
	if !ok {
		return r.errorf("%s record: bad instruction id %s", rec.Tag, quote(a))
	}
	rec.InstID, rec.HasInstID = id, true
	if err := r.setAddr(tok(1)); err != nil {
		return err
	}
	t, _, _, _, _, ok := parseAddr(tok(2))
	if !ok {
		return r.errorf("%s record: bad target address %s", rec.Tag, quote(tok(2)))
	}
	rec.Target = t
	if len(args) > 3 {
		if !isISet(tok(3)) {
			return r.errorf("%s record: bad instruction set %s", rec.Tag, quote(tok(3)))
		}
		rec.ISet = r.str(tok(3))
	}
	return nil
}

// sysOps are the system instructions Fast Models writes as R records.
var sysOps = map[string]bool{"DC": true, "IC": true, "TLBI": true, "AT": true}

// isValueWord reports whether b can be (part of) a register value: hex
// digits, '-' and 'x' for unknown digits, '_' and ':' separators.
func isValueWord(b []byte) bool {
	digits := false
	for _, c := range b {
		switch {
		case hexVal(c) >= 0, c == '-', c == 'x', c == 'X':
			digits = true
		case c == '_' || c == ':':
		default:
			return false
		}
	}
	return digits
}

// isFlagsWord reports whether b is the flags annotation some producers
// write after a status register's value ("__C_", "NZ_V").
func isFlagsWord(b []byte) bool {
	for _, c := range b {
		if !bytes.ContainsRune([]byte("NZCVQ_"), rune(c)) {
			return false
		}
	}
	return len(b) > 0
}

func isStatusReg(name string) bool {
	for _, s := range [...]string{"cpsr", "psr", "xpsr", "apsr", "epsr", "ipsr", "nzcv"} {
		if strings.EqualFold(name, s) {
			return true
		}
	}
	return len(name) >= 4 && strings.EqualFold(name[:4], "spsr")
}

// parseReg parses "R name{<hi:lo>} {(bank)} value {(bank)|flags}", the
// value in one or more words, and "R DC|IC|TLBI|AT op value".
func (r *Reader) parseReg(line []byte, args []field) error {
	rec := &r.rec
	tok := func(i int) []byte { return line[args[i].start:args[i].end] }
	if len(args) < 2 {
		return r.errorf("R record needs a register and a value")
	}
	name := tok(0)
	j := 1
	if sysOps[string(name)] {
		op := tok(1)
		if !isAlnumWord(op) || len(args) < 3 {
			return r.errorf("R %s record needs an operation and a value", name)
		}
		rec.SysOp = r.str(op)
		j = 2
	}
	if k := bytes.IndexByte(name, '<'); k >= 0 {
		hi, lo, ok := parseBitRange(name[k:])
		if !ok || k == 0 {
			return r.errorf("R record: bad register bit range %s", quote(name))
		}
		rec.HasBits, rec.BitHi, rec.BitLo = true, hi, lo
		name = name[:k]
	}
	if !isRegName(name) {
		return r.errorf("R record: bad register name %s", quote(name))
	}
	rec.Reg = r.str(name)
	if j < len(args) && isBank(tok(j)) {
		b := tok(j)
		rec.Bank = r.str(b[1 : len(b)-1])
		j++
	}
	first := j
	for j < len(args) && isValueWord(tok(j)) && !(j > first && isStatusReg(rec.Reg) && isFlagsWord(tok(j))) {
		j++
	}
	if j == first {
		found := []byte("end of line")
		if j < len(args) {
			found = tok(j)
		}
		return r.errorf("R record: bad value %s for %s", quote(found), rec.Reg)
	}
	v := line[args[first].start:args[j-1].end]
	// Annotations after the value: a bank, or a status register's flags.
	for ; j < len(args); j++ {
		switch a := tok(j); {
		case isBank(a) && rec.Bank == "":
			rec.Bank = r.str(a[1 : len(a)-1])
		case isStatusReg(rec.Reg) && isFlagsWord(a):
		default:
			return r.errorf("R record: unexpected %s after the value of %s", quote(a), rec.Reg)
		}
	}
	val, unknown, digits, ok := parseRegValue(v)
	if !ok {
		return r.errorf("R record: bad value %s for %s", quote(v), rec.Reg)
	}
	rec.Value, rec.Unknown, rec.Wide, rec.ValueText = val, unknown, digits > 16, v
	return nil
}

func isAlnumWord(b []byte) bool {
	for _, c := range b {
		if !(isDigit(c) || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return len(b) > 0
}

// isRegName reports whether b can be a register name: letters, digits,
// underscores and dots, starting with a letter.
func isRegName(b []byte) bool {
	if len(b) == 0 || !(b[0] >= 'A' && b[0] <= 'Z' || b[0] >= 'a' && b[0] <= 'z') {
		return false
	}
	for _, c := range b {
		if !(isDigit(c) || c == '_' || c == '.' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// isBank reports whether b is a parenthesised banking qualifier: "(USR)".
func isBank(b []byte) bool {
	return len(b) >= 3 && b[0] == '(' && b[len(b)-1] == ')' && isRegName(b[1:len(b)-1])
}

// parseBitRange parses "<hi:lo>", byte-aligned as tarmac-trace-utilities
// requires.
func parseBitRange(b []byte) (hi, lo int, ok bool) {
	if len(b) < 5 || b[0] != '<' || b[len(b)-1] != '>' {
		return 0, 0, false
	}
	b = b[1 : len(b)-1]
	k := bytes.IndexByte(b, ':')
	if k < 0 {
		return 0, 0, false
	}
	h, ok1 := parseDec(b[:k])
	l, ok2 := parseDec(b[k+1:])
	if !ok1 || !ok2 || h < l || h%8 != 7 || l%8 != 0 || h > 1<<16 {
		return 0, 0, false
	}
	return int(h), int(l), true
}

// parseRegValue parses a register value that may be split by '_', ':' or
// spaces, may be wider than 64 bits, and may have unknown digits ('-',
// 'x', 'X'); it returns the low 64 bits, the mask of unknown bits among
// them, and the number of digits.
func parseRegValue(b []byte) (v, unknown uint64, digits int, ok bool) {
	for _, c := range b {
		if c == '_' || c == ':' || isSpace(c) {
			continue
		}
		var d uint64
		unk := false
		switch {
		case c == '-' || c == 'x' || c == 'X':
			unk = true
		default:
			h := hexVal(c)
			if h < 0 {
				return 0, 0, 0, false
			}
			d = uint64(h)
		}
		v = v<<4 | d
		unknown <<= 4
		if unk {
			unknown |= 0xf
		}
		digits++
	}
	return v, unknown, digits, digits > 0
}

// parseMem parses "MR4 addr data", "MW8X addr data", "MU8_ADD addr
// data", "MR16 addr hi lo", "MR4 addr (ABORTED)", the RTL forms
// "MSW4___D addr data", "MNW4____ (addr:id) addr data", "W04 X addr
// data", "R08 addr data", with the address vaddr{:paddr{_NS|_S}} and the
// data in hex ('x' digits unknown). The data of the 8-letter tags of
// Cortex-M4 RTL that end in D (data) is written in memory order and is
// turned into the value; those ending in I (instruction fetch) or A
// (peripheral bus) are kept as written. A coprocessor transfer "MCW4___R
// (addr:id) TRANSFER data" is no memory access: KindOther.
func (r *Reader) parseMem(line []byte, args []field) error {
	rec := &r.rec
	tok := func(i int) []byte { return line[args[i].start:args[i].end] }
	t := []byte(rec.Tag)
	var k int
	coproc := false
	if t[0] == 'M' {
		k = 1
		if t[k] == 'S' || t[k] == 'N' || t[k] == 'C' {
			coproc = t[k] == 'C'
			k++
		}
		rec.Write = t[k] != 'R'
		k++
	} else {
		rec.Write = t[0] == 'W' // R08, W04
		k = 1
	}
	ks := k
	for k < len(t) && isDigit(t[k]) {
		k++
	}
	size, ok := parseDec(t[ks:k])
	if !ok || size == 0 || size > 1<<16 {
		return r.errorf("bad access size in %s", quote(t))
	}
	rec.Size = int(size)
	attr := t[k:]
	if t[0] == 'M' && t[1] == 'U' {
		attr = bytes.TrimPrefix(attr, []byte("_"))
	}
	rec.Attr = r.str(attr)
	j := 0
	if j < len(args) && string(tok(j)) == "X" {
		j++ // exclusive, as a separate word
	}
	if j < len(args) && tok(j)[0] == '(' {
		// (addr:id) of the instruction, in Cortex-R5 RTL traces.
		a := tok(j)
		if len(a) < 3 || a[len(a)-1] != ')' {
			return r.errorf("%s record: unclosed %s", rec.Tag, quote(a))
		}
		j++
	}
	if j < len(args) && coproc && string(tok(j)) == "TRANSFER" {
		rec.Kind = KindOther // a coprocessor transfer, not memory
		return nil
	}
	if j >= len(args) {
		return r.errorf("%s record needs an address and data", rec.Tag)
	}
	if err := r.setAddr(tok(j)); err != nil {
		return err
	}
	j++
	if j < len(args) && string(tok(j)) == "(ABORTED)" {
		if j+1 != len(args) {
			return r.errorf("%s record: unexpected %s after (ABORTED)", rec.Tag, quote(tok(j+1)))
		}
		rec.Aborted = true
		return nil
	}
	if j >= len(args) {
		return r.errorf("%s record needs an address and data", rec.Tag)
	}
	words := len(args) - j
	if words > 2 || words == 2 && size <= 8 {
		return r.errorf("%s record: unexpected %s after the data", rec.Tag, quote(tok(len(args)-1)))
	}
	for q := j; q < len(args); q++ {
		if !isMemData(tok(q)) {
			return r.errorf("%s record: bad data %s", rec.Tag, quote(tok(q)))
		}
	}
	v := line[args[j].start:args[len(args)-1].end]
	val, unknown, _, ok := parseRegValue(v)
	if !ok {
		return r.errorf("%s record: bad data %s", rec.Tag, quote(v))
	}
	if len(t) == 8 && t[7] == 'D' && size <= 8 {
		// Cortex-M4 RTL data accesses (MNW4___D) give the bytes in
		// memory order, lowest address first: turn them into the value.
		val, unknown = byteSwap(val, int(size)), byteSwap(unknown, int(size))
	}
	rec.Value, rec.Unknown, rec.ValueText = val, unknown, v
	return nil
}

// byteSwap reverses the order of the low n bytes of v.
func byteSwap(v uint64, n int) uint64 {
	var out uint64
	for i := 0; i < n; i++ {
		out = out<<8 | v>>(8*uint(i))&0xff
	}
	return out
}

// isMemData reports whether b is a word of memory data: hex digits or
// 'x'/'X' for unknown ones, '_' separators.
func isMemData(b []byte) bool {
	digits := false
	for _, c := range b {
		switch {
		case hexVal(c) >= 0, c == 'x', c == 'X':
			digits = true
		case c == '_':
		default:
			return false
		}
	}
	return digits
}

// parseLdSt parses the LD/ST records of the ES style (and their
// continuation lines, which have no tag): a base address and 16 bytes
// of a window of memory in words, highest address first, with dots for
// the bytes not accessed and '#' for unknown ones; then the physical
// address and the memory attributes, which are kept in Text only.
func (r *Reader) parseLdSt(line []byte, args []field) error {
	rec := &r.rec
	rec.Write = rec.Tag == "ST"
	if len(args) < 2 {
		return r.errorf("%s record needs an address and data", rec.Tag)
	}
	base, _, _, _, _, ok := parseAddr(line[args[0].start:args[0].end])
	if !ok {
		return r.errorf("%s record: bad address %s", rec.Tag, quote(line[args[0].start:args[0].end]))
	}
	var window [16]byte // bytes from the highest address down
	var known, unknownB [16]bool
	n := 0
	j := 1
	for j < len(args) && n < 16 {
		g := line[args[j].start:args[j].end]
		if !isDataGroup(g) || len(g)%2 != 0 {
			return r.errorf("%s record: bad data word %s", rec.Tag, quote(g))
		}
		if n+len(g)/2 > 16 {
			return r.errorf("%s record: more than 16 data bytes", rec.Tag)
		}
		for bi := 0; bi < len(g); bi += 2 {
			c := g[bi : bi+2]
			switch {
			case c[0] == '.' && c[1] == '.':
			case c[0] == '#' && c[1] == '#':
				unknownB[n] = true
			default:
				v, ok := parseHex(c)
				if !ok {
					return r.errorf("%s record: bad data byte %s", rec.Tag, quote(c))
				}
				window[n], known[n] = byte(v), true
			}
			n++
		}
		j++
	}
	if n != 16 {
		return r.errorf("%s record: %d data bytes, want 16", rec.Tag, n)
	}
	// The rest: the physical address and attributes.
	for ; j < len(args); j++ {
		if !isAttrWord(line[args[j].start:args[j].end]) {
			return r.errorf("%s record: unexpected %s", rec.Tag, quote(line[args[j].start:args[j].end]))
		}
	}
	lo, hi := -1, -1
	for i := 0; i < 16; i++ {
		if known[i] || unknownB[i] {
			off := 15 - i
			if lo < 0 || off < lo {
				lo = off
			}
			if off > hi {
				hi = off
			}
		}
	}
	if lo < 0 {
		return r.errorf("%s record: no byte accessed", rec.Tag)
	}
	var val, unk uint64
	for off := hi; off >= lo; off-- {
		i := 15 - off
		if off-lo < 8 {
			val |= uint64(window[i]) << (8 * uint(off-lo))
			if unknownB[i] {
				unk |= 0xff << (8 * uint(off-lo))
			}
		}
	}
	rec.Addr, rec.HasAddr = base+uint64(lo), true
	rec.Size = hi - lo + 1
	rec.Value, rec.Unknown = val, unk
	rec.ValueText = line[args[1].start:args[j-1].end]
	return nil
}

func isDataGroup(g []byte) bool {
	for _, c := range g {
		if c != '.' && c != '#' && hexVal(c) < 0 {
			return false
		}
	}
	return len(g) > 0
}

// isAttrWord reports whether b is a physical address ("S:0004001b60",
// "NS:...", or bare hex) or a memory attribute word ("nGnRnE", "OSH",
// "IWBRWA").
func isAttrWord(b []byte) bool {
	for _, c := range b {
		if !(isDigit(c) || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == ':' || c == '_' || c == '-') {
			return false
		}
	}
	return len(b) > 0
}

// parseEvent parses "E value {mode} {value1} number desc" (Fast Models
// and the RISC-V dialect), and the named events without an address: "E
// DebugEvent_HaltingDebugState 00000000", "E HRESETn 0", "E
// simulation_stopped".
func (r *Reader) parseEvent(line []byte, args []field) error {
	rec := &r.rec
	tok := func(i int) []byte { return line[args[i].start:args[i].end] }
	if len(args) == 0 {
		return r.errorf("E record without an event")
	}
	if _, _, _, _, _, ok := parseAddr(tok(0)); !ok {
		if !isRegName(tok(0)) {
			return r.errorf("E record: bad event %s", quote(tok(0)))
		}
		rec.EventDesc = r.str(tok(0))
		if len(args) > 1 {
			rec.EventText = bytes.TrimSpace(line[args[1].start:])
		}
		return nil
	}
	if len(args) < 2 {
		return r.errorf("E record needs a value and an event number")
	}
	if err := r.setAddr(tok(0)); err != nil {
		return err
	}
	last := len(args) - 1
	if _, ok := parseHex(tok(last)); !ok || last == 1 {
		// The usual case: the last word is the description.
		if last >= 2 {
			if v, ok := parseHex(tok(last - 1)); ok {
				rec.EventNum = v
				rec.EventDesc = r.str(tok(last))
				last -= 2
			} else {
				return r.errorf("E record: bad event number %s", quote(tok(last-1)))
			}
		} else {
			v, ok := parseHex(tok(last))
			if !ok {
				if !isRegName(tok(last)) {
					return r.errorf("E record: bad event %s", quote(tok(last)))
				}
				rec.EventDesc = r.str(tok(last))
			} else {
				rec.EventNum = v
			}
			last--
		}
	} else {
		// No description: the last word is the number.
		v, _ := parseHex(tok(last))
		rec.EventNum = v
		last--
	}
	if rec.EventDesc != "" && !isRegName([]byte(rec.EventDesc)) {
		return r.errorf("E record: bad event name %s", quote([]byte(rec.EventDesc)))
	}
	// Between the value and the number: {mode} {value1}.
	switch mid := args[1 : last+1]; len(mid) {
	case 0:
	case 1:
		if v, _, ok := parseHexValue(line[mid[0].start:mid[0].end]); ok {
			rec.Value1, rec.HasValue1 = v, true
		} else if isRegName(line[mid[0].start:mid[0].end]) {
			rec.EventMode = r.str(line[mid[0].start:mid[0].end])
		} else {
			return r.errorf("E record: bad mode %s", quote(line[mid[0].start:mid[0].end]))
		}
	case 2:
		if !isRegName(line[mid[0].start:mid[0].end]) {
			return r.errorf("E record: bad mode %s", quote(line[mid[0].start:mid[0].end]))
		}
		rec.EventMode = r.str(line[mid[0].start:mid[0].end])
		v, _, ok := parseHexValue(line[mid[1].start:mid[1].end])
		if !ok {
			return r.errorf("E record: bad value %s", quote(line[mid[1].start:mid[1].end]))
		}
		rec.Value1, rec.HasValue1 = v, true
	default:
		return r.errorf("E record: unexpected %s", quote(line[mid[2].start:mid[2].end]))
	}
	return nil
}

// setAddr parses an address "vaddr{:paddr{_NS|_S}{,paddr2}}" into
// rec.Addr/PAddr.
func (r *Reader) setAddr(b []byte) error {
	v, p, hasP, ns, s, ok := parseAddr(b)
	if !ok {
		return r.errorf("%s record: bad address %s", r.rec.Tag, quote(b))
	}
	r.rec.Addr, r.rec.HasAddr, r.rec.PAddr, r.rec.HasPAddr, r.rec.NS, r.rec.S = v, true, p, hasP, ns, s
	return nil
}

// setOpcode parses a 4- or 8-digit hex opcode.
func (r *Reader) setOpcode(b []byte) error {
	h := trimHexPrefix(b)
	v, ok := parseHex(h)
	if !ok || len(h) > 8 {
		return r.errorf("%s record: bad opcode %s", r.rec.Tag, quote(b))
	}
	r.rec.Opcode = uint32(v)
	r.rec.OpcodeBytes = 4
	if len(h) <= 4 {
		r.rec.OpcodeBytes = 2
	}
	return nil
}

// parseAddr parses "vaddr{:paddr{_NS|_S}{,paddr2{_NS|_S}}}" (hex,
// optional 0x prefixes); the second physical address (of the second
// halfword of a T32 instruction) is checked and dropped.
func parseAddr(b []byte) (v, p uint64, hasP, ns, s bool, ok bool) {
	if k := bytes.IndexByte(b, ','); k >= 0 {
		if _, _, _, ok := parsePAddr(b[k+1:]); !ok {
			return 0, 0, false, false, false, false
		}
		b = b[:k]
	}
	if k := bytes.IndexByte(b, ':'); k >= 0 {
		p, ns, s, ok = parsePAddr(b[k+1:])
		if !ok {
			return 0, 0, false, false, false, false
		}
		hasP = true
		b = b[:k]
	} else {
		// A bare address may carry the suffix too ("0x00080000_NS").
		if bytes.HasSuffix(b, []byte("_NS")) {
			ns, b = true, b[:len(b)-3]
		} else if bytes.HasSuffix(b, []byte("_S")) {
			s, b = true, b[:len(b)-2]
		}
	}
	v, ok = parseHex(trimHexPrefix(b))
	return v, p, hasP, ns, s, ok
}

// parsePAddr parses a physical address with an optional _NS or _S
// suffix.
func parsePAddr(b []byte) (p uint64, ns, s, ok bool) {
	if bytes.HasSuffix(b, []byte("_NS")) {
		ns, b = true, b[:len(b)-3]
	} else if bytes.HasSuffix(b, []byte("_S")) {
		s, b = true, b[:len(b)-2]
	}
	p, ok = parseHex(trimHexPrefix(b))
	return p, ns, s, ok
}
