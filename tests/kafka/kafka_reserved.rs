//! The queue-mode group `__QUEUE_MODE__` is Baton's own (I6): every Kafka
//! group API refuses it with INVALID_GROUP_ID, so a Kafka client can neither
//! delete nor move the cursors queue-mode pops acked.

use crate::common;
use crate::kafka_util;

use common::Server;
use kafka_protocol::messages::*;
use kafka_util::*;
use serde_json::{json, Value};

const INVALID_GROUP_ID: i16 = 24;
const Q: &str = "__QUEUE_MODE__";

fn g() -> GroupId {
    GroupId(name(Q))
}

/// Issue #12 item 4: Kafka DeleteGroups and OffsetCommit accepted the
/// reserved group, and after the delete every message acked in queue mode
/// was delivered again.
#[test]
fn every_group_api_refuses_the_queue_mode_group_and_acked_messages_stay_acked() {
    let (s, port) = Server::start_kafka(&[]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let http = reqwest::Client::new();
    let body = json!({"items": [
        {"queue": "work", "partition": "0", "payload": 1},
        {"queue": "work", "partition": "0", "payload": 2},
    ]});
    let r = rt.block_on(http.post(s.url("/api/v1/push")).json(&body).send()).unwrap();
    assert!(r.status().is_success());
    let pop = |rt: &tokio::runtime::Runtime| -> Vec<Value> {
        let r = rt.block_on(http.get(s.url("/api/v1/pop/queue/work?batch=10&autoAck=true")).send()).unwrap();
        if r.status() == 204 {
            return Vec::new();
        }
        let v: Value = rt.block_on(r.json()).unwrap();
        v["messages"].as_array().cloned().unwrap_or_default()
    };
    assert_eq!(pop(&rt).len(), 2, "popped and acked in queue mode");

    let mut k = Kafka::connect(port);
    let commit =
        OffsetCommitRequest::default().with_group_id(g()).with_generation_id_or_member_epoch(-1).with_topics(vec![
            offset_commit_request::OffsetCommitRequestTopic::default().with_name(topic("work")).with_partitions(vec![
                offset_commit_request::OffsetCommitRequestPartition::default()
                    .with_partition_index(0)
                    .with_committed_offset(0),
            ]),
        ]);
    let r: OffsetCommitResponse = k.call(ApiKey::OffsetCommit, 8, &commit);
    assert_eq!(r.topics[0].partitions[0].error_code, INVALID_GROUP_ID, "OffsetCommit");
    let r: DeleteGroupsResponse = k.call(
        ApiKey::DeleteGroups,
        2,
        &DeleteGroupsRequest::default().with_groups_names(vec![g(), GroupId(name("other"))]),
    );
    assert_eq!(r.results[0].error_code, INVALID_GROUP_ID, "DeleteGroups");
    assert_ne!(r.results[1].error_code, INVALID_GROUP_ID, "only the reserved group is refused");
    let join = JoinGroupRequest::default()
        .with_group_id(g())
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_protocol_type(name("consumer"))
        .with_protocols(vec![join_group_request::JoinGroupRequestProtocol::default()
            .with_name(name("range"))
            .with_metadata(bytes::Bytes::from_static(b"m"))]);
    let r: JoinGroupResponse = k.call(ApiKey::JoinGroup, 5, &join);
    assert_eq!(r.error_code, INVALID_GROUP_ID, "JoinGroup");
    let r: SyncGroupResponse =
        k.call(ApiKey::SyncGroup, 3, &SyncGroupRequest::default().with_group_id(g()).with_member_id(name("m")));
    assert_eq!(r.error_code, INVALID_GROUP_ID, "SyncGroup");
    let r: HeartbeatResponse =
        k.call(ApiKey::Heartbeat, 3, &HeartbeatRequest::default().with_group_id(g()).with_member_id(name("m")));
    assert_eq!(r.error_code, INVALID_GROUP_ID, "Heartbeat");
    let r: LeaveGroupResponse =
        k.call(ApiKey::LeaveGroup, 2, &LeaveGroupRequest::default().with_group_id(g()).with_member_id(name("m")));
    assert_eq!(r.error_code, INVALID_GROUP_ID, "LeaveGroup");
    let fetch = OffsetFetchRequest::default().with_group_id(g()).with_topics(Some(vec![
        offset_fetch_request::OffsetFetchRequestTopic::default()
            .with_name(topic("work"))
            .with_partition_indexes(vec![0]),
    ]));
    let r: OffsetFetchResponse = k.call(ApiKey::OffsetFetch, 7, &fetch);
    assert_eq!(r.error_code, INVALID_GROUP_ID, "OffsetFetch");
    let r: DescribeGroupsResponse =
        k.call(ApiKey::DescribeGroups, 5, &DescribeGroupsRequest::default().with_groups(vec![g()]));
    assert_eq!(r.groups[0].error_code, INVALID_GROUP_ID, "DescribeGroups");
    let r: FindCoordinatorResponse = k.call(
        ApiKey::FindCoordinator,
        4,
        &FindCoordinatorRequest::default().with_key_type(0).with_coordinator_keys(vec![name(Q)]),
    );
    assert_eq!(r.coordinators[0].error_code, INVALID_GROUP_ID, "FindCoordinator");
    let r: ListGroupsResponse = k.call(ApiKey::ListGroups, 4, &ListGroupsRequest::default());
    assert!(r.groups.iter().all(|x| x.group_id.as_str() != Q), "not listed");

    assert!(pop(&rt).is_empty(), "nothing acked in queue mode is delivered again");
    let r = rt
        .block_on(
            http.post(s.url("/api/v1/push"))
                .json(&json!({"items": [
        {"queue": "work", "partition": "0", "payload": 3}]}))
                .send(),
        )
        .unwrap();
    assert!(r.status().is_success());
    let next = pop(&rt);
    assert_eq!(next.len(), 1, "queue mode carries on where it was");
    assert_eq!(next[0]["data"], json!(3), "{next:?}");
}
