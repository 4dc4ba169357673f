"""Probes where Baton and Apache Kafka may answer differently. Each probe
takes a target (`bootstrap`, and `auto_create_off()` for a listener whose
broker-side topic auto-creation is off) and returns an ordered dict
{step: outcome}, the outcome a short string (an error name, an offset, a
count). test_diff.py runs every probe against both brokers and compares the
outcomes with the recorded ones in expected.py."""

import time
import uuid

from confluent_kafka import (Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, Producer,
                             TopicPartition)
from confluent_kafka.admin import AdminClient

import raw
from raw import err_name

# Codes a broker answers while it is still settling (a coordinator loading, or
# not yet in place for a new internal topic; a new topic's leader not yet
# known): retried, never recorded.
SETTLING = {3, 5, 6, 14, 15, 16}
STEP_TIMEOUT = 30


def name(tag):
    return f"diff-{tag}-{uuid.uuid4().hex[:8]}"


def settle(fn, retriable=SETTLING, timeout=STEP_TIMEOUT):
    """Call fn() until its first element is not a settling error code."""
    end = time.time() + timeout
    while True:
        out = fn()
        code = out[0] if isinstance(out, tuple) else out
        if code not in retriable or time.time() > end:
            return out
        time.sleep(0.2)


def new_topic(c, partitions=1):
    """A fresh topic, created and visible with all its partitions."""
    t = name("t")
    assert c.create_topic(t, partitions) == 0
    settle(lambda: c.metadata([t], False)[t][0])
    # A leader must be known before the first produce; Kafka needs a moment.
    settle(lambda: c.list_offsets(t, partitions - 1, -1))
    return t


def produce_ok(c, topic, values, partition=0, timestamps=None):
    err, base, _ = settle(lambda: c.produce(topic, partition, raw.record_batch(values, timestamps)),
                          retriable={6, 3})
    assert err == 0, err_name(err)
    return base


# ---------------------------------------------------------------- probes


def list_offsets_by_timestamp(target):
    """Records carry CreateTime one, two and three hours ago."""
    with raw.Conn(target.bootstrap) as c:
        t = new_topic(c)
        now = int(time.time() * 1000)
        hour = 3_600_000
        stamps = [now - 3 * hour, now - 2 * hour, now - hour]
        produce_ok(c, t, [b"a", b"b", b"c"], timestamps=stamps)
        out = {}
        out["earliest (-2)"] = str(c.list_offsets(t, 0, -2)[2])
        out["latest (-1)"] = str(c.list_offsets(t, 0, -1)[2])
        err, ts, off = c.list_offsets(t, 0, stamps[1])
        which = f"record {stamps.index(ts)}'s" if ts in stamps else "other"
        out["timestamp of record 1"] = f"{err_name(err)} offset={off} timestamp={which}"
        err, _, off = c.list_offsets(t, 0, now + hour)
        out["timestamp in the future"] = f"{err_name(err)} offset={off}"
        return out


def produce_unknown_topic(target):
    """A Produce naming a topic no request has named before (no Metadata first)."""
    out = {}
    with raw.Conn(target.bootstrap) as c:
        t = name("unknown")
        out["produce, auto-create on"] = err_name(c.produce(t, 0, raw.record_batch([b"x"]))[0])
        md = c.metadata([t], False)[t]
        out["topic exists after it"] = "yes" if md[0] == 0 else f"no ({err_name(md[0])})"
        t2 = name("unknown")
        out["Metadata allow_auto_create=false"] = err_name(c.metadata([t2], False)[t2][0])
    with target.auto_create_off() as bootstrap, raw.Conn(bootstrap) as c:
        t = name("unknown")
        out["produce, auto-create off"] = err_name(c.produce(t, 0, raw.record_batch([b"x"]))[0])
        out["Metadata allow_auto_create=true, auto-create off"] = err_name(c.metadata([t], True)[t][0])
    return out


