#!/bin/bash
# One run of wide_push_probe.py on a fresh server and data directory (D80, D81).
# Usage: wide_probe_run.sh BIN MODE N LABEL   (MODE: push, txn or timers; WARM_S passes through)
# Starts BIN serve on 127.0.0.1:26741 (Kafka 26742) with its data in /tmp/wide-probe/data,
# prints "LABEL <the probe's JSON line>", and stops the server it started.
set -u
dir=/tmp/wide-probe
rm -rf "$dir/data" && mkdir -p "$dir"
"$1" serve --data-dir "$dir/data" --http-addr 127.0.0.1:26741 --kafka-addr 127.0.0.1:26742 > "$dir/log" 2>&1 &
pid=$!
sleep 2
echo "$4 $(python3 "$(dirname "$0")/wide_push_probe.py" 26741 "$3" wide "$2")"
kill "$pid"; wait "$pid" 2>/dev/null
