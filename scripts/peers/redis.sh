#!/usr/bin/env bash
# Redis (Streams) on 127.0.0.1 for the benchmarks (`baton bench --target redis`).
# Contract shared by every script in scripts/peers/ (README.md):
#
#   redis.sh install   apt-get install redis-server when redis-server is missing
#   redis.sh start     install if needed, start our own redis-server, wait until it answers PING
#   redis.sh stop      stop it (TERM: fsync the AOF, exit) and wait until the process is gone
#   redis.sh status    exit 0 and print "running ..." when up, exit 1 otherwise
#   redis.sh clean     stop, then delete the data directory
#
# Every command is idempotent. Everything lives under .peers/redis/ (gitignored);
# the distro's own service is neither used nor touched.
# Durability: Redis's default durable setting, `appendonly yes` with the default
# `appendfsync everysec`: a write is answered once it is in the AOF buffer,
# and the AOF is fsync'd about once a second, NOT per write (up to ~1 s of
# acknowledged writes can be lost in a crash).
#
# Environment: REDIS_PORT (default 56379), REDIS_START_TIMEOUT (seconds, default 30),
# PEERS_DIR (instead of .peers/, e.g. a test's temp dir).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PEER="${PEERS_DIR:-$ROOT/.peers}/redis"
DATA="$PEER/data"
PIDFILE="$PEER/redis.pid"
PORT="${REDIS_PORT:-56379}"
START_TIMEOUT="${REDIS_START_TIMEOUT:-30}"

log() { echo "redis.sh: $*" >&2; }

install() {
  if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
    return 0
  fi
  log "installing redis-server (Debian package)"
  # policy-rc.d or no init: the package's own service may or may not start; we never use it.
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server redis-tools >&2 || {
    apt-get update >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server redis-tools >&2
  }
}

pid() {
  [ -f "$PIDFILE" ] || return 1
  local p
  p="$(cat "$PIDFILE")"
  [ -n "$p" ] && alive "$p" || return 1
  # A recycled pid is not our server.
  grep -q 'redis-server' "/proc/$p/cmdline" 2>/dev/null || return 1
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

start() {
  if p="$(pid)"; then
    log "already running (pid $p, port $(cat "$PEER/port" 2>/dev/null || echo '?'))"
    return 0
  fi
  install
  if port_open "$PORT"; then
    log "port $PORT is already taken by another process"
    exit 1
  fi
  mkdir -p "$DATA"
  rm -f "$PIDFILE"
  # --daemonize yes: redis forks into the background and writes the pid file itself.
  redis-server --bind 127.0.0.1 --port "$PORT" --dir "$DATA" \
    --appendonly yes --appendfsync everysec \
    --daemonize yes --pidfile "$PIDFILE" --logfile "$PEER/redis.log" </dev/null
  echo "$PORT" >"$PEER/port"
  local deadline=$((SECONDS + START_TIMEOUT))
  while [ $SECONDS -lt $deadline ]; do
    if [ "$(redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null)" = "PONG" ] && pid >/dev/null; then
      log "redis $(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p') running on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"
      return 0
    fi
    sleep 0.1
  done
  log "not answering after ${START_TIMEOUT}s; last lines of $PEER/redis.log:"
  tail -n 30 "$PEER/redis.log" >&2 || true
  stop
  exit 1
}

stop() {
  local p
  if ! p="$(pid)"; then
    rm -f "$PIDFILE"
    return 0
  fi
  # TERM: redis fsyncs the AOF (and saves the RDB snapshot) before it exits.
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
