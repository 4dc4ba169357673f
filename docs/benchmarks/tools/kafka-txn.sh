#!/usr/bin/env bash
# The exactly-once consume-transform-produce pipeline through a Kafka client
# (franz-go's GroupTransactSession, tools/kafka-txn/), on Baton's Kafka
# listener and on Apache Kafka, same driver, same flags, same run.
#
# Usage: docs/benchmarks/tools/kafka-txn.sh [OUT_DIR]   (default /tmp/kafka-txn-results)
#
# For each run r = 1..RUNS and each K in KS: Baton (a fresh server and data
# directory), then Apache Kafka (one broker for the whole series, a fresh pair of
# topics per run), closed loop: WORKERS sessions, 200 + 200 partitions,
# DURATION s measured after WARMUP s. Then, if RATE_RUNS > 0, the open loop:
# each broker at HALF of its own median closed-loop rate (Baton's is what the
# issue's commit-p99 target is about; Kafka's is for reference), RATE_RUNS
# runs each, alternating. Every run verifies exactly once.
#
# Before every run a quiet gate waits (at most QUIET_MAX s) for >= QUIET_IDLE %
# idle; the run records the load average before it, and the driver measures
# over its window the CPU of the server (-server-pid), of itself and of the
# whole machine (others = busy - server - driver).
#
# Baton: a copy of target/release/baton at /tmp/baton-bench-helper, HTTP on
# 127.0.0.1:26632, Kafka on 127.0.0.1:29392 (below the ephemeral range: a port
# in it can be held by one of the previous run's client sockets, and the bind
# fails), data in /tmp/kt-baton-data, stopped
# by pid after each run. It answers after the log entry is fdatasync'd.
# Apache Kafka 4.1.1: scripts/peers/kafka.sh, run from a private copy of the
# script (/tmp/kt-kafka-root, the same jars, the same server.properties, ports
# 29092/29093) so that it does not disturb a broker other sessions use on 19092
# (KAFKA_SHARED=1 uses scripts/peers/kafka.sh itself on 19092 instead). Its
# durability is the script's: Kafka's defaults, no log.flush.*, so it answers
# once the data is in the page cache, not after an fsync. Stopped at the end.
#
# DRIVER_PROCS=N runs the driver with GOMAXPROCS=N (Go's default is one per
# core); every run's JSON says what it ran with ("gomaxprocs").
#
# BATON_BASE=<path to another baton binary>: every Baton run is followed by the
# same run on that binary (label "baton-base", data in the same place), for an
# A/B of two builds in one series; KAFKA=0 leaves Apache Kafka out.
#
# Output: OUT_DIR/runs.jsonl (one line per run: the driver's JSON plus the
# machine fields), OUT_DIR/summary.md (tables), OUT_DIR/baton-*.log (each
# Baton's stderr), OUT_DIR/driver-*.log (each run's driver stderr).
set -uo pipefail
cd "$(dirname "$0")/../../.."
ROOT=$(pwd)
OUT=${1:-/tmp/kafka-txn-results}
RUNS=${RUNS:-3}
KS=${KS:-"1 10"}
WORKERS=${WORKERS:-64}
PARTS=${PARTS:-200}
DURATION=${DURATION:-20}
WARMUP=${WARMUP:-5}
MSGS_K1=${MSGS_K1:-250000}
MSGS_K10=${MSGS_K10:-1000000}
RATE_RUNS=${RATE_RUNS:-3}
QUIET_IDLE=${QUIET_IDLE:-70}
QUIET_MAX=${QUIET_MAX:-180}
DRIVER_PROCS=${DRIVER_PROCS:-}
case "$DRIVER_PROCS" in
  "" | [1-9] | [1-9][0-9]) ;;
  *) echo "DRIVER_PROCS must be a number from 1 to 99 (got '$DRIVER_PROCS')" >&2; exit 2 ;;
esac
BATON_HTTP=127.0.0.1:26632
BATON_KAFKA=127.0.0.1:29392
BATON_DATA=/tmp/kt-baton-data
BATON_BIN=/tmp/baton-bench-helper
BATON_BASE_BIN=/tmp/baton-bench-base
RUN_KAFKA=${KAFKA:-1}
DRIVER=/tmp/kt-bin/kafka-txn
GO=$(command -v go || echo /usr/local/go/bin/go)
mkdir -p "$OUT" /tmp/kt-bin

if [ "${KAFKA_SHARED:-0}" = 1 ]; then
  KROOT=$ROOT KPORT=19092 KCPORT=19093
