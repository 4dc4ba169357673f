//! Consumer-group APIs: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
//! LeaveGroup (membership, held by the in-memory coordinator), OffsetCommit
//! and OffsetFetch (durable: a committed offset is the Baton group's cursor on
//! that partition), ListGroups, DescribeGroups, DeleteGroups.

use crate::coordinator::{JoinArgs, JoinOutcome, Reply, State, SyncOutcome};
use crate::errors::*;
use crate::topics::s;
use crate::Ctx;
use baton_core::{Query, QueryResult, QUEUE_MODE};
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::offset_commit_response::{OffsetCommitResponsePartition, OffsetCommitResponseTopic};
use kafka_protocol::messages::offset_fetch_response::*;
use kafka_protocol::messages::*;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;

/// The queue-mode group is Baton's own (I6): its cursors are what queue-mode
/// pops acked. No Kafka group API may join, commit, read, describe or delete
/// it (a delete made every acked message come back), so every one answers
/// INVALID_GROUP_ID for it, at the door, before the coordinator or the engine.
fn reserved(group: &str) -> bool {
    group == QUEUE_MODE
}

fn ms(v: i32) -> Duration {
    Duration::from_millis(v.max(0) as u64)
}

pub fn find_coordinator(ctx: &Ctx, req: FindCoordinatorRequest, version: i16) -> FindCoordinatorResponse {
    // The leader coordinates groups and transactions alike (D42, D48); other key
    // types (KIP-848 share groups) are not served.
    let (code, message): (i16, Option<kafka_protocol::protocol::StrBytes>) = match req.key_type {
        KEY_TYPE_GROUP | KEY_TYPE_TRANSACTION => (NONE, None),
        k => (INVALID_REQUEST, Some(s(format!("coordinator key type {k} is not served")))),
    };
    // The leader coordinates every group (D42); while none is known, clients retry.
    let topo = ctx.topology();
    let at = topo.leader.and_then(|l| topo.broker(l).cloned());
    let (code, message) = match &at {
        None if code == NONE => (COORDINATOR_NOT_AVAILABLE, None),
        _ => (code, message),
    };
    let (id, host, port) = at.map(|(id, h, p)| (id, s(h), p)).unwrap_or((-1, s(String::new()), -1));
    let refuse = |key: &str| req.key_type == KEY_TYPE_GROUP && reserved(key);
    if version < 4 {
        let (code, message) = if refuse(&req.key) { (INVALID_GROUP_ID, None) } else { (code, message) };
        let r = FindCoordinatorResponse::default().with_error_code(code).with_error_message(message);
        return if code == NONE {
            r.with_node_id(id.into()).with_host(host).with_port(port)
        } else {
            r.with_node_id((-1).into()).with_port(-1)
        };
    }
    let coordinators = req
        .coordinator_keys
        .into_iter()
        .map(|k| {
            let (code, message) = if refuse(&k) { (INVALID_GROUP_ID, None) } else { (code, message.clone()) };
            let c = Coordinator::default().with_key(k).with_error_code(code).with_error_message(message);
            if code == NONE {
                c.with_node_id(id.into()).with_host(host.clone()).with_port(port)
            } else {
                c.with_node_id((-1).into()).with_port(-1)
            }
        })
        .collect();
    FindCoordinatorResponse::default().with_coordinators(coordinators)
}

