package riscv

import (
	"strings"
	"sync"
	"testing"
)

func TestLength(t *testing.T) {
	for _, c := range []struct {
		p    uint16
		want int
	}{
		{0x0000, 2}, {0x4505, 2}, {0x8082, 2}, {0xfffe, 2},
		{0x0513, 4}, {0x0073, 4}, {0x0003, 4}, {0xffef, 4},
		{0x001f, 6}, {0x005f, 6}, {0xffdf, 6},
		{0x003f, 8}, {0xffbf, 8},
		{0x007f, 0}, {0xffff, 0}, {0x00ff, 0},
	} {
		if got := Length(c.p); got != c.want {
			t.Errorf("Length(%#04x) = %d, want %d", c.p, got, c.want)
		}
	}
}

func TestIndexKeys(t *testing.T) {
	for k := uint32(0); k < 1<<15; k++ {
		if key32(unkey32(k)) != k {
			t.Fatalf("key32(unkey32(%#x)) = %#x", k, key32(unkey32(k)))
		}
	}
	for k := uint32(0); k < 1<<10; k++ {
		if key16(unkey16(k)) != k {
			t.Fatalf("key16(unkey16(%#x)) = %#x", k, key16(unkey16(k)))
		}
	}
	// A linear scan of the table must agree with the index everywhere.
	for raw := uint32(0); raw < 1<<16; raw++ {
		for _, xlen := range []int{32, 64} {
			for _, ext := range []Ext{DefaultExt(xlen), ExtGC, ExtC | ExtZcb | ExtZcmp} {
				if got, want := DecodeExt(raw, xlen, ext).Op, slowOp(raw, xlen, ext); got != want {
					t.Fatalf("DecodeExt(%#x, %d, %v).Op = %v, linear scan gives %v", raw, xlen, ext, got, want)
				}
			}
		}
	}
	for _, raw := range random32() {
		for _, xlen := range []int{32, 64} {
			if got, want := Decode(raw, xlen).Op, slowOp(raw, xlen, DefaultExt(xlen)); got != want {
				t.Fatalf("Decode(%#x, %d).Op = %v, linear scan gives %v", raw, xlen, got, want)
			}
		}
	}
}

// slowOp decodes by trying every row of the table in order.
func slowOp(raw uint32, xlen int, ext Ext) Op {
	have, flag := ext|extRV64, Op(0)
	if xlen == 32 {
		have, flag = ext|extRV32, opRV32
	}
	n := uint8(4)
	if raw&3 != 3 {
		raw &= 0xffff
		n = 2
	} else if raw&0x1f == 0x1f {
		return flag
	}
	for i := range ops {
		o := &ops[i]
		if i == 0 || o.len != n || raw&o.mask != o.match || o.need&^have != 0 || o.chk != chkNone && !checkOK(o.chk, raw, have) {
			continue
		}
		return Op(i) | flag
	}
	return flag
}

