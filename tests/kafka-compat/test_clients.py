"""Real Kafka clients against Baton: kcat (librdkafka, Debian), confluent-kafka
and kafka-python (PyPI), Java's kafka-clients (Maven Central, java/) and
franz-go (Go module proxy, go/). For each client: produce, consume, a
consumer group of three members that rebalances when one leaves, offset
commit and fetch, an idempotent producer, and a static member. Run with the
venv's pytest after `cargo build --release` and the two builds scripts/test
does (PROGRAMS below); the matrix is printed at the end (conftest.py).

The Java and franz-go clients are programs that run a whole scenario in their
own process: `PROGRAM SCENARIO BOOTSTRAP TOPIC GROUP`, exit 0 on success, 1
with a `FAIL scenario: reason` line on stderr. The contract, per scenario:
  produce          writes p-0..p-49 (acks=all, idempotence off); this file
                   reads them back with kafka-python.
  consume          this file writes c-0..c-49 with confluent-kafka; the
                   program reads them from the earliest offset, outside a group.
  commit           writes a-0..a-9, consumes and commitSyncs them in GROUP
                   (checks the committed 10), writes b-0..b-4, and a new member
                   resumes at offset 10; this file checks the committed 15 with
                   confluent-kafka.
  idempotent       writes i-0..i-199 with the idempotent producer in small
                   pipelined batches; this file reads them back (no duplicates).
  group_rebalance  this file creates TOPIC with 3 partitions; three members,
                   one leaves, the two left own all three and go on consuming.
  static_member    this file creates TOPIC with 2 partitions; a static member
                   restarts within its session timeout, gets its partition back,
                   and the other member is not rebalanced.
"""

import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer as CConsumer
from confluent_kafka import Producer as CProducer
from confluent_kafka import TopicPartition as CTP
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import ConsumerRebalanceListener, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTP

CLIENTS = ["kcat", "confluent-kafka", "kafka-python", "java", "franz-go"]
DEADLINE = 60

HERE = Path(__file__).resolve().parent
# Clients that run a scenario in a process of their own: the command line
# before the scenario's arguments, and how scripts/test builds it.
PROGRAMS = {
    "java": (["java", "-jar", str(HERE / "java" / "target" / "baton-kafka-compat-all.jar")],
             "mvn -q -B -f tests/kafka-compat/java/pom.xml package -DskipTests"),
    "franz-go": ([str(HERE / ".bin" / "franz-go-compat")],
                 "(cd tests/kafka-compat/go && go build -o ../.bin/franz-go-compat .)"),
}
# A program bounds each of its waits by 60 s and its whole run by 180 s.
PROGRAM_TIMEOUT = 200


def topic_name(tag):
    return f"{tag}-{uuid.uuid4().hex[:8]}"


def create_topic(baton, name, partitions):
    """Setup (not a scenario): a topic with `partitions` partitions."""
    admin = AdminClient({"bootstrap.servers": baton.bootstrap})
    fut = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[name]
    fut.result(timeout=30)


def need_kcat(client):
    if client == "kcat" and shutil.which("kcat") is None:
        pytest.skip("kcat is not installed")


