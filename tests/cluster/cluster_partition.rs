//! Issue 14, network faults on real processes: three `baton serve` members whose every Raft
//! link (one per direction per pair) runs through a proxy the test can cut (crates/check
//! proxy.rs; each member dials the others through `--raft-routes`). Under steady pushes the
//! leader is isolated, then healed; a follower is cut off (2/1) and healed; then every link
//! flaps for a while, while a consumer pops and acks. Every push answered 201 is there
//! exactly once at the end (acked, or still queued), nothing is there twice, no message whose
//! ack was answered is delivered again, the isolated leader answers nothing ok (what it took
//! is nowhere), and the members end with the same partition files, byte for byte.
//!
//! Only Raft traffic is cut: a member's HTTP listener stays reachable, so a client talking
//! to the isolated leader is what a client on its side of a partition sees.

use crate::common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_check::proxy::{Link, Proxy};
use common::cluster::{leader, view, Cluster};
use common::free_port;
use common::load::{
    client, consumer, drain_following, judge_consumed, lease_time, push_one, same_files, wait_applied, writers,
    Outcomes,
};
use serde_json::{json, Value};

/// One proxy per directed link (from, to), by member id.
struct Links(BTreeMap<(u64, u64), Proxy>);

impl Links {
    async fn start(raft: [u16; 3]) -> Links {
        let mut links = BTreeMap::new();
        for from in 1..=3u64 {
            for to in (1..=3u64).filter(|t| *t != from) {
                let upstream = format!("127.0.0.1:{}", raft[to as usize - 1]).parse().unwrap();
                links.insert((from, to), Proxy::start(upstream).await.unwrap());
            }
        }
        Links(links)
    }

    /// `--raft-routes` for member `from`: every other member through its proxy.
    fn routes(&self, from: u64) -> Vec<String> {
        let r: Vec<String> =
            self.0.iter().filter(|((f, _), _)| *f == from).map(|((_, t), p)| format!("{t}={}", p.addr)).collect();
        vec!["--raft-routes".into(), r.join(",")]
    }

    /// Cuts every link to and from member `id`; the others stay as they are.
    fn isolate(&self, id: u64) {
        for ((f, t), p) in &self.0 {
            if *f == id || *t == id {
                p.set(Link::Cut);
            }
        }
    }

    fn heal(&self) {
        for p in self.0.values() {
            p.set(Link::Open);
        }
    }
}

