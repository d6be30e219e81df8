#!/usr/bin/env bash
# Ward beside asynq on one fresh redis-server: the same closed loop (N jobs,
# C submitters each waiting for its job, 64-byte payloads) through
# `ward dev --redis` + `ward bench`, then through asynq with a no-op handler
# (bench/asynq). Ward runs a second time on ward dev's memory store (no
# Redis), to show what its own parts cost with the store aside. Prints
# jobs/s, p50/p99 submit→done latency and the CPU per job of every process
# involved, and the ratios. `make bench-peers` runs it
# from the repository root after `make build modules`; N and C override the
# defaults, ASYNQ_FLAGS adds flags to the asynq program.
#
# Both run WARMUP jobs (500) first, unmeasured, then N measured ones. CPU
# is counted over the measured run alone: `ward bench --cpu-of` reads ward
# dev's and redis-server's from /proc/<pid>/stat (utime+stime) and its own
# with getrusage; the asynq program reports its own CPU (getrusage) and
# redis-server's (/proc) the same way.
set -euo pipefail
N=${N:-10000} C=${C:-64} WARMUP=${WARMUP:-500}
# Both systems write to a redis-server with its append-only file on, as a
# deployment that keeps acknowledged jobs across a Redis restart would
# (REDIS_AOF= turns it off, always fsyncs every write).
export REDIS_AOF=${REDIS_AOF-everysec}
NAME=bench-peers
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # WARD, MODULES, REDIS_SERVER, REDIS_CLI; die, stop, cpu...

need "apt-get install redis-server" "$REDIS_SERVER" "$REDIS_CLI"
[ -x "$WARD" ] || die "$WARD not built (make build modules)"

state=$(mktemp -d)
dev='' redis='' procs='dev redis' # stopped on exit, in this order
trap cleanup EXIT

# dur_ms 10.38ms | 950µs | 1.2s → milliseconds
dur_ms() { awk -v d="$1" 'BEGIN{ if (d ~ /µs$/) { sub(/µs$/,"",d); print d/1000 } else if (d ~ /ms$/) { sub(/ms$/,"",d); print d+0 } else if (d ~ /s$/) { sub(/s$/,"",d); print d*1000 } else print "?" }'; }
# redis_top LABEL: the commands redis-server spent most time on since the
# last CONFIG RESETSTAT, per job (commands a Lua script calls count too).
redis_top() {
	"$REDIS_CLI" -p "$rport" info commandstats | tr -d '\r' | awk -F'[:,=]' -v n="$N" -v l="$1" '
		/^cmdstat_/ { sub(/^cmdstat_/, "", $1); printf "%.1f %s %.2f\n", $5/n, $1, $3/n }' |
		sort -rn | head -"${REDIS_TOP:-6}" | awk -v l="$1" 'BEGIN{printf "   %s redis commands, per job:", l} {printf "  %s %s× %sµs;", $2, $3, $1} END{print ""}'
}

echo "== building bench/asynq"
(cd "$here" && go build -o "$state/asynq-bench" ./asynq)

machine

start_redis || { echo "bench-peers: redis-server did not start" >&2; cat "$state/redis.log" >&2; exit 1; }

# --- Ward ---------------------------------------------------------------
# ward_run STORE V: ward dev on STORE (redis, or memory: no Redis at all),
# ward bench through it; sets V_rate, V_p50, V_p99 (ms) and V_dev_us,
# V_red_us, V_cli_us, V_tot_us (CPU µs a job).
ward_run() {
	local store=$1 v=$2 rc p50 p99 pid what="job store redis://127.0.0.1:$rport"
	[ "$store" = memory ] && what="memory store"
	[ "$store" = logged ] && what="logged store: state in memory, a log in redis://127.0.0.1:$rport"
	"$REDIS_CLI" -p "$rport" flushall >/dev/null
	nport=$(free_port)
	dev_store=$store start_dev --safety-listen 127.0.0.1:0 ||
		{ echo "bench-peers: ward dev did not start" >&2; cat "$state/dev.log" >&2; exit 1; }
	echo "== ward dev up (pid $dev, NATS :$nport, $what); ward bench --warmup $WARMUP -n $N -c $C"
	"$REDIS_CLI" -p "$rport" config resetstat >/dev/null
	set +e
	"$WARD" bench --nats "nats://127.0.0.1:$nport" --creds "$state/ward/creds/admin.creds" -n "$N" -c "$C" \
		--warmup "$WARMUP" --cpu-of "$dev" --cpu-of "$redis" >"$state/ward.out" 2>"$state/ward.err"
	rc=$?
	set -e
	pid=$dev
	cat "$state/ward.out"
	if [ "$rc" -ne 0 ]; then
		echo "bench-peers: ward bench failed (exit $rc)" >&2; tail -5 "$state/ward.err" >&2; tail -20 "$state/dev.log" >&2; exit 1
	fi
	[ "$store" != memory ] && redis_top "ward ($store)"
	stop "$dev"; dev=''
	rm -rf "$state/ward"

	printf -v "${v}_rate" %s "$(grep -oE '^throughput: +[0-9.]+' "$state/ward.out" | grep -oE '[0-9.]+$')"
	read -r p50 p99 < <(awk '/^latency:/{for(i=1;i<=NF;i++){if($i=="p50")a=$(i+1); if($i=="p99")b=$(i+1)}; print a, b}' "$state/ward.out")
	printf -v "${v}_p50" %s "$(dur_ms "$p50")"
	printf -v "${v}_p99" %s "$(dur_ms "$p99")"
	# "CPU of <pid>:  <n> µs/job", "client CPU:  <n> µs/job"
	printf -v "${v}_dev_us" %d "$(awk -v p="$pid" '$1=="CPU" && $3==p":" {print $4}' "$state/ward.out")"
	printf -v "${v}_red_us" %d "$(awk -v p="$redis" '$1=="CPU" && $3==p":" {print $4}' "$state/ward.out")"
	printf -v "${v}_cli_us" %d "$(awk '/^client CPU:/ {print $3}' "$state/ward.out")"
	local t=$(( ${v}_dev_us + ${v}_red_us + ${v}_cli_us ))
	printf -v "${v}_tot_us" %d "$t"
}
ward_run redis w
# The same without Redis: what Ward's own parts cost, the job store aside
# (ward dev's memory store: nothing durable; redis-server idles).
ward_run memory m
# The logged store (issue 32's first part): the state in ward dev's memory,
# each change a record appended to a log in Redis, batched.
ward_run logged l

