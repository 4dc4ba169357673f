//! The recording Kafka clients: each a seeded random mix, on Baton's Kafka
//! door, of idempotent produces (explicit producer id, epoch and base
//! sequence), plain produces, fetches from an offset, standalone offset
//! commits (generation -1) and offset fetches, on a Kafka-only topic of the
//! run (`<prefix>-k`, `--partitions` partitions, created with CreateTopics)
//! and one group (`<prefix>-kg`) that nothing else uses; and, at the end, the
//! topic's whole log per partition (`final_log` with each record's payload).
//!
//! A record's value is a unique id (`kc<process>-<n>`, not JSON, so the HTTP
//! fetch that reads the final log shows the same text); the history names the
//! record by it. An idempotent produce whose answer was lost is sent again,
//! the same batch bytes with the same sequence, before anything else, until
//! an answer says ok or refused: the broker must store it once
//! (`kafka_idempotent_duplicate`).
//!
//! Owns the Kafka operations' invocation and completion lines and the mapping
//! of each answer to `ok` / `failed` / `unknown`. Must never send a request
//! before its invocation line is written, never write `failed` unless the
//! answer's error code says the broker refused before changing anything (a
//! timeout, a dropped connection, KAFKA_STORAGE_ERROR and every code not
//! listed below are `unknown`), and never resend a produce with a new
//! sequence or new payloads while an earlier one's outcome is unknown.

use super::writer::{obj, End};
use super::Ctx;
use crate::pipeline::Rng;
use baton_client::kafka::{record_batch, KafkaConn, KafkaError, ProducerSeq};
use bytes::Bytes;
use serde_json::{json, Map, Value};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::Duration;

/// What every Kafka client of the run shares.
pub struct KafkaSetup {
    /// The partition leader's address as Metadata advertised it.
    pub addr: String,
    pub topic: String,
    pub partitions: u32,
    pub group: String,
    /// Every request's bound, as the HTTP clients' (answers after a SIGCONT arrive).
    pub timeout: Duration,
}

/// Entries per `final_log` line, as the queues' (final_state.rs).
const LOG_CHUNK: usize = 2_000;
/// About this much per fetch: keeps a history line short when a fetch starts far back.
const FETCH_BYTES: i32 = 32 << 10;

/// Create the run's topic and find its leader (Baton is one node: every
/// partition's leader is it, and it must say so).
pub async fn setup(bootstrap: &str, prefix: &str, partitions: u32, timeout: Duration) -> Result<KafkaSetup, String> {
    let topic = format!("{prefix}-k");
    let mut c = KafkaConn::connect(bootstrap, timeout).await.map_err(|e| format!("kafka {bootstrap}: {e}"))?;
    c.create_topic(&topic, partitions as i32).await.map_err(|e| format!("kafka: create topic {topic}: {e}"))?;
    let md = c.metadata(&topic).await.map_err(|e| format!("kafka: metadata of {topic}: {e}"))?;
    if md.error != 0 || md.partitions.len() != partitions as usize || md.partitions.iter().any(|p| p.error != 0) {
        return Err(format!("kafka: metadata of {topic} after creating it: {md:?}"));
    }
    let leader = md.partitions[0].leader;
    let Some((_, host, port)) = md.brokers.iter().find(|(n, _, _)| *n == leader) else {
        return Err(format!("kafka: the leader {leader} of {topic} is not among the brokers: {md:?}"));
    };
    if md.partitions.iter().any(|p| p.leader != leader) {
        return Err(format!("kafka: one node, several leaders: {md:?}"));
    }
    Ok(KafkaSetup { addr: format!("{host}:{port}"), topic, partitions, group: format!("{prefix}-kg"), timeout })
}

/// An idempotent batch whose answer was lost: sent again, unchanged, until answered.
struct Pending {
    partition: u32,
    seq: ProducerSeq,
    payloads: Vec<String>,
    batch: Bytes,
}

