#!/bin/sh
# Times the simulator as a user sees it: whole "rvtrace run" processes on
# coremark, three embench programs, a tiny program (start-up cost) and a
# static Linux program built from examples/bench/simbench.c, with Spike
# and qemu-riscv64 interleaved when available. Prints a Markdown table
# (see PERFORMANCE.md). Run from anywhere; extra arguments go to
# "rvtrace bench --sim" (e.g. --runs 9).
#   SPIKE=/path/to/spike scripts/bench-sim.sh
# Needs the corpus at ../shared/corpus (or --corpus DIR) and, for the Linux
# program, riscv64-linux-gnu-gcc.
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/rvtrace" ./cmd/rvtrace
peers=""
if [ -n "${SPIKE:-}" ]; then
	peers="--spike $SPIKE"
elif command -v spike >/dev/null 2>&1; then
	peers="--spike $(command -v spike)"
fi
if command -v qemu-riscv64 >/dev/null 2>&1; then
	peers="$peers --qemu $(command -v qemu-riscv64)"
fi
# shellcheck disable=SC2086 # peers holds several words
"$tmp/rvtrace" bench --sim $peers "$@"
