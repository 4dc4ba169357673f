//! Issue 14 item 6 (D44): a dead member is replaced while the cluster takes writes. Real
//! `baton serve --node-id` processes: member 3 is killed; bad membership requests are
//! refused and change nothing (a member that never answers is taken out again after the
//! join timeout); member 4, started on an empty disk after the log was purged, is added with
//! `baton cluster add` through a follower (forwarded to the leader), catches up from a
//! snapshot and becomes a voter; member 3 is removed; then a member other than 4 is killed
//! and the two left (one of them 4) still commit. Pushes run throughout and none is answered
//! anything but queued (a frame numbered across a membership entry would be answered
//! "unknown"); every message pushed is delivered once. And the leader removing itself.

use crate::common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::cluster::{drain, field, leader, push, wait_all, wait_known, Cluster};
use serde_json::{json, Value};

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap()
}

async fn ask(c: &reqwest::Client, req: reqwest::RequestBuilder) -> (u16, Value) {
    let _ = c;
    let r = req.send().await.unwrap();
    let st = r.status().as_u16();
    (st, r.json().await.unwrap_or(Value::Null))
}

fn voters(v: &Value) -> BTreeSet<u64> {
    v["voters"].as_array().into_iter().flatten().filter_map(|m| m["id"].as_u64()).collect()
}