/// Kafka codes that mean the produce was refused before anything was appended
/// (Baton's door and planner decide them before emitting; crates/kafka/src/produce.rs,
/// crates/core/src/kafka_ops.rs).
fn produce_refused(code: i16) -> bool {
    // CORRUPT_MESSAGE, UNKNOWN_TOPIC_OR_PARTITION, MESSAGE_TOO_LARGE, INVALID_TOPIC,
    // RECORD_LIST_TOO_LARGE, INVALID_REQUIRED_ACKS, INVALID_REQUEST, OUT_OF_ORDER_SEQUENCE_NUMBER,
    // INVALID_PRODUCER_EPOCH, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, UNKNOWN_PRODUCER_ID, INVALID_RECORD.
    matches!(code, 2 | 3 | 10 | 17 | 18 | 21 | 42 | 45 | 47 | 53 | 59 | 87)
}

/// Kafka codes that mean a commit was refused at the door or per partition before it was planned.
fn commit_refused(code: i16) -> bool {
    // UNKNOWN_TOPIC_OR_PARTITION, ILLEGAL_GENERATION, INVALID_GROUP_ID, UNKNOWN_MEMBER_ID,
    // REBALANCE_IN_PROGRESS, INVALID_REQUEST, FENCED_INSTANCE_ID.
    matches!(code, 3 | 22 | 24 | 25 | 27 | 42 | 82)
}

/// A read with an error code changed nothing and returned nothing: `failed`. No
/// answer is `unknown` (nothing to judge either way).
fn end_of(e: &KafkaError, refused: fn(i16) -> bool) -> End {
    match e.code() {
        Some(c) if refused(c) => End::Failed(KafkaError::code_name(c)),
        _ => End::Unknown,
    }
}

struct KClient {
    cx: Arc<Ctx>,
    k: Arc<KafkaSetup>,
    me: u64,
    rng: Rng,
    conn: Option<KafkaConn>,
    producer: Option<(i64, i16)>,
    /// The next sequence per partition, for `producer`.
    next_seq: Vec<i32>,
    pending: Option<Pending>,
    /// The highest end of each partition seen (a produce's base + count, a fetch's high watermark).
    ends: Vec<i64>,
    n: u64,
    /// Attempts in a row that got no answer (the broker is down or frozen).
    lost: u32,
}

pub async fn client(cx: Arc<Ctx>, k: Arc<KafkaSetup>, me: u64, seed: u64) {
    let parts = k.partitions as usize;
    let mut c = KClient {
        cx,
        k,
        me,
        rng: Rng::new(seed),
        conn: None,
        producer: None,
        next_seq: vec![0; parts],
        pending: None,
        ends: vec![0; parts],
        n: 0,
        lost: 0,
    };
    while !c.cx.stop.load(SeqCst) {
        c.step().await;
        if c.conn.as_ref().is_some_and(|c| c.is_broken()) {
            // Its next answer could be the last request's: never read it.
            c.conn = None;
        }
        if c.lost > 0 {
            // While the broker is down, connections are refused at once: back off
            // (20 ms doubling to 320 ms) rather than spin.
            tokio::time::sleep(Duration::from_millis(20 << c.lost.min(5))).await;
        }
    }
}

impl KClient {
    fn done(&mut self, id: u64, end: End) {
        self.lost = if matches!(end, End::Unknown) { self.lost + 1 } else { 0 };
        self.cx.rec.complete(id, self.me, end);
    }

    fn payload(&mut self) -> String {
        self.n += 1;
        format!("kc{}-{}", self.me, self.n)
    }

    async fn step(&mut self) {
        if self.conn.is_none() {
            // Not an operation: nothing was sent, so nothing is recorded.
            match KafkaConn::connect(&self.k.addr, self.k.timeout).await {
                Ok(c) => self.conn = Some(c),
                Err(_) => {
                    self.lost += 1;
                    return;
                }
            }
        }
        if self.producer.is_none() && self.pending.is_none() {
            // Not an operation of the format either: an id allocated and never used stores nothing.
            match self.conn.as_mut().expect("connected above").init_producer_id().await {
                Ok(p) => {
                    self.producer = Some(p);
                    self.next_seq.iter_mut().for_each(|s| *s = 0);
                }
                Err(_) => {
                    self.lost += 1;
                    return;
                }
            }
        }
        if let Some(p) = self.pending.take() {
            return self.produce(p.partition, p.payloads, Some(p.seq), p.batch).await;
        }
        let partition = self.rng.below(self.k.partitions as u64) as u32;
        let r = self.rng.below(100);
        match r {
            _ if r < 35 => {
                let (id, epoch) = self.producer.expect("initialised above");
                let seq = ProducerSeq { id, epoch, seq: self.next_seq[partition as usize] };
                self.new_batch(partition, Some(seq)).await
            }
            _ if r < 50 => self.new_batch(partition, None).await,
            _ if r < 75 => self.fetch(partition).await,
            _ if r < 88 => self.commit(partition).await,
            _ => self.offset_fetch(partition).await,
        }
    }

