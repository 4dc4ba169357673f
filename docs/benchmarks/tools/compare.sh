#!/usr/bin/env bash
# compare.sh — the side-by-side comparison run of issue #5: Baton and the
# systems people would pick instead, through the same `baton bench` workloads,
# one system at a time, RUNS times with the systems interleaved per run.
# Owns: starting/stopping each system for the run, the invocation list, and
# OUTDIR's raw files (results.jsonl, warmup.jsonl, command.txt, machine.txt,
# settings.txt, failures.txt, logs/). The report (tables, ratios, charts) is
# report.py's job.
#
#   docs/benchmarks/tools/compare.sh [--quick] [--sweep] [OUTDIR]
#
# OUTDIR defaults to docs/benchmarks/<today>/. It builds nothing: it expects
# target/release/baton (`cargo build --release --bins`). It works from the
# repository root (a relative OUTDIR is taken from there).
# Then: docs/benchmarks/tools/report.py OUTDIR
#
#   --quick   1 run, short workloads (about 4-5 minutes): checks the script, not the systems.
#   (default) about 13 minutes per run, so about 40 minutes for RUNS=3 (one run of
#             baton/postgres/kafka took 128/151/253 s on the 2-core machine; the
#             other three are shorter: no pipeline, and nats/redis no ramp).
#   --sweep   instead of the comparison: the pipeline workload at several worker
#             counts on postgres and kafka (and baton if in SYSTEMS), to pick
#             each one's best worker count; rows labelled sweep-w<N>-p<P>.
#
# Per system and run (the default, not --quick), after a warm-up (warm_up below):
#   produce-1    produce --batch 1 --workers 32 --size 256, 15 s          (queue p1)
#   produce-100  produce --batch 100 --workers 8 --size 256, 10 s         (queue p100)
#   consume      consume --batch 100 --workers 8: drains p100, acks each  (queue p100)
#   pipeline     1 message per transaction (--batch 1), exactly-once verified;
#                baton, postgres, kafka only; counts/workers/partitions below
#   ramp         open-loop produce from RAMP_RATE msg/s x RAMP_FACTOR per
#                RAMP_STEP_SECS step until p99 > 5 s or < 97 % delivered;
#                systems in RAMP_SYSTEMS only
# Each invocation appends its rows to OUTDIR/results.jsonl with --label
# "<workload>-r<run>"; its output goes to OUTDIR/logs/. A failed invocation is
# listed in OUTDIR/failures.txt and the run goes on.
#
# Fairness: one system runs at a time (the load generator shares the 2 cores);
# each starts on fresh, empty data (Baton: a new data dir under /tmp; peers:
# `<peer>.sh clean` before `start`); after each system, `sync` and SETTLE_SECS
# of quiet so a page-cache broker's dirty pages do not land in the next one's
# window. The system order rotates by one per run, so no system is always first.
#
# Environment (defaults in brackets):
#   RUNS [3]  SYSTEMS ["baton rabbitmq nats redis postgres kafka"]; "baton-kafka"
#   (Baton's Kafka listener, same librdkafka client as kafka) may be added.
#   RAMP_SYSTEMS ["baton rabbitmq kafka"]  BATON [target/release/baton]
#   BATON_HTTP_PORT [6632] BATON_KAFKA_PORT [9092]  PEER_SCRIPTS [scripts/peers]
#   PEERS_DIR, RABBITMQ_PORT, NATS_PORT, REDIS_PORT, POSTGRES_PORT, KAFKA_PORT:
#   passed to the peer scripts, and the ports to `--addr`.
#   WARMUP_SECS [15]: warm-up produce-1 time after each start (then 3 s of produce-100
#   and a consume of 20,000; none of it in results.jsonl).
#   KAFKA_LINGER_MS [0], KAFKA_PIPE_LINGER_MS [5]: --linger-ms of the Kafka targets.
#   BENCH_TIMEOUT [300] seconds for one invocation, EXIT_GRACE [30] seconds for it
#   to exit after writing its rows; SETTLE_SECS [3].
#   PIPE_{BATON,POSTGRES,KAFKA}_{COUNT,WORKERS,PARTITIONS}: see below.
set -uo pipefail

ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$ROOT" || exit 1
ORIG_CMD="docs/benchmarks/tools/compare.sh $*"

QUICK=0
SWEEP=0
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --sweep) SWEEP=1 ;;
    -h | --help)
      sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    -*)
      echo "compare.sh: unknown option $1" >&2
      exit 2
      ;;
    *) OUT="$1" ;;
  esac
  shift
