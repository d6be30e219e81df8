#!/usr/bin/env bash
# Ward's scaling curve on a fresh redis-server (no persistence): the closed
# loop of `ward bench` (C submitters each waiting for its echo job, 64-byte
# payloads) through three setups, each the one before plus a part, each on
# a fresh redis-server and ward dev (FRESH=0: all on one, each setup
# adding its part to the one before, whose jobs its state then holds):
#
#   1. `ward dev --redis` alone: one scheduler, one host (in one process);
#      C in $CS (default 1 8 64 256);
#   2. plus a second host, `ward host --id h2` (its credential and dispatch
#      key from `ward auth host add h2`); C in $CS_MULTI (default 64 256);
#   3. plus a second scheduler replica, `ward scheduler`, asking ward dev's
#      safety kernel over gRPC; C in $CS_MULTI.
#
# N jobs a run: 2000 at C=1, 10000 otherwise; N overrides them all. Each
# setup starts with an unrecorded warm-up of $WARMUP jobs (default 500; 0:
# none). SETUPS picks the setups (default "1 2 3"). Prints a row per run:
# jobs/s, p50/p99 submit→done latency, and CPU µs per job of the Ward
# processes (/proc/<pid>/stat, utime+stime, around the run; their sum and
# each), of redis-server, and of the bench client (its own getrusage);
# after each setup, the jobs in the store by the host that ran them.
# WARD_DEV_FLAGS, WARD_HOST_FLAGS and WARD_SCHEDULER_FLAGS add flags to
# the parts; KEEP=1 keeps their logs (the temporary directory).
#
# STORE picks the job store every scheduler opens: redis (the default: the
# Redis store, every replica reading and writing all of it) or owned (the
# logged store of $SHARDS shards with owners, default 4,
# log=ward&shards=N: each replica owns its share and forwards the rest to
# their owners). TENANTS spreads the jobs over that many tenants
# (`ward bench --tenants`; default 1, 8 with STORE=owned, whose shards
# place tenants apart).
#
# Every scheduler reads one scheduler.yaml: the embedded defaults, but
# placement.cpu_threshold 100 (what ward dev sets on its own: one machine's
# CPU load is its clients' too) and the bench tenant's max_concurrent_jobs
# $BENCH_MAX_CONCURRENT (default 0, unlimited; the default of 100 would make
# C=256 measure the tenant cap). `make bench-scale` runs it after
# `make build modules`.
set -euo pipefail
CS=${CS:-1 8 64 256}
CS_MULTI=${CS_MULTI:-64 256}
SETUPS=${SETUPS:-1 2 3}
WARMUP=${WARMUP:-500}
BENCH_MAX_CONCURRENT=${BENCH_MAX_CONCURRENT:-0}
STORE=${STORE:-redis}
SHARDS=${SHARDS:-4}
case $STORE in
redis) TENANTS=${TENANTS:-1} ;;
owned) TENANTS=${TENANTS:-8} ;;
*) echo "bench-scale: STORE=$STORE is not redis or owned" >&2; exit 2 ;;
esac
NAME=bench-scale
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # WARD, MODULES, REDIS_SERVER, REDIS_CLI; die, stop, cpu...

need_build

state=$(mktemp -d)
dev='' host2='' sched2='' redis='' procs='sched2 host2 dev redis' # stopped on exit, in this order
trap 'cleanup keep' EXIT

machine

cat >"$state/scheduler.yaml" <<EOF
# bench/scale.sh: the defaults, as ward dev runs them, for every replica.
placement:
  cpu_threshold: 100
tenants:
  default:
    rate: 0
    max_concurrent_jobs: $BENCH_MAX_CONCURRENT
  overrides:
    bench:
      rate: 0
      max_concurrent_jobs: $BENCH_MAX_CONCURRENT
EOF
export SCHEDULER_CONFIG_PATH="$state/scheduler.yaml"

# up: a fresh redis-server and ward dev (the processes of a setup before
# stopped, their logs kept as <name>.log.<n>), on the same state directory:
# the same keys and credentials.
ups=0
up() {
	local v f
	for v in $procs; do stop "${!v:-}"; eval "$v=''"; done
	if [ "$ups" -gt 0 ]; then
		for f in dev host2 sched2 redis; do [ -f "$state/$f.log" ] && mv "$state/$f.log" "$state/$f.log.$ups"; done
		rm -rf "$state/redis"
	fi
	ups=$((ups + 1))
	start_redis || die "redis-server did not start" "$state/redis.log"
	nport=$(free_port)
	sport=$(free_port)
	while [ "$sport" = "$nport" ]; do sport=$(free_port); done
	nats="nats://127.0.0.1:$nport"
	store_url=$redis_url
	[ "$STORE" = owned ] && store_url="$redis_url?log=ward&shards=$SHARDS"
	dev_store=$STORE start_dev --safety-listen "127.0.0.1:$sport" || die "ward dev did not start" "$state/dev.log"
	admin="$state/ward/creds/admin.creds"
	echo "== ward dev up (pid $dev, NATS :$nport, safety kernel 127.0.0.1:$sport, job store $store_url, $TENANTS tenant(s))"
}