# --- asynq --------------------------------------------------------------
"$REDIS_CLI" -p "$rport" flushall >/dev/null
"$REDIS_CLI" -p "$rport" config resetstat >/dev/null
echo "== asynq on the same redis-server (flushed): -n $N -c $C"
set +e
"$state/asynq-bench" -redis "redis://127.0.0.1:$rport" -n "$N" -c "$C" -warmup "$WARMUP" -redis-pid "$redis" ${ASYNQ_FLAGS:-} \
	>"$state/asynq.out" 2>"$state/asynq.err"
arc=$?
set -e
grep -v '^{' "$state/asynq.out" || true
if [ "$arc" -ne 0 ]; then
	echo "bench-peers: asynq bench failed (exit $arc)" >&2; tail -5 "$state/asynq.err" >&2; exit 1
fi
redis_top asynq # warm-up included
json=$(grep '^{' "$state/asynq.out")
a_rate=$(jget jobs_per_s <<<"$json") a_p50=$(jget p50_ms <<<"$json") a_p99=$(jget p99_ms <<<"$json")
a_proc_us=$(jget cpu_us_per_job <<<"$json") a_red_us=$(jget redis_cpu_us_per_job <<<"$json")
a_tot_us=$(awk -v a="$a_proc_us" -v b="$a_red_us" 'BEGIN{printf "%d", a+b}')

# --- table --------------------------------------------------------------
echo
persist="no persistence"
[ -n "$REDIS_AOF" ] && persist="AOF, appendfsync $REDIS_AOF"
echo "closed loop, $N jobs, $C in flight, 64-byte payload, one redis-server ($persist)"
awk -v wr="$w_rate" -v w50="$w_p50" -v w99="$w_p99" -v wd="$w_dev_us" -v wre="$w_red_us" -v wc="$w_cli_us" -v wt="$w_tot_us" \
	-v mr="$m_rate" -v m50="$m_p50" -v m99="$m_p99" -v md="$m_dev_us" -v mc="$m_cli_us" -v mt=$((m_dev_us + m_cli_us)) \
	-v lr="$l_rate" -v l50="$l_p50" -v l99="$l_p99" -v ld="$l_dev_us" -v lre="$l_red_us" -v lc="$l_cli_us" -v lt="$l_tot_us" \
	-v ar="$a_rate" -v a50="$a_p50" -v a99="$a_p99" -v ap="$a_proc_us" -v are="$a_red_us" -v at="$a_tot_us" 'BEGIN{
	printf "| system | jobs/s | p50 | p99 | CPU µs/job: system | redis-server | bench client | total |\n"
	printf "|---|---:|---:|---:|---:|---:|---:|---:|\n"
	printf "| ward (ward dev + ward bench) | %.0f | %.2f ms | %.2f ms | %d (ward dev) | %d | %d | %d |\n", wr, w50, w99, wd, wre, wc, wt
	printf "| asynq (no-op handler) | %.0f | %.2f ms | %.2f ms | %.0f (server + client, one process) | %.0f | (in process) | %d |\n", ar, a50, a99, ap, are, at
	printf "| ward / asynq | %.2f× | %.2f× | %.2f× | | %.2f× | | %.2f× |\n", wr/ar, w50/a50, w99/a99, (are>0?wre/are:0), wt/at
	printf "| ward, logged store (state in memory, a log in Redis) | %.0f | %.2f ms | %.2f ms | %d (ward dev) | %d | %d | %d |\n", lr, l50, l99, ld, lre, lc, lt
	printf "| ward logged / asynq | %.2f× | %.2f× | %.2f× | | %.2f× | | %.2f× |\n", lr/ar, l50/a50, l99/a99, (are>0?lre/are:0), lt/at
	printf "| ward, memory store (no Redis: nothing durable) | %.0f | %.2f ms | %.2f ms | %d (ward dev) | — | %d | %d |\n", mr, m50, m99, md, mc, mt
	printf "| ward memory / asynq | %.2f× | %.2f× | %.2f× | | | | %.2f× |\n", mr/ar, m50/a50, m99/a99, mt/at
}'
