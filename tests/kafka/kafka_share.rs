//! Share groups (KIP-932) at the wire against the real `baton` binary (issue 15 item 4,
//! D49): a share consumer acquires under a Baton lease of its group, accepts, releases and
//! rejects; an HTTP consumer of the same group never gets what a share consumer holds;
//! and what a hostile or confused client sends is refused precisely.

use crate::common;
use crate::kafka_util;

use common::Server;
use kafka_protocol::messages::*;
use kafka_protocol::records::Compression;
use kafka_util::share::*;
use kafka_util::*;
use serde_json::Value;
use std::time::{Duration, Instant};
use uuid::Uuid;

const INVALID_REQUEST: i16 = 42;
const UNKNOWN_MEMBER_ID: i16 = 25;
const GROUP_ID_NOT_FOUND: i16 = 69;
const INVALID_GROUP_ID: i16 = 24;
const UNKNOWN_TOPIC_ID: i16 = 100;
const FENCED_MEMBER_EPOCH: i16 = 110;
const INVALID_RECORD_STATE: i16 = 121;
const SHARE_SESSION_NOT_FOUND: i16 = 122;
const INVALID_SHARE_SESSION_EPOCH: i16 = 123;
const SHARE_SESSION_LIMIT_REACHED: i16 = 133;

