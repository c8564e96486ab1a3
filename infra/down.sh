#!/usr/bin/env bash
# Stops what infra/up.sh started, and nothing else: every entry recorded in
# infra/kafka/run/up.state, or only the entries given as arguments (as up.sh printed them in
# INFRA_STARTED). Services that up.sh found already running are never recorded, so never stopped.
set -euo pipefail

INFRA_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(dirname "$INFRA_DIR")"
STATE_FILE="$INFRA_DIR/kafka/run/up.state"

say() { echo "[infra] $*" >&2; }

if [ ! -f "$STATE_FILE" ]; then
  say "nothing recorded as started by infra/up.sh"
  exit 0
fi

if (($# > 0)); then
  targets=("$@")
else
  mapfile -t targets <"$STATE_FILE"
fi

stop_entry() {
  case "$1" in
  kafka-native:*)
    KAFKA_PORT="${1#kafka-native:}" KAFKA_CONTROLLER_PORT='' "$INFRA_DIR/kafka/stop.sh"
    ;;
  kafka-docker:*)
    say "docker compose stop kafka"
    docker compose -f "$REPO_DIR/docker-compose.yml" stop kafka >&2
    ;;
  postgres-cluster:*)
    local spec="${1#postgres-cluster:}"
    say "pg_ctlcluster ${spec%/*} ${spec#*/} stop"
    pg_ctlcluster --skip-systemctl-redirect "${spec%/*}" "${spec#*/}" stop >&2
    ;;
  postgres-docker)
    say "docker compose stop postgres"
    docker compose -f "$REPO_DIR/docker-compose.yml" stop postgres >&2
    ;;
  '') ;;
  *)
    say "unknown entry in $STATE_FILE: $1"
    ;;
  esac
}

for entry in "${targets[@]}"; do
  [ -n "$entry" ] || continue
  stop_entry "$entry"
  # Drop the entry once stopped, so a second down (or a later up) sees the truth.
  grep -vxF -- "$entry" "$STATE_FILE" >"$STATE_FILE.tmp" || true
  mv "$STATE_FILE.tmp" "$STATE_FILE"
done
