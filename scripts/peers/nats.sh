#!/usr/bin/env bash
# NATS with JetStream on 127.0.0.1 for the benchmarks (`baton bench --target nats`).
# Contract shared by every script in scripts/peers/ (README.md):
#
#   nats.sh install   apt-get install nats-server when it is missing
#   nats.sh start     install if needed, start our own nats-server -js, wait until /healthz says ok
#   nats.sh stop      stop it and wait until the process is gone
#   nats.sh status    exit 0 and print "running ..." when up, exit 1 otherwise
#   nats.sh clean     stop, then delete the JetStream store
#
# Every command is idempotent. Everything lives under .peers/nats/ (gitignored);
# the distro's own service is neither used nor touched.
# Durability: JetStream's default, file storage with the default sync interval
# (`sync_interval`, 2 minutes in current releases; 2.9 has no setting for it):
# a PubAck means the message is written to the stream's file (the OS page
# cache), NOT fsync'd per message.
#
# Environment: NATS_PORT (default 54222), NATS_MONITOR_PORT (default 58222),
# NATS_START_TIMEOUT (seconds, default 30), PEERS_DIR (instead of .peers/, e.g. a
# test's temp dir).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PEER="${PEERS_DIR:-$ROOT/.peers}/nats"
DATA="$PEER/data"
PIDFILE="$PEER/nats.pid"
PORT="${NATS_PORT:-54222}"
MPORT="${NATS_MONITOR_PORT:-58222}"
START_TIMEOUT="${NATS_START_TIMEOUT:-30}"

log() { echo "nats.sh: $*" >&2; }

install() {
  if command -v nats-server >/dev/null 2>&1; then
    return 0
  fi
  log "installing nats-server (Debian package)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nats-server >&2 || {
    apt-get update >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nats-server >&2
  }
}

pid() {
  [ -f "$PIDFILE" ] || return 1
  local p
  p="$(cat "$PIDFILE")"
  [ -n "$p" ] && alive "$p" || return 1
  grep -q 'nats-server' "/proc/$p/cmdline" 2>/dev/null || return 1
  echo "$p"
}

# A live process: exists and is not a zombie (an exited server whose parent,
# often PID 1 here, has not reaped it yet still answers kill -0).
alive() {
  local st
  st="$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" || return 1
  [ -n "$st" ] && [ "$st" != Z ]
}

port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

healthy() {
  # /healthz answers {"status":"ok"} once JetStream is up.
  curl -fsS --max-time 2 "http://127.0.0.1:$MPORT/healthz" 2>/dev/null | grep -q '"ok"'
}

start() {
  if p="$(pid)"; then
    log "already running (pid $p, port $(cat "$PEER/port" 2>/dev/null || echo '?'))"
    return 0
  fi
  install
  if port_open "$PORT" || port_open "$MPORT"; then
    log "port $PORT or $MPORT is already taken by another process"
    exit 1
  fi
  mkdir -p "$DATA"
  rm -f "$PIDFILE"
  # setsid nohup exec, so $! is nats-server itself; it also writes -P itself.
  setsid nohup nats-server -a 127.0.0.1 -p "$PORT" -m "$MPORT" -js -sd "$DATA" \
    -l "$PEER/nats.log" >"$PEER/console.log" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  # Until the background child has exec'd setsid, its cmdline is this script's,
  # and pid() would take the server for gone (and leave it running).
  for _ in $(seq 50); do
    grep -q 'nats-server' "/proc/$(cat "$PIDFILE")/cmdline" 2>/dev/null && break
    sleep 0.1
  done
  echo "$PORT" >"$PEER/port"
  local deadline=$((SECONDS + START_TIMEOUT))
  while [ $SECONDS -lt $deadline ]; do
    if ! pid >/dev/null; then
      log "nats-server exited during start-up; last lines of its logs:"
      tail -n 30 "$PEER/console.log" "$PEER/nats.log" >&2 || true
      rm -f "$PIDFILE"
      exit 1
    fi
    if port_open "$PORT" && healthy; then
      log "$(nats-server --version) with JetStream running on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"
      return 0
    fi
    sleep 0.1
  done
  log "not healthy after ${START_TIMEOUT}s; stopping it"
  stop
  exit 1
}

stop() {
  local p
  if ! p="$(pid)"; then
    rm -f "$PIDFILE"
    return 0
  fi
  # TERM: nats-server shuts down cleanly (JetStream flushes and closes its stores).
  kill -TERM "$p" 2>/dev/null || true
  local deadline=$((SECONDS + 60))
  while alive "$p" && [ $SECONDS -lt $deadline ]; do
    sleep 0.1
  done
  if alive "$p"; then
    log "still running after 60 s; killing pid $p"
    kill -KILL "$p" 2>/dev/null || true
    while alive "$p"; do sleep 0.1; done
  fi
  rm -f "$PIDFILE"
  log "stopped"
}

status() {
  local p
  if p="$(pid)"; then
    echo "running pid=$p port=$(cat "$PEER/port" 2>/dev/null || echo '?')"
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
    rm -rf "$DATA"
    ;;
  *)
    echo "usage: $0 install|start|stop|status|clean" >&2
    exit 2
    ;;
esac
