# Shell helpers of bench/peers.sh, bench/scale.sh and bench/soak.sh, which
# source it (`. "$here/lib.sh"`) after setting NAME, the prefix of their
# messages (bench-peers, bench-scale, bench-soak). Each keeps its run in
# $state (a temporary directory) and the pids of the processes it starts
# in variables, named in $procs in the order cleanup stops them.
#
# The parts, from the environment or these defaults:
WARD=${WARD:-bin/ward}
MODULES=${MODULES:-modules/build}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_CLI=${REDIS_CLI:-redis-cli}
TICK=$(getconf CLK_TCK) # clock ticks a second

die() { # die MESSAGE LOG...: the message, the logs' tails, exit 1
	echo "$NAME: $1" >&2; shift
	for f in "$@"; do echo "--- $f" >&2; tail -20 "$f" >&2; done
	exit 1
}
need() { # need HINT TOOL...: each TOOL a command, else die with HINT
	local hint=$1 tool; shift
	for tool in "$@"; do
		command -v "$tool" >/dev/null || die "$tool not found ($hint)"
	done
}
# need_build: redis-server and redis-cli installed (unless dev_store is
# memory), $WARD and the modules built, else die with what to do.
need_build() {
	[ "${dev_store:-}" = memory ] || need "apt-get install redis-server" "$REDIS_SERVER" "$REDIS_CLI"
	[ -x "$WARD" ] || die "$WARD not built (make build)"
	compgen -G "$MODULES/*.wasm" >/dev/null || die "no modules in $MODULES (make modules)"
}

stop() { # stop PID: SIGTERM, then wait for it
	[ -n "$1" ] && kill -TERM "$1" 2>/dev/null && wait "$1" 2>/dev/null
	return 0
}
# cleanup [keep] (trap on EXIT): stop the processes named in $procs, then
# remove $state; with keep and KEEP=1 it stays, and says where.
cleanup() {
	local v
	for v in $procs; do stop "${!v:-}"; done
	if [ "${1:-}" = keep ] && [ -n "${KEEP:-}" ]; then echo "== logs kept in $state" >&2; else rm -rf "$state"; fi
}

cpu() { awk '{print $14+$15}' "/proc/$1/stat" 2>/dev/null || echo 0; } # clock ticks
# free_port: a port nothing listens on, below the ephemeral range (where
# the kernel picks the local ports of outgoing connections, which a
# listener's bind would collide with).
free_port() {
	local p low
	low=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
	for _ in $(seq 100); do
		p=$((10000 + RANDOM % (low - 10000)))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
	echo "$NAME: no free port" >&2; return 1
}
running() { local s; s=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [ "$s" != Z ]; } # not exited
jget() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; } # one numeric field of a JSON line
# wait_for PID LOG PATTERN TRIES: until LOG has a line that matches PATTERN,
# TRIES × 0.1 s at most, while PID runs; fails if it has none.
wait_for() {
	for _ in $(seq "$4"); do
		grep -q "$3" "$2" && break
		running "$1" || break
		sleep 0.1
	done
	grep -q "$3" "$2"
}

machine() { echo "== machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(awk '/^MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo); load $(cut -d' ' -f1-3 /proc/loadavg)"; }

# start_redis: a fresh redis-server on a free port (rport, redis_url), its
# log in $state/redis.log, its pid in redis; fails if it does not answer
# PING within 5 s, else says so. No persistence, unless REDIS_AOF names an
# appendfsync policy (everysec, always): then the append-only file is on,
# in $state/redis.
start_redis() {
	rport=$(free_port) || exit 1
	local persist=(--appendonly no) what="no persistence"
	if [ -n "${REDIS_AOF:-}" ]; then
		mkdir -p "$state/redis"
		persist=(--appendonly yes --appendfsync "$REDIS_AOF" --dir "$state/redis")
		what="AOF on, appendfsync $REDIS_AOF"
	fi
	"$REDIS_SERVER" --port "$rport" --bind 127.0.0.1 --save '' "${persist[@]}" --daemonize no \
		--logfile "$state/redis.log" &
	redis=$!
	for _ in $(seq 100); do [ "$("$REDIS_CLI" -p "$rport" ping 2>/dev/null)" = PONG ] && break; sleep 0.05; done
	[ "$("$REDIS_CLI" -p "$rport" ping 2>/dev/null)" = PONG ] || return 1
	redis_url="redis://127.0.0.1:$rport"
	echo "== redis-server $("$REDIS_SERVER" --version | grep -oE 'v=[^ ]+' | cut -d= -f2) on 127.0.0.1:$rport ($what), pid $redis"
}

# start_dev FLAG...: `ward dev` on $redis_url (on its memory store when
# dev_store is memory) with NATS on $nport, its state in $state/ward, its
# log in $state/dev.log, its pid in dev; FLAG... and then WARD_DEV_FLAGS
# added; LOG_QUERY is added to a log's URL (LOG_QUERY='&view=1'). Fails if
# it does not print "try:" within 60 s.
start_dev() {
	local store=(--redis "${redis_url:-}")
	[ "${dev_store:-}" = memory ] && store=()
	[ "${dev_store:-}" = logged ] && store=(--redis "${redis_url:-}?log=ward${LOG_QUERY:-}")
	[ "${dev_store:-}" = owned ] && store=(--redis "${redis_url:-}?log=ward&shards=${SHARDS:-4}${LOG_QUERY:-}")
	WARD_STATE_DIR="$state/ward" "$WARD" dev "${store[@]}" --modules "$MODULES" --nats-port "$nport" \
		--metrics "" --log-level warn "$@" ${WARD_DEV_FLAGS:-} >"$state/dev.log" 2>&1 &
	dev=$!
	wait_for "$dev" "$state/dev.log" "^try:" 600
}