done
OUT="${OUT:-docs/benchmarks/$(date -u +%Y-%m-%d)}"

BATON="${BATON:-target/release/baton}"
PEER_SCRIPTS="${PEER_SCRIPTS:-scripts/peers}"
SYSTEMS="${SYSTEMS:-baton rabbitmq nats redis postgres kafka}"
RAMP_SYSTEMS="${RAMP_SYSTEMS:-baton rabbitmq kafka}"
BATON_HTTP_PORT="${BATON_HTTP_PORT:-6632}"
BATON_KAFKA_PORT="${BATON_KAFKA_PORT:-9092}"
BENCH_TIMEOUT="${BENCH_TIMEOUT:-300}"
EXIT_GRACE="${EXIT_GRACE:-30}"
KAFKA_LINGER_MS="${KAFKA_LINGER_MS:-0}"
KAFKA_PIPE_LINGER_MS="${KAFKA_PIPE_LINGER_MS:-5}"
SETTLE_SECS="${SETTLE_SECS:-3}"

# Workload sizes. --quick shrinks every one; the shapes stay the same.
if [ "$QUICK" = 1 ]; then
  RUNS=1
  P1_SECS=3 P100_SECS=2 PIPE_SECS=15 WARMUP_SECS=2 WARMUP100_SECS=1 WARMUP_CONSUME=5000
  RAMP_RATE=1000 RAMP_FACTOR=2 RAMP_STEP_SECS=2 RAMP_MAX_STEPS=3
  DEF_COUNT_BATON=5000 DEF_COUNT_POSTGRES=3000 DEF_COUNT_KAFKA=2000
  SWEEP_SECS=8 SWEEP_COUNT=20000
else
  RUNS="${RUNS:-3}"
  P1_SECS=15 P100_SECS=10 PIPE_SECS=60 WARMUP_SECS="${WARMUP_SECS:-15}" WARMUP100_SECS=3 WARMUP_CONSUME=20000
  # 2,000 x 1.5^k: 2k 3k 4.5k 6.8k 10k 15k 23k 34k 51k 77k msg/s; at most 10 steps of 5 s.
  RAMP_RATE="${RAMP_RATE:-2000}" RAMP_FACTOR="${RAMP_FACTOR:-1.5}" RAMP_STEP_SECS="${RAMP_STEP_SECS:-5}"
  RAMP_MAX_STEPS="${RAMP_MAX_STEPS:-10}"
  # Counts sized so that one pipeline run takes well under the 60 s cap on the 2-core machine
  # (busy machine, 2026-11-29: baton 9.3k tx/s, postgres 950, kafka 440).
  DEF_COUNT_BATON=100000 DEF_COUNT_POSTGRES=40000 DEF_COUNT_KAFKA=15000
  SWEEP_SECS=20 SWEEP_COUNT=100000
fi
# Pipeline: 200 partitions everywhere (the issue's shape; 32 partitions was no
# better for postgres or kafka). Worker counts for postgres and kafka are the
# best of `compare.sh --sweep` on the 2-core machine (2026-11-29, machine busy):
# postgres 8/16/32/48 workers -> 1271/1358/1356/1203 tx/s (64+ workers: the
# adapter's pool of 2 x workers connections exceeds max_connections=100);
# kafka 4/8/16/32/64 -> 156/207/256/492/415 tx/s.
PIPE_BATON_COUNT="${PIPE_BATON_COUNT:-$DEF_COUNT_BATON}"
PIPE_BATON_WORKERS="${PIPE_BATON_WORKERS:-256}"
PIPE_BATON_PARTITIONS="${PIPE_BATON_PARTITIONS:-200}"
PIPE_POSTGRES_COUNT="${PIPE_POSTGRES_COUNT:-$DEF_COUNT_POSTGRES}"
PIPE_POSTGRES_WORKERS="${PIPE_POSTGRES_WORKERS:-16}"
PIPE_POSTGRES_PARTITIONS="${PIPE_POSTGRES_PARTITIONS:-200}"
PIPE_KAFKA_COUNT="${PIPE_KAFKA_COUNT:-$DEF_COUNT_KAFKA}"
PIPE_KAFKA_WORKERS="${PIPE_KAFKA_WORKERS:-32}"
PIPE_KAFKA_PARTITIONS="${PIPE_KAFKA_PARTITIONS:-200}"
SWEEP_WORKERS_BATON="${SWEEP_WORKERS_BATON:-64 128 256}"
SWEEP_WORKERS_POSTGRES="${SWEEP_WORKERS_POSTGRES:-8 16 32 48}"
SWEEP_WORKERS_KAFKA="${SWEEP_WORKERS_KAFKA:-4 8 16 32 64}"

