#!/usr/bin/env bash
# HTTP push closed loop, ABBA order against the machine's drift.
OLD=${OLD:-/tmp/ab-old/target/release/baton} NEW=${NEW:-$PWD/target/release/baton}
for label in new old old new new old old new; do
  bin=$OLD; [ $label = new ] && bin=$NEW
  r=$(cd /tmp && timeout 120 $bin bench produce --target baton --spawn --server-bin $bin --workers 32 --duration 10 --size 256 --batch 1 2>&1 | grep "^| produce" | awk -F'|' '{print $11, $12, $14}')
  echo "http-push $label msg/s p50 p99: $r" | tee -a ${OUT:-/tmp/d87-ab-http.txt}
done