pub async fn join_group(
    ctx: &Ctx,
    req: JoinGroupRequest,
    version: i16,
    client_id: &str,
    host: &str,
) -> JoinGroupResponse {
    let args = JoinArgs {
        group: req.group_id.to_string(),
        member_id: req.member_id.to_string(),
        instance_id: req.group_instance_id.as_ref().map(|i| i.to_string()),
        client_id: client_id.to_string(),
        client_host: format!("/{host}"),
        session_timeout: ms(req.session_timeout_ms),
        rebalance_timeout: if version >= 1 { ms(req.rebalance_timeout_ms) } else { ms(req.session_timeout_ms) },
        protocol_type: req.protocol_type.to_string(),
        protocols: req.protocols.iter().map(|p| (p.name.to_string(), p.metadata.clone())).collect(),
        require_known_member_id: version >= 4,
    };
    let member = args.member_id.clone();
    let reply = if reserved(&args.group) {
        Reply::Now(JoinOutcome { error: INVALID_GROUP_ID, member_id: member.clone(), ..Default::default() })
    } else if ctx.shares.is_share_group(&args.group) {
        // A live share group of that name (D49): as Kafka, a classic member may not join it.
        Reply::Now(JoinOutcome { error: INCONSISTENT_GROUP_PROTOCOL, member_id: member.clone(), ..Default::default() })
    } else {
        ctx.groups.join(args, Instant::now())
    };
    let out = match reply {
        Reply::Now(o) => o,
        Reply::Later(rx) => rx.await.unwrap_or_else(|_| JoinOutcome {
            error: UNKNOWN_MEMBER_ID,
            member_id: member,
            ..Default::default()
        }),
    };
    let members = out
        .members
        .into_iter()
        .map(|(id, inst, meta)| {
            let m = JoinGroupResponseMember::default().with_member_id(s(id)).with_metadata(meta);
            if version >= 5 {
                m.with_group_instance_id(inst.map(s))
            } else {
                m
            }
        })
        .collect();
    let mut r = JoinGroupResponse::default()
        .with_error_code(out.error)
        .with_generation_id(if out.error == NONE { out.generation } else { -1 })
        .with_protocol_name(Some(s(out.protocol_name.unwrap_or_default())))
        .with_leader(s(out.leader))
        .with_member_id(s(out.member_id))
        .with_members(members);
    if version >= 7 {
        r.protocol_type = out.protocol_type.map(s);
    }
    if version >= 9 {
        r.skip_assignment = out.skip_assignment;
    }
    r
}

pub async fn sync_group(ctx: &Ctx, req: SyncGroupRequest, version: i16) -> SyncGroupResponse {
    if reserved(&req.group_id) {
        return SyncGroupResponse::default().with_error_code(INVALID_GROUP_ID);
    }
    let assignments = req.assignments.iter().map(|a| (a.member_id.to_string(), a.assignment.clone())).collect();
    let reply = ctx.groups.sync(
        &req.group_id,
        req.generation_id,
        &req.member_id,
        req.group_instance_id.as_deref(),
        req.protocol_type.as_deref(),
        req.protocol_name.as_deref(),
        assignments,
        Instant::now(),
    );
    let out = match reply {
        Reply::Now(o) => o,
        Reply::Later(rx) => rx.await.unwrap_or(SyncOutcome { error: REBALANCE_IN_PROGRESS, ..Default::default() }),
    };
    let mut r = SyncGroupResponse::default().with_error_code(out.error).with_assignment(out.assignment);
    if version >= 5 {
        r.protocol_type = out.protocol_type.map(s);
        r.protocol_name = out.protocol_name.map(s);
    }
    r
}

pub fn heartbeat(ctx: &Ctx, req: HeartbeatRequest) -> HeartbeatResponse {
    if reserved(&req.group_id) {
        return HeartbeatResponse::default().with_error_code(INVALID_GROUP_ID);
    }
    let code = ctx.groups.heartbeat(
        &req.group_id,
        req.generation_id,
        &req.member_id,
        req.group_instance_id.as_deref(),
        Instant::now(),
    );
    HeartbeatResponse::default().with_error_code(code)
}

pub fn leave_group(ctx: &Ctx, req: LeaveGroupRequest, version: i16) -> LeaveGroupResponse {
    if reserved(&req.group_id) {
        return LeaveGroupResponse::default().with_error_code(INVALID_GROUP_ID);
    }
    if version < 3 {
        let codes = ctx.groups.leave(&req.group_id, &[(req.member_id.to_string(), None)], Instant::now());
        return LeaveGroupResponse::default().with_error_code(codes[0]);
    }
    let who: Vec<(String, Option<String>)> = req
        .members
        .iter()
        .map(|m| (m.member_id.to_string(), m.group_instance_id.as_ref().map(|i| i.to_string())))
        .collect();
    let codes = ctx.groups.leave(&req.group_id, &who, Instant::now());
    let members = req
        .members
        .into_iter()
        .zip(codes)
        .map(|(m, code)| {
            MemberResponse::default()
                .with_member_id(m.member_id)
                .with_group_instance_id(m.group_instance_id)
                .with_error_code(code)
        })
        .collect();
    LeaveGroupResponse::default().with_members(members)
}

