//! Kafka group configs (D67) at the wire against the real `baton` binary: a share group
//! starts where its `share.auto.offset.reset` says (Kafka's default `latest`, `earliest`,
//! `by_duration:`), acquires under its own `share.record.lock.duration.ms`, and its
//! configs are durable, described, checked whole, and not writable over HTTP's KV.

use crate::common;
use crate::kafka_util;

use common::Server;
use kafka_protocol::messages::*;
use kafka_protocol::records::Compression;
use kafka_util::share::*;
use kafka_util::*;
use std::collections::HashMap;
use std::time::Duration;

const INVALID_CONFIG: i16 = 40;

fn produce_n(k: &mut Kafka, t: &str, n: usize, tag: &str) {
    let vals: Vec<Vec<u8>> = (0..n).map(|i| format!("\"{tag}-{i}\"").into_bytes()).collect();
    let refs: Vec<&[u8]> = vals.iter().map(|v| v.as_slice()).collect();
    assert_eq!(k.produce(t, 0, batch(&refs, Compression::None, None), -1).error_code, 0);
}

/// The group's configs as DescribeConfigs (v4) answers: name -> (value, source).
fn describe(k: &mut Kafka, group: &str) -> HashMap<String, (String, i8)> {
    let req = DescribeConfigsRequest::default().with_resources(vec![
        describe_configs_request::DescribeConfigsResource::default()
            .with_resource_type(RESOURCE_GROUP)
            .with_resource_name(name(group)),
    ]);
    let r: DescribeConfigsResponse = k.call(ApiKey::DescribeConfigs, 4, &req);
    assert_eq!(r.results[0].error_code, 0, "{r:?}");
    r.results[0]
        .configs
        .iter()
        .map(|c| (c.name.to_string(), (c.value.as_ref().map(|v| v.to_string()).unwrap_or_default(), c.config_source)))
        .collect()
}

/// Joins `member` to `group` on `topic` and fetches once; the offsets acquired on partition 0.
fn first_fetch(k: &mut Kafka, group: &str, topic: &str, wait_ms: i32) -> Vec<i64> {
    let t = topic_id(k, topic);
    assert_eq!(heartbeat(k, group, "m", 0, Some(&[topic])).error_code, 0);
    let r = share_fetch(k, group, "m", 0, &[(t, 0, vec![])], wait_ms);
    assert_eq!(r.error_code, 0, "{r:?}");
    acquired(&r, t, 0).iter().map(|x| x.0).collect()
}

#[test]
fn a_share_group_starts_at_the_end_unless_its_config_says_otherwise() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    produce_n(&mut k, "lt", 3, "old");
    produce_n(&mut k, "er", 3, "old");

    // Kafka's default: latest. The backlog is not delivered; what comes after is.
    assert_eq!(describe(&mut k, "g-latest")["share.auto.offset.reset"], ("latest".to_string(), 5));
    assert!(first_fetch(&mut k, "g-latest", "lt", 300).is_empty(), "a new share group was given the old backlog");
    produce_n(&mut k, "lt", 2, "new");
    let t = topic_id(&mut k, "lt");
    let r = share_fetch(&mut k, "g-latest", "m", 1, &[], 2000);
    assert_eq!(acquired(&r, t, 0).iter().map(|x| x.0).collect::<Vec<_>>(), vec![3, 4], "{r:?}");

    // earliest, set before the group exists (as a Kafka admin does): everything.
    share_from_earliest(&mut k, "g-early");
    let d = describe(&mut k, "g-early");
    assert_eq!(d["share.auto.offset.reset"], ("earliest".to_string(), 8), "a group's own config is source 8: {d:?}");
    assert_eq!(d["share.record.lock.duration.ms"], ("30000".to_string(), 5));
    assert_eq!(first_fetch(&mut k, "g-early", "er", 1000), vec![0, 1, 2]);

    // DELETE puts the default back.
    assert_eq!(alter_group_config(&mut k, "g-early", "share.auto.offset.reset", None), (0, None));
    assert_eq!(describe(&mut k, "g-early")["share.auto.offset.reset"], ("latest".to_string(), 5));
}

#[test]
fn by_duration_starts_at_what_was_written_within_it() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    produce_n(&mut k, "bd", 2, "old");
    // Old by the time the group first fetches: written 5 s before, the window is 3 s.
    std::thread::sleep(Duration::from_secs(5));
    produce_n(&mut k, "bd", 2, "recent");
    assert_eq!(alter_group_config(&mut k, "g-bd", "share.auto.offset.reset", Some("by_duration:PT3S")), (0, None));
    assert_eq!(first_fetch(&mut k, "g-bd", "bd", 1000), vec![2, 3]);
}

