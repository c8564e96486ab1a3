#!/usr/bin/env bash
# Starts (or reuses) the services Tern runs against locally and in tests: a Kafka broker and a
# Postgres server. Idempotent. Settings go to stdout as KEY=value lines (eval-able, or
# `set -a; source <(bash infra/up.sh)`), progress goes to stderr.
#
# Kafka, first that applies: something already answers on 127.0.0.1:$KAFKA_PORT → reuse it;
# a Docker engine answers → `docker compose up -d kafka`; else the native broker
# (infra/kafka: jars from Maven Central, needs Java 17 + Maven).
# Postgres: 127.0.0.1:5432 answering → reuse; else the machine's cluster via pg_ctlcluster,
# or `docker compose up -d postgres` when only Docker is there.
#
# Arguments pick the services (`kafka`, `postgres`); none means both.
#
# What this script started is appended to infra/kafka/run/up.state, and also printed as
# INFRA_STARTED=<entries>; infra/down.sh stops those (all recorded, or the entries it is given).
set -euo pipefail

INFRA_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(dirname "$INFRA_DIR")"
source "$INFRA_DIR/kafka/env.sh"
STATE_FILE="$INFRA_DIR/kafka/run/up.state"
PG_HOST=127.0.0.1
PG_PORT=5432
# The machine's clusters trust local connections; the compose Postgres wants its password.
pg_url="postgres://postgres@$PG_HOST:$PG_PORT/postgres"
started_entries=()

want_kafka=0
want_postgres=0
(($# > 0)) || set -- kafka postgres
for arg in "$@"; do
  case "$arg" in
  kafka) want_kafka=1 ;;
  postgres) want_postgres=1 ;;
  *)
    echo "usage: infra/up.sh [kafka] [postgres]" >&2
    exit 2
    ;;
  esac
done

say() { echo "[infra] $*" >&2; }

# Printed even when a later step fails, so the caller can stop what was started before it.
trap 'echo "INFRA_STARTED=${started_entries[*]:-}"' EXIT

record() {
  mkdir -p "$(dirname "$STATE_FILE")"
  echo "$1" >>"$STATE_FILE"
  started_entries+=("$1")
}

docker_ok() {
  command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1
}

wait_port() { # host port seconds what
  local deadline=$((SECONDS + $3))
  until port_open "$1" "$2"; do
    if ((SECONDS >= deadline)); then
      say "$4 did not answer on $1:$2 within $3 s"
      exit 1
    fi
    sleep 0.5
  done
}

pg_ready() {
  if command -v pg_isready >/dev/null 2>&1; then
    pg_isready -q -h "$PG_HOST" -p "$PG_PORT"
  else
    port_open "$PG_HOST" "$PG_PORT"
  fi
}

# Two callers at once (two test runs) would both try to start a broker on the same port: the
# second waits here, then finds the first one's broker answering and reuses it.
mkdir -p "$INFRA_DIR/kafka/run"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$INFRA_DIR/kafka/run/up.lock"
  flock -w 300 9 || say "could not lock $INFRA_DIR/kafka/run/up.lock; going on without it"
fi

# --- Kafka -------------------------------------------------------------------------------
if ((!want_kafka)); then
  :
elif port_open "$KAFKA_HOST" "$KAFKA_PORT"; then
  say "kafka: reusing what answers on $KAFKA_HOST:$KAFKA_PORT"
elif docker_ok; then
  say "kafka: docker compose up -d kafka"
  # Recorded first: a container that starts but never turns healthy is still ours to stop.
  record "kafka-docker:$KAFKA_PORT"
  KAFKA_PORT="$KAFKA_PORT" docker compose -f "$REPO_DIR/docker-compose.yml" up -d --wait --wait-timeout 120 kafka >&2 9>&-
  wait_port "$KAFKA_HOST" "$KAFKA_PORT" 90 "kafka (docker)"
else
  say "kafka: no broker on $KAFKA_HOST:$KAFKA_PORT and no Docker engine; starting the native broker"
  "$INFRA_DIR/kafka/build.sh"
  # fd 9 (the lock) must not live on in the broker, or the next up.sh would wait for it.
  "$INFRA_DIR/kafka/start.sh" 9>&-
  record "kafka-native:$KAFKA_PORT"
fi

# --- Postgres ----------------------------------------------------------------------------
if ((!want_postgres)); then
  :
elif pg_ready; then
  say "postgres: reusing what answers on $PG_HOST:$PG_PORT"
elif [ -d /etc/postgresql ] && command -v pg_ctlcluster >/dev/null 2>&1; then
  version="$(ls /etc/postgresql | sort -V | tail -n 1)"
  say "postgres: pg_ctlcluster $version main start"
  pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 9>&-
  record "postgres-cluster:$version/main"
  deadline=$((SECONDS + 30))
  until pg_ready; do
    ((SECONDS < deadline)) || { say "postgres did not answer on $PG_HOST:$PG_PORT within 30 s"; exit 1; }
    sleep 0.5
  done
elif docker_ok; then
  say "postgres: docker compose up -d postgres"
  record "postgres-docker"
  docker compose -f "$REPO_DIR/docker-compose.yml" up -d --wait --wait-timeout 120 postgres >&2 9>&-
  wait_port "$PG_HOST" "$PG_PORT" 60 "postgres (docker)"
  pg_url="postgres://postgres:tern@$PG_HOST:$PG_PORT/postgres"
else
  say "postgres: nothing on $PG_HOST:$PG_PORT, no local cluster and no Docker engine"
  exit 1
fi

((!want_kafka)) || echo "KAFKA_BROKERS=$KAFKA_HOST:$KAFKA_PORT"
((!want_postgres)) || echo "DATABASE_URL=$pg_url"
