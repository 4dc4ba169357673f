//! Kafka mode's delivery (D58): each owned bucket's ready events go out as ONE
//! Kafka transaction of the bucket's transactional id
//! `<prefix>-relay-bucket-<N>`, together with the bucket's position (a record
//! of `<prefix>-relay-positions` partition N naming the transaction's outbox
//! ids, and the group `<prefix>-relay`'s committed offset pointing at it).
//! Owns taking a bucket (InitProducerId: a new epoch that fences the previous
//! owner and aborts its open transaction; then settling that owner's last
//! committed transaction from the position), the transaction itself, the
//! poison search and the parked note. Must never mark a row delivered unless
//! an EndTxn(commit) holding it answered OK, or the committed position names
//! it; and never start a bucket's next transaction before the previous one's
//! rows are marked (that is what makes the position enough to settle a takeover).

use crate::deliver::{fail_row, mark_rows, queue_name, ready, Ready};
use crate::kafka_wire::Wire;
use crate::metrics::Metrics;
use crate::pg_lease::PgLeases;
use crate::schema::Names;
use crate::{Error, RunArgs};
use baton_client::kafka::{
    murmur2_partition, record_batch_keyed, KafkaError, OutRecord, ProducerSeq, TxnId, COORDINATOR_GROUP,
    COORDINATOR_TRANSACTION,
};
use bytes::Bytes;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Every Kafka request's bound.
/// transaction.timeout.ms asked for: a relay stopped longer than this with an open
/// transaction has it aborted by the coordinator (Kafka's default broker cap is 15 min).
const TXN_TIMEOUT_MS: i32 = 60_000;
/// Kafka's offset.metadata.max.bytes is 4,096: the ids of one transaction stay under it.
pub const MAX_META_BYTES: usize = 4000;
/// The most event bytes one transaction carries (under Kafka's default 1 MiB message).
const MAX_TXN_BYTES: usize = 512 << 10;
/// Tries (and the pause between them) while a coordinator answers "busy" (loading,
/// an abort still completing, a transactional offset not yet stable).
const BUSY_RETRIES: u32 = 50;
const BUSY_PAUSE: Duration = Duration::from_millis(100);

/// `$call` (a `Result<_, KafkaError>` expression) again while the answer is "busy", at most
/// [`BUSY_RETRIES`] times [`BUSY_PAUSE`] apart; the last answer otherwise.
macro_rules! while_busy {
    ($call:expr) => {{
        let mut r = $call;
        for _ in 1..BUSY_RETRIES {
            match &r {
                Err(e) if is_busy(e) => tokio::time::sleep(BUSY_PAUSE).await,
                _ => break,
            }
            r = $call;
        }
        r
    }};
}
/// The most ids a position may name when read back (a transaction holds at most --batch).
const MAX_POSITION_IDS: usize = 100_000;
/// Headers of a row's own `headers` object copied onto its record, at most.
const MAX_ROW_HEADERS: usize = 64;
/// Bytes asked for when reading one position record back.
const POSITION_FETCH_BYTES: i32 = 1 << 20;

// Kafka error codes this module decides on.
const CORRUPT_MESSAGE: i16 = 2;
const MESSAGE_TOO_LARGE: i16 = 10;
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const INVALID_TOPIC: i16 = 17;
const RECORD_LIST_TOO_LARGE: i16 = 18;
const POLICY_VIOLATION: i16 = 44;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
const CONCURRENT_TRANSACTIONS: i16 = 51;
const INVALID_RECORD: i16 = 87;
const UNSTABLE_OFFSET_COMMIT: i16 = 88;
const PRODUCER_FENCED: i16 = 90;

/// A refusal that belongs to the records, not to the moment: the event is poison.
fn is_poison(e: &KafkaError) -> bool {
    matches!(
        e.code(),
        Some(
            CORRUPT_MESSAGE
                | MESSAGE_TOO_LARGE
                | INVALID_TOPIC
                | RECORD_LIST_TOO_LARGE
                | POLICY_VIOLATION
                | INVALID_RECORD
        )
    )
}

/// Another producer of this transactional id has a newer epoch: the bucket moved.
fn is_fenced(e: &KafkaError) -> bool {
    matches!(e.code(), Some(PRODUCER_FENCED | INVALID_PRODUCER_EPOCH | INVALID_PRODUCER_ID_MAPPING))
}