def fetch_out_of_range(target):
    with raw.Conn(target.bootstrap) as c:
        t = new_topic(c)
        produce_ok(c, t, [b"a", b"b", b"c"])
        out = {}
        err, hw, recs = c.fetch(t, 0, 3)
        out["fetch at the high watermark"] = f"{err_name(err)} hw={hw} bytes={len(recs or b'')}"
        err, hw, _ = c.fetch(t, 0, 10)
        out["fetch past the high watermark"] = f"{err_name(err)} hw={hw}"
        err, hw, _ = c.fetch(t, 0, -5)
        out["fetch at a negative offset"] = f"{err_name(err)} hw={hw}"
        err, _, _ = c.fetch(t, 7, 0)
        out["fetch of a partition the topic lacks"] = err_name(err)
        return out


def idempotent_duplicate(target):
    """Idempotent batches sent by hand: a retry of the same sequence, a gap,
    an old sequence beyond the last five batches, a stale epoch."""
    with raw.Conn(target.bootstrap) as c:
        t = new_topic(c)
        err, pid, epoch = settle(lambda: c.init_producer_id())
        assert err == 0, err_name(err)
        out = {}

        def send(seq, values, ep=None, producer=None):
            batch = raw.record_batch(values, producer_id=pid if producer is None else producer,
                                     producer_epoch=epoch if ep is None else ep, base_sequence=seq)
            err, base, _ = c.produce(t, 0, batch)
            return err_name(err) + (f" offset={base}" if err == 0 else "")

        out["first batch (seq 0, 3 records)"] = send(0, [b"a", b"b", b"c"])
        out["same batch again"] = send(0, [b"a", b"b", b"c"])
        out["next batch (seq 3)"] = send(3, [b"d"])
        out["sequence gap (seq 10)"] = send(10, [b"z"])
        for i in range(4, 10):
            send(i, [b"e"])
        out["seq 0 again after 7 batches"] = send(0, [b"a", b"b", b"c"])
        out["epoch + 1, seq 0"] = send(0, [b"f"], ep=epoch + 1)
        out["old epoch after that"] = send(10, [b"z"])
        out["unallocated producer id, seq 5"] = send(5, [b"q"], producer=pid + 1_000_000)
        out["records stored"] = str(c.list_offsets(t, 0, -1)[2])
        return out


def delete_then_produce(target):
    with raw.Conn(target.bootstrap) as c:
        t = new_topic(c)
        produce_ok(c, t, [b"a", b"b"])
        out = {"DeleteTopics": err_name(c.delete_topics([t])[t])}
        # Kafka's broker learns of the deletion from the metadata log a moment
        # after the controller answers: wait until Metadata says it is gone.
        settle(lambda: 0 if c.metadata([t], False)[t][0] == 3 else 6, retriable={6}, timeout=10)
        out["Metadata after delete"] = err_name(c.metadata([t], False)[t][0])
        out["produce after delete"] = err_name(c.produce(t, 0, raw.record_batch([b"c"]))[0])
        err, _, off = c.list_offsets(t, 0, -1)
        out["latest offset after that"] = err_name(err) if err else str(off)
        out["DeleteTopics of an unknown topic"] = err_name(c.delete_topics([name("gone")]).popitem()[1])
        return out


def create_partitions(target):
    with raw.Conn(target.bootstrap) as c:
        t = new_topic(c, 1)
        out = {"1 -> 3": err_name(c.create_partitions(t, 3))}
        settle(lambda: 0 if len(c.metadata([t], False)[t][1]) == 3 else 6, retriable={6}, timeout=10)
        out["partitions in Metadata"] = str(c.metadata([t], False)[t][1])
        out["3 -> 2"] = err_name(c.create_partitions(t, 2))
        out["3 -> 3"] = err_name(c.create_partitions(t, 3))
        out["3 -> 5 validate_only"] = err_name(c.create_partitions(t, 5, validate_only=True))
        out["partitions after validate_only"] = str(len(c.metadata([t], False)[t][1]))
        out["unknown topic"] = err_name(c.create_partitions(name("nope"), 2))
        out["CreateTopics of an existing topic"] = err_name(c.create_topic(t, 1))
        out["CreateTopics with an invalid name"] = err_name(c.create_topic("bad name!", 1))
        return out


