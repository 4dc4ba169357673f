//! Share groups (KIP-932, "queues for Kafka") served by Baton's own leases (D49): the
//! group side here (ShareGroupHeartbeat, ShareGroupDescribe, releasing what departed
//! members held), ShareFetch in `share_fetch`, acknowledgements in `share_ack`.
//!
//! A share group is the Baton consumer group of the same name. An acquisition is a
//! Baton lease of that group on one partition (so an HTTP consumer popping with the same
//! `consumerGroup` competes for the same messages, and never gets one a share consumer
//! holds); Accept is an ack `completed`, Release `failed` (Kafka counts every delivery,
//! and so does the retry budget), Reject `dlq`, and the delivery count is Baton's
//! attempt number. Past the queue's `retryLimit` a released or timed-out record goes to
//! the dead-letter queue, where Kafka would archive it.
//!
//! Owns the group APIs' shapes and the error answers of all the share APIs. Must never
//! let a share group be the queue-mode group (I6) or share a name with a live classic
//! group.

use crate::errors::*;
use crate::share_groups::{Assignment, Beat, BeatOutcome, Held};
use crate::topics::{kafka_partitions, queue_view, s, topic_id};
use crate::Ctx;
use baton_core::{AckItem, AckStatus, CoreError};
use kafka_protocol::messages::*;
use std::collections::{BTreeMap, HashMap};
use std::time::Instant;
use uuid::Uuid;

fn reserved(group: &str) -> bool {
    group == baton_core::QUEUE_MODE
}

pub async fn heartbeat(
    ctx: &Ctx,
    req: ShareGroupHeartbeatRequest,
    client_id: &str,
    host: &str,
) -> ShareGroupHeartbeatResponse {
    let r = ShareGroupHeartbeatResponse::default().with_member_id(Some(req.member_id.clone()));
    let refuse = |code: i16, msg: &str| r.clone().with_error_code(code).with_error_message(Some(s(msg)));
    let (group, member) = (req.group_id.as_str(), req.member_id.as_str());
    if group.is_empty() || member.is_empty() || member.len() > 255 {
        return refuse(INVALID_REQUEST, "a share group heartbeat names a group and a member id (1-255 bytes)");
    }
    if reserved(group) {
        return refuse(INVALID_GROUP_ID, "the queue-mode group is Baton's own");
    }
    if ctx.groups.describe(group).is_some() {
        return refuse(GROUP_ID_NOT_FOUND, "the group is a classic consumer group, not a share group");
    }
    if req.member_epoch == -1 {
        let (code, held) = ctx.shares.leave(group, member);
        release(ctx, group, held).await;
        return r.with_error_code(code).with_member_epoch(-1);
    }
    if req.member_epoch < -1 {
        return refuse(INVALID_REQUEST, "member epoch below -1");
    }
    let topics = match (&req.subscribed_topic_names, ctx.shares.topics_of(group, member)) {
        (Some(t), _) => t.iter().map(|n| n.to_string()).collect::<Vec<_>>(),
        (None, _) if req.member_epoch == 0 => {
            return refuse(INVALID_REQUEST, "a member joining names the topics it subscribes to")
        }
        (None, Some(t)) => t,
        (None, None) => return r.with_error_code(UNKNOWN_MEMBER_ID),
    };
    if topics.len() > crate::MAX_SUBSCRIBED_TOPICS {
        return refuse(INVALID_REQUEST, "too many subscribed topics");
    }
    let (assignment, names) = match assign(ctx, &topics).await {
        Ok(x) => x,
        Err(e) => return r.with_error_code(code_of(&e)),
    };
    // Read only for a heartbeat that passed every check: a refused one costs no KV read
    // (nor a cache slot for a group name that is never made).
    let settings = crate::group_configs::share_settings(ctx, group).await;
    let r = r.with_heartbeat_interval_ms(settings.heartbeat_interval.as_millis().min(i32::MAX as u128) as i32);
    let beat = Beat {
        group,
        member,
        epoch: req.member_epoch,
        topics,
        assignment,
        names,
        client_id,
        host,
        rack: req.rack_id.as_ref().map(|x| x.to_string()),
        session_timeout: settings.session_timeout,
    };
    match ctx.shares.beat(beat, Instant::now()) {
        BeatOutcome::Err(code) => r.with_error_code(code),
        BeatOutcome::Ok { epoch, assignment } => r.with_member_epoch(epoch).with_assignment(assignment.map(|a| {
            share_group_heartbeat_response::Assignment::default().with_topic_partitions(
                a.into_iter()
                    .map(|(id, parts)| {
                        share_group_heartbeat_response::TopicPartitions::default()
                            .with_topic_id(id)
                            .with_partitions(parts)
                    })
                    .collect(),
            )
        })),
    }
}

