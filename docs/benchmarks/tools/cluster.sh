#!/bin/bash
# cluster.sh OUT RUNS: replicated throughput against a single node, measured in the same run
# (issue 14). Per run and per side, a fresh server (or a fresh three-member cluster from
# scripts/cluster, driven at its leader) and data directory, then:
#   the one-message transaction pipeline: bench pipeline --partitions 200 --workers 256 --batch 1 --count 60000
#   push of 100 x 256 B per request:      bench produce --batch 100 --size 256 --workers 16 --duration 10
# The load generator runs on the same 2 cores as every server.
# PUSH_BODY=binary sends the pushes as Queen's binary push body (default json);
# PIPELINE=0 skips the pipeline; PUSH=0 skips the push.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=$1; RUNS=${2:-3}
G=target/release/baton
export BATON_CLUSTER_DIR=/tmp/bench-cluster
BODY=${PUSH_BODY:-json}
measure() { # side url run
  if [ "${PIPELINE:-1}" = 1 ]; then
    $G bench pipeline --url "$2" --partitions 200 --workers 256 --batch 1 --count 60000 \
      --json-out "$OUT" --label "$1-pipeline-r$3" --no-progress
  fi
  if [ "${PUSH:-1}" = 1 ]; then
    $G bench produce --url "$2" --batch 100 --size 256 --workers 16 --duration 10 --push-body "$BODY" \
      --json-out "$OUT" --label "$1-push100-$BODY-r$3" --no-progress
  fi
}
for r in $(seq "$RUNS"); do
  rm -rf /tmp/bench-single; $G serve --data-dir /tmp/bench-single --http-addr 127.0.0.1:6690 --kafka-addr 127.0.0.1:0 >/dev/null 2>&1 </dev/null & SP=$!
  for _ in $(seq 100); do curl -sf http://127.0.0.1:6690/health >/dev/null && break; sleep 0.05; done
  measure single http://127.0.0.1:6690 "$r"
  kill -TERM $SP; wait $SP || true
  rm -rf "$BATON_CLUSTER_DIR"; scripts/cluster up >/dev/null
  L=""
  for _ in $(seq 200); do
    for i in 1 2 3; do
      if curl -sf "http://127.0.0.1:664$i/cluster" | grep -q '"leading":true'; then L=$i; fi
    done
    [ -n "$L" ] && break; sleep 0.05
  done
  [ -n "$L" ] || { echo "no leader" >&2; scripts/cluster down; exit 1; }
  measure cluster "http://127.0.0.1:664$L" "$r"
  scripts/cluster down >/dev/null
done
