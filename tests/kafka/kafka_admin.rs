//! The admin APIs Streams, Connect and the admin tools call (issue 15 item 5), at the wire
//! against the real `baton` binary: DescribeCluster, DeleteRecords and OffsetDelete,
//! with the refusals a hostile or mistaken client gets and what survives a restart.

use crate::common;
use crate::kafka_util;

use common::Server;
use kafka_protocol::messages::*;
use kafka_protocol::records::Compression;
use kafka_util::*;

const OFFSET_OUT_OF_RANGE: i16 = 1;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;
const INVALID_GROUP_ID: i16 = 24;

fn delete_records(k: &mut Kafka, t: &str, parts: &[(i32, i64)]) -> Vec<(i16, i64)> {
    let req = DeleteRecordsRequest::default().with_timeout_ms(5000).with_topics(vec![
        delete_records_request::DeleteRecordsTopic::default().with_name(topic(t)).with_partitions(
            parts
                .iter()
                .map(|(p, o)| {
                    delete_records_request::DeleteRecordsPartition::default().with_partition_index(*p).with_offset(*o)
                })
                .collect(),
        ),
    ]);
    let r: DeleteRecordsResponse = k.call(ApiKey::DeleteRecords, 2, &req);
    r.topics[0].partitions.iter().map(|p| (p.error_code, p.low_watermark)).collect()
}

fn commit(k: &mut Kafka, group: &str, t: &str, offset: i64) -> i16 {
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(name(group)))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![offset_commit_request::OffsetCommitRequestTopic::default()
            .with_name(topic(t))
            .with_partitions(vec![offset_commit_request::OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(offset)])]);
    let r: OffsetCommitResponse = k.call(ApiKey::OffsetCommit, 8, &req);
    r.topics[0].partitions[0].error_code
}

fn committed(k: &mut Kafka, group: &str, t: &str) -> i64 {
    let req = OffsetFetchRequest::default().with_group_id(GroupId(name(group))).with_topics(Some(vec![
        offset_fetch_request::OffsetFetchRequestTopic::default().with_name(topic(t)).with_partition_indexes(vec![0]),
    ]));
    let r: OffsetFetchResponse = k.call(ApiKey::OffsetFetch, 7, &req);
    r.topics[0].partitions[0].committed_offset
}

fn offset_delete(k: &mut Kafka, group: &str, t: &str) -> (i16, Vec<i16>) {
    let req = OffsetDeleteRequest::default().with_group_id(GroupId(name(group))).with_topics(vec![
        offset_delete_request::OffsetDeleteRequestTopic::default().with_name(topic(t)).with_partitions(vec![
            offset_delete_request::OffsetDeleteRequestPartition::default().with_partition_index(0),
        ]),
    ]);
    let r: OffsetDeleteResponse = k.call(ApiKey::OffsetDelete, 0, &req);
    (r.error_code, r.topics.iter().flat_map(|t| &t.partitions).map(|p| p.error_code).collect())
}

#[test]
fn describe_cluster_names_this_broker_as_controller() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    let r: DescribeClusterResponse = k.call(ApiKey::DescribeCluster, 1, &DescribeClusterRequest::default());
    assert_eq!(r.error_code, 0);
    assert_eq!(r.cluster_id.as_str(), "baton");
    assert_eq!(r.brokers.len(), 1);
    assert_eq!((r.brokers[0].broker_id.0, r.brokers[0].port), (r.controller_id.0, port as i32));
}

#[test]
fn delete_records_moves_the_log_start_and_keeps_it_across_a_restart() {
    let (mut s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["dr"]);
    for v in [b"a", b"b", b"c", b"d", b"e"] {
        assert_eq!(k.produce("dr", 0, batch(&[v], Compression::None, None), -1).error_code, 0);
    }
    assert_eq!(delete_records(&mut k, "dr", &[(0, 3)]), vec![(0, 3)]);
    assert_eq!(k.list_offset("dr", 0, -2).offset, 3, "earliest is the new log start");
    assert_eq!(k.fetch("dr", 0, 0, 0).error_code, OFFSET_OUT_OF_RANGE);
    let f = k.fetch("dr", 0, 3, 0);
    let got: Vec<_> = records(f.records.as_ref().unwrap()).into_iter().map(|r| r.0).collect();
    assert_eq!(got, vec![3, 4]);
    assert_eq!(delete_records(&mut k, "dr", &[(0, 2)]), vec![(0, 3)], "an offset below the start moves nothing");
    assert_eq!(delete_records(&mut k, "dr", &[(0, 6)]), vec![(OFFSET_OUT_OF_RANGE, -1)]);
    assert_eq!(delete_records(&mut k, "dr", &[(0, -7)]), vec![(OFFSET_OUT_OF_RANGE, -1)]);
    assert_eq!(delete_records(&mut k, "dr", &[(9, 1), (-1, 1)]), vec![(UNKNOWN_TOPIC_OR_PARTITION, -1); 2]);
    assert_eq!(delete_records(&mut k, "nope", &[(0, 1)]), vec![(UNKNOWN_TOPIC_OR_PARTITION, -1)]);
    assert_eq!(delete_records(&mut k, "dr", &[(0, -1)]), vec![(0, 5)], "-1 is the high watermark");
    s.kill9();
    s.restart();
    let mut k = Kafka::connect(port);
    assert_eq!(k.list_offset("dr", 0, -2).offset, 5, "the log start is durable");
    assert_eq!(k.list_offset("dr", 0, -1).offset, 5);
}

