#!/usr/bin/env bash
# Memory flatness: TOTAL jobs (default 100000) through `ward dev --redis
# --retention $RETENTION` (default 30s) on one fresh redis-server (no
# persistence), in batches of BATCH (default 10000) of `ward bench -c $C`
# (default 64). After each batch it prints the jobs so far, the batch's
# jobs/s, ward dev's RSS (/proc/<pid>/status VmRSS), Redis's used_memory
# and used_memory_rss (INFO memory) and its key count (DBSIZE). After the
# last one it waits the retention and two reconciler scans (the reconciler
# sweeps ended jobs out of the indexes every scan_interval; this script
# runs it with scan_interval $SCAN, default 2s, through a copy of
# config/timeouts.yaml in TIMEOUT_CONFIG_PATH), prints the figures again
# and whether each is no higher than after the first batch, within 10 %:
# every job of the run has then outlived its retention.
#
# PAUSE (seconds, default 0) sleeps between batches; WARD_DEV_FLAGS adds
# flags to ward dev; KEEP=1 keeps its log. The exit status is 0
# unless a run fails; a figure that grew is printed, not an error. `make
# bench-soak` runs it after `make build modules`.
set -euo pipefail
TOTAL=${TOTAL:-100000} BATCH=${BATCH:-10000} C=${C:-64}
RETENTION=${RETENTION:-30s} SCAN=${SCAN:-2s} PAUSE=${PAUSE:-0}
WARD=${WARD:-bin/ward}
MODULES=${MODULES:-modules/build}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_CLI=${REDIS_CLI:-redis-cli}
here=$(cd "$(dirname "$0")" && pwd)

for tool in "$REDIS_SERVER" "$REDIS_CLI"; do
	command -v "$tool" >/dev/null || { echo "bench-soak: $tool not found (apt-get install redis-server)" >&2; exit 1; }
done
[ -x "$WARD" ] || { echo "bench-soak: $WARD not built (make build)" >&2; exit 1; }
compgen -G "$MODULES/*.wasm" >/dev/null || { echo "bench-soak: no modules in $MODULES (make modules)" >&2; exit 1; }
[ -f "$here/../config/timeouts.yaml" ] || { echo "bench-soak: $here/../config/timeouts.yaml not found" >&2; exit 1; }
[ "$BATCH" -gt 0 ] && [ "$TOTAL" -ge "$BATCH" ] || { echo "bench-soak: want TOTAL >= BATCH > 0" >&2; exit 1; }

state=$(mktemp -d)
dev='' redis=''
stop() { # stop PID: SIGTERM, then wait for it
	[ -n "$1" ] && kill -TERM "$1" 2>/dev/null && wait "$1" 2>/dev/null
	return 0
}
cleanup() {
	stop "$dev"; stop "$redis"
	if [ -n "${KEEP:-}" ]; then echo "== logs kept in $state" >&2; else rm -rf "$state"; fi
}
trap cleanup EXIT

free_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 30000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
	echo "bench-soak: no free port" >&2; return 1
}
running() { local s; s=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [ "$s" != Z ]; } # not exited
jget() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; } # one numeric field of a JSON line
die() { # die MESSAGE LOG...: the message, the logs' tails, exit 1
	echo "bench-soak: $1" >&2; shift
	for f in "$@"; do echo "--- $f" >&2; tail -20 "$f" >&2; done
	exit 1
}
# secs 30s | 1m30s | 500ms | 1h → seconds (a Go duration, h/m/s/ms parts)
secs() {
	awk -v d="$1" 'BEGIN{ t=0; if (d == "0") d = "0s"; while (match(d, /^[0-9.]+(ms|h|m|s)/)) { u=substr(d,RSTART,RLENGTH); d=substr(d,RLENGTH+1)
		n=u; sub(/[a-z]+$/,"",n); if (u ~ /ms$/) t+=n/1000; else if (u ~ /h$/) t+=n*3600; else if (u ~ /m$/) t+=n*60; else t+=n }
		if (d != "") { print "bad"; exit } printf "%.3f\n", t }'
}
ret_s=$(secs "$RETENTION") scan_s=$(secs "$SCAN")
[ "$ret_s" != bad ] && [ "$scan_s" != bad ] || { echo "bench-soak: RETENTION and SCAN want Go durations (30s, 2m, 500ms)" >&2; exit 1; }

echo "== machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(awk '/^MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo); load $(cut -d' ' -f1-3 /proc/loadavg)"

rport=$(free_port)
"$REDIS_SERVER" --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
	--logfile "$state/redis.log" &
redis=$!
for _ in $(seq 100); do [ "$("$REDIS_CLI" -p "$rport" ping 2>/dev/null)" = PONG ] && break; sleep 0.05; done
[ "$("$REDIS_CLI" -p "$rport" ping 2>/dev/null)" = PONG ] || die "redis-server did not start" "$state/redis.log"
redis_url="redis://127.0.0.1:$rport"
echo "== redis-server $("$REDIS_SERVER" --version | grep -oE 'v=[^ ]+' | cut -d= -f2) on 127.0.0.1:$rport (no persistence), pid $redis"

# The shipped timeouts.yaml, but the reconciler (and its sweep) every $SCAN.
sed "s/^\([[:space:]]*scan_interval:\).*/\1 $SCAN/" "$here/../config/timeouts.yaml" >"$state/timeouts.yaml"
grep -q "scan_interval: $SCAN\$" "$state/timeouts.yaml" || die "no scan_interval in config/timeouts.yaml"

