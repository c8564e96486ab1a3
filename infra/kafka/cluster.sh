#!/usr/bin/env bash
# A three-node KRaft cluster from the same jars as the single broker (each node is broker and
# controller; three controller voters), for the cluster suite (test/cluster) and for trying a
# replicated topic by hand. Everything lives under $KAFKA_CLUSTER_DIR (required: a temp dir of
# the caller), on its own ports: node n (1..3) serves clients on KAFKA_CLUSTER_PORT+n-1 (default
# 29092..29094) and its controller on KAFKA_CLUSTER_CONTROLLER_PORT+n-1 (default 29192..29194).
#
#   cluster.sh start            format (once) and start the three nodes; wait until ready
#   cluster.sh start-node <n>   start node n again on its data; wait until it serves
#   cluster.sh stop-node <n>    SIGTERM node n, SIGKILL after 30 s
#   cluster.sh kill-node <n>    SIGKILL node n (kill -9)
#   cluster.sh pid <n>          pid of node n while it runs
#   cluster.sh stop             stop every node (SIGKILL after 30 s); data stays
#   cluster.sh brokers          the bootstrap list (host:port,...)
#   cluster.sh controller       the node id of the active controller (the quorum's leader)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

: "${KAFKA_CLUSTER_DIR:?set KAFKA_CLUSTER_DIR to a directory of the caller}"
BASE="${KAFKA_CLUSTER_PORT:-29092}"
CBASE="${KAFKA_CLUSTER_CONTROLLER_PORT:-$((BASE + 100))}"
NODES=3
timeout_s="${KAFKA_START_TIMEOUT:-150}"

port_of() { echo $((BASE + $1 - 1)); }
cport_of() { echo $((CBASE + $1 - 1)); }
node_dir() { echo "$KAFKA_CLUSTER_DIR/node$1"; }
brokers() {
  local n list=""
  for n in $(seq 1 $NODES); do list="$list${list:+,}$KAFKA_HOST:$(port_of "$n")"; done
  echo "$list"
}
voters() {
  local n list=""
  for n in $(seq 1 $NODES); do list="$list${list:+,}$n@$KAFKA_HOST:$(cport_of "$n")"; done
  echo "$list"
}