// TestNTraceLinkTable checks every row of the N-Trace 1.0 table
// "Generating itype for different instructions" (4-bit itype), with
// encodings worked out by hand from the ISA manual (and checked once with
// riscv64-linux-gnu-as).
func TestNTraceLinkTable(t *testing.T) {
	for _, c := range []struct {
		row   string
		raw   uint32
		xlen  int
		class Class
		link  Link
	}{
		// JAL rd
		{"jal rd=link (x1): 9 direct call", 0x008000ef, 64, ClassJump, LinkCall},             // jal ra,.+8
		{"jal rd=link (x5): 9 direct call", 0x008002ef, 64, ClassJump, LinkCall},             // jal t0,.+8
		{"jal rd=x0: 11 direct jump", 0x0080006f, 64, ClassJump, LinkNone},                   // j .+8
		{"jal rd!=link, rd!=x0: 15 other direct jump", 0x0080056f, 64, ClassJump, LinkOther}, // jal a0,.+8
		// JALR rd, rs
		{"jalr rd=link, rs!=link: 8 indirect call", 0x000500e7, 64, ClassIndirect, LinkCall},                     // jalr ra,0(a0)
		{"jalr rd=link, rs=link, rd=rs (x1): 8 indirect call", 0x000080e7, 64, ClassIndirect, LinkCall},          // jalr ra,0(ra)
		{"jalr rd=link, rs=link, rd=rs (x5): 8 indirect call", 0x000282e7, 64, ClassIndirect, LinkCall},          // jalr t0,0(t0)
		{"jalr rd=link, rs=link, rd!=rs (x1,x5): 12 co-routine swap", 0x000280e7, 64, ClassIndirect, LinkCoSwap}, // jalr ra,0(t0)
		{"jalr rd=link, rs=link, rd!=rs (x5,x1): 12 co-routine swap", 0x000082e7, 64, ClassIndirect, LinkCoSwap}, // jalr t0,0(ra)
		{"jalr rd!=link (x0), rs=link: 13 return", 0x00008067, 64, ClassIndirect, LinkReturn},                    // ret
		{"jalr rd!=link (a0), rs=link: 13 return", 0x00028567, 64, ClassIndirect, LinkReturn},                    // jalr a0,0(t0)
		{"jalr rd=x0, rs!=link: 10 indirect jump", 0x00050067, 64, ClassIndirect, LinkNone},                      // jr a0
		{"jalr rd!=link, rd!=x0, rs!=link: 14 other indirect jump", 0x00058567, 64, ClassIndirect, LinkOther},    // jalr a0,0(a1)
		// C.JAL, C.JALR, C.JR, C.J
		{"c.jal: 9 direct call", 0x2021, 32, ClassJump, LinkCall},                    // c.jal .+8
		{"c.jalr rs=x5: 12 co-routine swap", 0x9282, 64, ClassIndirect, LinkCoSwap},  // c.jalr t0
		{"c.jalr rs!=x5 (a0): 8 indirect call", 0x9502, 64, ClassIndirect, LinkCall}, // c.jalr a0
		{"c.jalr rs!=x5 (ra): 8 indirect call", 0x9082, 64, ClassIndirect, LinkCall}, // c.jalr ra
		{"c.jr rs=link (x1): 13 return", 0x8082, 64, ClassIndirect, LinkReturn},      // c.jr ra
		{"c.jr rs=link (x5): 13 return", 0x8282, 64, ClassIndirect, LinkReturn},      // c.jr t0
		{"c.jr rs!=link: 10 indirect jump", 0x8502, 64, ClassIndirect, LinkNone},     // c.jr a0
		{"c.j: 11 direct jump", 0xa021, 64, ClassJump, LinkNone},                     // c.j .+8
		// Zcmt, Zcmp
		{"cm.jt: 11 direct jump", 0xa016, 32, ClassTableJump, LinkNone},     // cm.jt 5
		{"cm.jalt: 9 direct call", 0xa082, 32, ClassTableJump, LinkCall},    // cm.jalt 32
		{"cm.popret: 13 return", 0xbe42, 32, ClassPopRet, LinkReturn},       // cm.popret {ra},16
		{"cm.popretz: 13 return", 0xbc42, 32, ClassPopRet, LinkReturn},      // cm.popretz {ra},16
		{"cm.popret (RV64): 13 return", 0xbe42, 64, ClassIllegal, LinkNone}, // c.fsdsp slot: Zcd by default on RV64
		// Not jumps.
		{"branch", 0x00b50863, 64, ClassBranch, LinkNone}, // beq a0,a1,.+16
		{"mret", 0x30200073, 64, ClassTrapReturn, LinkNone},
	} {
		in := Decode(c.raw, c.xlen)
		if c.row == "cm.popret (RV64): 13 return" {
			// On RV64 the default is Zcd: this is c.fsdsp.
			if in.Class != ClassLinear || in.Op.String() != "c.fsdsp" {
				t.Errorf("%s: %#x RV64 = %v %v, want c.fsdsp", c.row, c.raw, in.Op, in.Class)
			}
			in = DecodeExt(c.raw, 64, ExtC|ExtZcmp)
			c.class, c.link = ClassPopRet, LinkReturn
		}
		if in.Class != c.class || in.Link != c.link {
			t.Errorf("%s: Decode(%#x, %d) = %v/%v, want %v/%v", c.row, c.raw, c.xlen, in.Class, in.Link, c.class, c.link)
		}
	}
}