    async fn new_batch(&mut self, partition: u32, seq: Option<ProducerSeq>) {
        let k = 1 + self.rng.below(3) as usize;
        let payloads: Vec<String> = (0..k).map(|_| self.payload()).collect();
        let values: Vec<&[u8]> = payloads.iter().map(|p| p.as_bytes()).collect();
        match record_batch(&values, seq) {
            Ok(batch) => self.produce(partition, payloads, seq, batch).await,
            // Cannot happen for an uncompressed batch of short values; nothing was sent.
            Err(_) => self.lost += 1,
        }
    }

    async fn produce(&mut self, partition: u32, payloads: Vec<String>, seq: Option<ProducerSeq>, batch: Bytes) {
        let records: Vec<Value> = payloads.iter().map(|p| json!({"payload": p})).collect();
        let mut args =
            obj([("topic", self.k.topic.clone().into()), ("partition", partition.into()), ("records", records.into())]);
        if let Some(s) = seq {
            args.insert("producer".into(), json!({"id": s.id, "epoch": s.epoch, "seq": s.seq}));
        }
        let id = self.cx.rec.invoke(self.me, "kafka_produce", args);
        let conn = self.conn.as_mut().expect("connected before any operation");
        let got = conn.produce(&self.k.topic, partition as i32, &batch).await;
        let n = payloads.len() as i64;
        let end = match &got {
            Ok(base) if *base >= 0 => {
                let e = &mut self.ends[partition as usize];
                *e = (*e).max(base + n);
                End::Ok(obj([("base_offset", (*base).into())]))
            }
            // Success without an offset: stored, as far as the broker says.
            Ok(_) => End::Ok(Map::new()),
            Err(e) => end_of(e, produce_refused),
        };
        let answered = !matches!(end, End::Unknown);
        self.done(id, end);
        let Some(s) = seq else { return };
        match got {
            Ok(_) => self.next_seq[partition as usize] = next_seq(s.seq, n),
            Err(e) if answered => {
                // A sequence or producer the broker no longer accepts: start over with a new
                // producer (a refused batch moved nothing, so nothing is left to resend).
                if matches!(e.code(), Some(45 | 47 | 59)) {
                    self.producer = None;
                }
            }
            Err(_) => self.pending = Some(Pending { partition, seq: s, payloads, batch }),
        }
    }

    async fn fetch(&mut self, partition: u32) {
        let end = self.ends[partition as usize];
        // Mostly near the end (what a consumer does), sometimes from the start.
        let offset = if self.rng.below(10) == 0 { 0 } else { (end - self.rng.below(20) as i64).max(0) };
        let wait = if self.rng.below(4) == 0 { 100 } else { 0 };
        let args =
            obj([("topic", self.k.topic.clone().into()), ("partition", partition.into()), ("offset", offset.into())]);
        let id = self.cx.rec.invoke(self.me, "kafka_fetch", args);
        let conn = self.conn.as_mut().expect("connected before any operation");
        let end = match conn.fetch(&self.k.topic, partition as i32, offset, wait, FETCH_BYTES).await {
            Ok(f) => {
                let e = &mut self.ends[partition as usize];
                *e = (*e).max(f.high_watermark);
                let recs: Vec<Value> = f
                    .records
                    .iter()
                    .map(|(o, v)| {
                        let p = v.as_ref().map(|v| String::from_utf8_lossy(v).into_owned());
                        json!({"offset": o, "payload": p})
                    })
                    .collect();
                End::Ok(obj([("records", recs.into())]))
            }
            Err(e) => end_of(&e, |_| true),
        };
        self.done(id, end);
    }

