#!/bin/bash
# series.sh OUT.jsonl [RUNS] -- the four issue-2 cases, each on a fresh server
# and data directory, RUNS times (default 3). The half-rate case (4) offers half
# of the run's own case-(1) figure, for 40 s so that a checkpoint (every 30 s) falls inside. Run from the repository root after
# `cargo build --release`; nothing else should be running.
set -u
OUT=${1:?output jsonl}; RUNS=${2:-3}
B=target/release/baton
start() { rm -rf /tmp/bench-data; $B serve --data-dir /tmp/bench-data >/dev/null 2>/tmp/bench-server.log </dev/null & SP=$!
  for _ in $(seq 100); do curl -sf http://127.0.0.1:6632/health >/dev/null && break; sleep 0.05; done; }
stop() { kill -TERM $SP; wait $SP 2>/dev/null; }
for r in $(seq "$RUNS"); do
  start; $B bench produce --workers 32 --size 256 --batch 1 --duration 15 --json-out "$OUT" --label "p1-r$r" --no-progress; stop
  rate=$(python3 -c "import json,sys; print(int([json.loads(l) for l in open('$OUT') if '\"p1-r$r\"' in l][-1]['rate']/2))")
  start; $B bench produce --workers 8 --size 256 --batch 100 --duration 10 --json-out "$OUT" --label "p100-r$r" --no-progress
  $B bench consume --workers 8 --batch 100 --json-out "$OUT" --label "consume-r$r" --no-progress; stop
  start; $B bench fixed --workers 64 --size 256 --batch 1 --rate "$rate" --duration 40 --json-out "$OUT" --label "half-r$r" --no-progress; stop
done