#[test]
fn a_groups_lock_and_heartbeat_interval_are_its_own() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    produce_n(&mut k, "lk", 1, "x");
    share_from_earliest(&mut k, "g-lock");
    assert_eq!(alter_group_config(&mut k, "g-lock", "share.record.lock.duration.ms", Some("2000")), (0, None));
    assert_eq!(alter_group_config(&mut k, "g-lock", "share.heartbeat.interval.ms", Some("7000")), (0, None));
    let t = topic_id(&mut k, "lk");
    let hb = heartbeat(&mut k, "g-lock", "m", 0, Some(&["lk"]));
    assert_eq!((hb.error_code, hb.heartbeat_interval_ms), (0, 7000));
    let r = share_fetch(&mut k, "g-lock", "m", 0, &[(t, 0, vec![])], 1000);
    assert_eq!(r.acquisition_lock_timeout_ms, 2000);
    assert_eq!(acquired(&r, t, 0).iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(), vec![(0, 1)]);
    // Not settled within the group's 2 s lock (not the broker's 30 s): delivered again.
    std::thread::sleep(Duration::from_millis(3200));
    let r = share_fetch(&mut k, "g-lock", "m", 1, &[], 2000);
    assert_eq!(acquired(&r, t, 0).iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(), vec![(0, 2)], "{r:?}");
    // Another group keeps the broker's lock.
    share_from_earliest(&mut k, "g-other");
    assert_eq!(heartbeat(&mut k, "g-other", "m", 0, Some(&["lk"])).heartbeat_interval_ms, 5000);
    let r = share_fetch(&mut k, "g-other", "m", 0, &[(t, 0, vec![])], 0);
    assert_eq!(r.acquisition_lock_timeout_ms, 30_000);
}

#[test]
fn bad_changes_are_refused_whole_and_the_configs_survive_a_restart() {
    let (mut s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    for (name, value) in [
        ("share.auto.offset.reset", "none"),
        ("share.auto.offset.reset", "by_duration:1h"),
        ("share.record.lock.duration.ms", "10"),
        ("share.record.lock.duration.ms", "-5"),
        ("share.isolation.level", "serializable"),
        ("retention.ms", "1000"),
    ] {
        let (code, msg) = alter_group_config(&mut k, "g-bad", name, Some(value));
        assert_eq!(code, INVALID_CONFIG, "{name}={value}");
        assert!(msg.unwrap_or_default().contains(name), "the refusal names {name}");
    }
    // Two configs, one bad: neither is stored.
    use incremental_alter_configs_request as a;
    let set = |n: &str, v: &str| {
        a::AlterableConfig::default().with_name(name(n)).with_config_operation(0).with_value(Some(name(v)))
    };
    let req = IncrementalAlterConfigsRequest::default().with_resources(vec![a::AlterConfigsResource::default()
        .with_resource_type(RESOURCE_GROUP)
        .with_resource_name(name("g-bad"))
        .with_configs(vec![set("share.auto.offset.reset", "earliest"), set("share.session.timeout.ms", "x")])]);
    let r: IncrementalAlterConfigsResponse = k.call(ApiKey::IncrementalAlterConfigs, 1, &req);
    assert_eq!(r.responses[0].error_code, INVALID_CONFIG);
    // validate_only stores nothing either.
    let r: IncrementalAlterConfigsResponse =
        k.call(ApiKey::IncrementalAlterConfigs, 1, &req.clone().with_validate_only(true));
    assert_eq!(r.responses[0].error_code, INVALID_CONFIG);
    let ok = IncrementalAlterConfigsRequest::default().with_validate_only(true).with_resources(vec![
        a::AlterConfigsResource::default()
            .with_resource_type(RESOURCE_GROUP)
            .with_resource_name(name("g-bad"))
            .with_configs(vec![set("share.isolation.level", "read_committed")]),
    ]);
    let r: IncrementalAlterConfigsResponse = k.call(ApiKey::IncrementalAlterConfigs, 1, &ok);
    assert_eq!(r.responses[0].error_code, 0);
    let d = describe(&mut k, "g-bad");
    assert!(d.values().all(|(_, source)| *source == 5), "nothing was stored: {d:?}");

    // An HTTP client cannot write the namespace the configs live in.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let body = serde_json::json!({"operations": [{"op": "put", "ns": "kafka-group-configs", "key": "g-bad",
        "value": {"share.auto.offset.reset": "earliest"}}]});
    let resp = rt.block_on(reqwest::Client::new().post(s.url("/api/v1/kv")).json(&body).send()).unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let text = rt.block_on(resp.text()).unwrap();
    assert!(text.contains("reserved_namespace"), "{text}");

    // Set, then kill -9 and restart: the configs are durable.
    assert_eq!(alter_group_config(&mut k, "g-keep", "share.auto.offset.reset", Some("earliest")), (0, None));
    assert_eq!(alter_group_config(&mut k, "g-keep", "share.session.timeout.ms", Some("50000")), (0, None));
    s.kill9();
    s.restart();
    let mut k = Kafka::connect(port);
    let d = describe(&mut k, "g-keep");
    assert_eq!(d["share.auto.offset.reset"], ("earliest".to_string(), 8));
    assert_eq!(d["share.session.timeout.ms"], ("50000".to_string(), 8));
}

