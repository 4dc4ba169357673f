"""Kafka transactions through librdkafka (confluent-kafka): commit, abort,
read_committed against the last stable offset, zombie fencing, the broker's
abort of a timed-out transaction, consume-transform-produce with offsets in
the transaction, and (Baton only) a restart in the middle of a transaction.

Target-agnostic: with KAFKA_COMPAT_BOOTSTRAP=host:port the tests run against
that broker (this is how they were validated against Apache Kafka 4.1.1,
scripts/peers/kafka.sh), otherwise against the session's `baton serve`.
What real Kafka does, and Baton must do too, as librdkafka 2.16 sees it:

  - librdkafka speaks InitProducerId v4, AddPartitionsToTxn v0,
    AddOffsetsToTxn v0, TxnOffsetCommit v3, EndTxn v1, Produce v10,
    Fetch v16, OffsetFetch v9 (require_stable for read_committed).
  - A commit writes one control record per partition of the transaction,
    and it takes an offset: the high watermark is records + 1.
  - A zombie (a producer whose transactional.id was re-initialised by a
    newer instance, or whose transaction the broker aborted on timeout)
    gets INVALID_PRODUCER_EPOCH both on EndTxn (v1 does not know
    PRODUCER_FENCED) and on Produce; librdkafka turns either into the fatal
    local error _FENCED. The broker bumps the epoch when it aborts a
    timed-out transaction: that is what fences the old producer.
  - The InitProducerId of the newer instance is answered
    CONCURRENT_TRANSACTIONS while the old transaction is being aborted;
    librdkafka retries it and gets the same producer id with epoch + 2
    (one bump for the abort, one for the new instance).
  - Kafka aborts a timed-out transaction on its cleanup tick
    (transaction.abort.timed.out.transaction.cleanup.interval.ms, 10 s):
    with transaction.timeout.ms=2000, 2.7 to 11.7 s after the produce
    (the timeout, then up to one tick).
  - librdkafka does not use KIP-890's transaction version 2 (EndTxn v5), so
    the epoch does not change from one transaction to the next.

Every wait is bounded; a broker that does not do transactions fails each test
with the error it answered, not a hang.
"""

import time
import uuid

import pytest
from confluent_kafka import (OFFSET_BEGINNING, OFFSET_INVALID, Consumer, KafkaError, KafkaException, Producer,
                             TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import EXTERNAL, Baton
API_TIMEOUT = 30  # seconds, for each transactional API call and each read
# Kafka aborts a timed-out transaction only on its cleanup tick (10 s by
# default), so the wait for that abort allows a couple of ticks.
TIMEOUT_ABORT_DEADLINE = 30


@pytest.fixture
def closing():
    """Consumers to close at teardown, also when the test failed: a member
    left in a group would hold up the next join until its session expires."""
    consumers = []
    yield consumers
    for c in consumers:
        try:
            c.close()
        except Exception:
            pass


def uid(tag):
    return f"txn-{tag}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap, partitions, tag):
    name = uid(tag)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[name].result(timeout=30)
    return name


class TxnProducer:
    """A transactional producer. Its non-fatal errors are kept for the
    assertion messages; confluent-kafka raises a fatal one (fenced) out of
    flush() or poll() whatever error_cb is."""

    def __init__(self, bootstrap, txid, **conf):
        self.errors = []
        self.p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid, "linger.ms": 5,
                           "error_cb": self.errors.append, **conf})

    def init(self):
        self.p.init_transactions(API_TIMEOUT)

    def send(self, topic, values, partition_of=lambda i: 0):
        """Produce `values` and wait for every delivery report; returns the errors (None when delivered)."""
        reports = []
        for i, v in enumerate(values):
            self.p.produce(topic, v, partition=partition_of(i), on_delivery=lambda err, msg: reports.append(err))
        try:
            left = self.p.flush(API_TIMEOUT)
        except SystemError as e:
            # The fatal error is raised, and then on_delivery is called with
            # it still pending: show the fatal error, not that.
            if isinstance(e.__cause__, KafkaException):
                raise e.__cause__ from None
            raise
        assert left == 0, f"{left} records not acknowledged in {API_TIMEOUT} s; errors {self.errors}"
        return reports

    def send_ok(self, topic, values, partition_of=lambda i: 0):
        reports = self.send(topic, values, partition_of)
        assert reports == [None] * len(values), f"delivery failed: {reports}; errors {self.errors}"

    def txn(self, topic, values, partition_of=lambda i: 0):
        """A whole committed transaction."""
        self.p.begin_transaction()
        self.send_ok(topic, values, partition_of)
        self.p.commit_transaction(API_TIMEOUT)