#[test]
fn offset_delete_forgets_a_position_unless_a_live_member_reads_the_topic() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["od"]);
    k.produce("od", 0, batch(&[b"a", b"b", b"c"], Compression::None, None), -1);
    assert_eq!(commit(&mut k, "g", "od", 2), 0);
    assert_eq!(committed(&mut k, "g", "od"), 2);
    assert_eq!(offset_delete(&mut k, "g", "od"), (0, vec![0]));
    assert_eq!(committed(&mut k, "g", "od"), -1, "the position is gone");
    assert_eq!(offset_delete(&mut k, "g", "od"), (0, vec![0]), "deleting again is not an error");
    assert_eq!(offset_delete(&mut k, "g", "missing").1, vec![UNKNOWN_TOPIC_OR_PARTITION]);
    assert_eq!(offset_delete(&mut k, "__QUEUE_MODE__", "od").0, INVALID_GROUP_ID);
    // A member subscribed to "od" joins group "live": its position there is kept.
    assert_eq!(commit(&mut k, "live", "od", 1), 0);
    let mut meta = vec![0u8, 0, 0, 0, 0, 1];
    meta.extend_from_slice(&2i16.to_be_bytes());
    meta.extend_from_slice(b"od");
    meta.extend_from_slice(&[0, 0, 0, 0]);
    let join = JoinGroupRequest::default()
        .with_group_id(GroupId(name("live")))
        .with_session_timeout_ms(30_000)
        .with_rebalance_timeout_ms(30_000)
        .with_member_id(name(""))
        .with_protocol_type(name("consumer"))
        .with_protocols(vec![join_group_request::JoinGroupRequestProtocol::default()
            .with_name(name("range"))
            .with_metadata(bytes::Bytes::from(meta))]);
    let j: JoinGroupResponse = k.call(ApiKey::JoinGroup, 3, &join);
    assert_eq!(j.error_code, 0, "{j:?}");
    assert_eq!(offset_delete(&mut k, "live", "od").1, vec![GROUP_SUBSCRIBED_TO_TOPIC]);
    assert_eq!(committed(&mut k, "live", "od"), 1, "kept");
}

const INVALID_CONFIG: i16 = 40;
const INVALID_REQUEST: i16 = 42;

fn describe(k: &mut Kafka, t: &str) -> Vec<(String, String, i8)> {
    let req = DescribeConfigsRequest::default().with_resources(vec![
        describe_configs_request::DescribeConfigsResource::default().with_resource_type(2).with_resource_name(name(t)),
    ]);
    let r: DescribeConfigsResponse = k.call(ApiKey::DescribeConfigs, 1, &req);
    assert_eq!(r.results[0].error_code, 0, "{r:?}");
    r.results[0]
        .configs
        .iter()
        .map(|c| (c.name.to_string(), c.value.as_deref().unwrap_or("").to_string(), c.config_source))
        .collect()
}

fn config(k: &mut Kafka, t: &str, key: &str) -> (String, i8) {
    describe(k, t).into_iter().find(|c| c.0 == key).map(|c| (c.1, c.2)).expect(key)
}

fn incremental(k: &mut Kafka, kind: i8, t: &str, ops: &[(&str, i8, Option<&str>)]) -> i16 {
    let req = IncrementalAlterConfigsRequest::default().with_resources(vec![
        incremental_alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(kind)
            .with_resource_name(name(t))
            .with_configs(
                ops.iter()
                    .map(|(n, op, v)| {
                        incremental_alter_configs_request::AlterableConfig::default()
                            .with_name(name(n))
                            .with_config_operation(*op)
                            .with_value(v.map(name))
                    })
                    .collect(),
            ),
    ]);
    let r: IncrementalAlterConfigsResponse = k.call(ApiKey::IncrementalAlterConfigs, 1, &req);
    r.responses[0].error_code
}

fn alter(k: &mut Kafka, t: &str, configs: &[(&str, &str)]) -> i16 {
    let req =
        AlterConfigsRequest::default().with_resources(vec![alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(name(t))
            .with_configs(
                configs
                    .iter()
                    .map(|(n, v)| {
                        alter_configs_request::AlterableConfig::default().with_name(name(n)).with_value(Some(name(v)))
                    })
                    .collect(),
            )]);
    let r: AlterConfigsResponse = k.call(ApiKey::AlterConfigs, 1, &req);
    r.responses[0].error_code
}

