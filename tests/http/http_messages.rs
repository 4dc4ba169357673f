//! One message by partition and transaction id (Queen's `admin.get_message` and
//! `admin.delete_message`, issue 16) against the real `baton` binary: each group's state of
//! it; a deleted message is given to no consumer group, also not to one that starts later
//! or after a restart; bad input is refused and changes nothing.

use crate::common;

use common::api::{ns, Api};

/// Everything `group` is given from now on, each acked, until a pop finds nothing.
async fn drain(api: &Api, group: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for _ in 0..20 {
        let (st, v) = api.pop("del", &format!("batch=10&consumerGroup={group}")).await;
        if st == 204 {
            return out;
        }
        assert_eq!(st, 200, "{v}");
        let msgs = v["messages"].as_array().unwrap().clone();
        out.extend(ns(&msgs));
        api.ack_ok(&msgs).await;
    }
    panic!("{group} was still being given messages after 20 pops");
}

async fn delete(api: &Api, pid: &str, txid: &str) -> (u16, serde_json::Value) {
    let r = api.c.delete(api.s.url(&format!("/api/v1/messages/{pid}/{txid}"))).send().await.unwrap();
    common::api::read(r).await
}

#[tokio::test]
async fn a_deleted_message_is_given_to_no_group_and_stays_deleted() {
    let mut api = Api::start();
    api.push_n("del", "Default", "d", 0..5).await;
    let first = api.pop_some("del", "batch=1&consumerGroup=a").await;
    assert_eq!(ns(&first), [0]);
    api.ack_ok(&first).await;
    let pid = first[0]["partitionId"].as_str().unwrap().to_string();

    for (t, o) in [("d-1", 1), ("d-2", 2), ("d-1", 1)] {
        let (st, v) = delete(&api, &pid, t).await;
        assert_eq!((st, &v["deleted"], &v["offset"]), (200, &serde_json::json!(true), &serde_json::json!(o)), "{v}");
    }
    let (st, v) = api.get(&format!("/api/v1/messages/{pid}/d-1")).await;
    assert_eq!((st, v["code"].as_str()), (404, Some("message_not_found")), "{v}");
    let (st, v) = api.get(&format!("/api/v1/messages/{pid}/d-3")).await;
    assert_eq!(st, 200, "the others are still there: {v}");

    // Refusals change nothing.
    let (st, v) = delete(&api, &pid, "d-99").await;
    assert_eq!((st, v["code"].as_str()), (404, Some("message_not_found")), "{v}");
    let (st, v) = delete(&api, "not-a-partition", "d-3").await;
    assert_eq!((st, v["code"].as_str()), (400, Some("invalid_partition_id")), "{v}");
    // The same partition-id form, naming partition 9,999 (the id is the uuid's low bits).
    let other = format!("{}{:012x}", &pid[..24], 9_999);
    let (st, v) = delete(&api, &other, "d-3").await;
    assert_eq!((st, v["code"].as_str()), (404, Some("partition_not_found")), "{v}");

    // The group that read past 0, a group that starts now, and one after a restart.
    assert_eq!(drain(&api, "a").await, [3, 4]);
    assert_eq!(drain(&api, "b").await, [0, 3, 4]);
    api.s.terminate();
    api.s.restart();
    api.c = common::api::client();
    assert_eq!(drain(&api, "c").await, [0, 3, 4]);
    let (st, _) = api.get(&format!("/api/v1/messages/{pid}/d-2")).await;
    assert_eq!(st, 404, "still deleted after the restart");
}

#[tokio::test]
async fn a_message_shows_each_groups_state_of_it() {
    let api = Api::start();
    api.push_n("del", "Default", "s", 0..2).await;
    let leased = api.pop_some("del", "batch=1&consumerGroup=holder").await;
    let done = api.pop_some("del", "batch=2&consumerGroup=reader").await;
    api.ack_ok(&done).await;
    let pid = leased[0]["partitionId"].as_str().unwrap();
    let m = api.ok(&format!("/api/v1/messages/{pid}/s-0")).await;
    let groups = m["consumerGroups"].as_array().unwrap();
    let names: Vec<&str> = groups.iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["holder", "reader"], "{m}");
    assert_eq!((&groups[0]["consumed"], &groups[0]["leased"]), (&serde_json::json!(false), &serde_json::json!(true)));
    assert!(groups[0]["leaseExpiresAt"].is_string(), "{m}");
    assert_eq!((&groups[1]["consumed"], &groups[1]["leased"]), (&serde_json::json!(true), &serde_json::json!(false)));
    // s-1 was not leased by holder's pop of one.
    let m = api.ok(&format!("/api/v1/messages/{pid}/s-1")).await;
    assert_eq!(m["consumerGroups"][0]["leased"], false, "{m}");
}

/// A lookup reads the partition's index off the planner, at most `--max-message-lookups`
/// at once: past that the answer is 429 `too_many_lookups` and nothing else changes; a
/// message far back in a large partition is still found, and pushes go on meanwhile.
#[tokio::test]
async fn lookups_are_bounded_and_find_old_messages() {
    let api = Api::with(&["--max-message-lookups", "1"]);
    for chunk in 0..30 {
        api.push_n("big", "Default", "m", chunk * 10_000..(chunk + 1) * 10_000).await;
    }
    let first = api.pop_some("big", "batch=1&consumerGroup=g").await;
    let pid = first[0]["partitionId"].as_str().unwrap().to_string();
    let m = api.ok(&format!("/api/v1/messages/{pid}/m-5")).await;
    assert_eq!(m["offset"], 5, "300,000 records back: {m}");

    // Lookups of an id nobody pushed each read the whole index; fired together, some
    // find the one permit taken. Bounded: a few rounds until a refusal is seen.
    let mut refused = 0;
    for round in 0..5 {
        let mut asks = tokio::task::JoinSet::new();
        for i in 0..32 {
            let url = api.s.url(&format!("/api/v1/messages/{pid}/absent-{round}-{i}"));
            let c = api.c.clone();
            asks.spawn(async move { common::api::read(c.get(url).send().await.unwrap()).await });
        }
        api.push_n("other", "Default", &format!("o{round}"), 0..10).await;
        for (st, v) in asks.join_all().await {
            match (st, v["code"].as_str()) {
                (404, Some("message_not_found")) => {}
                (429, Some("too_many_lookups")) => refused += 1,
                other => panic!("unexpected answer {other:?}: {v}"),
            }
        }
        if refused > 0 {
            break;
        }
    }
    assert!(refused > 0, "32 concurrent full-index lookups against one permit were never refused");
    assert!(api.metrics().await.contains("code=\"too_many_lookups\""), "the refusals are counted");
    let m = api.ok(&format!("/api/v1/messages/{pid}/m-299999")).await;
    assert_eq!(m["offset"], 299_999, "{m}");
}
