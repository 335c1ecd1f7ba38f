#!/usr/bin/env bash
# The project's test command (README "Run the tests"; .ci/run calls it):
# installs and verifies the test dependencies (stopping, naming what is
# missing, when one does not work), checks formatting and vet/staticcheck,
# runs every test, and runs each fuzz target for a short time.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-test-deps.sh

echo "== gofmt"
bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$bad" ]; then echo "gofmt needed: $bad"; exit 1; fi

echo "== go vet"
go vet ./...

# install-test-deps.sh has checked that staticcheck runs
SC=$(command -v staticcheck || echo "$(go env GOPATH)/bin/staticcheck")
echo "== staticcheck"
"$SC" ./...

echo "== examples rebuilt from source"
bash scripts/check-examples.sh

echo "== Linux kit (Debian kernel and initramfs for the kernel boot tests)"
# Debian's registry is reachable wherever the tests run; a kit that cannot
# be built is a failure, not a reason to skip the kernel tests quietly.
bash scripts/linux-kit.sh >/dev/null

echo "== go test"
go test -count=1 -timeout 40m ./...

echo "== fuzz (short)"
FUZZTIME=${FUZZTIME:-10s}
# bare_deadline reports whether a failed fuzz run's only complaint is
# "context deadline exceeded": Go 1.26's coordinator can report its own
# -fuzztime deadline as a failure when a worker is mid-input at that
# moment (go.dev/issue/75804, fixed in Go 1.27). Such a run wrote no
# input and printed no panic or test error; it is run again, up to three
# times in all. Anything else is a failure.
bare_deadline() {
  awk '/^--- FAIL: Fuzz/ {f=1; next} f && /^FAIL/ {f=0} f && NF {if ($0 !~ /^[ \t]*context deadline exceeded[ \t]*$/) bad=1; seen=1}
       /Failing input written|panic:/ {bad=1} END {exit !(seen && !bad)}'
}
# Targets known to still find new inputs (PERFORMANCE.md, "Reliability"),
# listed space-separated between spaces (" FuzzA FuzzB "): every input
# found so far is a committed seed that "go test" above runs, but a short
# run here may find the next one, which would make the test command fail
# by chance. They are fuzzed on their own until clean, e.g.
#   go test -run '^$' -fuzz '^FuzzIntegrityNarrow$' -parallel 1 ./ntrace/
# None at present (FuzzIntegrityNarrow, the last, ran 10 minutes clean
# twice in a row after its last find: PERFORMANCE.md).
FUZZ_OPEN=" "
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/func //'); do
    if [[ "$FUZZ_OPEN" == *" $f "* ]]; then
      echo "-- $pkg $f: not fuzzed here (still finds new inputs: see PERFORMANCE.md); its seeds ran above"
      continue
    fi
    echo "-- $pkg $f"
    for try in 1 2 3; do
      before=$(ls "$dir/testdata/fuzz/$f" 2>/dev/null || true)
      if out=$(go test -run '^$' -fuzz "^$f\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1); then
        break
      fi
      after=$(ls "$dir/testdata/fuzz/$f" 2>/dev/null || true)
      if [ "$before" = "$after" ] && [ "$try" -lt 3 ] && echo "$out" | bare_deadline; then
        echo "fuzz: $f: Go's fuzz coordinator reported its own deadline (go.dev/issue/75804), no input found; running it again"
        continue
      fi
      echo "$out" | tail -40
      if [ "$before" != "$after" ]; then
        echo "fuzz: $pkg $f failed; its input is in $dir/testdata/fuzz/$f/ (go test -run '$f/NAME' $pkg repeats it)"
      else
        echo "fuzz: $pkg $f failed (no input was written: see its output above)"
      fi
      exit 1
    done
  done
done
if [ -n "${FUZZ_OPEN// /}" ]; then
  echo "fuzz: all targets but$FUZZ_OPEN""ran for $FUZZTIME without failure"
else
  echo "fuzz: all targets ran for $FUZZTIME without failure"
fi
