//! A crash (SIGKILL) leaves the log's last batch written but maybe not synced,
//! in the page cache. A restarted node that replays it and answers from it must
//! first make it durable: otherwise a power cut after the restart loses that
//! batch under entries answered since, and the next start finds a gap in the
//! log (a corruption stop) or nothing of them. Runs the real binary under the
//! fault shim's power mirror, which carries the dead process's unsynced bytes
//! over to the next one (D36).

use baton_check::broker::{find_shim, Broker};
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

fn http(port: u16, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let status = out.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, out.split_once("\r\n\r\n").map_or(String::new(), |(_, b)| b.to_string()))
}

fn push(port: u16, payload: &str) -> u16 {
    http(port, "POST", "/api/v1/push", &format!(r#"{{"items":[{{"queue":"q","payload":"{payload}"}}]}}"#)).0
}

/// This build's baton under the fault shim's power mirror, checkpoints an hour apart.
fn broker_with_power_mirror() -> Broker {
    let bin = Path::new(env!("CARGO_BIN_EXE_baton"));
    let shim = find_shim(bin).expect("the fault shim (cargo build --release -p baton-faults)");
    let args = ["--checkpoint-interval-secs", "3600", "--kafka-addr", "127.0.0.1:0"];
    Broker::start_with_shim_power(Some(bin), &args, Some(&shim), true).unwrap()
}

#[test]
fn a_power_cut_after_a_crash_restart_loses_nothing_the_restarted_node_answered() {
    let mut b = broker_with_power_mirror();
    assert_eq!(push(b.port, "before"), 201);
    // The next batch is written, then its fdatasync sleeps: the kill lands in between.
    b.set_faults("fsync slow 5000").unwrap();
    let port = b.port;
    let stuck = std::thread::spawn(move || push(port, "in-flight"));
    std::thread::sleep(Duration::from_millis(1500));
    b.kill9();
    let _ = stuck.join();
    b.restart().unwrap();
    assert_eq!(push(b.port, "after"), 201, "answered by the restarted node");
    b.kill9();
    b.power_cut(7, false).unwrap();
    b.restart().unwrap_or_else(|e| panic!("start-up after the cut refused: {e}"));
    let (st, body) = http(b.port, "GET", "/api/v1/pop/queue/q?batch=10", "");
    assert_eq!(st, 200, "{body}");
    for p in ["before", "after"] {
        assert!(body.contains(p), "{p:?} was answered 201 and is gone after the cut: {body}");
    }
}

/// A new node's first answers, before its first checkpoint (an hour away here), survive
/// any power cut: the directories it created (the data directory, `wal/`) are durable
/// before it answers. (The log-level regression of D37 is in crates/faults power_tests;
/// here the engine's own start-up syncs happen to cover `wal/` too.)
#[test]
fn a_power_cut_before_the_first_checkpoint_keeps_what_a_new_node_answered() {
    let mut b = broker_with_power_mirror();
    for i in 0..5 {
        assert_eq!(push(b.port, &format!("m{i}")), 201);
    }
    let durable = b.durable_index().expect("the durable index in /metrics");
    assert!(durable >= 5, "{durable}");
    b.kill9();
    // Twenty cuts of this moment, every second one torn: each must keep the log to `durable`.
    assert_eq!(b.power_points(20, 99, durable), Ok(20));
}

fn metric(port: u16, name: &str) -> Option<f64> {
    let (_, body) = http(port, "GET", "/metrics/prometheus", "");
    body.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// D81 renames whole spare directories into place as new partitions. Found by CI's power
/// campaign: the cut model moved a renamed directory without what it held, so a checkpoint
/// that marked bytes in a new partition's segment found no file after the cut. Every cut of
/// this moment must keep what the checkpoint marked and the log the broker said was durable.
#[test]
fn a_power_cut_after_new_partitions_took_spare_directories_keeps_their_segments() {
    let bin = Path::new(env!("CARGO_BIN_EXE_baton"));
    let shim = find_shim(bin).expect("the fault shim (cargo build --release -p baton-faults)");
    let args = ["--checkpoint-interval-secs", "1", "--kafka-addr", "127.0.0.1:0"];
    let mut b = Broker::start_with_shim_power(Some(bin), &args, Some(&shim), true).unwrap();
    // The pool is made at start: wait until its first directories are ready.
    let t0 = std::time::Instant::now();
    let spares = b.data_dir().join("partitions/.spare-parts");
    while std::fs::read_dir(&spares).map_or(0, |d| d.count()) < 12 {
        assert!(t0.elapsed() < Duration::from_secs(20), "the spare directory pool never filled");
        std::thread::sleep(Duration::from_millis(50));
    }
    let seen = metric(b.port, "baton_checkpoints_total").unwrap_or(0.0);
    for q in 0..8 {
        let body = format!(r#"{{"items":[{{"queue":"new{q}","payload":"m{q}"}}]}}"#);
        assert_eq!(http(b.port, "POST", "/api/v1/push", &body).0, 201);
    }
    let taken = metric(b.port, "baton_partition_spare_dirs_taken_total").unwrap_or(0.0);
    assert!(taken >= 8.0, "the new partitions did not take spare directories ({taken})");
    // A checkpoint (written only when something changed) marks bytes in the renamed
    // directories' segments.
    let t0 = std::time::Instant::now();
    while metric(b.port, "baton_checkpoints_total").unwrap_or(0.0) < seen + 1.0 {
        assert!(t0.elapsed() < Duration::from_secs(20), "no checkpoint after the pushes");
        std::thread::sleep(Duration::from_millis(100));
    }
    let durable = b.durable_index().expect("the durable index in /metrics");
    b.kill9();
    assert_eq!(b.power_points(24, 81, durable), Ok(24));
}