log() { echo "compare.sh: $*" >&2; }
die() {
  log "$*"
  exit 1
}

[ -x "$BATON" ] || die "$BATON is missing: run cargo build --release --bins first"
command -v curl >/dev/null || die "curl is needed (Baton's /health)"
for s in $SYSTEMS $RAMP_SYSTEMS; do
  case "$s" in
    baton | baton-kafka) ;;
    rabbitmq | nats | redis | postgres | kafka) [ -x "$PEER_SCRIPTS/$s.sh" ] || die "no $PEER_SCRIPTS/$s.sh" ;;
    *) die "unknown system '$s' (baton baton-kafka rabbitmq nats redis postgres kafka)" ;;
  esac
done

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# A live child: exists and is not a zombie waiting for our `wait`.
running() { [ -r "/proc/$1/stat" ] && [ "$(sed 's/^.*) //' "/proc/$1/stat" | cut -d' ' -f1)" != Z ]; }

# Refuse to start when a system is already up: this script stops every system
# it measures, so it would stop someone else's, and their load would be in ours.
for s in $SYSTEMS; do
  case "$s" in
    baton | baton-kafka)
      if port_open "$BATON_HTTP_PORT" || port_open "$BATON_KAFKA_PORT"; then
        die "port $BATON_HTTP_PORT or $BATON_KAFKA_PORT is taken: stop that server or set BATON_HTTP_PORT/BATON_KAFKA_PORT"
      fi
      ;;
    *)
      if st="$("$PEER_SCRIPTS/$s.sh" status 2>/dev/null)"; then
        die "$s is already running ($st): stop it first ($PEER_SCRIPTS/$s.sh stop), or use other ports (see the header)"
      fi
      ;;
  esac
done

mkdir -p "$OUT/logs" || die "cannot create $OUT"
RESULTS="$OUT/results.jsonl"
FAILURES="$OUT/failures.txt"
touch "$FAILURES" "$RESULTS"

addr_of() {
  case "$1" in
    baton) echo "http://127.0.0.1:$BATON_HTTP_PORT" ;;
    baton-kafka) echo "127.0.0.1:$BATON_KAFKA_PORT" ;;
    rabbitmq) echo "amqp://guest:guest@127.0.0.1:${RABBITMQ_PORT:-55672}/%2f" ;;
    nats) echo "nats://127.0.0.1:${NATS_PORT:-54222}" ;;
    redis) echo "redis://127.0.0.1:${REDIS_PORT:-56379}/" ;;
    postgres) echo "host=127.0.0.1 port=${POSTGRES_PORT:-55432} user=postgres dbname=postgres" ;;
    kafka) echo "127.0.0.1:${KAFKA_PORT:-19092}" ;;
  esac
}

# librdkafka's producer waits linger.ms (its default: 5) to fill a batch. In a
# closed loop of 1-message requests that wait is most of each request: on this
# machine produce-1 on Kafka gave 4-5k msg/s at 5 ms and 45-67k at 0, and
# produce-100 116k vs 430-500k. So the Kafka targets get KAFKA_LINGER_MS [0]
# (their best); the pipeline keeps 5 (KAFKA_PIPE_LINGER_MS), where a commit
# flushes anyway and 0 was not better (301 vs 446 tx/s, one try each).
kafka_args() { # kafka_args SYSTEM WORKLOAD
  case "$1" in
    kafka | baton-kafka)
      if [ "$2" = pipeline ]; then echo "--linger-ms $KAFKA_PIPE_LINGER_MS"; else echo "--linger-ms $KAFKA_LINGER_MS"; fi
      ;;
  esac
}

