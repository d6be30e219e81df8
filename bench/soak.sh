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
# internal/config/timeouts.yaml in TIMEOUT_CONFIG_PATH), prints the figures again
# and whether each is no higher than after the first batch, within 10 %:
# every job of the run has then outlived its retention.
#
# STORE=memory runs ward dev on its in-memory job store instead (no
# Redis), with the default retention (24h: RETENTION sets another) and
# its bound on ended jobs, --max-ended-jobs and --max-ended-bytes
# (MAX_ENDED_JOBS, MAX_ENDED_BYTES; ward dev's defaults when unset). After
# each batch it prints ward dev's RSS, its Go heap in use, and the ended
# jobs the store keeps, their estimated size and the jobs it evicted
# (ward dev's /metrics); after the last, 10 s idle, the figures again,
# and whether the RSS is no higher than after the first batch run wholly
# past the bound (the store held its bound when it began), within 10 %:
# flat past the bound.
#
# PAUSE (seconds, default 0) sleeps between batches; WARD_DEV_FLAGS adds
# flags to ward dev; KEEP=1 keeps its log. The exit status is 0
# unless a run fails; a figure that grew is printed, not an error. `make
# bench-soak` runs it after `make build modules` (`make bench-soak
# STORE=memory`, or STORE=memory ./bench/soak.sh).
set -euo pipefail
TOTAL=${TOTAL:-100000} BATCH=${BATCH:-10000} C=${C:-64}
STORE=${STORE:-redis} SCAN=${SCAN:-2s} PAUSE=${PAUSE:-0}
case $STORE in
redis) RETENTION=${RETENTION:-30s} ;;
memory) RETENTION=${RETENTION:-24h} ;;
*) echo "bench-soak: STORE=$STORE: want redis or memory" >&2; exit 1 ;;
esac
NAME=bench-soak
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # WARD, MODULES, REDIS_SERVER, REDIS_CLI; die, stop, cpu...

[ "$STORE" = redis ] || dev_store=memory # no Redis to need
need_build
[ -f "$here/../internal/config/timeouts.yaml" ] || die "$here/../internal/config/timeouts.yaml not found"
[ "$BATCH" -gt 0 ] && [ "$TOTAL" -ge "$BATCH" ] || die "want TOTAL >= BATCH > 0"

state=$(mktemp -d)
dev='' redis='' procs='dev redis' # stopped on exit, in this order
trap 'cleanup keep' EXIT

# secs 30s | 1m30s | 500ms | 1h → seconds (a Go duration, h/m/s/ms parts)
secs() {
	awk -v d="$1" 'BEGIN{ t=0; if (d == "0") d = "0s"; while (match(d, /^[0-9.]+(ms|h|m|s)/)) { u=substr(d,RSTART,RLENGTH); d=substr(d,RLENGTH+1)
		n=u; sub(/[a-z]+$/,"",n); if (u ~ /ms$/) t+=n/1000; else if (u ~ /h$/) t+=n*3600; else if (u ~ /m$/) t+=n*60; else t+=n }
		if (d != "") { print "bad"; exit } printf "%.3f\n", t }'
}
ret_s=$(secs "$RETENTION") scan_s=$(secs "$SCAN")
[ "$ret_s" != bad ] && [ "$scan_s" != bad ] || die "RETENTION and SCAN want Go durations (30s, 2m, 500ms)"

row() { printf "| %s | %s | %s | %s | %s | %s | %s |\n" "$@"; }

# bench N: N jobs through ward bench, $C in flight; dies if it fails (after
# $done_jobs jobs); its jobs/s in rate.
bench() {
	local rc ok
	set +e
	"$WARD" bench --nats "$nats" --creds "$state/ward/creds/admin.creds" -n "$1" -c "$C" -o json \
		>"$state/bench.out" 2>"$state/bench.err"
	rc=$?
	set -e
	if [ "$rc" -ne 0 ]; then
		ok=$(grep '^{' "$state/bench.out" | jget succeeded || true)
		die "ward bench -n $1 -c $C failed after $done_jobs jobs (exit $rc; ${ok:-?} of $1 succeeded)" "$state/bench.err" "$state/dev.log"
	fi
	running "$dev" || die "ward dev exited" "$state/dev.log"
	rate=$(grep '^{' "$state/bench.out" | jget jobs_per_second)
}

