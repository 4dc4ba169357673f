"""Kafka Streams and Kafka Connect against the broker (issue 15): the two
Apache Kafka frameworks run unchanged, as their users run them.

  - Streams: the WordCount example (tests/kafka-compat/streams, WordCount.java)
    with processing.guarantee at_least_once and exactly_once_v2. Lines go
    into a 2-partition input topic; Streams re-keys every word through a
    repartition topic (and deletes what it consumed there: DeleteRecords),
    counts in a RocksDB store backed by a compacted changelog topic, and
    writes every count update (the record cache is off) to a 2-partition
    output topic. The test reads the output with read_committed: the last
    count of every word must be its number of occurrences, and under
    exactly_once_v2 the committed updates of a word must be exactly
    1, 2, ..., n (none lost, none twice).
      at_least_once: two runs; the second, on a new state directory, has
      to restore the store from the changelog topic and go on from the
      committed offsets.
      exactly_once_v2: the first run halts its JVM (no close: what a SIGKILL
      does) in the middle of a transaction; the second run, on the same
      state directory (the same transactional.id), fences it, aborts what it
      wrote, restores the store from the committed changelog and finishes
      with every update exactly once.
  - Connect, distributed mode: a worker (ConnectDistributed) whose configs,
    offsets and statuses live in three compacted topics; a FileStreamSource
    connector reads a file of N lines into a topic, a FileStreamSink writes
    that topic to another file, which must end with the same N lines in the
    same order; the source's offset (its byte position, from the offsets
    topic) and the sink's committed consumer offset must reach the end. The
    worker stops; M lines are appended; a new worker takes the connectors
    back from the config topic, and the sink file ends with the N + M lines,
    none twice. Once as is, once with exactly.once.source.support=enabled
    (KIP-618: transactional config-topic writes, producer fencing, source
    records and offsets in one transaction).

Target-agnostic, like test_transactions.py: with KAFKA_COMPAT_BOOTSTRAP=host:port
the tests run against that broker (how they were validated against Apache
Kafka 4.1.1, scripts/peers/kafka.sh); otherwise each runs against a Baton of
its own, once single node and once as a three-member cluster.

The programs are built by
    mvn -q -B -f tests/kafka-compat/streams/pom.xml package -DskipTests
(scripts/test does); without them the tests skip, saying so. Every wait is
bounded, every process this file starts is stopped at teardown (by its own
pid), and each program's log is kept under pytest's tmp_path and quoted when
a test fails.
"""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from conftest import Baton, free_port

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pylib"))
from baton_cluster import Members  # noqa: E402

HERE = Path(__file__).resolve().parent
TARGET = HERE / "streams" / "target"
JAR = TARGET / "baton-kafka-streams.jar"
LIB = TARGET / "lib"
BUILD = "mvn -q -B -f tests/kafka-compat/streams/pom.xml package -DskipTests"

EXTERNAL = os.environ.get("KAFKA_COMPAT_BOOTSTRAP")
TARGETS = ["external"] if EXTERNAL else ["single", "cluster"]

