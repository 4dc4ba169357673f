#!/bin/bash
# One run of kafka-endtxn-probe (tools/kafka-endtxn-probe, D82) on a fresh server and data
# directory. Usage: endtxn_probe_run.sh BIN PROBE N LABEL [WARM]
# Starts BIN serve on 127.0.0.1:26751 (Kafka 26752) with its data in /tmp/endtxn-probe/data,
# prints "LABEL <the probe's JSON line>", and stops the server it started.
set -u
dir=/tmp/endtxn-probe
rm -rf "$dir/data" && mkdir -p "$dir"
"$1" serve --data-dir "$dir/data" --http-addr 127.0.0.1:26751 --kafka-addr 127.0.0.1:26752 \
    --kafka-initial-rebalance-delay-ms 0 > "$dir/log" 2>&1 &
pid=$!
sleep 2
echo "$4 $("$2" -brokers 127.0.0.1:26752 -partitions "$3" -warm "${5:-0s}")"
kill "$pid"; wait "$pid" 2>/dev/null