else
  KROOT=/tmp/kt-kafka-root KPORT=29092 KCPORT=29093
  # A broker left by an earlier run of this script is stopped (by its pid file) first.
  [ -x "$KROOT/scripts/peers/kafka.sh" ] && KAFKA_PORT=$KPORT KAFKA_CONTROLLER_PORT=$KCPORT "$KROOT/scripts/peers/kafka.sh" stop
  rm -rf "$KROOT"
  mkdir -p "$KROOT/scripts/peers" "$KROOT/.peers/kafka"
  cp -r scripts/peers/kafka.sh scripts/peers/kafka "$KROOT/scripts/peers/"
  [ -f .peers/kafka/lib/.installed-4.1.1 ] || scripts/peers/kafka.sh install
  ln -s "$ROOT/.peers/kafka/lib" "$KROOT/.peers/kafka/lib"
fi
kafka() { KAFKA_PORT=$KPORT KAFKA_CONTROLLER_PORT=$KCPORT KAFKA_INITIAL_REBALANCE_DELAY_MS=0 "$KROOT/scripts/peers/kafka.sh" "$@"; }

echo "== building the driver" >&2
(cd docs/benchmarks/tools/kafka-txn && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off "$GO" build -buildvcs=false -o "$DRIVER" .) || exit 1
cp target/release/baton "$BATON_BIN" || exit 1
if [ -n "${BATON_BASE:-}" ]; then cp "$BATON_BASE" "$BATON_BASE_BIN" || exit 1; fi
{
  echo "baton binary: $(stat -c '%y' target/release/baton), git $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates src || echo ' + uncommitted changes in crates/src')"
  [ -n "${BATON_BASE:-}" ] && echo "baton-base binary: $BATON_BASE ($(stat -c '%y' "$BATON_BASE"))"
  echo "machine: nproc $(nproc), $(uname -r)"
  echo "driver GOMAXPROCS: ${DRIVER_PROCS:-the Go default, one per core}"
  echo "start: $(date -u +%FT%TZ), uptime: $(uptime)"
} >"$OUT/meta.txt"
cat "$OUT/meta.txt" >&2


