"""A minimal Kafka wire client for the probes: one blocking TCP connection,
non-flexible request versions that both Apache Kafka 4.x and Baton serve,
and answers decoded into plain dicts. The probes use it where a client
library would hide the broker's error code (it retries, or maps the code to
its own error) or would never send the request (a duplicated idempotent
sequence, a produce without a prior Metadata)."""

import socket
import struct

from kafka.record.default_records import DefaultRecordBatchBuilder

ERRORS = {
    -1: "UNKNOWN_SERVER_ERROR", 0: "NONE", 1: "OFFSET_OUT_OF_RANGE", 2: "CORRUPT_MESSAGE",
    3: "UNKNOWN_TOPIC_OR_PARTITION", 5: "LEADER_NOT_AVAILABLE", 6: "NOT_LEADER_OR_FOLLOWER", 7: "REQUEST_TIMED_OUT",
    10: "MESSAGE_TOO_LARGE", 14: "COORDINATOR_LOAD_IN_PROGRESS", 15: "COORDINATOR_NOT_AVAILABLE", 16: "NOT_COORDINATOR",
    17: "INVALID_TOPIC_EXCEPTION", 36: "TOPIC_ALREADY_EXISTS", 35: "UNSUPPORTED_VERSION", 37: "INVALID_PARTITIONS",
    42: "INVALID_REQUEST", 45: "OUT_OF_ORDER_SEQUENCE_NUMBER", 46: "DUPLICATE_SEQUENCE_NUMBER",
    47: "INVALID_PRODUCER_EPOCH", 53: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", 59: "UNKNOWN_PRODUCER_ID",
    69: "GROUP_ID_NOT_FOUND", 87: "INVALID_RECORD", 100: "UNKNOWN_TOPIC_ID",
}


def err_name(code):
    return ERRORS.get(code, f"ERROR_{code}")


# ------------------------------------------------------------ encoding


def i8(v):
    return struct.pack(">b", v)


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def string(s):
    if s is None:
        return i16(-1)
    b = s.encode()
    return i16(len(b)) + b


def nbytes(b):
    if b is None:
        return i32(-1)
    return i32(len(b)) + b


def array(items, enc):
    if items is None:
        return i32(-1)
    return i32(len(items)) + b"".join(enc(x) for x in items)


