//! Topics: Metadata (with auto-create), CreateTopics, DeleteTopics,
//! CreatePartitions and DescribeConfigs, and the mapping between Baton queues
//! and Kafka topics. Kafka partition `n` is the partition named `"n"`; a
//! queue's Kafka partitions are the dense run "0", "1", ... it has, so a queue
//! used only over HTTP with other partition names shows no Kafka partitions.

use crate::errors::*;
use crate::{Ctx, Topology};
use baton_core::topic_config::{changed, ConfigOp, TOPIC_CONFIGS};
use baton_core::{CoreError, PartitionView, Query, QueryResult, QueueView};
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::describe_configs_response::{DescribeConfigsResourceResult, DescribeConfigsResult};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use std::collections::HashMap;

/// Largest partition count a CreateTopics or CreatePartitions may ask for.
const MAX_PARTITIONS: i32 = baton_core::limits::MAX_KAFKA_PARTITIONS as i32;
const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;

pub fn s(v: impl Into<String>) -> StrBytes {
    StrBytes::from_string(v.into())
}

/// Kafka's topic name rule: 1-249 of [a-zA-Z0-9._-], not "." or "..".
pub fn valid_topic(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

/// A stable topic id: a hash of the name and creation time, so it is the same
/// across restarts and different for a topic deleted and created again.
pub fn topic_id(q: &QueueView) -> uuid::Uuid {
    let fnv = |seed: u64| {
        let mut h = seed;
        for b in q.name.bytes().chain(q.created_at.to_be_bytes()) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    };
    uuid::Uuid::from_u64_pair(fnv(0xcbf2_9ce4_8422_2325), fnv(0x6c62_272e_07bb_0142) | 1)
}

/// The queue's Kafka partitions: ("0", "1", ... while they exist), by index.
pub fn kafka_partitions(q: &QueueView) -> Vec<(i32, &PartitionView)> {
    let by_name: HashMap<&str, &PartitionView> = q.partitions.iter().map(|p| (p.name.as_str(), p)).collect();
    let mut out = Vec::new();
    while let Some(p) = by_name.get(out.len().to_string().as_str()) {
        out.push((out.len() as i32, *p));
    }
    out
}

pub async fn queue_view(ctx: &Ctx, name: &str) -> Result<Option<QueueView>, CoreError> {
    ctx.engine.queue_view(name, None).await
}

async fn all_queues(ctx: &Ctx) -> Result<Vec<QueueView>, CoreError> {
    ctx.engine.queue_views(None, None).await
}

/// Make sure `name` has Kafka partitions, creating the topic (or its first
/// partitions, for a queue used only over HTTP) when auto-create allows.
pub async fn ensure_topic(ctx: &Ctx, name: &str, allow_create: bool) -> Result<Option<QueueView>, i16> {
    let view = queue_view(ctx, name).await.map_err(|e| code_of(&e))?;
    if view.as_ref().is_some_and(|q| !kafka_partitions(q).is_empty()) || !allow_create {
        return Ok(view);
    }
    if !valid_topic(name) {
        return Err(INVALID_TOPIC);
    }
    if name.starts_with("__") {
        // Kafka's internal topics (__consumer_offsets...) are never created by asking.
        return Ok(view);
    }
    ctx.engine.create_topic(name.to_string(), ctx.cfg.default_partitions.max(1)).await.map_err(|e| code_of(&e))?;
    tracing::info!(topic = name, partitions = ctx.cfg.default_partitions, "kafka: auto-created topic");
    queue_view(ctx, name).await.map_err(|e| code_of(&e))
}

/// On a member that does not lead: asks the leader to create topic `name` (a name it would
/// create itself only). Best effort: the client's next Metadata shows whether it exists.
async fn ask_leader_to_create(ctx: &Ctx, name: &str) {
    let Some(ask) = &ctx.cfg.leader_ask else { return };
    if !valid_topic(name) || name.starts_with("__") {
        return;
    }
    if let Err(e) = (ask.create_topic)(name.to_string(), ctx.cfg.default_partitions.max(1)).await {
        tracing::debug!(topic = name, error = %e, "kafka: the leader did not create the topic");
    }
}

fn topic_entry(q: &QueueView, version: i16, topo: &Topology) -> MetadataResponseTopic {
    // Every member holds every partition; the Raft leader leads them all (D42).
    let replicas: Vec<BrokerId> = topo.brokers.iter().map(|b| b.0.into()).collect();
    let parts = kafka_partitions(q)
        .into_iter()
        .map(|(i, _)| {
            let mut p = MetadataResponsePartition::default()
                .with_partition_index(i)
                .with_leader_id(topo.leader.unwrap_or(-1).into())
                .with_error_code(if topo.leader.is_some() { NONE } else { LEADER_NOT_AVAILABLE })
                .with_replica_nodes(replicas.clone())
                .with_isr_nodes(replicas.clone());
            if version >= 7 {
                p.leader_epoch = 0;
            }
            p
        })
        .collect();
    let mut t = MetadataResponseTopic::default().with_name(Some(TopicName(s(q.name.clone())))).with_partitions(parts);
    if version >= 10 {
        t.topic_id = topic_id(q);
    }
    t
}

fn topic_error(name: Option<TopicName>, code: i16) -> MetadataResponseTopic {
    MetadataResponseTopic::default().with_name(name).with_error_code(code)
}

fn brokers(topo: &Topology) -> Vec<MetadataResponseBroker> {
    topo.brokers
        .iter()
        .map(|(id, host, port)| {
            MetadataResponseBroker::default().with_node_id((*id).into()).with_host(s(host.clone())).with_port(*port)
        })
        .collect()
}

pub async fn metadata(ctx: &Ctx, req: MetadataRequest, version: i16) -> MetadataResponse {
    let topo = ctx.topology();
    // Only the leader creates: elsewhere an unknown topic is unknown until the leader made it.
    let could = ctx.cfg.auto_create && (version < 4 || req.allow_auto_topic_creation);
    let allow = could && topo.leads();
    let listed = match &req.topics {
        None => None,
        Some(v) if v.is_empty() && version == 0 => None,
        Some(v) => Some(v),
    };
    let mut topics = Vec::new();
    match listed {
        None => match all_queues(ctx).await {
            Ok(qs) => topics
                .extend(qs.iter().filter(|q| !kafka_partitions(q).is_empty()).map(|q| topic_entry(q, version, &topo))),
            Err(e) => tracing::warn!(error = %e, "kafka: metadata could not list topics"),
        },
        Some(wanted) => {
            let mut by_id: Option<Vec<QueueView>> = None;
            for t in wanted {
                let name = match &t.name {
                    Some(n) => n.to_string(),
                    None => {
                        // v10+: a topic named only by id.
                        if by_id.is_none() {
                            by_id = Some(all_queues(ctx).await.unwrap_or_default());
                        }
                        match by_id.iter().flatten().find(|q| topic_id(q) == t.topic_id) {
                            Some(q) => q.name.clone(),
                            None => {
                                let mut e = topic_error(None, E_UNKNOWN_TOPIC_ID);
                                e.topic_id = t.topic_id;
                                topics.push(e);
                                continue;
                            }
                        }
                    }
                };
                let tn = Some(TopicName(s(name.clone())));
                match ensure_topic(ctx, &name, allow).await {
                    Ok(Some(q)) => topics.push(topic_entry(&q, version, &topo)),
                    // Retriable: the leader is asked to create it, and the client asks again.
                    Ok(None) if could && !allow => {
                        ask_leader_to_create(ctx, &name).await;
                        topics.push(topic_error(tn, LEADER_NOT_AVAILABLE))
                    }
                    Ok(None) => topics.push(topic_error(tn, UNKNOWN_TOPIC_OR_PARTITION)),
                    Err(code) => topics.push(topic_error(tn, code)),
                }
            }
        }
    }
    MetadataResponse::default()
        .with_brokers(brokers(&topo))
        .with_cluster_id(Some(s("baton")))
        .with_controller_id(topo.leader.unwrap_or(-1).into())
        .with_topics(topics)
}

const E_UNKNOWN_TOPIC_ID: i16 = kafka_protocol::error::ResponseError::UnknownTopicId.code();
const INVALID_CONFIG: i16 = kafka_protocol::error::ResponseError::InvalidConfig.code();

pub async fn create_topics(ctx: &Ctx, req: CreateTopicsRequest, version: i16) -> CreateTopicsResponse {
    let mut out = Vec::new();
    for (i, t) in req.topics.iter().enumerate() {
        let name = t.name.to_string();
        let mut r = CreatableTopicResult::default().with_name(t.name.clone());
        let fail = |mut r: CreatableTopicResult, code: i16, msg: String| {
            r.error_code = code;
            r.error_message = Some(s(msg));
            r
        };
        if req.topics[..i].iter().any(|o| o.name == t.name) {
            out.push(fail(r, INVALID_REQUEST, format!("topic {name} named twice")));
            continue;
        }
        if !valid_topic(&name) {
            out.push(fail(r, INVALID_TOPIC, format!("invalid topic name {name:?}")));
            continue;
        }
        let n = if !t.assignments.is_empty() {
            t.assignments.len() as i32
        } else if t.num_partitions == -1 {
            ctx.cfg.default_partitions.max(1) as i32
        } else {
            t.num_partitions
        };
        if !(1..=MAX_PARTITIONS).contains(&n) {
            out.push(fail(r, INVALID_PARTITIONS, format!("{n} partitions; 1 to {MAX_PARTITIONS} allowed")));
            continue;
        }
        // Every member holds every partition (D42): a factor up to the number of members
        // is met, as a Kafka cluster of that many brokers meets it.
        // The voters, not the brokers whose addresses this member learned: right after an
        // election those can be fewer, and a factor of 3 on three members was refused.
        let members = ctx.topology().voters.max(1).min(i16::MAX as usize) as i16;
        if t.replication_factor != -1 && !(1..=members).contains(&t.replication_factor) {
            let msg =
                format!("replication factor {} is not 1 to {members}, the members Baton has", t.replication_factor);
            out.push(fail(r, INVALID_REPLICATION_FACTOR, msg));
            continue;
        }
        match queue_view(ctx, &name).await {
            Ok(Some(_)) => {
                out.push(fail(r, TOPIC_ALREADY_EXISTS, format!("topic {name} already exists")));
                continue;
            }
            Ok(None) => {}
            Err(e) => {
                out.push(fail(r, code_of(&e), e.to_string()));
                continue;
            }
        }
        let configs: Vec<(String, ConfigOp)> = t
            .configs
            .iter()
            .map(|c| (c.name.to_string(), c.value.as_ref().map_or(ConfigOp::Delete, |v| ConfigOp::Set(v.to_string()))))
            .collect();
        // Checked before anything is created: a bad config refuses the whole topic.
        if let Err(e) = changed(&Default::default(), &configs) {
            out.push(fail(r, INVALID_CONFIG, e.message));
            continue;
        }
        if !req.validate_only {
            if let Err(e) = ctx.engine.create_topic_configured(name.clone(), n as u32, configs).await {
                out.push(fail(r, code_of(&e), e.to_string()));
                continue;
            }
        }
        if version >= 5 {
            r.num_partitions = n;
            r.replication_factor = 1;
            r.configs = Some(Vec::new());
        }
        if version >= 7 && !req.validate_only {
            if let Ok(Some(q)) = queue_view(ctx, &name).await {
                r.topic_id = topic_id(&q);
            }
        }
        out.push(r);
    }
    CreateTopicsResponse::default().with_topics(out)
}

pub async fn delete_topics(ctx: &Ctx, req: DeleteTopicsRequest, version: i16) -> DeleteTopicsResponse {
    let mut named: Vec<(Option<String>, uuid::Uuid)> =
        req.topic_names.iter().map(|n| (Some(n.to_string()), uuid::Uuid::nil())).collect();
    named.extend(req.topics.iter().map(|t| (t.name.as_ref().map(|n| n.to_string()), t.topic_id)));
    let mut queues: Option<Vec<QueueView>> = None;
    let mut out = Vec::new();
    for (name, id) in named {
        let mut r = DeletableTopicResult::default();
        if version >= 6 {
            r.topic_id = id;
        }
        let name = match name {
            Some(n) => n,
            None => {
                if queues.is_none() {
                    queues = Some(all_queues(ctx).await.unwrap_or_default());
                }
                match queues.iter().flatten().find(|q| topic_id(q) == id) {
                    Some(q) => q.name.clone(),
                    None => {
                        r.error_code = E_UNKNOWN_TOPIC_ID;
                        out.push(r);
                        continue;
                    }
                }
            }
        };
        r.name = Some(TopicName(s(name.clone())));
        if let Err(e) = ctx.engine.delete_queue(name.clone()).await {
            r.error_code = code_of(&e);
            if version >= 5 {
                r.error_message = Some(s(e.to_string()));
            }
        } else {
            tracing::info!(topic = %name, "kafka: deleted topic");
        }
        out.push(r);
    }
    DeleteTopicsResponse::default().with_responses(out)
}

pub async fn create_partitions(ctx: &Ctx, req: CreatePartitionsRequest) -> CreatePartitionsResponse {
    let mut out = Vec::new();
    for t in req.topics {
        let name = t.name.to_string();
        let mut r = create_partitions_response::CreatePartitionsTopicResult::default().with_name(t.name.clone());
        let current = match queue_view(ctx, &name).await {
            Ok(Some(q)) if !kafka_partitions(&q).is_empty() => kafka_partitions(&q).len() as i32,
            Ok(_) => {
                r.error_code = UNKNOWN_TOPIC_OR_PARTITION;
                out.push(r);
                continue;
            }
            Err(e) => {
                r.error_code = code_of(&e);
                out.push(r);
                continue;
            }
        };
        if t.count <= current || t.count > MAX_PARTITIONS {
            r.error_code = INVALID_PARTITIONS;
            r.error_message = Some(s(format!("topic has {current} partitions; asked for {}", t.count)));
        } else if !req.validate_only {
            if let Err(e) = ctx.engine.create_topic(name, t.count as u32).await {
                r.error_code = code_of(&e);
                r.error_message = Some(s(e.to_string()));
            }
        }
        out.push(r);
    }
    CreatePartitionsResponse::default().with_results(out)
}

/// A few read-only configs, so admin tools and clients that ask get answers.
pub async fn describe_configs(ctx: &Ctx, req: DescribeConfigsRequest, version: i16) -> DescribeConfigsResponse {
    let mut out = Vec::new();
    for res in req.resources {
        let mut r = DescribeConfigsResult::default()
            .with_resource_type(res.resource_type)
            .with_resource_name(res.resource_name.clone());
        // (name, value, set on this topic by a client)
        let configs: Vec<(&str, String, bool)> = match res.resource_type {
            RESOURCE_TOPIC => match queue_view(ctx, &res.resource_name).await {
                Ok(Some(q)) => {
                    let set = match ctx.engine.query(Query::TopicConfigs(res.resource_name.to_string())).await {
                        Ok(QueryResult::TopicConfigs(Some(m))) => m,
                        _ => Default::default(),
                    };
                    // What Baton does unless a config says otherwise: keep forever (or the
                    // queue's own retentionSeconds), the door's max.message.bytes.
                    let retention = match q.options.retention_seconds {
                        0 => -1,
                        secs => secs as i64 * 1000,
                    };
                    TOPIC_CONFIGS
                        .iter()
                        .map(|(k, d)| match (set.get(*k), *k) {
                            (Some(v), _) => (*k, v.clone(), true),
                            (None, "retention.ms") => (*k, retention.to_string(), false),
                            (None, "max.message.bytes") => (*k, ctx.cfg.max_message_bytes.to_string(), false),
                            (None, _) => (*k, d.to_string(), false),
                        })
                        .collect()
                }
                Ok(None) => {
                    r.error_code = UNKNOWN_TOPIC_OR_PARTITION;
                    out.push(r);
                    continue;
                }
                Err(e) => {
                    r.error_code = code_of(&e);
                    out.push(r);
                    continue;
                }
            },
            RESOURCE_BROKER => [
                ("auto.create.topics.enable", ctx.cfg.auto_create.to_string()),
                ("num.partitions", ctx.cfg.default_partitions.to_string()),
                ("default.replication.factor", "1".into()),
                ("message.max.bytes", ctx.cfg.max_frame_bytes.to_string()),
                ("offsets.topic.replication.factor", "1".into()),
                ("group.initial.rebalance.delay.ms", ctx.cfg.initial_rebalance_delay.as_millis().to_string()),
            ]
            .into_iter()
            .map(|(k, v)| (k, v, false))
            .collect(),
            crate::admin::RESOURCE_GROUP => match crate::group_configs::configs(ctx, &res.resource_name).await {
                // As Kafka: any group id is described, with the defaults until one is set.
                Ok(m) => crate::group_configs::GROUP_CONFIGS
                    .iter()
                    .map(|k| match m.get(*k) {
                        Some(v) => (*k, v.clone(), true),
                        None => (*k, crate::group_configs::default_of(ctx, k), false),
                    })
                    .collect(),
                Err(e) => {
                    r.error_code = code_of(&e);
                    out.push(r);
                    continue;
                }
            },
            _ => {
                r.error_code = INVALID_REQUEST;
                r.error_message = Some(s("only topic, broker and group configs are described"));
                out.push(r);
                continue;
            }
        };
        // Null or empty both mean "all of them", as in Kafka.
        let keys = res.configuration_keys.as_ref().filter(|k| !k.is_empty());
        let topic = res.resource_type == RESOURCE_TOPIC;
        let group = res.resource_type == crate::admin::RESOURCE_GROUP;
        r.configs = configs
            .into_iter()
            .filter(|(k, _, _)| keys.is_none_or(|ks| ks.iter().any(|x| x.as_str() == *k)))
            .map(|(k, v, set)| {
                // Sources: 1 a topic's own config (DYNAMIC_TOPIC_CONFIG), 8 a group's
                // (GROUP_CONFIG), 5 the default.
                let source = match (set, group) {
                    (false, _) => 5,
                    (true, false) => 1,
                    (true, true) => 8,
                };
                let mut c = DescribeConfigsResourceResult::default()
                    .with_name(s(k))
                    .with_value(Some(s(v)))
                    .with_read_only(!topic && !group)
                    .with_config_source(source);
                if version >= 3 {
                    c.config_type = 2;
                }
                c
            })
            .collect();
        out.push(r);
    }
    DescribeConfigsResponse::default().with_results(out)
}
