//! Admin APIs that Kafka Streams, Connect and the admin tools call beside the data path:
//! DescribeCluster, DeleteRecords (the log start moves, as retention moves it) and
//! OffsetDelete (a group forgets its position on partitions it no longer reads). Owns the
//! protocol shapes; what changes is planned in baton-core and answered once durable.

use crate::errors::*;
use crate::topics::s;
use crate::Ctx;
use baton_core::topic_config::ConfigOp;
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::*;

const GROUP_SUBSCRIBED_TO_TOPIC: i16 = E::GroupSubscribedToTopic.code();
const INVALID_CONFIG: i16 = E::InvalidConfig.code();
const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;
/// KIP-848's GROUP resource (group configs, D67).
pub const RESOURCE_GROUP: i8 = 32;

/// The Kafka code and message for a refused config change.
fn config_error(e: &baton_core::CoreError) -> (i16, Option<kafka_protocol::protocol::StrBytes>) {
    let code = if e.code == "invalid_config" { INVALID_CONFIG } else { code_of(e) };
    (code, Some(s(e.message.clone())))
}

/// One resource's config change: a topic's or a group's (broker configs are Baton's flags).
async fn alter(
    ctx: &Ctx,
    kind: i8,
    name: &str,
    ops: Vec<(String, ConfigOp)>,
    replace: bool,
    validate_only: bool,
) -> (i16, Option<kafka_protocol::protocol::StrBytes>) {
    match kind {
        RESOURCE_TOPIC => match ctx.engine.topic_configs(name.to_string(), ops, replace, validate_only).await {
            Ok(()) => (NONE, None),
            Err(e) => config_error(&e),
        },
        RESOURCE_GROUP => match crate::group_configs::alter(ctx, name, &ops, replace, validate_only).await {
            Ok(()) => (NONE, None),
            Err(crate::group_configs::AlterError::Invalid(m)) => (INVALID_CONFIG, Some(s(m))),
            Err(crate::group_configs::AlterError::Core(e)) => config_error(&e),
        },
        RESOURCE_BROKER => (INVALID_REQUEST, Some(s("broker configs are Baton's command-line flags"))),
        _ => (INVALID_REQUEST, Some(s("only topic and group configs can be altered"))),
    }
}

/// AlterConfigs: each topic's configs become exactly those named (the rest go back to
/// their defaults), as in Kafka.
pub async fn alter_configs(ctx: &Ctx, req: AlterConfigsRequest) -> AlterConfigsResponse {
    let mut out = Vec::new();
    for r in req.resources {
        let ops = r
            .configs
            .iter()
            .map(|c| (c.name.to_string(), c.value.as_ref().map_or(ConfigOp::Delete, |v| ConfigOp::Set(v.to_string()))))
            .collect();
        let (code, msg) = alter(ctx, r.resource_type, &r.resource_name, ops, true, req.validate_only).await;
        out.push(
            alter_configs_response::AlterConfigsResourceResponse::default()
                .with_error_code(code)
                .with_error_message(msg)
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name),
        );
    }
    AlterConfigsResponse::default().with_responses(out)
}

/// IncrementalAlterConfigs: SET (0), DELETE (1), APPEND (2), SUBTRACT (3) per config.
pub async fn incremental_alter_configs(
    ctx: &Ctx,
    req: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let mut out = Vec::new();
    for r in req.resources {
        let mut ops = Vec::with_capacity(r.configs.len());
        let mut bad = None;
        for c in &r.configs {
            let v = c.value.as_ref().map(|v| v.to_string());
            ops.push((
                c.name.to_string(),
                match (c.config_operation, v) {
                    (0, Some(v)) => ConfigOp::Set(v),
                    (1, _) => ConfigOp::Delete,
                    (2, Some(v)) => ConfigOp::Append(v),
                    (3, Some(v)) => ConfigOp::Subtract(v),
                    (op, _) => {
                        bad = Some(format!(
                            "{}: operation {op} with this value is not SET, DELETE, APPEND or SUBTRACT",
                            c.name
                        ));
                        break;
                    }
                },
            ));
        }
        let (code, msg) = match bad {
            Some(m) => (INVALID_REQUEST, Some(s(m))),
            None => alter(ctx, r.resource_type, &r.resource_name, ops, false, req.validate_only).await,
        };
        out.push(
            incremental_alter_configs_response::AlterConfigsResourceResponse::default()
                .with_error_code(code)
                .with_error_message(msg)
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name),
        );
    }
    IncrementalAlterConfigsResponse::default().with_responses(out)
}

pub fn describe_cluster(ctx: &Ctx) -> DescribeClusterResponse {
    let topo = ctx.topology();
    let brokers = topo
        .brokers
        .iter()
        .map(|(id, host, port)| {
            DescribeClusterBroker::default().with_broker_id((*id).into()).with_host(s(host.clone())).with_port(*port)
        })
        .collect();
    DescribeClusterResponse::default()
        .with_cluster_id(s("baton"))
        .with_controller_id(topo.leader.unwrap_or(-1).into())
        .with_brokers(brokers)
        .with_cluster_authorized_operations(i32::MIN)
}

