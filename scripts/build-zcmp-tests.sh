#!/bin/sh
# Builds the bare-metal Zcmp/Zcmt test program of examples/sim-tests/zcmp
# (sim/zcmp_test.go runs it) and the Zicboz data trace one (cboz.S,
# cmd/rvtrace/zcmp_test.go) for RV32 and RV64. The ELF files are
# committed; rebuild them with
#   scripts/build-zcmp-tests.sh
# GNU as 2.40 does not know Zcmp and Zcmt, so the program is assembled by
# LLVM's llvm-mc (Debian: llvm-19) and linked by the GNU linker
# (Debian: binutils-riscv64-linux-gnu).
set -eu
cd "$(dirname "$0")/../examples/sim-tests/zcmp"
MC=${MC:-llvm-mc-19}
LD=${LD:-riscv64-linux-gnu-ld}
for xlen in 32 64; do
	echo "$MC --defsym XLEN=$xlen zcmp.S -o zcmp$xlen.elf"
	# (through a named object file, so that the ELF does not name a temporary one)
	"$MC" -triple=riscv$xlen -mattr=+m,+zicsr,+zca,+zcmp,+zcmt --defsym XLEN=$xlen \
		-filetype=obj -o zcmp$xlen.o zcmp.S
	emul=elf64lriscv
	[ $xlen = 32 ] && emul=elf32lriscv
	"$LD" -m $emul -static --build-id=none --no-warn-rwx-segments -T link.ld -o zcmp$xlen.elf zcmp$xlen.o
	rm zcmp$xlen.o
	echo "$MC --defsym XLEN=$xlen cboz.S -o cboz$xlen.elf"
	"$MC" -triple=riscv$xlen -mattr=+m,+zicsr,+zicboz --defsym XLEN=$xlen \
		-filetype=obj -o cboz$xlen.o cboz.S
	"$LD" -m $emul -static --build-id=none --no-warn-rwx-segments -T link.ld -o cboz$xlen.elf cboz$xlen.o
	rm cboz$xlen.o
done
