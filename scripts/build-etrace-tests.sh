#!/bin/sh
# Builds the test programs of the E-Trace package: the Linux user-mode
# programs of the implicit return tests
# (etrace/returns_test.go), and the bare-metal data trace programs
# (privdata, csrdata), into ELF files next to their
# sources. The ELF files are committed so that the tests need no cross
# compiler; rebuild them with
#   scripts/build-etrace-tests.sh
# Needs riscv64-linux-gnu-gcc (Debian: gcc-riscv64-linux-gnu).
set -eu
cd "$(dirname "$0")/../etrace/testdata/returns"
CC=${CC:-riscv64-linux-gnu-gcc}
echo "$CC -nostdlib -static returns.S -o returns.elf"
# (through a named object file, so that the ELF does not name a temporary one)
"$CC" -c -march=rv64gc -mabi=lp64d -o returns.o returns.S
"$CC" -nostdlib -static -march=rv64gc -mabi=lp64d -Wl,--no-relax -o returns.elf returns.o
rm returns.o
echo "$CC -static -O2 longjmp.c -o longjmp.elf"
"$CC" -static -O2 -march=rv64gc -mabi=lp64d -o longjmp.elf longjmp.c
# the bare-metal M/U-mode data trace program (etrace/datafilter_test.go)
cd ../privdata
FLAGS="-nostdlib -static -fno-pie -no-pie -Wl,--build-id=none -Wl,--no-warn-rwx-segments -T link.ld"
echo "$CC $FLAGS privdata.S -o privdata.elf"
"$CC" -c -march=rv64gc -mabi=lp64d -o privdata.o privdata.S
"$CC" -march=rv64gc -mabi=lp64d $FLAGS -o privdata.elf privdata.o
rm privdata.o
# the bare-metal CSR data trace programs (etrace/datacsr_test.go), RV64 and RV32
cd ../csrdata
for p in csrdata:rv64gc:lp64d csrdata32:rv32gc:ilp32; do
  n=${p%%:*}; arch=${p#*:}; abi=${arch#*:}; arch=${arch%%:*}
  echo "$CC $FLAGS -march=$arch $n.S -o $n.elf"
  "$CC" -c -march="$arch" -mabi="$abi" -o "$n.o" "$n.S"
  "$CC" -march="$arch" -mabi="$abi" $FLAGS -o "$n.elf" "$n.o"
  rm "$n.o"
done
