#!/bin/bash
# ab14.sh OUT RUNS: P1-P3 with the same load generator (this tree's) against the server before
# issue 18 (267cb3f) and after (NEW), alternating; per run, side and case a fresh server and data dir.
OUT=$1; RUNS=${2:-3}; NEW=${3:-/work/bench18/baton-s14b}
G=$NEW
URL=http://127.0.0.1:6632
for r in $(seq $RUNS); do
  for side in old new; do
    S=$([ $side = old ] && echo /work/bench18/baton-267cb3f || echo $NEW)
    for case in "produce" "consume" "b1 150000" "b10 600000"; do
      set -- $case
      rm -rf /tmp/ab-data; $S serve --data-dir /tmp/ab-data --kafka-addr 127.0.0.1:0 >/dev/null 2>&1 </dev/null & SP=$!
      for _ in $(seq 200); do curl -sf $URL/health >/dev/null && break; sleep 0.05; done
      if [ $1 = produce ]; then
        $G bench produce --url $URL --workers 32 --batch 1 --partitions 8 --duration 10 \
          --json-out $OUT --label "$side-produce-r$r" --no-progress >/dev/null 2>&1
      elif [ $1 = consume ]; then
        $G bench produce --url $URL --workers 8 --size 256 --batch 100 --duration 10 --json-out $OUT.fill --label "$side-fill-r$r" --no-progress >/dev/null 2>&1
        $G bench consume --url $URL --workers 8 --batch 100 --json-out $OUT --label "$side-consume-r$r" --no-progress >/dev/null 2>&1
      else
        $G bench pipeline --url $URL --partitions 200 --workers 256 --batch ${1#b} --count $2 \
          --json-out $OUT --label "$side-$1-r$r" --no-progress >/dev/null 2>&1
      fi
      kill -TERM $SP; wait $SP
    done
  done
done
