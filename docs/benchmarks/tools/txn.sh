#!/bin/bash
# txn.sh OUT.jsonl [RUNS] -- issue #3's transaction benchmarks on Baton alone:
# the take-work-commit pipeline over 200 input and 200 output partitions,
# (a) one message per transaction, (b) ten per transaction, both closed loop,
# then (c) one per transaction open loop at half of (a)'s rate, for the commit
# p99: 32 s of steps, the first 2 s a warm-up left out of the latencies
# (connections, first reads of each partition, the output partitions made on
# first push), so the figure is the steady state, checkpoints included. Each case on a fresh server and data directory, RUNS times (default 3).
# After each run it scrapes /metrics and prints the server's CPU per committed
# transaction by thread (planner, WAL, HTTP runtime): the planner's cost per
# transaction, and the server-side latency of the commit requests (from
# /metrics, at bucket resolution) next to the client's. Run from the repository root after `cargo build --release`;
# nothing else should be running.
set -u
OUT=${1:?output jsonl}; RUNS=${2:-3}
B=target/release/baton
URL=http://127.0.0.1:6632
start() { # a server left running on the port would be measured instead of this one
  if curl -sf $URL/health >/dev/null; then echo "txn.sh: something already answers on $URL; stop it first" >&2; exit 1; fi
  rm -rf /tmp/txn-bench-data; $B serve --data-dir /tmp/txn-bench-data >/dev/null 2>/tmp/txn-bench-server.log </dev/null & SP=$!
  for _ in $(seq 100); do curl -sf $URL/health >/dev/null && break; sleep 0.05; done; }
stop() { kill -TERM $SP; wait $SP 2>/dev/null; }
cpu() { # label: server CPU per committed transaction, by thread; server-side commit latency
  curl -s $URL/metrics/prometheus | python3 -c '
import sys
d, commit = {}, []
for l in sys.stdin:
    if l.startswith("baton_thread_cpu_seconds_total") or l.startswith("baton_transactions_total"):
        k, v = l.rsplit(" ", 1); d[k] = float(v)
    if l.startswith("baton_http_request_duration_seconds_bucket{method=\"POST\",route=\"/api/v1/transaction\""):
        commit.append((l.split("le=\"")[1].split("\"")[0], int(l.rsplit(" ", 1)[1])))
t = d.get("baton_transactions_total", 0) or 1
parts = ", ".join(f"{k.split(chr(34))[1]} {v * 1e6 / t:.1f}" for k, v in sorted(d.items()) if "thread" in k)
print(f"'"$1"': server CPU us per transaction: {parts}")
if commit and commit[-1][1]:
    n = commit[-1][1]
    q = lambda f: next(le for le, c in commit if c >= f * n)
    print(f"'"$1"': server-side commit latency (histogram bucket bounds, s): p50 <= {q(0.5)}, p99 <= {q(0.99)}, p99.9 <= {q(0.999)}")'; }
run() { # label batch count [extra...]
  local label=$1 batch=$2 count=$3; shift 3
  $B bench pipeline --url $URL --partitions 200 --workers 256 --batch "$batch" --count "$count" \
    --json-out "$OUT" --label "$label" --no-progress "$@" 2>&1 | grep -E "tx/s|commit alone"
  cpu "$label"; }
for r in $(seq "$RUNS"); do
  start; run "txn1-r$r" 1 150000; stop
  start; run "txn10-r$r" 10 600000; stop
  rate=$(python3 -c "import json; print(int([json.loads(l) for l in open('$OUT') if '\"txn1-r$r\"' in l][-1]['pipeline']['transactions_per_sec']/2))")
  start; run "txn1-half-r$r" 1 $((rate * 32)) --pipeline-rate "$rate" --warmup-secs 2; stop
done
