#!/usr/bin/env bash
# A real Apache Kafka broker (KRaft, one node acting as broker and controller)
# on 127.0.0.1, for the differential check (scripts/kafka-diff) and the
# benchmarks. Contract shared by every script in scripts/peers/ (README.md):
#
#   kafka.sh install   fetch the broker (Maven Central jars) into .peers/kafka/lib
#   kafka.sh start     install if needed, format storage once, start, wait until ready
#   kafka.sh stop      stop it and wait until the process is gone
#   kafka.sh status    exit 0 and print "running ..." when up, exit 1 otherwise
#   kafka.sh clean     stop, then delete the data directory (topics, offsets)
#
# Every command is idempotent. Everything lives under .peers/kafka/ (gitignored).
# Durability is Kafka's default: no log.flush.* settings, so acks=all is
# answered once the record is in the page cache of the (single) replica, not
# after an fsync. Baton answers after fdatasync; compare with that in mind.
#
# Environment:
#   KAFKA_PORT                         client listener port (default 19092)
#   KAFKA_CONTROLLER_PORT              KRaft controller port (default 19093)
#   KAFKA_HEAP_OPTS                    JVM heap (default -Xms512m -Xmx1g)
#   KAFKA_AUTO_CREATE                  auto.create.topics.enable (default true)
#   KAFKA_INITIAL_REBALANCE_DELAY_MS   group.initial.rebalance.delay.ms (default 3000, Kafka's)
#   KAFKA_START_TIMEOUT                seconds to wait for start-up (default 120)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$ROOT/scripts/peers/kafka"
PEER="$ROOT/.peers/kafka"
LIB="$PEER/lib"
DATA="$PEER/data"
LOGS="$PEER/logs"
PIDFILE="$PEER/kafka.pid"
PROPS="$PEER/server.properties"
PORT="${KAFKA_PORT:-19092}"
CPORT="${KAFKA_CONTROLLER_PORT:-19093}"
HEAP="${KAFKA_HEAP_OPTS:--Xms512m -Xmx1g}"
AUTO_CREATE="${KAFKA_AUTO_CREATE:-true}"
REBALANCE_DELAY="${KAFKA_INITIAL_REBALANCE_DELAY_MS:-3000}"
START_TIMEOUT="${KAFKA_START_TIMEOUT:-120}"
VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$HERE/pom.xml")"

log() { echo "kafka.sh: $*" >&2; }

need_java() {
  if ! command -v java >/dev/null 2>&1; then
    log "java is not installed (Kafka $VERSION needs Java 17+; Debian: apt-get install -y openjdk-17-jre-headless)"
    exit 1
  fi
}

install() {
  if [ -f "$LIB/.installed-$VERSION" ]; then
    return 0
  fi
  need_java
  if ! command -v mvn >/dev/null 2>&1; then
    log "mvn is not installed (Debian: apt-get install -y maven)"
    exit 1
  fi
  log "installing Apache Kafka $VERSION from Maven Central into $LIB"
  mkdir -p "$PEER"
  rm -rf "$LIB.tmp"
  # Runtime scope only: the broker's classpath, nothing test-only.
  if ! mvn -B -Dstyle.color=never -f "$HERE/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$LIB.tmp" -DincludeScope=runtime >"$PEER/install.log" 2>&1; then
    tail -n 40 "$PEER/install.log" >&2
    log "mvn failed; full log in $PEER/install.log"
    exit 1
  fi
  rm -rf "$LIB"
  mv "$LIB.tmp" "$LIB"
  touch "$LIB/.installed-$VERSION"
}

pid() {
  [ -f "$PIDFILE" ] || return 1
  local p
  p="$(cat "$PIDFILE")"
  [ -n "$p" ] && kill -0 "$p" 2>/dev/null || return 1
  # A recycled pid is not our broker.
  grep -q 'kafka.Kafka' "/proc/$p/cmdline" 2>/dev/null || return 1
  echo "$p"
}

port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

JVM_OPTS=(-XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true
  -Dkafka.logs.dir="$LOGS" -Dlog4j2.configurationFile="$HERE/log4j2.properties")

java_run() {
  # shellcheck disable=SC2086 # HEAP holds several JVM options
  java $HEAP "${JVM_OPTS[@]}" -cp "$LIB/*" "$@"
}

