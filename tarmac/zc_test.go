package tarmac

import (
	"testing"

	"github.com/rvtrace/rvtrace/riscv"
)

// TestZcClassify: 0xbe56 is cm.popret {ra,s0},32 with Zcmp and c.fsdsp
// with Zcd. Without Options.Zc the record's disassembly says which it
// is, on RV32 (whose default is Zcmp) and RV64 (Zcd); Options.Zc (the
// program's ELF file) wins over it; without disassembly the default
// decides.
func TestZcClassify(t *testing.T) {
	for _, c := range []struct {
		xlen   int
		zc     riscv.Ext
		disasm string
		want   ctl
	}{
		{32, 0, "cm.popret {ra,s0},32", ctlReturn},
		{64, 0, "cm.popret {ra,s0},32", ctlReturn},
		{32, 0, "c.fsdsp fs5,440(sp)", ctlLinear},
		{64, 0, "c.fsdsp fs5,440(sp)", ctlLinear},
		{32, 0, "", ctlReturn},
		{64, 0, "", ctlLinear},
		{64, riscv.ExtZcd, "cm.popret {ra,s0},32", ctlLinear},
		{32, riscv.ExtZcmp | riscv.ExtZcmt, "c.fsdsp fs5,440(sp)", ctlReturn},
	} {
		d := &Decoder{opt: Options{Zc: c.zc}}
		rec := &Record{Opcode: 0xbe56, OpcodeBytes: 2, Disasm: []byte(c.disasm)}
		if got := classifyRISCV(rec.Opcode, c.xlen, d.riscvExt(rec, c.xlen)); got != c.want {
			t.Errorf("RV%d, Zc %v, %q: %v, want %v", c.xlen, c.zc, c.disasm, got, c.want)
		}
	}
}
