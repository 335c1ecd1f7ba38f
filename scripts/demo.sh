#!/usr/bin/env bash
# The quick start (README): builds rvtrace, runs the bundled example on the
# simulator while encoding its trace live in N-Trace, lists the first
# messages, decodes the trace with the program image and checks that the
# decoded instruction flow is exactly what the simulator executed.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$(mktemp -d)}
go build -o "$out/rvtrace" ./cmd/rvtrace
rv="$out/rvtrace"
elf=examples/demo/demo.elf

echo "== run the example with live N-Trace encoding (preset best)"
# bounded (the example retires about 0.4 M instructions): a simulator that
# loops fails here (exit 1) instead of filling the disk with PCs
"$rv" run --max-instret 100000000 --trace ntrace --preset best -o "$out/demo.nex" --pcs "$out/executed.pcs" "$elf"

echo "== the first messages"
"$rv" dump "$out/demo.nex" | head -8 || true

echo "== decode with the program image"
"$rv" decode --image "$elf" --preset best "$out/demo.nex" --pcs "$out/decoded.pcs" --flow "$out/flow.txt"
if cmp -s "$out/executed.pcs" "$out/decoded.pcs"; then
  echo "decoded flow == executed flow ($(wc -l < "$out/decoded.pcs") instructions)"
else
  echo "MISMATCH between executed and decoded instruction flow" >&2
  exit 1
fi

echo "== profile from the decoded trace (hot functions, trace bytes per function)"
"$rv" profile --image "$elf" --preset best "$out/demo.nex" --folded "$out/demo.folded" --html "$out/demo.html" | head -16 || true

echo "== trace size per configuration"
for p in ref-btm ref-htm ref-htm-best best; do
  "$rv" encode --image "$elf" --pcs-in "$out/executed.pcs" --preset "$p" -o "$out/$p.nex" 2>&1 | sed "s|^$out/||"
done
echo "outputs in $out (flow.txt, demo.folded for flamegraph.pl/speedscope, demo.html report)"