fn is_busy(e: &KafkaError) -> bool {
    matches!(
        e.code(),
        Some(
            COORDINATOR_LOAD_IN_PROGRESS | COORDINATOR_NOT_AVAILABLE | CONCURRENT_TRANSACTIONS | UNSTABLE_OFFSET_COMMIT
        )
    )
}

/// The outbox ids of one transaction as compact text: ascending runs, each
/// `<gap from the previous run's end>` or `<gap>+<more>`, comma-separated
/// (`1005+3,7,2+10`: 1005..=1008, 1015, 1017..=1027).
pub fn encode_ids(ids: &[i64]) -> String {
    let mut sorted: Vec<i64> = ids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = String::new();
    let mut prev = 0i64;
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            end += 1;
            i += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(&(start - prev).to_string());
        if end > start {
            out.push('+');
            out.push_str(&(end - start).to_string());
        }
        prev = end;
        i += 1;
    }
    out
}

/// The ids of [`encode_ids`] text; at most `max` of them, else an error.
pub fn decode_ids(s: &str, max: usize) -> Result<Vec<i64>, String> {
    let mut out = Vec::new();
    let mut prev = 0i64;
    for tok in s.split(',').filter(|t| !t.is_empty()) {
        let (gap, more) = match tok.split_once('+') {
            Some((g, m)) => (g, m),
            None => (tok, "0"),
        };
        let gap: i64 = gap.parse().map_err(|_| format!("position token {tok:?}"))?;
        let more: i64 = more.parse().map_err(|_| format!("position token {tok:?}"))?;
        if more < 0 || out.len() as i64 + more + 1 > max as i64 {
            return Err(format!("a position of more than {max} ids"));
        }
        let start = prev.checked_add(gap).ok_or("position id overflow")?;
        let end = start.checked_add(more).ok_or("position id overflow")?;
        out.extend(start..=end);
        prev = end;
    }
    Ok(out)
}

/// How many events (id, value bytes) from the front go in the next transaction: at
/// most `batch`, [`MAX_TXN_BYTES`] of values and [`MAX_META_BYTES`] of encoded ids;
/// at least one.
fn chunk_len(evs: &[(i64, usize)], batch: i64) -> usize {
    let mut k = 0;
    let mut bytes = 0;
    for (_, len) in evs.iter().take(batch.max(1) as usize) {
        bytes += len;
        if k > 0 && bytes > MAX_TXN_BYTES {
            break;
        }
        k += 1;
    }
    let ids: Vec<i64> = evs.iter().map(|e| e.0).collect();
    // Bounded: k shrinks by a quarter each pass.
    while k > 1 && encode_ids(&ids[..k]).len() > MAX_META_BYTES {
        k = k * 3 / 4;
    }
    k.max(1)
}

/// One event as it goes to Kafka.
struct Ev {
    id: i64,
    agg: (String, String),
    topic: String,
    value: Bytes,
    headers: Vec<(String, Bytes)>,
    event_type: String,
}

impl Ev {
    fn new(prefix: &str, r: Ready) -> Ev {
        let event_type = r.payload["eventType"].as_str().unwrap_or_default().to_string();
        let mut headers = vec![
            ("outbox-id".to_string(), Bytes::from(r.id.to_string())),
            ("event-type".to_string(), Bytes::from(event_type.clone())),
            ("aggregate-type".to_string(), Bytes::from(r.agg.0.clone())),
        ];
        if let Some(h) = r.payload["headers"].as_object() {
            for (k, v) in h.iter().take(MAX_ROW_HEADERS) {
                let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                headers.push((k.clone(), Bytes::from(v)));
            }
        }
        let value = Bytes::from(serde_json::to_vec(&r.payload).unwrap_or_default());
        Ev { id: r.id, topic: queue_name(prefix, &r.agg.0), agg: r.agg, value, headers, event_type }
    }

    fn record(&self) -> OutRecord {
        OutRecord {
            key: Some(Bytes::from(self.agg.1.clone())),
            value: Some(self.value.clone()),
            headers: self.headers.clone(),
        }
    }
}

