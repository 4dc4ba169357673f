#!/usr/bin/env bash
# Share-group consume (KIP-932, D49) through Java's KafkaShareConsumer
# (kafka-clients 4.2.1, the `share_bench` scenario of tests/kafka-compat/java):
# COUNT records of SIZE bytes are written first to a topic of PARTS partitions,
# then CONSUMERS members of a new share group accept every record one by one
# (explicit acknowledgement; each is settled in Baton as its own ack under the
# lease it was acquired with, and the answer to the fetch that carries it waits
# for the entry's fdatasync). Timed from the first record to the last
# acknowledgement committed. RUNS runs, each with a fresh group over the same
# records; the median is the figure.
#
# Usage: docs/benchmarks/tools/kafka-share.sh [OUT_DIR]   (default /tmp/kafka-share-results)
#
# Baton: a copy of target/release/baton at /tmp/baton-share-bench, HTTP on
# 127.0.0.1:26642, Kafka on 127.0.0.1:29402, data in /tmp/ks-baton-data,
# stopped by pid at the end. Needs the jar (mvn -q -B -f
# tests/kafka-compat/java/pom.xml package -DskipTests) and .venv (scripts/test).
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${1:-/tmp/kafka-share-results}
RUNS=${RUNS:-5}
COUNT=${COUNT:-300000}
SIZE=${SIZE:-256}
PARTS=${PARTS:-4}
CONSUMERS=${CONSUMERS:-1}
HTTP=127.0.0.1:26642
KAFKA=127.0.0.1:29402
DATA=/tmp/ks-baton-data
BIN=/tmp/baton-share-bench
JAR=tests/kafka-compat/java/target/baton-kafka-compat-all.jar
mkdir -p "$OUT"
[ -f "$JAR" ] || { echo "$JAR is missing: mvn -q -B -f tests/kafka-compat/java/pom.xml package -DskipTests" >&2; exit 1; }
cp target/release/baton "$BIN"
rm -rf "$DATA"
"$BIN" serve --http-addr "$HTTP" --kafka-addr "$KAFKA" --data-dir "$DATA" 2>"$OUT/baton.log" &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null' EXIT
for _ in $(seq 1 100); do
  (exec 3<>/dev/tcp/127.0.0.1/29402) 2>/dev/null && break
  sleep 0.1
done
TOPIC=share-bench
.venv/bin/python - "$KAFKA" "$TOPIC" "$PARTS" "$COUNT" "$SIZE" <<'EOF'
import sys
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
bootstrap, topic, parts, count, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
admin = AdminClient({"bootstrap.servers": bootstrap})
for f in admin.create_topics([NewTopic(topic, num_partitions=parts, replication_factor=1)]).values():
    f.result(timeout=30)
p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.num.messages": 10000})
value = b"x" * size
for i in range(count):
    while True:
        try:
            p.produce(topic, value=value, partition=i % parts)
            break
        except BufferError:
            p.poll(0.05)
p.flush(60)
print(f"wrote {count} records of {size} B to {parts} partitions", file=sys.stderr)
EOF
: > "$OUT/runs.txt"
# Records Baton settled for share consumers: every one the driver counts must be here.
acked() { curl -s "http://$HTTP/metrics/prometheus" | sed -n 's/^baton_kafka_share_acknowledged_total //p'; }
for r in $(seq 1 "$RUNS"); do
  before=$(acked)
  line=$(BATON_SHARE_COUNT=$COUNT BATON_SHARE_CONSUMERS=$CONSUMERS \
    java -jar "$JAR" share_bench "$KAFKA" "$TOPIC" "bench-$r-$RANDOM" 2>>"$OUT/driver.log" | grep '^share_bench')
  settled=$(( $(acked) - before ))
  echo "run $r: $line; Baton settled $settled" | tee -a "$OUT/runs.txt"
  [ "$settled" -ge "$COUNT" ] || echo "run $r: FAIL: Baton settled $settled of $COUNT" | tee -a "$OUT/runs.txt"
done
rates=$(sed -n 's/.*= \([0-9]*\) msg\/s.*/\1/p' "$OUT/runs.txt" | sort -n)
n=$(echo "$rates" | wc -l)
median=$(echo "$rates" | sed -n "$(( (n + 1) / 2 ))p")
echo "median of $n runs: $median msg/s (COUNT=$COUNT SIZE=$SIZE PARTS=$PARTS CONSUMERS=$CONSUMERS)" | tee -a "$OUT/runs.txt"
