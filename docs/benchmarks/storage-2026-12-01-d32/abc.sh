#!/bin/bash
# abc.sh OUT RUNS OLD NEW: P2 consume only, alternating, fresh server and data dir each.
OUT=$1; RUNS=$2; OLD=$3; NEW=$4; URL=http://127.0.0.1:6632
for r in $(seq $RUNS); do for side in old new; do
  S=$([ $side = old ] && echo $OLD || echo $NEW)
  rm -rf /tmp/ab-data; $S serve --data-dir /tmp/ab-data --kafka-addr 127.0.0.1:0 >/dev/null 2>&1 </dev/null & SP=$!
  for _ in $(seq 200); do curl -sf $URL/health >/dev/null && break; sleep 0.05; done
  $NEW bench produce --url $URL --workers 8 --size 256 --batch 100 --duration 10 --json-out $OUT.fill --label "$side-fill-r$r" --no-progress >/dev/null 2>&1
  $NEW bench consume --url $URL --workers 8 --batch 100 --json-out $OUT --label "$side-consume-r$r" --no-progress >/dev/null 2>&1
  kill -TERM $SP; wait $SP
done; done