// TestDecodeFields checks the registers, offsets, targets and indexes Decode
// extracts, with hand-computed encodings.
func TestDecodeFields(t *testing.T) {
	for _, c := range []struct {
		raw     uint32
		xlen    int
		op      string
		len     uint8
		rd, rs1 uint8
		imm     int64
		pc      uint64
		target  uint64
		index   uint8
	}{
		{0x00b50863, 64, "beq", 4, 0, 10, 16, 0x1000, 0x1010, 0},        // beq a0,a1,.+16
		{0xfe0718e3, 64, "bne", 4, 0, 14, -16, 0x1000, 0xff0, 0},        // bne a4,zero,.-16
		{0xffdff06f, 64, "jal", 4, 0, 0, -4, 0x1000, 0xffc, 0},          // j .-4
		{0x008000ef, 32, "jal", 4, 1, 0, 8, 0xfffffffc, 0x4, 0},         // jal ra,.+8 wraps on RV32
		{0x008000ef, 64, "jal", 4, 1, 0, 8, 0xfffffffc, 0x100000004, 0}, // ... and not on RV64
		{0xffdff06f, 32, "jal", 4, 0, 0, -4, 0, 0xfffffffc, 0},          // j .-4 at 0 on RV32
		{0xff8080e7, 64, "jalr", 4, 1, 1, -8, 0x1000, 0, 0},             // jalr ra,-8(ra): no direct target
		{0xdc6d, 64, "c.beqz", 2, 0, 8, -6, 0x1000, 0xffa, 0},           // beqz s0,.-6 (c.beqz)
		{0xe111, 64, "c.bnez", 2, 0, 10, 4, 0x1000, 0x1004, 0},          // bnez a0,.+4 (c.bnez)
		{0xbffd, 64, "c.j", 2, 0, 0, -2, 0x1000, 0xffe, 0},              // j .-2 (c.j)
		{0x3ffd, 32, "c.jal", 2, 1, 0, -2, 0x1000, 0xffe, 0},            // jal .-2 (c.jal)
		{0x3ffd, 64, "c.addiw", 2, 31, 31, 0, 0, 0, 0},                  // same bits on RV64: addiw t6,t6,-1
		{0x1141, 64, "c.addi", 2, 2, 2, 0, 0, 0, 0},                     // addi sp,sp,-16
		{0x0808, 64, "c.addi4spn", 2, 10, 2, 0, 0, 0, 0},                // addi a0,sp,16
		{0x4522, 64, "c.lwsp", 2, 10, 2, 0, 0, 0, 0},                    // lw a0,8(sp)
		{0x4188, 64, "c.lw", 2, 10, 11, 0, 0, 0, 0},                     // lw a0,0(a1)
		{0xe406, 64, "c.sdsp", 2, 0, 2, 0, 0, 0, 0},                     // sd ra,8(sp)
		{0x852e, 64, "c.mv", 2, 10, 0, 0, 0, 0, 0},                      // mv a0,a1
		{0x952e, 64, "c.add", 2, 10, 10, 0, 0, 0, 0},                    // add a0,a0,a1
		{0x8d0d, 64, "c.sub", 2, 10, 10, 0, 0, 0, 0},                    // sub a0,a0,a1
		{0xa016, 32, "cm.jt", 2, 0, 0, 0, 0, 0, 5},                      // cm.jt 5
		{0xa3fe, 32, "cm.jalt", 2, 1, 0, 0, 0, 0, 255},                  // cm.jalt 255
		{0xb862, 32, "cm.push", 2, 2, 2, 0, 0, 0, 0},                    // cm.push {ra,s0-s1},-16
		{0xbe42, 32, "cm.popret", 2, 0, 1, 0, 0, 0, 0},                  // cm.popret {ra},16
		{0xaca2, 32, "cm.mvsa01", 2, 9, 10, 0, 0, 0, 0},                 // cm.mvsa01 s1,s0
		{0xafe6, 32, "cm.mva01s", 2, 10, 23, 0, 0, 0, 0},                // cm.mva01s s7,s1
		{0x12b50073, 64, "sfence.vma", 4, 0, 10, 0, 0, 0, 0},            // sfence.vma a0,a1
		{0x00a5b023, 64, "sd", 4, 0, 11, 0, 0, 0, 0},                    // sd a0,0(a1)
		{0x30047073, 64, "csrrci", 4, 0, 0, 0, 0, 0, 0},                 // csrci mstatus,8
		{0x2d51, 64, "c.addiw", 2, 26, 26, 0, 0, 0, 0},                  // addiw s10,s10,20
		{0x0001, 64, "c.nop", 2, 0, 0, 0, 0, 0, 0},                      // nop
		{0x00c5f553, 64, "fadd.s", 4, 10, 11, 0, 0, 0, 0},               // fadd.s fa0,fa1,fa2 (f registers)
	} {
		in := Decode(c.raw, c.xlen)
		if in.Op.String() != c.op || in.Len != c.len || in.Rd != c.rd || in.Rs1 != c.rs1 || in.Imm != c.imm || in.Index != c.index {
			t.Errorf("Decode(%#x, %d) = %s len %d rd %d rs1 %d imm %d index %d; want %s len %d rd %d rs1 %d imm %d index %d",
				c.raw, c.xlen, in.Op, in.Len, in.Rd, in.Rs1, in.Imm, in.Index, c.op, c.len, c.rd, c.rs1, c.imm, c.index)
		}
		if got := in.Target(c.pc); got != c.target {
			t.Errorf("Decode(%#x, %d).Target(%#x) = %#x, want %#x", c.raw, c.xlen, c.pc, got, c.target)
		}
		if in.Raw != c.raw || in.XLen() != c.xlen {
			t.Errorf("Decode(%#x, %d): Raw %#x XLen %d", c.raw, c.xlen, in.Raw, in.XLen())
		}
	}
	if got := Decode(0x4505, 32).Next(0xfffffffe); got != 0 {
		t.Errorf("Next wraps to %#x on RV32, want 0", got)
	}
	if got := Decode(0x00150513, 64).Next(0xfffffffe); got != 0x100000002 {
		t.Errorf("Next = %#x on RV64, want 0x100000002", got)
	}
	// The high half of a 16-bit instruction's word is the next parcel.
	if in := Decode(0xdead4505, 64); in.Raw != 0x4505 || in.Len != 2 || in.Op.String() != "c.li" {
		t.Errorf("Decode(0xdead4505) = %+v", in)
	}
}