CONFIG_KEYS = ["cleanup.policy", "retention.ms", "max.message.bytes", "min.insync.replicas", "segment.bytes"]


def describe_configs(target):
    with raw.Conn(target.bootstrap) as c:
        t = new_topic(c)
        err, cfg = c.describe_configs(t)
        out = {"error": err_name(err), "entries": str(len(cfg))}
        for k in CONFIG_KEYS:
            out[k] = str(cfg.get(k, "(absent)"))
        out["unknown topic"] = err_name(c.describe_configs(name("nope"))[0])
        return out


def message_too_large(target):
    """A 2 MiB record: over Kafka's default max.message.bytes (1 MiB + 12)."""
    with raw.Conn(target.bootstrap) as c:
        t = new_topic(c)
        out = {"2 MiB record": err_name(c.produce(t, 0, raw.record_batch([b"x" * (2 << 20)]))[0])}
        out["900 KiB record"] = err_name(c.produce(t, 0, raw.record_batch([b"x" * (900 << 10)]))[0])
        return out


def group_after_leave(target):
    """A consumer joins, consumes, commits and closes (LeaveGroup): what does
    the group look like to the admin API afterwards?"""
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    with raw.Conn(target.bootstrap) as c:
        t = new_topic(c, 2)
        produce_ok(c, t, [b"a", b"b"])
    g = name("g")
    cons = Consumer({"bootstrap.servers": target.bootstrap, "group.id": g, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False})
    cons.subscribe([t])
    got, end = 0, time.time() + STEP_TIMEOUT
    while got < 2 and time.time() < end:
        m = cons.poll(0.5)
        if m is not None and not m.error():
            got += 1
    cons.commit(asynchronous=False)
    cons.close()
    out = {"consumed": str(got)}
    d = admin.describe_consumer_groups([g])[g].result(timeout=STEP_TIMEOUT)
    out["describe: state"] = d.state.name
    out["describe: members"] = str(len(d.members))
    out["describe: protocol"] = d.partition_assignor or "(empty)"
    listed = admin.list_consumer_groups().result(timeout=STEP_TIMEOUT)
    states = {x.group_id: x.state.name for x in listed.valid}
    out["listed"] = states.get(g, "(not listed)")
    offs = admin.list_consumer_group_offsets([_group_tps(g, t)])[g].result(timeout=STEP_TIMEOUT)
    out["committed offsets"] = str(sorted((tp.partition, tp.offset) for tp in offs.topic_partitions))
    try:
        admin.delete_consumer_groups([g])[g].result(timeout=STEP_TIMEOUT)
        out["delete group"] = "NONE"
    except KafkaException as e:
        out["delete group"] = e.args[0].name()
    unknown = name("nogroup")
    try:
        d = admin.describe_consumer_groups([unknown])[unknown].result(timeout=STEP_TIMEOUT)
        out["describe an unknown group"] = f"{d.state.name} members={len(d.members)}"
    except KafkaException as e:
        out["describe an unknown group"] = e.args[0].name()
    return out


def _group_tps(group, topic):
    return ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0), TopicPartition(topic, 1)])