/// A bucket taken: its transactional producer and the next sequence per partition.
struct Producer {
    txn: TxnId,
    coord: String,
    seqs: HashMap<(String, i32), i32>,
}

/// What one transaction came to.
enum Txn {
    Committed,
    /// Kafka refused the records themselves (poison somewhere in them).
    Refused(String),
    /// A newer epoch of the bucket's transactional id exists: the bucket moved.
    Fenced(String),
    /// Anything else (i/o, timeout, a busy coordinator, an EndTxn answer lost):
    /// retried by taking the bucket again, which settles whatever happened.
    Failed(String),
}

/// What every lane shares.
struct Ctx {
    pg: tokio_postgres::Client,
    names: Names,
    args: RunArgs,
    leases: Arc<PgLeases>,
    m: Arc<Metrics>,
}

/// One lane: the buckets `b` with `b % lanes == i`, published one after another over
/// connections of its own. The lanes run at once: a bucket's transaction is several round
/// trips to the coordinator and the leaders, and one bucket after another held a round
/// (and every event in it) to the sum of them.
struct Lane {
    wire: Wire,
    producers: BTreeMap<u32, Producer>,
    group_coord: Option<String>,
}

pub struct KafkaOut {
    cx: Ctx,
    lanes: Vec<Lane>,
}

impl crate::deliver::Rounds for KafkaOut {
    fn pg(&mut self) -> &mut tokio_postgres::Client {
        &mut self.cx.pg
    }
    fn args(&self) -> &RunArgs {
        &self.cx.args
    }
    fn relay_id(&self) -> &str {
        &self.cx.leases.relay_id
    }
    async fn round(&mut self) -> Result<usize, Error> {
        self.round_once().await
    }
}

impl KafkaOut {
    pub fn new(
        pg: tokio_postgres::Client,
        names: Names,
        args: RunArgs,
        bootstrap: String,
        leases: Arc<PgLeases>,
        m: Arc<Metrics>,
    ) -> KafkaOut {
        let lanes = (0..args.kafka_lanes.max(1))
            .map(|_| Lane {
                wire: Wire {
                    bootstrap: bootstrap.split(',').map(|b| b.trim().to_string()).collect(),
                    boot_at: 0,
                    sasl: args.kafka_sasl(),
                    conns: HashMap::new(),
                    topics: HashMap::new(),
                },
                producers: BTreeMap::new(),
                group_coord: None,
            })
            .collect();
        KafkaOut { cx: Ctx { pg, names, args, leases, m }, lanes }
    }

    /// Take the newly owned buckets, then publish each bucket's ready events; the lanes
    /// at once, each lane's buckets one after another.
    async fn round_once(&mut self) -> Result<usize, Error> {
        let owned: BTreeSet<u32> = self.cx.leases.state.read().await.clone();
        let n = self.lanes.len();
        let cx = &self.cx;
        let takes = self.lanes.iter_mut().enumerate().map(|(i, lane)| {
            let mine: Vec<u32> = owned.iter().copied().filter(|b| *b as usize % n == i).collect();
            lane.take_owned(cx, mine)
        });
        futures_util::future::join_all(takes).await;
        let live: Vec<i32> = self.lanes.iter().flat_map(|l| l.producers.keys().map(|b| *b as i32)).collect();
        if live.is_empty() {
            return Ok(0);
        }
        let by_bucket = ready(&cx.pg, &cx.names, &live, cx.args.batch).await?;
        if cx.args.test_round_hold_ms > 0 && !by_bucket.is_empty() {
            tokio::time::sleep(Duration::from_millis(cx.args.test_round_hold_ms)).await;
        }
        let mut work: Vec<Vec<(u32, Vec<Ev>)>> = (0..n).map(|_| Vec::new()).collect();
        for (b, rows) in by_bucket {
            let evs: Vec<Ev> = rows.into_iter().map(|r| Ev::new(&cx.args.queue_prefix, r)).collect();
            work[b as usize % n].push((b as u32, evs));
        }
        let runs = self.lanes.iter_mut().zip(work).map(|(lane, buckets)| async move {
            let mut settled = 0;
            for (b, evs) in buckets {
                settled += lane.bucket(cx, b, evs).await?;
            }
            Ok::<_, Error>(settled)
        });
        let mut settled = 0;
        let mut first_err = None;
        for r in futures_util::future::join_all(runs).await {
            match r {
                Ok(k) => settled += k,
                Err(e) => first_err = first_err.or(Some(e)),
            }
        }
        match first_err {
            Some(e) if settled == 0 => Err(e),
            Some(e) => {
                eprintln!("baton relay {}: round: {e}", cx.leases.relay_id);
                Ok(settled)
            }
            None => Ok(settled),
        }
    }
}

