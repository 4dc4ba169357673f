#!/bin/bash
# case.sh LABEL -- bench args...   (server started fresh; per-thread CPU of server reported)
# Env: KEEP=1 keeps the server running for the next call (prints nothing about it); REUSE=1 uses a running one.
B=/tmp/benchrun/baton
OUT=/tmp/benchrun
label=$1; shift
python3 $OUT/quiet.py 90 240
if [ -z "$REUSE" ]; then
  rm -rf /tmp/bench-data
  nice -n -10 $B serve --data-dir /tmp/bench-data >/dev/null 2>$OUT/server.log </dev/null &
  echo $! > $OUT/server.pid
  for i in $(seq 100); do curl -sf http://127.0.0.1:6632/health >/dev/null && break; sleep 0.05; done
fi
SP=$(cat $OUT/server.pid)
echo "=== $label  (load before: $(cut -d' ' -f1-3 /proc/loadavg))"
python3 $OUT/threads.py snap $SP $OUT/a.json
python3 $OUT/cpu.py snap $OUT/ca
t0=$(date +%s.%N)
nice -n -10 /usr/bin/time -o $OUT/time.txt -f "bench process: user %U s, sys %S s, wall %e s" $B bench "$@" --json-out $OUT/results2.jsonl --label "$label" --no-progress
t1=$(date +%s.%N)
cat $OUT/time.txt
python3 $OUT/threads.py snap $SP $OUT/b.json
python3 $OUT/cpu.py snap $OUT/cb
python3 $OUT/cpu.py diff $OUT/ca $OUT/cb | tee $OUT/machine.txt
echo "server threads during the run:"
python3 $OUT/threads.py diff $OUT/a.json $OUT/b.json $(python3 -c "print($t1-$t0)") | tee $OUT/threads.txt
python3 $OUT/other.py | tee $OUT/other.txt
if [ -z "$KEEP" ]; then kill -TERM $SP; wait $SP 2>/dev/null; fi
