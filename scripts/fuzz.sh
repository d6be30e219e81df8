#!/usr/bin/env bash
# fuzz.sh runs every Go fuzz target of the module, one after another, each
# for FUZZTIME (default 60s):
#
#   go test -run '^$' -fuzz '^FuzzX$' -fuzztime $FUZZTIME \
#     -fuzzminimizetime $FUZZ_MINIMIZE -parallel $FUZZ_PARALLEL ./pkg
#
# The targets are found in the test files (scripts/fuzzlist), so that a
# new one is never forgotten. FUZZTIME=2s is the short mode for make test:
# each target's seed corpus, then two seconds of new inputs. FUZZ=regexp
# runs only the targets whose name matches it; FUZZ_PARALLEL (2) is the
# fuzzing workers per target. FUZZ_MINIMIZE (1000x) bounds the shrinking
# of each new input: go test's default, 60s an input, spends whole runs
# shrinking kilobyte inputs (FuzzCredsFile: 14 executions in 30s; 50,000
# with 1000x), and a failing input is as good a seed unshrunk.
#
# It prints each target's time and executions, and fails when one finds
# something: go test saves the input under the package's
# testdata/fuzz/FuzzX/. Keep it there (it is a seed from then on, run by
# go test itself) and fix the code. A failure that is only Go's own race
# at the end of the fuzz time (raced, below) is run again, and is no
# finding.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-60s}
FUZZ_PARALLEL=${FUZZ_PARALLEL:-2}
FUZZ_MINIMIZE=${FUZZ_MINIMIZE:-1000x}
FUZZ=${FUZZ:-.}

# fuzz runs one target; its output is in $out.
fuzz() {
	out=$("$GO" test -run '^$' -fuzz "^${2}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZ_MINIMIZE" -parallel "$FUZZ_PARALLEL" "./$1" 2>&1)
}

# raced reports whether a failure in $out is Go's own race at the end of a
# -fuzztime (golang/go#75804, in go1.26, fixed in go1.27): "context
# deadline exceeded" as the fuzzing stops, no input written, no seed
# failing. It is no finding; the target is run again once.
raced() {
	grep -q 'context deadline exceeded' <<<"$out" &&
		! grep -q -e 'Failing input written to' -e 'failure while testing seed corpus' -e '^panic:' <<<"$out"
}

targets=$("$GO" run ./scripts/fuzzlist)
start=$SECONDS
n=0
failed=()
while read -r pkg name; do
	[[ -n $name && $name =~ $FUZZ ]] || continue
	n=$((n + 1))
	t0=$SECONDS
	ok=1
	if ! fuzz "$pkg" "$name"; then
		if raced && echo "      $pkg $name: Go's fuzztime race (golang/go#75804), not a finding: again" && fuzz "$pkg" "$name"; then
			:
		elif raced; then
			echo "      $pkg $name: Go's fuzztime race again, not a finding"
		else
			ok=0
		fi
	fi
	if ((ok)); then
		execs=$(grep -o 'execs: [0-9]*' <<<"$out" | tail -1 || true)
		printf 'ok    %-26s %-22s %4ds  %s\n' "$pkg" "$name" $((SECONDS - t0)) "${execs:-execs: n/a (the corpus took the time)}"
	else
		printf 'FAIL  %-26s %-22s %4ds\n' "$pkg" "$name" $((SECONDS - t0))
		tail -n 60 <<<"$out"
		failed+=("$pkg $name")
	fi
done <<<"$targets"

echo "$n fuzz targets, ${FUZZTIME} each, in $((SECONDS - start))s"
if ((${#failed[@]})); then
	printf 'failed: %s\n' "${failed[@]}"
	exit 1
fi