def run_program(client, scenario, baton, topic, group="-"):
    """Run one scenario in the Java or franz-go program; its exit code is the verdict."""
    cmd, build = PROGRAMS[client]
    artifact = Path(cmd[-1])
    if not artifact.exists():
        pytest.fail(f"{artifact} is missing: build it with `{build}` (scripts/test does)")
    try:
        r = subprocess.run(cmd + [scenario, baton.bootstrap, topic, group], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=PROGRAM_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        tail = (e.stderr or b"").decode(errors="replace")[-4000:]
        pytest.fail(f"{client} {scenario} did not finish in {PROGRAM_TIMEOUT} s:\n{tail}")
    if r.returncode != 0:
        pytest.fail(f"{client} {scenario} exited {r.returncode}:\n{r.stderr.decode(errors='replace')[-4000:]}")


# ---------------------------------------------------------------- clients


def produce(client, baton, topic, values, idempotent=False):
    """Produce `values` (bytes) and wait until all are acknowledged (acks=all)."""
    if client == "kcat":
        args = ["kcat", "-b", baton.bootstrap, "-P", "-t", topic, "-X", "acks=all"]
        if idempotent:
            args += ["-X", "enable.idempotence=true"]
        subprocess.run(args, input=b"\n".join(values) + b"\n", check=True, timeout=DEADLINE)
    elif client == "confluent-kafka":
        conf = {"bootstrap.servers": baton.bootstrap, "acks": "all", "linger.ms": 5}
        if idempotent:
            conf["enable.idempotence"] = True
        p = CProducer(conf)
        errors = []
        for v in values:
            p.produce(topic, v, on_delivery=lambda err, msg: err and errors.append(err))
        assert p.flush(DEADLINE) == 0
        assert not errors, errors
    else:
        p = KafkaProducer(bootstrap_servers=baton.bootstrap, acks="all", linger_ms=5, enable_idempotence=idempotent)
        futs = [p.send(topic, v) for v in values]
        offsets = [f.get(timeout=DEADLINE).offset for f in futs]
        assert offsets == sorted(offsets)
        p.close()


def consume_all(client, baton, topic, count, group=None):
    """Read `count` values from the beginning (or the group's position)."""
    if client == "kcat":
        args = ["kcat", "-b", baton.bootstrap, "-e", "-f", "%s\\n"]
        if group:
            args += ["-G", group, topic, "-X", "auto.offset.reset=earliest", "-X", "auto.commit.interval.ms=100"]
        else:
            args += ["-C", "-t", topic, "-o", "beginning"]
        out = subprocess.run(args, capture_output=True, check=True, timeout=DEADLINE).stdout
        return [line for line in out.split(b"\n") if line][:max(count, 0) or None] if count else \
            [line for line in out.split(b"\n") if line]
    if client == "confluent-kafka":
        c = CConsumer({"bootstrap.servers": baton.bootstrap, "group.id": group or topic_name("anon"),
                       "auto.offset.reset": "earliest", "enable.auto.commit": bool(group)})
        c.subscribe([topic])
        got, end = [], time.time() + DEADLINE
        while len(got) < count and time.time() < end:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
        if group:
            c.commit(asynchronous=False) if got else None
        c.close()
        return got
    c = KafkaConsumer(topic, bootstrap_servers=baton.bootstrap, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=bool(group), consumer_timeout_ms=3000 if count == 0 else DEADLINE * 1000)
    got = []
    for m in c:
        got.append(m.value)
        if len(got) >= count > 0:
            break
    if group and got:
        c.commit()
    c.close()
    return got


# ------------------------------------------------------------- scenarios


@pytest.mark.parametrize("client", CLIENTS)
def test_produce(client, baton):
    need_kcat(client)
    t = topic_name("produce")
    values = [f"p-{i}".encode() for i in range(50)]
    if client in PROGRAMS:
        run_program(client, "produce", baton, t)
    else:
        produce(client, baton, t, values)
    # Read back with a different client so the check does not trust the writer.
    # franz-go compresses with snappy by default, which kafka-python cannot
    # read without python-snappy; librdkafka can.
    reader = "confluent-kafka" if client in ("kafka-python", "franz-go") else "kafka-python"
    assert consume_all(reader, baton, t, len(values)) == values


@pytest.mark.parametrize("client", CLIENTS)
def test_consume(client, baton):
    need_kcat(client)
    t = topic_name("consume")
    values = [f"c-{i}".encode() for i in range(50)]
    produce("confluent-kafka", baton, t, values)
    if client in PROGRAMS:
        run_program(client, "consume", baton, t)
    else:
        assert consume_all(client, baton, t, len(values)) == values


@pytest.mark.parametrize("client", CLIENTS)
def test_commit(client, baton):
    """Consume in a group and commit; a new member of the group resumes at the
    committed offset (OffsetCommit, then OffsetFetch on join)."""
    need_kcat(client)
    t = topic_name("commit")
    g = topic_name("grp")
    if client in PROGRAMS:
        run_program(client, "commit", baton, t, g)  # the same steps, in the program
    else:
        produce("confluent-kafka", baton, t, [f"a-{i}".encode() for i in range(10)])
        assert len(consume_all(client, baton, t, 10, group=g)) == 10
        produce("confluent-kafka", baton, t, [f"b-{i}".encode() for i in range(5)])
        rest = consume_all(client, baton, t, 5, group=g)
        assert rest == [f"b-{i}".encode() for i in range(5)], rest
    # The committed offset is visible to any client.
    c = CConsumer({"bootstrap.servers": baton.bootstrap, "group.id": g})
    committed = c.committed([CTP(t, 0)], timeout=30)
    c.close()
    assert committed[0].offset == 15


@pytest.mark.parametrize("client", CLIENTS)
def test_idempotent(client, baton):
    need_kcat(client)
    t = topic_name("idem")
    values = [f"i-{i}".encode() for i in range(200)]
    if client in PROGRAMS:
        run_program(client, "idempotent", baton, t)
    else:
        produce(client, baton, t, values, idempotent=True)
    assert consume_all("confluent-kafka", baton, t, len(values)) == values


# ------------------------------------------------------- group rebalance


class Member:
    """One group member polling in its own thread (or a kcat process),
    reporting its current assignment as a set of partitions."""

    def __init__(self, client, baton, topic, group, idx, instance=None):
        self.client, self.assigned, self.lock = client, set(), threading.Lock()
        self.stop_evt = threading.Event()
        self.name = f"m{idx}"
        self.revokes = 0  # rebalances this member went through after its first assignment
        if client == "kcat":
            args = ["kcat", "-b", baton.bootstrap, "-G", group, topic, "-X", "session.timeout.ms=10000",
                    "-X", "heartbeat.interval.ms=500", "-X", "client.id=" + self.name]
            if instance:
                args += ["-X", "group.instance.id=" + instance]
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE)
            self.thread = threading.Thread(target=self._read_kcat, daemon=True)
        elif client == "confluent-kafka":
            conf = {"bootstrap.servers": baton.bootstrap, "group.id": group,
                    "session.timeout.ms": 10000, "heartbeat.interval.ms": 500,
                    "client.id": self.name, "auto.offset.reset": "earliest"}
            if instance:
                conf["group.instance.id"] = instance
            self.c = CConsumer(conf)
            self.c.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
            self.thread = threading.Thread(target=self._poll_confluent, daemon=True)
        else:
            self.c = KafkaConsumer(bootstrap_servers=baton.bootstrap, group_id=group, client_id=self.name,
                                   session_timeout_ms=10000, heartbeat_interval_ms=500,
                                   auto_offset_reset="earliest", group_instance_id=instance)
            member = self

            class Listener(ConsumerRebalanceListener):
                def on_partitions_revoked(self, revoked):
                    member._revoked()

                def on_partitions_assigned(self, assigned):
                    member._set(tp.partition for tp in assigned)

            self.c.subscribe([topic], listener=Listener())
            self.thread = threading.Thread(target=self._poll_kafka_python, daemon=True)
        self.thread.start()

    def _revoked(self):
        with self.lock:
            if self.assigned:
                self.revokes += 1
            self.assigned = set()

    def _set(self, parts):
        with self.lock:
            self.assigned = set(parts)

    def get(self):
        with self.lock:
            return set(self.assigned)

    def _read_kcat(self):
        # "% Group g rebalanced (memberid ...): assigned: t [0], t [2]"
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace")
            if "rebalanced" in line and "assigned:" in line:
                parts = [int(p.split("]")[0]) for p in line.split("assigned:")[1].split("[")[1:]]
                self._set(parts)
            elif "rebalanced" in line and "revoked" in line:
                self._revoked()

    def _on_assign(self, consumer, parts):
        self._set(p.partition for p in parts)

    def _on_revoke(self, consumer, parts):
        self._revoked()

    def _poll_confluent(self):
        while not self.stop_evt.is_set():
            self.c.poll(0.2)
        self.c.close()

    def _poll_kafka_python(self):
        while not self.stop_evt.is_set():
            self.c.poll(timeout_ms=200)
        self.c.close()

    def leave(self):
        """A clean exit: the client sends LeaveGroup (a static member does not)."""
        if self.client == "kcat":
            self.proc.terminate()
            self.proc.wait(timeout=30)
        else:
            self.stop_evt.set()
            self.thread.join(timeout=30)


