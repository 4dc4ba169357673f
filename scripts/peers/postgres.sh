#!/usr/bin/env bash
# PostgreSQL on 127.0.0.1 for the benchmarks (`baton bench --target postgres`).
# Contract shared by every script in scripts/peers/ (README.md):
#
#   postgres.sh install   apt-get install postgresql when no server binary is there
#   postgres.sh start     install if needed, initdb once, start our own cluster, wait until it answers
#   postgres.sh stop      stop it (fast shutdown) and wait until the process is gone
#   postgres.sh status    exit 0 and print "running ..." when up, exit 1 otherwise
#   postgres.sh clean     stop, then delete the cluster
#
# Every command is idempotent. The cluster lives under .peers/postgres/
# (gitignored), runs as the `postgres` system user (the server refuses root)
# and listens on 127.0.0.1 and a socket in that directory only; the distro's
# own cluster (pg_lsclusters) is neither used nor touched. Authentication is
# `trust` for local connections: a benchmark peer bound to loopback.
# Durability: PostgreSQL's default, fsync=on and synchronous_commit=on: a
# COMMIT is answered after its WAL record is fsync'd (commits that arrive
# together share one WAL flush).
#
# Environment: POSTGRES_PORT (default 55432), POSTGRES_START_TIMEOUT (seconds, default 60),
# PEERS_DIR (instead of .peers/, e.g. a test's temp dir; the postgres user must
# be able to reach it), POSTGRES_OPTS (more server settings, e.g. "-c track_commit_timestamp=on").
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PEER="${PEERS_DIR:-$ROOT/.peers}/postgres"
DATA="$PEER/data"
PORT="${POSTGRES_PORT:-55432}"
START_TIMEOUT="${POSTGRES_START_TIMEOUT:-60}"
PIDFILE="$PEER/postgres.pid"
USER_NAME=postgres

log() { echo "postgres.sh: $*" >&2; }

bindir() {
  # The newest installed major version.
  local d
  d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
  [ -n "$d" ] && [ -x "$d/postgres" ] || return 1
  echo "$d"
}

install() {
  if bindir >/dev/null && id "$USER_NAME" >/dev/null 2>&1; then
    return 0
  fi
  log "installing postgresql (Debian package)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql >&2 || {
    apt-get update >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql >&2
  }
}

as_pg() {
  runuser -u "$USER_NAME" -- "$@"
}

pid() {
  [ -f "$DATA/postmaster.pid" ] || return 1
  local p
  p="$(head -n 1 "$DATA/postmaster.pid")"
  [ -n "$p" ] && alive "$p" || return 1
  grep -q 'postgres' "/proc/$p/cmdline" 2>/dev/null || return 1
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
  local bin
  bin="$(bindir)"
  if port_open "$PORT"; then
    log "port $PORT is already taken by another process"
    exit 1
  fi
  mkdir -p "$PEER"
  chown "$USER_NAME:" "$PEER"
  if [ ! -f "$DATA/PG_VERSION" ]; then
    rm -rf "$DATA"
    as_pg "$bin/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$PEER/initdb.log" 2>&1 || {
      cat "$PEER/initdb.log" >&2
      exit 1
    }
  fi
  echo "$PORT" >"$PEER/port"
  # pg_ctl starts the postmaster in the background (it writes
  # data/postmaster.pid, our pid file) and -w waits until it accepts
  # connections. Everything else is the default configuration.
  if ! as_pg "$bin/pg_ctl" -D "$DATA" -l "$PEER/postgres.log" -w -t "$START_TIMEOUT" \
    -o "-c port=$PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$PEER ${POSTGRES_OPTS:-}" start >&2; then
    log "did not start; last lines of $PEER/postgres.log:"
    tail -n 30 "$PEER/postgres.log" >&2 || true
    stop
    exit 1
  fi
  # The postmaster's own pid file is data/postmaster.pid; the contract's
  # pid file is a copy of its first line.
  pid >"$PIDFILE"
  log "$("$bin/postgres" --version) running on 127.0.0.1:$PORT (pid $(pid))"
}

stop() {
  local p
  if ! p="$(pid)"; then
    rm -f "$PIDFILE"
    return 0
  fi
  # Fast shutdown: roll back open transactions, checkpoint, exit.
  as_pg "$(bindir)/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >&2 || true
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
