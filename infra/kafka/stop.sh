#!/usr/bin/env bash
# Stops the broker that start.sh started for this port (and nothing else).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

if ! pid="$(running_pid)"; then
  log "no broker of ours running on port $KAFKA_PORT"
  rm -f "$KAFKA_PID_FILE"
  exit 0
fi
log "stopping broker (pid $pid) on port $KAFKA_PORT"
kill -TERM "$pid"
for _ in $(seq 1 300); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
  log "broker did not stop within 30 s; killing it"
  kill -KILL "$pid" 2>/dev/null || true
fi
rm -f "$KAFKA_PID_FILE"
log "stopped"