pub async fn offset_commit(ctx: &Ctx, req: OffsetCommitRequest, version: i16) -> OffsetCommitResponse {
    let instance = if version >= 7 { req.group_instance_id.as_deref() } else { None };
    let gate = if req.group_id.is_empty() || reserved(&req.group_id) {
        INVALID_GROUP_ID
    } else {
        ctx.groups.check_commit(
            &req.group_id,
            req.generation_id_or_member_epoch,
            &req.member_id,
            instance,
            Instant::now(),
        )
    };
    let mut topics = Vec::new();
    for t in req.topics {
        let codes: Vec<i16> = if gate != NONE {
            vec![gate; t.partitions.len()]
        } else {
            // Kafka lets a client commit -1 ("no position"); there is no cursor
            // for that, so it is accepted and changes nothing.
            let offs: Vec<(String, u64)> = t
                .partitions
                .iter()
                .filter(|p| p.committed_offset >= 0)
                .map(|p| (p.partition_index.to_string(), p.committed_offset as u64))
                .collect();
            let mut results = match ctx.engine.commit_offsets(req.group_id.to_string(), t.name.to_string(), offs).await
            {
                Ok(rs) => rs.into_iter().map(|r| r.err().map_or(NONE, |e| code_of(&e))).collect(),
                Err(e) => vec![code_of(&e); t.partitions.len()],
            }
            .into_iter();
            t.partitions
                .iter()
                .map(|p| if p.committed_offset >= 0 { results.next().unwrap_or(NONE) } else { NONE })
                .collect()
        };
        let parts = t
            .partitions
            .iter()
            .zip(codes)
            .map(|(p, code)| {
                OffsetCommitResponsePartition::default().with_partition_index(p.partition_index).with_error_code(code)
            })
            .collect();
        topics.push(OffsetCommitResponseTopic::default().with_name(t.name).with_partitions(parts));
    }
    OffsetCommitResponse::default().with_topics(topics)
}

/// A group's committed offsets: topic -> (partition -> next offset).
type Committed = BTreeMap<String, BTreeMap<i32, i64>>;

async fn committed(ctx: &Ctx, group: &str, topics: Option<Vec<String>>) -> Result<Committed, i16> {
    let mut out = Committed::new();
    match topics {
        Some(names) => {
            for t in names {
                let q = Query::GroupOffsets { group: group.to_string(), topic: t.clone() };
                let offs = match ctx.engine.query(q).await {
                    Ok(QueryResult::GroupOffsets(v)) => v,
                    Ok(_) => Vec::new(),
                    Err(e) => return Err(code_of(&e)),
                };
                let e = out.entry(t).or_default();
                for (p, o) in offs {
                    if let Ok(i) = p.parse::<i32>() {
                        e.insert(i, o as i64);
                    }
                }
            }
        }
        None => match ctx.engine.query(Query::Groups).await {
            Ok(QueryResult::Groups(v)) => {
                for g in v.into_iter().filter(|g| g.name == group) {
                    if let Ok(i) = g.partition.parse::<i32>() {
                        out.entry(g.queue).or_default().insert(i, g.offset as i64);
                    }
                }
            }
            Ok(_) => {}
            Err(e) => return Err(code_of(&e)),
        },
    }
    // The queries read the planner's state, which holds commits planned but
    // not yet durable (D1); answering only after a barrier planned after the
    // reads is durable shows only committed offsets whose entry is durable.
    ctx.engine.produce(baton_core::kafka_ops::ProduceRequest::barrier()).await.map_err(|e| code_of(&e))?;
    Ok(out)
}

