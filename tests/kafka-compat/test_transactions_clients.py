"""Kafka transactions through Java's kafka-clients and franz-go: the
programs of test_clients.py (kafka-clients 4.2.1; PROGRAMS there, the same `PROGRAM SCENARIO
BOOTSTRAP TOPIC GROUP` convention) run four transaction scenarios, each
checking its own writes with read_committed and read_uncommitted readers of
the same client; this file creates the topics and then reads them again with
librdkafka, so that no verdict rests on one client alone. The contract:

  txn_commit  TOPIC has 3 partitions. One transaction writes t-0..t-29, t-i
              to partition i % 3, and commits; read_committed sees exactly them.
  txn_abort   TOPIC has 3 partitions, value i of each batch to partition i % 3.
              One producer: a-0..a-5 committed, b-0..b-5 acknowledged and
              aborted, c-0..c-5 committed; read_committed sees a and c,
              read_uncommitted a, b and c.
  txn_fence   TOPIC has 1 partition. Producer 1 begins and writes zombie-0..2
              (acknowledged); producer 2 initialises the same transactional
              id; producer 1's commit fails fenced (Java: ProducerFencedException,
              franz-go: kerr.ProducerFenced); producer 2 commits new-0..2.
              read_committed sees new-*, read_uncommitted zombie-* and new-*.
  txn_ctp     TOPIC (input) and TOPIC-out have 3 partitions. in-0..in-29 are
              written plainly, in-i to partition i % 3; a member of GROUP
              (read_committed, no auto commit) consumes them and one
              transaction writes t:in-i to the same partition of TOPIC-out
              together with the consumed offsets (Java: sendOffsetsToTransaction
              with the consumer's group metadata; franz-go: GroupTransactSession),
              and commits. GROUP's committed offsets are then 10 on each input
              partition and TOPIC-out holds exactly the 30 transformed values.

Transactional ids are TOPIC-tid. Every wait in the programs is bounded by 30 s
(txnDeadline, Txn.DEADLINE), every read here by READ_TIMEOUT, and a whole
program run by run_program's PROGRAM_TIMEOUT.

Target-agnostic like test_transactions.py: with KAFKA_COMPAT_BOOTSTRAP=
host:port the tests run against that broker (how they were validated against
Apache Kafka 4.1.1, scripts/peers/kafka.sh), otherwise against the session's
`baton serve`. What Kafka 4.1.1 does, as these clients see it:

  - A zombie's EndTxn is answered PRODUCER_FENCED: kafka-clients throws
    ProducerFencedException from commitTransaction, franz-go returns
    kerr.ProducerFenced from EndTransaction. So does Kafka 4.1.1 to the
    older EndTxn versions franz-go sends without KIP-890 part 2 (below).
  - The newer instance's InitProducerId gets the same producer id with
    epoch + 2 (one bump to abort the old transaction, one for the new
    instance). Nothing here checks the number.
  - A freshly formatted 4.1 cluster finalises transaction.version 2
    (KIP-890 part 2). franz-go then uses it: no AddPartitionsToTxn or
    AddOffsetsToTxn (Produce v12+ and TxnOffsetCommit v5+ add to the
    transaction), and EndTxn v5 bumps the epoch at every transaction end.
    kafka-clients 4.2 uses it too (test_clients_use_transactions_v2; 3.9
    did not). Against a broker that does not
    advertise the feature, franz-go takes the older path; that path was
    validated against Kafka 4.1.1 too, with franz-go capped to Kafka 3.9's
    request versions (kgo.MaxVersions(kversion.V3_9_0())): the same results.
"""

import time
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from test_clients import run_program

CLIENTS = ["java", "franz-go"]
from conftest import EXTERNAL
PARTITIONS = 3
READ_TIMEOUT = 30  # seconds, for each librdkafka read or offset fetch


def uid(tag):
    return f"txnc-{tag}-{uuid.uuid4().hex[:8]}"


def create_topics(bootstrap, partitions_of):
    """Setup (not a scenario): {name: partitions}."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futs = admin.create_topics([NewTopic(n, num_partitions=p, replication_factor=1) for n, p in partitions_of.items()])
    for f in futs.values():
        f.result(timeout=READ_TIMEOUT)


def vals(prefix, n):
    return [f"{prefix}-{i}" for i in range(n)]


def spread(values, partitions):
    """What a topic holds per partition when value i went to partition i % partitions."""
    return {p: values[p::partitions] for p in range(partitions)}


def read(bootstrap, topic, partitions, isolation, count):
    """Reads `topic` from the beginning with librdkafka until at least `count`
    values and every partition at its end (partition EOF: the last stable
    offset for read_committed, the high watermark otherwise); returns
    {partition: [values]}."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": uid("reader"), "isolation.level": isolation,
                  "enable.partition.eof": True, "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        got, eof, errors = {p: [] for p in range(partitions)}, set(), []
        end = time.monotonic() + READ_TIMEOUT
        while not (sum(map(len, got.values())) >= count and len(eof) == partitions):
            if time.monotonic() > end:
                raise AssertionError(f"librdkafka {isolation} read {got} from {topic} in {READ_TIMEOUT} s, want "
                                     f"{count} values (partitions at their end: {sorted(eof)}); errors {errors}")
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                else:
                    errors.append(m.error())
                continue
            eof.discard(m.partition())
            got[m.partition()].append(m.value().decode())
        return got
    finally:
        c.close()


