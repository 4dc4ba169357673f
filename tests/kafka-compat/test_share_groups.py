"""Share groups (KIP-932, issue 15 item 4, D49) through Java's KafkaShareConsumer
(kafka-clients 4.2, the java/ program's `share_compete` scenario) competing with an
HTTP consumer of the same Baton consumer group, while a librdkafka producer writes.

Both consumers settle each value "s-i" the same way: i % 10 == 7 is rejected (Kafka
REJECT, HTTP `dlq`), i % 10 == 3 is released on its first delivery (Kafka RELEASE,
HTTP `failed`), the rest accepted (ACCEPT, `completed`). The verdict:

  - no two deliveries of one value carry the same delivery count: two consumers
    holding it at once would both be on the same delivery (Baton counts a delivery
    when a lease of it ends unsettled, I4);
  - every value is accepted exactly once, except the i % 10 == 7 ones, which are
    rejected exactly once, never accepted, and are all in the dead-letter queue;
  - every i % 10 == 3 value is delivered again after its release, with a higher count;
  - both consumers got records (they did compete).

Baton only: Apache Kafka 4.1 ships share groups as a preview, and Baton maps them
onto its own leases (docs/kafka.md, "Share groups").
"""

import json
import os
import subprocess
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import EXTERNAL

HERE = Path(__file__).resolve().parent
JAR = HERE / "java" / "target" / "baton-kafka-compat-all.jar"
N = 300
PARTITIONS = 3
RUN_TIMEOUT = 90  # seconds until every value is settled


def http(baton, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{baton.http_port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read().decode()
        return r.status, (json.loads(text) if text else None)


def index(value):
    return int(value.split("-", 1)[1])


def produce_slowly(bootstrap, topic, done):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(N):
        p.produce(topic, value=f"s-{i}".encode(), partition=i % PARTITIONS)
        if i % 10 == 9:
            p.flush(10)
            time.sleep(0.05)
    p.flush(10)
    done.set()


@pytest.mark.skipif(bool(EXTERNAL), reason="Baton's share groups; Apache Kafka 4.1 has them only as a preview")
def test_java_share_consumer_competes_with_an_http_consumer(baton, tmp_path):
    if not JAR.exists():
        pytest.fail(f"{JAR} is missing: build it with `mvn -q -B -f tests/kafka-compat/java/pom.xml package`")
    topic, group = f"share-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": baton.bootstrap})
    for f in admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)]).values():
        f.result(timeout=30)
    stop = tmp_path / "stop"
    out_path, err_path = tmp_path / "java.out", tmp_path / "java.err"
    java = subprocess.Popen(["java", "-jar", str(JAR), "share_compete", baton.bootstrap, topic, group],
                            env={**os.environ, "BATON_SHARE_STOP": str(stop)}, stdin=subprocess.DEVNULL,
                            stdout=open(out_path, "wb"), stderr=open(err_path, "wb"))
    produced = threading.Event()
    writer = threading.Thread(target=produce_slowly, args=(baton.bootstrap, topic, produced), daemon=True)
    writer.start()
    # value -> [(consumer, delivery count, outcome, settled ok)]
    seen = {}
    try:
        end = time.monotonic() + RUN_TIMEOUT
        while time.monotonic() < end:
            status, body = http(baton, "GET", f"/api/v1/pop/queue/{topic}?consumerGroup={group}&batch=3"
                                              f"&wait=true&timeout=200")
            if status == 200:
                acks = []
                for m in body["messages"]:
                    i, attempt = index(m["data"]), m["deliveryAttempt"]
                    st = "dlq" if i % 10 == 7 else "failed" if (i % 10 == 3 and attempt == 1) else "completed"
                    acks.append((m["data"], attempt, st, {"partitionId": m["partitionId"], "leaseId": m["leaseId"],
                                                         "offset": m["offset"], "status": st}))
                _, res = http(baton, "POST", "/api/v1/ack/batch",
                              {"consumerGroup": group, "acknowledgments": [a[3] for a in acks]})
                for (v, attempt, st, _), r in zip(acks, res):
                    seen.setdefault(v, []).append(("http", attempt, st, r["success"]))
            # Between pops (and every so often when idle), take in what Java settled.
            java_lines = out_path.read_text().splitlines()
            settled = set(v for v, ds in seen.items() if any(ok and o in ("completed", "dlq") for _, _, o, ok in ds))
            settled |= {ln.split()[1] for ln in java_lines
                        if ln.startswith("got ") and ln.split()[3] in ("ACCEPT", "REJECT")}
            if produced.is_set() and len(settled) >= N:
                break
            time.sleep(0.01 if status == 200 else 0.05)
    finally:
        stop.touch()
        try:
            java.wait(timeout=30)
        except subprocess.TimeoutExpired:
            java.kill()
            java.wait()
    lines = out_path.read_text().splitlines()
    err = err_path.read_text()[-3000:]
    assert java.returncode == 0, f"the Java share consumer exited {java.returncode}:\n{err}"
    assert not [ln for ln in lines if ln.startswith("ackfail")], f"acknowledgements refused: {lines}\n{err}"
    outcome = {"ACCEPT": "completed", "REJECT": "dlq", "RELEASE": "failed"}
    for ln in lines:
        if ln.startswith("got "):
            _, v, dc, t = ln.split()
            seen.setdefault(v, []).append(("java", int(dc), outcome[t], True))

    values = [f"s-{i}" for i in range(N)]
    missing = [v for v in values if v not in seen]
    assert not missing, f"never delivered: {missing[:20]} (java stderr: {err})"
    for v in values:
        ds = seen[v]
        counts = [d[1] for d in ds]
        assert len(counts) == len(set(counts)), f"{v} delivered twice on one delivery: {ds}"
        ok = [d for d in ds if d[3]]
        accepted = [d for d in ok if d[2] == "completed"]
        rejected = [d for d in ok if d[2] == "dlq"]
        if index(v) % 10 == 7:
            assert (len(accepted), len(rejected)) == (0, 1), f"{v}: {ds}"
        else:
            assert (len(accepted), len(rejected)) == (1, 0), f"{v}: {ds}"
        if index(v) % 10 == 3:
            assert min(counts) == 1 and accepted[0][1] >= 2, f"{v} released, then accepted again: {ds}"
    by = {c: sum(1 for ds in seen.values() for d in ds if d[0] == c) for c in ("java", "http")}
    assert by["java"] > 0 and by["http"] > 0, f"no competition: deliveries by consumer {by}"
    _, dlq = http(baton, "GET", f"/api/v1/dlq?queue={topic}&limit=1000")
    dead = sorted(m["data"] for m in dlq["messages"])
    assert dead == sorted(v for v in values if index(v) % 10 == 7), dead
    print(f"share groups: deliveries by consumer {by}")


