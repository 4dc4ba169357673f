//! Compacted topics (`cleanup.policy=compact`, issue 15 item 5, D50) against the real
//! `baton` binary: keyed records over many 1 MiB segments, then what a reader gets back
//! over Kafka and over HTTP, across a kill -9, and what `baton check data` says of the
//! rewritten files.

use crate::common;
use crate::kafka_util;

use bytes::Bytes;
use common::Server;
use kafka_protocol::messages::*;
use kafka_protocol::records::{Compression, RecordBatchDecoder};
use kafka_util::*;
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

const KEYS: usize = 20;
const ROUNDS: usize = 150;
const VALUE: usize = 1500;

fn http(s: &Server, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut t = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    t.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    t.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    t.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

fn metric(s: &Server, series: &str) -> f64 {
    let (_, text) = http(s, "GET", "/metrics/prometheus", "");
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok()).unwrap_or(0.0)
}

fn create_compacted(k: &mut Kafka, t: &str) {
    let req = CreateTopicsRequest::default().with_timeout_ms(5000).with_topics(vec![
        create_topics_request::CreatableTopic::default()
            .with_name(topic(t))
            .with_num_partitions(1)
            .with_replication_factor(-1)
            .with_configs(vec![create_topics_request::CreatableTopicConfig::default()
                .with_name(name("cleanup.policy"))
                .with_value(Some(name("compact")))]),
    ]);
    let r: CreateTopicsResponse = k.call(ApiKey::CreateTopics, 5, &req);
    assert_eq!(r.topics[0].error_code, 0);
}

/// What was written at each offset: (key, value); `None` key for keyless, `None` value for a tombstone.
type Written = BTreeMap<i64, (Option<Bytes>, Option<Bytes>)>;

/// Every record from offset 0 to the high watermark, by offset.
fn read_all(k: &mut Kafka, t: &str) -> Written {
    let mut out = Written::new();
    let mut at = 0i64;
    for _ in 0..10_000 {
        let p = k.fetch(t, 0, at, 100);
        assert_eq!(p.error_code, 0);
        let Some(mut bytes) = p.records.clone() else { break };
        if bytes.is_empty() || at >= p.high_watermark {
            break;
        }
        for set in RecordBatchDecoder::decode_all(&mut bytes).unwrap() {
            for r in set.records {
                if r.offset >= at {
                    assert!(out.insert(r.offset, (r.key, r.value)).is_none(), "offset {} twice", r.offset);
                }
            }
        }
        // Batches keep their span when records are dropped: resume after the last offset
        // fetched or, when the whole answer was dropped records, after what it covered.
        let next = out.keys().next_back().map_or(at, |o| o + 1).max(at);
        if next == at {
            let covered = last_offset_covered(p.records.as_ref().unwrap());
            assert!(covered >= at, "a fetch from {at} that moves nowhere");
            at = covered + 1;
        } else {
            at = next;
        }
        if at >= p.high_watermark {
            break;
        }
    }
    out
}

/// The last offset the batches in `b` span (base offset + lastOffsetDelta).
fn last_offset_covered(b: &Bytes) -> i64 {
    let (mut at, mut last) = (0usize, -1i64);
    while at + 61 <= b.len() {
        let base = i64::from_be_bytes(b[at..at + 8].try_into().unwrap());
        let len = i32::from_be_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize + 12;
        let delta = i32::from_be_bytes(b[at + 23..at + 27].try_into().unwrap());
        last = base + i64::from(delta);
        at += len;
    }
    last
}

fn key(i: usize) -> Option<Bytes> {
    Some(Bytes::from(format!("key-{i:02}")))
}

