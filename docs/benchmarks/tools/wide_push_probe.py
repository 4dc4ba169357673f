#!/usr/bin/env python3
"""How long one wide push holds other pushes back (D80).

Usage: wide_push_probe.py HTTP_PORT N [QUEUE] [push|txn|timers]

With WARM_S=s in the environment, the same wide request first goes to a queue of its own,
and the measured one follows s seconds later.

Sends ONE push (or, with `txn`, one POST /api/v1/transaction with one push operation; with
`timers`, N timers due in 2 s, each pushing to its own new partition, and the "wide push"
lasts until the last has fired) of N items, each to its own new partition of QUEUE (default "wide"),
while a probe pushes one message to an existing partition ("probe"/"0") every 10 ms,
one at a time, from another connection. Prints one JSON line: the wide push's time,
and the probes' count, p50 and max latency over the wide push's duration. Bounded:
the probe loop stops when the wide push answers or after 300 s.
"""
import json, sys, threading, time, urllib.error, urllib.request

port, n = sys.argv[1], int(sys.argv[2])
queue = sys.argv[3] if len(sys.argv) > 3 else "wide"
mode = sys.argv[4] if len(sys.argv) > 4 else "push"
url = f"http://127.0.0.1:{port}/api/v1/push"


def push(items, timeout=300, txn=False):
    body = {"operations": [{"type": "push", "items": items}]} if txn else {"items": items}
    req = urllib.request.Request(url.replace("push", "transaction") if txn else url, data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        return {"status": e.code, **json.loads(e.read())}


push([{"queue": "probe", "partition": "0", "payload": {"warm": 1}}])
warm = int(__import__("os").environ.get("WARM_S", "0"))
if warm:
    # WARM_S=s: the same wide request to a queue of its own first, then s seconds for the
    # server to make what a burst like it needs (D81's spare partition directories).
    push([{"queue": queue + "-warm", "partition": f"p{i}", "payload": {"i": i}} for i in range(n)], txn=mode == "txn")
    time.sleep(warm)
done = threading.Event()
wide = {}


def partitions():
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as r:
        return int(json.loads(r.read())["metrics"]["baton_partitions"])


def run_timers():
    import base64
    body = {"operations": [{"op": "schedule", "queue": queue, "timerKey": f"k{i}", "partition": f"p{i}",
                            "payload": base64.b64encode(json.dumps({"i": i}).encode()).decode(),
                            "delayMs": 2000} for i in range(n)]}
    req = urllib.request.Request(url.replace("push", "timers"), data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    urllib.request.urlopen(req, timeout=300).read()
    t = time.time()
    while partitions() < n + 1 and time.time() < t + 120:
        time.sleep(0.005)
    wide["s"] = round(time.time() - t, 3)
    wide["queued"] = partitions() - 1
    done.set()


def run_wide():
    if mode == "timers":
        return run_timers()
    t = time.time()
    res = push([{"queue": queue, "partition": f"p{i}", "payload": {"i": i}} for i in range(n)], txn=mode == "txn")
    wide["s"] = round(time.time() - t, 3)
    if mode == "txn":
        wide["queued"] = n if res.get("success") else 0
        wide["refused"] = res.get("code")
    else:
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
print(json.dumps({"mode": mode, "n": n, "wide_s": wide.get("s"), "wide_queued": wide.get("queued"), "refused": wide.get("refused"), "probes": len(lat),
                  "probe_p50_ms": round(lat[len(lat) // 2] * 1000, 1) if lat else None,
                  "probe_max_ms": round(lat[-1] * 1000, 1) if lat else None}))