// TestLegality checks reserved and XLEN-specific encodings (ISA manual
// "RVC Instruction Set Listings", Zc* specification).
func TestLegality(t *testing.T) {
	for _, c := range []struct {
		raw   uint32
		xlen  int
		ext   Ext // 0: DefaultExt
		class Class
		op    string
		why   string
	}{
		{0x0000, 64, 0, ClassIllegal, "illegal", "all-zero parcel"},
		{0x0000, 32, 0, ClassIllegal, "illegal", "all-zero parcel"},
		{0x0004, 64, 0, ClassIllegal, "illegal", "c.addi4spn with nzuimm 0"},
		{0x4002, 64, 0, ClassIllegal, "illegal", "c.lwsp rd=x0"},
		{0x6002, 64, 0, ClassIllegal, "illegal", "c.ldsp rd=x0"},
		{0x6002, 32, 0, ClassLinear, "c.flwsp", "c.flwsp ft0 is fine on RV32"},
		{0x8002, 64, 0, ClassIllegal, "illegal", "c.jr rs1=x0"},
		{0x6101, 64, 0, ClassIllegal, "illegal", "c.addi16sp with nzimm 0"},
		{0x6081, 64, ExtRV64Default &^ ExtZcmop, ClassIllegal, "illegal", "c.lui with nzimm 0"},
		{0x6081, 64, 0, ClassLinear, "c.mop", "c.mop.1 (Zcmop: c.lui x1,0)"},
		{0x6781, 32, 0, ClassLinear, "c.mop", "c.mop.15"},
		{0x6f81, 32, 0, ClassIllegal, "illegal", "c.lui x31,0 is not a c.mop (rd > 15)"},
		{0x6101, 64, 0, ClassIllegal, "illegal", "c.addi16sp with nzimm 0 is not a c.mop (rd even)"},
		{0x2001, 64, 0, ClassIllegal, "illegal", "c.addiw rd=x0 (RV64)"},
		{0x2001, 32, 0, ClassJump, "c.jal", "same bits are c.jal on RV32"},
		{0x2505, 64, 0, ClassLinear, "c.addiw", "c.addiw a0,1"},
		{0x2505, 32, 0, ClassJump, "c.jal", "c.jal on RV32"},
		{0x9c01, 32, 0, ClassIllegal, "illegal", "c.subw on RV32"},
		{0x9c01, 64, 0, ClassLinear, "c.subw", "c.subw on RV64"},
		{0x1082, 32, 0, ClassIllegal, "illegal", "RV32 c.slli with shamt[5]=1"},
		{0x1082, 64, 0, ClassLinear, "c.slli", "c.slli ra,32 on RV64"},
		{0x6188, 32, 0, ClassLinear, "c.flw", "c.flw on RV32"},
		{0x6188, 64, 0, ClassLinear, "c.ld", "c.ld on RV64"},
		{0x9c79, 64, 0, ClassIllegal, "illegal", "Zcb funct 110: reserved"},
		{0x9c71, 64, 0, ClassLinear, "c.zext.w", "c.zext.w (RV64)"},
		{0x9c71, 32, 0, ClassIllegal, "illegal", "c.zext.w is RV64 only"},
		{0x8c40, 64, 0, ClassIllegal, "illegal", "c.sh with bit 6 set: reserved"},
		{0x9c41, 64, ExtC | ExtZcb, ClassIllegal, "illegal", "c.mul needs M"},
		{0x9c65, 64, ExtC | ExtZcb, ClassIllegal, "illegal", "c.sext.b needs Zbb"},
		{0x9c61, 64, ExtC | ExtZcb, ClassLinear, "c.zext.b", "c.zext.b needs only Zcb"},
		{0x4505, 64, ExtM, ClassIllegal, "illegal", "no C"},
		{0xb802, 32, 0, ClassIllegal, "illegal", "cm.push with rlist < 4"},
		{0xb842, 32, 0, ClassLinear, "cm.push", "cm.push {ra},-16"},
		{0xb942, 32, 0, ClassIllegal, "illegal", "cm.push with bit 8 set: reserved"},
		{0xac22, 32, 0, ClassIllegal, "illegal", "cm.mvsa01 s0,s0: r1s' = r2s'"},
		{0xac62, 32, 0, ClassLinear, "cm.mva01s", "cm.mva01s s0,s0 is fine"},
		{0xa402, 32, 0, ClassIllegal, "illegal", "c.fsdsp slot, reserved with Zcmp"},
		{0xa402, 32, ExtGC, ClassLinear, "c.fsdsp", "c.fsdsp for rv32gc"},
		{0xa402, 64, 0, ClassLinear, "c.fsdsp", "c.fsdsp for RV64 default"},
		{0x2000, 32, 0, ClassIllegal, "illegal", "c.fld: no Zcd with Zcmp/Zcmt"},
		{0x2000, 32, ExtGC, ClassLinear, "c.fld", "c.fld for rv32gc"},
		{0xa016, 64, ExtGC | ExtZcmt, ClassTableJump, "cm.jt", "Zcmt wins over Zcd"},
		// HINTs are legal.
		{0x0005, 64, 0, ClassLinear, "c.nop", "c.nop 1 (HINT)"},
		{0x4005, 64, 0, ClassLinear, "c.li", "c.li zero,1 (HINT)"},
		{0x0501, 64, 0, ClassLinear, "c.addi", "c.addi a0,0 (HINT)"},
		{0x0006, 64, 0, ClassLinear, "c.slli", "c.slli zero,1 (HINT)"},
		{0x802a, 64, 0, ClassLinear, "c.mv", "c.mv zero,a0 (HINT)"},
		{0x6005, 64, 0, ClassLinear, "c.lui", "c.lui zero,1 (HINT)"},
		// 32-bit XLEN-specific encodings.
		{0x0005b503, 32, 0, ClassIllegal, "illegal", "ld on RV32"},
		{0x0005b503, 64, 0, ClassLinear, "ld", "ld on RV64"},
		{0x0015051b, 32, 0, ClassIllegal, "illegal", "addiw on RV32"},
		{0x02051513, 32, 0, ClassIllegal, "illegal", "slli a0,a0,32 on RV32"},
		{0x02051513, 64, 0, ClassLinear, "slli", "slli a0,a0,32 on RV64"},
		{0x6985d513, 32, 0, ClassLinear, "rev8", "RV32 rev8"},
		{0x6985d513, 64, 0, ClassIllegal, "illegal", "RV32 rev8 encoding on RV64"},
		{0x6b85d513, 64, 0, ClassLinear, "rev8", "RV64 rev8"},
		{0x6b85d513, 32, 0, ClassIllegal, "illegal", "RV64 rev8 encoding on RV32"},
		{0x0805c533, 32, 0, ClassLinear, "zext.h", "RV32 zext.h (pack rd,rs,zero)"},
		{0x0805c533, 64, ExtRV64Default &^ ExtZbkb, ClassIllegal, "illegal", "RV32 zext.h encoding on RV64"},
		{0x0805c533, 64, 0, ClassLinear, "pack", "pack a0,a1,zero on RV64 (Zbkb)"},
		{0x0805c53b, 64, ExtG | ExtZbkb, ClassLinear, "packw", "zext.h's RV64 encoding is packw without Zbb"},
		{0x6b85d513, 64, ExtG | ExtZbkb, ClassLinear, "rev8", "rev8 with Zbkb only"},
		{0x6b85d513, 64, ExtG, ClassIllegal, "illegal", "rev8 needs Zbb or Zbkb"},
		{0x08f59513, 32, 0, ClassLinear, "zip", "zip (RV32 Zbkb)"},
		{0x08f59513, 64, 0, ClassIllegal, "illegal", "zip is RV32 only"},
		{0x0ac59533, 64, 0, ClassLinear, "clmul", ""},
		{0x0ac59533, 64, ExtG, ClassIllegal, "illegal", "clmul needs Zbc"},
		{0x0ec5d533, 64, 0, ClassLinear, "czero.eqz", ""},
		{0x0045200f, 64, 0, ClassLinear, "cbo.zero", ""},
		{0x0045250f, 64, 0, ClassIllegal, "illegal", "cbo.zero with rd != 0"},
		{0x0035200f, 64, 0, ClassIllegal, "illegal", "cbo with reserved operation 3"},
		{0x04156013, 64, 0, ClassLinear, "prefetch.r", ""},
		{0x04156013, 64, ExtG, ClassLinear, "ori", "prefetch.r is an ori HINT without Zicbop"},
		{0x04256013, 64, 0, ClassLinear, "ori", "ori rd=x0 with imm[4:0]=2 is not a prefetch"},
		{0x81c5c573, 64, 0, ClassLinear, "mop.r", "mop.r.0 a0,a1"},
		{0xcec5c573, 64, 0, ClassLinear, "mop.rr", "mop.rr.7 a0,a1,a2"},
		{0x81c5c573, 64, ExtG, ClassIllegal, "illegal", "mop.r needs Zimop"},
		{0x00259507, 64, 0, ClassLinear, "flh", ""},
		{0x00259507, 64, ExtG | ExtZfh, ClassLinear, "flh", "Zfh includes Zfhmin"},
		{0x00259507, 64, ExtG, ClassIllegal, "illegal", "flh needs Zfhmin"},
		{0x04c5f553, 64, ExtG | ExtZfhmin, ClassIllegal, "illegal", "fadd.h needs Zfh"},
		{0x4415f553, 64, ExtM | ExtF | ExtZfh, ClassIllegal, "illegal", "fcvt.h.d needs D"},
		{0x0805c53b, 64, 0, ClassLinear, "zext.h", "RV64 zext.h (packw rd,rs,zero)"},
		{0xe2058553, 32, 0, ClassIllegal, "illegal", "fmv.x.d on RV32"},
		{0x0805853b, 64, 0, ClassLinear, "add.uw", "zext.w"},
		{0x0805853b, 64, ExtG, ClassIllegal, "illegal", "add.uw needs Zba"},
		{0x100525af, 64, 0, ClassLinear, "lr.w", "lr.w a1,(a0)"},
		{0x101525af, 64, 0, ClassIllegal, "illegal", "lr.w with rs2 != 0"},
		{0x00c5d553, 64, 0, ClassIllegal, "illegal", "fadd.s with reserved rm 5"},
		{0x00c5f553, 64, 0, ClassLinear, "fadd.s", "fadd.s with rm dyn"},
		// System and privileged.
		{0x00000073, 64, 0, ClassECall, "ecall", ""},
		{0x00100073, 64, 0, ClassEBreak, "ebreak", ""},
		{0x9002, 64, 0, ClassEBreak, "c.ebreak", ""},
		{0x30200073, 64, 0, ClassTrapReturn, "mret", ""},
		{0x10200073, 32, 0, ClassTrapReturn, "sret", ""},
		{0x7b200073, 64, 0, ClassTrapReturn, "dret", ""},
		{0x10500073, 64, 0, ClassLinear, "wfi", ""},
		{0x12000073, 64, 0, ClassLinear, "sfence.vma", ""},
		{0x12000573, 64, 0, ClassIllegal, "illegal", "sfence.vma with rd != 0"},
		{0x00200073, 64, 0, ClassIllegal, "illegal", "uret (N extension, withdrawn)"},
		{0x0000100f, 64, 0, ClassLinear, "fence.i", ""},
		{0x0ff0000f, 64, 0, ClassLinear, "fence", ""},
		{0x8330000f, 64, 0, ClassLinear, "fence", "fence.tso"},
		{0x30002573, 64, 0, ClassLinear, "csrrs", "csrr a0,mstatus"},
		{0x0000000b, 64, 0, ClassIllegal, "illegal", "custom-0"},
		{0x0000001f, 64, 0, ClassIllegal, "illegal", "48-bit"},
		{0x0000003f, 64, 0, ClassIllegal, "illegal", "64-bit"},
		{0x0000007f, 64, 0, ClassIllegal, "illegal", ">= 80-bit"},
		{0xffffffff, 64, 0, ClassIllegal, "illegal", "all ones"},
	} {
		ext := c.ext
		if ext == 0 {
			ext = DefaultExt(c.xlen)
		}
		in := DecodeExt(c.raw, c.xlen, ext)
		if in.Class != c.class || in.Op.String() != c.op {
			t.Errorf("%s: DecodeExt(%#x, %d, %v) = %s %v, want %s %v", c.why, c.raw, c.xlen, ext, in.Op, in.Class, c.op, c.class)
		}
		if c.ext == 0 {
			if d := Decode(c.raw, c.xlen); d != in {
				t.Errorf("%s: Decode(%#x) = %+v, DecodeExt with DefaultExt = %+v", c.why, c.raw, d, in)
			}
		}
		if want := uint8(Length(uint16(c.raw))); in.Len != want {
			t.Errorf("%s: Len %d, want %d", c.why, in.Len, want)
		}
	}
}

