//! One state, two front doors: a message pushed over HTTP is fetched by a
//! Kafka consumer (its value is the JSON payload, with the baton-txid
//! header), a Kafka record is popped over HTTP (its value as the data), and a
//! Kafka committed offset is the Baton group's cursor.

use crate::common;
use crate::kafka_util;

use common::Server;
use kafka_protocol::messages::*;
use kafka_protocol::records::{Compression, RecordBatchDecoder};
use kafka_util::*;
use serde_json::{json, Value};

fn http() -> reqwest::Client {
    reqwest::Client::new()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

#[test]
fn http_push_is_fetched_by_kafka() {
    let (s, port) = Server::start_kafka(&[]);
    let rt = rt();
    let body = json!({"items": [
        {"queue": "cross", "partition": "0", "transactionId": "tx-1", "payload": {"a": 1}},
        {"queue": "cross", "partition": "0", "payload": "text"},
    ]});
    let r = rt.block_on(http().post(s.url("/api/v1/push")).json(&body).send()).unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let mut k = Kafka::connect(port);
    let md = k.metadata(&["cross"]);
    assert_eq!((md.topics[0].error_code, md.topics[0].partitions.len()), (0, 1));
    let f = k.fetch("cross", 0, 0, 0);
    assert_eq!((f.error_code, f.high_watermark), (0, 2));
    let mut bytes = f.records.clone().unwrap();
    let recs: Vec<_> =
        RecordBatchDecoder::decode_all(&mut bytes).unwrap().into_iter().flat_map(|s| s.records).collect();
    assert_eq!(recs.len(), 2);
    let v: Value = serde_json::from_slice(recs[0].value.as_ref().unwrap()).unwrap();
    assert_eq!(v, json!({"a": 1}), "the value is the JSON payload");
    let txid = recs[0].headers.iter().find(|(k, _)| k.as_str() == "baton-txid").and_then(|(_, v)| v.clone());
    assert_eq!(txid.as_deref(), Some(&b"tx-1"[..]));
    assert_eq!(serde_json::from_slice::<Value>(recs[1].value.as_ref().unwrap()).unwrap(), json!("text"));
    // A queue used only with other partition names has no Kafka partitions,
    // and the all-topics listing leaves it out rather than confuse clients.
    let body = json!({"items": [{"queue": "httponly", "payload": {"x": 1}}]});
    rt.block_on(http().post(s.url("/api/v1/push")).json(&body).send()).unwrap();
    let all: MetadataResponse = k.call(ApiKey::Metadata, 9, &MetadataRequest::default().with_topics(None));
    let names: Vec<String> = all.topics.iter().map(|t| t.name.as_ref().unwrap().to_string()).collect();
    assert!(names.contains(&"cross".to_string()) && !names.contains(&"httponly".to_string()), "{names:?}");
}

#[test]
fn kafka_produce_is_popped_over_http() {
    let (s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["kq"]);
    let p = k.produce("kq", 0, batch(&[br#"{"k":"v"}"#, b"plain"], Compression::Gzip, None), -1);
    assert_eq!(p.error_code, 0);
    let rt = rt();
    let r = rt.block_on(http().get(s.url("/api/v1/pop/queue/kq?batch=10&autoAck=true")).send()).unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = rt.block_on(r.json()).unwrap();
    let msgs = v["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2, "{v}");
    assert_eq!(msgs[0]["data"], json!({"k": "v"}), "JSON values come back as JSON");
    assert_eq!(msgs[1]["data"], json!("plain"));
    assert_eq!(msgs[0]["partition"], json!("0"));
}

#[test]
fn kafka_committed_offset_is_the_baton_cursor() {
    let (s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["cur"]);
    k.produce("cur", 0, batch(&[b"\"m0\"", b"\"m1\"", b"\"m2\""], Compression::None, None), -1);
    // A simple consumer commit (generation -1): next offset 2.
    let commit = OffsetCommitRequest::default()
        .with_group_id(GroupId(name("shared")))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![offset_commit_request::OffsetCommitRequestTopic::default()
            .with_name(topic("cur"))
            .with_partitions(vec![offset_commit_request::OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(2)])]);
    let r: OffsetCommitResponse = k.call(ApiKey::OffsetCommit, 8, &commit);
    assert_eq!(r.topics[0].partitions[0].error_code, 0);
    // HTTP pop in the same group starts at the committed offset.
    let rt = rt();
    let r = rt
        .block_on(http().get(s.url("/api/v1/pop/queue/cur?batch=10&consumerGroup=shared&autoAck=true")).send())
        .unwrap();
    let v: Value = rt.block_on(r.json()).unwrap();
    let offsets: Vec<u64> = v["messages"].as_array().unwrap().iter().map(|m| m["offset"].as_u64().unwrap()).collect();
    assert_eq!(offsets, vec![2], "{v}");
    // And the HTTP ack moved the cursor that Kafka's OffsetFetch reads.
    let fetch = OffsetFetchRequest::default().with_group_id(GroupId(name("shared"))).with_topics(Some(vec![
        offset_fetch_request::OffsetFetchRequestTopic::default()
            .with_name(topic("cur"))
            .with_partition_indexes(vec![0, 1]),
    ]));
    let r: OffsetFetchResponse = k.call(ApiKey::OffsetFetch, 7, &fetch);
    let parts = &r.topics[0].partitions;
    assert_eq!((parts[0].committed_offset, parts[1].committed_offset), (3, -1));
    // Listed and described as a Kafka group (with no live members).
    let l: ListGroupsResponse = k.call(ApiKey::ListGroups, 4, &ListGroupsRequest::default());
    assert!(l.groups.iter().any(|g| g.group_id.as_str() == "shared" && g.group_state.as_str() == "Empty"));
    let d: DescribeGroupsResponse = k.call(
        ApiKey::DescribeGroups,
        5,
        &DescribeGroupsRequest::default().with_groups(vec![GroupId(name("shared")), GroupId(name("nobody"))]),
    );
    assert_eq!(d.groups[0].group_state.as_str(), "Empty");
    assert_eq!(d.groups[1].group_state.as_str(), "Dead");
    let del: DeleteGroupsResponse = k.call(
        ApiKey::DeleteGroups,
        2,
        &DeleteGroupsRequest::default().with_groups_names(vec![GroupId(name("shared")), GroupId(name("nobody"))]),
    );
    assert_eq!(del.results.iter().map(|r| r.error_code).collect::<Vec<_>>(), vec![0, 69]);
}
