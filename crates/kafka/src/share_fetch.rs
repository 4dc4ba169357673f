//! ShareFetch (D49): a share session's partitions, acquired as Baton leases of the group,
//! after the acknowledgements the request carries are settled.
//!
//! Must never hand out a record without the lease it is acquired under being durable
//! (the pop's answer waits for its entry), nor keep a lease it took for a session that
//! closed meanwhile (it is released at once).

use crate::errors::*;
use crate::group_configs::{share_settings, ShareSettings};
use crate::share::release;
use crate::share_ack::{batches_of, settle_request, AckBatches};
use crate::share_groups::{Held, SharePart};
use crate::topics::{s, topic_id};
use crate::Ctx;
use baton_core::request_memory::MemoryHold;
use baton_core::{CoreError, PopRequest, PopResult};
use bytes::{Bytes, BytesMut};
use futures_util::future::{join_all, select_all};
use kafka_protocol::messages::share_fetch_response::{AcquiredRecords, LeaderIdAndEpoch, PartitionData};
use kafka_protocol::messages::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Kafka's share.max.fetch.records when a client does not say.
const DEFAULT_MAX_RECORDS: i32 = 500;
/// The most records one ShareFetch acquires, whatever it asks (as an HTTP pop's batch).
const MAX_RECORDS: i32 = 10_000;

/// Topic names of ids, from the queues there are now.
async fn names_of(ctx: &Ctx, ids: &BTreeSet<Uuid>) -> Result<HashMap<Uuid, String>, CoreError> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let qs = ctx.engine.queue_views(None, None).await?;
    Ok(qs.iter().map(|q| (topic_id(q), q.name.clone())).filter(|(id, _)| ids.contains(id)).collect())
}

/// The acquired records of one pop: ranges of consecutive offsets with one delivery count.
fn acquired(p: &PopResult) -> Vec<AcquiredRecords> {
    let mut out: Vec<AcquiredRecords> = Vec::new();
    for (o, attempt) in &p.messages {
        let count = (*attempt).min(i16::MAX as u32) as i16;
        match out.last_mut() {
            Some(r) if r.last_offset + 1 == *o as i64 && r.delivery_count == count => r.last_offset += 1,
            _ => out.push(
                AcquiredRecords::default()
                    .with_first_offset(*o as i64)
                    .with_last_offset(*o as i64)
                    .with_delivery_count(count),
            ),
        }
    }
    out
}

fn read_spans(p: &PopResult) -> Result<Bytes, String> {
    if p.spans.len() == 1 {
        return p.spans[0].read().map(Bytes::from).map_err(|e| e.to_string());
    }
    let mut buf = BytesMut::with_capacity(p.spans.iter().map(|s| s.len as usize).sum());
    for s in &p.spans {
        buf.extend_from_slice(&s.read().map_err(|e| e.to_string())?);
    }
    Ok(buf.freeze())
}

/// One partition's part of a ShareFetch answer.
#[derive(Default)]
struct Got {
    error: i16,
    message: Option<String>,
    records: Option<Bytes>,
    acquired: Vec<AcquiredRecords>,
}

/// KIP-1206's acquire modes (ShareFetch version 2; version 1 is batch-optimized): may go
/// past `MaxRecords` to whole batches, or never past it.
const BATCH_OPTIMIZED: i8 = 0;
const RECORD_LIMIT: i8 = 1;

/// How many records to take from each of `n` partitions for `max` in all: an even share
/// rounded up (batch-optimized), or shares that add up to `max` exactly, the first
/// partitions taking one more and partitions past `max` none (`strict`, record-limit).
fn shares_of(max: usize, n: usize, strict: bool) -> Vec<u32> {
    (0..n)
        .map(|i| match strict {
            true => (max / n + usize::from(i < max % n)) as u32,
            false => max.div_ceil(n).max(1) as u32,
        })
        .collect()
}