nport=$(free_port)
nats="nats://127.0.0.1:$nport"
TIMEOUT_CONFIG_PATH="$state/timeouts.yaml" WARD_STATE_DIR="$state/ward" "$WARD" dev --redis "$redis_url" \
	--modules "$MODULES" --retention "$RETENTION" --nats-port "$nport" --metrics "" --safety-listen 127.0.0.1:0 \
	--log-level warn ${WARD_DEV_FLAGS:-} >"$state/dev.log" 2>&1 &
dev=$!
for _ in $(seq 600); do
	grep -q "^try:" "$state/dev.log" && break
	running "$dev" || break
	sleep 0.1
done
grep -q "^try:" "$state/dev.log" || die "ward dev did not start" "$state/dev.log"
echo "== ward dev up (pid $dev, NATS :$nport, job store $redis_url, --retention $RETENTION, scan_interval $SCAN)"

# sample: "RSS_MiB USED_MiB REDIS_RSS_MiB KEYS" now.
sample() {
	local rss info keys
	rss=$(awk '/^VmRSS:/{print $2}' "/proc/$dev/status")
	info=$("$REDIS_CLI" -p "$rport" info memory | tr -d '\r')
	keys=$("$REDIS_CLI" -p "$rport" dbsize | tr -d '\r')
	awk -v rss="$rss" -v keys="$keys" -F: '
		$1=="used_memory"{u=$2} $1=="used_memory_rss"{r=$2}
		END{printf "%.1f %.1f %.1f %d\n", rss/1024, u/1048576, r/1048576, keys}' <<<"$info"
}
# prefixes: the keys by their first ':'-separated part, most first.
prefixes() {
	"$REDIS_CLI" -p "$rport" --scan | sed 's/:.*//' | sort | uniq -c | sort -rn | head -8 |
		awk '{printf "%s%s %s", (NR>1?", ":""), $2, $1} END{print ""}' || true
}
row() { printf "| %s | %s | %s | %s | %s | %s | %s |\n" "$@"; }

echo
echo "$TOTAL jobs in batches of $BATCH, $C in flight; --retention $RETENTION"
row "jobs" "batch jobs/s" "ward dev RSS MiB" "redis used_memory MiB" "redis RSS MiB" "redis keys" "note"
echo "|---:|---:|---:|---:|---:|---:|---|"
done_jobs=0 first=''
start=$(date +%s)
while [ "$done_jobs" -lt "$TOTAL" ]; do
	n=$((TOTAL - done_jobs < BATCH ? TOTAL - done_jobs : BATCH))
	set +e
	"$WARD" bench --nats "$nats" --creds "$state/ward/creds/admin.creds" -n "$n" -c "$C" -o json \
		>"$state/bench.out" 2>"$state/bench.err"
	rc=$?
	set -e
	if [ "$rc" -ne 0 ]; then
		ok=$(grep '^{' "$state/bench.out" | jget succeeded || true)
		die "ward bench -n $n -c $C failed after $done_jobs jobs (exit $rc; ${ok:-?} of $n succeeded)" "$state/bench.err" "$state/dev.log"
	fi
	running "$dev" || die "ward dev exited" "$state/dev.log"
	done_jobs=$((done_jobs + n))
	rate=$(grep '^{' "$state/bench.out" | jget jobs_per_second)
	read -r rss used rrss keys < <(sample)
	row "$done_jobs" "$(printf %.0f "$rate")" "$rss" "$used" "$rrss" "$keys" "$((($(date +%s) - start)))s in"
	[ -n "$first" ] || { first="$rss $used $rrss $keys"; base_prefixes=$(prefixes); }
	[ "$done_jobs" -ge "$TOTAL" ] || [ "$PAUSE" = 0 ] || sleep "$PAUSE"
done

idle=$(awk -v r="$ret_s" -v s="$scan_s" 'BEGIN{printf "%d", r + 2*s + 3.999}')
echo "   (idle ${idle}s: the retention, two scans and 3 s)"
sleep "$idle"
running "$dev" || die "ward dev exited" "$state/dev.log"
read -r rss used rrss keys < <(sample)
row "$done_jobs" "-" "$rss" "$used" "$rrss" "$keys" "final, ${idle}s idle"
echo
echo "redis keys by prefix after $BATCH: $base_prefixes"
echo "redis keys by prefix at the end: $(prefixes)"
echo
read -r b_rss b_used b_rrss b_keys <<<"$first"
flat=0
for m in "ward dev RSS MiB:$b_rss:$rss" "redis used_memory MiB:$b_used:$used" "redis RSS MiB:$b_rrss:$rrss" "redis keys:$b_keys:$keys"; do
	IFS=: read -r name b f <<<"$m"
	if awk -v b="$b" -v f="$f" 'BEGIN{exit !(f <= b*1.10)}'; then
		verdict="flat"
	else
		verdict="GREW"; flat=1
	fi
	printf "%-22s after %d: %-8s final: %-8s %s\n" "$name" "$BATCH" "$b" "$f" "$verdict"
done
if [ "$flat" -eq 0 ]; then
	echo "flat: after $done_jobs jobs and the retention, no figure is above its value after $BATCH (+10 %)"
else
	echo "NOT flat: a figure is more than 10 % above its value after $BATCH"
fi
