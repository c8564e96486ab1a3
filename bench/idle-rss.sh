#!/usr/bin/env bash
# Idle RSS of the all-in-one process (issue 10): `npm start` on a fresh DATA_DIR with embedded
# stores, `npm run seed:demo`, a few analytics and logs requests, then /proc samples every 5 s.
#   npm run build && bash bench/idle-rss.sh [port]
#   IDLE_SECONDS=600 bash bench/idle-rss.sh   # watch longer (default 45 s)
set -euo pipefail
PORT=${1:-39517}
IDLE_SECONDS=${IDLE_SECONDS:-45}
DIR=$(mktemp -d -t tern-idle-rss-XXXX)
cd "$(dirname "$0")/.."
env -u DATABASE_URL -u KAFKA_BROKERS -u CLICKHOUSE_URL DATA_DIR="$DIR" PORT="$PORT" \
  node services/tern/dist/main.js >"$DIR/out.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 1 120); do sleep 1; grep -q "Tern is running" "$DIR/out.log" && break; done
echo "started: VmRSS $(awk '/VmRSS/{print $2}' /proc/$PID/status) kB"
TOKEN=$(grep -o "ingest_[A-Za-z0-9_-]*" "$DIR/out.log" | head -1)
JWT=$(grep -o "eyJ[A-Za-z0-9_.-]*" "$DIR/out.log" | head -1)
# DATA_DIR: seed:demo reads the dev secrets (JWT secret, ingest token) npm start wrote there.
DATA_DIR="$DIR" TERN_URL="http://127.0.0.1:$PORT" INGEST_TOKEN="$TOKEN" node services/tern/dist/seed-demo.js | tail -1
for d in 7 30 90; do
  for r in summary daily top-templates; do
    curl -s -o /dev/null "http://127.0.0.1:$PORT/analytics/$r?days=$d" -H "Authorization: Bearer $JWT"
  done
done
curl -s -o /dev/null "http://127.0.0.1:$PORT/emails/logs?limit=100" -H "Authorization: Bearer $JWT"
# An engine query (a period not asked yet, so not memoised) while chDB's pages are resident.
timed() { curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:$PORT/analytics/summary?days=$1" -H "Authorization: Bearer $JWT"; }
echo "summary of a new period, active: $(timed 14) s"
# The process releases memory after 15 s without a request or a batch (services/tern/src/idle-memory.ts).
for i in $(seq 1 $((IDLE_SECONDS / 5))); do
  sleep 5
  echo "idle +$((i * 5)) s: $(grep -E 'VmRSS|RssAnon|RssFile' /proc/$PID/status | tr -s ' \t\n' ' ')"
done
# Where the resident pages are: the whole process (smaps_rollup), and libchdb.so's file pages.
grep -E '^(Rss|Anonymous|Shared_Clean|Private_Clean):' /proc/$PID/smaps_rollup | tr -s ' \t\n' ' '
echo
awk '/libchdb/ {lib=1; next} /^[0-9a-f]+-[0-9a-f]+ / {lib=0} lib && /^Rss:/ {kb+=$2} END {printf "libchdb.so resident: %d MiB\n", kb/1024}' /proc/$PID/smaps
# The first engine query after the release reads back from the page cache what it needs.
echo "summary of a new period, after the idle release: $(timed 21) s; again: $(timed 28) s"
echo "after those: $(grep -E 'VmRSS|RssAnon|RssFile' /proc/$PID/status | tr -s ' \t\n' ' ')"
# After the requests above, and the whole process again.
grep -E '^(Rss|Anonymous|Shared_Clean|Private_Clean):' /proc/$PID/smaps_rollup | tr -s ' \t\n' ' '
echo
awk '/libchdb/ {lib=1; next} /^[0-9a-f]+-[0-9a-f]+ / {lib=0} lib && /^Rss:/ {kb+=$2} END {printf "libchdb.so resident: %d MiB\n", kb/1024}' /proc/$PID/smaps