JVM = ["java", "-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
API_TIMEOUT = 30  # seconds, for one admin call, one produce flush, one read
RUN_DEADLINE = 60  # seconds a WordCount run may take (the program's own bound)
RUN_TIMEOUT = RUN_DEADLINE + 45  # the test's bound on the process (start-up, close)
CONNECT_DEADLINE = 90  # seconds from the worker's start to the sink file complete

LINES = 600  # input lines of the WordCount runs
WORDS = [f"w{i:02d}" for i in range(40)] + ["kafka", "baton", "streams", "connect", "exactly", "once"]


# ---------------------------------------------------------------- brokers


class External:
    name = "external"

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap

    def log_tail(self):
        return ""


def kafka_error_counts(http_url):
    """What a Baton answered with an error (or refused as an unsupported
    version), from its /metrics: the lines worth reading when a framework
    misbehaves. Printed at teardown (pytest -s shows them)."""
    try:
        with urllib.request.urlopen(f"{http_url}/metrics/prometheus", timeout=5) as r:
            text = r.read().decode(errors="replace")
    except OSError as e:
        return f"<{http_url}/metrics: {e}>"
    keep = [ln for ln in text.splitlines()
            if ln.startswith(("baton_kafka_error_codes_total", "baton_kafka_unsupported_versions_total"))]
    return "\n".join(keep) or "(no Kafka answer carried an error)"


class Single:
    name = "single"

    def __init__(self):
        self.b = Baton()
        try:
            self.b.start()
        except BaseException:
            self.b.stop()
            raise
        self.bootstrap = self.b.bootstrap

    def log_tail(self, lines=60):
        return f"--- baton log ({self.b.log_path}), last {lines} lines:\n" + "\n".join(
            self.b.log().splitlines()[-lines:])

    def stop(self):
        if self.b.proc and self.b.proc.poll() is None:
            print(f"\nsingle: Kafka errors answered:\n{kafka_error_counts(f'http://127.0.0.1:{self.b.http_port}')}")
        if os.environ.get("BATON_KEEP_LOG"):
            print(self.b.log())
        self.b.stop()


class Cluster:
    name = "cluster"

    def __init__(self, workdir):
        self.m = Members(workdir, ["--kafka-initial-rebalance-delay-ms", "1000"])
        try:
            self.m.start_all()
        except BaseException:
            self.m.stop_all()
            raise
        self.bootstrap = self.m.bootstrap()

    def log_tail(self, lines=40):
        return "\n".join(f"--- member {i + 1} log ({self.m.log(i)}), last {lines} lines:\n{self.m.log_tail(i, lines)}"
                         for i in range(3))

    def stop(self):
        for i in range(3):
            if self.m.running(i):
                print(f"\ncluster member {i + 1}: Kafka errors answered:\n{kafka_error_counts(self.m.url(i))}")
        self.m.stop_all()


@pytest.fixture(scope="module", params=TARGETS)
def broker(request, tmp_path_factory):
    if request.param == "external":
        yield External(EXTERNAL)
        return
    if request.param == "single":
        b = Single()
    else:
        b = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture(scope="module")
def classpath():
    if shutil.which("java") is None:
        pytest.skip("java is not installed: Kafka Streams and Connect need Java 17+")
    if not JAR.exists() or not LIB.is_dir():
        pytest.skip(f"{JAR} is not built: build it with `{BUILD}` (scripts/test does)")
    return f"{JAR}{os.pathsep}{LIB}/*"


# ---------------------------------------------------------------- processes


class Procs:
    """The JVMs a test starts: each in a session of its own, signalled by its
    own pid only; whatever is still running at teardown is killed."""

    def __init__(self):
        self.procs = []

    def start(self, cmd, stdout, stderr):
        with open(stdout, "wb") as out, open(stderr, "wb") as err:
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
        self.procs.append(p)
        return p

    @staticmethod
    def signal(p, sig):
        if p.poll() is None:
            try:
                os.killpg(p.pid, sig)  # the group start_new_session made: p and nothing else
            except ProcessLookupError:
                pass

    def stop(self, p, grace):
        """SIGTERM, then SIGKILL after `grace` seconds. Returns how long the stop took and the exit code."""
        t0 = time.monotonic()
        self.signal(p, signal.SIGTERM)
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.signal(p, signal.SIGKILL)
            p.wait(timeout=10)
        return time.monotonic() - t0, p.returncode

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                self.signal(p, signal.SIGKILL)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass


@pytest.fixture
def procs():
    ps = Procs()
    try:
        yield ps
    finally:
        ps.cleanup()


def tail(path, lines=80, keep=None):
    """The last `lines` lines of a log (of those matching `keep`, when given)."""
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError as e:
        return f"<{e}>"
    if keep:
        text = [ln for ln in text if any(k in ln for k in keep)]
    return f"--- {path}, last {min(lines, len(text))} of the lines:\n" + "\n".join(text[-lines:])


def uid(tag):
    return f"{tag}-{uuid.uuid4().hex[:8]}"


# ---------------------------------------------------------------- Kafka helpers


def create_topics(broker, names, partitions):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futs = admin.create_topics([NewTopic(n, num_partitions=partitions, replication_factor=1) for n in names],
                               operation_timeout=API_TIMEOUT)
    for f in futs.values():
        f.result(timeout=API_TIMEOUT)


def topic_configs(broker, topic):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    cfg = admin.describe_configs([res])[res].result(timeout=API_TIMEOUT)
    return {k: v.value for k, v in cfg.items()}


def produce(broker, topic, values):
    """Produce `values` (str) keyless, idempotent, acks=all, and wait for every acknowledgement."""
    errors = []
    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 5})
    for v in values:
        p.produce(topic, v.encode(), on_delivery=lambda err, msg: err and errors.append(err))
        p.poll(0)
    left = p.flush(API_TIMEOUT)
    assert left == 0 and not errors, f"{left} lines undelivered after {API_TIMEOUT} s, errors {errors[:3]}"


