//! ShareFetch and ShareAcknowledge version 2 (D71) at the wire against the real `baton`
//! binary: a renewed acquisition lock (KIP-1222) keeps records from every other consumer
//! of the group past the lock time, in either door; renewals are refused where they do not
//! apply; the record-limit acquire mode (KIP-1206) never goes past `MaxRecords`.

use crate::common;
use crate::kafka_util;

use common::Server;
use kafka_protocol::messages::*;
use kafka_protocol::records::Compression;
use kafka_util::share::*;
use kafka_util::*;
use std::time::Duration;
use uuid::Uuid;

const ACCEPT: i8 = 1;
const RENEW: i8 = 4;
const INVALID_REQUEST: i16 = 42;
const INVALID_RECORD_STATE: i16 = 121;

fn produce_n(k: &mut Kafka, t: &str, p: i32, n: usize, tag: &str) {
    let vals: Vec<Vec<u8>> = (0..n).map(|i| format!("\"{tag}-{i}\"").into_bytes()).collect();
    let refs: Vec<&[u8]> = vals.iter().map(|v| v.as_slice()).collect();
    assert_eq!(k.produce(t, p, batch(&refs, Compression::None, None), -1).error_code, 0);
}

fn create(k: &mut Kafka, t: &str, partitions: i32) -> Uuid {
    let req = CreateTopicsRequest::default().with_timeout_ms(5000).with_topics(vec![
        create_topics_request::CreatableTopic::default()
            .with_name(topic(t))
            .with_num_partitions(partitions)
            .with_replication_factor(-1),
    ]);
    let r: CreateTopicsResponse = k.call(ApiKey::CreateTopics, 5, &req);
    assert_eq!(r.topics[0].error_code, 0, "{r:?}");
    topic_id(k, t)
}

/// A version 2 ShareFetch: `mode` is ShareAcquireMode, `renew` IsRenewAck.
fn fetch_v2(
    k: &mut Kafka,
    who: (&str, &str, i32),
    parts: &[(Uuid, i32, Acks)],
    max_records: i32,
    mode: i8,
    renew: bool,
) -> ShareFetchResponse {
    let req = share_fetch_req(who, parts, 300, max_records).with_share_acquire_mode(mode).with_is_renew_ack(renew);
    k.call(ApiKey::ShareFetch, 2, &req)
}

/// A ShareAcknowledge of one partition at `version`, with IsRenewAck `renew` (version 2).
fn ack_at(
    k: &mut Kafka,
    version: i16,
    who: (&str, &str, i32),
    part: (Uuid, i32),
    acks: Acks,
    renew: bool,
) -> ShareAcknowledgeResponse {
    k.call(ApiKey::ShareAcknowledge, version, &share_ack_req(who, part, acks).with_is_renew_ack(renew))
}

fn ack_code(r: &ShareAcknowledgeResponse) -> i16 {
    r.responses.iter().flat_map(|t| &t.partitions).map(|p| p.error_code).find(|c| *c != 0).unwrap_or(0)
}

/// Values an HTTP consumer of `group` pops from `queue` now.
fn http_pop(s: &Server, queue: &str, group: &str) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let url = s.url(&format!("/api/v1/pop/queue/{queue}?consumerGroup={group}&batch=10&wait=false"));
    let r = rt.block_on(reqwest::Client::new().get(url).send()).unwrap();
    let text = rt.block_on(r.text()).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    v["messages"].as_array().map_or(vec![], |m| m.iter().map(|x| x["data"].to_string()).collect())
}

fn metric(s: &Server, series: &str) -> f64 {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let r = rt.block_on(reqwest::Client::new().get(s.url("/metrics/prometheus")).send()).unwrap();
    let text = rt.block_on(r.text()).unwrap();
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok()).unwrap_or(0.0)
}

#[test]
fn a_renewed_lock_keeps_the_records_from_every_other_consumer_past_the_lock_time() {
    let (s, port) = Server::start_kafka(&["--kafka-share-record-lock-ms", "2000"]);
    let mut k = Kafka::connect(port);
    let t = create(&mut k, "rn", 2);
    produce_n(&mut k, "rn", 0, 3, "x");
    share_from_earliest(&mut k, "g");
    assert_eq!(heartbeat(&mut k, "g", "m", 0, Some(&["rn"])).error_code, 0);
    let r = fetch_v2(&mut k, ("g", "m", 0), &[(t, 0, vec![]), (t, 1, vec![])], 500, 0, false);
    assert_eq!((r.error_code, r.acquisition_lock_timeout_ms), (0, 2000), "{r:?}");
    assert_eq!(acquired(&r, t, 0).iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(), [(0, 1), (1, 1), (2, 1)]);

    // Renewed three times, 1.2 s apart: 3.6 s held under a 2 s lock. Renewing offset 0
    // renews the partition's lease, so offsets 1 and 2 stay too.
    for epoch in 1..=3 {
        std::thread::sleep(Duration::from_millis(1200));
        let a = ack_at(&mut k, 2, ("g", "m", epoch), (t, 0), vec![(0, 0, vec![RENEW])], true);
        assert_eq!((a.error_code, ack_code(&a), a.acquisition_lock_timeout_ms), (0, 0, 2000), "{a:?}");
        assert_eq!(http_pop(&s, "rn", "g"), Vec::<String>::new(), "a renewed record went to another consumer");
    }
    // A fetch that renews (offset 1, per-offset types) acquires nothing, not even what
    // waits on the other partition.
    produce_n(&mut k, "rn", 1, 2, "y");
    std::thread::sleep(Duration::from_millis(1200));
    let r = fetch_v2(&mut k, ("g", "m", 4), &[(t, 0, vec![(1, 2, vec![RENEW, RENEW])])], 500, 0, true);
    assert_eq!(r.error_code, 0, "{r:?}");
    assert!(r.responses.iter().flat_map(|x| &x.partitions).all(|p| p.acknowledge_error_code == 0), "{r:?}");
    assert!(acquired(&r, t, 1).is_empty(), "a renewing fetch acquired: {r:?}");
    assert_eq!(http_pop(&s, "rn", "g").len(), 2, "the other partition's records were free for the HTTP consumer");

    // Accepted: done, never delivered again, and no delivery count moved.
    std::thread::sleep(Duration::from_millis(1200));
    let a = ack_at(&mut k, 2, ("g", "m", 5), (t, 0), vec![(0, 2, vec![ACCEPT])], false);
    assert_eq!((a.error_code, ack_code(&a)), (0, 0), "{a:?}");
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(http_pop(&s, "rn", "g"), Vec::<String>::new());
    assert_eq!(metric(&s, "baton_kafka_share_renewals_total"), 4.0);
    assert_eq!(metric(&s, "baton_kafka_share_acknowledged_total"), 3.0);
}