def txn_error(call):
    """The KafkaError of a transactional API call that must fail."""
    try:
        call()
    except KafkaException as e:
        return e.args[0]
    raise AssertionError("succeeded where Kafka fails")


class Reader:
    """Reads a topic from the beginning, without a group, with one isolation
    level. 'At the end' means librdkafka's partition EOF: the high watermark
    for read_uncommitted, the last stable offset for read_committed; so
    reading until every partition is at its end shows everything the broker
    lets this isolation level see, and no more can come without a new write
    or a transaction's end."""

    def __init__(self, bootstrap, topic, partitions, isolation, closing):
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": uid("reader"),
                           "isolation.level": isolation, "enable.partition.eof": True,
                           "enable.auto.commit": False})
        closing.append(self.c)
        self.topic, self.isolation = topic, isolation
        self.got = {p: [] for p in range(partitions)}
        self.eof = set()
        self.errors = []
        self.c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])

    def _poll(self, timeout):
        m = self.c.poll(timeout)
        if m is None:
            return
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                self.eof.add(m.partition())
            else:
                self.errors.append(m.error())
            return
        self.eof.discard(m.partition())
        self.got[m.partition()].append(m.value())

    def total(self):
        return sum(len(v) for v in self.got.values())

    def until(self, count, timeout=API_TIMEOUT):
        """Reads until at least `count` values and every partition at its end;
        returns {partition: [values]}. Fewer at the deadline fails."""
        end = time.monotonic() + timeout
        while not (self.total() >= count and len(self.eof) == len(self.got)):
            if time.monotonic() > end:
                raise AssertionError(
                    f"{self.isolation} read {self.total()} of {count} values from {self.topic} in {timeout} s "
                    f"(partitions at their end: {sorted(self.eof)}); read {self.got}; errors {self.errors}")
            self._poll(0.2)
        return self.got

    def idle(self, seconds):
        """Keeps reading for `seconds`: what a slow consumer could see."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self._poll(0.2)
        return self.got

    def values(self):
        return [v for p in sorted(self.got) for v in self.got[p]]


def vals(prefix, n):
    return [f"{prefix}-{i}".encode() for i in range(n)]


# ------------------------------------------------------------------ tests


def test_commit(broker, closing):
    n, parts = 30, 3
    t = create_topic(broker.bootstrap, parts, "commit")
    p = TxnProducer(broker.bootstrap, uid("tid"))
    p.init()
    values = vals("v", n)
    p.txn(t, values, partition_of=lambda i: i % parts)

    r = Reader(broker.bootstrap, t, parts, "read_committed", closing)
    got = r.until(n)
    for part in range(parts):
        assert got[part] == values[part::parts], f"partition {part}"
    # Clients see the commit marker only as a gap in the offsets, but offsets
    # handed out later and the watermarks depend on it taking one.
    for part in range(parts):
        low, high = r.c.get_watermark_offsets(TopicPartition(t, part), timeout=API_TIMEOUT)
        assert (low, high) == (0, n // parts + 1), f"partition {part}: {n // parts} records and one commit marker"


def test_abort_and_open_transaction_are_invisible_to_read_committed(broker, closing):
    t = create_topic(broker.bootstrap, 1, "abort")
    a, b, c = vals("a", 5), vals("b", 5), vals("c", 5)
    p = TxnProducer(broker.bootstrap, uid("tid"))
    p.init()
    p.txn(t, a)
    rc = Reader(broker.bootstrap, t, 1, "read_committed", closing)
    ru = Reader(broker.bootstrap, t, 1, "read_uncommitted", closing)
    assert rc.until(len(a))[0] == a

    p.p.begin_transaction()
    p.send_ok(t, b)
    # b is in the log (read_uncommitted sees it) but above the last stable offset.
    assert ru.until(len(a + b))[0] == a + b
    assert rc.idle(2.0)[0] == a, "read_committed saw records of an open transaction"
    p.p.abort_transaction(API_TIMEOUT)

    p.p.begin_transaction()
    p.send_ok(t, c)
    # The last stable offset has moved past b (aborted) up to c (open): rc
    # fetches b now and must drop it by the aborted-transaction list.
    assert rc.idle(2.0)[0] == a, "read_committed saw records of an open (or aborted) transaction"
    p.p.commit_transaction(API_TIMEOUT)

    assert rc.until(len(a + c))[0] == a + c
    assert ru.until(len(a + b + c))[0] == a + b + c
    # A consumer that starts after the fact reads the aborted records from
    # the log and must drop them by the fetch response's aborted list.
    fresh = Reader(broker.bootstrap, t, 1, "read_committed", closing)
    assert fresh.until(len(a + c))[0] == a + c


@pytest.mark.parametrize("zombie_step", ["commit", "produce"])
def test_zombie_is_fenced(broker, closing, zombie_step):
    """A second instance with the same transactional.id fences the first and
    aborts its open transaction; the first fails at its next step with the
    fatal _FENCED (the broker answers INVALID_PRODUCER_EPOCH on EndTxn v1 and
    on Produce)."""
    t = create_topic(broker.bootstrap, 1, "fence")
    txid = uid("tid")
    zombie_vals, new_vals = vals("zombie", 3), vals("new", 3)
    p1 = TxnProducer(broker.bootstrap, txid)
    p1.init()
    p1.p.begin_transaction()
    p1.send_ok(t, zombie_vals)

    p2 = TxnProducer(broker.bootstrap, txid)
    p2.init()  # Kafka answers CONCURRENT_TRANSACTIONS until p1's transaction is aborted; librdkafka retries

    if zombie_step == "produce":
        # No on_delivery here: the fatal error is raised out of flush() (see TxnProducer).
        p1.p.produce(t, b"late", partition=0)
        err = txn_error(lambda: p1.p.flush(API_TIMEOUT))
        assert err.code() == KafkaError._FENCED and err.fatal(), \
            f"expected the fatal _FENCED for a produce with the old epoch, got {err}"
    err = txn_error(lambda: p1.p.commit_transaction(API_TIMEOUT))
    assert err.code() == KafkaError._FENCED and err.fatal(), f"expected the fatal _FENCED, got {err}"

    p2.txn(t, new_vals)
    rc = Reader(broker.bootstrap, t, 1, "read_committed", closing)
    assert rc.until(len(new_vals))[0] == new_vals
    # The zombie's records were written and are hidden by the abort, not lost.
    ru = Reader(broker.bootstrap, t, 1, "read_uncommitted", closing)
    assert ru.until(len(zombie_vals + new_vals))[0] == zombie_vals + new_vals


def test_timed_out_transaction_is_aborted_by_the_broker(broker, closing):
    t = create_topic(broker.bootstrap, 1, "timeout")
    stale = TxnProducer(broker.bootstrap, uid("tid"), **{"transaction.timeout.ms": 2000})
    stale.init()
    stale.p.begin_transaction()
    stale.send_ok(t, vals("stale", 3))
    started = time.monotonic()

    # A later transaction on the same partition commits at once, but stays
    # above the last stable offset until the broker aborts the stale one.
    later = vals("later", 2)
    other = TxnProducer(broker.bootstrap, uid("tid"))
    other.init()
    other.txn(t, later)

    rc = Reader(broker.bootstrap, t, 1, "read_committed", closing)
    assert rc.until(len(later), timeout=TIMEOUT_ABORT_DEADLINE)[0] == later
    print(f"the timed-out transaction was aborted {time.monotonic() - started:.1f} s after its produce")

    # The broker bumped the epoch when it aborted: the stale producer is fenced.
    err = txn_error(lambda: stale.p.commit_transaction(API_TIMEOUT))
    assert err.code() == KafkaError._FENCED and err.fatal(), f"expected the fatal _FENCED, got {err}"
    assert rc.idle(1.0)[0] == later


def ctp_setup(broker, closing, m):
    """Input topic of `m` plain records over two partitions, an output topic,
    a read_committed group consumer on the input and a transactional producer."""
    tin = create_topic(broker.bootstrap, 2, "in")
    tout = create_topic(broker.bootstrap, 2, "out")
    plain = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i, v in enumerate(vals("in", m)):
        plain.produce(tin, v, partition=i % 2)
    assert plain.flush(API_TIMEOUT) == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": uid("g"), "isolation.level": "read_committed",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    closing.append(c)
    c.subscribe([tin])
    p = TxnProducer(broker.bootstrap, uid("tid"))
    p.init()
    return tin, tout, c, p


def transform(c, p, tout, m):
    """Consume `m` records, produce each transformed in the open transaction,
    and put the consumer's positions into it."""
    n, end = 0, time.monotonic() + API_TIMEOUT
    while n < m:
        assert time.monotonic() < end, f"consumed {n} of {m} input records in {API_TIMEOUT} s"
        msg = c.poll(0.2)
        if msg is None or msg.error():
            continue
        p.p.produce(tout, b"t:" + msg.value(), partition=msg.partition())
        n += 1
    assert p.p.flush(API_TIMEOUT) == 0, p.errors
    p.p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), API_TIMEOUT)


