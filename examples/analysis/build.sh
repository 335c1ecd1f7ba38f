#!/bin/sh
# build.sh builds the analysis test programs with the RISC-V Linux
# cross compiler (Debian: gcc-riscv64-linux-gnu). The ELFs are committed
# beside their sources so that tests do not need the compiler; rerun this
# script after changing a source. -fno-inline keeps every function; the
# sources turn on sibling-call optimisation where they want tail calls.
# inline.c is the exception: built with -O2 and inlining on, for the tests
# of DWARF inlined frames.
set -eu
cd "$(dirname "$0")"
CC=${CC:-riscv64-linux-gnu-gcc}
# Source paths relative to the repository in the debug information keep
# the ELFs the same wherever they are built (scripts/check-examples.sh).
CFLAGS="-O1 -g -static -fno-inline -ffile-prefix-map=$(pwd)=examples/analysis"
for src in *.c; do
	out=${src%.c}.elf
	flags=$CFLAGS
	[ "$src" = inline.c ] && flags="-O2 -g -static -Wl,--build-id -ffile-prefix-map=$(pwd)=."
	echo "$CC $flags -o $out $src"
	$CC $flags -o "$out" "$src"
done
# ELF_ONLY=1: the programs only (scripts/check-examples.sh).
[ "${ELF_ONLY:-}" = 1 ] && exit 0

# The executed PCs of each program under qemu's user-mode emulator (one
# instruction per translation block, so every instruction is logged), as
# the tests' independent truth: one hex address per line, gzipped.
# Debian: qemu-user.
QEMU=${QEMU:-qemu-riscv64}
if command -v "$QEMU" >/dev/null 2>&1; then
	for elf in *.elf; do
		log=$(mktemp)
		env -i "$QEMU" -singlestep -d exec,nochain -D "$log" "./$elf" || true
		sed -n 's/^Trace [0-9]*: 0x[0-9a-f]* \[[0-9a-f]*\/\([0-9a-f]*\)\/.*/\1/p' "$log" | gzip -9n > "${elf%.elf}.pcs.gz"
		rm -f "$log"
		echo "${elf%.elf}.pcs.gz: $(zcat "${elf%.elf}.pcs.gz" | wc -l) instructions"
	done
else
	echo "build.sh: $QEMU not found; PC lists not regenerated" >&2
fi

# The ingress blocks rvtrace's own simulator reports for calls.elf: the
# fixture of the Tarmac round-trip test (tarmac/testdata).
if command -v go >/dev/null 2>&1; then
	tmp=$(mktemp -d)
	go build -o "$tmp/rvtrace" ../../cmd/rvtrace
	# empty environment: the program's startup depends on it
	env -i "$tmp/rvtrace" run -q --linux --ingress "$tmp/sim.csv" calls.elf >/dev/null || true
	if [ -s "$tmp/sim.csv" ]; then
		gzip -9n -c "$tmp/sim.csv" > ../../tarmac/testdata/calls-sim.ingress.csv.gz
		echo "tarmac/testdata/calls-sim.ingress.csv.gz: $(($(wc -l < "$tmp/sim.csv") - 1)) blocks"
	fi
	rm -rf "$tmp"
fi
