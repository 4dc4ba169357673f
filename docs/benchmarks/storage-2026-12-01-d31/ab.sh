#!/bin/bash
# ab.sh OUT RUNS: the same load generator (this tree's) against the server before issue 18
# (267cb3f) and after, alternating; per run and per side a fresh server and data directory.
OUT=$1; RUNS=${2:-3}
G=/work/bench18/baton-x
URL=http://127.0.0.1:6632
for r in $(seq $RUNS); do
  for side in old new; do
    S=$([ $side = old ] && echo /work/bench18/baton-267cb3f || echo /work/bench18/baton-x)
    for case in "produce" "b1 150000" "b10 600000"; do
      set -- $case
      rm -rf /tmp/ab-data; $S serve --data-dir /tmp/ab-data --kafka-addr 127.0.0.1:0 >/dev/null 2>&1 </dev/null & SP=$!
      for _ in $(seq 200); do curl -sf $URL/health >/dev/null && break; sleep 0.05; done
      if [ $1 = produce ]; then
        $G bench produce --url $URL --workers 32 --batch 1 --partitions 8 --duration 10 \
          --json-out $OUT --label "$side-produce-r$r" --no-progress >/dev/null 2>&1
      else
        $G bench pipeline --url $URL --partitions 200 --workers 256 --batch ${1#b} --count $2 \
          --json-out $OUT --label "$side-$1-r$r" --no-progress >/dev/null 2>&1
      fi
      kill -TERM $SP; wait $SP
    done
  done
done
