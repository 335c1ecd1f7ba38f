package sim

import "fmt"

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// disasm renders an instruction for error messages.
func disasm(raw uint32, pc uint64, size int) string {
	return ""
}