// TestDisasmHand checks the hand-written disassembly (RV32-only encodings,
// Zcb, Zcmp, Zcmt, privileged) against text worked out from the
// specifications; the objdump tests check the rest.
func TestDisasmHand(t *testing.T) {
	for _, c := range []struct {
		raw  uint32
		xlen int
		pc   uint64
		want string
	}{
		{0x30200073, 64, 0, "mret"},
		{0x10200073, 64, 0, "sret"},
		{0x7b200073, 64, 0, "dret"},
		{0x10500073, 64, 0, "wfi"},
		{0x12000073, 64, 0, "sfence.vma"},
		{0x12050073, 64, 0, "sfence.vma a0"},
		{0x12b50073, 64, 0, "sfence.vma a0,a1"},
		{0x12b00073, 64, 0, "sfence.vma zero,a1"},
		{0x2021, 32, 0x80000000, "jal 0x80000008"},
		{0x6188, 32, 0, "flw fa0,0(a1)"},
		{0xe188, 32, 0, "fsw fa0,0(a1)"},
		{0x6522, 32, 0, "flw fa0,8(sp)"},
		{0xe42a, 32, 0, "fsw fa0,8(sp)"},
		{0x6985d513, 32, 0, "rev8 a0,a1"},
		{0x0805c533, 32, 0, "zext.h a0,a1"},
		{0x8188, 64, 0, "lbu a0,0(a1)"},
		{0x81c8, 64, 0, "lbu a0,1(a1)"},
		{0x81a8, 64, 0, "lbu a0,2(a1)"},
		{0x85a8, 64, 0, "lhu a0,2(a1)"},
		{0x85e8, 64, 0, "lh a0,2(a1)"},
		{0x89e8, 64, 0, "sb a0,3(a1)"},
		{0x8da8, 64, 0, "sh a0,2(a1)"},
		{0x9d61, 64, 0, "zext.b a0,a0"},
		{0x9d65, 64, 0, "sext.b a0,a0"},
		{0x9d69, 64, 0, "zext.h a0,a0"},
		{0x9d6d, 64, 0, "sext.h a0,a0"},
		{0x9d71, 64, 0, "zext.w a0,a0"},
		{0x9d75, 64, 0, "not a0,a0"},
		{0x9d4d, 64, 0, "mul a0,a0,a1"},
		{0xb842, 32, 0, "cm.push {ra},-16"},
		{0xb852, 32, 0, "cm.push {ra,s0},-16"},
		{0xb862, 32, 0, "cm.push {ra,s0-s1},-16"},
		{0xb8f2, 32, 0, "cm.push {ra,s0-s11},-64"},
		{0xb8fe, 32, 0, "cm.push {ra,s0-s11},-112"},
		{0xb8f2, 64, 0, "fsd ft8,112(sp)"}, // c.fsdsp: Zcd by default on RV64
		{0xbae2, 32, 0, "cm.pop {ra,s0-s9},48"},
		{0xbe42, 32, 0, "cm.popret {ra},16"},
		{0xbc56, 32, 0, "cm.popretz {ra,s0},32"},
		{0xaca2, 32, 0, "cm.mvsa01 s1,s0"},
		{0xace2, 32, 0, "cm.mva01s s1,s0"},
		{0xafe6, 32, 0, "cm.mva01s s7,s1"},
		{0xa016, 32, 0, "cm.jt 5"},
		{0xa082, 32, 0, "cm.jalt 32"},
		{0xa3fe, 32, 0, "cm.jalt 255"},
		{0x0000, 64, 0, "unimp"},
		{0x9c79, 64, 0, ".insn 0x9c79"},
		{0x6b805513, 32, 0, ".insn 0x6b805513"},
		{0x0000001f, 64, 0, "unknown"},
		{0x0000007f, 64, 0, "unknown"},
		{0x00b50863, 64, 0x80000000, "beq a0,a1,0x80000010"},
		{0x00150513, 64, 0, "addi a0,a0,1"},
		{0x0100000f, 64, 0, "pause"},
		{0x8330000f, 64, 0, "fence.tso"},
		{0x0ff0000f, 64, 0, "fence"},
		{0x0330000f, 64, 0, "fence rw,rw"},
		{0xc0051553, 64, 0, "fcvt.w.s a0,fa0,rtz"},
		{0xc8002573, 32, 0, "rdcycleh a0"},
		{0xc8002573, 64, 0, "csrr a0,cycleh"},
	} {
		if got := Disasm(c.raw, c.pc, c.xlen); got != c.want {
			t.Errorf("Disasm(%#x, %#x, %d) = %q, want %q", c.raw, c.pc, c.xlen, got, c.want)
		}
	}
	// On RV64, Zcmp stacks 8-byte registers.
	if got := DisasmExt(0xb8f2, 0, 64, ExtC|ExtZcmp); got != "cm.push {ra,s0-s11},-112" {
		t.Errorf("RV64 cm.push = %q", got)
	}
	if got := DisasmExt(0xb842, 0, 64, ExtC|ExtZcmp); got != "cm.push {ra},-16" {
		t.Errorf("RV64 cm.push {ra} = %q", got)
	}
	if got := Decode(0xb862, 32).String(); got != "cm.push {ra,s0-s1},-16" {
		t.Errorf("Inst.String = %q", got)
	}
}