def read_all(broker, topic, partitions, isolation):
    """Every record of `topic` from the beginning to the end (the last stable
    offset for read_committed), in offset order per partition: [(partition, key, value)]."""
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": uid("reader"), "enable.auto.commit": False,
                  "isolation.level": isolation, "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out, at_end = [], set()
        deadline = time.monotonic() + API_TIMEOUT
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, (
                f"reading {topic} ({isolation}) did not reach the end of every partition in {API_TIMEOUT} s")
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(m.partition())
                    continue
                raise AssertionError(f"reading {topic}: {m.error()}")
            at_end.discard(m.partition())
            out.append((m.partition(), m.key(), m.value()))
        return out
    finally:
        c.close()


# ---------------------------------------------------------------- Streams


def wordcount_input(seed):
    rnd = random.Random(seed)
    lines = [" ".join(rnd.choice(WORDS).upper() if rnd.random() < 0.1 else rnd.choice(WORDS)
                      for _ in range(rnd.randint(3, 8))) + rnd.choice(["", ".", "!", " ,"])
             for _ in range(LINES)]
    return lines


def counts(lines):
    c = Counter()
    for ln in lines:
        for w in ln.lower().replace(".", " ").replace("!", " ").replace(",", " ").split():
            c[w] += 1
    return c


