#!/bin/bash
# Produce through Kafka clients, 256 B, acks=all, linger 5 ms, 256 workers x 1 record:
# Baton's Kafka listener vs Apache Kafka, interleaved, 3 runs each, 15 s.
# Usage: kafka_produce.sh [OUT.jsonl] (rows appended; the markdown rows printed).
cd "$(dirname "$0")/../../.."
OUT=${1:-docs/benchmarks/2026-11-29/kafka-produce.jsonl}
B=target/release/baton
for r in 1 2 3; do
  rm -rf /tmp/kb-data; $B serve --data-dir /tmp/kb-data >/dev/null 2>/tmp/kb.log </dev/null & SP=$!
  for _ in $(seq 100); do curl -sf http://127.0.0.1:6632/health >/dev/null && break; sleep 0.05; done
  $B bench produce --target baton-kafka --workers 256 --batch 1 --size 256 --linger-ms 5 --duration 15 --partitions 8 --queue kp$r --json-out $OUT --label "kafka-a-r$r" --no-progress 2>&1 | grep "^| produce"
  kill -TERM $SP; wait $SP
  scripts/peers/kafka.sh clean >/dev/null 2>&1; scripts/peers/kafka.sh start >/dev/null 2>&1
  $B bench produce --target kafka --workers 64 --batch 1 --size 256 --linger-ms 5 --duration 10 --partitions 8 --queue warm$r --no-progress >/dev/null 2>&1
  $B bench produce --target kafka --workers 256 --batch 1 --size 256 --linger-ms 5 --duration 15 --partitions 8 --queue kp$r --json-out $OUT --label "kafka-a-r$r" --no-progress 2>&1 | grep "^| produce"
  scripts/peers/kafka.sh stop >/dev/null 2>&1
done
