//! Issue 14 item 6 (D43): members compact their Raft log behind snapshots of their engine's
//! checkpoint, and a member whose disk is wiped comes back from a snapshot (checkpoint plus
//! partition files, streamed) and then the log. Three real `baton serve --node-id`
//! processes: the log is purged on every member; the wiped member installs the leader's
//! snapshot; afterwards all three hold the same partition files byte for byte; and after a
//! restart of the whole cluster (each member starting from its snapshot) every message
//! pushed and not consumed is delivered exactly once.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::cluster::{drain, field, leader, push, tail, wait_all, wait_known, Cluster};
use serde_json::Value;

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wiped_member_comes_back_from_a_snapshot_and_every_log_is_compacted() {
    let mut cluster = Cluster::start(&["--checkpoint-interval-secs", "1", "--raft-keep-entries", "5"]);
    let c = client();
    let l = leader(&c, &cluster, Duration::from_secs(20)).await;
    wait_known(&c, &cluster, l).await;
    let url = cluster.members[l].url("");
    let mut pushed = push(&c, &url, "a", 60).await;
    // Some are consumed: cursors and acks are part of the state a snapshot carries.
    let consumed = {
        let r = c.get(format!("{url}/api/v1/pop/queue/q?batch=150&wait=false&autoAck=true")).send().await.unwrap();
        let v: Value = r.json().await.unwrap();
        v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["data"]["id"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert!(!consumed.is_empty());

    // Every member snapshots its checkpoint and purges the log behind it.
    wait_all(&c, &cluster, "purgedIndex", 20, "every member purged its Raft log").await;

    // A follower (never member 1, which would start a new cluster on an empty disk) is
    // killed and its disk wiped; the others go on and compact past everything it had.
    let f = (0..3).rev().find(|i| *i != l).unwrap();
    cluster.kill(f);
    std::fs::remove_dir_all(&cluster.members[f].dir).unwrap();
    pushed.extend(push(&c, &url, "b", 40).await);
    let purged = field(&c, &cluster, l, "purgedIndex").await;
    assert!(purged > 20, "the leader purged its log ({purged})");

    cluster.restart(f);
    let last = field(&c, &cluster, l, "lastLogIndex").await;
    wait_all(&c, &cluster, "lastApplied", last, "the wiped member applied the whole log").await;
    assert!(
        field(&c, &cluster, f, "snapshotIndex").await > 0,
        "the wiped member holds a snapshot:\n{}",
        cluster.members[f].log()
    );
    assert!(
        cluster.members[f].log().contains("state installed from a snapshot"),
        "the wiped member installed the leader's snapshot:\n{}",
        cluster.members[f].log()
    );
    // It goes on applying after the install.
    pushed.extend(push(&c, &cluster.members[f].url(""), "c", 10).await);
    let last = field(&c, &cluster, l, "lastLogIndex").await;
    wait_all(&c, &cluster, "lastApplied", last, "every member applied the whole log").await;

    // The same committed log on every member: the same partition files, byte for byte.
    common::load::same_files(&mut cluster);

    // Each member starts again from its own snapshot (the wiped one from the one it
    // received); every message pushed and not consumed is there once.
    for i in 0..3 {
        cluster.restart(i);
    }
    let l = leader(&c, &cluster, Duration::from_secs(20)).await;
    let got = drain(&c, &cluster.members[l].url("")).await;
    let mut seen = BTreeSet::new();
    for id in &got {
        assert!(seen.insert(id.as_str()), "{id} delivered twice");
    }
    let consumed: BTreeSet<&str> = consumed.iter().map(String::as_str).collect();
    let want: BTreeSet<&str> = pushed.iter().map(String::as_str).filter(|id| !consumed.contains(id)).collect();
    assert_eq!(seen, want, "after the restart, exactly the messages pushed and not consumed");
}

/// A voter that is down must not hold the leader's log: the leader goes on purging behind
/// its snapshots while the voter is away (its disk would otherwise grow without bound), and
/// the voter, back, catches up from a snapshot and then the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_voter_does_not_hold_back_the_leaders_purge() {
    down_voter(true).await
}

/// The same with the voter stopped (SIGSTOP): its connections take requests and never
/// answer, rather than being refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_voter_does_not_hold_back_the_leaders_purge() {
    down_voter(false).await
}

async fn down_voter(kill: bool) {
    let mut cluster = Cluster::start(&["--checkpoint-interval-secs", "1", "--raft-keep-entries", "5"]);
    let c = client();
    let l = leader(&c, &cluster, Duration::from_secs(20)).await;
    wait_known(&c, &cluster, l).await;
    let url = cluster.members[l].url("");
    let mut pushed = push(&c, &url, "a", 20).await;
    let f = (0..3).rev().find(|i| *i != l).unwrap();
    if kill {
        cluster.kill(f);
    } else {
        cluster.pause(f);
    }
    let down_at = field(&c, &cluster, l, "lastLogIndex").await;
    // Writes go on without a pause the whole time (the log always has entries the voter
    // lacks), well past what it has and past the entries the leader keeps.
    let busy = {
        let (c, url) = (c.clone(), url.clone());
        tokio::spawn(async move {
            let mut ids = Vec::new();
            for round in 0..400 {
                ids.extend(push(&c, &url, &format!("b{round}-"), 4).await);
            }
            ids
        })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let purged = field(&c, &cluster, l, "purgedIndex").await;
        if purged > down_at + 20 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the leader's purge stayed at {purged} behind a voter down since {down_at}:\n{}",
            tail(&cluster.members[l].log())
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    pushed.extend(busy.await.unwrap());

    if kill {
        cluster.restart(f);
    } else {
        cluster.resume(f);
    }
    let last = field(&c, &cluster, l, "lastLogIndex").await;
    wait_all(&c, &cluster, "lastApplied", last, "the voter that was down applied the whole log").await;
    // What it lacked was purged: it came back through a snapshot.
    assert!(
        cluster.members[f].log().contains("state installed from a snapshot"),
        "the voter that was down installed the leader's snapshot:\n{}",
        tail(&cluster.members[f].log())
    );
    common::load::same_files(&mut cluster);
    for i in 0..3 {
        cluster.restart(i);
    }
    let l = leader(&c, &cluster, Duration::from_secs(20)).await;
    let got = drain(&c, &cluster.members[l].url("")).await;
    let got: BTreeSet<&str> = got.iter().map(String::as_str).collect();
    let want: BTreeSet<&str> = pushed.iter().map(String::as_str).collect();
    assert_eq!(got, want, "every message pushed, once");
}
