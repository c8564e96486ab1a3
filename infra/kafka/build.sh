#!/usr/bin/env bash
# Copies the broker's jars from Maven Central into infra/kafka/libs/ (skipped when present).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

if libs_present; then
  log "jars present in $KAFKA_LIBS (Kafka $KAFKA_VERSION)"
  exit 0
fi
if ! command -v mvn >/dev/null 2>&1; then
  log "mvn not found: building the broker needs Maven (e.g. apt-get install maven)"
  exit 1
fi
need_java
log "fetching Kafka $KAFKA_VERSION jars with Maven..."
started=$SECONDS
# Stale jars of another version would shadow the new ones on the classpath.
rm -rf "$KAFKA_LIBS"
mvn -B -q -f "$KAFKA_DIR/pom.xml" package >&2
libs_present || { log "maven finished but $KAFKA_LIBS lacks kafka_2.13-$KAFKA_VERSION.jar"; exit 1; }
log "jars ready in $((SECONDS - started)) s"
