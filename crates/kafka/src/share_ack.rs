//! Share-group acknowledgements (D49): ShareAcknowledge, and the acknowledgements a
//! ShareFetch carries. Each is settled as a Baton ack under the lease its records were
//! acquired with; all of one request's are one engine call, one entry. A Renew (KIP-1222,
//! version 2) extends the lease its records are held under by the group's lock time (D71).
//!
//! Must never answer an acknowledgement as done before the engine's ack is durable, never
//! settle under a lease other than the one the session holds (I4), and never walk an
//! offset range wider than what the session holds or the request itself carries.

use crate::errors::*;
use crate::share::release;
use crate::share_groups::{Held, SharePart};
use crate::topics::s;
use crate::Ctx;
use baton_core::{AckItem, AckStatus};
use futures_util::future::join_all;
use kafka_protocol::messages::*;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};
use uuid::Uuid;

const GAP: i8 = 0;
const ACCEPT: i8 = 1;
const RELEASE: i8 = 2;
const REJECT: i8 = 3;
/// KIP-1222: keep the record acquired for another lock time; only in a request that says
/// it carries renewals (`IsRenewAck`, version 2).
const RENEW: i8 = 4;

fn status_of(t: i8) -> Option<AckStatus> {
    match t {
        GAP | ACCEPT => Some(AckStatus::Completed),
        RELEASE => Some(AckStatus::Failed),
        REJECT => Some(AckStatus::Dlq),
        _ => None,
    }
}

/// One partition's acknowledgements: (first, last, types) batches.
pub(crate) type AckBatches = Vec<(i64, i64, Vec<i8>)>;

/// One partition's batches as either request spells them.
pub(crate) fn batches_of<B>(bs: &[B], f: impl Fn(&B) -> (i64, i64, &Vec<i8>)) -> AckBatches {
    bs.iter()
        .map(|b| {
            let (first, last, types) = f(b);
            (first, last, types.clone())
        })
        .collect()
}

/// What the acknowledgements of one request came to, per partition: (code, message).
pub(crate) type AckOutcome = HashMap<SharePart, (i16, Option<String>)>;

/// Settle what a live session's member acknowledged. The leases named are copied out of
/// the session, settled, and written back unless the session moved on meanwhile.
async fn acknowledge(
    ctx: &Ctx,
    group: &str,
    member: &str,
    wants: Vec<(SharePart, AckBatches)>,
    renew: Option<Duration>,
) -> AckOutcome {
    if wants.is_empty() {
        return HashMap::new();
    }
    let keys: Vec<SharePart> = wants.iter().map(|(k, _)| *k).collect();
    let mut held: HashMap<SharePart, Held> = ctx
        .shares
        .update(group, member, |sess| keys.iter().filter_map(|k| sess.held.get(k).map(|h| (*k, h.clone()))).collect())
        .unwrap_or_default();
    let before: Vec<(SharePart, baton_core::LeaseId)> = held.iter().map(|(k, h)| (*k, h.lease)).collect();
    let out = settle(ctx, group, &mut held, wants, renew).await;
    ctx.shares.update(group, member, |sess| {
        for (k, lease) in before {
            if sess.held.get(&k).is_none_or(|h| h.lease != lease) {
                continue;
            }
            match held.remove(&k) {
                Some(h) => sess.held.insert(k, h),
                None => sess.held.remove(&k),
            };
        }
    });
    out
}

