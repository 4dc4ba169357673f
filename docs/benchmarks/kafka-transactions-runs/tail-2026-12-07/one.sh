#!/usr/bin/env bash
# one.sh LABEL BATON_CPUS DRIVER_CPUS GOMAXPROCS RATE
set -u
label=$1 bc=$2 dc=$3 gp=$4 rate=$5
D=/tmp/pin/data; rm -rf $D
pre_b=""; [ "$bc" != all ] && pre_b="taskset -c $bc"
pre_d=""; [ "$dc" != all ] && pre_d="taskset -c $dc"
$pre_b ${BIN:-/work/main/target/release/baton} serve --data-dir $D --http-addr 127.0.0.1:26732 --kafka-addr 127.0.0.1:29492 --kafka-initial-rebalance-delay-ms 0 >/dev/null 2>/tmp/pin/baton-$label.log </dev/null &
BP=$!
for _ in $(seq 100); do curl -sf http://127.0.0.1:26732/health >/dev/null && break; sleep 0.1; done
env ${gp:+GOMAXPROCS=$gp} $pre_d timeout 200 /tmp/kt-bin/kafka-txn -brokers 127.0.0.1:29492 -label baton -run "$label-$(date +%s)" -partitions 200 -messages 300000 -k 1 -workers 64 -duration 20 -warmup 5 -rate $rate -server-pid $BP -no-verify > /tmp/pin/res-$label.json 2>/tmp/pin/drv-$label.log
kill -TERM $BP; wait $BP
python3 -c "
import json,sys; d=json.loads(open('/tmp/pin/res-$label.json').read().strip().splitlines()[-1]); c=d['commit']; w=d.get('window_cpu',{})
print('$label', d['tx_per_s'], 'p50', c['p50_ms'], 'p99', c['p99_ms'], 'srv', w.get('server_cores'), 'drv', w.get('driver_cores'))"
