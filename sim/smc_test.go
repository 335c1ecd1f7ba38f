package sim

import "testing"

// TestSelfModifyingCode: a program patches an instruction it has executed
// (no fence.i): the new instruction runs, and the store is counted, with
// the PC and the address of the first; a store into the same page that
// overwrites no executed instruction is not counted.
func TestSelfModifyingCode(t *testing.T) {
	h := runBare(t, "median", Config{},
		0x00000297, // 0x00 auipc t0,0
		0x00000593, // 0x04 li a1,0
		0x00100513, // 0x08 target: li a0,1 (patched into li a0,42)
		0x00158593, // 0x0c addi a1,a1,1
		0x0282a303, // 0x10 lw t1,0x28(t0)
		0x1062a023, // 0x14 sw t1,0x100(t0) (data in the code page)
		0x0062a423, // 0x18 sw t1,8(t0) (the patch)
		0x00200393, // 0x1c li t2,2
		0xfe75c4e3, // 0x20 blt a1,t2,target
		0x0000006f, // 0x24 j .
		0x02a00513, // 0x28 li a0,42
	)
	if a0, a1 := h.Reg(10), h.Reg(11); a0 != 42 || a1 != 2 {
		t.Errorf("a0 = %d, a1 = %d; want 42 (the patched instruction ran), 2", a0, a1)
	}
	cw := h.m.codeWrites
	entry := h.m.Entry()
	if cw.Count != 2 || cw.Hart != 0 || cw.PC != entry+0x18 || cw.Addr != entry+8 {
		t.Errorf("code writes %+v; want 2, the first by pc %#x to %#x", cw, entry+0x18, entry+8)
	}
}

// TestSelfModifyingCodeAtomics: an AMO into an executed instruction is
// counted; an SC that fails (no reservation) writes nothing and is not.
func TestSelfModifyingCodeAtomics(t *testing.T) {
	h := runBare(t, "median", Config{},
		0x00000297, // auipc t0,0
		0x0002a02f, // amoadd.w zero,zero,(t0) (rewrites the auipc)
		0x1802a32f, // sc.w t1,zero,(t0) (fails)
		0x0000006f, // j .
	)
	cw := h.m.codeWrites
	if cw.Count != 1 || cw.PC != h.m.Entry()+4 || cw.Addr != h.m.Entry() || h.Reg(6) != 1 {
		t.Errorf("code writes %+v, sc.w result %d; want 1 by pc %#x, sc.w failing (1)", cw, h.Reg(6), h.m.Entry()+4)
	}
}

// TestSelfModifyingCodeCBOZero: cbo.zero over a block of instructions the
// hart executed drops them from the decoded cache (running the block again
// now takes an illegal-instruction trap: the zeros) and is counted as a
// code write by the cbo.zero, at the block.
func TestSelfModifyingCodeCBOZero(t *testing.T) {
	h := runBare(t, "median", Config{},
		0x00000297, // 0x00 auipc t0,0
		0x03028313, // 0x04 addi t1,t0,0x30
		0x30531073, // 0x08 csrw mtvec,t1
		0x04028293, // 0x0c addi t0,t0,64
		0x000280e7, // 0x10 jalr ra,0(t0) (runs the block)
		0x0042a00f, // 0x14 cbo.zero (t0)
		0x000280e7, // 0x18 jalr ra,0(t0) (runs it again: zeros)
		0x0000006f, // 0x1c j .
		0x00000013, // 0x20 nop
		0x00000013, // 0x24 nop
		0x00000013, // 0x28 nop
		0x00000013, // 0x2c nop
		0x34202673, // 0x30 handler: csrr a2,mcause
		0x0000006f, // 0x34 j .
		0x00000013, // 0x38 nop
		0x00000013, // 0x3c nop
		0x00150513, // 0x40 block: addi a0,a0,1
		0x00008067, // 0x44 ret
	)
	e := h.m.Entry()
	if e&(cboBlock-1) != 0 {
		t.Fatalf("median's entry %#x is not block aligned", e)
	}
	if a0, a2 := h.Reg(10), h.Reg(12); a0 != 1 || a2 != causeIllegal {
		t.Errorf("a0 = %d, mcause = %d; want 1 (the block ran once), %d (illegal: the zeroed block)", a0, a2, causeIllegal)
	}
	if cw := h.m.codeWrites; cw.Count != 1 || cw.PC != e+0x14 || cw.Addr != e+0x40 {
		t.Errorf("code writes %+v; want 1 by pc %#x to %#x", cw, e+0x14, e+0x40)
	}
}
