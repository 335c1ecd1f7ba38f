package sim

import (
	"fmt"

	"github.com/rvtrace/rvtrace/riscv"
)

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// disasm renders an instruction for error messages ("" when its bits are
// unknown), with the extensions ext (0: riscv.DefaultExt).
func disasm(raw uint32, pc uint64, size, xlen int, ext riscv.Ext) string {
	switch size {
	case 2:
		raw &= 0xffff
	case 4:
	default:
		return ""
	}
	if xlen != 32 {
		xlen = 64
	}
	if ext == 0 {
		ext = riscv.DefaultExt(xlen)
	}
	return riscv.DisasmExt(raw, pc, xlen, ext)
}