/// Acquire from every partition of the session that this member holds no live lease on,
/// waiting up to `wait` for something to arrive, under the group's lock time and from
/// where its `share.auto.offset.reset` says on a topic it has not read before (D67).
async fn acquire(
    ctx: &Ctx,
    (group, member): (&str, &str),
    max_records: i32,
    strict: bool,
    turn: usize,
    wait: Duration,
    settings: &ShareSettings,
) -> (HashMap<SharePart, Got>, MemoryHold) {
    let deadline = Instant::now() + wait;
    let lock = settings.lock;
    let lease_secs = lock.as_millis().div_ceil(1000).max(1) as u64;
    let mut out: HashMap<SharePart, Got> = HashMap::new();
    loop {
        let now = Instant::now();
        let mut free: Vec<(SharePart, String)> = ctx
            .shares
            .update(group, member, |sess| {
                sess.held.retain(|_, h| h.expires > now);
                let held = &sess.held;
                sess.parts
                    .iter()
                    .filter(|k| !held.contains_key(k))
                    .filter_map(|k| sess.names.get(&k.0).map(|n| (*k, n.clone())))
                    .collect()
            })
            .unwrap_or_default();
        if free.is_empty() {
            return (out, MemoryHold::none());
        }
        let mut topics: Vec<String> = free.iter().map(|(_, t)| t.clone()).collect();
        topics.sort();
        topics.dedup();
        let notifies: Vec<_> = topics.iter().map(|t| ctx.engine.pop_notifier(t, group)).collect();
        let mut waits: Vec<_> = notifies.iter().map(|n| Box::pin(n.notified())).collect();
        for w in &mut waits {
            w.as_mut().enable();
        }
        // Start each request at another partition: under record-limit the first ones get the
        // records, and a partition that always has some must not starve the rest.
        let n = free.len();
        free.rotate_left(turn % n);
        let shares = shares_of(max_records.max(1) as usize, n, strict);
        free.truncate(shares.iter().filter(|n| **n > 0).count());
        let pops = free.iter().zip(&shares).map(|(((_, idx), topic), per)| {
            ctx.engine.pop(PopRequest {
                queue: topic.clone(),
                partition: Some(idx.to_string()),
                group: Some(group.to_string()),
                batch: *per,
                lease_secs: Some(lease_secs),
                from_ts: settings.reset.start_ts(),
                auto_ack: false,
                conflate: false,
            })
        });
        let results = join_all(pops).await;
        let mut taken: Vec<(SharePart, Held)> = Vec::new();
        let mut popped: Vec<(SharePart, &String, PopResult)> = Vec::new();
        for ((key, topic), r) in free.iter().zip(results) {
            match r {
                Ok(Some(p)) => {
                    let Some(lease) = p.lease else { continue };
                    ctx.stats.share_acquired.fetch_add(p.messages.len() as u64, std::sync::atomic::Ordering::Relaxed);
                    taken.push((
                        *key,
                        Held {
                            key: *key,
                            part: p.part,
                            lease,
                            open: p.messages.iter().map(|(o, _)| *o).collect(),
                            released: Default::default(),
                            expires: Instant::now() + lock,
                        },
                    ));
                    popped.push((*key, topic, p));
                }
                Ok(None) => {}
                Err(e) => {
                    out.insert(*key, Got { error: code_of(&e), message: Some(e.message), ..Default::default() });
                }
            }
        }
        if !taken.is_empty() {
            let orphans = ctx.shares.update(group, member, |sess| {
                for (k, h) in taken.drain(..) {
                    sess.held.insert(k, h);
                }
            });
            if orphans.is_none() {
                // The session closed while the pops ran: give the leases back.
                release(ctx, group, taken.into_iter().map(|(_, h)| h).collect()).await;
                return (HashMap::new(), MemoryHold::none());
            }
        }
        // D88: what the answer carries is held before it is read, until it is written. Waited
        // for once the leases are the session's, so a client gone meanwhile has them given
        // back with its session, not left to their lock.
        let bytes: u64 = popped.iter().flat_map(|(_, _, p)| &p.spans).map(|s| s.len as u64).sum();
        let mem = ctx.cfg.request_memory.hold(usize::try_from(bytes).unwrap_or(usize::MAX)).await;
        for (key, topic, p) in popped {
            let got = match read_spans(&p) {
                Ok(b) => Got { records: Some(b), acquired: acquired(&p), ..Default::default() },
                Err(e) => {
                    tracing::error!(%topic, error = %e, "kafka: reading a stored batch for a share fetch failed");
                    Got { error: KAFKA_STORAGE_ERROR, message: Some(e), ..Default::default() }
                }
            };
            out.insert(key, got);
        }
        if !out.is_empty() || Instant::now() >= deadline {
            return (out, mem);
        }
        tokio::select! {
            _ = select_all(waits) => {}
            _ = tokio::time::sleep_until(deadline.into()) => {}
        }
    }
}