class Reader:
    def __init__(self, buf):
        self.buf, self.pos = buf, 0

    def _take(self, fmt):
        (v,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def i8(self):
        return self._take(">b")

    def i16(self):
        return self._take(">h")

    def i32(self):
        return self._take(">i")

    def i64(self):
        return self._take(">q")

    def boolean(self):
        return self.i8() != 0

    def string(self):
        n = self.i16()
        if n < 0:
            return None
        s = self.buf[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def bytes(self):
        n = self.i32()
        if n < 0:
            return None
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def array(self, dec):
        n = self.i32()
        return None if n < 0 else [dec(self) for _ in range(n)]


# ------------------------------------------------------------ records


def record_batch(values, timestamps=None, producer_id=-1, producer_epoch=-1, base_sequence=-1,
                 transactional=False):
    """A RecordBatch v2 holding `values`, optionally idempotent/transactional."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional,
                                  producer_id=producer_id, producer_epoch=producer_epoch,
                                  base_sequence=base_sequence, batch_size=1 << 20)
    for i, v in enumerate(values):
        ts = timestamps[i] if timestamps else 1_700_000_000_000 + i
        b.append(i, timestamp=ts, key=None, value=v, headers=[])
    return bytes(b.build())


# ------------------------------------------------------------ connection


class Conn:
    """One connection; `call` sends a request and returns the answer body."""

    def __init__(self, bootstrap, timeout=30):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.corr = 0

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _read_exact(self, n):
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            out += chunk
        return bytes(out)

    def call(self, api_key, version, body):
        self.corr += 1
        header = i16(api_key) + i16(version) + i32(self.corr) + string("kafka-diff")
        frame = header + body
        self.sock.sendall(i32(len(frame)) + frame)
        (size,) = struct.unpack(">i", self._read_exact(4))
        r = Reader(self._read_exact(size))
        corr = r.i32()
        assert corr == self.corr, (corr, self.corr)
        return r

    # -------------------------------------------------------- APIs

    def api_versions(self):
        r = self.call(18, 0, b"")
        err = r.i16()
        keys = r.array(lambda r: (r.i16(), r.i16(), r.i16()))
        return err, {k: (lo, hi) for k, lo, hi in keys}

    def metadata(self, topics, allow_auto_create):
        """Metadata v4: {topic: (error, [partition ids])}."""
        body = array(topics, string) + i8(1 if allow_auto_create else 0)
        r = self.call(3, 4, body)
        r.i32()  # throttle
        r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))  # brokers
        r.string()  # cluster id
        r.i32()  # controller

        def part(r):
            err, idx, _leader = r.i16(), r.i32(), r.i32()
            r.array(Reader.i32)
            r.array(Reader.i32)
            return idx, err

        out = {}
        for err, name, _internal, parts in r.array(lambda r: (r.i16(), r.string(), r.boolean(), r.array(part))):
            out[name] = (err, sorted(p for p, _ in parts))
        return out

    def produce(self, topic, partition, batch, acks=-1, timeout_ms=10000):
        """Produce v7: (error, base_offset, log_start_offset)."""
        body = (string(None) + i16(acks) + i32(timeout_ms)
                + array([topic], lambda t: string(t) + array([partition], lambda p: i32(p) + nbytes(batch))))
        r = self.call(0, 7, body)

        def part(r):
            return r.i32(), r.i16(), r.i64(), r.i64(), r.i64()

        topics = r.array(lambda r: (r.string(), r.array(part)))
        _idx, err, base, _append_time, log_start = topics[0][1][0]
        return err, base, log_start

    def fetch(self, topic, partition, offset, max_wait_ms=100):
        """Fetch v4: (error, high_watermark, record bytes)."""
        body = (i32(-1) + i32(max_wait_ms) + i32(1) + i32(1 << 20) + i8(0)
                + array([topic], lambda t: string(t) + array([partition],
                                                              lambda p: i32(p) + i64(offset) + i32(1 << 20))))
        r = self.call(1, 4, body)
        r.i32()  # throttle

        def part(r):
            idx, err, hw, _lso = r.i32(), r.i16(), r.i64(), r.i64()
            r.array(lambda r: (r.i64(), r.i64()))  # aborted transactions
            return idx, err, hw, r.bytes()

        topics = r.array(lambda r: (r.string(), r.array(part)))
        _idx, err, hw, records = topics[0][1][0]
        return err, hw, records

    def list_offsets(self, topic, partition, timestamp):
        """ListOffsets v1: (error, timestamp, offset)."""
        body = i32(-1) + array([topic], lambda t: string(t) + array([partition], lambda p: i32(p) + i64(timestamp)))
        r = self.call(2, 1, body)
        topics = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16(), r.i64(), r.i64()))))
        _idx, err, ts, off = topics[0][1][0]
        return err, ts, off

    def init_producer_id(self, transactional_id=None, timeout_ms=60000):
        """InitProducerId v1: (error, producer id, epoch)."""
        r = self.call(22, 1, string(transactional_id) + i32(timeout_ms))
        r.i32()  # throttle
        return r.i16(), r.i64(), r.i16()

    def find_coordinator(self, key, key_type):
        """FindCoordinator v1 (key_type 0 group, 1 transaction): error code."""
        r = self.call(10, 1, string(key) + i8(key_type))
        r.i32()
        return r.i16()

    def describe_configs(self, topic):
        """DescribeConfigs v1 for a topic: (error, {name: value})."""
        body = array([topic], lambda t: i8(2) + string(t) + i32(-1)) + i8(0)
        r = self.call(32, 1, body)
        r.i32()

        def entry(r):
            name, value, _ro = r.string(), r.string(), r.boolean()
            r.i8()  # source
            r.boolean()  # sensitive
            r.array(lambda r: (r.string(), r.string(), r.i8()))  # synonyms
            return name, value

        res = r.array(lambda r: (r.i16(), r.string(), r.i8(), r.string(), r.array(entry)))
        err, _msg, _type, _name, entries = res[0]
        return err, dict(entries or [])

    def create_partitions(self, topic, count, validate_only=False):
        """CreatePartitions v1: error code."""
        body = array([topic], lambda t: string(t) + i32(count) + i32(-1)) + i32(10000) + i8(1 if validate_only else 0)
        r = self.call(37, 1, body)
        r.i32()
        res = r.array(lambda r: (r.string(), r.i16(), r.string()))
        return res[0][1]

    def delete_topics(self, topics):
        """DeleteTopics v1: {topic: error}."""
        r = self.call(20, 1, array(topics, string) + i32(10000))
        r.i32()
        return dict(r.array(lambda r: (r.string(), r.i16())))

    def create_topic(self, topic, partitions):
        """CreateTopics v2: error code."""
        t = string(topic) + i32(partitions) + i16(1) + i32(0) + i32(0)
        r = self.call(19, 2, i32(1) + t + i32(10000) + i8(0))
        r.i32()
        res = r.array(lambda r: (r.string(), r.i16(), r.string()))
        return res[0][1]
