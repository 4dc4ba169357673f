#!/usr/bin/env bash
# nice.sh LABEL RATE MODE   (MODE: none | nice | fifo | niceall)
set -u
label=$1 rate=$2 mode=$3
D=/tmp/pin/data; rm -rf $D
/work/main/target/release/baton serve --data-dir $D --http-addr 127.0.0.1:26732 --kafka-addr 127.0.0.1:29492 --kafka-initial-rebalance-delay-ms 0 >/dev/null 2>/tmp/pin/baton-$label.log </dev/null &
BP=$!
for _ in $(seq 100); do curl -sf http://127.0.0.1:26732/health >/dev/null && break; sleep 0.1; done
for t in /proc/$BP/task/*; do
  c=$(cat $t/comm); tid=${t##*/}
  case "$mode:$c" in
    nice:baton-planner|nice:baton-wal) renice -n -10 -p $tid >/dev/null;;
    niceall:*) renice -n -10 -p $tid >/dev/null;;
    fifo:baton-planner|fifo:baton-wal) chrt -f -p 10 $tid;;
  esac
done
timeout 200 /tmp/kt-bin/kafka-txn -brokers 127.0.0.1:29492 -label baton -run "$label-$(date +%s)" -partitions 200 -messages 300000 -k 1 -workers 64 -duration 20 -warmup 5 -rate $rate -server-pid $BP -no-verify > /tmp/pin/res-$label.json 2>/tmp/pin/drv-$label.log
kill -TERM $BP; wait $BP
python3 -c "
import json,sys; d=json.loads(open('/tmp/pin/res-$label.json').read().strip().splitlines()[-1]); c=d['commit']; w=d.get('window_cpu',{})
print('$label', '$mode', '$rate', d['tx_per_s'], 'p50', c['p50_ms'], 'p99', c['p99_ms'], 'srv', w.get('server_cores'), 'drv', w.get('driver_cores'), w.get('server_ms_per_txn'))" | tee -a /tmp/pin/nice-results.txt