    async fn commit(&mut self, partition: u32) {
        // Anywhere up to the end seen, so a lower offset than the last commit too.
        let end = self.ends[partition as usize];
        let offset = self.rng.below(end.max(0) as u64 + 1) as i64;
        let args = obj([
            ("group", self.k.group.clone().into()),
            ("topic", self.k.topic.clone().into()),
            ("partition", partition.into()),
            ("offset", offset.into()),
        ]);
        let id = self.cx.rec.invoke(self.me, "kafka_commit", args);
        let conn = self.conn.as_mut().expect("connected before any operation");
        let end = match conn.offset_commit(&self.k.group, &self.k.topic, partition as i32, offset).await {
            Ok(()) => End::Ok(Map::new()),
            Err(e) => end_of(&e, commit_refused),
        };
        self.done(id, end);
    }

    async fn offset_fetch(&mut self, partition: u32) {
        let args = obj([
            ("group", self.k.group.clone().into()),
            ("topic", self.k.topic.clone().into()),
            ("partition", partition.into()),
        ]);
        let id = self.cx.rec.invoke(self.me, "kafka_offset_fetch", args);
        let conn = self.conn.as_mut().expect("connected before any operation");
        let end = match conn.offset_fetch(&self.k.group, &self.k.topic, partition as i32).await {
            Ok(o) => End::Ok(obj([("offset", o.into())])),
            Err(e) => end_of(&e, |_| true),
        };
        self.done(id, end);
    }
}

/// Kafka's sequence arithmetic: after i32::MAX comes 0.
fn next_seq(seq: i32, n: i64) -> i32 {
    ((seq as i64 + n) % (i32::MAX as i64 + 1)) as i32
}

/// Every partition's whole log of the topic, by the HTTP fetch the queues' logs are read
/// with: an independent read path from the Kafka fetches it judges.
pub async fn read_final(cx: &Ctx, k: &KafkaSetup) -> Result<(), String> {
    for p in 0..k.partitions {
        let partition = p.to_string();
        let mut tries = 0;
        let recs = loop {
            match cx.client.fetch_all(&k.topic, &partition, 0).await {
                Err(e) if e.is_unknown() && tries < 20 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                r => break r.map_err(|e| format!("read the log of {}/{partition}: {e}", k.topic))?,
            }
        };
        let entries: Vec<Value> = recs
            .iter()
            .map(|r| {
                // A record's value that is not JSON comes back as the JSON string of its text.
                let payload = match &r.payload {
                    Value::String(s) => Value::String(s.clone()),
                    Value::Null => Value::Null,
                    v => Value::String(v.to_string()),
                };
                json!({"offset": r.offset, "payload": payload})
            })
            .collect();
        let line = |chunk: &[Value]| json!({"type": "final_log", "queue": k.topic, "partition": partition, "first": 0, "entries": chunk});
        if entries.is_empty() {
            cx.rec.line(line(&[]));
        }
        for chunk in entries.chunks(LOG_CHUNK) {
            cx.rec.line(line(chunk));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_refusals_before_append_are_failed() {
        let code = |c| KafkaError::Code { code: c, message: None };
        assert!(
            matches!(end_of(&code(45), produce_refused), End::Failed(ref w) if w == "OUT_OF_ORDER_SEQUENCE_NUMBER")
        );
        // The storage latch, a timeout, unknown errors and a dropped connection: it may be stored.
        for e in [code(56), code(-1), code(19), code(7), code(89), KafkaError::Timeout, KafkaError::Io("reset".into())]
        {
            assert!(matches!(end_of(&e, produce_refused), End::Unknown), "{e}");
            assert!(matches!(end_of(&e, commit_refused), End::Unknown), "{e}");
        }
        assert!(matches!(end_of(&code(25), commit_refused), End::Failed(_)));
    }

    #[test]
    fn sequences_wrap() {
        assert_eq!(next_seq(5, 3), 8);
        assert_eq!(next_seq(i32::MAX, 1), 0);
    }
}