impl Ctx {
    fn group(&self) -> String {
        format!("{}-relay", self.args.queue_prefix)
    }
    fn positions(&self) -> String {
        format!("{}-relay-positions", self.args.queue_prefix)
    }
    fn tid(&self, bucket: u32) -> String {
        format!("{}-relay-bucket-{bucket}", self.args.queue_prefix)
    }
}

impl Lane {
    /// Take this lane's newly owned buckets; forget those given back or lost.
    async fn take_owned(&mut self, cx: &Ctx, mine: Vec<u32>) {
        // A bucket given back or lost: taking it again must fence and settle afresh.
        self.producers.retain(|b, _| mine.contains(b));
        for b in mine {
            if !self.producers.contains_key(&b) {
                if let Err(e) = self.take(cx, b).await {
                    eprintln!("baton relay {}: take bucket {b}: {e}", cx.leases.relay_id);
                    self.forget();
                    // The broker is unreachable: the rest wait for the next round (their
                    // events too) instead of one timeout and one log line per bucket. Any
                    // other failure is this bucket's own: the others are still taken.
                    let unreachable = e
                        .downcast_ref::<KafkaError>()
                        .is_some_and(|k| matches!(k, KafkaError::Io(_) | KafkaError::Timeout));
                    if unreachable {
                        break;
                    }
                }
            }
        }
    }

    /// Drop what may be stale after a failure: leaders and the group's coordinator.
    fn forget(&mut self) {
        self.wire.topics.clear();
        self.group_coord = None;
    }

    async fn group_coordinator(&mut self, cx: &Ctx) -> Result<String, KafkaError> {
        if let Some(a) = &self.group_coord {
            return Ok(a.clone());
        }
        let a = self.wire.coordinator(&cx.group(), COORDINATOR_GROUP).await?;
        self.group_coord = Some(a.clone());
        Ok(a)
    }

    /// Take bucket `b`: a new epoch of its transactional id (fencing the previous
    /// owner, whose open transaction the coordinator aborts), then mark delivered the
    /// ids of the last committed transaction, which its owner may not have marked.
    async fn take(&mut self, cx: &Ctx, b: u32) -> Result<(), Error> {
        let tid = cx.tid(b);
        let coord = self.wire.coordinator(&tid, COORDINATOR_TRANSACTION).await?;
        let txn = while_busy!(self.wire.conn(&coord).await?.init_transactional(&tid, TXN_TIMEOUT_MS).await)?;
        let (group, positions) = (cx.group(), cx.positions());
        let gc = self.group_coordinator(cx).await?;
        let (offset, _) =
            while_busy!(self.wire.conn(&gc).await?.offset_fetch_stable(&group, &positions, b as i32, true).await)?;
        if offset >= 0 {
            let leaders = self.wire.topic(&positions, cx.leases.buckets as i32).await?;
            let leader = leaders.get(b as usize).ok_or("the positions topic has fewer partitions than buckets")?;
            let f = self
                .wire
                .conn(leader)
                .await?
                .fetch_committed(&positions, b as i32, offset, 0, POSITION_FETCH_BYTES)
                .await?;
            let rec =
                f.records.iter().find(|r| r.offset == offset).ok_or("the committed position is not readable yet")?;
            let text = rec.value.as_ref().map(|v| String::from_utf8_lossy(v).into_owned()).unwrap_or_default();
            let ids = decode_ids(&text, MAX_POSITION_IDS)?;
            let n = mark_rows(&cx.pg, &cx.names, &ids).await?;
            if n > 0 {
                cx.m.delivered.fetch_add(n, Ordering::Relaxed);
                eprintln!(
                    "baton relay {}: bucket {b}: marked {n} events its last transaction published",
                    cx.leases.relay_id
                );
            }
        }
        self.producers.insert(b, Producer { txn, coord, seqs: HashMap::new() });
        Ok(())
    }