#[test]
fn two_admins_changing_one_group_at_once_lose_neither_change() {
    let (_s, port) = Server::start_kafka(&[]);
    // Each admin sets its own config of the same group, over and over, at the same time:
    // a read-modify-write without the compare-and-set would lose one side's latest value.
    let admins: Vec<_> = [("share.session.timeout.ms", 45_000), ("share.heartbeat.interval.ms", 5_000)]
        .into_iter()
        .map(|(config, start)| {
            std::thread::spawn(move || {
                let mut k = Kafka::connect(port);
                for i in 0..60 {
                    let v = (start + i).to_string();
                    assert_eq!(alter_group_config(&mut k, "g-both", config, Some(&v)), (0, None), "{config}={v}");
                }
                (config, (start + 59).to_string())
            })
        })
        .collect();
    let mut k = Kafka::connect(port);
    for a in admins {
        let (config, last) = a.join().unwrap();
        assert_eq!(describe(&mut k, "g-both")[config], (last, 8), "{config}'s last change was lost");
    }
}

#[test]
fn a_value_past_1_kib_is_refused_even_when_it_parses() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    // A valid duration padded with zeros: one second, in 2 KiB that would be stored per group
    // and held in every node's cache.
    let padded = format!("by_duration:PT{}1S", "0".repeat(2048));
    let (code, msg) = alter_group_config(&mut k, "g-big", "share.auto.offset.reset", Some(&padded));
    assert_eq!(code, INVALID_CONFIG);
    assert!(msg.unwrap_or_default().contains("at most 1024"));
    assert_eq!(describe(&mut k, "g-big")["share.auto.offset.reset"], ("latest".to_string(), 5), "nothing stored");
}

/// A deleted group leaves no configs behind (the same log entry deletes both): a new group
/// of the name starts from the defaults. A name DeleteGroups does not know keeps its
/// configs (set before its group exists, as an admin may).
#[test]
fn deleting_a_group_deletes_its_configs_and_only_then() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    produce_n(&mut k, "dg", 3, "old");
    share_from_earliest(&mut k, "g-del");
    share_from_earliest(&mut k, "g-unborn");
    assert_eq!(first_fetch(&mut k, "g-del", "dg", 1000), vec![0, 1, 2]);
    assert_eq!(heartbeat(&mut k, "g-del", "m", -1, None).error_code, 0, "the member leaves");
    let req = DeleteGroupsRequest::default().with_groups_names(vec![GroupId(name("g-del")), GroupId(name("g-unborn"))]);
    let r: DeleteGroupsResponse = k.call(ApiKey::DeleteGroups, 2, &req);
    let codes: Vec<i16> = r.results.iter().map(|x| x.error_code).collect();
    assert_eq!(codes, [0, 69], "deleted, GROUP_ID_NOT_FOUND: {r:?}");
    assert_eq!(describe(&mut k, "g-del")["share.auto.offset.reset"], ("latest".to_string(), 5));
    assert_eq!(describe(&mut k, "g-unborn")["share.auto.offset.reset"], ("earliest".to_string(), 8));
    // A new group of the deleted name starts at the end, as any new share group does.
    assert!(first_fetch(&mut k, "g-del", "dg", 300).is_empty(), "the deleted group's earliest applied again");
}
