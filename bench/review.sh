#!/usr/bin/env bash
# Reviews a generated repository of FILES files (10000) with the
# repo.code_review workflow, end to end, RUNS times (3): `ward dev` as it
# runs by default (credentials, the policy and the sandbox on; the memory
# store), the repository written by genrepo (repogen.Realistic: Go, Python,
# JavaScript, TypeScript, YAML, Markdown and shell files of 0.5-45 KiB, a
# few with insecure code or a secret), its directory granted to the repo
# modules as an operator would grant /srv/ward/repos (a copy of the policy
# bundle whose data.yaml adds the directory's root to their
# read_only_roots; ward dev --mount-root that root). Each run prints the
# wall time of `ward workflow run repo.code_review --wait`, each step's span
# (its first job created to its last ended), the CPU time ward dev spent
# (every part of Ward, the modules included) and the findings. The first
# run includes the modules' compilation by wazero (ward dev's cache starts
# empty), the others do not. `make bench-review` runs it; FILES, RUNS,
# BATCH (the workflow's batch_size) and KEEP=1 (keep the logs) override.
set -euo pipefail
NAME=bench-review
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
FILES=${FILES:-10000} RUNS=${RUNS:-3} BATCH=${BATCH:-}
need "apt-get install jq curl" jq curl
[ -x "$WARD" ] || die "$WARD not built (make build)"
compgen -G "$MODULES/repo-*.wasm" >/dev/null || die "no repo modules in $MODULES (make modules)"

state=$(mktemp -d)
procs="dev"
trap 'cleanup keep' EXIT
machine

repos="$state/repos" dir="$state/repos/r$FILES"
go run ./modules/internal/repo/repogen/genrepo -n "$FILES" "$dir"
# The bundle without its tests (ward_test.rego), which pin the default
# data's roots and would refuse the bundle with one more.
mkdir "$state/policies"
cp policies/ward.rego "$state/policies/"
sed "s|read_only_roots: \[\"/srv/ward/repos\"\]|read_only_roots: [\"/srv/ward/repos\", \"$repos\"]|" policies/data.yaml >"$state/policies/data.yaml"
grep -q "\"$repos\"" "$state/policies/data.yaml" || die "could not grant $repos in the policy's data.yaml"

port=$(free_port) mport=$(free_port)
WARD_STATE_DIR="$state/ward" "$WARD" dev --modules "$MODULES" --nats-port "$port" --metrics "127.0.0.1:$mport" --gateway "" \
	--safety-listen 127.0.0.1:0 --mount-root "$repos" --policies "$state/policies" --log-level warn \
	${CPUPROFILE:+--cpuprofile "$CPUPROFILE"} >"$state/dev.log" 2>&1 &
dev=$!
wait_for "$dev" "$state/dev.log" "^try:" 600 || die "ward dev did not start" "$state/dev.log"
cli=(--nats "nats://127.0.0.1:$port" --creds "$state/ward/creds/admin.creds")
input="{\"dir\": \"$dir\"${BATCH:+, \"batch_size\": $BATCH}}"
echo "== ward workflow run repo.code_review --input '$input' --wait"

for r in $(seq "$RUNS"); do
	c0=$(cpu "$dev") t0=$(date +%s%N)
	"$WARD" workflow run repo.code_review "${cli[@]}" --input "$input" --wait >"$state/run$r.out" 2>&1 ||
		die "run $r failed" "$state/run$r.out" "$state/dev.log"
	t1=$(date +%s%N) c1=$(cpu "$dev")
	run=$(sed -n 's/^run \(run-[^:]*\): .*/\1/p' "$state/run$r.out" | head -1)
	"$WARD" workflow get "$run" "${cli[@]}" -o json >"$state/run$r.json"
	"$WARD" jobs ls --all --limit 1000 --since 1h "${cli[@]}" -o json >"$state/jobs$r.json"
	printf 'run %d: %.1f s wall, ward dev %.1f s CPU, %s; %s\n' "$r" "$(((t1 - t0) / 1000000))e-3" "$(((c1 - c0) * 1000 / TICK))e-3" \
		"$(jq -r '.outputs.summary | "\(.findings) findings in \(.files) files (\(.by_severity | to_entries | map("\(.value) \(.key)") | join(", ")))"' "$state/run$r.json")" \
		"$(jq -r '.outputs.summary.by_rule | to_entries | map("\(.key) \(.value)") | join(", ")' "$state/run$r.json")"
	jq -r --arg run "$run" '[.[] | select(.labels["ward.run"] == $run)] | (map(.created_at_unix_ms) | min) as $t0
		| group_by(.labels["ward.task"] | sub("\\[.*"; "")) | sort_by(map(.created_at_unix_ms) | min) | .[]
		| "  \(.[0].labels["ward.task"] | sub("\\[.*"; "") | . + " " * (10 - length)) \(length | tostring | " " * (4 - length) + .) job(s) \((map(.created_at_unix_ms) | min) - $t0 | . / 100 | round / 10) → \((map(.updated_at_unix_ms) | max) - $t0 | . / 100 | round / 10) s"' \
		"$state/jobs$r.json"
	# The repo modules' jobs so far by instance: cold (a new one), warm
	# (reused from the pool).
	echo "  instances (so far): $(curl -fsS "http://127.0.0.1:$mport/metrics" | sed -n 's/^ward_host_instance_runs_total{instance="\([a-z]*\)",module="repo-\([a-z]*\)"} \([0-9]*\)$/\2 \1 \3/p' | sort | paste -sd, - | sed 's/,/, /g')"
done
cleanup keep
trap - EXIT