    /// Publish one bucket's events, one transaction per chunk. After a refusal, one
    /// event at a time to find the poison; an event that failed holds its aggregate back.
    async fn bucket(&mut self, cx: &Ctx, b: u32, evs: Vec<Ev>) -> Result<usize, Error> {
        let mut rest: VecDeque<Ev> = evs.into();
        let mut failed: HashSet<(String, String)> = HashSet::new();
        let mut single = false;
        let mut n = 0;
        // Every pass settles at least one event, or turns `single` on once, or returns.
        let passes = 2 * rest.len() + 2;
        for _ in 0..passes {
            rest.retain(|e| !failed.contains(&e.agg));
            if rest.is_empty() {
                break;
            }
            if !self.producers.contains_key(&b) {
                if let Err(e) = self.take(cx, b).await {
                    eprintln!("baton relay {}: take bucket {b} again: {e}", cx.leases.relay_id);
                    self.forget();
                    break;
                }
            }
            let k = if single {
                1
            } else {
                let sizes: Vec<(i64, usize)> = rest.iter().map(|e| (e.id, e.value.len())).collect();
                chunk_len(&sizes, cx.args.batch)
            };
            let chunk: Vec<Ev> = rest.drain(..k.min(rest.len())).collect();
            match self.txn(cx, b, &chunk).await {
                Txn::Committed => {
                    let ids: Vec<i64> = chunk.iter().map(|e| e.id).collect();
                    if cx.args.test_commit_hold_ms > 0 {
                        // Tests kill the relay inside this window: the line says one is open.
                        eprintln!(
                            "baton relay {}: bucket {b}: test hold: committed, marking in {} ms",
                            cx.leases.relay_id, cx.args.test_commit_hold_ms
                        );
                        tokio::time::sleep(Duration::from_millis(cx.args.test_commit_hold_ms)).await;
                    }
                    if let Err(e) = mark_rows(&cx.pg, &cx.names, &ids).await {
                        // Published but not marked: taking the bucket again marks them.
                        self.producers.remove(&b);
                        return Err(e);
                    }
                    cx.m.delivered.fetch_add(ids.len() as u64, Ordering::Relaxed);
                    n += ids.len();
                }
                Txn::Refused(why) => {
                    self.abort(b).await;
                    if chunk.len() == 1 {
                        self.fail(cx, &chunk[0], &why).await?;
                        failed.insert(chunk[0].agg.clone());
                        n += 1;
                    } else {
                        single = true;
                        for e in chunk.into_iter().rev() {
                            rest.push_front(e);
                        }
                    }
                }
                Txn::Fenced(why) => {
                    cx.m.fenced.fetch_add(1, Ordering::Relaxed);
                    eprintln!("baton relay {}: bucket {b} fenced: {why}", cx.leases.relay_id);
                    self.producers.remove(&b);
                    break;
                }
                Txn::Failed(why) => {
                    eprintln!(
                        "baton relay {}: bucket {b}: transaction failed, will take it again: {why}",
                        cx.leases.relay_id
                    );
                    self.producers.remove(&b);
                    self.forget();
                    break;
                }
            }
        }
        Ok(n)
    }

    /// Best effort: abort the open transaction and forget the producer (taking the
    /// bucket again starts a clean epoch with fresh sequences; it also aborts).
    async fn abort(&mut self, b: u32) {
        if let Some(p) = self.producers.remove(&b) {
            if let Ok(c) = self.wire.conn(&p.coord).await {
                let _ = c.end_txn(&p.txn, false).await;
            }
        }
    }