/// Settle acknowledgements under the leases in `held`, as one engine call (one log
/// entry). A partition with any refused acknowledgement answers INVALID_RECORD_STATE;
/// the others are settled. A lease that ended (all settled or released, or no longer
/// live) leaves `held`.
async fn settle(
    ctx: &Ctx,
    group: &str,
    held: &mut HashMap<SharePart, Held>,
    wants: Vec<(SharePart, AckBatches)>,
    renew_lock: Option<Duration>,
) -> AckOutcome {
    let mut out: AckOutcome = HashMap::new();
    // (share partition, offset, status) of each item, in the items' order.
    let mut keys: Vec<(SharePart, u64, AckStatus)> = Vec::new();
    let mut items: Vec<AckItem> = Vec::new();
    let mut renew: Vec<SharePart> = Vec::new();
    let mut deferred: Vec<(SharePart, Vec<u64>)> = Vec::new();
    for (key, batches) in &wants {
        let Some(h) = held.get(key) else {
            out.insert(*key, (INVALID_RECORD_STATE, Some("no records of this partition are acquired".into())));
            continue;
        };
        match plan_acks(h, batches, renew_lock.is_some()) {
            Ok((v, renews)) => {
                if renews {
                    renew.push(*key);
                }
                let (now, later) = split_releases(h, v);
                if !later.is_empty() {
                    deferred.push((*key, later));
                }
                for (o, st) in now {
                    keys.push((*key, o, st));
                    items.push(AckItem {
                        part: h.part,
                        txid: None,
                        offset: Some(o),
                        lease: Some(h.lease),
                        status: st,
                        error: (st == AckStatus::Dlq).then(|| "rejected by a Kafka share consumer".into()),
                    });
                }
            }
            Err((code, msg)) => {
                out.insert(*key, (code, Some(msg)));
            }
        }
    }
    if !items.is_empty() {
        settle_items(ctx, group, held, &mut out, keys, items).await;
    }
    for (key, offsets) in deferred {
        let ok = out.get(&key).is_none_or(|(code, _)| *code == NONE);
        if let Some(h) = held.get_mut(&key).filter(|_| ok) {
            for o in offsets {
                h.open.remove(&o);
                h.released.insert(o);
            }
            out.insert(key, (NONE, None));
        }
    }
    if let Some(lock) = renew_lock.filter(|_| !renew.is_empty()) {
        renew_locks(ctx, lock, held, &mut out, renew).await;
    }
    out
}

/// D85: what of one partition's planned acks goes to the engine now, and which releases
/// wait. Baton holds a partition's acquired records under one lease, and ending it gives
/// all of them back; Kafka ends only the released record's acquisition. So a release
/// waits in `released` while the member holds other records of that acquisition (ones it
/// may not have been handed yet: a share consumer fetches ahead), and the acks that settle
/// the last open record also give back every release, each charged a delivery, in the
/// same entry. Nobody else can take the released record meanwhile: the partition is leased.
fn split_releases(h: &Held, v: Vec<(u64, AckStatus)>) -> (Vec<(u64, AckStatus)>, Vec<u64>) {
    let named: std::collections::BTreeSet<u64> = v.iter().map(|(o, _)| *o).collect();
    let last = named.len() == h.open.len();
    let (released, mut now): (Vec<_>, Vec<_>) = v.into_iter().partition(|(_, st)| *st == AckStatus::Failed);
    if !last {
        return (now, released.into_iter().map(|(o, _)| o).collect());
    }
    now.extend(h.released.iter().map(|o| (*o, AckStatus::Failed)));
    now.extend(released);
    (now, Vec::new())
}

/// The acks of one request as one engine call; a lease they end leaves `held`.
async fn settle_items(
    ctx: &Ctx,
    group: &str,
    held: &mut HashMap<SharePart, Held>,
    out: &mut AckOutcome,
    keys: Vec<(SharePart, u64, AckStatus)>,
    items: Vec<AckItem>,
) {
    let results = match ctx.engine.ack(Some(group.to_string()), items).await {
        Ok(r) => r,
        Err(e) => {
            for (k, _, _) in &keys {
                out.insert(*k, (code_of(&e), Some(e.message.clone())));
            }
            return;
        }
    };
    let settled = results.iter().filter(|r| r.is_ok()).count() as u64;
    ctx.stats.share_acks.fetch_add(settled, std::sync::atomic::Ordering::Relaxed);
    for ((key, o, st), r) in keys.iter().zip(&results) {
        match r {
            Ok(()) => {
                let ended = held.get_mut(key).is_some_and(|h| {
                    h.open.remove(o);
                    // A release ends the whole lease; `split_releases` sends one only with
                    // the acks that settle the last open record.
                    h.open.is_empty() || *st == AckStatus::Failed
                });
                if ended {
                    held.remove(key);
                }
                out.entry(*key).or_insert((NONE, None));
            }
            Err(e) => {
                if e.code == "lease_not_live" {
                    held.remove(key);
                }
                out.insert(*key, (INVALID_RECORD_STATE, Some(e.message.clone())));
            }
        }
    }
}