# One `baton bench` invocation: bench SYSTEM LABEL ARGS...; rows go to results.jsonl.
bench() {
  local sys="$1" label="$2"
  shift 2
  local -a addr=(--addr "$(addr_of "$sys")")
  [ "$sys" = baton ] && addr=(--url "$(addr_of "$sys")")
  # shellcheck disable=SC2207 # kafka_args prints flags without spaces inside
  addr+=($(kafka_args "$sys" "$1"))
  local logf="$OUT/logs/$sys-$label.log"
  echo "+ $BATON bench $* --target $sys ${addr[*]} --label $label" >"$logf"
  local t0=$SECONDS before wrote="" why=""
  local json="${BENCH_JSON:-$RESULTS}"
  touch "$json"
  before="$(wc -l <"$json")"
  "$BATON" bench "$@" --target "$sys" "${addr[@]}" \
    --json-out "$json" --label "$label" --no-progress >>"$logf" 2>&1 </dev/null &
  local bp=$!
  BENCH_PID=$bp
  # Bounded: BENCH_TIMEOUT in all, and EXIT_GRACE after the rows are written
  # (they are written once, at the end), since a client library that hangs on
  # close must not cost the rest of the run.
  while running "$bp"; do
    if [ -z "$wrote" ] && [ "$(wc -l <"$json")" -gt "$before" ]; then wrote=$SECONDS; fi
    if [ $((SECONDS - t0)) -ge "$BENCH_TIMEOUT" ]; then
      why="timed out after ${BENCH_TIMEOUT}s (killed)"
    elif [ -n "$wrote" ] && [ $((SECONDS - wrote)) -ge "$EXIT_GRACE" ]; then
      why="wrote its rows but had not exited ${EXIT_GRACE}s later (killed; the rows are kept)"
    fi
    if [ -n "$why" ]; then
      kill -TERM "$bp" 2>/dev/null
      sleep 3
      kill -KILL "$bp" 2>/dev/null
      break
    fi
    sleep 0.5
  done
  wait "$bp"
  local rc=$?
  BENCH_PID=""
  if [ -n "$why" ] || [ $rc -ne 0 ]; then
    [ -n "$why" ] || why="$(grep -v '^\s*$' "$logf" | tail -n 1 | cut -c1-300)"
    [ $rc -ne 0 ] || rc=1
    echo "$sys $label exit $rc: $why" >>"$FAILURES"
    log "$sys $label FAILED (exit $rc, $((SECONDS - t0)) s): $why"
  else
    log "$sys $label ok ($((SECONDS - t0)) s)"
  fi
  return $rc
}

BATON_PID=""
BATON_DATA=""
RUNNING=""

start_system() {
  local s="$1" run="$2"
  case "$s" in
    baton | baton-kafka)
      BATON_DATA="$(mktemp -d /tmp/baton-compare.XXXXXX)"
      "$BATON" serve --http-addr "127.0.0.1:$BATON_HTTP_PORT" --kafka-addr "127.0.0.1:$BATON_KAFKA_PORT" \
        --data-dir "$BATON_DATA" >"$OUT/logs/$s-server-r$run.log" 2>&1 </dev/null &
      BATON_PID=$!
      RUNNING="$s"
      local i
      for i in $(seq 200); do
        curl -sf "http://127.0.0.1:$BATON_HTTP_PORT/health" >/dev/null && port_open "$BATON_KAFKA_PORT" && return 0
        kill -0 "$BATON_PID" 2>/dev/null || break
        sleep 0.1
      done
      log "baton did not become healthy; log tail:"
      tail -n 20 "$OUT/logs/$s-server-r$run.log" >&2
      return 1
      ;;
    *)
      # clean first: every run starts from an empty store, as Baton does.
      "$PEER_SCRIPTS/$s.sh" clean >>"$OUT/logs/$s-peer.log" 2>&1
      RUNNING="$s"
      "$PEER_SCRIPTS/$s.sh" start >>"$OUT/logs/$s-peer.log" 2>&1 || {
        log "$s did not start; see $OUT/logs/$s-peer.log"
        tail -n 20 "$OUT/logs/$s-peer.log" >&2
        return 1
      }
      ;;
  esac
}

stop_system() {
  local s="$RUNNING"
  [ -n "$s" ] || return 0
  case "$s" in
    baton | baton-kafka)
      if [ -n "$BATON_PID" ]; then
        kill -TERM "$BATON_PID" 2>/dev/null
        local i
        for i in $(seq 600); do
          kill -0 "$BATON_PID" 2>/dev/null || break
          sleep 0.1
        done
        kill -KILL "$BATON_PID" 2>/dev/null
        wait "$BATON_PID" 2>/dev/null
      fi
      BATON_PID=""
      [ -n "$BATON_DATA" ] && rm -rf "$BATON_DATA"
      BATON_DATA=""
      ;;
    *) "$PEER_SCRIPTS/$s.sh" clean >>"$OUT/logs/$s-peer.log" 2>&1 ;;
  esac
  RUNNING=""
  sync
  sleep "$SETTLE_SECS"
}