write_props() {
  # Single node: every internal topic must have replication factor 1. The rest
  # is Kafka's default, including durability (no log.flush.* settings).
  cat >"$PROPS" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CPORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$DATA
num.partitions=1
auto.create.topics.enable=$AUTO_CREATE
group.initial.rebalance.delay.ms=$REBALANCE_DELAY
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
EOF
}

format() {
  # Storage is formatted once; the controller address is part of what was
  # formatted, so a different controller port starts from empty storage.
  if [ -f "$DATA/meta.properties" ] && [ "$(cat "$PEER/formatted-for" 2>/dev/null)" = "$CPORT" ]; then
    return 0
  fi
  rm -rf "$DATA"
  mkdir -p "$DATA"
  local id
  id="$(java_run kafka.tools.StorageTool random-uuid | tail -n 1)"
  java_run kafka.tools.StorageTool format -t "$id" -c "$PROPS" >"$LOGS/format.log" 2>&1 || {
    cat "$LOGS/format.log" >&2
    exit 1
  }
  echo "$CPORT" >"$PEER/formatted-for"
}

start() {
  if p="$(pid)"; then
    log "already running (pid $p, port $(cat "$PEER/port" 2>/dev/null || echo '?'))"
    return 0
  fi
  install
  need_java
  if port_open "$PORT" || port_open "$CPORT"; then
    log "port $PORT or $CPORT is already taken by another process"
    exit 1
  fi
  mkdir -p "$LOGS"
  write_props
  format
  : >"$LOGS/server.log"
  # setsid: the broker outlives this script and a Ctrl-C in the caller's
  # shell. setsid and nohup exec, so $! is the java process itself.
  # shellcheck disable=SC2086
  setsid nohup java $HEAP "${JVM_OPTS[@]}" -cp "$LIB/*" kafka.Kafka "$PROPS" \
    >"$LOGS/console.log" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  # Until the background child has exec'd setsid, its cmdline is this script's,
  # and pid() would take the server for gone (and leave it running).
  for _ in $(seq 50); do
    grep -q 'kafka.Kafka' "/proc/$(cat "$PIDFILE")/cmdline" 2>/dev/null && break
    sleep 0.1
  done
  echo "$PORT" >"$PEER/port"
  local deadline=$((SECONDS + START_TIMEOUT))
  while [ $SECONDS -lt $deadline ]; do
    if ! pid >/dev/null; then
      log "the broker exited during start-up; last lines of $LOGS:"
      tail -n 30 "$LOGS/console.log" "$LOGS/server.log" >&2 || true
      rm -f "$PIDFILE"
      exit 1
    fi
    # The listener can accept before the broker has registered with the
    # controller; "started" is logged once it serves requests.
    if port_open "$PORT" && grep -q 'Kafka Server started' "$LOGS/server.log" 2>/dev/null; then
      log "Apache Kafka $VERSION running on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"
      return 0
    fi
    sleep 0.5
  done
  log "not ready after ${START_TIMEOUT}s; stopping it"
  stop
  exit 1
}

stop() {
  local p
  if ! p="$(pid)"; then
    rm -f "$PIDFILE"
    return 0
  fi
  # The pid is the java process: TERM runs
  # Kafka's controlled shutdown, which flushes and closes the logs.
  kill -TERM "$p" 2>/dev/null || true
  local deadline=$((SECONDS + 60))
  while kill -0 "$p" 2>/dev/null && [ $SECONDS -lt $deadline ]; do
    sleep 0.2
  done
  if kill -0 "$p" 2>/dev/null; then
    log "still running after 60 s; killing pid $p"
    kill -KILL "$p" 2>/dev/null || true
    while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
  fi
  rm -f "$PIDFILE"
  log "stopped"
}

status() {
  local p
  if p="$(pid)"; then
    echo "running pid=$p port=$(cat "$PEER/port" 2>/dev/null || echo '?') version=$VERSION"
    return 0
  fi
  echo "stopped"
  return 1
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  clean)
    stop
    rm -rf "$DATA" "$PEER/formatted-for"
    ;;
  *)
    echo "usage: $0 install|start|stop|status|clean" >&2
    exit 2
    ;;
esac
