#!/bin/sh
# Builds examples/bench/sv39bench.elf, the Sv39 workload of `rvtrace bench
# --sim` and sim's BenchmarkSv39, with the Debian cross compiler
# (gcc-riscv64-linux-gnu). The ELF is committed; rebuild it with
#   scripts/build-bench.sh
set -eu
cd "$(dirname "$0")/../examples/bench"
CC=${CC:-riscv64-linux-gnu-gcc}
echo "$CC -march=rv64gc sv39bench.S -o sv39bench.elf"
# (through a named object file, so that the ELF does not name a temporary one)
"$CC" -march=rv64gc -mabi=lp64d -c -o sv39bench.o sv39bench.S
"$CC" -march=rv64gc -mabi=lp64d -nostdlib -static -fno-pie -no-pie -Wl,--build-id=none \
	-Wl,--no-warn-rwx-segments -T ../sim-tests/vm/link.ld -o sv39bench.elf sv39bench.o
rm sv39bench.o
