#!/usr/bin/env bash
# D88 A/B: consumers through both doors, ABBA order against the machine's drift.
# HTTP: pop 100 + ack 100, 8 workers, 200,000 prefilled 256 B messages.
# Kafka: the bench's Kafka consumers (Fetch), 4 workers, $PREFILL prefilled.
# Series 1: defaults. Series 2 (Kafka only, longer runs): HTTP=0 PREFILL=1000000.
OLD=${OLD:-/tmp/ab-old/target/release/baton} NEW=${NEW:-$PWD/target/release/baton}
OUT=${OUT:-/tmp/d88-ab.txt} PREFILL=${PREFILL:-200000} HTTP=${HTTP:-1}
for label in new old old new new old old new; do
  bin=$OLD; [ $label = new ] && bin=$NEW
  if [ "$HTTP" = 1 ]; then
    r=$(cd /tmp && timeout 300 $bin bench consume --target baton --spawn --server-bin $bin --workers 8 --prefill 200000 --size 256 --batch 100 2>&1 | grep "^| consume" | awk -F'|' '{print $11, $12, $14}')
    echo "http-consume $label msg/s p50 p99: $r" | tee -a $OUT
  fi
  dir=$(mktemp -d /tmp/d88-ab.XXXX)
  $bin serve --data-dir $dir --http-addr 127.0.0.1:17632 --kafka-addr 127.0.0.1:19092 >$dir/log 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do curl -sf http://127.0.0.1:17632/health >/dev/null && break; sleep 0.1; done
  r=$(cd /tmp && timeout 300 $bin bench consume --target baton-kafka --addr 127.0.0.1:19092 --workers 4 --prefill $PREFILL --size 256 --batch 100 2>&1 | grep "^| consume" | awk -F'|' '{print $11, $12, $14}')
  echo "kafka-consume $label msg/s p50 p99: $r" | tee -a $OUT
  kill $pid; wait $pid 2>/dev/null; rm -rf $dir
done
