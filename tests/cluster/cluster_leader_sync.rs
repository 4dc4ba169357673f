//! A leader replicates its entries while its own sync is under way (D76), and answers a write
//! only once its own copy is durable too.
//!
//! openraft 0.9's core waited for each of the leader's own log writes to sync before it sent
//! the entry to anyone, so a commit cost the leader's sync and then a follower's, one after
//! the other. With the leader's fsync slowed to 1.5 s by the fault shim, the followers now
//! hold a new entry long before the leader's sync ends; before the patch they had nothing
//! until it did. The answer comes after the leader's own sync all the same: the engine applies
//! only what its own log holds durably (pinned on its own by the log store's
//! `an_entry_is_applied_only_once_this_log_holds_it_durably`; here the committed index's save,
//! which also waits for the slow sync, would hold the answer back too).

use crate::common;

use std::time::{Duration, Instant};

use common::cluster::{leader, shim, view, wait_known, Cluster, Member};
use common::load::client;
use serde_json::json;

const SLOW_MS: u64 = 1500;

async fn last_log_index(c: &reqwest::Client, m: &Member) -> u64 {
    view(c, m).await.and_then(|v| v["lastLogIndex"].as_u64()).unwrap_or(0)
}

/// Waits until the shim in the process reading `ctl` applied generation `gen`.
async fn in_force(ctl: &std::path::Path, gen: u64) {
    let seen = ctl.with_extension("ctl.seen");
    let want = format!("gen {gen}\n");
    for _ in 0..500 {
        if std::fs::read_to_string(&seen).is_ok_and(|s| s.starts_with(&want)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the fault shim never applied generation {gen} ({})", seen.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_hold_an_entry_before_the_leaders_slow_sync_ends() {
    let ctl = tempfile::tempdir().unwrap();
    let lib = shim();
    // Member 1 elects first; long election timeouts on all: a core stalled on a slow sync
    // (the committed index's save still waits) must not start an election in this test.
    let cluster = Cluster::start_each(&[], |id| {
        let file = ctl.path().join(format!("n{id}.ctl"));
        std::fs::write(&file, "gen 1\n").unwrap();
        let (min, max) = if id == 1 { ("150", "200") } else { ("4000", "5000") };
        let args = ["--raft-election-min-ms", min, "--raft-election-max-ms", max];
        (
            args.iter().map(|s| s.to_string()).collect(),
            vec![
                ("LD_PRELOAD".to_string(), lib.display().to_string()),
                ("BATON_FAULTS_CTL".to_string(), file.display().to_string()),
            ],
        )
    });
    let c = client();
    let l = leader(&c, &cluster, Duration::from_secs(20)).await;
    assert_eq!(cluster.members[l].id, 1, "member 1 (shortest election timeout) leads");
    wait_known(&c, &cluster, l).await;
    let url = cluster.members[l].url("/api/v1/push");
    let body = |id: &str| json!({"items": [{"queue": "q", "payload": {"id": id}}]});
    assert_eq!(c.post(&url).json(&body("warm")).send().await.unwrap().status(), 201);

    let leader_ctl = ctl.path().join("n1.ctl");
    std::fs::write(&leader_ctl, format!("gen 2\nfsync slow {SLOW_MS}\n")).unwrap();
    in_force(&leader_ctl, 2).await;
    // Every sync already waiting on the leader ends before the push is sent.
    tokio::time::sleep(Duration::from_millis(SLOW_MS + 300)).await;
    let followers: Vec<usize> = (0..3).filter(|i| *i != l).collect();
    let mut before = Vec::new();
    for f in &followers {
        before.push(last_log_index(&c, &cluster.members[*f]).await);
    }

    let sent = Instant::now();
    let push = {
        let (c, url, b) = (c.clone(), url.clone(), body("slow"));
        tokio::spawn(async move {
            let r = c.post(&url).json(&b).send().await.unwrap();
            (r.status().as_u16(), sent.elapsed())
        })
    };
    // Both followers hold the new entry well before the leader's sync can have ended.
    let mut held_at = None;
    while sent.elapsed() < Duration::from_millis(SLOW_MS * 2) {
        let mut all = true;
        for (f, b) in followers.iter().zip(&before) {
            all &= last_log_index(&c, &cluster.members[*f]).await > *b;
        }
        if all {
            held_at = Some(sent.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let held_at = held_at.expect("the followers never got the entry");
    let (status, answered) = push.await.unwrap();
    assert!(
        held_at < Duration::from_millis(SLOW_MS * 2 / 3),
        "the followers got the entry {held_at:?} after the push, with the leader's sync taking {SLOW_MS} ms: \
         the leader replicated only after its own sync"
    );
    assert_eq!(status, 201);
    assert!(
        answered >= Duration::from_millis(SLOW_MS - 200),
        "answered {answered:?} after the push, before the leader's own {SLOW_MS} ms sync could end"
    );
    std::fs::write(&leader_ctl, "gen 3\n").unwrap();
    in_force(&leader_ctl, 3).await;
    // The cluster goes on, with the same leader.
    assert_eq!(c.post(&url).json(&body("after")).send().await.unwrap().status(), 201);
    assert_eq!(leader(&c, &cluster, Duration::from_secs(5)).await, l);
}
