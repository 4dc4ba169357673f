//! Issue 14 item 5, the far-ahead clock (D72): a member whose wall clock runs hours ahead of
//! the leader's takes over, and state time goes on from the old leader's clock, not its own.
//! Before D72 the new leader stamped its first entry with its own clock, so state time jumped
//! forward by the skew: a dedup window of an hour had run out at once (the same
//! `transactionId` stored twice) and a two-minute delay had passed before anyone could pop.

use crate::common;

use std::time::{Duration, Instant};

use common::cluster::{leader, Cluster};
use common::load::{client, wait_applied};
use serde_json::{json, Value};

/// Pushes `items` through whichever member answers, until one answers 201 (at most 20 s);
/// the answer's per-item statuses.
async fn push_answered(c: &reqwest::Client, urls: &[String], items: Value) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut at = 0;
    loop {
        if let Ok(r) = c.post(format!("{}/api/v1/push", urls[at])).json(&json!({ "items": items })).send().await {
            if r.status().as_u16() == 201 {
                let v: Value = r.json().await.unwrap();
                return v.as_array().unwrap().iter().map(|a| a["status"].as_str().unwrap().to_string()).collect();
            }
        }
        at = (at + 1) % urls.len();
        assert!(Instant::now() < deadline, "no member took the push within 20 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Queue `later`'s two-minute-delayed message is not ready yet.
async fn not_ready(c: &reqwest::Client, member: &str) {
    let r = c.get(format!("{member}/api/v1/pop/queue/later?batch=1&wait=false")).send().await.unwrap();
    let status = r.status().as_u16();
    let body = r.text().await.unwrap();
    assert_eq!(status, 204, "a message delayed by two minutes was ready seconds later: {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_leader_two_hours_ahead_goes_on_from_the_old_leaders_time() {
    let ctl = tempfile::tempdir().unwrap();
    let mut cluster = Cluster::start_skewed(&[], ctl.path(), 1, &[2, 3], 7_200_000);
    let c = client();
    let l = leader(&c, &cluster, Duration::from_secs(20)).await;
    assert_eq!(cluster.members[l].id, 1, "member 1 (shortest election timeout, unskewed) leads first");
    let urls: Vec<String> = cluster.members.iter().map(|m| m.url("")).collect();
    let r = c
        .post(cluster.members[l].url("/api/v1/configure"))
        .json(&json!({"queue": "later", "options": {"delayedProcessing": 120}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let first = push_answered(
        &c,
        &urls,
        json!([
            {"queue": "q", "transactionId": "once", "payload": {"id": "one"}},
            {"queue": "later", "payload": {"id": "in two minutes"}},
        ]),
    )
    .await;
    assert_eq!(first, ["queued", "queued"]);
    wait_applied(&c, &cluster).await;
    // A few heartbeats after the followers applied it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    cluster.kill(l);

    let again =
        push_answered(&c, &urls, json!([{"queue": "q", "transactionId": "once", "payload": {"id": "two"}}])).await;
    let l2 = leader(&c, &cluster, Duration::from_secs(20)).await;
    assert_ne!(cluster.members[l2].id, 1);
    let log = cluster.members[l2].log();
    assert!(log.contains("it follows the leader's (D72)"), "{}", common::cluster::tail(&log));
    let metrics = c.get(cluster.members[l2].url("/metrics/prometheus")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("baton_clock_follows_total 1\n"), "{metrics}");
    assert!(metrics.contains("baton_clock_follow_beyond_ms 1000\n"));
    assert_eq!(
        again,
        ["duplicate"],
        "the hour-long dedup window ran out at the failover: state time jumped with the new leader's clock"
    );
    not_ready(&c, &cluster.members[l2].url("")).await;

    // Both members two hours ahead stop at once and start again on this boot (member 1 stays
    // down): whichever leads goes on from the clock it followed, which it recorded.
    let (a, b) = ((l2 + 1) % 3, (l2 + 2) % 3);
    let other = if cluster.members[a].id == 1 { b } else { a };
    cluster.kill(other);
    cluster.kill(l2);
    cluster.restart(l2);
    cluster.restart(other);
    let again =
        push_answered(&c, &urls, json!([{"queue": "q", "transactionId": "once", "payload": {"id": "three"}}])).await;
    assert_eq!(again, ["duplicate"], "a restart on the same boot went back to the wall clock two hours ahead");
    let l3 = leader(&c, &cluster, Duration::from_secs(20)).await;
    not_ready(&c, &cluster.members[l3].url("")).await;
    // Time still runs: a message pushed now with a 1 s delay is ready within seconds.
    let r = c
        .post(cluster.members[l2].url("/api/v1/configure"))
        .json(&json!({"queue": "soon", "options": {"delayedProcessing": 1}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(push_answered(&c, &urls, json!([{"queue": "soon", "payload": {"id": "s"}}])).await, ["queued"]);
    let pushed = Instant::now();
    loop {
        let r = c.get(cluster.members[l2].url("/api/v1/pop/queue/soon?batch=1&wait=false")).send().await.unwrap();
        if r.status() == 200 {
            break;
        }
        assert!(pushed.elapsed() < Duration::from_secs(10), "a 1 s delay had not passed 10 s later");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(pushed.elapsed() >= Duration::from_millis(900), "a 1 s delay passed after {:?}", pushed.elapsed());
}
