#!/usr/bin/env bash
# RabbitMQ on 127.0.0.1 for the benchmarks (`baton bench --target rabbitmq`).
# Contract shared by every script in scripts/peers/ (README.md):
#
#   rabbitmq.sh install   apt-get install rabbitmq-server when it is missing
#   rabbitmq.sh start     install if needed, start our own node, wait until AMQP answers
#   rabbitmq.sh stop      stop the node and wait until the process is gone
#   rabbitmq.sh status    exit 0 and print "running ..." when up, exit 1 otherwise
#   rabbitmq.sh clean     stop, then delete the node's database (queues, messages)
#
# Every command is idempotent. The node (baton-bench@localhost) keeps its
# database, logs and config under .peers/rabbitmq/ (gitignored) and runs as the
# `rabbitmq` system user (its Erlang cookie is in that user's home); no plugins.
# The distro's own node (rabbit@<host>) is neither used nor touched. Erlang's
# port mapper (epmd, port 4369) is shared by every Erlang node on the machine:
# `stop` ends it only if it started with our node and no other node uses it.
# Durability: the benchmark declares quorum queues and uses publisher confirms;
# a quorum queue confirms a message after its Raft log entry is fsync'd (one
# node here, so not replicated). Consumer acks get no answer in AMQP 0-9-1.
#
# Environment: RABBITMQ_PORT (AMQP, default 55672), RABBITMQ_DIST_PORT (Erlang
# distribution, default 55673), RABBITMQ_START_TIMEOUT (seconds, default 120),
# RABBITMQ_NODE (node name, default baton-bench@localhost), PEERS_DIR (instead
# of .peers/, e.g. a test's temp dir; the rabbitmq user must be able to reach it).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PEER="${PEERS_DIR:-$ROOT/.peers}/rabbitmq"
PIDFILE="$PEER/rabbitmq.pid"
PORT="${RABBITMQ_PORT:-55672}"
DIST_PORT="${RABBITMQ_DIST_PORT:-55673}"
START_TIMEOUT="${RABBITMQ_START_TIMEOUT:-120}"
NODE="${RABBITMQ_NODE:-baton-bench@localhost}"
SBIN=/usr/lib/rabbitmq/bin
USER_NAME=rabbitmq

log() { echo "rabbitmq.sh: $*" >&2; }

install() {
  if [ -x "$SBIN/rabbitmq-server" ] && id "$USER_NAME" >/dev/null 2>&1; then
    return 0
  fi
  log "installing rabbitmq-server (Debian package)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends rabbitmq-server >&2 || {
    apt-get update >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends rabbitmq-server >&2
  }
}

# Run a RabbitMQ program as the rabbitmq user with our node's environment.
as_rabbit() {
  runuser -u "$USER_NAME" -- env HOME=/var/lib/rabbitmq \
    RABBITMQ_NODENAME="$NODE" \
    RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
    RABBITMQ_NODE_PORT="$PORT" \
    RABBITMQ_DIST_PORT="$DIST_PORT" \
    RABBITMQ_MNESIA_BASE="$PEER/mnesia" \
    RABBITMQ_LOG_BASE="$PEER/log" \
    RABBITMQ_PID_FILE="$PIDFILE" \
    RABBITMQ_CONFIG_FILE="$PEER/rabbitmq.conf" \
    RABBITMQ_ADVANCED_CONFIG_FILE="$PEER/advanced.config" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$PEER/enabled_plugins" \
    ERL_EPMD_ADDRESS=127.0.0.1 \
    "$@"
}

pid() {
  [ -f "$PIDFILE" ] || return 1
  local p
  p="$(cat "$PIDFILE")"
  [ -n "$p" ] && alive "$p" || return 1
  # The Erlang VM of OUR node, not a recycled pid or another node (the node
  # name reaches the VM through its environment, not its command line).
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "RABBITMQ_NODENAME=$NODE" || return 1
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
  if port_open "$PORT" || port_open "$DIST_PORT"; then
    log "port $PORT or $DIST_PORT is already taken by another process"
    exit 1
  fi
  mkdir -p "$PEER/log" "$PEER/mnesia"
  # Defaults apart from where to listen; guest/guest may connect from loopback.
  printf 'listeners.tcp.default = 127.0.0.1:%s\n' "$PORT" >"$PEER/rabbitmq.conf"
  echo '[].' >"$PEER/advanced.config"
  echo '[].' >"$PEER/enabled_plugins"
  chown -R "$USER_NAME:" "$PEER"
  if port_open 4369; then rm -f "$PEER/epmd-ours"; else touch "$PEER/epmd-ours"; fi
  rm -f "$PIDFILE"
  # setsid: the node outlives this script; the node writes its own pid file
  # (the Erlang VM's pid) once it is booting.
  as_rabbit setsid nohup "$SBIN/rabbitmq-server" >"$PEER/log/console.log" 2>&1 </dev/null &
  echo "$PORT" >"$PEER/port"
  local deadline=$((SECONDS + START_TIMEOUT))
  while [ $SECONDS -lt $deadline ]; do
    # The AMQP listener opens once the node has booted.
    if port_open "$PORT" && pid >/dev/null; then
      log "RabbitMQ $(dpkg-query -W -f '${Version}' rabbitmq-server 2>/dev/null) node $NODE running on 127.0.0.1:$PORT (pid $(pid))"
      return 0
    fi
    if ! alive $! && ! pid >/dev/null; then
      log "the node exited during start-up; last lines of $PEER/log:"
      tail -n 30 "$PEER/log/console.log" >&2 || true
      exit 1
    fi
    sleep 0.5
  done
  log "not ready after ${START_TIMEOUT}s; stopping it"
  stop
  exit 1
}

stop() {
  local p
  if p="$(pid)"; then
    # TERM: the Erlang VM runs init:stop, RabbitMQ's orderly shutdown.
    kill -TERM "$p" 2>/dev/null || true
    local deadline=$((SECONDS + 60))
    while alive "$p" && [ $SECONDS -lt $deadline ]; do
      sleep 0.2
    done
    if alive "$p"; then
      log "still running after 60 s; killing pid $p"
      kill -KILL "$p" 2>/dev/null || true
      while alive "$p"; do sleep 0.1; done
    fi
    log "stopped"
  fi
  rm -f "$PIDFILE"
  # epmd: only the one our start brought up, and only when no node is left on it.
  if [ -f "$PEER/epmd-ours" ] && command -v epmd >/dev/null 2>&1; then
    if ! epmd -names 2>/dev/null | grep -q '^name '; then
      epmd -kill >/dev/null 2>&1 || true
      rm -f "$PEER/epmd-ours"
    fi
  fi
}

status() {
  local p
  if p="$(pid)"; then
    echo "running pid=$p port=$(cat "$PEER/port" 2>/dev/null || echo '?') node=$NODE"
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
    rm -rf "$PEER/mnesia"
    ;;
  *)
    echo "usage: $0 install|start|stop|status|clean" >&2
    exit 2
    ;;
esac