// TestDisasmTotal checks that every legal 16-bit instruction, for the
// default extensions and for rv32gc/rv64gc, and every legal word of a large
// 32-bit sample has a disassembly (the riscv64asm path falls back to
// ".insn" if it fails, which would hide an instruction).
func TestDisasmTotal(t *testing.T) {
	for _, p := range []struct {
		xlen int
		ext  Ext
	}{{32, ExtRV32Default}, {64, ExtRV64Default}, {32, ExtGC}, {64, ExtGC}} {
		for raw := uint32(0); raw < 1<<16; raw++ {
			if raw&3 == 3 {
				continue
			}
			in := DecodeExt(raw, p.xlen, p.ext)
			s := in.disasm(0x80000000)
			if illegal := strings.HasPrefix(s, ".insn") || s == "unimp"; illegal != (in.Class == ClassIllegal) {
				t.Errorf("rv%d %v: %#04x (%s, %v) disassembles as %q", p.xlen, p.ext, raw, in.Op, in.Class, s)
			}
		}
	}
	// And a third of the 32-bit sample of the objdump tests.
	words := random32()
	for i := 0; i < len(words); i += 3 {
		raw := words[i]
		for _, xlen := range []int{32, 64} {
			in := Decode(raw, xlen)
			s := in.disasm(0x80000000)
			if illegal := strings.HasPrefix(s, ".insn"); illegal != (in.Class == ClassIllegal) {
				t.Errorf("rv%d: %#08x (%s, %v) disassembles as %q", xlen, raw, in.Op, in.Class, s)
			}
		}
	}
}

