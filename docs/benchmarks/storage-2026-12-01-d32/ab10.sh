#!/bin/bash
# ab10.sh OUT RUNS OLD NEW: P3 pipeline batch 10 only, alternating, fresh server and data dir each.
OUT=$1; RUNS=$2; OLD=$3; NEW=$4; URL=http://127.0.0.1:6632
for r in $(seq $RUNS); do for side in old new; do
  S=$([ $side = old ] && echo $OLD || echo $NEW)
  rm -rf /tmp/ab-data; $S serve --data-dir /tmp/ab-data --kafka-addr 127.0.0.1:0 >/dev/null 2>&1 </dev/null & SP=$!
  for _ in $(seq 200); do curl -sf $URL/health >/dev/null && break; sleep 0.05; done
  $NEW bench pipeline --url $URL --partitions 200 --workers 256 --batch 10 --count 600000 --json-out $OUT --label "$side-b10-r$r" --no-progress >/dev/null 2>&1
  kill -TERM $SP; wait $SP
done; done