BENCH_PID=""
trap '[ -n "$BENCH_PID" ] && kill -TERM "$BENCH_PID" 2>/dev/null; stop_system; exit 130' INT TERM
trap 'stop_system' EXIT

can_pipeline() { case "$1" in baton | postgres | kafka) return 0 ;; *) return 1 ;; esac }
in_list() { case " $2 " in *" $1 "*) return 0 ;; *) return 1 ;; esac }

pipe_var() { # pipe_var SYSTEM COUNT|WORKERS|PARTITIONS
  local n
  n="PIPE_${1^^}_$2"
  echo "${!n}"
}

# Every system gets the same warm-up after its start, recorded apart
# (warmup.jsonl). A fresh JVM needs it: Kafka, just started, took 1-message
# requests at 4.2k, 9.1k, 8.7k, 26k, 39k, 63k, 29k, 82k msg/s in 8 back-to-back
# 3 s runs (linger 0, busy machine), i.e. about 15 s of load before its JIT has
# compiled the hot paths.
warm_up() {
  local s="$1" r="$2"
  BENCH_JSON="$OUT/warmup.jsonl" bench "$s" "warmup-1-r$r" produce --batch 1 --workers 32 --size 256 \
    --duration "$WARMUP_SECS" --queue warmup
  BENCH_JSON="$OUT/warmup.jsonl" bench "$s" "warmup-100-r$r" produce --batch 100 --workers 8 --size 256 \
    --duration "$WARMUP100_SECS" --queue warmup
  BENCH_JSON="$OUT/warmup.jsonl" bench "$s" "warmup-consume-r$r" consume --batch 100 --workers 8 --count "$WARMUP_CONSUME" \
    --queue warmup
}

run_system() {
  local s="$1" r="$2"
  warm_up "$s" "$r"
  bench "$s" "produce-1-r$r" produce --batch 1 --workers 32 --size 256 --duration "$P1_SECS" --queue p1
  bench "$s" "produce-100-r$r" produce --batch 100 --workers 8 --size 256 --duration "$P100_SECS" --queue p100
  bench "$s" "consume-r$r" consume --batch 100 --workers 8 --queue p100
  if can_pipeline "$s"; then
    bench "$s" "pipeline-r$r" pipeline --batch 1 --size 256 --count "$(pipe_var "$s" COUNT)" \
      --workers "$(pipe_var "$s" WORKERS)" --partitions "$(pipe_var "$s" PARTITIONS)" --duration "$PIPE_SECS" --queue pipe
  fi
  if in_list "$s" "$RAMP_SYSTEMS"; then
    bench "$s" "ramp-r$r" ramp --batch 1 --workers 64 --size 256 --rate "$RAMP_RATE" --factor "$RAMP_FACTOR" \
      --duration "$RAMP_STEP_SECS" --max-steps "$RAMP_MAX_STEPS" --queue ramp
  fi
}

sweep_system() {
  local s="$1" w p list
  p="$(pipe_var "$s" PARTITIONS)"
  list="SWEEP_WORKERS_${s^^}"
  for w in ${!list}; do
    bench "$s" "sweep-w$w-p$p" pipeline --batch 1 --size 256 --count "$SWEEP_COUNT" --workers "$w" \
      --partitions "$p" --duration "$SWEEP_SECS" --queue "sweep$w"
  done
}

facts() {
  {
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "nproc: $(nproc)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "ram: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
    echo "kernel: $(uname -sr)"
    echo "git: $(git rev-parse --short HEAD 2>/dev/null)$( [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && echo ' (work tree has uncommitted changes)')"
    echo "baton binary: $BATON, built $(date -u -r "$BATON" '+%Y-%m-%d %H:%M UTC')"
    echo "disk: $(df -hT "$ROOT" | awk 'NR==2 {print $1, $2}')"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  } >"$OUT/machine.txt"
}

versions() {
  {
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "end: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    local pkg v
    for pkg in rabbitmq-server nats-server redis-server postgresql; do
      v="$(dpkg-query -W -f '${Version}' "$pkg" 2>/dev/null)" && echo "peer $pkg: $v"
    done
    v="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$PEER_SCRIPTS/kafka/pom.xml" 2>/dev/null)"
    [ -n "$v" ] && echo "peer kafka: Apache Kafka $v (KRaft, one node)"
  } >>"$OUT/machine.txt"
}