BATON_PID=
port_busy() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }
start_baton() { # label [binary]
  local bin=${2:-$BATON_BIN}
  rm -rf "$BATON_DATA"
  for _ in $(seq 100); do port_busy $BATON_HTTP || port_busy $BATON_KAFKA || break; sleep 0.1; done
  if port_busy $BATON_HTTP || port_busy $BATON_KAFKA; then
    echo "$BATON_HTTP or $BATON_KAFKA is taken by another process; not starting Baton for $1" >&2
    return 1
  fi
  "$bin" serve --data-dir "$BATON_DATA" --http-addr $BATON_HTTP --kafka-addr $BATON_KAFKA \
    --kafka-initial-rebalance-delay-ms 0 >/dev/null 2>"$OUT/baton-$1.log" </dev/null &
  BATON_PID=$!
  for _ in $(seq 100); do
    kill -0 "$BATON_PID" 2>/dev/null || break
    curl -sf "http://$BATON_HTTP/health" >/dev/null && return 0
    sleep 0.1
  done
  echo "baton did not become healthy in 10 s; log: $OUT/baton-$1.log" >&2
  return 1
}
stop_baton() {
  [ -n "$BATON_PID" ] || return 0
  kill -TERM "$BATON_PID" 2>/dev/null
  for _ in $(seq 300); do kill -0 "$BATON_PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$BATON_PID" 2>/dev/null; then
    echo "baton pid $BATON_PID still running 30 s after TERM; KILL" >&2
    kill -KILL "$BATON_PID" 2>/dev/null
  fi
  wait "$BATON_PID" 2>/dev/null
  BATON_PID=
  rm -rf "$BATON_DATA"
}
cleanup() { stop_baton; kafka stop >/dev/null 2>&1; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# one_run BROKER LABEL K MSGS [RATE]: a line in runs.jsonl
one_run() {
  local broker=$1 label=$2 k=$3 msgs=$4 rate=${5:-0} addr spid
  python3 docs/benchmarks/tools/quiet.py "$QUIET_IDLE" "$QUIET_MAX" >&2
  if [ "$broker" = baton ]; then
    start_baton "$label" || return 1
    addr=$BATON_KAFKA spid=$BATON_PID
  elif [ "$broker" = baton-base ]; then
    start_baton "$label" "$BATON_BASE_BIN" || return 1
    addr=$BATON_KAFKA spid=$BATON_PID
  else
    addr=127.0.0.1:$KPORT spid=$(cat "$KROOT/.peers/kafka/kafka.pid")
  fi
  local load t0 t1 line
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  t0=$(date +%s.%N)
  /usr/bin/time -f '%U %S' -o "$OUT/time-$label" env ${DRIVER_PROCS:+"GOMAXPROCS=$DRIVER_PROCS"} timeout $((DURATION + WARMUP + 400)) "$DRIVER" \
    -brokers "$addr" -label "$broker" -run "$label-$(date +%s)" -partitions "$PARTS" -messages "$msgs" \
    -k "$k" -workers "$WORKERS" -duration "$DURATION" -warmup "$WARMUP" -rate "$rate" -server-pid "$spid" \
    -max-seconds $((DURATION + WARMUP + 360)) >"$OUT/result-$label.json" 2>"$OUT/driver-$label.log"
  local rc=$?
  line=$(tail -n 1 "$OUT/result-$label.json")
  t1=$(date +%s.%N)
  if [ "$broker" != kafka ]; then
    kill -0 "$BATON_PID" 2>/dev/null || echo "BATON EXITED during $label; log: $OUT/baton-$label.log" >&2
    stop_baton
  fi
  [ -n "$line" ] || line='{"error":"the driver printed no result (see its log)"}'
  python3 - "$line" "$label" "$load" "$t0" "$t1" "$rc" >>"$OUT/runs.jsonl" <<'EOF'
import json, sys
line, label, load, t0, t1, rc = sys.argv[1:]
d = json.loads(line)
d.update(tag=label, exit=int(rc), load_before=load, wall_s=round(float(t1) - float(t0), 2))
print(json.dumps(d))
EOF
  python3 - "$OUT/runs.jsonl" >&2 <<'EOF'
import json, sys
d = json.loads(open(sys.argv[1]).readlines()[-1]); c = d.get("commit", {}); v = d.get("verify", {})
w = d.get("window_cpu", {})
print(f"{d['tag']}: {d.get('tx_per_s')} tx/s, commit p50 {c.get('p50_ms')} p99 {c.get('p99_ms')} ms, "
      f"aborted {d.get('aborted_txns')}, server {w.get('server_cores')} driver {w.get('driver_cores')} others {w.get('others_cores')} cores, "
      f"load {d['load_before']}; {v.get('summary', d.get('error'))}")
EOF
}

msgs_for() { [ "$1" = 1 ] && echo "$MSGS_K1" || echo "$MSGS_K10"; }

if [ "$RUN_KAFKA" = 1 ]; then
  echo "== Apache Kafka: fresh data, start, warm-up run (not recorded)" >&2
  kafka clean >/dev/null 2>&1
  kafka start || exit 1
  timeout 300 "$DRIVER" -brokers 127.0.0.1:$KPORT -label warmup -run "warm-$(date +%s)" -messages 50000 -k 1 \
    -workers "$WORKERS" -duration 10 -warmup 2 -no-verify >/dev/null 2>"$OUT/driver-kafka-warmup.log"
fi

for r in $(seq "$RUNS"); do
  for k in $KS; do
    m=$(msgs_for "$k")
    one_run baton "baton-k$k-r$r" "$k" "$m"
    [ -n "${BATON_BASE:-}" ] && one_run baton-base "baton-base-k$k-r$r" "$k" "$m"
    [ "$RUN_KAFKA" = 1 ] && one_run kafka "kafka-k$k-r$r" "$k" "$m"
  done
done

median_rate() { # broker k
  python3 - "$OUT/runs.jsonl" "$1" "$2" <<'EOF'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
v = [r["tx_per_s"] for r in rows if r.get("label") == sys.argv[2] and r.get("k") == int(sys.argv[3])
     and not r.get("rate_target") and r.get("tx_per_s")]
print(statistics.median(v) if v else 0)
EOF
}

if [ "$RATE_RUNS" -gt 0 ]; then
  for k in $KS; do
    bh=$(python3 -c "print(round($(median_rate baton "$k") / 2))")
    kh=$(python3 -c "print(round($(median_rate kafka "$k") / 2))")
    m=$(msgs_for "$k")
    for r in $(seq "$RATE_RUNS"); do
      [ "$bh" -gt 0 ] && one_run baton "baton-k$k-half-r$r" "$k" "$m" "$bh"
      # The base build runs at the same rate as this one: the A/B is at one load.
      [ "$bh" -gt 0 ] && [ -n "${BATON_BASE:-}" ] && one_run baton-base "baton-base-k$k-half-r$r" "$k" "$m" "$bh"
      [ "$kh" -gt 0 ] && [ "$RUN_KAFKA" = 1 ] && one_run kafka "kafka-k$k-half-r$r" "$k" "$m" "$kh"
    done
  done
fi

[ "$RUN_KAFKA" = 1 ] && kafka stop >&2
echo "end: $(date -u +%FT%TZ), uptime: $(uptime)" >>"$OUT/meta.txt"
python3 docs/benchmarks/tools/kafka-txn/summary.py "$OUT/runs.jsonl" >"$OUT/summary.md"
cat "$OUT/summary.md"