    /// One transaction: the events, then the position, then EndTxn(commit).
    async fn txn(&mut self, cx: &Ctx, b: u32, chunk: &[Ev]) -> Txn {
        let fail = |e: KafkaError| if is_fenced(&e) { Txn::Fenced(e.to_string()) } else { Txn::Failed(e.to_string()) };
        let (group, positions) = (cx.group(), cx.positions());
        // Where each event goes: its topic's partition by the key's murmur2, in id order.
        let mut parts: BTreeMap<(String, i32), Vec<OutRecord>> = BTreeMap::new();
        let mut leaders: HashMap<(String, i32), String> = HashMap::new();
        for e in chunk {
            let ls = match self.wire.topic(&e.topic, cx.args.kafka_partitions.max(1)).await {
                Ok(l) => l,
                Err(err) if is_poison(&err) => return Txn::Refused(format!("topic {}: {err}", e.topic)),
                Err(err) => return fail(err),
            };
            let p = murmur2_partition(e.agg.1.as_bytes(), ls.len() as i32);
            leaders.insert((e.topic.clone(), p), ls[p as usize].clone());
            parts.entry((e.topic.clone(), p)).or_default().push(e.record());
        }
        let pls = match self.wire.topic(&positions, cx.leases.buckets as i32).await {
            Ok(l) => l,
            Err(e) => return fail(e),
        };
        let Some(pleader) = pls.get(b as usize).cloned() else {
            return Txn::Failed("the positions topic has fewer partitions than buckets".into());
        };
        let Some(p) = self.producers.get_mut(&b) else { return Txn::Failed("bucket not taken".into()) };
        let (txn, coord) = (p.txn.clone(), p.coord.clone());
        let mut add: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for (t, i) in parts.keys() {
            add.entry(t.clone()).or_default().push(*i);
        }
        add.entry(positions.clone()).or_default().push(b as i32);
        let add: Vec<(String, Vec<i32>)> = add.into_iter().collect();
        // Apache Kafka answers CONCURRENT_TRANSACTIONS while the previous commit's markers
        // are still being written: wait it out (bounded) rather than take the bucket again.
        let r = while_busy!(match self.wire.conn(&coord).await {
            Ok(c) => c.add_partitions_to_txn(&txn, &add).await,
            Err(e) => Err(e),
        });
        if let Err(e) = r {
            return fail(e);
        }
        for ((t, i), recs) in &parts {
            let key = (t.clone(), *i);
            let seq = p.seqs.get(&key).copied().unwrap_or(0);
            let batch = match record_batch_keyed(
                recs,
                Some(ProducerSeq { id: txn.producer_id, epoch: txn.epoch, seq }),
                true,
            ) {
                Ok(b) => b,
                Err(e) => return Txn::Failed(e.to_string()),
            };
            let r = match self.wire.conn(&leaders[&key]).await {
                Ok(c) => c.produce_txn(&txn, t, *i, &batch).await,
                Err(e) => Err(e),
            };
            match r {
                Ok(_) => {
                    p.seqs.insert(key, seq.wrapping_add(recs.len() as i32));
                }
                Err(e) if is_poison(&e) => return Txn::Refused(format!("{t}[{i}]: {e}")),
                Err(e) => return fail(e),
            }
        }
        // The position: a record naming this transaction's ids, and the group's offset at it.
        let ids: Vec<i64> = chunk.iter().map(|e| e.id).collect();
        let meta = encode_ids(&ids);
        let pkey = (positions.clone(), b as i32);
        let seq = p.seqs.get(&pkey).copied().unwrap_or(0);
        let rec = OutRecord {
            key: Some(Bytes::from(b.to_string())),
            value: Some(Bytes::from(meta.clone())),
            headers: vec![],
        };
        let batch =
            match record_batch_keyed(&[rec], Some(ProducerSeq { id: txn.producer_id, epoch: txn.epoch, seq }), true) {
                Ok(b) => b,
                Err(e) => return Txn::Failed(e.to_string()),
            };
        let r = match self.wire.conn(&pleader).await {
            Ok(c) => c.produce_txn(&txn, &positions, b as i32, &batch).await,
            Err(e) => Err(e),
        };
        let at = match r {
            Ok(o) => o,
            Err(e) => return fail(e),
        };
        p.seqs.insert(pkey, seq.wrapping_add(1));
        let r = while_busy!(match self.wire.conn(&coord).await {
            Ok(c) => c.add_offsets_to_txn(&txn, &group).await,
            Err(e) => Err(e),
        });
        if let Err(e) = r {
            return fail(e);
        }
        let gc = match self.group_coord.clone() {
            Some(a) => a,
            None => match self.wire.coordinator(&group, COORDINATOR_GROUP).await {
                Ok(a) => {
                    self.group_coord = Some(a.clone());
                    a
                }
                Err(e) => return fail(e),
            },
        };
        let r = match self.wire.conn(&gc).await {
            Ok(c) => c.txn_offset_commit(&txn, &group, &positions, b as i32, at, &meta).await,
            Err(e) => Err(e),
        };
        if let Err(e) = r {
            return fail(e);
        }
        let r = match self.wire.conn(&coord).await {
            Ok(c) => c.end_txn(&txn, true).await,
            Err(e) => Err(e),
        };
        match r {
            Ok(()) => Txn::Committed,
            Err(e @ (KafkaError::Io(_) | KafkaError::Timeout)) => {
                // Committed or not: taking the bucket again aborts or finds it in the position.
                cx.m.unknown.fetch_add(1, Ordering::Relaxed);
                Txn::Failed(format!("EndTxn outcome unknown: {e}"))
            }
            Err(e) => fail(e),
        }
    }