#[test]
fn topic_configs_are_set_checked_described_and_durable() {
    let (mut s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    // CreateTopics with configs: one entry, refused whole on a bad one.
    let create = |k: &mut Kafka, t: &str, cfg: &[(&str, &str)]| -> i16 {
        let req = CreateTopicsRequest::default().with_timeout_ms(5000).with_topics(vec![
            create_topics_request::CreatableTopic::default()
                .with_name(topic(t))
                .with_num_partitions(1)
                .with_replication_factor(-1)
                .with_configs(
                    cfg.iter()
                        .map(|(n, v)| {
                            create_topics_request::CreatableTopicConfig::default()
                                .with_name(name(n))
                                .with_value(Some(name(v)))
                        })
                        .collect(),
                ),
        ]);
        let r: CreateTopicsResponse = k.call(ApiKey::CreateTopics, 5, &req);
        r.topics[0].error_code
    };
    assert_eq!(create(&mut k, "bad", &[("cleanup.policy", "shred")]), INVALID_CONFIG);
    assert_eq!(
        k.metadata(&[]).topics.iter().filter(|t| t.name.as_deref().map(|n| n.as_str()) == Some("bad")).count(),
        0
    );
    assert_eq!(create(&mut k, "changelog", &[("cleanup.policy", "compact"), ("segment.bytes", "1048576")]), 0);
    assert_eq!(config(&mut k, "changelog", "cleanup.policy"), ("compact".into(), 1));
    assert_eq!(config(&mut k, "changelog", "segment.bytes"), ("1048576".into(), 1));
    assert_eq!(config(&mut k, "changelog", "retention.ms"), ("-1".into(), 5), "Baton keeps forever by default");
    // IncrementalAlterConfigs: SET, APPEND to a list, DELETE back to the default.
    assert_eq!(incremental(&mut k, 2, "changelog", &[("retention.ms", 0, Some("60000"))]), 0);
    assert_eq!(config(&mut k, "changelog", "retention.ms"), ("60000".into(), 1));
    assert_eq!(incremental(&mut k, 2, "changelog", &[("cleanup.policy", 2, Some("delete"))]), 0);
    assert_eq!(config(&mut k, "changelog", "cleanup.policy").0, "compact,delete");
    assert_eq!(config(&mut k, "changelog", "segment.bytes").0, "1048576", "untouched by an incremental change");
    assert_eq!(incremental(&mut k, 2, "changelog", &[("segment.bytes", 1, None)]), 0);
    assert_eq!(config(&mut k, "changelog", "segment.bytes"), ("1073741824".into(), 5));
    // Refusals change nothing.
    assert_eq!(incremental(&mut k, 2, "changelog", &[("retention.ms", 0, Some("soon"))]), INVALID_CONFIG);
    assert_eq!(incremental(&mut k, 2, "changelog", &[("no.such.config", 0, Some("1"))]), INVALID_CONFIG);
    assert_eq!(incremental(&mut k, 2, "changelog", &[("segment.ms", 2, Some("1"))]), INVALID_CONFIG);
    assert_eq!(incremental(&mut k, 2, "changelog", &[("retention.ms", 9, Some("1"))]), INVALID_REQUEST);
    assert_eq!(incremental(&mut k, 2, "nope", &[("retention.ms", 0, Some("1"))]), UNKNOWN_TOPIC_OR_PARTITION);
    assert_eq!(incremental(&mut k, 4, "0", &[("num.partitions", 0, Some("9"))]), INVALID_REQUEST);
    assert_eq!(config(&mut k, "changelog", "retention.ms").0, "60000");
    // AlterConfigs replaces the whole set: what it does not name goes back to the default.
    assert_eq!(alter(&mut k, "changelog", &[("cleanup.policy", "compact")]), 0);
    assert_eq!(config(&mut k, "changelog", "cleanup.policy"), ("compact".into(), 1));
    assert_eq!(config(&mut k, "changelog", "retention.ms"), ("-1".into(), 5));
    s.kill9();
    s.restart();
    let mut k = Kafka::connect(port);
    assert_eq!(config(&mut k, "changelog", "cleanup.policy"), ("compact".into(), 1), "configs are durable");
}

/// A Fetch naming no partitions (a Java consumer closing its fetch session) is answered at
/// once, as Kafka does: it used to be held for its whole max_wait_ms, which made every
/// consumer close (and a Connect worker's stop) half a second slower per consumer.
#[test]
fn a_fetch_of_nothing_is_answered_at_once() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    let req = FetchRequest::default()
        .with_replica_id((-1).into())
        .with_max_wait_ms(5000)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_id(0)
        .with_session_epoch(-1);
    let t0 = std::time::Instant::now();
    let r: FetchResponse = k.call(ApiKey::Fetch, 11, &req);
    assert_eq!(r.error_code, 0);
    assert!(t0.elapsed() < std::time::Duration::from_secs(2), "held for {:?}", t0.elapsed());
}
