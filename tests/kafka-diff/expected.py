"""The recorded outcome of every probe step on Apache Kafka (the version
pinned in scripts/peers/kafka/pom.xml) and on Baton: {probe: {step: (kafka,
baton)}}. test_diff.py fails when either broker answers otherwise, and
docs/kafka.md carries this table (`python expected.py` prints it)."""

EXPECTED = {
    "list_offsets_by_timestamp": {
        "earliest (-2)": ("0", "0"),
        "latest (-1)": ("3", "3"),
        "timestamp of record 1": ("NONE offset=1 timestamp=record 1's", "NONE offset=1 timestamp=record 1's"),
        "timestamp in the future": ("NONE offset=-1", "NONE offset=-1"),
    },
    "produce_unknown_topic": {
        "produce, auto-create on": ("UNKNOWN_TOPIC_OR_PARTITION", "NONE"),
        "topic exists after it": ("no (UNKNOWN_TOPIC_OR_PARTITION)", "yes"),
        "Metadata allow_auto_create=false": ("UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_OR_PARTITION"),
        "produce, auto-create off": ("UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_OR_PARTITION"),
        "Metadata allow_auto_create=true, auto-create off": ("UNKNOWN_TOPIC_OR_PARTITION",
                                                             "UNKNOWN_TOPIC_OR_PARTITION"),
    },
    "fetch_out_of_range": {
        "fetch at the high watermark": ("NONE hw=3 bytes=0", "NONE hw=3 bytes=0"),
        "fetch past the high watermark": ("OFFSET_OUT_OF_RANGE hw=-1", "OFFSET_OUT_OF_RANGE hw=3"),
        "fetch at a negative offset": ("OFFSET_OUT_OF_RANGE hw=-1", "OFFSET_OUT_OF_RANGE hw=-1"),
        "fetch of a partition the topic lacks": ("UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_OR_PARTITION"),
    },
    "idempotent_duplicate": {
        "first batch (seq 0, 3 records)": ("NONE offset=0", "NONE offset=0"),
        "same batch again": ("NONE offset=0", "NONE offset=0"),
        "next batch (seq 3)": ("NONE offset=3", "NONE offset=3"),
        "sequence gap (seq 10)": ("OUT_OF_ORDER_SEQUENCE_NUMBER", "OUT_OF_ORDER_SEQUENCE_NUMBER"),
        "seq 0 again after 7 batches": ("OUT_OF_ORDER_SEQUENCE_NUMBER", "OUT_OF_ORDER_SEQUENCE_NUMBER"),
        "epoch + 1, seq 0": ("NONE offset=10", "NONE offset=10"),
        "old epoch after that": ("INVALID_PRODUCER_EPOCH", "INVALID_PRODUCER_EPOCH"),
        # A difference on purpose (issue 12 item 6): Kafka keeps state for any producer id a
        # client names; Baton refuses ids it never gave out, so a client cannot grow the
        # replicated producer state without bound. docs/kafka.md lists it.
        "unallocated producer id, seq 5": ("NONE offset=11", "UNKNOWN_PRODUCER_ID"),
        "records stored": ("12", "11"),
    },
    "delete_then_produce": {
        "DeleteTopics": ("NONE", "NONE"),
        "Metadata after delete": ("UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_OR_PARTITION"),
        "produce after delete": ("UNKNOWN_TOPIC_OR_PARTITION", "NONE"),
        "latest offset after that": ("UNKNOWN_TOPIC_OR_PARTITION", "1"),
        "DeleteTopics of an unknown topic": ("UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_OR_PARTITION"),
    },
    "create_partitions": {
        "1 -> 3": ("NONE", "NONE"),
        "partitions in Metadata": ("[0, 1, 2]", "[0, 1, 2]"),
        "3 -> 2": ("INVALID_PARTITIONS", "INVALID_PARTITIONS"),
        "3 -> 3": ("INVALID_PARTITIONS", "INVALID_PARTITIONS"),
        "3 -> 5 validate_only": ("NONE", "NONE"),
        "partitions after validate_only": ("3", "3"),
        "unknown topic": ("UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_OR_PARTITION"),
        "CreateTopics of an existing topic": ("TOPIC_ALREADY_EXISTS", "TOPIC_ALREADY_EXISTS"),
        "CreateTopics with an invalid name": ("INVALID_TOPIC_EXCEPTION", "INVALID_TOPIC_EXCEPTION"),
    },
    "describe_configs": {
        "error": ("NONE", "NONE"),
        "entries": ("33", "21"),
        "cleanup.policy": ("delete", "delete"),
        "retention.ms": ("604800000", "-1"),
        "max.message.bytes": ("1048588", "1048588"),
        "min.insync.replicas": ("1", "1"),
        "segment.bytes": ("1073741824", "1073741824"),
        "unknown topic": ("UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_OR_PARTITION"),
    },
    "message_too_large": {
        "2 MiB record": ("MESSAGE_TOO_LARGE", "MESSAGE_TOO_LARGE"),
        "900 KiB record": ("NONE", "NONE"),
    },
    "group_after_leave": {
        "consumed": ("2", "2"),
        "describe: state": ("EMPTY", "EMPTY"),
        "describe: members": ("0", "0"),
        "describe: protocol": ("(empty)", "(empty)"),
        "listed": ("EMPTY", "EMPTY"),
        "committed offsets": ("[(0, 2), (1, -1001)]", "[(0, 2), (1, -1001)]"),
        "delete group": ("NONE", "NONE"),
        "describe an unknown group": ("DEAD members=0", "DEAD members=0"),
    },
    "transactions": {
        "FindCoordinator(transaction)": ("NONE", "NONE"),
        "InitProducerId(transactional.id)": ("NONE", "NONE"),
        "transactional batch without AddPartitionsToTxn": ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                                                           "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
        "init/begin/produce/commit": ("ok", "ok"),
        "read_committed sees": ("['committed']", "['committed']"),
    },
    "transaction_outcomes": {
        "read_committed sees": ("['A', 'C']", "['A', 'C']"),
        "read_uncommitted sees": ("['A', 'B', 'C']", "['A', 'B', 'C']"),
        "high watermark (3 records, 3 markers)": ("6", "6"),
        "zombie's commit": ("_FENCED fatal=True", "_FENCED fatal=True"),
        "read_committed after the zombie": ("['A', 'C']", "['A', 'C']"),
    },
}


def markdown():
    """The table docs/kafka.md carries: one row per probe step."""
    lines = ["| probe | step | Apache Kafka | Baton |", "|---|---|---|---|"]
    for probe, steps in EXPECTED.items():
        for step, (k, b) in steps.items():
            mark = "" if k == b else " **≠**"
            lines.append(f"| `{probe}` | {step} | {k} | {b}{mark} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
