#!/bin/sh
# ward-init: the keys and credentials of the compose lattice, written once
# into named volumes (docker-compose.yaml's ward-init service runs it as
# root, before anything else starts; run again, it keeps what is there).
#
#   ward-keys       the authority (operator, account, signing keys): only here
#   nats-auth       nats-server.conf (+ the servers' TLS files with WARD_NATS_TLS)
#   creds-<role>    what each part needs, and no more, owned by uid 10001
#
# Each `ward` line below is checked against `ward <command> --help` by
# deploy/compose_test.go.
set -eu
umask 077

# WARD_INIT_ROOT and WARD_NATS_AUTH_PATH move it elsewhere (the test runs it
# in a temporary directory, as any user).
ROOT=${WARD_INIT_ROOT:-/auth}
KEYS=$ROOT/keys
NATS_AUTH=${WARD_NATS_AUTH_PATH:-/etc/nats/auth}
UID_WARD=10001
own=""
[ "$(id -u)" = 0 ] && own="-o $UID_WARD -g $UID_WARD"
# Names the NATS servers and the safety kernels are reached by, put in
# their TLS certificates.
TLS_HOSTS=nats,nats-1,nats-2,nats-3,safety,safety-1,safety-2

tls=""
[ -n "${WARD_NATS_TLS:-}" ] && tls="--tls"
ward auth init --dir "$KEYS" --listen 0.0.0.0:4222 --store-dir /data/jetstream --tls-host "$TLS_HOSTS" $tls

# One credential and dispatch key per host: NAME, or NAME:gpu for a host
# that may claim GPU capabilities. Kept when there already.
for spec in ${WARD_HOSTS:-cpu-1 cpu-2 gpu-1:gpu}; do
  name=${spec%%:*}
  gpu=""
  [ "$spec" != "$name" ] && gpu="--gpu"
  if [ ! -f "$KEYS/hosts/host-$name.creds" ]; then
    mkdir -p "$KEYS/hosts"
    # NATS is not up yet: the audit record is skipped, with a note.
    ward auth host add "$name" --dir "$KEYS" --output-dir "$KEYS/hosts" --nats nats://127.0.0.1:1 $gpu
  fi
done

# give DIR FILE...: a role's volume, read only to the ward user.
give() {
  dst=$1
  shift
  rm -rf "${dst:?}"/*
  install -d -m 0700 $own "$dst"
  for f in "$@"; do
    install -m 0400 $own "$KEYS/$f" "$dst/"
  done
}

client_tls="ca.pem client.pem client-key.pem"
give $ROOT/scheduler scheduler.creds dispatch.secret $client_tls
give $ROOT/safety safety.creds policy.pub ca.pem safety.pem safety-key.pem
give $ROOT/admin admin.creds module.key policy.key $client_tls
for spec in ${WARD_HOSTS:-cpu-1 cpu-2 gpu-1:gpu}; do
  name=${spec%%:*}
  if [ -d "$ROOT/host-$name" ]; then
    give "$ROOT/host-$name" "hosts/host-$name.creds" "hosts/host-$name.key" module.pub $client_tls
  fi
done

# The NATS servers read the configuration at /etc/nats/auth; with TLS, its
# certificate paths are rewritten to there.
mkdir -p "$ROOT/nats"
rm -rf "${ROOT:?}"/nats/*
sed "s#$KEYS/#$NATS_AUTH/#g" "$KEYS/nats-server.conf" >"$ROOT/nats/nats-server.conf"
chmod 0444 "$ROOT/nats/nats-server.conf"
if [ -n "$tls" ]; then
  install -m 0444 "$KEYS/ca.pem" "$KEYS/nats-server.pem" "$ROOT/nats/"
  install -m 0400 "$KEYS/nats-server-key.pem" "$ROOT/nats/"
fi
echo "ward-init: credentials in place"
