//! The share-group offset admin APIs (KIP-932): DescribeShareGroupOffsets,
//! AlterShareGroupOffsets and DeleteShareGroupOffsets. A share group's start offset on a
//! partition is the Baton group's cursor there (D49): what is below it is settled.
//!
//! Must never move or drop the cursor of a group that has share members now (Kafka's
//! NON_EMPTY_GROUP): their acquisitions would be settled by a position they never saw.

use crate::errors::*;
use crate::topics::{kafka_partitions, queue_view, s, topic_id};
use crate::Ctx;
use baton_core::{Query, QueryResult};
use kafka_protocol::messages::*;

/// Why the group's positions may not be changed now, if they may not: a group that may
/// not be a share group, or one with members.
fn refuse_change(ctx: &Ctx, group: &str) -> Option<(i16, String)> {
    if let Some(refused) = refuse_group(ctx, group) {
        return Some(refused);
    }
    ctx.shares.is_share_group(group).then(|| (NON_EMPTY_GROUP, "the share group has members".to_string()))
}

fn refuse_group(ctx: &Ctx, group: &str) -> Option<(i16, String)> {
    if group == baton_core::QUEUE_MODE {
        return Some((INVALID_GROUP_ID, "the queue-mode group is Baton's own".into()));
    }
    if ctx.groups.describe(group).is_some() {
        return Some((GROUP_ID_NOT_FOUND, format!("group {group} is a classic consumer group")));
    }
    None
}

pub async fn describe_offsets(ctx: &Ctx, req: DescribeShareGroupOffsetsRequest) -> DescribeShareGroupOffsetsResponse {
    use describe_share_group_offsets_response as d;
    let mut groups = Vec::new();
    for g in req.groups {
        let out = d::DescribeShareGroupOffsetsResponseGroup::default().with_group_id(g.group_id.clone());
        if let Some((code, msg)) = refuse_group(ctx, &g.group_id) {
            groups.push(out.with_error_code(code).with_error_message(Some(s(msg))));
            continue;
        }
        // No topics named: every topic the group has a position on.
        let wanted: Vec<(String, Option<Vec<i32>>)> = match g.topics {
            Some(ts) => ts.into_iter().map(|t| (t.topic_name.to_string(), Some(t.partitions))).collect(),
            None => positioned_topics(ctx, &g.group_id).await.into_iter().map(|t| (t, None)).collect(),
        };
        let mut topics = Vec::new();
        for (name, parts) in wanted {
            let q = match queue_view(ctx, &name).await {
                Ok(Some(q)) => q,
                Ok(None) | Err(_) => {
                    let p = parts.unwrap_or_default().into_iter().map(|i| {
                        d::DescribeShareGroupOffsetsResponsePartition::default()
                            .with_partition_index(i)
                            .with_start_offset(-1)
                            .with_error_code(UNKNOWN_TOPIC_OR_PARTITION)
                    });
                    topics.push(
                        d::DescribeShareGroupOffsetsResponseTopic::default()
                            .with_topic_name(TopicName(s(name)))
                            .with_partitions(p.collect()),
                    );
                    continue;
                }
            };
            let at = positions(ctx, &g.group_id, &name).await;
            let all: Vec<i32> = kafka_partitions(&q).into_iter().map(|(i, _)| i).collect();
            let parts = parts.unwrap_or_else(|| all.clone());
            let p = parts
                .into_iter()
                .map(|i| {
                    let r = d::DescribeShareGroupOffsetsResponsePartition::default().with_partition_index(i);
                    if !all.contains(&i) {
                        return r.with_start_offset(-1).with_error_code(UNKNOWN_TOPIC_OR_PARTITION);
                    }
                    // -1: the group has no position here yet.
                    let start = at.iter().find(|(p, _)| *p == i.to_string()).map_or(-1, |(_, o)| *o as i64);
                    r.with_start_offset(start).with_leader_epoch(0)
                })
                .collect();
            topics.push(
                d::DescribeShareGroupOffsetsResponseTopic::default()
                    .with_topic_name(TopicName(s(name)))
                    .with_topic_id(topic_id(&q))
                    .with_partitions(p),
            );
        }
        groups.push(out.with_topics(topics));
    }
    DescribeShareGroupOffsetsResponse::default().with_groups(groups)
}

/// The group's next offset per partition of a topic ("0" -> 12), as Baton keeps it.
async fn positions(ctx: &Ctx, group: &str, topic: &str) -> Vec<(String, u64)> {
    let q = Query::GroupOffsets { group: group.to_string(), topic: topic.to_string() };
    match ctx.engine.query(q).await {
        Ok(QueryResult::GroupOffsets(v)) => v,
        _ => Vec::new(),
    }
}