pub async fn delete_records(ctx: &Ctx, req: DeleteRecordsRequest) -> DeleteRecordsResponse {
    let mut topics = Vec::new();
    for t in req.topics {
        let mut parts = Vec::with_capacity(t.partitions.len());
        let asks: Vec<(String, Option<u64>)> = t
            .partitions
            .iter()
            .filter(|p| p.partition_index >= 0 && p.offset >= -1)
            .map(|p| (p.partition_index.to_string(), u64::try_from(p.offset).ok()))
            .collect();
        let mut answers = match ctx.engine.delete_records(t.name.to_string(), asks).await {
            Ok(v) => v.into_iter().map(|r| r.map_err(|e| code_of(&e))).collect(),
            Err(e) => vec![Err(code_of(&e)); t.partitions.len()],
        }
        .into_iter();
        for p in &t.partitions {
            let r = delete_records_response::DeleteRecordsPartitionResult::default()
                .with_partition_index(p.partition_index)
                .with_low_watermark(-1);
            parts.push(if p.partition_index < 0 {
                r.with_error_code(UNKNOWN_TOPIC_OR_PARTITION)
            } else if p.offset < -1 {
                r.with_error_code(OFFSET_OUT_OF_RANGE)
            } else {
                match answers.next().unwrap_or(Err(UNKNOWN_SERVER_ERROR)) {
                    Ok(low) => r.with_low_watermark(low as i64),
                    Err(code) => r.with_error_code(code),
                }
            });
        }
        topics.push(
            delete_records_response::DeleteRecordsTopicResult::default().with_name(t.name).with_partitions(parts),
        );
    }
    DeleteRecordsResponse::default().with_topics(topics)
}

/// The topics a classic consumer member subscribed to (ConsumerProtocolSubscription:
/// version, then an array of topic names); `None` when the bytes are not that.
fn subscription(meta: &[u8]) -> Option<Vec<String>> {
    let n = i32::from_be_bytes(meta.get(2..6)?.try_into().ok()?);
    let mut at = 6;
    let mut out = Vec::new();
    for _ in 0..n.clamp(0, 10_000) {
        let len = i16::from_be_bytes(meta.get(at..at + 2)?.try_into().ok()?);
        let len = usize::try_from(len).ok()?;
        out.push(String::from_utf8(meta.get(at + 2..at + 2 + len)?.to_vec()).ok()?);
        at += 2 + len;
    }
    Some(out)
}

pub async fn offset_delete(ctx: &Ctx, req: OffsetDeleteRequest) -> OffsetDeleteResponse {
    let group = req.group_id.to_string();
    if group == baton_core::QUEUE_MODE {
        return OffsetDeleteResponse::default().with_error_code(INVALID_GROUP_ID);
    }
    // As Kafka: a group whose live members read a topic keeps its positions there. A
    // member whose subscription does not parse is taken to read every topic.
    let reading: Option<Vec<Option<Vec<String>>>> =
        ctx.groups.describe(&group).map(|g| g.members.iter().map(|m| subscription(&m.metadata)).collect());
    let mut topics = Vec::new();
    for t in req.topics {
        let name = t.name.to_string();
        let subscribed =
            reading.as_ref().is_some_and(|ms| ms.iter().any(|m| m.as_ref().is_none_or(|ts| ts.contains(&name))));
        let codes: Vec<i16> = if subscribed {
            vec![GROUP_SUBSCRIBED_TO_TOPIC; t.partitions.len()]
        } else {
            let names = t.partitions.iter().map(|p| p.partition_index.to_string()).collect();
            match ctx.engine.delete_offsets(group.clone(), name, names).await {
                Ok(v) => v.into_iter().map(|r| r.map_or_else(|e| code_of(&e), |_| NONE)).collect(),
                Err(e) => vec![code_of(&e); t.partitions.len()],
            }
        };
        let parts = t
            .partitions
            .iter()
            .zip(codes)
            .map(|(p, c)| {
                offset_delete_response::OffsetDeleteResponsePartition::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(c)
            })
            .collect();
        topics.push(
            offset_delete_response::OffsetDeleteResponseTopic::default().with_name(t.name).with_partitions(parts),
        );
    }
    OffsetDeleteResponse::default().with_topics(topics)
}

#[cfg(test)]
mod tests {
    use super::subscription;

    #[test]
    fn subscriptions_parse_and_garbage_does_not() {
        let mut m = vec![0, 1, 0, 0, 0, 2];
        for t in ["a", "bc"] {
            m.extend_from_slice(&(t.len() as i16).to_be_bytes());
            m.extend_from_slice(t.as_bytes());
        }
        m.extend_from_slice(&[0, 0, 0, 0]);
        assert_eq!(subscription(&m), Some(vec!["a".to_string(), "bc".to_string()]));
        assert_eq!(subscription(&m[..7]), None);
        assert_eq!(subscription(&[0, 1, 0x7f, 0xff, 0xff, 0xff]), None);
    }
}