/// Every partition of every subscribed topic that exists goes to every member: Baton
/// leases a partition to one consumer of the group at a time, so members share the
/// partitions by taking turns (Kafka's share assignor may also give one partition to
/// several members).
async fn assign(ctx: &Ctx, topics: &[String]) -> Result<(Assignment, HashMap<Uuid, String>), CoreError> {
    let mut out = Vec::new();
    let mut names = HashMap::new();
    for t in topics {
        if let Some(q) = queue_view(ctx, t).await? {
            let id = topic_id(&q);
            let parts: Vec<i32> = kafka_partitions(&q).into_iter().map(|(i, _)| i).collect();
            if !parts.is_empty() {
                names.insert(id, t.clone());
                out.push((id, parts));
            }
        }
    }
    out.sort();
    Ok((out, names))
}

pub fn describe(ctx: &Ctx, req: ShareGroupDescribeRequest) -> ShareGroupDescribeResponse {
    use share_group_describe_response as d;
    let groups = req
        .group_ids
        .into_iter()
        .map(|g| {
            let out = d::DescribedGroup::default().with_group_id(g.clone()).with_authorized_operations(i32::MIN);
            let Some(v) = ctx.shares.describe(&g) else {
                return out
                    .with_error_code(GROUP_ID_NOT_FOUND)
                    .with_error_message(Some(s(format!("group {} is not a share group with members", g.as_str()))));
            };
            let members = v
                .members
                .into_iter()
                .map(|(id, m)| {
                    let tps = m
                        .assignment
                        .iter()
                        .map(|(t, parts)| {
                            let name = m.names.get(t).cloned().unwrap_or_default();
                            d::TopicPartitions::default()
                                .with_topic_id(*t)
                                .with_topic_name(TopicName(s(name)))
                                .with_partitions(parts.clone())
                        })
                        .collect();
                    d::Member::default()
                        .with_member_id(s(id))
                        .with_rack_id(m.rack.map(s))
                        .with_member_epoch(m.epoch)
                        .with_client_id(s(m.client_id))
                        .with_client_host(s(m.host))
                        .with_subscribed_topic_names(m.topics.into_iter().map(|t| TopicName(s(t))).collect())
                        .with_assignment(d::Assignment::default().with_topic_partitions(tps))
                })
                .collect();
            out.with_group_state(s("Stable"))
                .with_group_epoch(v.epoch)
                .with_assignment_epoch(v.epoch)
                .with_assignor_name(s("simple"))
                .with_members(members)
        })
        .collect();
    ShareGroupDescribeResponse::default().with_groups(groups)
}

/// Give back what a closed session or a departed member still held: each lease ends with
/// its released records charged a delivery (D85) and its open ones free (a `retry` of
/// the first of them).
pub async fn release(ctx: &Ctx, group: &str, held: Vec<Held>) {
    let items: Vec<AckItem> = held
        .into_iter()
        .flat_map(|h| {
            let item = |o: u64, status| AckItem {
                part: h.part,
                txid: None,
                offset: Some(o),
                lease: Some(h.lease),
                status,
                error: None,
            };
            let charged = h.released.iter().map(|o| item(*o, AckStatus::Failed));
            let free = h.open.first().map(|o| item(*o, AckStatus::Retry));
            charged.chain(free).collect::<Vec<_>>()
        })
        .collect();
    if !items.is_empty() {
        // A lease already over needs no release: its refusal is expected and harmless.
        let _ = ctx.engine.ack(Some(group.to_string()), items).await;
    }
}

/// Members and sessions past their timeouts go, and their leases are released.
pub async fn expire(ctx: &Ctx) {
    let gone = ctx.shares.expire(Instant::now());
    let mut by_group: BTreeMap<String, Vec<Held>> = BTreeMap::new();
    for (g, h) in gone {
        by_group.entry(g).or_default().push(h);
    }
    for (g, h) in by_group {
        release(ctx, &g, h).await;
    }
    let (sessions, members) = ctx.shares.counts();
    ctx.stats.share_sessions.store(sessions as u64, std::sync::atomic::Ordering::Relaxed);
    ctx.stats.share_members.store(members as u64, std::sync::atomic::Ordering::Relaxed);
}

/// Whole error answers for the share APIs (a member that does not lead, a version
/// outside the table).
pub fn error_response(req: &RequestKind, code: i16) -> Option<ResponseKind> {
    use RequestKind as Q;
    use ResponseKind as R;
    Some(match req {
        Q::ShareGroupHeartbeat(r) => R::ShareGroupHeartbeat(
            ShareGroupHeartbeatResponse::default().with_error_code(code).with_member_id(Some(r.member_id.clone())),
        ),
        Q::ShareGroupDescribe(r) => R::ShareGroupDescribe(
            ShareGroupDescribeResponse::default().with_groups(
                r.group_ids
                    .iter()
                    .map(|g| {
                        share_group_describe_response::DescribedGroup::default()
                            .with_group_id(g.clone())
                            .with_error_code(code)
                    })
                    .collect(),
            ),
        ),
        Q::ShareFetch(_) => R::ShareFetch(ShareFetchResponse::default().with_error_code(code)),
        Q::ShareAcknowledge(_) => R::ShareAcknowledge(ShareAcknowledgeResponse::default().with_error_code(code)),
        _ => return crate::share_admin::error_response(req, code),
    })
}