def expect(bootstrap, topic, partitions, isolation, want):
    got = read(bootstrap, topic, partitions, isolation, sum(map(len, want.values())))
    assert got == want, f"librdkafka {isolation} of {topic}"


# ------------------------------------------------------------------ tests


@pytest.mark.parametrize("client", CLIENTS)
def test_txn_commit(client, broker):
    t = uid("commit")
    create_topics(broker.bootstrap, {t: PARTITIONS})
    run_program(client, "txn_commit", broker, t)
    expect(broker.bootstrap, t, PARTITIONS, "read_committed", spread(vals("t", 30), PARTITIONS))


@pytest.mark.parametrize("client", CLIENTS)
def test_txn_abort(client, broker):
    t = uid("abort")
    create_topics(broker.bootstrap, {t: PARTITIONS})
    run_program(client, "txn_abort", broker, t)
    a, b, c = vals("a", 6), vals("b", 6), vals("c", 6)
    expect(broker.bootstrap, t, PARTITIONS, "read_committed", spread(a + c, PARTITIONS))
    every = {p: spread(a, PARTITIONS)[p] + spread(b, PARTITIONS)[p] + spread(c, PARTITIONS)[p]
             for p in range(PARTITIONS)}
    expect(broker.bootstrap, t, PARTITIONS, "read_uncommitted", every)


@pytest.mark.parametrize("client", CLIENTS)
def test_txn_fence(client, broker):
    t = uid("fence")
    create_topics(broker.bootstrap, {t: 1})
    run_program(client, "txn_fence", broker, t)
    expect(broker.bootstrap, t, 1, "read_committed", {0: vals("new", 3)})
    expect(broker.bootstrap, t, 1, "read_uncommitted", {0: vals("zombie", 3) + vals("new", 3)})


@pytest.mark.parametrize("client", CLIENTS)
def test_txn_ctp(client, broker):
    t, g = uid("ctp"), uid("g")
    create_topics(broker.bootstrap, {t: PARTITIONS, t + "-out": PARTITIONS})
    run_program(client, "txn_ctp", broker, t, g)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": g, "isolation.level": "read_committed"})
    try:
        committed = c.committed([TopicPartition(t, p) for p in range(PARTITIONS)], timeout=READ_TIMEOUT)
    finally:
        c.close()
    assert {tp.partition: tp.offset for tp in committed} == {p: 10 for p in range(PARTITIONS)}
    expect(broker.bootstrap, t + "-out", PARTITIONS, "read_committed",
           spread([f"t:{v}" for v in vals("in", 30)], PARTITIONS))


def txn_request_counts(baton):
    """Baton's count of each transaction API's requests, from /metrics."""
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{baton.http_port}/metrics/prometheus", timeout=5) as r:
        text = r.read().decode()
    out = {}
    for api in ("AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn"):
        line = next(ln for ln in text.splitlines() if ln.startswith(f'baton_kafka_requests_total{{api="{api}"}}'))
        out[api] = int(line.split()[-1])
    return out


@pytest.mark.skipif(bool(EXTERNAL), reason="reads Baton's request counters")
@pytest.mark.parametrize("client", ["java"])
def test_clients_use_transactions_v2(client, baton):
    """kafka-clients 4.2 takes transactions v2 (KIP-890 part 2) from Baton's finalized
    transaction.version (it reads it when it initialises its producer id): the
    consume-transform-produce scenario adds its partitions and its group through Produce
    and TxnOffsetCommit, never through AddPartitionsToTxn or AddOffsetsToTxn. franz-go is
    not asserted here: it picks the generation from whichever broker's versions it has
    loaded at its first produce, so a transaction begun before that goes the v1 way (CI,
    2026-12-04: one AddPartitionsToTxn and one AddOffsetsToTxn); both ways are tested by
    the scenarios above."""
    t, g = uid("tv2"), uid("g")
    create_topics(baton.bootstrap, {t: PARTITIONS, t + "-out": PARTITIONS})
    before = txn_request_counts(baton)
    run_program(client, "txn_ctp", baton, t, g)
    after = txn_request_counts(baton)
    moved = {k: after[k] - before[k] for k in after}
    assert moved["AddPartitionsToTxn"] == 0 and moved["AddOffsetsToTxn"] == 0, moved
    assert moved["TxnOffsetCommit"] >= 1 and moved["EndTxn"] >= 1, moved