async fn positioned_topics(ctx: &Ctx, group: &str) -> Vec<String> {
    let mut v: Vec<String> = match ctx.engine.query(Query::Groups).await {
        Ok(QueryResult::Groups(gs)) => gs.into_iter().filter(|g| g.name == group).map(|g| g.queue).collect(),
        _ => Vec::new(),
    };
    v.sort();
    v.dedup();
    v
}

pub async fn alter_offsets(ctx: &Ctx, req: AlterShareGroupOffsetsRequest) -> AlterShareGroupOffsetsResponse {
    use alter_share_group_offsets_response as a;
    let r = AlterShareGroupOffsetsResponse::default();
    let group = req.group_id.to_string();
    if let Some((code, msg)) = refuse_change(ctx, &group) {
        return r.with_error_code(code).with_error_message(Some(s(msg)));
    }
    let mut out = Vec::new();
    for t in req.topics {
        let name = t.topic_name.to_string();
        let view = queue_view(ctx, &name).await.ok().flatten();
        let mut parts: Vec<a::AlterShareGroupOffsetsResponsePartition> = Vec::new();
        let mut asks = Vec::new();
        for p in &t.partitions {
            let known = view.as_ref().is_some_and(|q| kafka_partitions(q).iter().any(|(i, _)| *i == p.partition_index));
            let code = if !known {
                UNKNOWN_TOPIC_OR_PARTITION
            } else if p.start_offset < 0 {
                INVALID_REQUEST
            } else {
                asks.push((p.partition_index.to_string(), p.start_offset as u64));
                NONE
            };
            parts.push(
                a::AlterShareGroupOffsetsResponsePartition::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(code),
            );
        }
        if !asks.is_empty() {
            let results = ctx.engine.commit_offsets(group.clone(), name.clone(), asks.clone()).await;
            for ((idx, _), res) in asks.iter().zip(match &results {
                Ok(v) => v.iter().map(|x| x.as_ref().err().map(code_of)).collect::<Vec<_>>(),
                Err(e) => vec![Some(code_of(e)); asks.len()],
            }) {
                if let (Some(code), Some(p)) = (res, parts.iter_mut().find(|p| p.partition_index.to_string() == *idx)) {
                    p.error_code = code;
                }
            }
        }
        let mut topic = a::AlterShareGroupOffsetsResponseTopic::default().with_topic_name(t.topic_name);
        if let Some(q) = &view {
            topic.topic_id = topic_id(q);
        }
        out.push(topic.with_partitions(parts));
    }
    r.with_responses(out)
}

pub async fn delete_offsets(ctx: &Ctx, req: DeleteShareGroupOffsetsRequest) -> DeleteShareGroupOffsetsResponse {
    use delete_share_group_offsets_response as d;
    let r = DeleteShareGroupOffsetsResponse::default();
    let group = req.group_id.to_string();
    if let Some((code, msg)) = refuse_change(ctx, &group) {
        return r.with_error_code(code).with_error_message(Some(s(msg)));
    }
    let mut out = Vec::new();
    for t in req.topics {
        let name = t.topic_name.to_string();
        let topic = d::DeleteShareGroupOffsetsResponseTopic::default().with_topic_name(t.topic_name);
        let Ok(Some(q)) = queue_view(ctx, &name).await else {
            out.push(topic.with_error_code(UNKNOWN_TOPIC_OR_PARTITION));
            continue;
        };
        let parts: Vec<String> = kafka_partitions(&q).into_iter().map(|(i, _)| i.to_string()).collect();
        let code = match ctx.engine.delete_offsets(group.clone(), name, parts).await {
            Ok(v) => v.iter().find_map(|x| x.as_ref().err().map(code_of)).unwrap_or(NONE),
            Err(e) => code_of(&e),
        };
        out.push(topic.with_topic_id(topic_id(&q)).with_error_code(code));
    }
    r.with_responses(out)
}

pub fn error_response(req: &RequestKind, code: i16) -> Option<ResponseKind> {
    use RequestKind as Q;
    use ResponseKind as R;
    Some(match req {
        Q::DescribeShareGroupOffsets(r) => R::DescribeShareGroupOffsets(
            DescribeShareGroupOffsetsResponse::default().with_groups(
                r.groups
                    .iter()
                    .map(|g| {
                        describe_share_group_offsets_response::DescribeShareGroupOffsetsResponseGroup::default()
                            .with_group_id(g.group_id.clone())
                            .with_error_code(code)
                    })
                    .collect(),
            ),
        ),
        Q::AlterShareGroupOffsets(_) => {
            R::AlterShareGroupOffsets(AlterShareGroupOffsetsResponse::default().with_error_code(code))
        }
        Q::DeleteShareGroupOffsets(_) => {
            R::DeleteShareGroupOffsets(DeleteShareGroupOffsetsResponse::default().with_error_code(code))
        }
        _ => return None,
    })
}