#[test]
fn a_compacted_topic_keeps_the_latest_record_per_key_and_every_offset() {
    let (mut s, port) = Server::start_kafka(&["--partition-segment-mb", "1", "--checkpoint-interval-secs", "1"]);
    let mut k = Kafka::connect(port);
    create_compacted(&mut k, "changelog");
    // A topic that only deletes by age is never compacted, whatever it holds.
    let written = produce_rounds(&mut k, "changelog");
    k.metadata(&["plain"]);
    produce_rounds(&mut k, "plain");

    // Wait (bounded) for passes to rewrite the closed segments.
    let deadline = Instant::now() + Duration::from_secs(60);
    while metric(&s, "baton_compaction_segments_rewritten_total") < 3.0 {
        assert!(Instant::now() < deadline, "no compaction within a minute:\n{}", s.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(metric(&s, "baton_compaction_failures_total"), 0.0);
    let before = read_settled(&mut k, "changelog");
    judge(&written, &before, true);
    assert_eq!(read_all(&mut k, "plain").len(), written.len(), "a delete-policy topic loses nothing");

    // A kill -9 at any moment after a swap: the node comes back to a generation its
    // checkpoint names (the rewrite, or the segment as written when no checkpoint took it
    // yet), and compaction gets back to the same records.
    s.kill9();
    s.restart();
    let mut k = Kafka::connect(port);
    let deadline = Instant::now() + Duration::from_secs(60);
    let after = loop {
        let now = read_settled(&mut k, "changelog");
        judge(&written, &now, false);
        assert!(before.keys().all(|o| now.contains_key(o)), "a record kept before the restart is gone");
        if now == before {
            break now;
        }
        assert!(Instant::now() < deadline, "compaction did not get back to the same records after a restart");
        std::thread::sleep(Duration::from_millis(300));
    };

    // D69: the shrunken closed segments are merged into one (the pass after the restart
    // reads them all again); the delete-policy topic keeps every segment it closed.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut segs: Vec<usize> = std::fs::read_dir(s.dir.join("partitions"))
            .unwrap()
            .map(|d| d.unwrap().path())
            .filter(|p| p.is_dir() && !p.file_name().unwrap().to_string_lossy().starts_with('.'))
            .map(|p| {
                let files = std::fs::read_dir(p).unwrap();
                files.filter(|f| f.as_ref().unwrap().file_name().to_string_lossy().ends_with(".seg")).count()
            })
            .collect();
        segs.sort();
        if segs.len() == 2 && segs[0] <= 2 && segs[1] >= 4 {
            break;
        }
        assert!(Instant::now() < deadline, "segments per partition {segs:?}: the compacted one was not merged");
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(read_all(&mut k, "changelog"), after, "a merge changed what a reader gets");

    // HTTP pops over the same topic are given exactly the surviving records; the offsets
    // compaction dropped are settled, not redelivered once their leases run out.
    let mut popped = BTreeMap::new();
    for _ in 0..200 {
        let (st, body) = http(&s, "GET", "/api/v1/pop/queue/changelog?batch=500&leaseSeconds=1", "");
        if st == 204 {
            break;
        }
        assert_eq!(st, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        for m in v["messages"].as_array().unwrap() {
            let o = m["offset"].as_i64().unwrap();
            assert!(popped.insert(o, ()).is_none(), "offset {o} delivered twice");
            let ack = serde_json::json!({
                "partitionId": m["partitionId"], "offset": o, "leaseId": m["leaseId"], "status": "completed"
            });
            let (st, body) = http(&s, "POST", "/api/v1/ack", &ack.to_string());
            assert_eq!(st, 200, "{body}");
        }
    }
    let surviving: Vec<i64> = after.keys().copied().collect();
    assert_eq!(popped.keys().copied().collect::<Vec<_>>(), surviving);
    std::thread::sleep(Duration::from_millis(1500));
    let (st, body) = http(&s, "GET", "/api/v1/pop/queue/changelog?batch=500", "");
    assert_eq!(st, 204, "nothing is left to deliver once the leases ran out: {body}");

    // The files as rewritten pass the offline check.
    s.terminate();
    let out =
        std::process::Command::new(env!("CARGO_BIN_EXE_baton")).args(["check", "data"]).arg(&s.dir).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && !text.contains("damage"), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let gens = std::fs::read_dir(s.dir.join("partitions"))
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .filter(|f| f.as_ref().unwrap().file_name().to_string_lossy().contains(".g"))
        .count();
    assert!(gens >= 3 && gens % 3 == 0, "the merged segment is under its generation's names ({gens} files)");
}

/// Rounds of every key, each key's value naming its round (then noise, so gzip cannot
/// shrink it); round 7 also writes a record without a key, and key 3's last record is a
/// tombstone. Half the rounds gzip'd.
fn produce_rounds(k: &mut Kafka, t: &str) -> Written {
    let mut written = Written::new();
    let mut next = 0i64;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for round in 0..ROUNDS {
        let mut recs: Vec<(Option<Bytes>, Option<Bytes>)> = (0..KEYS)
            .map(|i| {
                let mut v = format!("{t}/key-{i:02}/round-{round:03}/").into_bytes();
                while v.len() < VALUE {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    v.push(b'a' + (x >> 59) as u8);
                }
                let v = if round + 1 == ROUNDS && i == 3 { None } else { Some(Bytes::from(v)) };
                (key(i), v)
            })
            .collect();
        if round == 7 {
            recs.push((None, Some(Bytes::from_static(b"no key"))));
        }
        let c = if round % 2 == 0 { Compression::None } else { Compression::Gzip };
        let stamps: Vec<i64> = (0..recs.len() as i64).map(|i| 1_700_000_000_000 + i).collect();
        let r = k.produce(t, 0, keyed_batch(&recs, &stamps, c, None), -1);
        assert_eq!((r.error_code, r.base_offset), (0, next), "round {round}");
        for rec in recs {
            written.insert(next, rec);
            next += 1;
        }
    }
    written
}

/// `read_all` until two reads in a row agree (at most 50): one read is several fetches,
/// and a pass that ran between them shows older segments as they were and newer ones
/// compacted, which the partition never held at any one moment (CI saw it). What is
/// judged must be one state of the partition.
fn read_settled(k: &mut Kafka, t: &str) -> Written {
    let mut last = read_all(k, t);
    for _ in 0..50 {
        let now = read_all(k, t);
        if now == last {
            return now;
        }
        last = now;
    }
    panic!("{t}: 50 reads in a row differed");
}

/// What a compacted read must be: every record it shows is the one written at its offset;
/// the record without a key and the latest record of each key (a tombstone too) are there;
/// for each key what survives is a suffix of what was written; and (`compacted`) most is gone.
fn judge(written: &Written, read: &Written, compacted: bool) {
    for (o, r) in read {
        assert_eq!(written.get(o), Some(r), "offset {o} does not hold what was written there");
    }
    let mut by_key: HashMap<Option<Bytes>, Vec<i64>> = HashMap::new();
    for (o, (k, _)) in written {
        by_key.entry(k.clone()).or_default().push(*o);
    }
    for (k, offsets) in &by_key {
        let kept: Vec<i64> = offsets.iter().copied().filter(|o| read.contains_key(o)).collect();
        assert!(!kept.is_empty() && kept.last() == offsets.last(), "key {k:?}: its latest record is gone");
        assert_eq!(
            kept,
            offsets[offsets.len() - kept.len()..],
            "key {k:?}: a newer record dropped before an older one"
        );
    }
    assert!(
        !compacted || read.len() * 2 < written.len(),
        "compaction dropped little: {} of {}",
        read.len(),
        written.len()
    );
}

fn create_with(k: &mut Kafka, t: &str, configs: &[(&str, &str)]) {
    let configs = configs
        .iter()
        .map(|(n, v)| {
            create_topics_request::CreatableTopicConfig::default().with_name(name(n)).with_value(Some(name(v)))
        })
        .collect();
    let req = CreateTopicsRequest::default().with_timeout_ms(5000).with_topics(vec![
        create_topics_request::CreatableTopic::default()
            .with_name(topic(t))
            .with_num_partitions(1)
            .with_replication_factor(-1)
            .with_configs(configs),
    ]);
    let r: CreateTopicsResponse = k.call(ApiKey::CreateTopics, 5, &req);
    assert_eq!(r.topics[0].error_code, 0, "{r:?}");
}

/// 800 records of unique keys (1.2 MB): the segment holding what came before closes.
fn fill(k: &mut Kafka, t: &str, written: &mut Written) {
    let mut next = written.keys().next_back().map_or(0, |o| o + 1);
    for b in 0..8 {
        let recs: Vec<(Option<Bytes>, Option<Bytes>)> = (0..100)
            .map(|i| (Some(Bytes::from(format!("filler-{b}-{i}"))), Some(Bytes::from(vec![b'f'; VALUE]))))
            .collect();
        let stamps: Vec<i64> = (0..recs.len() as i64).map(|i| 1_700_000_000_000 + i).collect();
        let r = k.produce(t, 0, keyed_batch(&recs, &stamps, Compression::None, None), -1);
        assert_eq!((r.error_code, r.base_offset), (0, next));
        for rec in recs {
            written.insert(next, rec);
            next += 1;
        }
    }
}

#[test]
fn tombstones_go_after_delete_retention_and_young_segments_wait_for_the_lag() {
    let (s, port) = Server::start_kafka(&["--partition-segment-mb", "1", "--checkpoint-interval-secs", "1"]);
    let mut k = Kafka::connect(port);
    // Created first: every compaction tick looks at its partition before the other's (D68).
    create_with(&mut k, "young", &[("cleanup.policy", "compact"), ("min.compaction.lag.ms", "3600000")]);
    create_with(&mut k, "deleting", &[("cleanup.policy", "compact"), ("delete.retention.ms", "0")]);
    let mut young = produce_rounds(&mut k, "young");
    fill(&mut k, "young", &mut young);
    let mut written = produce_rounds(&mut k, "deleting");
    // Key 3's tombstone is in the last round: close its segment.
    fill(&mut k, "deleting", &mut written);

    let deadline = Instant::now() + Duration::from_secs(60);
    let read = loop {
        let read = read_settled(&mut k, "deleting");
        if metric(&s, "baton_compaction_segments_rewritten_total") >= 3.0 && !read.values().any(|(k, _)| *k == key(3)) {
            break read;
        }
        assert!(Instant::now() < deadline, "key 3's tombstone was not removed within a minute:\n{}", s.log());
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(metric(&s, "baton_compaction_failures_total"), 0.0);
    // Every other key keeps its latest record; key 3 is gone whole, its tombstone too.
    let rest: Written = written.iter().filter(|(_, (k, _))| *k != key(3)).map(|(o, r)| (*o, r.clone())).collect();
    judge(&rest, &read, true);
    // A topic whose records are younger than its min.compaction.lag.ms keeps everything.
    assert_eq!(read_all(&mut k, "young"), young, "a segment younger than the lag was compacted");
}

/// D70: the per-topic `segment.bytes` closes segments at 1 MiB on a node whose own size is
/// 64 MiB; `min.cleanable.dirty.ratio=1` holds every pass back; `max.compaction.lag.ms`
/// closes a segment by age and runs a pass for it whatever the ratio.
#[test]
fn dirty_ratio_max_lag_and_segment_bytes_decide_when_a_topic_is_compacted() {
    let (s, port) = Server::start_kafka(&["--checkpoint-interval-secs", "1"]);
    let mut k = Kafka::connect(port);
    // Created first, so every compaction tick looks at it before the others.
    let sized = [("cleanup.policy", "compact"), ("segment.bytes", "1048576")];
    create_with(&mut k, "lazy", &[sized[0], sized[1], ("min.cleanable.dirty.ratio", "1")]);
    create_with(&mut k, "sized", &[sized[0], sized[1], ("min.cleanable.dirty.ratio", "0.01")]);
    let lag = [("cleanup.policy", "compact"), ("min.cleanable.dirty.ratio", "1"), ("max.compaction.lag.ms", "2000")];
    create_with(&mut k, "lagged", &lag);
    // Kafka 4's floor for segment.bytes, and Baton's for an age: refused whole.
    for (n, v) in [("segment.bytes", "1000"), ("max.compaction.lag.ms", "10"), ("segment.ms", "1")] {
        let req = CreateTopicsRequest::default().with_timeout_ms(5000).with_topics(vec![
            create_topics_request::CreatableTopic::default()
                .with_name(topic("refused"))
                .with_num_partitions(1)
                .with_replication_factor(-1)
                .with_configs(vec![create_topics_request::CreatableTopicConfig::default()
                    .with_name(name(n))
                    .with_value(Some(name(v)))]),
        ]);
        let r: CreateTopicsResponse = k.call(ApiKey::CreateTopics, 5, &req);
        assert_eq!(r.topics[0].error_code, 40, "{n}={v}: INVALID_CONFIG, {r:?}");
    }

    let mut lazy = produce_rounds(&mut k, "lazy");
    fill(&mut k, "lazy", &mut lazy);
    let mut sized = produce_rounds(&mut k, "sized");
    fill(&mut k, "sized", &mut sized);
    let mut lagged = produce_rounds(&mut k, "lagged");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let read = read_settled(&mut k, "sized");
        if read.len() * 2 < sized.len() {
            judge(&sized, &read, true);
            break;
        }
        assert!(Instant::now() < deadline, "1 MiB segments of a 64 MiB node were not compacted:\n{}", s.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    // The lagged topic's one segment is 64 MiB from full: only its age can close it, at the
    // first append past the lag; then the lag runs a pass although the ratio never would.
    std::thread::sleep(Duration::from_millis(2100));
    let one = vec![(Some(Bytes::from_static(b"late")), Some(Bytes::from_static(b"v")))];
    let r = k.produce("lagged", 0, keyed_batch(&one, &[1_700_000_000_000], Compression::None, None), -1);
    assert_eq!(r.error_code, 0);
    lagged.insert(r.base_offset, one[0].clone());
    loop {
        let read = read_settled(&mut k, "lagged");
        if read.len() * 2 < lagged.len() {
            judge(&lagged, &read, true);
            break;
        }
        assert!(Instant::now() < deadline, "max.compaction.lag.ms did not compact:\n{}", s.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    // Looked at first on every tick since its segments closed, and never due.
    assert_eq!(read_all(&mut k, "lazy"), lazy, "a topic whose ratio is 1 was compacted");
    assert_eq!(metric(&s, "baton_compaction_failures_total"), 0.0);
}
