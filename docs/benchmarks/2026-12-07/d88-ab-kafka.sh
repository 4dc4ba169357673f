#!/usr/bin/env bash
# D88 A/B, Kafka consumers only, longer runs: 1,000,000 prefilled 256 B records, 4 workers, ABBA.
OLD=${OLD:-/tmp/ab-old/target/release/baton} NEW=${NEW:-$PWD/target/release/baton}
OUT=${OUT:-/tmp/d88-ab-kafka.txt}
for label in new old old new new old old new; do
  bin=$OLD; [ $label = new ] && bin=$NEW
  dir=$(mktemp -d /tmp/d88-ab.XXXX)
  $bin serve --data-dir $dir --http-addr 127.0.0.1:17632 --kafka-addr 127.0.0.1:19092 >$dir/log 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do curl -sf http://127.0.0.1:17632/health >/dev/null && break; sleep 0.1; done
  r=$(cd /tmp && timeout 300 $bin bench consume --target baton-kafka --addr 127.0.0.1:19092 --workers 4 --prefill 1000000 --size 256 --batch 100 2>&1 | grep "^| consume" | awk -F'|' '{print $11, $12, $14}')
  echo "kafka-consume $label msg/s p50 p99: $r" | tee -a $OUT
  kill $pid; wait $pid 2>/dev/null; rm -rf $dir
done
