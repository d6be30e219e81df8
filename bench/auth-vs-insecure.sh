#!/usr/bin/env bash
# Runs `ward bench` against `ward dev` with auth on and with --insecure, in
# turn (ROUNDS times each, alternating), and prints each round's jobs/s and
# the CPU the dev process and the bench client spent per job (from
# /proc/<pid>/stat). `make bench-auth` runs it; N, C and ROUNDS override the
# defaults.
set -euo pipefail
N=${N:-5000} C=${C:-32} ROUNDS=${ROUNDS:-3}
WARD=${WARD:-bin/ward}
MODULES=${MODULES:-modules/build}
TICK=$(getconf CLK_TCK)
state=$(mktemp -d)
trap 'rm -rf "$state"; kill $dev 2>/dev/null || true' EXIT

cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }

round() { # mode: secure | insecure
	local args=() port
	[ "$1" = insecure ] && args=(--insecure)
	port=$((20000 + RANDOM % 20000))
	WARD_STATE_DIR="$state" "$WARD" dev "${args[@]}" --modules "$MODULES" --nats-port "$port" --metrics "" \
		--safety-listen 127.0.0.1:0 --log-level warn >"$state/dev.log" 2>&1 &
	dev=$!
	for _ in $(seq 600); do grep -q "^try:" "$state/dev.log" && break; sleep 0.1; done
	local creds=() ; [ "$1" = secure ] && creds=(--creds "$state/creds/admin.creds")
	local before out after client
	before=$(cpu $dev)
	out=$(/usr/bin/time -f "client %U %S" "$WARD" bench --nats "nats://127.0.0.1:$port" "${creds[@]}" -n "$N" -c "$C" 2>&1)
	after=$(cpu $dev)
	kill -TERM $dev; wait $dev 2>/dev/null || true
	local rate
	rate=$(echo "$out" | grep -oE 'throughput: +[0-9.]+ jobs/s' | grep -oE '[0-9.]+ jobs/s')
	client=$(echo "$out" | awk '/^client [0-9]/{printf "%d", ($2+$3)*1000000}')
	echo "$1: $rate; CPU per job: ward dev $(( (after-before) * 1000000 / TICK / N )) µs, bench client $(( client / N )) µs"
}

for r in $(seq "$ROUNDS"); do
	round secure
	round insecure
done