#[test]
fn renewals_are_refused_where_they_do_not_apply_and_a_lock_not_renewed_runs_out() {
    let (s, port) = Server::start_kafka(&["--kafka-share-record-lock-ms", "2000"]);
    let mut k = Kafka::connect(port);
    let t = create(&mut k, "rf", 1);
    produce_n(&mut k, "rf", 0, 2, "x");
    share_from_earliest(&mut k, "g");
    heartbeat(&mut k, "g", "m", 0, Some(&["rf"]));
    let r = fetch_v2(&mut k, ("g", "m", 0), &[(t, 0, vec![])], 500, 0, false);
    assert_eq!(acquired(&r, t, 0).len(), 2);
    // Renew where the request does not say it renews (version 1 has no such flag).
    for (version, epoch) in [(1, 1), (2, 2)] {
        let a = ack_at(&mut k, version, ("g", "m", epoch), (t, 0), vec![(0, 0, vec![RENEW])], false);
        assert_eq!(ack_code(&a), INVALID_REQUEST, "v{version}: {a:?}");
    }
    // Renew of an offset this member does not hold.
    let a = ack_at(&mut k, 2, ("g", "m", 3), (t, 0), vec![(5, 5, vec![RENEW])], true);
    assert_eq!(ack_code(&a), INVALID_RECORD_STATE, "{a:?}");
    // An acquire mode that does not exist.
    let r = fetch_v2(&mut k, ("g", "m", 4), &[], 500, 7, false);
    assert_eq!(r.error_code, INVALID_REQUEST, "{r:?}");
    // None of that renewed anything: the lock runs out at 2 s and the HTTP consumer gets
    // both, as second deliveries.
    std::thread::sleep(Duration::from_millis(2600));
    assert_eq!(http_pop(&s, "rf", "g").len(), 2);
    assert_eq!(metric(&s, "baton_kafka_share_renewals_total"), 0.0);
}

#[test]
fn record_limit_never_acquires_past_max_records() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    let t = create(&mut k, "rl", 3);
    for p in 0..3 {
        produce_n(&mut k, "rl", p, 5, "x");
    }
    let count = |r: &ShareFetchResponse| (0..3).map(|p| acquired(r, t, p).len()).sum::<usize>();
    let all = [(t, 0, vec![]), (t, 1, vec![]), (t, 2, vec![])];
    for (group, mode, max, want) in [("strict", 1, 2, 2), ("strict7", 1, 7, 7), ("batchy", 0, 2, 3)] {
        share_from_earliest(&mut k, group);
        heartbeat(&mut k, group, "m", 0, Some(&["rl"]));
        let r = fetch_v2(&mut k, (group, "m", 0), &all, max, mode, false);
        assert_eq!((r.error_code, count(&r)), (0, want), "{group}: mode {mode}, max {max}: {r:?}");
    }
}

/// Record-limit with fewer records allowed than free partitions must not always pick the
/// same partition: one that always has data would starve the others.
#[test]
fn record_limit_takes_turns_over_the_partitions() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    let t = create(&mut k, "turns", 2);
    for p in 0..2 {
        produce_n(&mut k, "turns", p, 5, "x");
    }
    share_from_earliest(&mut k, "g");
    heartbeat(&mut k, "g", "m", 0, Some(&["turns"]));
    let mut acks: Vec<(Uuid, i32, Acks)> = vec![(t, 0, vec![]), (t, 1, vec![])];
    let mut seen = std::collections::BTreeSet::new();
    for epoch in 0..4 {
        let r = fetch_v2(&mut k, ("g", "m", epoch), &acks, 1, 1, false);
        assert_eq!(r.error_code, 0, "{r:?}");
        let got: Vec<(i32, i64)> = (0..2).flat_map(|p| acquired(&r, t, p).into_iter().map(move |x| (p, x.0))).collect();
        assert_eq!(got.len(), 1, "record-limit 1: {got:?}");
        seen.insert(got[0].0);
        // Accept it with the next fetch, which frees its partition again.
        acks = vec![(t, got[0].0, vec![(got[0].1, got[0].1, vec![ACCEPT])])];
    }
    assert_eq!(seen.len(), 2, "only partition {seen:?} was ever served");
}
