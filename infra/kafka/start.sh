#!/usr/bin/env bash
# Starts the native single-node KRaft broker in the background on 127.0.0.1:$KAFKA_PORT and
# waits until it can create and list topics. Pid and log live in infra/kafka/run/<port>/.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

timeout_s="${KAFKA_START_TIMEOUT:-90}"
started=$SECONDS

if pid="$(running_pid)"; then
  log "broker already running (pid $pid) on $KAFKA_HOST:$KAFKA_PORT"
  exit 0
fi
if port_open "$KAFKA_HOST" "$KAFKA_PORT"; then
  log "port $KAFKA_PORT is taken by another process; choose another with KAFKA_PORT"
  exit 1
fi
if port_open "$KAFKA_HOST" "$KAFKA_CONTROLLER_PORT"; then
  log "controller port $KAFKA_CONTROLLER_PORT is taken; choose another with KAFKA_CONTROLLER_PORT"
  exit 1
fi
need_java
if ! libs_present; then
  "$KAFKA_DIR/build.sh"
fi
"$KAFKA_DIR/format.sh"

# Modest heap: the broker shares two cores and the memory with the tests it serves.
heap_opts="${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
jvm_opts="${KAFKA_JVM_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExplicitGCInvokesConcurrent}"
log "starting Kafka $KAFKA_VERSION on $KAFKA_HOST:$KAFKA_PORT (log: $KAFKA_LOG_FILE)"
# setsid + nohup: the broker outlives the shell (and the npm script) that started it.
# shellcheck disable=SC2086
setsid nohup java $heap_opts $jvm_opts -Djava.awt.headless=true $KAFKA_LOG4J_OPTS \
  -cp "$KAFKA_LIBS/*" kafka.Kafka "$KAFKA_CONF" \
  </dev/null >>"$KAFKA_LOG_FILE" 2>&1 &
pid=$!
# Not a job of this shell any more: no "Killed" notice if fail() has to stop it.
disown "$pid" 2>/dev/null || true
echo "$pid" >"$KAFKA_PID_FILE"

# A broker that is not ready is stopped: a half-started one would be reused by the next up.sh.
# The reason comes last: callers (the test setup) quote the last line.
fail() {
  log "last lines of $KAFKA_LOG_FILE:"
  tail -n 20 "$KAFKA_LOG_FILE" >&2 || true
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$KAFKA_PID_FILE"
  log "$1"
  exit 1
}

# The readiness probe is compiled once (the source launcher would compile it on every start),
# while the broker boots.
probe_dir="$KAFKA_DIR/run/probe"
if [ ! -f "$probe_dir/Ready.class" ] || [ "$KAFKA_DIR/Ready.java" -nt "$probe_dir/Ready.class" ]; then
  mkdir -p "$probe_dir"
  javac -nowarn -cp "$KAFKA_LIBS/*" -d "$probe_dir" "$KAFKA_DIR/Ready.java" || fail "cannot compile Ready.java (needs a JDK)"
fi

until port_open "$KAFKA_HOST" "$KAFKA_PORT"; do
  kill -0 "$pid" 2>/dev/null || fail "broker exited during start"
  if ((SECONDS - started >= timeout_s)); then
    fail "broker did not open $KAFKA_HOST:$KAFKA_PORT within ${timeout_s} s"
  fi
  sleep 0.3
done

remaining=$((timeout_s - (SECONDS - started)))
((remaining > 5)) || remaining=5
if ! java -XX:TieredStopAtLevel=1 $KAFKA_LOG4J_OPTS -cp "$probe_dir:$KAFKA_LIBS/*" Ready \
  "$KAFKA_HOST:$KAFKA_PORT" "$remaining"; then
  fail "broker on $KAFKA_HOST:$KAFKA_PORT cannot create/list topics within ${timeout_s} s"
fi
log "broker ready on $KAFKA_HOST:$KAFKA_PORT in $((SECONDS - started)) s (pid $pid)"