pub async fn offset_fetch(ctx: &Ctx, req: OffsetFetchRequest, version: i16) -> OffsetFetchResponse {
    if version >= 8 {
        let mut groups = Vec::new();
        for g in req.groups {
            let wanted: Option<Vec<(String, Vec<i32>)>> = g
                .topics
                .as_ref()
                .map(|ts| ts.iter().map(|t| (t.name.to_string(), t.partition_indexes.clone())).collect());
            let (code, topics) = offsets_for(ctx, &g.group_id, wanted).await;
            let topics = topics
                .into_iter()
                .map(|(name, parts)| {
                    OffsetFetchResponseTopics::default().with_name(TopicName(s(name))).with_partitions(
                        parts
                            .into_iter()
                            .map(|(i, o)| {
                                OffsetFetchResponsePartitions::default()
                                    .with_partition_index(i)
                                    .with_committed_offset(o)
                                    .with_metadata(Some(s("")))
                            })
                            .collect(),
                    )
                })
                .collect();
            groups.push(
                OffsetFetchResponseGroup::default().with_group_id(g.group_id).with_error_code(code).with_topics(topics),
            );
        }
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let wanted: Option<Vec<(String, Vec<i32>)>> =
        req.topics.as_ref().map(|ts| ts.iter().map(|t| (t.name.to_string(), t.partition_indexes.clone())).collect());
    let (code, topics) = offsets_for(ctx, &req.group_id, wanted).await;
    let topics = topics
        .into_iter()
        .map(|(name, parts)| {
            OffsetFetchResponseTopic::default().with_name(TopicName(s(name))).with_partitions(
                parts
                    .into_iter()
                    .map(|(i, o)| {
                        OffsetFetchResponsePartition::default()
                            .with_partition_index(i)
                            .with_committed_offset(o)
                            .with_metadata(Some(s("")))
                            .with_error_code(if version < 2 { code } else { NONE })
                    })
                    .collect(),
            )
        })
        .collect();
    let mut r = OffsetFetchResponse::default().with_topics(topics);
    if version >= 2 {
        r.error_code = code;
    }
    r
}

/// The answer rows: for named partitions, -1 where nothing is committed.
async fn offsets_for(
    ctx: &Ctx,
    group: &str,
    wanted: Option<Vec<(String, Vec<i32>)>>,
) -> (i16, Vec<(String, Vec<(i32, i64)>)>) {
    if reserved(group) {
        return (INVALID_GROUP_ID, Vec::new());
    }
    let names = wanted.as_ref().map(|w| w.iter().map(|(t, _)| t.clone()).collect());
    let found = match committed(ctx, group, names).await {
        Ok(f) => f,
        Err(code) => return (code, Vec::new()),
    };
    let rows = match wanted {
        Some(w) => w
            .into_iter()
            .map(|(t, parts)| {
                let have = found.get(&t);
                let ps = parts.into_iter().map(|i| (i, have.and_then(|h| h.get(&i)).copied().unwrap_or(-1))).collect();
                (t, ps)
            })
            .collect(),
        None => found.into_iter().map(|(t, ps)| (t, ps.into_iter().collect())).collect(),
    };
    (NONE, rows)
}

/// Groups with offsets but no live members, by name (the engine's groups
/// other than the reserved queue-mode one).
async fn offset_only_groups(ctx: &Ctx) -> Vec<String> {
    let mut names: Vec<String> = match ctx.engine.query(Query::Groups).await {
        Ok(QueryResult::Groups(v)) => v.into_iter().map(|g| g.name).filter(|n| n != QUEUE_MODE).collect(),
        _ => Vec::new(),
    };
    names.sort();
    names.dedup();
    names
}

pub async fn list_groups(ctx: &Ctx, req: ListGroupsRequest, version: i16) -> ListGroupsResponse {
    let mut live = ctx.groups.list();
    live.retain(|(n, _, _)| !reserved(n));
    let mut all: Vec<(String, String, &'static str)> =
        live.iter().map(|(n, t, st)| (n.clone(), t.clone(), st.name())).collect();
    for n in offset_only_groups(ctx).await {
        if !live.iter().any(|(l, _, _)| *l == n) {
            all.push((n, "consumer".into(), State::Empty.name()));
        }
    }
    // Share groups (D49) are listed as Kafka lists them: type and protocol "share".
    let shares: Vec<(String, String, &'static str)> =
        ctx.shares.list().into_iter().map(|n| (n, "share".to_string(), "Stable")).collect();
    all.retain(|(n, _, _)| !shares.iter().any(|(x, _, _)| x == n));
    all.extend(shares);
    all.sort();
    let states: Vec<String> = req.states_filter.iter().map(|x| x.to_lowercase()).collect();
    let type_of = |t: &str| if t == "share" { "share" } else { "classic" };
    let types_ok =
        |t: &str| req.types_filter.is_empty() || req.types_filter.iter().any(|f| f.eq_ignore_ascii_case(type_of(t)));
    let groups = all
        .into_iter()
        .filter(|(_, t, st)| types_ok(t) && (states.is_empty() || states.contains(&st.to_lowercase())))
        .map(|(n, t, st)| {
            let kind = type_of(&t);
            let mut g = ListedGroup::default().with_group_id(GroupId(s(n))).with_protocol_type(s(t));
            if version >= 4 {
                g.group_state = s(st);
            }
            if version >= 5 {
                g.group_type = s(kind);
            }
            g
        })
        .collect();
    ListGroupsResponse::default().with_groups(groups)
}

pub async fn describe_groups(ctx: &Ctx, req: DescribeGroupsRequest, version: i16) -> DescribeGroupsResponse {
    let mut offsets_only: Option<Vec<String>> = None;
    let mut out = Vec::new();
    for g in req.groups {
        let mut d = DescribedGroup::default().with_group_id(g.clone());
        if reserved(&g) {
            out.push(d.with_error_code(INVALID_GROUP_ID));
            continue;
        }
        match ctx.groups.describe(&g) {
            Some(sum) => {
                d.group_state = s(sum.state.name());
                d.protocol_type = s(sum.protocol_type);
                d.protocol_data = s(sum.protocol);
                d.members = sum
                    .members
                    .into_iter()
                    .map(|m| {
                        let mut x = DescribedGroupMember::default()
                            .with_member_id(s(m.member_id))
                            .with_client_id(s(m.client_id))
                            .with_client_host(s(m.client_host))
                            .with_member_metadata(m.metadata)
                            .with_member_assignment(m.assignment);
                        if version >= 4 {
                            x.group_instance_id = m.instance_id.map(s);
                        }
                        x
                    })
                    .collect();
            }
            None => {
                if offsets_only.is_none() {
                    offsets_only = Some(offset_only_groups(ctx).await);
                }
                let known = offsets_only.iter().flatten().any(|n| n.as_str() == g.as_str());
                // Kafka describes a group it has never heard of as Dead, without an error.
                d.group_state = s(if known { "Empty" } else { "Dead" });
                d.protocol_type = s(if known { "consumer" } else { "" });
            }
        }
        out.push(d);
    }
    DescribeGroupsResponse::default().with_groups(out)
}

pub async fn delete_groups(ctx: &Ctx, req: DeleteGroupsRequest) -> DeleteGroupsResponse {
    let mut out = Vec::new();
    for g in req.groups_names {
        let refused = if reserved(&g) { Err(INVALID_GROUP_ID) } else { ctx.groups.delete(&g) };
        let code = match refused {
            Err(code) => code,
            Ok(()) => match ctx.engine.delete_group(g.to_string()).await {
                Ok(()) => {
                    // Its configs went in the same entry: not served from the cache either.
                    ctx.group_configs.forget(&g);
                    NONE
                }
                Err(e) if e.kind == baton_core::ErrorKind::NotFound => GROUP_ID_NOT_FOUND,
                Err(e) => code_of(&e),
            },
        };
        out.push(delete_groups_response::DeletableGroupResult::default().with_group_id(g).with_error_code(code));
    }
    DeleteGroupsResponse::default().with_results(out)
}