// TestDisasmConcurrent runs Disasm from several goroutines (for -race:
// riscv64asm keeps unguarded package state).
func TestDisasmConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				for _, w := range benchWords {
					_ = Disasm(w, uint64(i), 64)
				}
			}
		}()
	}
	wg.Wait()
}

func TestDecodeAllocs(t *testing.T) {
	var n int
	allocs := testing.AllocsPerRun(100, func() {
		for _, w := range benchWords {
			n += int(Decode(w, 64).Len) + int(Decode(w, 32).Len)
		}
	})
	if allocs != 0 {
		t.Errorf("Decode allocates %v times per run", allocs)
	}
}

func TestStrings(t *testing.T) {
	for c := ClassLinear; c <= ClassIllegal; c++ {
		if s := c.String(); s == "" || s[0] == 'C' {
			t.Errorf("Class(%d).String() = %q", c, s)
		}
	}
	if s := Class(200).String(); s != "Class(200)" {
		t.Errorf("Class(200) = %q", s)
	}
	for l := LinkNone; l <= LinkOther; l++ {
		if s := l.String(); s == "" || s[0] == 'L' {
			t.Errorf("Link(%d).String() = %q", l, s)
		}
	}
	if s := Link(9).String(); s != "Link(9)" {
		t.Errorf("Link(9) = %q", s)
	}
	if s := Op(0x7fff).String(); s != "Op(32767)" {
		t.Errorf("Op(0x7fff) = %q", s)
	}
	if s := (ExtM | ExtZcb).String(); s != "m_zcb" {
		t.Errorf("Ext string = %q", s)
	}
	if XReg(10) != "a0" || FReg(10) != "fa0" || XReg(32) != "" || FReg(40) != "" {
		t.Errorf("register names")
	}
	if CSRName(0x300) != "mstatus" || CSRName(0x7c0) != "0x7c0" || CSRName(0x000) != "0x0" || CSRName(0x30c) != "mstateen0" {
		t.Errorf("CSR names: %s %s %s %s", CSRName(0x300), CSRName(0x7c0), CSRName(0), CSRName(0x30c))
	}
}

