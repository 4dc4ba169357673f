//! Share-group (KIP-932) requests for the raw-protocol tests.

use super::*;
use kafka_protocol::records::RecordBatchDecoder;
use uuid::Uuid;

pub const ACCEPT: i8 = 1;
pub const RELEASE: i8 = 2;
pub const REJECT: i8 = 3;

pub fn topic_id(k: &mut Kafka, t: &str) -> Uuid {
    let req = MetadataRequest::default()
        .with_topics(Some(vec![metadata_request::MetadataRequestTopic::default().with_name(Some(topic(t)))]))
        .with_allow_auto_topic_creation(true);
    let r: MetadataResponse = k.call(ApiKey::Metadata, 12, &req);
    r.topics[0].topic_id
}

pub fn heartbeat(
    k: &mut Kafka,
    group: &str,
    member: &str,
    epoch: i32,
    topics: Option<&[&str]>,
) -> ShareGroupHeartbeatResponse {
    let req = ShareGroupHeartbeatRequest::default()
        .with_group_id(GroupId(name(group)))
        .with_member_id(name(member))
        .with_member_epoch(epoch)
        .with_subscribed_topic_names(topics.map(|ts| ts.iter().map(|t| topic(t)).collect()));
    k.call(ApiKey::ShareGroupHeartbeat, 1, &req)
}

pub type Acks = Vec<(i64, i64, Vec<i8>)>;

pub fn share_fetch(
    k: &mut Kafka,
    group: &str,
    member: &str,
    epoch: i32,
    parts: &[(Uuid, i32, Acks)],
    wait_ms: i32,
) -> ShareFetchResponse {
    let req = share_fetch_req((group, member, epoch), parts, wait_ms, 500);
    k.call(ApiKey::ShareFetch, 1, &req)
}

/// A ShareFetch of `parts` with their acknowledgements, up to `max_records`; set version 2's
/// fields on it to send it at 2.
pub fn share_fetch_req(
    (group, member, epoch): (&str, &str, i32),
    parts: &[(Uuid, i32, Acks)],
    wait_ms: i32,
    max_records: i32,
) -> ShareFetchRequest {
    use share_fetch_request as f;
    let mut topics: Vec<f::FetchTopic> = Vec::new();
    for (t, p, acks) in parts {
        let part = f::FetchPartition::default().with_partition_index(*p).with_acknowledgement_batches(
            acks.iter()
                .map(|(a, b, ty)| {
                    f::AcknowledgementBatch::default()
                        .with_first_offset(*a)
                        .with_last_offset(*b)
                        .with_acknowledge_types(ty.clone())
                })
                .collect(),
        );
        match topics.iter_mut().find(|x| x.topic_id == *t) {
            Some(x) => x.partitions.push(part),
            None => topics.push(f::FetchTopic::default().with_topic_id(*t).with_partitions(vec![part])),
        }
    }
    ShareFetchRequest::default()
        .with_group_id(Some(GroupId(name(group))))
        .with_member_id(Some(name(member)))
        .with_share_session_epoch(epoch)
        .with_max_wait_ms(wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_max_records(max_records)
        .with_batch_size(max_records)
        .with_topics(topics)
}

pub fn share_ack(
    k: &mut Kafka,
    group: &str,
    member: &str,
    epoch: i32,
    t: Uuid,
    p: i32,
    acks: Acks,
) -> ShareAcknowledgeResponse {
    k.call(ApiKey::ShareAcknowledge, 1, &share_ack_req((group, member, epoch), (t, p), acks))
}

/// A ShareAcknowledge of one partition; set version 2's field on it to send it at 2.
pub fn share_ack_req(
    (group, member, epoch): (&str, &str, i32),
    (t, p): (Uuid, i32),
    acks: Acks,
) -> ShareAcknowledgeRequest {
    use share_acknowledge_request as a;
    ShareAcknowledgeRequest::default()
        .with_group_id(Some(GroupId(name(group))))
        .with_member_id(Some(name(member)))
        .with_share_session_epoch(epoch)
        .with_topics(vec![a::AcknowledgeTopic::default().with_topic_id(t).with_partitions(vec![
            a::AcknowledgePartition::default().with_partition_index(p).with_acknowledgement_batches(
                acks.iter()
                    .map(|(x, y, ty)| {
                        a::AcknowledgementBatch::default()
                            .with_first_offset(*x)
                            .with_last_offset(*y)
                            .with_acknowledge_types(ty.clone())
                    })
                    .collect(),
            ),
        ])])
}

/// (offset, delivery count) of every acquired record of one partition in an answer, and
/// the values of those records.
pub fn acquired(r: &ShareFetchResponse, t: Uuid, p: i32) -> Vec<(i64, i16, Vec<u8>)> {
    let Some(d) =
        r.responses.iter().filter(|x| x.topic_id == t).flat_map(|x| &x.partitions).find(|x| x.partition_index == p)
    else {
        return Vec::new();
    };
    let mut bytes = d.records.clone().unwrap_or_default();
    let recs: Vec<_> = if bytes.is_empty() {
        Vec::new()
    } else {
        RecordBatchDecoder::decode_all(&mut bytes).unwrap().into_iter().flat_map(|s| s.records).collect()
    };
    let mut out = Vec::new();
    for a in &d.acquired_records {
        for o in a.first_offset..=a.last_offset {
            let v = recs
                .iter()
                .find(|r| r.offset == o)
                .and_then(|r| r.value.clone())
                .expect("an acquired record is in the answer");
            out.push((o, a.delivery_count, v.to_vec()));
        }
    }
    out
}

/// KIP-848's GROUP config resource.
pub const RESOURCE_GROUP: i8 = 32;

/// IncrementalAlterConfigs of one group config: SET `value`, or DELETE when `None`. The
/// resource's (error code, message).
pub fn alter_group_config(k: &mut Kafka, group: &str, config: &str, value: Option<&str>) -> (i16, Option<String>) {
    use incremental_alter_configs_request as a;
    let op = a::AlterableConfig::default()
        .with_name(name(config))
        .with_config_operation(if value.is_some() { 0 } else { 1 })
        .with_value(value.map(name));
    let req = IncrementalAlterConfigsRequest::default().with_resources(vec![a::AlterConfigsResource::default()
        .with_resource_type(RESOURCE_GROUP)
        .with_resource_name(name(group))
        .with_configs(vec![op])]);
    let r: IncrementalAlterConfigsResponse = k.call(ApiKey::IncrementalAlterConfigs, 1, &req);
    (r.responses[0].error_code, r.responses[0].error_message.as_ref().map(|m| m.to_string()))
}

/// A share group reads what was written before it first fetched (Kafka's default is
/// `latest`, as Baton's): what a Kafka user sets with the admin client.
pub fn share_from_earliest(k: &mut Kafka, group: &str) {
    assert_eq!(alter_group_config(k, group, "share.auto.offset.reset", Some("earliest")), (0, None));
}
