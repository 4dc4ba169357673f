#!/usr/bin/env python3
"""How long one wide push holds other pushes back (D80).

Usage: wide_push_probe.py HTTP_PORT N [QUEUE]

Sends ONE push of N items, each to its own new partition of QUEUE (default "wide"),
while a probe pushes one message to an existing partition ("probe"/"0") every 10 ms,
one at a time, from another connection. Prints one JSON line: the wide push's time,
and the probes' count, p50 and max latency over the wide push's duration. Bounded:
the probe loop stops when the wide push answers or after 300 s.
"""
import json, sys, threading, time, urllib.request

port, n = sys.argv[1], int(sys.argv[2])
queue = sys.argv[3] if len(sys.argv) > 3 else "wide"
url = f"http://127.0.0.1:{port}/api/v1/push"


def push(items, timeout=300):
    req = urllib.request.Request(url, data=json.dumps({"items": items}).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


push([{"queue": "probe", "partition": "0", "payload": {"warm": 1}}])
done = threading.Event()
wide = {}


def run_wide():
    t = time.time()
    res = push([{"queue": queue, "partition": f"p{i}", "payload": {"i": i}} for i in range(n)])
    wide["s"] = round(time.time() - t, 3)
    wide["queued"] = sum(1 for r in res if r.get("status") == "queued")
    done.set()


th = threading.Thread(target=run_wide)
th.start()
lat = []
stop = time.time() + 300
while not done.is_set() and time.time() < stop:
    t = time.time()
    push([{"queue": "probe", "partition": "0", "payload": {"p": 1}}])
    lat.append(time.time() - t)
    time.sleep(0.01)
th.join()
lat.sort()
print(json.dumps({"n": n, "wide_s": wide.get("s"), "wide_queued": wide.get("queued"), "probes": len(lat),
                  "probe_p50_ms": round(lat[len(lat) // 2] * 1000, 1) if lat else None,
                  "probe_max_ms": round(lat[-1] * 1000, 1) if lat else None}))