{
  # The exact command, with every setting that differs from the defaults.
  envs=""
  for v in RUNS SYSTEMS RAMP_SYSTEMS BATON BATON_HTTP_PORT BATON_KAFKA_PORT PEER_SCRIPTS PEERS_DIR \
    RABBITMQ_PORT RABBITMQ_NODE NATS_PORT REDIS_PORT POSTGRES_PORT KAFKA_PORT KAFKA_CONTROLLER_PORT \
    WARMUP_SECS KAFKA_LINGER_MS KAFKA_PIPE_LINGER_MS RAMP_RATE RAMP_FACTOR RAMP_STEP_SECS RAMP_MAX_STEPS \
    PIPE_BATON_COUNT PIPE_BATON_WORKERS PIPE_BATON_PARTITIONS PIPE_POSTGRES_COUNT PIPE_POSTGRES_WORKERS \
    PIPE_POSTGRES_PARTITIONS PIPE_KAFKA_COUNT PIPE_KAFKA_WORKERS PIPE_KAFKA_PARTITIONS \
    SWEEP_WORKERS_BATON SWEEP_WORKERS_POSTGRES SWEEP_WORKERS_KAFKA; do
    if printenv "$v" >/dev/null; then envs+="$v='$(printenv "$v")' "; fi
  done
  echo "${envs}${ORIG_CMD}"
} >>"$OUT/command.txt"
facts
{
  # The effective settings, for the report.
  mode=full
  [ "$QUICK" = 1 ] && mode=quick
  [ "$SWEEP" = 1 ] && mode="sweep ($mode)"
  echo "mode: $mode"
  echo "runs: $RUNS"
  echo "systems (run 1 order; rotated by one per run): $SYSTEMS"
  echo "ramp systems: $RAMP_SYSTEMS"
  echo "warm-up per start (not measured): produce-1 ${WARMUP_SECS} s, produce-100 ${WARMUP100_SECS} s, consume $WARMUP_CONSUME"
  echo "produce-1: --batch 1 --workers 32 --size 256 --duration $P1_SECS (8 partitions)"
  echo "produce-100: --batch 100 --workers 8 --size 256 --duration $P100_SECS (8 partitions)"
  echo "consume: --batch 100 --workers 8, drains produce-100's queue"
  echo "pipeline: --batch 1 --duration $PIPE_SECS (cap); baton $PIPE_BATON_WORKERS workers, $PIPE_BATON_PARTITIONS partitions, count $PIPE_BATON_COUNT; postgres $PIPE_POSTGRES_WORKERS, $PIPE_POSTGRES_PARTITIONS, $PIPE_POSTGRES_COUNT; kafka $PIPE_KAFKA_WORKERS, $PIPE_KAFKA_PARTITIONS, $PIPE_KAFKA_COUNT"
  echo "ramp: --batch 1 --workers 64 --rate $RAMP_RATE --factor $RAMP_FACTOR --duration $RAMP_STEP_SECS per step, at most $RAMP_MAX_STEPS steps"
  echo "kafka clients (librdkafka): linger.ms $KAFKA_LINGER_MS (pipeline: $KAFKA_PIPE_LINGER_MS)"
  echo "between systems: sync, then ${SETTLE_SECS} s idle"
} >"$OUT/settings.txt"

T0=$SECONDS
if [ "$SWEEP" = 1 ]; then
  for s in $SYSTEMS; do
    can_pipeline "$s" || continue
    log "sweep: $s"
    start_system "$s" sweep || {
      echo "$s sweep: did not start" >>"$FAILURES"
      stop_system
      continue
    }
    sweep_system "$s"
    stop_system
  done
else
  read -r -a ORDER <<<"$SYSTEMS"
  n=${#ORDER[@]}
  for r in $(seq "$RUNS"); do
    for i in $(seq 0 $((n - 1))); do
      s="${ORDER[$(((i + r - 1) % n))]}"
      log "run $r/$RUNS: $s ($((SECONDS - T0)) s so far)"
      start_system "$s" "$r" || {
        echo "$s run $r: did not start" >>"$FAILURES"
        stop_system
        continue
      }
      run_system "$s" "$r"
      stop_system
    done
  done
fi
versions
log "done in $((SECONDS - T0)) s: $RESULTS ($(wc -l <"$RESULTS") rows), $(wc -l <"$FAILURES") failures"
log "report: docs/benchmarks/tools/report.py $OUT"