fn part_codes(r: &ShareFetchResponse, p: i32) -> (i16, i16) {
    r.responses
        .iter()
        .flat_map(|t| &t.partitions)
        .find(|x| x.partition_index == p)
        .map_or((0, 0), |x| (x.error_code, x.acknowledge_error_code))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn http_get(s: &Server, path: &str) -> (u16, Value) {
    let rt = rt();
    let r = rt.block_on(reqwest::Client::new().get(s.url(path)).send()).unwrap();
    let status = r.status().as_u16();
    let text = rt.block_on(r.text()).unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A member "m" of share group `group` (reading from the earliest) that has fetched, in
/// its session's first ShareFetch, the `n` records just produced to partition 0 of a new
/// topic: its connection, the topic's id and that answer.
fn member_holding(port: u16, (name, n, tag): (&str, usize, &str), group: &str) -> (Kafka, Uuid, ShareFetchResponse) {
    let mut k = Kafka::connect(port);
    let t = topic_id(&mut k, name);
    produce_n(&mut k, name, 0, n, tag);
    share_from_earliest(&mut k, group);
    heartbeat(&mut k, group, "m", 0, Some(&[name]));
    let r = share_fetch(&mut k, group, "m", 0, &[(t, 0, vec![])], 1000);
    (k, t, r)
}

fn produce_n(k: &mut Kafka, t: &str, p: i32, n: usize, tag: &str) {
    let vals: Vec<Vec<u8>> = (0..n).map(|i| format!("\"{tag}-{i}\"").into_bytes()).collect();
    let refs: Vec<&[u8]> = vals.iter().map(|v| v.as_slice()).collect();
    assert_eq!(k.produce(t, p, batch(&refs, Compression::None, None), -1).error_code, 0);
}

#[test]
fn accept_release_and_reject_map_to_ack_retry_and_dead_letter() {
    let (s, port) = Server::start_kafka(&["--kafka-default-partitions", "2"]);
    let mut k = Kafka::connect(port);
    let t = topic_id(&mut k, "sq");
    produce_n(&mut k, "sq", 0, 5, "a");
    produce_n(&mut k, "sq", 1, 3, "b");
    share_from_earliest(&mut k, "sg");
    let hb = heartbeat(&mut k, "sg", "m1", 0, Some(&["sq"]));
    assert_eq!((hb.error_code, hb.member_epoch), (0, 1));
    let asg = hb.assignment.expect("a joining member gets its assignment");
    assert_eq!(asg.topic_partitions.len(), 1);
    assert_eq!((asg.topic_partitions[0].topic_id, asg.topic_partitions[0].partitions.clone()), (t, vec![0, 1]));
    // A heartbeat with nothing changed carries no assignment.
    let hb = heartbeat(&mut k, "sg", "m1", 1, None);
    assert_eq!((hb.error_code, hb.member_epoch, hb.assignment.is_none()), (0, 1, true));

    let r = share_fetch(&mut k, "sg", "m1", 0, &[(t, 0, vec![]), (t, 1, vec![])], 1000);
    assert_eq!(r.error_code, 0);
    assert_eq!(r.acquisition_lock_timeout_ms, 30_000);
    let p0 = acquired(&r, t, 0);
    let p1 = acquired(&r, t, 1);
    assert_eq!(p0.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(), (0..5).map(|o| (o, 1)).collect::<Vec<_>>());
    assert_eq!(p0[2].2, b"\"a-2\"");
    assert_eq!(p1.len(), 3);

    // The HTTP consumer of the same group gets nothing while the share consumer holds both.
    let (status, _) = http_get(&s, "/api/v1/pop/queue/sq?consumerGroup=sg&batch=10&wait=false");
    assert_eq!(status, 204, "an HTTP pop in the share group's name found a partition free");

    // Partition 0: accept 0-1, reject 2, release 3, accept 4 (one request, one entry).
    // Partition 1: accept all.
    let acks0 = vec![(0, 1, vec![ACCEPT]), (2, 4, vec![REJECT, RELEASE, ACCEPT])];
    let r = share_fetch(&mut k, "sg", "m1", 1, &[(t, 0, acks0), (t, 1, vec![(0, 2, vec![ACCEPT])])], 1000);
    assert_eq!(r.error_code, 0);
    assert_eq!(part_codes(&r, 0).1, 0, "{r:?}");
    assert_eq!(part_codes(&r, 1).1, 0, "{r:?}");
    // The released record comes back, its delivery count moved on.
    let again = acquired(&r, t, 0);
    assert_eq!(again.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(), vec![(3, 2)], "{r:?}");
    // The rejected one is a dead letter.
    let (_, dlq) = http_get(&s, "/api/v1/dlq?queue=sq");
    let text = dlq.to_string();
    assert!(text.contains("rejected by a Kafka share consumer"), "{text}");
    // Accepting the redelivered one leaves nothing.
    let r = share_fetch(&mut k, "sg", "m1", 2, &[(t, 0, vec![(3, 3, vec![ACCEPT])])], 200);
    assert_eq!(part_codes(&r, 0), (0, 0));
    assert!(acquired(&r, t, 0).is_empty() && acquired(&r, t, 1).is_empty());
    // Cursor: everything settled, HTTP pops of the group find nothing; new messages go to
    // whoever asks first.
    produce_n(&mut k, "sq", 1, 2, "c");
    let (status, v) = http_get(&s, "/api/v1/pop/queue/sq?consumerGroup=sg&batch=10&wait=false");
    assert_eq!(status, 200);
    assert_eq!(v["messages"].as_array().unwrap().len(), 2, "{v}");
    let r = share_fetch(&mut k, "sg", "m1", 3, &[], 200);
    assert!(acquired(&r, t, 1).is_empty(), "the share consumer got what the HTTP consumer holds: {r:?}");
    // Leaving releases; the member is gone.
    let hb = heartbeat(&mut k, "sg", "m1", -1, None);
    assert_eq!((hb.error_code, hb.member_epoch), (0, -1));
    let hb = heartbeat(&mut k, "sg", "m1", 1, None);
    assert_eq!(hb.error_code, UNKNOWN_MEMBER_ID);
}

#[test]
fn an_acquisition_runs_out_with_its_lock_and_is_delivered_again() {
    let (s, port) = Server::start_kafka(&["--kafka-share-record-lock-ms", "1000"]);
    let (mut k, t, r) = member_holding(port, ("lk", 3, "x"), "lg");
    assert_eq!(r.acquisition_lock_timeout_ms, 1000);
    assert_eq!(acquired(&r, t, 0).len(), 3);
    std::thread::sleep(Duration::from_millis(1500));
    // The lock is over: an HTTP consumer of the group gets them, as a second delivery.
    let (status, v) = http_get(&s, "/api/v1/pop/queue/lk?consumerGroup=lg&batch=10&wait=false");
    assert_eq!(status, 200, "{v}");
    let msgs = v["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    // The share consumer's late acknowledgement changes nothing (I4).
    let r = share_ack(&mut k, "lg", "m", 1, t, 0, vec![(0, 2, vec![ACCEPT])]);
    assert_eq!(r.error_code, 0);
    assert_eq!(r.responses[0].partitions[0].error_code, INVALID_RECORD_STATE, "{r:?}");
}

#[test]
fn hostile_and_confused_requests_get_precise_errors() {
    let (_s, port) = Server::start_kafka(&["--kafka-max-share-sessions", "2"]);
    let mut k = Kafka::connect(port);
    let t = topic_id(&mut k, "hq");
    produce_n(&mut k, "hq", 0, 4, "h");
    // Heartbeats: no member id, the queue-mode group, joining without topics, a fenced epoch.
    assert_eq!(heartbeat(&mut k, "hg", "", 0, Some(&["hq"])).error_code, INVALID_REQUEST);
    assert_eq!(heartbeat(&mut k, "__QUEUE_MODE__", "m", 0, Some(&["hq"])).error_code, INVALID_GROUP_ID);
    assert_eq!(heartbeat(&mut k, "hg", "m", 0, None).error_code, INVALID_REQUEST);
    share_from_earliest(&mut k, "hg");
    assert_eq!(heartbeat(&mut k, "hg", "m", 0, Some(&["hq"])).error_code, 0);
    assert_eq!(heartbeat(&mut k, "hg", "m", 9, None).error_code, FENCED_MEMBER_EPOCH);
    assert_eq!(heartbeat(&mut k, "hg", "nobody", 3, None).error_code, UNKNOWN_MEMBER_ID);
    // A share group is not a classic group, and describing an unknown one says so.
    let d: ShareGroupDescribeResponse = k.call(
        ApiKey::ShareGroupDescribe,
        1,
        &ShareGroupDescribeRequest::default().with_group_ids(vec![GroupId(name("hg")), GroupId(name("nope"))]),
    );
    assert_eq!(d.groups[0].error_code, 0);
    assert_eq!(d.groups[0].members.len(), 1);
    assert_eq!(d.groups[0].members[0].assignment.topic_partitions[0].topic_name.as_str(), "hq");
    assert_eq!(d.groups[1].error_code, GROUP_ID_NOT_FOUND);

    // Sessions: acks on a new session, an unknown session, a wrong epoch.
    let r = share_fetch(&mut k, "hg", "m", 0, &[(t, 0, vec![(0, 0, vec![ACCEPT])])], 0);
    assert_eq!(r.error_code, INVALID_REQUEST);
    let r = share_fetch(&mut k, "hg", "ghost", 4, &[(t, 0, vec![])], 0);
    assert_eq!(r.error_code, SHARE_SESSION_NOT_FOUND);
    let r = share_fetch(&mut k, "hg", "m", 0, &[(t, 0, vec![]), (Uuid::from_u128(99), 0, vec![])], 500);
    assert_eq!(r.error_code, 0);
    assert_eq!(acquired(&r, t, 0).len(), 4, "{r:?}");
    let unknown =
        r.responses.iter().find(|x| x.topic_id == Uuid::from_u128(99)).expect("the unknown topic is answered");
    assert_eq!(unknown.partitions[0].error_code, UNKNOWN_TOPIC_ID);
    let r = share_fetch(&mut k, "hg", "m", 5, &[], 0);
    assert_eq!(r.error_code, INVALID_SHARE_SESSION_EPOCH);

    // Acknowledgements: types that fit neither form, an offset not held, an unknown type, a
    // range as wide as the offsets go (must not be walked), offsets backwards.
    let cases: Vec<(Acks, i16)> = vec![
        (vec![(0, 2, vec![ACCEPT, ACCEPT])], INVALID_REQUEST),
        (vec![(0, 9, vec![ACCEPT])], INVALID_RECORD_STATE),
        (vec![(0, 0, vec![7])], INVALID_REQUEST),
        (vec![(0, i64::MAX, vec![ACCEPT])], INVALID_RECORD_STATE),
        (vec![(3, 1, vec![ACCEPT])], INVALID_REQUEST),
        (vec![(-5, 1, vec![ACCEPT])], INVALID_REQUEST),
    ];
    let mut epoch = 1;
    for (acks, code) in cases {
        let started = Instant::now();
        let r = share_ack(&mut k, "hg", "m", epoch, t, 0, acks.clone());
        epoch += 1;
        assert_eq!(r.error_code, 0);
        assert_eq!(r.responses[0].partitions[0].error_code, code, "{acks:?}: {r:?}");
        assert!(started.elapsed() < Duration::from_secs(5), "{acks:?} took {:?}", started.elapsed());
    }
    // None of those settled anything: all four are still held, and accepting them works.
    let r = share_ack(&mut k, "hg", "m", epoch, t, 0, vec![(0, 3, vec![ACCEPT])]);
    assert_eq!(r.responses[0].partitions[0].error_code, 0, "{r:?}");
    // An acknowledgement of a partition nothing was acquired from.
    let r = share_ack(&mut k, "hg", "m", epoch + 1, t, 0, vec![(0, 0, vec![ACCEPT])]);
    assert_eq!(r.responses[0].partitions[0].error_code, INVALID_RECORD_STATE);
    // The session bound: two are open (m, and one more), a third is refused.
    heartbeat(&mut k, "hg", "m2", 0, Some(&["hq"]));
    assert_eq!(share_fetch(&mut k, "hg", "m2", 0, &[(t, 0, vec![])], 0).error_code, 0);
    assert_eq!(share_fetch(&mut k, "hg", "m3", 0, &[(t, 0, vec![])], 0).error_code, SHARE_SESSION_LIMIT_REACHED);
    // Closing one (epoch -1) frees its slot.
    assert_eq!(share_fetch(&mut k, "hg", "m2", -1, &[], 0).error_code, 0);
    assert_eq!(share_fetch(&mut k, "hg", "m3", 0, &[(t, 0, vec![])], 0).error_code, 0);
}

#[test]
fn closing_a_session_settles_its_last_acknowledgements_and_releases_the_rest_without_charge() {
    let (s, port) = Server::start_kafka(&[]);
    let (mut k, t, r) = member_holding(port, ("cq", 4, "c"), "cg");
    assert_eq!(acquired(&r, t, 0).len(), 4);
    // The closing acknowledge accepts 0 and 1; 2 and 3 go back at once, still first deliveries.
    let r = share_ack(&mut k, "cg", "m", -1, t, 0, vec![(0, 1, vec![ACCEPT])]);
    assert_eq!(r.responses[0].partitions[0].error_code, 0, "{r:?}");
    let (status, v) = http_get(&s, "/api/v1/pop/queue/cq?consumerGroup=cg&batch=10&wait=false");
    assert_eq!(status, 200, "the closed session's leases were not released");
    let msgs = v["messages"].as_array().unwrap();
    let offsets: Vec<u64> = msgs.iter().map(|m| m["offset"].as_u64().unwrap()).collect();
    assert_eq!(offsets, vec![2, 3], "{v}");
    assert_eq!(msgs[0]["deliveryAttempt"].as_u64(), Some(1), "released on close without charge: {v}");
    // Listed as a share group while the member lives.
    let l: ListGroupsResponse = k.call(ApiKey::ListGroups, 5, &ListGroupsRequest::default());
    let g = l.groups.iter().find(|g| g.group_id.as_str() == "cg").expect("the share group is listed");
    assert_eq!(g.group_type.as_str(), "share");
    // Offsets admin: the group's start offset is its cursor (2), and with a member it may
    // not be moved.
    let d: DescribeShareGroupOffsetsResponse = k.call(
        ApiKey::DescribeShareGroupOffsets,
        0,
        &DescribeShareGroupOffsetsRequest::default().with_groups(vec![
            describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup::default()
                .with_group_id(GroupId(name("cg")))
                .with_topics(None),
        ]),
    );
    let p = &d.groups[0].topics[0].partitions[0];
    assert_eq!((p.error_code, p.start_offset), (0, 2), "{d:?}");
    let alter = AlterShareGroupOffsetsRequest::default().with_group_id(GroupId(name("cg"))).with_topics(vec![
        alter_share_group_offsets_request::AlterShareGroupOffsetsRequestTopic::default()
            .with_topic_name(topic("cq"))
            .with_partitions(vec![alter_share_group_offsets_request::AlterShareGroupOffsetsRequestPartition::default(
            )
            .with_partition_index(0)
            .with_start_offset(0)]),
    ]);
    let a: AlterShareGroupOffsetsResponse = k.call(ApiKey::AlterShareGroupOffsets, 0, &alter);
    assert_eq!(a.error_code, 68, "NON_EMPTY_GROUP while a member lives: {a:?}");
    heartbeat(&mut k, "cg", "m", -1, None);
    let a: AlterShareGroupOffsetsResponse = k.call(ApiKey::AlterShareGroupOffsets, 0, &alter);
    assert_eq!((a.error_code, a.responses[0].partitions[0].error_code), (0, 0), "{a:?}");
    let (_, v) = http_get(&s, "/api/v1/pop/queue/cq?consumerGroup=cg&batch=10&wait=false&autoAck=true");
    assert_eq!(v["messages"].as_array().map(|m| m.len()), Some(4), "the start offset moved back to 0: {v}");
}

#[test]
fn a_restart_loses_sessions_and_members_but_not_the_leases_they_held() {
    let (mut s, port) = Server::start_kafka(&["--kafka-share-record-lock-ms", "1500"]);
    let (_k, t, r) = member_holding(port, ("rq", 3, "r"), "rg");
    assert_eq!(acquired(&r, t, 0).len(), 3);
    s.kill9();
    s.restart();
    let mut k = Kafka::connect(port);
    // What lived only in memory is gone, with the errors that make a client start over.
    assert_eq!(share_fetch(&mut k, "rg", "m", 1, &[], 0).error_code, SHARE_SESSION_NOT_FOUND);
    assert_eq!(heartbeat(&mut k, "rg", "m", 1, None).error_code, UNKNOWN_MEMBER_ID);
    assert_eq!(heartbeat(&mut k, "rg", "m", 0, Some(&["rq"])).error_code, 0);
    // The lease is durable: nobody gets the records until it runs out (I4) ...
    let r = share_fetch(&mut k, "rg", "m", 0, &[(t, 0, vec![])], 200);
    assert!(acquired(&r, t, 0).is_empty(), "acquired again while the first lease lives: {r:?}");
    let (status, _) = http_get(&s, "/api/v1/pop/queue/rq?consumerGroup=rg&batch=10&wait=false");
    assert_eq!(status, 204);
    // ... and then they come back as second deliveries.
    std::thread::sleep(Duration::from_millis(1600));
    let r = share_fetch(&mut k, "rg", "m", 1, &[], 2000);
    let got = acquired(&r, t, 0);
    assert_eq!(got.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(), vec![(0, 2), (1, 2), (2, 2)], "{r:?}");
}

fn dc(r: &ShareFetchResponse, t: Uuid) -> Vec<(i64, i16)> {
    acquired(r, t, 0).iter().map(|x| (x.0, x.1)).collect()
}

fn ack_code(r: &ShareAcknowledgeResponse) -> i16 {
    assert_eq!(r.error_code, 0, "{r:?}");
    r.responses[0].partitions[0].error_code
}

/// D85, found by the Java share consumer in CI: it fetches ahead, so it can hold records
/// of an acquisition it has not handed to the application yet when it releases one. A
/// release must end only that record's acquisition, as in Kafka: the rest stay the
/// member's and can still be accepted.
#[test]
fn a_release_gives_back_only_that_record_and_the_rest_stay_acquired() {
    let (s, port) = Server::start_kafka(&["--kafka-default-partitions", "1"]);
    let (mut k, t, r) = member_holding(port, ("rl", 6, "r"), "rg");
    assert_eq!(dc(&r, t), (0..6).map(|o| (o, 1)).collect::<Vec<_>>());
    // The application saw 0 and 1 only: it accepts 0 and releases 1.
    assert_eq!(ack_code(&share_ack(&mut k, "rg", "m", 1, t, 0, vec![(0, 1, vec![ACCEPT, RELEASE])])), 0);
    // Then it is handed 2..5 from the same acquisition: they are still its own.
    assert_eq!(ack_code(&share_ack(&mut k, "rg", "m", 2, t, 0, vec![(2, 2, vec![ACCEPT])])), 0);
    assert_eq!(ack_code(&share_ack(&mut k, "rg", "m", 3, t, 0, vec![(3, 4, vec![RELEASE, REJECT])])), 0);
    // A released record is no longer the member's to accept.
    let r = share_ack(&mut k, "rg", "m", 4, t, 0, vec![(1, 1, vec![ACCEPT])]);
    assert_eq!(ack_code(&r), INVALID_RECORD_STATE);
    // Nobody else gets the partition while the member holds 5.
    let (status, _) = http_get(&s, "/api/v1/pop/queue/rl?consumerGroup=rg&batch=10&wait=false");
    assert_eq!(status, 204);
    // Accepting the last one gives back both releases, each charged a delivery.
    let r = share_fetch(&mut k, "rg", "m", 5, &[(t, 0, vec![(5, 5, vec![ACCEPT])])], 1000);
    assert_eq!(part_codes(&r, 0), (0, 0), "{r:?}");
    assert_eq!(dc(&r, t), vec![(1, 2), (3, 2)], "{r:?}");
    let (_, dlq) = http_get(&s, "/api/v1/dlq?queue=rl");
    let dead: Vec<u64> = dlq["messages"].as_array().unwrap().iter().map(|m| m["offset"].as_u64().unwrap()).collect();
    assert_eq!(dead, vec![4], "{dlq}");
}

/// Two releases in the request that settles the rest, and a release still waiting when
/// the member leaves: each released record is charged once, the open ones go back free.
#[test]
fn releases_are_charged_once_each_in_one_request_and_when_the_member_leaves() {
    let (s, port) = Server::start_kafka(&["--kafka-default-partitions", "1"]);
    let (mut k, t, r) = member_holding(port, ("rm", 4, "r"), "mg");
    assert_eq!(dc(&r, t).len(), 4);
    let acks = vec![(0, 3, vec![RELEASE, ACCEPT, RELEASE, ACCEPT])];
    let r = share_fetch(&mut k, "mg", "m", 1, &[(t, 0, acks)], 1000);
    assert_eq!(part_codes(&r, 0), (0, 0), "{r:?}");
    assert_eq!(dc(&r, t), vec![(0, 2), (2, 2)], "{r:?}");
    // Release 0 again, keep 2, and leave.
    assert_eq!(ack_code(&share_ack(&mut k, "mg", "m", 2, t, 0, vec![(0, 0, vec![RELEASE])])), 0);
    assert_eq!(heartbeat(&mut k, "mg", "m", -1, None).error_code, 0);
    let (status, v) = http_get(&s, "/api/v1/pop/queue/rm?consumerGroup=mg&batch=10&wait=false");
    assert_eq!(status, 200, "the departed member's lease was not given back");
    let got: Vec<(u64, u64)> = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["offset"].as_u64().unwrap(), m["deliveryAttempt"].as_u64().unwrap()))
        .collect();
    assert_eq!(got, vec![(0, 3), (2, 2)], "released: charged; held open: free; {v}");
}

/// Overlapping batches that accept and release one record are refused whole; before, the
/// accept settled it and the waiting release later kept the partition's lease to its lock.
#[test]
fn a_record_acknowledged_twice_in_one_request_is_refused_and_nothing_changes() {
    let (_s, port) = Server::start_kafka(&["--kafka-default-partitions", "1"]);
    let (mut k, t, r) = member_holding(port, ("dq", 2, "d"), "dg");
    assert_eq!(dc(&r, t).len(), 2);
    let r = share_ack(&mut k, "dg", "m", 1, t, 0, vec![(0, 0, vec![ACCEPT]), (0, 0, vec![RELEASE])]);
    assert_eq!(ack_code(&r), INVALID_REQUEST);
    // Both records are still held and settle normally.
    assert_eq!(ack_code(&share_ack(&mut k, "dg", "m", 2, t, 0, vec![(0, 1, vec![ACCEPT])])), 0);
}