def run_wordcount(procs, classpath, broker, tmp_path, app, topics, guarantee, state_dir, expected, run,
                  halt_after=0):
    """One run of the WordCount program until it prints DONE (or HALTED). Returns its stdout line and time."""
    exp = tmp_path / f"expected-{run}.txt"
    exp.write_text("".join(f"{w} {n}\n" for w, n in sorted(expected.items())))
    out, log = tmp_path / f"wordcount-{run}.out", tmp_path / f"wordcount-{run}.log"
    cmd = JVM + ["-cp", classpath, "baton.streams.WordCount", broker.bootstrap, app, topics[0], topics[1],
                 guarantee, str(state_dir), str(exp), str(RUN_DEADLINE)]
    if halt_after:
        cmd.append(str(halt_after))
    t0 = time.monotonic()
    p = procs.start(cmd, out, log)
    try:
        p.wait(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        procs.stop(p, 5)
    took = time.monotonic() - t0
    said = out.read_text(errors="replace").strip()
    want = 3 if halt_after else 0
    if p.returncode != want:
        pytest.fail(f"WordCount {guarantee} run {run} exited {p.returncode} after {took:.1f} s "
                    f"(wanted {want}): {said or '(nothing on stdout)'}\n"
                    f"{tail(log, 60, keep=('WARN', 'ERROR', 'Exception', 'error', 'FAIL'))}\n"
                    f"{tail(log, 30)}\n{broker.log_tail()}")
    print(f"{broker.name} WordCount {guarantee} run {run}: {said} ({took:.1f} s with JVM start-up and close)")
    return said, took


def check_counts(broker, topic, expected, exact_sequence):
    """The committed count updates in `topic` (the output topic, or the
    store's changelog topic, whose values carry a timestamp before the
    count): the last count per word is `expected`; with `exact_sequence`,
    every word's updates are exactly 1..n. Returns how many records are
    committed and how many more read_uncommitted sees (aborted ones)."""
    committed = read_all(broker, topic, 2, "read_committed")
    updates = defaultdict(list)
    for _, k, v in committed:
        updates[k.decode()].append(int.from_bytes(v[-8:], "big", signed=True))
    final = {w: u[-1] for w, u in updates.items()}
    missing = {w: (final.get(w), n) for w, n in expected.items() if final.get(w) != n}
    extra = sorted(set(final) - set(expected))
    assert not missing and not extra, (
        f"{topic}: final counts differ (word: (got, want)): {dict(sorted(missing.items())[:10])}, "
        f"unexpected words {extra[:10]}")
    if exact_sequence:
        wrong = {w: u for w, u in updates.items() if u != list(range(1, expected[w] + 1))}
        assert not wrong, (
            f"{topic}: the committed updates of a word are not exactly 1..n: "
            + "; ".join(f"{w}: {len(u)} updates, first differences "
                        f"{[(i, x) for i, x in enumerate(u) if x != i + 1][:5]}" for w, u in list(wrong.items())[:5]))
    everything = read_all(broker, topic, 2, "read_uncommitted")
    aborted = len(everything) - len(committed)
    print(f"{broker.name}: {topic}: {len(committed)} committed updates of {len(expected)} words, "
          f"{aborted} more records visible read_uncommitted (aborted)")
    return len(committed), aborted


def check_purged(broker, topic, partitions):
    """Streams deleted consumed records of its repartition topic (DeleteRecords): some log start moved."""
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": uid("lows")})
    try:
        marks = [c.get_watermark_offsets(TopicPartition(topic, p), timeout=API_TIMEOUT) for p in range(partitions)]
    finally:
        c.close()
    assert any(low > 0 for low, _ in marks), f"{topic}: no log start moved by Streams' DeleteRecords: {marks}"
    return marks


def check_compacted(broker, topic):
    policy = topic_configs(broker, topic).get("cleanup.policy")
    assert policy is not None and "compact" in policy, f"{topic}: cleanup.policy is {policy!r}, asked for compact"


def test_streams_wordcount_at_least_once(classpath, broker, procs, tmp_path):
    """Two runs, the second on a new state directory: it restores the counts from the changelog topic."""
    app = uid("wc-alo")
    topics = (f"{app}-in", f"{app}-out")
    create_topics(broker, topics, 2)
    lines = wordcount_input(1)
    half = len(lines) // 2
    t0 = time.monotonic()
    produce(broker, topics[0], lines[:half])
    run_wordcount(procs, classpath, broker, tmp_path, app, topics, "at_least_once", tmp_path / "state-1",
                  counts(lines[:half]), 1)
    produce(broker, topics[0], lines[half:])
    run_wordcount(procs, classpath, broker, tmp_path, app, topics, "at_least_once", tmp_path / "state-2",
                  counts(lines), 2)
    check_counts(broker, topics[1], counts(lines), exact_sequence=False)
    check_counts(broker, f"{app}-counts-changelog", counts(lines), exact_sequence=False)
    check_compacted(broker, f"{app}-counts-changelog")
    marks = check_purged(broker, f"{app}-words-repartition", 2)
    print(f"{broker.name}: repartition topic (low, high) after Streams' DeleteRecords: {marks}")
    print(f"{broker.name} WordCount at_least_once: {time.monotonic() - t0:.1f} s")


def test_streams_wordcount_exactly_once_v2(classpath, broker, procs, tmp_path):
    """A run halted mid-stream, then a run on the same state directory: every update exactly once."""
    app = uid("wc-eos")
    topics = (f"{app}-in", f"{app}-out")
    create_topics(broker, topics, 2)
    lines = wordcount_input(2)
    expected = counts(lines)
    t0 = time.monotonic()
    produce(broker, topics[0], lines)
    state = tmp_path / "state"
    run_wordcount(procs, classpath, broker, tmp_path, app, topics, "exactly_once_v2", state, expected, 1,
                  halt_after=sum(expected.values()) // 3)
    run_wordcount(procs, classpath, broker, tmp_path, app, topics, "exactly_once_v2", state, expected, 2)
    check_counts(broker, topics[1], expected, exact_sequence=True)
    _, aborted = check_counts(broker, f"{app}-counts-changelog", expected, exact_sequence=True)
    # The halted run's last count update went to the changelog in the open
    # transaction (the store writes it before the update goes downstream,
    # and no commit can come between): the second run must have aborted it.
    assert aborted > 0, "no aborted changelog record: the halted run's open transaction is not in the log"
    check_compacted(broker, f"{app}-counts-changelog")
    marks = check_purged(broker, f"{app}-words-repartition", 2)
    print(f"{broker.name}: repartition topic (low, high) after Streams' DeleteRecords: {marks}")
    print(f"{broker.name} WordCount exactly_once_v2: {time.monotonic() - t0:.1f} s")


# ---------------------------------------------------------------- Connect


CONNECT_LINES = 200  # lines copied by the first worker
CONNECT_MORE = 50  # lines appended while no worker runs, copied by the second


def rest(port, method, path, body=None, timeout=10):
    """One call to the worker's REST API: (status, parsed JSON or text)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw, status = r.read(), r.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    except OSError as e:
        return None, str(e)
    try:
        return status, json.loads(raw or b"null")
    except ValueError:
        return status, raw.decode(errors="replace")


@pytest.mark.parametrize("source_eos", [False, True], ids=["plain", "exactly_once_source"])
def test_connect_distributed_file_source_to_sink(classpath, broker, procs, tmp_path, source_eos, request):
    """A worker copies N lines, stops; a new worker (the same group, nothing
    PUT again) takes the connectors back from the config topic and their
    positions from the offsets topic and the sink's group: M lines appended
    to the source meanwhile reach the sink file, and nothing twice.

    exactly_once_source: the same with exactly.once.source.support=enabled
    (KIP-618): the worker writes the config topic with a transactional
    producer, fences the source task's earlier producers (Admin.fenceProducers),
    and the task commits its records and its offsets in one transaction."""
    tag = uid("connect")
    topic = f"{tag}-lines"
    storage = {"config": f"{tag}-configs", "offset": f"{tag}-offsets", "status": f"{tag}-status"}
    create_topics(broker, [topic], 1)  # one partition: the sink sees the lines in order
    src, dst = tmp_path / "source.txt", tmp_path / "sink.txt"
    lines = [f"line {i:04d} {uuid.uuid4().hex}" for i in range(CONNECT_LINES + CONNECT_MORE)]
    src.write_text("".join(ln + "\n" for ln in lines[:CONNECT_LINES]))
    port = free_port()
    props = tmp_path / "worker.properties"
    props.write_text("\n".join([
        f"bootstrap.servers={broker.bootstrap}",
        f"group.id={tag}",
        "key.converter=org.apache.kafka.connect.storage.StringConverter",
        "value.converter=org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable=false",
        "value.converter.schemas.enable=false",
        f"config.storage.topic={storage['config']}",
        "config.storage.replication.factor=1",
        f"offset.storage.topic={storage['offset']}",
        "offset.storage.replication.factor=1",
        "offset.storage.partitions=2",
        f"status.storage.topic={storage['status']}",
        "status.storage.replication.factor=1",
        "status.storage.partitions=1",
        "offset.flush.interval.ms=500",
        f"listeners=http://127.0.0.1:{port}",
        "rest.advertised.host.name=127.0.0.1",
        f"rest.advertised.port={port}",
        # The connectors come with connect-file on the classpath, found by
        # their ServiceLoader manifests (no plugin.path, no classpath scan).
        "plugin.discovery=service_load",
        f"exactly.once.source.support={'enabled' if source_eos else 'disabled'}",
        "",
    ]))
    t0 = time.monotonic()
    deadline = t0 + CONNECT_DEADLINE
    worker, log = None, None

    def fail(what):
        pytest.fail(f"Connect: {what}\n{tail(log, 60, keep=('WARN', 'ERROR', 'Exception'))}\n{tail(log, 40)}\n"
                    f"{broker.log_tail()}")

    def start(n):
        nonlocal worker, log
        log = tmp_path / f"connect-{n}.log"
        worker = procs.start(JVM + ["-cp", classpath, "org.apache.kafka.connect.cli.ConnectDistributed", str(props)],
                             tmp_path / f"connect-{n}.out", log)
        # The REST API answers once the worker has read the config topic and joined its group.
        wait(f"worker {n}'s REST API", lambda: rest(port, "GET", "/connectors")[0] == 200)

    def stop(n):
        took, code = procs.stop(worker, 30)
        # 143: the JVM's exit on SIGTERM after its shutdown hook (the worker's stop) ran.
        if code not in (0, 143) or took > 25:
            fail(f"worker {n} exited {code} {took:.1f} s after SIGTERM (its shutdown is bounded by 20 s)")
        return took

    def wait(what, cond, interval=0.25):
        while True:
            if worker.poll() is not None:
                fail(f"the worker exited {worker.returncode} while waiting for {what}")
            v = cond()
            if v:
                return v
            if time.monotonic() > deadline:
                fail(f"{CONNECT_DEADLINE} s passed waiting for {what() if callable(what) else what}")
            time.sleep(interval)

    def sink_holds(n):
        try:
            got = dst.read_text().splitlines()
        except OSError:
            return False
        if len(got) < n:
            return False
        assert got == lines[:n], (
            f"the sink file differs from the source's first {n} lines: {len(got)} lines, first difference at "
            f"{next((i for i, (a, b) in enumerate(zip(got, lines)) if a != b), min(len(got), n))}")
        return True

    def running(name):
        s, body = rest(port, "GET", f"/connectors/{name}/status")
        return s == 200 and body["connector"]["state"] == "RUNNING" and [t["state"] for t in body["tasks"]] == [
            "RUNNING"]

    # KIP-875: the source's offset is read back from the offsets topic, the
    # sink's is its consumer group's committed offset.
    answers = {}
    marks = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": uid("marks")})
    request.addfinalizer(marks.close)

    def offsets_at(size, n):
        for name in connectors:
            answers[name] = rest(port, "GET", f"/connectors/{name}/offsets")
        s, body = answers[source]
        src_offs = body.get("offsets") if s == 200 and isinstance(body, dict) else None
        s, body = answers[sink]
        sink_offs = body.get("offsets") if s == 200 and isinstance(body, dict) else None
        # The sink's offset is past its last record: n without transactions.
        # With exactly_once_source each transaction adds a commit marker, and
        # the sink commits the offset after its last record, before or after
        # the marker that follows it (Kafka does both): n to the topic's end.
        end = n if not source_eos else marks.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
        answers["end of the topic"] = end
        return (src_offs == [{"partition": {"filename": str(src)}, "offset": {"position": size}}]
                and bool(sink_offs) and len(sink_offs) == 1
                and sink_offs[0]["partition"] == {"kafka_topic": topic, "kafka_partition": 0}
                and n <= sink_offs[0]["offset"].get("kafka_offset", -1) <= end)

    # Names of their own: a sink's consumer group is connect-NAME, and the
    # broker may hold the group of an earlier run's sink of the same name.
    source, sink = f"{tag}-source", f"{tag}-sink"
    connectors = {
        source: {"connector.class": "FileStreamSource", "tasks.max": "1", "file": str(src), "topic": topic},
        sink: {"connector.class": "FileStreamSink", "tasks.max": "1", "file": str(dst), "topics": topic},
    }
    start(1)
    started = time.monotonic() - t0
    last = {}
    for name, cfg in connectors.items():
        def put(name=name, cfg=cfg):
            last[name] = rest(port, "PUT", f"/connectors/{name}/config", cfg)
            return last[name][0] in (200, 201)
        # A worker that has not yet caught up with the config topic answers 409: ask again.
        wait(f"PUT /connectors/{name}/config to succeed (last answer {last.get(name)})", put, 0.5)
    wait(f"the sink file to hold the {CONNECT_LINES} lines", lambda: sink_holds(CONNECT_LINES))
    copied = time.monotonic() - t0
    for name in connectors:
        wait(f"{name} and its task RUNNING in /connectors/{name}/status (the status topic)",
             lambda name=name: running(name))
    size = src.stat().st_size
    wait(lambda: f"the source's committed offset to be the file's size ({size} bytes) and the sink's "
         f"{CONNECT_LINES} (GET /connectors/NAME/offsets answered {answers})", lambda: offsets_at(size, CONNECT_LINES))
    for t in storage.values():
        check_compacted(broker, t)
    stopped = stop(1)

    with open(src, "a") as f:
        f.write("".join(ln + "\n" for ln in lines[CONNECT_LINES:]))
    t1 = time.monotonic()
    start(2)
    for name in connectors:
        wait(f"{name} and its task RUNNING again after the restart, from the config topic",
             lambda name=name: running(name))
    wait(f"the sink file to hold all {len(lines)} lines after the restart", lambda: sink_holds(len(lines)))
    size = src.stat().st_size
    wait(lambda: f"the source's committed offset to be the file's size ({size} bytes) and the sink's "
         f"{len(lines)} (GET /connectors/NAME/offsets answered {answers})", lambda: offsets_at(size, len(lines)))
    resumed = time.monotonic() - t1
    stopped2 = stop(2)
    # The worker is gone: what the sink file holds now is final.
    got = dst.read_text().splitlines()
    assert got == lines, f"after the second worker stopped the sink file has {len(got)} lines, not the {len(lines)}"
    print(f"{broker.name} Connect{' exactly_once_source' if source_eos else ''}: REST up after {started:.1f} s, "
          f"{CONNECT_LINES} lines copied after {copied:.1f} s, stopped in {stopped:.1f} s; restarted, "
          f"{CONNECT_MORE} more copied and committed in {resumed:.1f} s, stopped in {stopped2:.1f} s; "
          f"{time.monotonic() - t0:.1f} s in all")
