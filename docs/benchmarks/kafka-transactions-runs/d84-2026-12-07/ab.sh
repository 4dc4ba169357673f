#!/usr/bin/env bash
# ab.sh LABEL BIN RATE
set -u
label=$1 bin=$2 rate=$3
D=/tmp/pin/data; rm -rf $D
$bin serve --data-dir $D --http-addr 127.0.0.1:26732 --kafka-addr 127.0.0.1:29492 --kafka-initial-rebalance-delay-ms 0 >/dev/null 2>/tmp/pin/baton-$label.log </dev/null &
BP=$!
for _ in $(seq 100); do curl -sf http://127.0.0.1:26732/health >/dev/null && break; sleep 0.1; done
timeout 200 /tmp/kt-bin/kafka-txn -brokers 127.0.0.1:29492 -label baton -run "$label-$(date +%s)" -partitions 200 -messages 400000 -k 1 -workers 64 -duration 20 -warmup 5 -rate $rate -server-pid $BP -no-verify > /tmp/pin/res-$label.json 2>/tmp/pin/drv-$label.log
here=$(curl -s http://127.0.0.1:26732/metrics/prometheus | grep -E "^baton_wal_batches(_by_submitter)?_total" | awk '{print $2}' | tr '\n' ' ')
kill -TERM $BP; wait $BP
python3 -c "
import json,sys; d=json.loads(open('/tmp/pin/res-$label.json').read().strip().splitlines()[-1]); c=d['commit']; w=d.get('window_cpu',{}); r=d['requests']
print('$label', '$rate', d['tx_per_s'], 'p50', c['p50_ms'], 'p99', c['p99_ms'], 'srv', w.get('server_cores'), 'drv', w.get('driver_cores'), 'srv_ms/tx', w.get('server_ms_per_txn'), 'prodp99', r['Produce']['p99_ms'], 'endp99', r['EndTxn']['p99_ms'], 'wal', '$here')" | tee -a /tmp/pin/ab-results.txt