# soak_memory: the run on ward dev's in-memory store (STORE=memory).
soak_memory() {
	local mport
	nport=$(free_port) mport=$(free_port)
	nats="nats://127.0.0.1:$nport"
	local flags=(--retention "$RETENTION" --safety-listen 127.0.0.1:0 --metrics "127.0.0.1:$mport")
	[ -z "${MAX_ENDED_JOBS:-}" ] || flags+=(--max-ended-jobs "$MAX_ENDED_JOBS")
	[ -z "${MAX_ENDED_BYTES:-}" ] || flags+=(--max-ended-bytes "$MAX_ENDED_BYTES")
	start_dev "${flags[@]}" || die "ward dev did not start" "$state/dev.log"
	local bound
	bound=$(sed -n 's/^  job store: *//p' "$state/dev.log")
	echo "== ward dev up (pid $dev, NATS :$nport, metrics :$mport, job store $bound, --retention $RETENTION)"
	# msample: "RSS_MiB HEAP_MiB ENDED ENDED_MiB EVICTED" now.
	msample() {
		local rss metrics
		rss=$(awk '/^VmRSS:/{print $2}' "/proc/$dev/status")
		metrics=$(exec 3<>"/dev/tcp/127.0.0.1/$mport" && printf 'GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n' >&3 && cat <&3)
		awk -v rss="$rss" '
			$1=="go_memstats_heap_inuse_bytes"{h=$2} $1=="ward_jobstore_ended_jobs"{n=$2}
			$1=="ward_jobstore_ended_bytes"{b=$2} $1=="ward_jobstore_jobs_evicted_total"{e=$2}
			END{printf "%.1f %.1f %d %.1f %d\n", rss/1024, h/1048576, n, b/1048576, e}' <<<"$metrics"
	}
	echo
	echo "$TOTAL jobs in batches of $BATCH, $C in flight; job store $bound; --retention $RETENTION"
	row "jobs" "batch jobs/s" "ward dev RSS MiB" "Go heap in use MiB" "ended jobs kept" "their estimate MiB" "evicted"
	echo "|---:|---:|---:|---:|---:|---:|---:|"
	done_jobs=0
	local first='' prev_evicted=0 n rss heap kept kbytes evicted
	while [ "$done_jobs" -lt "$TOTAL" ]; do
		n=$((TOTAL - done_jobs < BATCH ? TOTAL - done_jobs : BATCH))
		bench "$n"
		done_jobs=$((done_jobs + n))
		read -r rss heap kept kbytes evicted < <(msample)
		row "$done_jobs" "$(printf %.0f "$rate")" "$rss" "$heap" "$kept" "$kbytes" "$evicted"
		# The base: after the first batch run wholly past the bound (the
		# store held its bound of ended jobs when it began).
		[ -n "$first" ] || [ "$prev_evicted" -eq 0 ] || first="$done_jobs $rss"
		prev_evicted=$evicted
		[ "$done_jobs" -ge "$TOTAL" ] || [ "$PAUSE" = 0 ] || sleep "$PAUSE"
	done
	sleep 10
	running "$dev" || die "ward dev exited" "$state/dev.log"
	read -r rss heap kept kbytes evicted < <(msample)
	row "$done_jobs" "-" "$rss" "$heap" "$kept" "$kbytes" "$evicted"
	echo
	if [ -z "$first" ]; then
		echo "no batch ran past the bound: no job was evicted before the last batch (more jobs, TOTAL, or a lower MAX_ENDED_JOBS; a ward dev built before the bound evicts none)"
		return
	fi
	local b_jobs b_rss
	read -r b_jobs b_rss <<<"$first"
	if awk -v b="$b_rss" -v f="$rss" 'BEGIN{exit !(f <= b*1.10)}'; then
		echo "flat: ward dev RSS $b_rss MiB after $b_jobs jobs (the first batch run past the bound), $rss MiB after $done_jobs and 10 s idle"
	else
		echo "NOT flat: ward dev RSS $b_rss MiB after $b_jobs jobs (the first batch run past the bound), $rss MiB after $done_jobs: more than 10 % above"
	fi
}

machine

[ "$STORE" = memory ] && { soak_memory; exit; }

start_redis || die "redis-server did not start" "$state/redis.log"

# The shipped timeouts.yaml, but the reconciler (and its sweep) every $SCAN.
sed "s/^\([[:space:]]*scan_interval:\).*/\1 $SCAN/" "$here/../internal/config/timeouts.yaml" >"$state/timeouts.yaml"
grep -q "scan_interval: $SCAN\$" "$state/timeouts.yaml" || die "no scan_interval in internal/config/timeouts.yaml"

nport=$(free_port)
nats="nats://127.0.0.1:$nport"
TIMEOUT_CONFIG_PATH="$state/timeouts.yaml" start_dev --retention "$RETENTION" --safety-listen 127.0.0.1:0 ||
	die "ward dev did not start" "$state/dev.log"
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
echo
echo "$TOTAL jobs in batches of $BATCH, $C in flight; --retention $RETENTION"
row "jobs" "batch jobs/s" "ward dev RSS MiB" "redis used_memory MiB" "redis RSS MiB" "redis keys" "note"
echo "|---:|---:|---:|---:|---:|---:|---|"
done_jobs=0 first=''
start=$(date +%s)
while [ "$done_jobs" -lt "$TOTAL" ]; do
	n=$((TOTAL - done_jobs < BATCH ? TOTAL - done_jobs : BATCH))
	bench "$n"
	done_jobs=$((done_jobs + n))
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