node_pid() {
  local f
  f="$(node_dir "$1")/kafka.pid"
  [ -f "$f" ] || return 1
  local pid
  pid="$(cat "$f")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# The committed server.properties, made a three-voter cluster: replicated internal topics and
# min.insync.replicas=2 (an acknowledged record is on two brokers at least).
render_node() {
  local n="$1" dir
  dir="$(node_dir "$n")"
  mkdir -p "$dir/data"
  sed \
    -e "s|^node.id=.*|node.id=$n|" \
    -e "s|^controller.quorum.voters=.*|controller.quorum.voters=$(voters)|" \
    -e "s|^listeners=.*|listeners=PLAINTEXT://$KAFKA_HOST:$(port_of "$n"),CONTROLLER://$KAFKA_HOST:$(cport_of "$n")|" \
    -e "s|^advertised.listeners=.*|advertised.listeners=PLAINTEXT://$KAFKA_HOST:$(port_of "$n")|" \
    -e "s|^log.dirs=.*|log.dirs=$dir/data|" \
    -e "s|^offsets.topic.replication.factor=.*|offsets.topic.replication.factor=3|" \
    -e "s|^transaction.state.log.replication.factor=.*|transaction.state.log.replication.factor=3|" \
    -e "s|^transaction.state.log.min.isr=.*|transaction.state.log.min.isr=2|" \
    -e "s|^default.replication.factor=.*|default.replication.factor=3|" \
    -e "s|^min.insync.replicas=.*|min.insync.replicas=2|" \
    "$KAFKA_DIR/server.properties" >"$dir/server.properties"
  # A stopped replica is out of the ISR after 10 s (default 30 s), a dead broker's session ends
  # after 6 s (default 9 s): faster failover on the loaded test machine, same mechanism.
  cat >>"$dir/server.properties" <<EOF
replica.lag.time.max.ms=10000
broker.session.timeout.ms=6000
broker.heartbeat.interval.ms=1000
unclean.leader.election.enable=false
EOF
}

format_all() {
  local n cluster_id
  if [ -f "$KAFKA_CLUSTER_DIR/cluster.id" ]; then
    cluster_id="$(cat "$KAFKA_CLUSTER_DIR/cluster.id")"
  else
    # What `StorageTool random-uuid` prints (16 random bytes, base64url without padding), without
    # starting a JVM for it: on the loaded 2-core machine each JVM start took 20–60 s.
    # Not starting with '-' (StorageTool would read it as an option; Kafka's own ids never do).
    cluster_id="-"
    while [[ "$cluster_id" == -* ]]; do
      cluster_id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
    done
    echo "$cluster_id" >"$KAFKA_CLUSTER_DIR/cluster.id"
  fi
  local pids=()
  for n in $(seq 1 $NODES); do
    render_node "$n"
    [ -f "$(node_dir "$n")/data/meta.properties" ] && continue
    # The three formats at once (one JVM each).
    java $KAFKA_LOG4J_OPTS -cp "$KAFKA_LIBS/*" kafka.tools.StorageTool format \
      -t "$cluster_id" -c "$(node_dir "$n")/server.properties" --ignore-formatted >/dev/null &
    pids+=("$!")
  done
  local pid
  for pid in "${pids[@]}"; do wait "$pid"; done
}

spawn_node() {
  local n="$1" dir pid
  dir="$(node_dir "$n")"
  if pid="$(node_pid "$n")"; then
    log "node $n already running (pid $pid)"
    return 0
  fi
  if port_open "$KAFKA_HOST" "$(port_of "$n")" || port_open "$KAFKA_HOST" "$(cport_of "$n")"; then
    log "port $(port_of "$n") or $(cport_of "$n") is taken; choose others with KAFKA_CLUSTER_PORT"
    exit 1
  fi
  local heap_opts="${KAFKA_HEAP_OPTS:--Xms128m -Xmx384m}"
  # shellcheck disable=SC2086
  setsid nohup java $heap_opts -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
    $KAFKA_LOG4J_OPTS -cp "$KAFKA_LIBS/*" kafka.Kafka "$dir/server.properties" \
    </dev/null >>"$dir/kafka.log" 2>&1 &
  pid=$!
  disown "$pid" 2>/dev/null || true
  echo "$pid" >"$dir/kafka.pid"
}

wait_port() {
  local n="$1" started=$SECONDS
  until port_open "$KAFKA_HOST" "$(port_of "$n")"; do
    node_pid "$n" >/dev/null || {
      tail -n 20 "$(node_dir "$n")/kafka.log" >&2
      log "node $n exited during start"
      exit 1
    }
    ((SECONDS - started < timeout_s)) || {
      log "node $n did not open its port within $timeout_s s"
      exit 1
    }
    sleep 0.3
  done
}

# Runs one of the admin probes (Ready.java, Quorum.java), compiled once.
run_probe() {
  local class="$1" probe_dir="$KAFKA_DIR/run/probe"
  shift
  if [ ! -f "$probe_dir/$class.class" ] || [ "$KAFKA_DIR/$class.java" -nt "$probe_dir/$class.class" ]; then
    mkdir -p "$probe_dir"
    javac -nowarn -cp "$KAFKA_LIBS/*" -d "$probe_dir" "$KAFKA_DIR/$class.java"
  fi
  java -XX:TieredStopAtLevel=1 $KAFKA_LOG4J_OPTS -cp "$probe_dir:$KAFKA_LIBS/*" "$class" "$@"
}

stop_node() {
  local n="$1" signal="$2" pid
  pid="$(node_pid "$n")" || {
    rm -f "$(node_dir "$n")/kafka.pid"
    return 0
  }
  kill "-$signal" "$pid"
  for _ in $(seq 1 300); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  rm -f "$(node_dir "$n")/kafka.pid"
}

cmd="${1:-}"
case "$cmd" in
start)
  need_java
  mkdir -p "$KAFKA_CLUSTER_DIR"
  libs_present || "$KAFKA_DIR/build.sh"
  format_all
  for n in $(seq 1 $NODES); do spawn_node "$n"; done
  for n in $(seq 1 $NODES); do wait_port "$n"; done
  run_probe Ready "$(brokers)" "$timeout_s" || {
    log "cluster not ready"
    exit 1
  }
  log "cluster ready on $(brokers)"
  ;;
start-node)
  spawn_node "$2"
  wait_port "$2"
  ;;
stop-node) stop_node "$2" TERM ;;
kill-node) stop_node "$2" KILL ;;
pid) node_pid "$2" ;;
stop) for n in $(seq 1 $NODES); do stop_node "$n" TERM & done; wait ;;
brokers) brokers ;;
controller) run_probe Quorum "$(brokers)" "${KAFKA_QUORUM_TIMEOUT:-90}" ;;
*)
  echo "usage: cluster.sh start|stop|brokers|start-node <n>|stop-node <n>|kill-node <n>|pid <n>|controller" >&2
  exit 2
  ;;
esac
