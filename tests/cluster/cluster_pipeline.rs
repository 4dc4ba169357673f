//! Issue 14: the exactly-once pipeline verifier against three `baton serve --node-id`
//! members while their leader is SIGKILLed and started again, several times. The verifier
//! talks to member 3, which never stands for election (`--raft-stand-for-election false`)
//! and so is never the one killed; it forwards every request to whichever member leads
//! (D42). Zero lost, zero duplicated, nothing out of order, no commit after its lease.

use crate::common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::cluster::{leader, wait_known, Cluster};
use common::pipeline::{assert_exactly_once, Run};

const MESSAGES: u64 = 12_000;

#[test]
fn pipeline_is_exactly_once_through_leader_kills() {
    let mut cluster = Cluster::start_each(&[], |id| {
        let args = if id == 3 { vec!["--raft-stand-for-election".into(), "false".into()] } else { Vec::new() };
        (args, Vec::new())
    });
    let rt = tokio::runtime::Runtime::new().unwrap();
    let c = reqwest::Client::builder().timeout(Duration::from_secs(2)).build().unwrap();
    let first = rt.block_on(leader(&c, &cluster, Duration::from_secs(20)));
    assert_ne!(first, 2, "member 3 does not stand for election");
    rt.block_on(wait_known(&c, &cluster, first));

    let t0 = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["check", "pipeline", "--url", &cluster.members[2].url("")])
        .args(["--messages", &MESSAGES.to_string(), "--partitions", "4", "--workers", "4", "--batch", "4"])
        .args(["--quiet", "--timeout", "100"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run baton check pipeline");

    // Kill the leader every ~2 s while the verifier runs: at most 4 kills, bounded by time.
    let mut kills = 0;
    while kills < 4 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(1500));
        if child.try_wait().unwrap().is_some() {
            break;
        }
        let l = rt.block_on(leader(&c, &cluster, Duration::from_secs(20)));
        assert_ne!(l, 2, "member 3 never leads");
        cluster.kill(l);
        kills += 1;
        eprintln!("[{:>5.1} s] kill {kills}: member {} (the leader) SIGKILLed", t0.elapsed().as_secs_f64(), l + 1);
        std::thread::sleep(Duration::from_millis(500));
        cluster.restart(l);
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the verifier did not finish within its timeout");
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = child.wait().unwrap();
    let mut stdout = String::new();
    child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    println!("{stdout}");
    assert!(kills >= 2, "the verifier finished after {kills} leader kills; the test needs at least 2 during it");
    assert_exactly_once(&Run { ok: status.success(), stdout, took: t0.elapsed() }, MESSAGES);
    cluster.stop_all();
}
