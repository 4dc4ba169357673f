#!/bin/bash
# Produce through Kafka clients (librdkafka), 256 B records, acks=all, linger 5 ms,
# 8 partitions, 15 s: Baton's Kafka listener vs Apache Kafka, at several numbers of
# records in flight (workers x 1 record each), 3 runs.
# Usage: kafka_produce.sh [OUT.jsonl] [IN_FLIGHT...] (default 256 1024 4096); rows appended
# to OUT labelled kafka-w<in flight>-r<run>, the markdown rows printed.
#
# Each run: Baton first (a fresh server and data directory per level), then Apache
# Kafka (started fresh, warmed up 10 s unmeasured, a fresh topic per level), so the two
# figures of a level are at most a couple of minutes apart. At 256 in flight the loop is
# latency-bound (256 / (linger + round trip)); with more in flight it approaches each
# broker's capacity on these 2 cores, shared with the load generator.
cd "$(dirname "$0")/../../.."
OUT=${1:-docs/benchmarks/kafka-produce.jsonl}
shift
LEVELS=${*:-256 1024 4096}
B=target/release/baton
run() { # target workers queue label
  $B bench produce --target "$1" --workers "$2" --batch 1 --size 256 --linger-ms 5 --duration 15 --partitions 8 \
    --queue "$3" --json-out "$OUT" --label "$4" --no-progress 2>&1 | grep "^| produce"
}
for r in 1 2 3; do
  for w in $LEVELS; do
    rm -rf /tmp/kb-data; $B serve --data-dir /tmp/kb-data >/dev/null 2>/tmp/kb.log </dev/null & SP=$!
    for _ in $(seq 100); do curl -sf http://127.0.0.1:6632/health >/dev/null && break; sleep 0.05; done
    run baton-kafka "$w" "kp$r-$w" "kafka-w$w-r$r"
    kill -TERM $SP; wait $SP
  done
  scripts/peers/kafka.sh clean >/dev/null 2>&1; scripts/peers/kafka.sh start >/dev/null 2>&1
  $B bench produce --target kafka --workers 64 --batch 1 --size 256 --linger-ms 5 --duration 10 --partitions 8 \
    --queue "warm$r" --no-progress >/dev/null 2>&1
  for w in $LEVELS; do run kafka "$w" "kp$r-$w" "kafka-w$w-r$r"; done
  scripts/peers/kafka.sh stop >/dev/null 2>&1
done
