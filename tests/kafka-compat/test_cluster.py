"""
librdkafka (confluent-kafka) against three Baton members across a SIGKILL of the leader
(issue 14, D42): every member is a broker, Metadata names the leader, a member that does
not lead answers NOT_LEADER_OR_FOLLOWER, and the client moves on by itself.

The producer is configured as a user who wants no loss configures it: all three members
as bootstrap, acks=all, a generous delivery timeout. Every message the client reports
delivered must be read back by a consumer group, and nothing may be read that was not
produced. Not idempotent here, so a batch retried across the kill may be stored twice:
duplicates are counted, not refused.

An idempotent producer bootstrapped with all three members works too: librdkafka asks
any broker for its producer id (and keeps asking that one), and a member that does not
lead gets it from the leader (before, it answered NOT_COORDINATOR and CI saw the
producer stuck for 30 s).
"""

import os
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pylib"))
from baton_cluster import Members  # noqa: E402

N = 300
KILL_AFTER = 100


@pytest.fixture
def members(tmp_path):
    m = Members(tmp_path, ["--kafka-initial-rebalance-delay-ms", "500"])
    try:
        m.start_all()
        yield m
    finally:
        m.stop_all()
        if os.environ.get("BATON_KEEP_LOG"):
            for i in range(3):
                print(m.log_tail(i))


def test_producer_and_group_consumer_survive_a_leader_kill(members):
    topic = "cluster-t"
    delivered, failed = [], []

    def on_delivery(err, msg):
        (failed if err else delivered).append(msg.value().decode() if not err else str(err))

    p = Producer({
        "bootstrap.servers": members.bootstrap(),
        "enable.idempotence": False,
        "acks": "all",
        "linger.ms": 5,
        "delivery.timeout.ms": 60000,
        "retry.backoff.ms": 50,
    })
    killed_at = None
    for n in range(N):
        if n == KILL_AFTER:
            assert p.flush(30) == 0, "the first messages were not delivered"
            members.kill(members.leader())
            killed_at = time.monotonic()
        p.produce(topic, value=f"m-{n}".encode(), on_delivery=on_delivery)
        p.poll(0)
        time.sleep(0.005)
    left = p.flush(90)
    took = time.monotonic() - killed_at
    assert left == 0, f"{left} messages still undelivered 90 s after the last produce"
    assert failed == [], f"delivery failures: {failed[:5]}"
    assert len(delivered) == N, len(delivered)
    print(f"all {N} delivered, {took:.1f} s after the leader's SIGKILL")

    c = Consumer({
        "bootstrap.servers": members.bootstrap(),
        "group.id": "cluster-g",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 60
    while len(set(got)) < N and time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is None or msg.error():
            continue
        got.append(msg.value().decode())
    c.close()
    dups = len(got) - len(set(got))
    print(f"read {len(got)}, {dups} of them again (a batch retried across the kill)")
    assert set(got) == set(delivered), (
        f"lost {sorted(set(delivered) - set(got))[:5]}, phantom {sorted(set(got) - set(delivered))[:5]}"
    )


def test_an_idempotent_producer_gets_its_id_through_any_member(members):
    topic = "cluster-idem"
    delivered, failed = [], []

    def on_delivery(err, msg):
        (failed if err else delivered).append(msg.value().decode() if not err else str(err))

    # The producer id is asked of a member that does not lead: bootstrap with followers only.
    leader = members.leader()
    members.all_know_leader()
    followers = ",".join(f"127.0.0.1:{members.kafka[i]}" for i in range(3) if i != leader)
    # Only the leader creates topics (a follower answers LEADER_NOT_AVAILABLE for one it
    # does not have): made there first.
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{members.kafka[leader]}"})
    for f in admin.create_topics([NewTopic(topic, num_partitions=1)]).values():
        f.result(timeout=15)
    p = Producer({
        "bootstrap.servers": followers,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "delivery.timeout.ms": 30000,
    })
    for n in range(200):
        p.produce(topic, value=f"i-{n}".encode(), on_delivery=on_delivery)
        p.poll(0)
    left = p.flush(30)
    assert left == 0, f"{left} messages undelivered after 30 s"
    assert failed == [], f"delivery failures: {failed[:5]}"

    c = Consumer({
        "bootstrap.servers": members.bootstrap(),
        "group.id": "cluster-idem-g",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 200 and time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is None or msg.error():
            continue
        got.append(msg.value().decode())
    c.close()
    assert sorted(got) == sorted(delivered), f"read {len(got)} of {len(delivered)}"
    assert len(set(got)) == len(got) == 200, "each message stored once"


def test_a_transaction_open_when_its_leader_dies_commits_through_the_client(members):
    """librdkafka's transactional producer across a SIGKILL of the leader (issue 15, D48 on
    D42): records produced in a transaction, the leader killed, then commit_transaction.
    The client finds the new coordinator by itself and commits there, or gets an abortable
    error, aborts and does the transaction again, as its contract says. Either way a
    read_committed reader sees every value exactly once, and a second transaction on the
    new leader commits as well."""
    topic = "cluster-txn"
    admin = AdminClient({"bootstrap.servers": members.bootstrap()})
    for f in admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=3)]).values():
        f.result(timeout=30)
    p = Producer({"bootstrap.servers": members.bootstrap(), "transactional.id": "cluster-tid",
                  "acks": "all", "linger.ms": 5, "transaction.timeout.ms": 60000})
    p.init_transactions(30)

    def one_transaction(tag, kill_before_commit):
        from confluent_kafka import KafkaException
        for attempt in range(3):
            p.begin_transaction()
            for i in range(20):
                p.produce(topic, value=f"{tag}-{i}".encode(), partition=i % 2)
            assert p.flush(60) == 0
            if kill_before_commit and attempt == 0:
                members.kill(members.leader())
            try:
                p.commit_transaction(90)
                return attempt
            except KafkaException as e:
                err = e.args[0]
                if err.txn_requires_abort():
                    p.abort_transaction(90)
                    continue
                if err.retriable():
                    p.commit_transaction(90)
                    return attempt
                raise
        raise AssertionError(f"transaction {tag} did not commit in three attempts")

    tries = one_transaction("a", kill_before_commit=True)
    one_transaction("b", kill_before_commit=False)
    print(f"the transaction across the kill took {tries + 1} attempt(s)")

    c = Consumer({"bootstrap.servers": members.bootstrap(), "group.id": "cluster-txn-reader",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "isolation.level": "read_committed"})
    c.subscribe([topic])
    want = {f"{t}-{i}" for t in "ab" for i in range(20)}
    got = []
    deadline = time.monotonic() + 60
    while set(got) != want and time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is None or msg.error():
            continue
        got.append(msg.value().decode())
    c.close()
    assert set(got) == want, f"missing {sorted(want - set(got))[:5]}, phantom {sorted(set(got) - want)[:5]}"
    assert len(got) == len(want), f"read_committed saw values twice: {len(got)} reads of {len(want)}"
