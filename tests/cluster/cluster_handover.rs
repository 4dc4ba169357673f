//! Issue 14, SIGTERM on the leader (D45): three real members under four writers; the leader
//! is SIGTERMed three times (and started again). Each time another member leads in the very
//! next term, sooner than any member's election timeout could have made it (so it was
//! handed over, not elected after a silence), every push answered 201 is there exactly
//! once, and the members' partition files end up the same.

use crate::common;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cluster::{leader, view, Cluster};
use common::load::{client, finish_and_judge, wait_applied, writers, Outcomes};

/// The member other than `was` that says it leads (its index and view), polled from the
/// SIGTERM at `t0` for at most 30 s.
async fn led_after(c: &reqwest::Client, cluster: &Cluster, was: usize, t0: Instant) -> (usize, serde_json::Value) {
    loop {
        for (i, m) in cluster.members.iter().enumerate().filter(|(i, _)| *i != was) {
            if let Some(v) = view(c, m).await.filter(|v| v["leading"] == true) {
                return (i, v);
            }
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "nobody leads 30 s after the SIGTERM");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Elections by timeout start no sooner than this after a leader falls silent.
const ELECTION_MIN_MS: u64 = 2500;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_leader_hands_over_and_loses_nothing() {
    let min = ELECTION_MIN_MS.to_string();
    let max = (ELECTION_MIN_MS + 500).to_string();
    let mut cluster = Cluster::start(&[
        "--checkpoint-interval-secs",
        "1",
        "--raft-election-min-ms",
        &min,
        "--raft-election-max-ms",
        &max,
    ]);
    let c = client();
    leader(&c, &cluster, Duration::from_secs(30)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let out: Outcomes = Arc::default();
    let tasks = writers(&cluster, &stop, &out, 4);
    let mut took = Vec::new();
    for round in 0..3 {
        // Past the leader's own lease on its vote (the election maximum), which a hand-over waits out.
        tokio::time::sleep(Duration::from_millis(ELECTION_MIN_MS + 1000)).await;
        let l = leader(&c, &cluster, Duration::from_secs(30)).await;
        let term = view(&c, &cluster.members[l]).await.unwrap()["term"].as_u64().unwrap();
        let old = cluster.members[l].id;
        let handed = |c: &Cluster| c.members[l].log().matches("leadership handed over").count();
        let before = handed(&cluster);
        let t0 = Instant::now();
        cluster.members[l].signal(libc::SIGTERM);
        let (_, next) = led_after(&c, &cluster, l, t0).await;
        let d = t0.elapsed();
        took.push(d);
        tokio::task::block_in_place(|| cluster.terminate(l));
        assert_eq!(next["term"].as_u64(), Some(term + 1), "round {round}: elected in the next term: {next}");
        assert!(
            d < Duration::from_millis(ELECTION_MIN_MS),
            "round {round}: a member led {d:?} after the SIGTERM: an election timeout, not a hand-over\n{}",
            cluster.members[l].log()
        );
        assert_eq!(handed(&cluster), before + 1, "round {round}: member {old}'s log:\n{}", cluster.members[l].log());
        cluster.restart(l);
    }
    eprintln!("from SIGTERM to another member leading: {took:?}");
    finish_and_judge(&c, &mut cluster, &stop, tasks, &out).await;
}

/// A member started with `--raft-stand-for-election false` never leads, not even when a
/// SIGTERMed leader asks it to (openraft's elect trigger ignores the runtime setting, so
/// before this it stood and led). Member 1 (the fastest election) leads first; member 2
/// never stands and is the first caught-up voter the hand-over looks at; it refuses, and
/// member 3 is asked next and leads within a second (its own election timeout is 2.5 s, so
/// only a hand-over explains that).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_over_skips_a_member_that_never_stands() {
    let min = ELECTION_MIN_MS.to_string();
    let max = (ELECTION_MIN_MS + 500).to_string();
    let mut cluster = Cluster::start_each(&[], |id| {
        let args: Vec<&str> = match id {
            1 => vec!["--raft-election-min-ms", "150", "--raft-election-max-ms", "200"],
            2 => vec![
                "--raft-election-min-ms",
                &min,
                "--raft-election-max-ms",
                &max,
                "--raft-stand-for-election",
                "false",
            ],
            _ => vec!["--raft-election-min-ms", &min, "--raft-election-max-ms", &max],
        };
        (args.iter().map(|s| s.to_string()).collect(), Vec::new())
    });
    let c = client();
    let l = leader(&c, &cluster, Duration::from_secs(30)).await;
    assert_eq!(cluster.members[l].id, 1, "member 1 (the shortest election timeout) leads first");
    // Past member 1's own lease on its vote, which a hand-over waits out; everyone caught up.
    tokio::time::sleep(Duration::from_millis(ELECTION_MIN_MS + 1000)).await;
    wait_applied(&c, &cluster).await;
    let t0 = Instant::now();
    cluster.members[0].signal(libc::SIGTERM);
    let (next, _) = led_after(&c, &cluster, 0, t0).await;
    let took = t0.elapsed();
    eprintln!("member {} leads {took:?} after the SIGTERM", cluster.members[next].id);
    assert_eq!(cluster.members[next].id, 3, "the member that never stands for election leads");
    assert!(took < Duration::from_millis(ELECTION_MIN_MS), "led {took:?} after the SIGTERM: elected, not handed over");
    assert!(
        cluster.members[0].log().contains("would not stand"),
        "member 1 did not hear member 2 refuse:\n{}",
        common::cluster::tail(&cluster.members[0].log())
    );
    cluster.terminate(0);
    // Writes go on through the member that never leads.
    let urls = vec![cluster.members[1].url("")];
    let mut at = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !common::load::push_one(&c, &urls, &mut at, "after").await {
        assert!(Instant::now() < deadline, "no write through member 2 after the hand-over");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `baton_raft_leases_let_go_total` of member `m`.
async fn leases_let_go(c: &reqwest::Client, m: &common::cluster::Member) -> u64 {
    let r = c.get(m.url("/metrics/prometheus")).send().await.unwrap().text().await.unwrap();
    r.lines().find_map(|x| x.strip_prefix("baton_raft_leases_let_go_total ")).unwrap().parse().unwrap()
}

/// Five voters (D73): the followers other than the one asked to stand would refuse its vote
/// while their leader lease runs (openraft 0.9 has no transfer_leader), so before D73 a
/// SIGTERMed leader of four or more voters did not hand over and the others elected after
/// their timeout. Now the leader stops its appends and tells every other voter to let its
/// lease go and hold its own candidacy, and the caught-up voter it asks leads in the next
/// term, long before any election timeout, under four writers: every 201 is there once and
/// the five members' partition files end up the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_of_five_voters_hands_over() {
    let min = ELECTION_MIN_MS.to_string();
    let max = (ELECTION_MIN_MS + 500).to_string();
    let mut cluster = Cluster::start(&["--raft-election-min-ms", &min, "--raft-election-max-ms", &max]);
    let c = client();
    let l = leader(&c, &cluster, Duration::from_secs(30)).await;
    for id in [4, 5] {
        let new = cluster.start_new(id);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(["cluster", "--url", &cluster.members[l].url(""), "--timeout", "60", "add", "--id", &id.to_string()])
            .args(["--raft-addr", &format!("127.0.0.1:{}", cluster.members[new].raft)])
            .output()
            .unwrap();
        assert!(out.status.success(), "baton cluster add: {}", String::from_utf8_lossy(&out.stderr));
    }
    let v = view(&c, &cluster.members[l]).await.unwrap();
    let voters = v["members"].as_array().unwrap().iter().filter(|m| m["voter"] == true).count();
    assert_eq!(voters, 5, "{v}");
    let stop = Arc::new(AtomicBool::new(false));
    let out: Outcomes = Arc::default();
    let tasks = writers(&cluster, &stop, &out, 4);
    for round in 0..2 {
        // Past the leader's own lease on its vote, which a hand-over waits out.
        tokio::time::sleep(Duration::from_millis(ELECTION_MIN_MS + 1000)).await;
        wait_applied(&c, &cluster).await;
        let l = leader(&c, &cluster, Duration::from_secs(30)).await;
        let term = view(&c, &cluster.members[l]).await.unwrap()["term"].as_u64().unwrap();
        let mut before = Vec::new();
        for m in &cluster.members {
            before.push(leases_let_go(&c, m).await);
        }
        let t0 = Instant::now();
        cluster.members[l].signal(libc::SIGTERM);
        let (next, v) = led_after(&c, &cluster, l, t0).await;
        let took = t0.elapsed();
        eprintln!("round {round}: member {} leads {took:?} after the SIGTERM", cluster.members[next].id);
        tokio::task::block_in_place(|| cluster.terminate(l));
        assert_eq!(v["term"].as_u64(), Some(term + 1), "round {round}: elected in the next term: {v}");
        assert!(
            took < Duration::from_millis(ELECTION_MIN_MS),
            "round {round}: led {took:?} after the SIGTERM: elected, not handed over\n{}",
            common::cluster::tail(&cluster.members[l].log())
        );
        assert!(cluster.members[l].log().contains("leadership handed over"), "round {round}");
        // The three voters besides the old leader and the new one let their leases go.
        let mut let_go = 0;
        for (i, m) in cluster.members.iter().enumerate().filter(|(i, _)| *i != l && *i != next) {
            let_go += u64::from(leases_let_go(&c, m).await > before[i]);
        }
        assert_eq!(let_go, 3, "round {round}: every other voter let its lease go");
        cluster.restart(l);
    }
    finish_and_judge(&c, &mut cluster, &stop, tasks, &out).await;
}