def committed_offsets(c, tin):
    return {tp.partition: tp.offset for tp in c.committed([TopicPartition(tin, 0), TopicPartition(tin, 1)],
                                                            timeout=API_TIMEOUT)}


def wait_committed(c, tin, want):
    # The offsets become readable once the coordinator has written its
    # marker to __consumer_offsets, which may be after EndTxn returns.
    end = time.monotonic() + API_TIMEOUT
    while (got := committed_offsets(c, tin)) != want:
        assert time.monotonic() < end, f"group committed {got}, expected {want}"
        time.sleep(0.2)


def test_consume_transform_produce(broker, closing):
    m = 20
    tin, tout, c, p = ctp_setup(broker, closing, m)
    p.p.begin_transaction()
    transform(c, p, tout, m)
    p.p.commit_transaction(API_TIMEOUT)

    wait_committed(c, tin, {0: m // 2, 1: m // 2})
    out = Reader(broker.bootstrap, tout, 2, "read_committed", closing)
    got = out.until(m)
    for part in (0, 1):
        assert got[part] == [b"t:" + v for v in vals("in", m)[part::2]], f"output partition {part}"


def test_consume_transform_produce_abort_then_retry(broker, closing):
    """Offsets sent in an aborted transaction are not committed, so the
    retried transaction reprocesses the same input: exactly once."""
    m = 20
    tin, tout, c, p = ctp_setup(broker, closing, m)
    p.p.begin_transaction()
    transform(c, p, tout, m)
    p.p.abort_transaction(API_TIMEOUT)
    # The aborted offsets must not appear, not even for a moment.
    for _ in range(5):
        assert committed_offsets(c, tin) == {0: OFFSET_INVALID, 1: OFFSET_INVALID}
        time.sleep(0.2)

    for part in (0, 1):
        c.seek(TopicPartition(tin, part, 0))
    p.p.begin_transaction()
    transform(c, p, tout, m)
    p.p.commit_transaction(API_TIMEOUT)

    wait_committed(c, tin, {0: m // 2, 1: m // 2})
    want = sorted(b"t:" + v for v in vals("in", m))
    rc = Reader(broker.bootstrap, tout, 2, "read_committed", closing)
    rc.until(m)
    assert sorted(rc.values()) == want
    # Both attempts are in the log; only the committed one is read_committed.
    ru = Reader(broker.bootstrap, tout, 2, "read_uncommitted", closing)
    ru.until(2 * m)
    assert sorted(ru.values()) == sorted(want * 2)


@pytest.mark.skipif(bool(EXTERNAL), reason="restarts a Baton of its own")
def test_restart_in_the_middle_of_a_transaction(closing):
    """SIGTERM with a transaction open, and a new process on the same data:
    the producer's commit either commits everything or fails (abortable or
    fatal) and nothing is visible. Never a part of it."""
    b = Baton()
    b.start()
    try:
        t = create_topic(b.bootstrap, 2, "restart")
        values = vals("r", 10)
        # A short timeout, so that a transaction the broker keeps open across
        # the restart is aborted within this test's deadline.
        p = TxnProducer(b.bootstrap, uid("tid"), **{"transaction.timeout.ms": 10000})
        p.init()
        p.p.begin_transaction()
        p.send_ok(t, values, partition_of=lambda i: i % 2)
        b.restart()

        committed, end = None, time.monotonic() + API_TIMEOUT
        while committed is None:
            try:
                p.p.commit_transaction(API_TIMEOUT)
                committed = True
            except KafkaException as e:
                err = e.args[0]
                # Retriable (e.g. timed out) leaves the outcome unknown: librdkafka's contract is to call commit again.
                if err.retriable() and time.monotonic() < end:
                    continue
                assert err.txn_requires_abort() or err.fatal(), f"commit failed with neither abortable nor fatal: {err}"
                print(f"commit across the restart failed: {err}")
                if err.txn_requires_abort():
                    try:
                        p.p.abort_transaction(API_TIMEOUT)
                    except KafkaException as e2:
                        # Then only the broker's transaction timeout ends it,
                        # which the read below waits for.
                        print(f"and so did the abort: {e2.args[0]}")
                committed = False

        # A later committed transaction on both partitions: once it is
        # visible the last stable offset is past the restarted transaction,
        # so what read_committed shows of it is final.
        after = vals("after", 2)
        other = TxnProducer(b.bootstrap, uid("tid"))
        other.init()
        other.txn(t, after, partition_of=lambda i: i % 2)
        rc = Reader(b.bootstrap, t, 2, "read_committed", closing)
        expect = (values if committed else []) + after
        got = rc.until(len(expect), timeout=API_TIMEOUT)
        for part in (0, 1):
            want = (values[part::2] if committed else []) + after[part::2]
            assert got[part] == want, f"commit {'succeeded' if committed else 'failed'}; partition {part}"
        print(f"commit across the restart {'succeeded' if committed else 'failed'}")
    except BaseException:
        print(b.log()[-6000:])
        raise
    finally:
        b.stop()