/// The member other than `not` that says it leads, within 20 s (the isolated one still does).
async fn other_leader(c: &reqwest::Client, cluster: &Cluster, not: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        for (i, m) in cluster.members.iter().enumerate() {
            if i != not && view(c, m).await.is_some_and(|v| v["leading"] == true) {
                return i;
            }
        }
        assert!(Instant::now() < deadline, "the majority elected no leader within 20 s of the partition");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (at most 20 s) for a 201 to a push sent after `since`.
async fn committed_after(out: &Outcomes, since: Instant, what: &str) -> Duration {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !out.lock().iter().any(|(_, sent, ok)| *ok && *sent > since) {
        assert!(Instant::now() < deadline, "no push was answered 201 within 20 s of {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    since.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_and_flapping_links_lose_no_answered_push_and_the_replicas_match() {
    let raft = [free_port(), free_port(), free_port()];
    let links = Links::start(raft).await;
    let flags = ["--raft-commit-timeout-ms", "2000", "--checkpoint-interval-secs", "1"];
    let mut cluster =
        tokio::task::block_in_place(|| Cluster::start_on(&flags, raft, |id| (links.routes(id), Vec::new())));
    let c = client();
    let l = leader(&c, &cluster, Duration::from_secs(20)).await;
    // Short leases: a pop whose ack was lost to a cut holds its partition only this long.
    lease_time(&c, &cluster, l, 2).await;
    let stop = Arc::new(AtomicBool::new(false));
    let out: Outcomes = Arc::default();
    let tasks = writers(&cluster, &stop, &out, 4);
    let acks = consumer(cluster.members.iter().map(|m| m.url("")).collect(), &stop);
    tokio::time::sleep(Duration::from_millis(1500)).await;

    // 1. The leader is cut off from both followers. A push sent to it is never answered
    // 201 (it cannot reach a majority); the other two elect a leader and take writes.
    let old = leader(&c, &cluster, Duration::from_secs(20)).await;
    let cut = Instant::now();
    links.isolate(cluster.members[old].id);
    let stale_url = cluster.members[old].url("/api/v1/push");
    let stale = tokio::spawn(async move {
        let c = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
        let body = json!({"items": [{"queue": "q", "payload": {"id": "stale"}}]});
        match c.post(stale_url).json(&body).send().await {
            Ok(r) => (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null)),
            Err(e) => (0, json!(e.to_string())),
        }
    });
    let new = other_leader(&c, &cluster, old).await;
    let took = committed_after(&out, cut, "isolating the leader").await;
    eprintln!("leader isolated: member {} leads, a write committed {took:?} after the cut", cluster.members[new].id);
    let (status, body) = stale.await.unwrap();
    assert_ne!(status, 201, "the isolated leader answered ok for a push the majority never saw: {body}");
    tokio::time::sleep(Duration::from_secs(1)).await;

    // 2. Healed: the old leader hears the newer term and follows.
    links.heal();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = view(&c, &cluster.members[old]).await;
        if v.as_ref().is_some_and(|v| v["leading"] == false && v["leader"].as_u64().is_some()) {
            break;
        }
        assert!(Instant::now() < deadline, "the old leader never stepped down after the heal: {v:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // 3. A follower cut off (2/1): the leader and the other follower go on committing.
    let l = leader(&c, &cluster, Duration::from_secs(20)).await;
    let f = (0..3).find(|i| *i != l).unwrap();
    let cut = Instant::now();
    links.isolate(cluster.members[f].id);
    let took = committed_after(&out, cut, "cutting a follower off").await;
    eprintln!("follower {} cut off: a write committed {took:?} after the cut", cluster.members[f].id);
    tokio::time::sleep(Duration::from_secs(1)).await;
    links.heal();

    // 4. Every link flaps: for 16 rounds each link is cut with a chance of one in three (a
    // seeded sequence), one round in four slowed by 30 ms instead; rounds last 400 ms, every
    // third 1.2 s (past the election timeout); then all healed.
    let term = |v: Option<Value>| v.and_then(|v| v["term"].as_u64()).unwrap_or(0);
    let before = term(view(&c, &cluster.members[l]).await);
    let mut seed: u64 = 0x5eed_1234;
    for round in 0..16 {
        for p in links.0.values() {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let roll = (seed >> 33) % 3;
            p.set(match (roll, round % 4) {
                (0, _) => Link::Cut,
                (_, 3) => Link::Delay(Duration::from_millis(30)),
                _ => Link::Open,
            });
        }
        tokio::time::sleep(Duration::from_millis(if round % 3 == 2 { 1200 } else { 400 })).await;
    }
    links.heal();
    let healed = Instant::now();
    let took = committed_after(&out, healed, "healing the flapping links").await;
    let after = term(view(&c, &cluster.members[leader(&c, &cluster, Duration::from_secs(20)).await]).await);
    eprintln!("links healed after flapping (terms {before} to {after}): a write committed {took:?} later");
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    let consumed = acks.await.unwrap();
    assert!(consumed.acked.len() > 50, "the consumer made progress");

    let outcomes = out.lock().clone();
    let ok = outcomes.iter().filter(|(_, _, ok)| *ok).count();
    eprintln!("{ok} of {} pushes answered 201", outcomes.len());
    assert!(ok > 100, "the writers made progress");
    // Something a writer sent is answered once the cluster is whole again.
    let urls: Vec<String> = cluster.members.iter().map(|m| m.url("")).collect();
    let mut at = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !push_one(&c, &urls, &mut at, "after").await {
        assert!(Instant::now() < deadline, "the healed cluster took no write");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Leases of pops whose acks were lost run out before the drain.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let got = drain_following(&c, &cluster).await;
    assert!(!got.iter().any(|id| id == "stale"), "the isolated leader's push is there");
    assert!(got.iter().any(|id| id == "after"));
    judge_consumed(&outcomes, &got, &consumed, &["after"]);
    wait_applied(&c, &cluster).await;
    same_files(&mut cluster);
}
