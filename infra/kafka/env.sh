# Shared settings of the native-broker scripts; sourced, not run.
# KAFKA_PORT (default 9092) picks the broker port; the controller listens on KAFKA_CONTROLLER_PORT
# (default KAFKA_PORT+1). Each port gets its own run directory, so brokers of different ports
# (a developer's and CI's) never share data.
KAFKA_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KAFKA_PORT="${KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-$((KAFKA_PORT + 1))}"
KAFKA_HOST=127.0.0.1
KAFKA_RUN_DIR="$KAFKA_DIR/run/$KAFKA_PORT"
KAFKA_CONF="$KAFKA_RUN_DIR/server.properties"
KAFKA_PID_FILE="$KAFKA_RUN_DIR/kafka.pid"
KAFKA_LOG_FILE="$KAFKA_RUN_DIR/kafka.log"
KAFKA_LIBS="$KAFKA_DIR/libs"
KAFKA_VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$KAFKA_DIR/pom.xml")"
KAFKA_LOG4J_OPTS="-Dlog4j.configuration=file:$KAFKA_DIR/log4j.properties"

log() { echo "[kafka] $*" >&2; }

# True when something accepts TCP connections on host:port (bash's /dev/tcp, no extra tools).
port_open() {
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

libs_present() {
  [ -f "$KAFKA_LIBS/kafka_2.13-$KAFKA_VERSION.jar" ] && [ -f "$KAFKA_LIBS/kafka-clients-$KAFKA_VERSION.jar" ]
}

# Pid of the broker this directory started, when that process is still alive.
running_pid() {
  local pid
  [ -f "$KAFKA_PID_FILE" ] || return 1
  pid="$(cat "$KAFKA_PID_FILE")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

need_java() {
  if ! command -v java >/dev/null 2>&1; then
    log "java not found: the native broker needs Java 17 (e.g. apt-get install openjdk-17-jre-headless)"
    exit 1
  fi
}

# The committed server.properties with this run's ports and data directory.
render_config() {
  mkdir -p "$KAFKA_RUN_DIR/data"
  sed \
    -e "s|^controller.quorum.voters=.*|controller.quorum.voters=1@$KAFKA_HOST:$KAFKA_CONTROLLER_PORT|" \
    -e "s|^listeners=.*|listeners=PLAINTEXT://$KAFKA_HOST:$KAFKA_PORT,CONTROLLER://$KAFKA_HOST:$KAFKA_CONTROLLER_PORT|" \
    -e "s|^advertised.listeners=.*|advertised.listeners=PLAINTEXT://$KAFKA_HOST:$KAFKA_PORT|" \
    -e "s|^log.dirs=.*|log.dirs=$KAFKA_RUN_DIR/data|" \
    "$KAFKA_DIR/server.properties" >"$KAFKA_CONF.tmp"
  mv "$KAFKA_CONF.tmp" "$KAFKA_CONF"
}