@pytest.mark.skipif(bool(EXTERNAL), reason="Baton's share groups; Apache Kafka 4.1 has them only as a preview")
def test_java_share_consumer_renews_its_lock_and_keeps_the_record(baton, tmp_path):
    """KIP-1222 (ShareAcknowledge/ShareFetch v2, D71): Java's KafkaShareConsumer renews the
    lock of one record every 700 ms for 6 s under a 2 s group lock, then accepts it. An
    HTTP consumer of the same group pops all the while and must never get it; afterwards
    nothing is left to deliver and nothing is dead-lettered."""
    if not JAR.exists():
        pytest.fail(f"{JAR} is missing: build it with `mvn -q -B -f tests/kafka-compat/java/pom.xml package`")
    topic, group = f"renew-{uuid.uuid4().hex[:8]}", f"rg-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": baton.bootstrap})
    for f in admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)]).values():
        f.result(timeout=30)
    p = Producer({"bootstrap.servers": baton.bootstrap, "acks": "all"})
    p.produce(topic, value=b"renew-me")
    p.flush(10)
    out_path, err_path = tmp_path / "java.out", tmp_path / "java.err"
    java = subprocess.Popen(["java", "-jar", str(JAR), "share_renew", baton.bootstrap, topic, group],
                            stdin=subprocess.DEVNULL, stdout=open(out_path, "wb"), stderr=open(err_path, "wb"))
    popped, polls = [], 0
    try:
        end = time.monotonic() + 90
        while java.poll() is None and time.monotonic() < end:
            if "acquired" in out_path.read_text():
                status, body = http(baton, "GET", f"/api/v1/pop/queue/{topic}?consumerGroup={group}&batch=5"
                                                  f"&wait=true&timeout=200")
                polls += 1
                if status == 200:
                    popped += [m["data"] for m in body["messages"]]
            else:
                time.sleep(0.05)
    finally:
        if java.poll() is None:
            java.kill()
        java.wait()
    lines = out_path.read_text().splitlines()
    err = err_path.read_text()[-3000:]
    assert java.returncode == 0, f"the Java share consumer exited {java.returncode}:\n{lines}\n{err}"
    assert popped == [], f"the HTTP consumer got a record the share consumer was renewing: {popped}"
    assert polls >= 10, f"the HTTP consumer hardly tried ({polls} pops)"
    done = [ln for ln in lines if ln.startswith("renewed ")]
    assert done and int(done[0].split()[1]) >= 6 and done[0].endswith("accepted renew-me"), lines
    status, body = http(baton, "GET", f"/api/v1/pop/queue/{topic}?consumerGroup={group}&batch=5&wait=false")
    assert status != 200 or body["messages"] == [], f"an accepted record is still delivered: {body}"
    _, dlq = http(baton, "GET", f"/api/v1/dlq?queue={topic}&limit=10")
    assert dlq["messages"] == [], dlq
