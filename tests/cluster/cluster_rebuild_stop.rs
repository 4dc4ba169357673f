//! A member told to stop after losing its term rebuilds first (D45's last paragraph). CI
//! once caught a leader whose shutdown cut its rebuild off, so its partition files stopped
//! at its checkpoint while the others held the whole log. These make the two windows
//! deterministic with a failpoint that sleeps 3 s (`BATON_FAILPOINT_PAUSE`): the old
//! leader loses its term to a SIGSTOP and is SIGTERMed either after it saw the loss but
//! before its rebuild began (`member.step_down`: the stop finds a rebuild owed), or inside
//! the rebuild (`member.rebuild`).

use crate::common;

use common::cluster::{field, leader, partition_files, push, wait_all, wait_known, Cluster};
use std::time::{Duration, Instant};

#[test]
fn a_member_stopped_inside_its_rebuild_finishes_it_and_keeps_the_same_files() {
    stopped_at("member.rebuild");
}

#[test]
fn a_member_stopped_before_the_rebuild_it_owes_does_it_and_keeps_the_same_files() {
    stopped_at("member.step_down");
}

fn stopped_at(point: &str) {
    let env = vec![("BATON_FAILPOINT_PAUSE".to_string(), format!("{point}:3000"))];
    // No checkpoint but the final one: a rebuild cut off would leave the files at the start.
    let mut cluster = Cluster::start_each(&["--checkpoint-interval-secs", "3600"], |_| (Vec::new(), env.clone()));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let c = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let l = rt.block_on(leader(&c, &cluster, Duration::from_secs(20)));
    rt.block_on(wait_known(&c, &cluster, l));
    rt.block_on(push(&c, &cluster.members[l].url(""), "before", 10));
    let last = rt.block_on(field(&c, &cluster, l, "lastLogIndex"));
    rt.block_on(wait_all(&c, &cluster, "lastApplied", last, "all three applied the pushes"));

    // The leader loses its term while stopped; resumed, it steps down and rebuilds.
    cluster.pause(l);
    let deadline = Instant::now() + Duration::from_secs(30);
    let l2 = loop {
        let n = rt.block_on(leader(&c, &cluster, Duration::from_secs(30)));
        if n != l {
            break n;
        }
        assert!(Instant::now() < deadline, "no other member took over from the stopped leader");
    };
    cluster.resume(l);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mark = format!("failpoint {point}: pausing 3000 ms");
    while !cluster.members[l].log().contains(&mark) {
        assert!(Instant::now() < deadline, "the old leader never reached {point}:\n{}", cluster.members[l].log());
        std::thread::sleep(Duration::from_millis(10));
    }
    // Inside the failpoint's 3 s: told to stop.
    let took = cluster.terminate(l);
    let log = cluster.members[l].log();
    let began = log.rfind(&mark).unwrap();
    assert!(
        log[began..].contains("engine rebuilt from its checkpoint and the committed log"),
        "the stop cut the rebuild off ({took:?}):\n{log}"
    );
    assert!(!log.contains("did not stop within"), "{log}");

    // The others apply the same entries; every member holds the same partition files.
    let last = rt.block_on(field(&c, &cluster, l2, "lastLogIndex"));
    let o = (0..3).find(|i| *i != l && *i != l2).unwrap();
    rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(20);
        while field(&c, &cluster, o, "lastApplied").await < last {
            assert!(Instant::now() < deadline, "the third member did not apply the last entry");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    cluster.stop_all();
    let files: Vec<_> = cluster.members.iter().map(|m| partition_files(&m.dir)).collect();
    assert!(!files[0].is_empty());
    for (i, f) in files.iter().enumerate().skip(1) {
        assert!(f == &files[0], "member {} holds other partition files than member 1", i + 1);
    }
}