def transactions(target):
    """A transactional producer (confluent-kafka) and the raw requests it sends."""
    out = {}
    with raw.Conn(target.bootstrap) as c:
        t = new_topic(c)
        txid = name("tx")
        out["FindCoordinator(transaction)"] = err_name(settle(lambda: c.find_coordinator(txid, 1)))
        out["InitProducerId(transactional.id)"] = err_name(settle(lambda: c.init_producer_id(txid))[0])
        err, pid, epoch = settle(lambda: c.init_producer_id())
        batch = raw.record_batch([b"t"], producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True)
        out["transactional batch without AddPartitionsToTxn"] = err_name(c.produce(t, 0, batch)[0])
    p = Producer({"bootstrap.servers": target.bootstrap, "transactional.id": name("tx"),
                  "transaction.timeout.ms": 10000})
    try:
        p.init_transactions(10)
        p.begin_transaction()
        p.produce(t, b"committed")
        p.commit_transaction(15)
        out["init/begin/produce/commit"] = "ok"
    except KafkaException as e:
        err = e.args[0]
        out["init/begin/produce/commit"] = f"{err.name()} fatal={err.fatal()} retriable={err.retriable()}"
    finally:
        try:
            p.flush(1)
        except KafkaException:
            pass  # a producer in a fatal state refuses even flush; its error is recorded above
    cons = Consumer({"bootstrap.servers": target.bootstrap, "group.id": name("g"), "auto.offset.reset": "earliest",
                     "isolation.level": "read_committed", "enable.auto.commit": False})
    cons.assign([TopicPartition(t, 0, 0)])
    seen, end = [], time.time() + 5
    while time.time() < end:
        m = cons.poll(0.5)
        if m is not None and not m.error():
            seen.append(m.value().decode())
        elif seen:
            break
    cons.close()
    out["read_committed sees"] = str(seen)
    return out


def _read_all(bootstrap, topic, isolation):
    """Every value a consumer at `isolation` reads from partition 0, until end of partition."""
    cons = Consumer({"bootstrap.servers": bootstrap, "group.id": name("g"), "auto.offset.reset": "earliest",
                     "isolation.level": isolation, "enable.auto.commit": False, "enable.partition.eof": True})
    cons.assign([TopicPartition(topic, 0, 0)])
    seen, end = [], time.time() + 10
    while time.time() < end:
        m = cons.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                break
            continue
        seen.append(m.value().decode())
    cons.close()
    return seen


def _txn_producer(bootstrap, txid):
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid, "transaction.timeout.ms": 10000})
    p.init_transactions(20)
    return p


def transaction_outcomes(target):
    """Commit, abort (flushed first, so its records are written), commit; then a zombie."""
    out = {}
    with raw.Conn(target.bootstrap) as c:
        t = new_topic(c)
    p = _txn_producer(target.bootstrap, name("tx"))
    for value, commit in (("A", True), ("B", False), ("C", True)):
        p.begin_transaction()
        p.produce(t, value.encode(), partition=0)
        p.flush(10)
        if commit:
            p.commit_transaction(15)
        else:
            p.abort_transaction(15)
    out["read_committed sees"] = str(_read_all(target.bootstrap, t, "read_committed"))
    out["read_uncommitted sees"] = str(_read_all(target.bootstrap, t, "read_uncommitted"))
    probe = Consumer({"bootstrap.servers": target.bootstrap, "group.id": name("g")})
    out["high watermark (3 records, 3 markers)"] = str(probe.get_watermark_offsets(TopicPartition(t, 0), 10)[1])
    probe.close()
    txid = name("zombie")
    old = _txn_producer(target.bootstrap, txid)
    old.begin_transaction()
    old.produce(t, b"Z", partition=0)
    old.flush(10)
    _txn_producer(target.bootstrap, txid)
    try:
        old.commit_transaction(15)
        out["zombie's commit"] = "ok"
    except KafkaException as e:
        err = e.args[0]
        out["zombie's commit"] = f"{err.name()} fatal={err.fatal()}"
    out["read_committed after the zombie"] = str(_read_all(target.bootstrap, t, "read_committed"))
    return out


PROBES = [
    list_offsets_by_timestamp, produce_unknown_topic, fetch_out_of_range, idempotent_duplicate,
    delete_then_produce, create_partitions, describe_configs, message_too_large, group_after_leave,
    transactions, transaction_outcomes,
]