# The processes whose CPU counts as Ward's: ward dev, then h2, then the
# second scheduler.
ward_pids() { echo $dev $host2 $sched2; }
ward_cpu() { local p; for p in $(ward_pids); do cpu "$p"; done | tr '\n' ' '; } # ticks of each

# alive: every process still runs, else its log and exit.
alive() {
	running "$redis" || die "redis-server exited" "$state/redis.log"
	running "$dev" || die "ward dev exited" "$state/dev.log"
	[ -z "$host2" ] || running "$host2" || die "ward host h2 exited" "$state/host2.log"
	[ -z "$sched2" ] || running "$sched2" || die "ward scheduler scale-2 exited" "$state/sched2.log"
}

rows=()
failed=0
# bench SETUP C: one recorded run.
bench() {
	local setup=$1 c=$2 n rc w0 w1 r0 r1 json rate p50 p99 cli ok split
	if [ -n "${N:-}" ]; then n=$N; elif [ "$c" -eq 1 ]; then n=2000; else n=10000; fi
	w0=$(ward_cpu) r0=$(cpu "$redis")
	set +e
	"$WARD" bench --nats "$nats" --creds "$admin" -n "$n" -c "$c" --tenants "$TENANTS" -o json >"$state/bench.out" 2>"$state/bench.err"
	rc=$?
	set -e
	w1=$(ward_cpu) r1=$(cpu "$redis")
	alive
	json=$(grep '^{' "$state/bench.out" || true)
	rate=$(jget jobs_per_second <<<"$json") p50=$(jget p50_ms <<<"$json") p99=$(jget p99_ms <<<"$json")
	cli=$(jget client_cpu_us_per_job <<<"$json") ok=$(jget succeeded <<<"$json")
	if [ "$rc" -ne 0 ]; then
		failed=$((failed + 1))
		echo "bench-scale: ward bench -n $n -c $c failed (exit $rc; ${ok:-?} of $n succeeded):" >&2
		tail -3 "$state/bench.err" >&2
		rows+=("| $setup | $c | FAILED (${ok:-?}/$n succeeded) | | | $n | | | | |")
		return 0
	fi
	# µs per job of each Ward process, their sum, and redis-server's
	split=$(awk -v a="$w0" -v b="$w1" -v t="$TICK" -v n="$n" 'BEGIN{
		k = split(a, x, " "); split(b, y, " "); split("ward-dev h2 scheduler-2", name, " ")
		for (i = 1; i <= k; i++) { u = (y[i] - x[i]) * 1000000 / t / n; sum += u; out = out (i > 1 ? ", " : "") name[i] " " int(u + 0.5) }
		printf "%d|%s", sum + 0.5, out }')
	rows+=("$(awk -v s="$setup" -v c="$c" -v n="$n" -v r="$rate" -v a="$p50" -v b="$p99" -v cli="$cli" \
		-v w="${split%%|*}" -v ws="${split#*|}" -v re=$(((r1 - r0) * 1000000 / TICK / n)) \
		'BEGIN{printf "| %s | %d | %.0f | %.2f ms | %.2f ms | %d | %d | %d | %.0f | %s |", s, c, r, a, b, n, w, re, cli, ws}')")
	echo "${rows[-1]}"
}
warmup() {
	[ "$WARMUP" -gt 0 ] || return 0
	"$WARD" bench --nats "$nats" --creds "$admin" -n "$WARMUP" -c 32 --tenants "$TENANTS" -o json >/dev/null 2>"$state/bench.err" ||
		{ echo "bench-scale: warm-up failed:" >&2; tail -3 "$state/bench.err" >&2; }
}
# by_host: the jobs in the store by the host that ran them, so far.
by_host() {
	[ "$STORE" = redis ] || { echo "(in the logs' owners' memory)"; return; }
	"$REDIS_CLI" -p "$rport" --scan --pattern 'job:*' | grep -E '^job:[0-9a-f-]{36}$' | sed 's/.*/HGET & worker_id/' |
		"$REDIS_CLI" -p "$rport" | sort | uniq -c | sort -rn |
		awk '{printf "%s%s %d", (NR>1?", ":""), ($2==""?"(none)":$2), $1} END{print ""}' || true
}
hosts() { "$WARD" workers --nats "$nats" --creds "$admin" --json 2>/dev/null | grep -c '"worker_id"' || true; }
has() { case " $SETUPS " in *" $1 "*) return 0;; esac; return 1; }