    /// Kafka refused this event: back off, or park it after --max-attempts (then a
    /// note goes to `<prefix>-parked`, best effort, outside any transaction).
    async fn fail(&mut self, cx: &Ctx, e: &Ev, why: &str) -> Result<(), Error> {
        cx.m.refused.fetch_add(1, Ordering::Relaxed);
        if !fail_row(&cx.pg, &cx.names, &cx.args, e.id, why).await? {
            return Ok(());
        }
        cx.m.parked.fetch_add(1, Ordering::Relaxed);
        eprintln!("baton relay {}: parked event {}: {why}", cx.leases.relay_id, e.id);
        let note = json!({"id": e.id, "aggregateType": e.agg.0, "aggregateId": e.agg.1, "error": why,
            "topic": e.topic, "eventType": e.event_type});
        let topic = format!("{}-parked", cx.args.queue_prefix);
        if let Err(err) = self.note(cx, &topic, &e.agg.1, &note).await {
            eprintln!("baton relay {}: parked note of {}: {err}", cx.leases.relay_id, e.id);
        }
        Ok(())
    }

    async fn note(&mut self, cx: &Ctx, topic: &str, key: &str, note: &Value) -> Result<(), KafkaError> {
        let leaders = self.wire.topic(topic, cx.args.kafka_partitions.max(1)).await?;
        let p = murmur2_partition(key.as_bytes(), leaders.len() as i32);
        let rec = OutRecord {
            key: Some(Bytes::from(key.to_string())),
            value: Some(Bytes::from(note.to_string())),
            headers: vec![],
        };
        let batch = record_batch_keyed(&[rec], None, false)?;
        self.wire.conn(&leaders[p as usize]).await?.produce(topic, p, &batch).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_compactly_and_bad_text_is_refused() {
        let ids = vec![1005, 1006, 1007, 1008, 1015, 1017, 1018];
        let s = encode_ids(&ids);
        assert_eq!(s, "1005+3,7,2+1");
        assert_eq!(decode_ids(&s, 100).unwrap(), ids);
        assert_eq!(decode_ids("", 10).unwrap(), Vec::<i64>::new());
        assert!(decode_ids("1+100", 10).is_err(), "more ids than allowed");
        assert!(decode_ids("x", 10).is_err());
        assert!(decode_ids("1+-3", 10).is_err());
        assert!(decode_ids(&format!("{},{}", i64::MAX, 5), 10).is_err());
        // 500 scattered ids pass the metadata cap: chunk_len must check it, not assume it.
        let sparse: Vec<i64> = (0..500).map(|i| i * 10_000_019).collect();
        assert!(encode_ids(&sparse).len() > MAX_META_BYTES);
        let sized: Vec<(i64, usize)> = sparse.iter().map(|i| (*i, 10)).collect();
        let k = chunk_len(&sized, 500);
        assert!(k < 500 && encode_ids(&sparse[..k]).len() <= MAX_META_BYTES, "{k}");
        let dense: Vec<(i64, usize)> = (1..=600).map(|i| (i, 10)).collect();
        assert_eq!(chunk_len(&dense, 500), 500, "--batch caps it");
        let big: Vec<(i64, usize)> = (1..=10).map(|i| (i, MAX_TXN_BYTES / 3)).collect();
        assert_eq!(chunk_len(&big, 500), 3, "the bytes cap it");
        let huge = [(1, MAX_TXN_BYTES * 4), (2, 10)];
        assert_eq!(chunk_len(&huge, 500), 1, "one event always goes (a poison is found alone)");
    }
}