/// KIP-1222: each partition with a record renewed gets its lease extended by the group's
/// lock time from now (one engine call each, all at once, bounded by the request's
/// partitions). Baton
/// holds a partition's acquired records under one lease, so renewing one of them renews
/// every record of that partition this member holds: none is held for less than asked.
/// A partition whose lease this request's own acks ended, or that failed, is not renewed.
async fn renew_locks(
    ctx: &Ctx,
    lock: Duration,
    held: &mut HashMap<SharePart, Held>,
    out: &mut AckOutcome,
    renew: Vec<SharePart>,
) {
    let secs = lock.as_millis().div_ceil(1000).max(1) as u64;
    let todo: Vec<(SharePart, baton_core::LeaseId)> = renew
        .into_iter()
        .filter(|k| out.get(k).is_none_or(|(code, _)| *code == NONE))
        .filter_map(|k| held.get(&k).map(|h| (k, h.lease)))
        .collect();
    // Sent together, so the planner commits them together: a request naming thousands of
    // partitions costs a group commit or two, not one fdatasync per partition in turn.
    let results = join_all(todo.iter().map(|(_, lease)| ctx.engine.extend(*lease, Some(secs)))).await;
    for ((key, _), r) in todo.into_iter().zip(results) {
        match r {
            Ok(_) => {
                if let Some(h) = held.get_mut(&key) {
                    h.expires = Instant::now() + lock;
                }
                ctx.stats.share_renewals.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                out.entry(key).or_insert((NONE, None));
            }
            Err(e) if e.kind == baton_core::ErrorKind::Conflict || e.kind == baton_core::ErrorKind::NotFound => {
                held.remove(&key);
                out.insert(key, (INVALID_RECORD_STATE, Some(e.message.clone())));
            }
            Err(e) => {
                out.insert(key, (code_of(&e), Some(e.message.clone())));
            }
        }
    }
}

/// The (offset, status) items of one partition, and whether a record of it is renewed.
type AckPlan = (Vec<(u64, AckStatus)>, bool);

/// The (offset, status) items one partition's batches ask for. Bounded by the batches'
/// own size: a single type over a range applies to the held offsets in it, and a range
/// with offsets this session does not hold is refused unless they are gaps.
/// With `renewing`, Renew is a type too: its offsets must be held, and it settles nothing;
/// the second value says whether any record was renewed.
fn plan_acks(h: &Held, batches: &AckBatches, renewing: bool) -> Result<AckPlan, (i16, String)> {
    let mut v = Vec::new();
    let mut renews = false;
    let bad = |m: &str| Err((INVALID_REQUEST, m.to_string()));
    // `None` settles nothing (a renewal); an unknown type, or Renew where the request did
    // not announce renewals, is refused.
    let status = |t: i8| match t {
        RENEW if renewing => Ok(None),
        t => status_of(t).map(Some).ok_or(()),
    };
    for (first, last, types) in batches {
        if *first < 0 || last < first {
            return bad("an acknowledgement batch runs from a first offset to a last at or after it");
        }
        let span = (*last as i128 - *first as i128 + 1) as u128;
        match types.len() {
            1 => {
                let t = types[0];
                let Ok(st) = status(t) else { return bad("unknown acknowledge type") };
                let inside: Vec<u64> = h.open.range(*first as u64..=*last as u64).copied().collect();
                if t != GAP && inside.len() as u128 != span {
                    return Err((INVALID_RECORD_STATE, "the batch names records this member does not hold".into()));
                }
                match st {
                    Some(st) => v.extend(inside.into_iter().map(|o| (o, st))),
                    None => renews = true,
                }
            }
            n if n as u128 == span => {
                for (i, t) in types.iter().enumerate() {
                    let Ok(st) = status(*t) else { return bad("unknown acknowledge type") };
                    let o = *first as u64 + i as u64;
                    if h.open.contains(&o) {
                        match st {
                            Some(st) => v.push((o, st)),
                            None => renews = true,
                        }
                    } else if *t != GAP {
                        return Err((INVALID_RECORD_STATE, format!("offset {o} is not held by this member")));
                    }
                }
            }
            _ => return bad("acknowledge types are one for the batch or one per offset"),
        }
    }
    // Overlapping batches could accept and release one record: the accept would settle it
    // and the release, waiting (D85), would later refuse and keep the lease to its lock.
    let mut named: Vec<u64> = v.iter().map(|(o, _)| *o).collect();
    named.sort_unstable();
    if named.windows(2).any(|w| w[0] == w[1]) {
        return bad("an offset is acknowledged twice in one request");
    }
    Ok((v, renews))
}

