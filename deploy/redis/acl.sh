#!/bin/sh
# acl.sh OUT: writes Redis's ACL file (redis-server --aclfile OUT) for Ward:
#
#   user default off                      nothing without a user and password
#   user ward-scheduler on >$REDIS_PASSWORD <ward-scheduler.acl's rules>
#   user ward-admin on >$REDIS_ADMIN_PASSWORD ~* &* +@all   (only when set)
#
# The schedulers connect as ward-scheduler
# (REDIS_URL=redis://ward-scheduler:$REDIS_PASSWORD@redis:6379/0); no other
# part of Ward connects to Redis. ward-admin is for operators (redis-cli
# --user ward-admin), held by no part. Passwords go into an ACL file line
# and a URL as they are: letters, digits and . _ ~ - only (openssl rand -hex 24).
#
# The compose file's Redis runs it at start (deploy/compose); the test
# deploy/redisacl_test.go runs it too, then a redis-server on its output.
# WARD_ACL_RULES names the rules file (default: ward-scheduler.acl beside
# this script).
set -eu
out=${1:?usage: acl.sh OUT}
rules_file=${WARD_ACL_RULES:-$(dirname "$0")/ward-scheduler.acl}

check() { # check NAME VALUE
  case $2 in
  "" | *[!A-Za-z0-9._~-]*)
    echo "acl.sh: $1 must be set, of letters, digits and . _ ~ - only (openssl rand -hex 24)" >&2
    exit 1
    ;;
  esac
}
check REDIS_PASSWORD "${REDIS_PASSWORD:-}"
[ -z "${REDIS_ADMIN_PASSWORD:-}" ] || check REDIS_ADMIN_PASSWORD "$REDIS_ADMIN_PASSWORD"

rules=$(grep -v '^[[:space:]]*#' "$rules_file" | tr '\t\n' '  ' | tr -s ' ' | sed 's/^ //; s/ $//')
[ -n "$rules" ] || { echo "acl.sh: no rules in $rules_file" >&2; exit 1; }

umask 077
tmp="$out.tmp"
{
  echo "user default off"
  echo "user ward-scheduler on >$REDIS_PASSWORD $rules"
  if [ -n "${REDIS_ADMIN_PASSWORD:-}" ]; then
    echo "user ward-admin on >$REDIS_ADMIN_PASSWORD ~* &* +@all"
  fi
} >"$tmp"
mv "$tmp" "$out"