fn leader(ctx: &Ctx) -> LeaderIdAndEpoch {
    LeaderIdAndEpoch::default().with_leader_id(ctx.topology().me).with_leader_epoch(0)
}

/// The answer, and the request memory held for the records it carries (D88).
pub async fn fetch(ctx: &Ctx, req: ShareFetchRequest) -> (ShareFetchResponse, MemoryHold) {
    let mut mem = MemoryHold::none();
    let r = answer(ctx, req, &mut mem).await;
    (r, mem)
}

async fn answer(ctx: &Ctx, req: ShareFetchRequest, mem: &mut MemoryHold) -> ShareFetchResponse {
    let r = ShareFetchResponse::default();
    let (Some(group), Some(member)) = (req.group_id.as_ref(), req.member_id.as_ref()) else {
        return r
            .with_error_code(INVALID_REQUEST)
            .with_error_message(Some(s("a share fetch names its group and member")));
    };
    if !matches!(req.share_acquire_mode, BATCH_OPTIMIZED | RECORD_LIMIT) {
        return r
            .with_error_code(INVALID_REQUEST)
            .with_error_message(Some(s("share acquire mode is 0 (batch-optimized) or 1 (record-limit)")));
    }
    let (group, member) = (group.to_string(), member.to_string());
    let settings = share_settings(ctx, &group).await;
    let r = r.with_acquisition_lock_timeout_ms(settings.lock.as_millis().min(i32::MAX as u128) as i32);
    let epoch = req.share_session_epoch;
    let acks: Vec<(SharePart, AckBatches)> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().filter(|p| !p.acknowledgement_batches.is_empty()).map(move |p| {
                let b =
                    batches_of(&p.acknowledgement_batches, |b| (b.first_offset, b.last_offset, &b.acknowledge_types));
                ((t.topic_id, p.partition_index), b)
            })
        })
        .collect();
    let listed: BTreeSet<SharePart> =
        req.topics.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, p.partition_index))).collect();
    let forgotten: BTreeSet<SharePart> =
        req.forgotten_topics_data.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, *p))).collect();
    if listed.len() + forgotten.len() > crate::MAX_SHARE_PARTITIONS {
        return r
            .with_error_code(INVALID_REQUEST)
            .with_error_message(Some(s("too many partitions in one share fetch")));
    }
    let now = Instant::now();
    // Only ids the session has not resolved yet are looked up: a client names the
    // partitions it acknowledges in every fetch, and a listing of every queue per fetch
    // would cost O(queues) each time.
    let mut names: HashMap<Uuid, String> = if epoch == 0 {
        HashMap::new()
    } else {
        ctx.shares
            .update(&group, &member, |sess| {
                listed.iter().filter_map(|k| sess.names.get(&k.0).map(|n| (k.0, n.clone()))).collect()
            })
            .unwrap_or_default()
    };
    let ids: BTreeSet<Uuid> = listed.iter().map(|k| k.0).filter(|id| !names.contains_key(id)).collect();
    match names_of(ctx, &ids).await {
        Ok(n) => names.extend(n),
        Err(e) => return r.with_error_code(code_of(&e)),
    }
    let mut unknown: BTreeSet<SharePart> = listed.iter().filter(|k| !names.contains_key(&k.0)).copied().collect();
    let mut released = Vec::new();
    if epoch == 0 {
        if !acks.is_empty() {
            return r
                .with_error_code(INVALID_REQUEST)
                .with_error_message(Some(s("a new share session carries no acknowledgements")));
        }
        match ctx.shares.open(&group, &member, listed.clone(), now) {
            Ok(old) => released = old,
            Err(code) => return r.with_error_code(code),
        }
        ctx.shares.update(&group, &member, |sess| sess.names.extend(names.clone()));
    } else {
        let step = ctx.shares.with_session(&group, &member, epoch, now, |sess| {
            sess.names.extend(names.clone());
            sess.parts.extend(listed.iter().copied());
            let mut gone = Vec::new();
            for k in &forgotten {
                sess.parts.remove(k);
                if let Some(h) = sess.held.remove(k) {
                    gone.push(h);
                }
            }
            gone
        });
        match step {
            Ok((gone, closed)) => {
                released.extend(gone);
                released.extend(closed);
            }
            Err(code) => return r.with_error_code(code),
        }
    }
    // Acknowledgements first (they may free a partition to acquire from again).
    let renew = req.is_renew_ack.then_some(settings.lock);
    let acked = settle_request(ctx, &group, &member, epoch, acks, released, renew).await;
    let mut got = HashMap::new();
    // KIP-1222: a fetch that renews locks is the consumer still working on what it holds;
    // it acquires nothing more, as on Kafka.
    if epoch != -1 && !req.is_renew_ack {
        let max = if req.max_records <= 0 { DEFAULT_MAX_RECORDS } else { req.max_records.min(MAX_RECORDS) };
        let wait = Duration::from_millis(req.max_wait_ms.max(0) as u64).min(ctx.cfg.max_fetch_wait);
        let strict = req.share_acquire_mode == RECORD_LIMIT;
        (got, *mem) = acquire(ctx, (&group, &member), max, strict, epoch.max(0) as usize, wait, &settings).await;
    }
    // Partitions the session names whose topic is gone.
    if epoch != -1 {
        ctx.shares.update(&group, &member, |sess| {
            unknown.extend(sess.parts.iter().filter(|k| !sess.names.contains_key(&k.0)).copied());
        });
    }
    let mut keys: BTreeSet<SharePart> = got.keys().copied().collect();
    keys.extend(acked.keys().copied());
    keys.extend(unknown.iter().copied());
    let mut topics: BTreeMap<Uuid, Vec<PartitionData>> = BTreeMap::new();
    for k in keys {
        let g = got.remove(&k).unwrap_or_default();
        let (ack_code, ack_msg) = acked.get(&k).cloned().unwrap_or((NONE, None));
        let error = if unknown.contains(&k) { UNKNOWN_TOPIC_ID } else { g.error };
        topics.entry(k.0).or_default().push(
            PartitionData::default()
                .with_partition_index(k.1)
                .with_error_code(error)
                .with_error_message(g.message.map(s))
                .with_acknowledge_error_code(ack_code)
                .with_acknowledge_error_message(ack_msg.map(s))
                .with_current_leader(leader(ctx))
                .with_records(Some(g.records.unwrap_or_default()))
                .with_acquired_records(g.acquired),
        );
    }
    r.with_responses(
        topics
            .into_iter()
            .map(|(id, parts)| {
                share_fetch_response::ShareFetchableTopicResponse::default().with_topic_id(id).with_partitions(parts)
            })
            .collect(),
    )
}
