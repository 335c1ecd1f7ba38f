package riscv

import (
	"strconv"
	"strings"

	"golang.org/x/arch/riscv64/riscv64asm"
)

// csrFix corrects riscv64asm's CSR names to the ones objdump prints: names
// of CSRs it does not know (newer privileged-spec, Smstateen, AIA, Sscofpmf,
// PMP 16-63, ...) and "" for names objdump does not use (the withdrawn N
// extension and CLIC drafts), which print as a number.
var csrFix = map[uint32]string{
	// Withdrawn or draft CSRs that riscv64asm names and objdump does not.
	0x000: "", 0x004: "", 0x005: "", 0x007: "", 0x040: "", 0x041: "",
	0x042: "", 0x043: "", 0x044: "", 0x045: "", 0x046: "", 0x048: "",
	0x049: "", 0x102: "", 0x103: "", 0x107: "", 0x145: "", 0x146: "",
	0x148: "", 0x149: "", 0x307: "", 0x345: "", 0x346: "", 0x348: "",
	0x349: "", 0x7a9: "",

	// Renamed by the privileged and debug specs.
	0x7aa: "mscontext", 0xf15: "mconfigptr",

	// CSRs riscv64asm does not know.
	0x015: "seed",
	0x10a: "senvcfg",
	0x114: "sieh",
	0x14d: "stimecmp", 0x15d: "stimecmph",
	0x150: "siselect", 0x151: "sireg", 0x154: "siph", 0x15c: "stopei",
	0x214: "vsieh",
	0x24d: "vstimecmp", 0x25d: "vstimecmph",
	0x250: "vsiselect", 0x251: "vsireg", 0x254: "vsiph", 0x25c: "vstopei",
	0x308: "mvien", 0x309: "mvip", 0x30a: "menvcfg", 0x31a: "menvcfgh",
	0x313: "midelegh", 0x314: "mieh", 0x318: "mvienh", 0x319: "mviph",
	0x350: "miselect", 0x351: "mireg", 0x354: "miph", 0x35c: "mtopei",
	0x5a8: "scontext",
	0x608: "hvien", 0x609: "hvictl", 0x60a: "henvcfg", 0x61a: "henvcfgh",
	0x613: "hidelegh", 0x618: "hvienh",
	0x646: "hviprio1", 0x647: "hviprio2", 0x655: "hviph",
	0x656: "hviprio1h", 0x657: "hviprio2h",
	0x6a8: "hcontext",
	0x747: "mseccfg", 0x757: "mseccfgh",
	0xda0: "scountovf",
	0xdb0: "stopi", 0xeb0: "vstopi", 0xfb0: "mtopi",
}

func init() {
	// Regular families: state enable (Smstateen), PMP 16-63 and the
	// upper halves of the event selectors (Sscofpmf).
	for i := uint32(0); i < 4; i++ {
		n := strconv.Itoa(int(i))
		csrFix[0x10c+i] = "sstateen" + n
		csrFix[0x30c+i] = "mstateen" + n
		csrFix[0x31c+i] = "mstateen" + n + "h"
		csrFix[0x60c+i] = "hstateen" + n
		csrFix[0x61c+i] = "hstateen" + n + "h"
	}
	for i := uint32(4); i < 16; i++ {
		csrFix[0x3a0+i] = "pmpcfg" + strconv.Itoa(int(i))
	}
	for i := uint32(16); i < 64; i++ {
		csrFix[0x3b0+i] = "pmpaddr" + strconv.Itoa(int(i))
	}
	for i := uint32(3); i < 32; i++ {
		csrFix[0x720+i] = "mhpmevent" + strconv.Itoa(int(i)) + "h"
	}
}

// CSRName returns the name objdump uses for CSR number n ("mstatus"), or
// its number in hex ("0x7c0") when it has none.
func CSRName(n uint32) string {
	n &= 0xfff
	if s, ok := csrFix[n]; ok {
		if s == "" {
			return "0x" + strconv.FormatUint(uint64(n), 16)
		}
		return s
	}
	s := riscv64asm.CSR(n).String()
	if strings.HasPrefix(s, "CSR(") {
		return "0x" + strconv.FormatUint(uint64(n), 16)
	}
	return strings.ToLower(s)
}
