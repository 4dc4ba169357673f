#!/bin/bash
# ab-consume.sh OUT RUNS: P2 (consume) before issue 18 (267cb3f) and after, alternating: a fresh
# server and data dir per run and side; produce 100 x 256 B for 10 s (8 workers), then consume
# it all (pop 100 + ack 100, 8 workers). The load generator is this tree's for both.
OUT=$1; RUNS=${2:-3}
G=/work/bench18/baton-final2
URL=http://127.0.0.1:6632
for r in $(seq $RUNS); do
  for side in old new; do
    S=$([ $side = old ] && echo /work/bench18/baton-267cb3f || echo /work/bench18/baton-final2)
    rm -rf /tmp/ab-data; $S serve --data-dir /tmp/ab-data --kafka-addr 127.0.0.1:0 >/dev/null 2>&1 </dev/null & SP=$!
    for _ in $(seq 200); do curl -sf $URL/health >/dev/null && break; sleep 0.05; done
    $G bench produce --url $URL --workers 8 --size 256 --batch 100 --duration 10 --json-out $OUT --label "$side-produce100-r$r" --no-progress >/dev/null 2>&1
    $G bench consume --url $URL --workers 8 --batch 100 --json-out $OUT --label "$side-consume-r$r" --no-progress >/dev/null 2>&1
    kill -TERM $SP; wait $SP
  done
done