# runs SETUP "C...": the warm-up, a recorded run at each C, the jobs by host.
runs() {
	local c
	echo "== $1: C in $2"
	warmup
	for c in $2; do bench "$1" "$c"; done
	echo "   jobs in the store by host: $(by_host)"
}

# --- 1: ward dev ------------------------------------------------------------
# Each setup on a fresh system (FRESH=0: each the one before plus a part,
# on one ward dev, whose state then holds the earlier setups' jobs).
FRESH=${FRESH:-1}
started=''
fresh() { # fresh: up, unless a setup ran on this system and FRESH=0
	if [ -z "$started" ] || [ "$FRESH" != 0 ]; then up; started=1; return 0; fi
	return 1
}
if has 1; then
	fresh || true
	runs "1 scheduler, 1 host" "$CS"
fi

# --- 2: a second host ---------------------------------------------------------
add_host2() {
	[ -f "$state/host-h2.creds" ] ||
		"$WARD" auth host add h2 --dir "$state/ward/auth" -o "$state" --nats "$nats" --creds "$admin" >"$state/auth.log" 2>&1 ||
		die "ward auth host add h2 failed" "$state/auth.log"
	[ -f "$state/host-h2.creds" ] && [ -f "$state/host-h2.key" ] || die "ward auth host add wrote no host-h2.creds/.key" "$state/auth.log"
	"$WARD" host --nats "$nats" --creds "$state/host-h2.creds" --dispatch-key "$state/host-h2.key" --id h2 \
		--trusted-key "$state/ward/auth/module.pub" --modules "$MODULES" --redis "$redis_url" --metrics "" \
		--cache-dir "$state/h2-cache" --gpu off --log-level info ${WARD_HOST_FLAGS:-} >"$state/host2.log" 2>&1 &
	host2=$!
	for _ in $(seq 300); do
		[ "$(hosts)" -ge 2 ] && break
		running "$host2" || break
		sleep 0.2
	done
	[ "$(hosts)" -ge 2 ] || die "the second host did not join ($(hosts) host(s) answer)" "$state/host2.log"
	echo "== host h2 up (pid $host2): $(hosts) hosts answer ward workers"
}
if has 2; then
	fresh || true
	[ -n "$host2" ] || add_host2
	runs "1 scheduler, 2 hosts" "$CS_MULTI"
fi

# --- 3: a second scheduler ----------------------------------------------------
if has 3; then
	fresh || true
	[ -n "$host2" ] || add_host2
	"$WARD" scheduler --nats "$nats" --creds "$state/ward/creds/scheduler.creds" --redis "$store_url" \
		--safety "127.0.0.1:$sport" --dispatch-secret "$state/ward/auth/dispatch.secret" --metrics "" \
		--id scale-2 --log-level info ${WARD_SCHEDULER_FLAGS:-} >"$state/sched2.log" 2>&1 &
	sched2=$!
	wait_for "$sched2" "$state/sched2.log" "scheduler started" 300 || die "the second scheduler did not start" "$state/sched2.log"
	echo "== scheduler scale-2 up (pid $sched2)"
	# Owned shards: ward dev gives the second replica half of them, one a
	# balance round (a third of the 5 s lease), before anything is measured.
	[ "$STORE" = redis ] || sleep 8
	runs "2 schedulers, 2 hosts" "$CS_MULTI"
fi

# --- table --------------------------------------------------------------------
echo
echo "closed loop, echo jobs, 64-byte payload, one redis-server; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| setup | C | jobs/s | p50 | p99 | N | CPU µs/job: ward | redis-server | bench client | ward, by process |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
printf '%s\n' "${rows[@]}"
# Warnings and errors the parts logged (a refused report, a lost kernel...).
for f in dev host2 sched2; do
	[ -s "$state/$f.log" ] || continue
	w=$(grep -cE 'level=(WARN|ERROR)' "$state/$f.log" || true)
	[ "$w" -eq 0 ] || { echo "$f.log: $w warnings/errors, the last:"; grep -E 'level=(WARN|ERROR)' "$state/$f.log" | tail -3 | cut -c1-300; }
done
if [ "$failed" -gt 0 ]; then
	echo "bench-scale: $failed run(s) failed" >&2
	for f in "$state/dev.log" "$state/host2.log" "$state/sched2.log"; do
		[ -s "$f" ] && { echo "--- $f" >&2; tail -10 "$f" >&2; }
	done
	exit 1
fi