fn voters_of_view(v: &Value) -> BTreeSet<u64> {
    v["members"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["voter"] == true)
        .filter_map(|m| m["id"].as_u64())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_member_is_replaced_from_a_snapshot_while_writes_go_on() {
    let mut cluster = Cluster::start(&[
        "--checkpoint-interval-secs",
        "1",
        "--raft-keep-entries",
        "5",
        "--raft-join-timeout-secs",
        "8",
    ]);
    let c = client();
    let l = leader(&c, &cluster, Duration::from_secs(20)).await;
    wait_known(&c, &cluster, l).await;
    let lurl = cluster.members[l].url("");
    let mut pushed = push(&c, &lurl, "a", 40).await;
    wait_all(&c, &cluster, "purgedIndex", 20, "every member purged its Raft log").await;

    // Member 3 dies (never the leader here: the leader is killed later).
    let dead = (0..3).rev().find(|i| *i != l).unwrap();
    let dead_id = cluster.members[dead].id;
    cluster.kill(dead);

    // Bad requests: refused, the membership unchanged.
    let members = format!("{lurl}/cluster/members");
    let raft_of_leader = format!("127.0.0.1:{}", cluster.members[l].raft);
    for (body, st, code) in [
        (json!({"id": 7, "raftAddr": "not an address"}), 400, "bad_raft_addr"),
        (json!({"id": cluster.members[l].id, "raftAddr": "127.0.0.1:1"}), 409, "member_exists"),
        (json!({"id": 9, "raftAddr": raft_of_leader}), 409, "raft_addr_in_use"),
        (json!({"id": 9}), 400, "invalid_request"),
        (json!({"id": 9, "raftAddr": "127.0.0.1:1", "voter": true}), 400, "invalid_request"),
    ] {
        let (s, v) = ask(&c, c.post(&members).json(&body)).await;
        assert_eq!((s, v["code"].as_str().unwrap_or("")), (st, code), "{body}: {v}");
    }
    let (s, v) = ask(&c, c.delete(format!("{members}/77"))).await;
    assert_eq!((s, v["code"].as_str()), (404, Some("member_not_found")), "{v}");
    let (s, v) = ask(&c, c.delete(format!("{members}/x"))).await;
    assert_eq!((s, v["code"].as_str()), (400, Some("bad_member_id")), "{v}");
    // A member nobody runs never catches up: 504 after the join timeout, and taken out again.
    let nobody = common::free_port();
    let t0 = Instant::now();
    let (s, v) = ask(&c, c.post(&members).json(&json!({"id": 8, "raftAddr": format!("127.0.0.1:{nobody}")}))).await;
    assert_eq!((s, v["code"].as_str()), (504, Some("member_not_caught_up")), "{v}");
    assert!(t0.elapsed() < Duration::from_secs(30), "answered after {:?}", t0.elapsed());
    let view = common::cluster::view(&c, &cluster.members[l]).await.unwrap();
    let ids: BTreeSet<u64> = view["members"].as_array().unwrap().iter().filter_map(|m| m["id"].as_u64()).collect();
    assert_eq!(ids, BTreeSet::from([1, 2, 3]), "the member that never answered was taken out: {view}");

    // Pushes go on while member 4 joins and member 3 leaves.
    let writer = {
        let (c, url) = (c.clone(), lurl.clone());
        tokio::spawn(async move { push(&c, &url, "during", 60).await })
    };
    let new = cluster.start_new(4);
    let follower = (0..3).find(|i| *i != l && *i != dead).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["cluster", "--url", &cluster.members[follower].url(""), "--timeout", "60", "add", "--id", "4"])
        .args(["--raft-addr", &format!("127.0.0.1:{}", cluster.members[new].raft)])
        .output()
        .unwrap();
    assert!(out.status.success(), "baton cluster add: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(voters(&v), BTreeSet::from([1, 2, 3, 4]), "{v}");
    let (s, v) = ask(&c, c.delete(format!("{members}/{dead_id}"))).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(voters(&v), BTreeSet::from([1, 2, 3, 4]).into_iter().filter(|i| *i != dead_id).collect(), "{v}");
    pushed.extend(writer.await.unwrap());
    assert!(
        cluster.members[new].log().contains("state installed from a snapshot"),
        "the new member started from the leader's snapshot:\n{}",
        cluster.members[new].log()
    );
    let last = field(&c, &cluster, l, "lastLogIndex").await;
    wait_all(&c, &cluster, "lastApplied", last, "the new member applied the whole log").await;
    let v = common::cluster::view(&c, &cluster.members[new]).await.unwrap();
    assert_eq!(voters_of_view(&v).len(), 3, "the new member knows the membership: {v}");

    // The two left after one more kill, one of them the new member, still commit.
    let gone = if cluster.members[l].id == 4 { (0..3).find(|i| *i != dead).unwrap() } else { l };
    cluster.kill(gone);
    let l2 = leader(&c, &cluster, Duration::from_secs(20)).await;
    pushed.extend(push(&c, &cluster.members[l2].url(""), "after", 10).await);
    let got = drain(&c, &cluster.members[l2].url("")).await;
    let mut seen = BTreeSet::new();
    for id in &got {
        assert!(seen.insert(id.as_str()), "{id} delivered twice");
    }
    let want: BTreeSet<&str> = pushed.iter().map(String::as_str).collect();
    assert_eq!(seen, want, "every message pushed, once");
}

/// The leader takes itself out under four writers: the change is answered, the two left
/// elect one of themselves and commit, every 201 is there once, and their partition files
/// are the same byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_removes_itself_and_the_two_left_go_on() {
    use common::load::{judge, writers, Outcomes};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let mut cluster = Cluster::start(&["--checkpoint-interval-secs", "1"]);
    let c = client();
    let l = leader(&c, &cluster, Duration::from_secs(20)).await;
    wait_known(&c, &cluster, l).await;
    let stop = Arc::new(AtomicBool::new(false));
    let out: Outcomes = Arc::default();
    let tasks = writers(&cluster, &stop, &out, 4);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let me = cluster.members[l].id;
    let (s, v) = ask(&c, c.delete(cluster.members[l].url(&format!("/cluster/members/{me}")))).await;
    assert_eq!(s, 200, "{v}");
    assert!(!voters(&v).contains(&me) && voters(&v).len() == 2, "{v}");
    let left: Vec<usize> = (0..3).filter(|i| *i != l).collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    let l2 = loop {
        let mut found = None;
        for i in &left {
            if common::cluster::view(&c, &cluster.members[*i]).await.is_some_and(|v| v["leading"] == true) {
                found = Some(*i);
            }
        }
        if let Some(i) = found {
            break i;
        }
        assert!(Instant::now() < deadline, "neither member left leads within 20 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    let outcomes = out.lock().clone();
    let after = outcomes.iter().filter(|(_, _, ok)| *ok).count();
    assert!(after > 100, "the writers made progress: {after}");
    let got = drain(&c, &cluster.members[l2].url("")).await;
    judge(&outcomes, &got);
    let last = field(&c, &cluster, l2, "lastLogIndex").await;
    for i in &left {
        let deadline = Instant::now() + Duration::from_secs(20);
        while field(&c, &cluster, *i, "lastApplied").await < last {
            assert!(Instant::now() < deadline, "member {} did not apply through {last}", i + 1);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    cluster.stop_all();
    let files: Vec<_> = left.iter().map(|i| common::cluster::partition_files(&cluster.members[*i].dir)).collect();
    assert!(!files[0].is_empty());
    assert!(files[0] == files[1], "the two members left hold different partition files");
}

/// A member is added while the old leader is stopped (SIGSTOP) past the election timeout:
/// the two others elect one of themselves and add member 4 (3 of the 4 new voters are up);
/// the old leader wakes to a newer term and a new membership, follows, forwards; every
/// message pushed is delivered once, and the four members' partition files are the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_is_added_while_the_old_leader_is_paused() {
    let mut cluster = Cluster::start(&["--checkpoint-interval-secs", "1"]);
    let c = client();
    let l = leader(&c, &cluster, Duration::from_secs(20)).await;
    wait_known(&c, &cluster, l).await;
    let mut pushed = push(&c, &cluster.members[l].url(""), "a", 10).await;
    cluster.pause(l);
    let l2 = leader(&c, &cluster, Duration::from_secs(20)).await;
    assert_ne!(l2, l);
    let new = cluster.start_new(4);
    let body = json!({"id": 4, "raftAddr": format!("127.0.0.1:{}", cluster.members[new].raft)});
    let (s, v) = ask(&c, c.post(cluster.members[l2].url("/cluster/members")).json(&body)).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(voters(&v), BTreeSet::from([1, 2, 3, 4]), "{v}");
    pushed.extend(push(&c, &cluster.members[l2].url(""), "b", 10).await);
    cluster.resume(l);
    // The old leader follows the new one and forwards to it.
    let deadline = Instant::now() + Duration::from_secs(20);
    let want = cluster.members[l2].id;
    while common::cluster::view(&c, &cluster.members[l]).await.is_none_or(|v| v["leader"] != want) {
        assert!(Instant::now() < deadline, "the old leader did not follow member {want} within 20 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    pushed.extend(push(&c, &cluster.members[l].url(""), "c", 10).await);
    let last = field(&c, &cluster, l2, "lastLogIndex").await;
    wait_all(&c, &cluster, "lastApplied", last, "all four applied the whole log").await;
    let v = common::cluster::view(&c, &cluster.members[l]).await.unwrap();
    assert_eq!(voters_of_view(&v), BTreeSet::from([1, 2, 3, 4]), "the old leader knows the membership: {v}");
    let got = drain(&c, &cluster.members[l2].url("")).await;
    let mut seen = BTreeSet::new();
    for id in &got {
        assert!(seen.insert(id.as_str()), "{id} delivered twice");
    }
    assert_eq!(seen, pushed.iter().map(String::as_str).collect::<BTreeSet<_>>(), "every message pushed, once");
    cluster.stop_all();
    let files: Vec<_> = cluster.members.iter().map(|m| common::cluster::partition_files(&m.dir)).collect();
    assert!(!files[0].is_empty());
    for (i, f) in files.iter().enumerate().skip(1) {
        assert!(f == &files[0], "member {} holds other partition files than member 1", i + 1);
    }
}