func TestParseArch(t *testing.T) {
	for _, c := range []struct {
		s    string
		xlen int
		ext  Ext
	}{
		{"rv64gc", 64, ExtGC &^ ExtZcf},
		{"rv64gc_zba_zbb_zbs_zcb", 64, ExtRV64Default &^ ExtLinux},
		{"rv64gc_zba_zbb_zbs_zcb_zbc_zbkb_zbkx_zfh_zicbom_zicboz_zicbop_zicond_zihintpause_zimop_zcmop_svinval", 64, ExtRV64Default},
		{"rv64i_svinval2p0_sstc", 64, ExtSvinval},
		{"rv32i_zfhmin_zcmop", 32, ExtF | ExtZfhmin | ExtC | ExtZcmop},
		{"rv64i_zkn", 64, ExtZbkb | ExtZbkx},
		{"rv32gc", 32, ExtGC},
		{"rv32imac", 32, ExtM | ExtA | ExtC},
		{"rv32imafc", 32, ExtM | ExtA | ExtF | ExtC | ExtZcf},
		{"rv32imafd_zca_zcf_zba_zbb_zbs_zcb_zcmp_zcmt", 32, ExtRV32Default &^ ExtLinux},
		{"rv32i2p1_m2p0_a2p1_f2p2_d2p2_c2p0_zicsr2p0_zifencei2p0_zcmp1p0", 32, ExtG | ExtC | ExtZcf | ExtZcmp},
		{"rv64i2p1_m2p0_a2p1_f2p2_d2p2_c2p0_zicsr2p0_zba1p0_zbb1p0", 64, ExtGC&^ExtZcf | ExtZba | ExtZbb},
		{"RV64IMB", 64, ExtM | ExtB},
		{"rv32e_zce", 32, ExtC | ExtZcb | ExtZcmp | ExtZcmt},
		{"rv32imf_zce", 32, ExtM | ExtF | ExtC | ExtZcf | ExtZcb | ExtZcmp | ExtZcmt},
		{"rv64imafdc_zcmp_zcd", 64, ExtGC&^ExtZcf | ExtZcmp},
	} {
		xlen, ext, err := ParseArch(c.s)
		if err != nil || xlen != c.xlen || ext != c.ext {
			t.Errorf("ParseArch(%q) = %d, %v, %v; want %d, %v", c.s, xlen, ext, err, c.xlen, c.ext)
		}
	}
	if _, _, err := ParseArch("x86_64"); err == nil {
		t.Error("ParseArch(x86_64) did not fail")
	}
}

// FuzzDecode checks that Decode and Disasm never panic, that Decode's
// length is Length's, and that its fields are consistent.
func FuzzDecode(f *testing.F) {
	for _, w := range benchWords {
		f.Add(w, false, uint32(0))
	}
	f.Add(uint32(0), true, uint32(0xffffffff))
	f.Add(uint32(0x2001), true, uint32(ExtC))
	f.Add(uint32(0xa002), false, uint32(ExtGC|ExtZcmp))
	f.Fuzz(func(t *testing.T, raw uint32, rv32 bool, ext uint32) {
		xlen := 64
		if rv32 {
			xlen = 32
		}
		for _, in := range []Inst{Decode(raw, xlen), DecodeExt(raw, xlen, Ext(ext))} {
			if want := Length(uint16(raw)); int(in.Len) != want {
				t.Fatalf("Decode(%#x).Len = %d, Length = %d", raw, in.Len, want)
			}
			if in.Class > ClassIllegal || in.Link > LinkOther {
				t.Fatalf("Decode(%#x): class %d link %d", raw, in.Class, in.Link)
			}
			if in.Len == 2 && in.Raw != raw&0xffff || in.Len != 2 && in.Raw != raw {
				t.Fatalf("Decode(%#x).Raw = %#x", raw, in.Raw)
			}
			if in.Class == ClassIllegal && (in.Op&^opRV32 != OpIllegal || in.Link != LinkNone) {
				t.Fatalf("Decode(%#x): illegal with op %v link %v", raw, in.Op, in.Link)
			}
			if in.Class != ClassIllegal && in.Op&^opRV32 == OpIllegal {
				t.Fatalf("Decode(%#x): %v without op", raw, in.Class)
			}
			if (in.Class == ClassBranch || in.Class == ClassJump) && in.Imm&1 != 0 {
				t.Fatalf("Decode(%#x): odd offset %d", raw, in.Imm)
			}
			if in.XLen() != xlen || in.Rd > 31 || in.Rs1 > 31 {
				t.Fatalf("Decode(%#x): xlen %d rd %d rs1 %d", raw, in.XLen(), in.Rd, in.Rs1)
			}
			s := in.disasm(0x80000000)
			if s == "" {
				t.Fatalf("Disasm(%#x) is empty", raw)
			}
			if unknown := strings.HasPrefix(s, ".insn") || s == "unknown" || s == "unimp" && in.Len == 2; unknown != (in.Class == ClassIllegal) {
				t.Fatalf("Decode(%#x) = %s %v, disassembled as %q", raw, in.Op, in.Class, s)
			}
		}
		_ = Disasm(raw, uint64(raw)*0x9e3779b97f4a7c15, xlen)
		_ = DisasmExt(raw, 0, xlen, Ext(ext))
	})
}