/// Acknowledgements in the request that closes a session, settled under the leases the
/// closed session handed back; what they leave open stays in `released` to be released.
async fn acknowledge_closed(
    ctx: &Ctx,
    group: &str,
    acks: Vec<(SharePart, AckBatches)>,
    released: &mut Vec<Held>,
) -> AckOutcome {
    if acks.is_empty() {
        return HashMap::new();
    }
    let mut held: HashMap<SharePart, Held> = released.drain(..).map(|h| (h.key, h)).collect();
    // Renewals of a closing session's records would be released at once: none is made.
    let out = settle(ctx, group, &mut held, acks, None).await;
    released.extend(held.into_values());
    out
}

/// What one request acknowledged, settled (under the live session's leases, or, for the
/// request that closed it, under the leases it handed back), then everything `released`
/// still holds given back.
pub(crate) async fn settle_request(
    ctx: &Ctx,
    group: &str,
    member: &str,
    epoch: i32,
    acks: Vec<(SharePart, AckBatches)>,
    mut released: Vec<Held>,
    renew: Option<Duration>,
) -> AckOutcome {
    let out = if epoch == -1 {
        acknowledge_closed(ctx, group, acks, &mut released).await
    } else {
        acknowledge(ctx, group, member, acks, renew).await
    };
    release(ctx, group, released).await;
    out
}

pub async fn acknowledge_request(ctx: &Ctx, req: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse {
    use share_acknowledge_response as a;
    let r = ShareAcknowledgeResponse::default();
    let (Some(group), Some(member)) = (req.group_id.as_ref(), req.member_id.as_ref()) else {
        return r
            .with_error_code(INVALID_REQUEST)
            .with_error_message(Some(s("a share acknowledge names its group and member")));
    };
    let (group, member) = (group.to_string(), member.to_string());
    let epoch = req.share_session_epoch;
    if epoch == 0 {
        return r.with_error_code(INVALID_SHARE_SESSION_EPOCH);
    }
    let acks: Vec<(SharePart, AckBatches)> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                let b =
                    batches_of(&p.acknowledgement_batches, |b| (b.first_offset, b.last_offset, &b.acknowledge_types));
                ((t.topic_id, p.partition_index), b)
            })
        })
        .collect();
    if acks.len() > crate::MAX_SHARE_PARTITIONS {
        return r
            .with_error_code(INVALID_REQUEST)
            .with_error_message(Some(s("too many partitions in one acknowledge")));
    }
    let released = match ctx.shares.with_session(&group, &member, epoch, Instant::now(), |_| ()) {
        Ok(((), closed)) => closed,
        Err(code) => return r.with_error_code(code),
    };
    // The group's lock time, read once: what a renewal extends by, and (version 2) what the
    // answer says the renewed records are held for.
    let renew = match req.is_renew_ack {
        true => Some(crate::group_configs::share_settings(ctx, &group).await.lock),
        false => None,
    };
    let acked = settle_request(ctx, &group, &member, epoch, acks, released, renew).await;
    let r = match renew {
        Some(lock) => r.with_acquisition_lock_timeout_ms(lock.as_millis().min(i32::MAX as u128) as i32),
        None => r,
    };
    let mut topics: BTreeMap<Uuid, Vec<a::PartitionData>> = BTreeMap::new();
    for (k, (code, msg)) in acked {
        topics.entry(k.0).or_default().push(
            a::PartitionData::default()
                .with_partition_index(k.1)
                .with_error_code(code)
                .with_error_message(msg.map(s))
                .with_current_leader(
                    a::LeaderIdAndEpoch::default().with_leader_id(ctx.topology().me).with_leader_epoch(0),
                ),
        );
    }
    r.with_responses(
        topics
            .into_iter()
            .map(|(id, mut parts)| {
                parts.sort_by_key(|p| p.partition_index);
                a::ShareAcknowledgeTopicResponse::default().with_topic_id(id).with_partitions(parts)
            })
            .collect(),
    )
}