def wait_for(pred, what, timeout=DEADLINE):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def covers(members, n):
    """Every partition is owned by exactly one member and every member has one."""
    sets = [m.get() for m in members]
    owned = [p for s in sets for p in s]
    return sorted(owned) == list(range(n)) and all(sets)


@pytest.mark.parametrize("client", CLIENTS)
def test_group_rebalance(client, baton):
    need_kcat(client)
    t = topic_name("grp3")
    create_topic(baton, t, 3)
    g = topic_name("g")
    if client in PROGRAMS:
        run_program(client, "group_rebalance", baton, t, g)
        return
    members = [Member(client, baton, t, g, i) for i in range(3)]
    try:
        wait_for(lambda: covers(members, 3) and all(len(m.get()) == 1 for m in members),
                 "three members with one partition each")
        members[2].leave()
        rest = members[:2]
        wait_for(lambda: sorted(p for m in rest for p in m.get()) == [0, 1, 2] and all(m.get() for m in rest),
                 "the two left to share all three partitions")
    finally:
        for m in members:
            try:
                m.leave()
            except Exception:
                pass


@pytest.mark.parametrize("client", CLIENTS)
def test_static_member(client, baton):
    """group.instance.id: a static member that restarts within its session
    timeout gets its partition back and the other member never rebalances."""
    need_kcat(client)
    t = topic_name("static")
    create_topic(baton, t, 2)
    g = topic_name("g")
    if client in PROGRAMS:
        run_program(client, "static_member", baton, t, g)
        return
    # b joins first and leads; the member that restarts is a follower (a
    # restarted *leader* reassigns, and kafka-python then rejoins once its
    # metadata arrives, on any broker).
    b = Member(client, baton, t, g, 1, instance="static-b")
    a = a2 = None
    try:
        wait_for(lambda: b.get() == {0, 1}, "the first static member to own both partitions")
        a = Member(client, baton, t, g, 0, instance="static-a")
        wait_for(lambda: covers([a, b], 2), "two static members with one partition each")
        pa, pb, b_revokes = a.get(), b.get(), b.revokes
        a.leave()  # static: no LeaveGroup, the member's place is kept
        a2 = Member(client, baton, t, g, 2, instance="static-a")
        wait_for(lambda: a2.get() == pa, "the restarted static member to get its partition back", timeout=20)
        time.sleep(1.5)  # a rebalance, had there been one, would show by now
        assert b.get() == pb and b.revokes == b_revokes, "the other member was not rebalanced"
    finally:
        for m in (a, b, a2):
            if m is not None:
                try:
                    m.leave()
                except Exception:
                    pass
