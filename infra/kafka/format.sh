#!/usr/bin/env bash
# Formats the KRaft data directory of this port once, with a random cluster id.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

need_java
render_config
if [ -f "$KAFKA_RUN_DIR/data/meta.properties" ]; then
  exit 0
fi
cluster_id="$(java $KAFKA_LOG4J_OPTS -cp "$KAFKA_LIBS/*" kafka.tools.StorageTool random-uuid)"
log "formatting $KAFKA_RUN_DIR/data (cluster $cluster_id)"
java $KAFKA_LOG4J_OPTS -cp "$KAFKA_LIBS/*" kafka.tools.StorageTool format \
  -t "$cluster_id" -c "$KAFKA_CONF" --ignore-formatted >&2
