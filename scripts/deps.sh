#!/usr/bin/env bash
# scripts/deps.sh: the programs Ward's tests run besides Go, installed when
# missing. `make test` runs it first (make deps), and so does .ci/run: one
# install step for a new user's machine and for CI.
#
#   scripts/deps.sh           install what is missing (apt-get; sudo when
#                             not root), or say what and how, and fail
#   scripts/deps.sh --check   only say what is missing (exit 1 if any)
#
# Silent, and quick (a PATH look-up per program), when all are there.
# Without apt-get, or as a user with neither root nor sudo, it names each
# missing program, the tests that need it and the command that installs
# it, and exits 1: a run without them would fail those tests anyway.
#
# Go itself (the version in go.mod's go line or newer) is not installed
# here: Debian's golang package is older; see https://go.dev/doc/install.
set -uo pipefail

check_only=0
case "${1:-}" in
--check) check_only=1 ;;
"") ;;
*)
	echo "usage: $0 [--check]" >&2
	exit 2
	;;
esac

# program  Debian package  what needs it
deps=(
	"redis-server|redis-server|the Redis job store's tests (jobstore, scheduler, cmd/ward; internal/testing/redistest)"
	"redis-cli|redis-server|the Redis Cluster tests (internal/testing/redistest creates the cluster with it)"
	"chromium|chromium|the dashboard's browser tests (internal/gateway/browser_test.go; or set CHROMIUM to a Chromium binary)"
	"docker-compose|docker-compose|deploy/compose_test.go (docker-compose config checks deploy/compose; no Docker engine needed)"
	"promtool|prometheus|deploy/deploy_test.go (promtool checks and tests the rules and config in deploy/prometheus)"
	"make|make|make test itself (.ci/run runs it)"
)

present() {
	case "$1" in
	chromium)
		[ -n "${CHROMIUM:-}" ] && [ -x "${CHROMIUM}" ] && return 0
		command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1
		;;
	*) command -v "$1" >/dev/null 2>&1 ;;
	esac
}

# missing fills progs, pkgs (each package once) and why.
missing() {
	progs=() pkgs=() why=()
	local d prog pkg need
	for d in "${deps[@]}"; do
		IFS='|' read -r prog pkg need <<<"$d"
		present "$prog" && continue
		progs+=("$prog")
		why+=("  $prog (Debian package $pkg): $need")
		[[ " ${pkgs[*]} " == *" $pkg "* ]] || pkgs+=("$pkg")
	done
}

# report says what is missing and how to install it, on stderr.
report() {
	{
		echo "deps: the tests need programs that are not installed${1:+ ($1)}:"
		printf '%s\n' "${why[@]}"
		echo "install them with:"
		echo "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y ${pkgs[*]}"
		echo "(or as root, without sudo), then run make test again."
	} >&2
}

missing
[ ${#progs[@]} -eq 0 ] && exit 0
if [ $check_only -eq 1 ]; then
	report
	exit 1
fi

# How to become root: already, or sudo (asking for a password only when
# there is a terminal to ask on; never hanging in CI).
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		report "not root, and no sudo to install them with"
		exit 1
	fi
	if [ -t 0 ]; then
		sudo=(sudo)
	else
		sudo=(sudo -n)
	fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
	report "no apt-get here: install the same programs with this system's package manager"
	exit 1
fi

installing=("${pkgs[@]}")
echo "deps: installing ${installing[*]} (for ${progs[*]}) with apt-get" >&2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# sudo resets the environment: DEBIAN_FRONTEND goes through env.
if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >"$log" 2>&1 ||
	! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >>"$log" 2>&1; then
	tail -n 20 "$log" >&2
	report "apt-get failed, its last lines above"
	exit 1
fi
missing
if [ ${#progs[@]} -gt 0 ]; then
	report "still missing after apt-get install"
	exit 1
fi
echo "deps: installed ${installing[*]}" >&2
