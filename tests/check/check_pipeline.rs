//! `baton check pipeline` end to end: the verifier starts its own Baton (this
//! very binary), runs the exactly-once pipeline, and must find nothing wrong;
//! then again while the broker is SIGKILLed and restarted three times and
//! workers are killed mid-transaction.

use crate::common;

use common::pipeline::{assert_exactly_once, count, Run};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Both runs spawn a broker and load it; on 2 cores they go one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn check_pipeline(extra: &[&str]) -> Run {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["check", "pipeline", "--spawn", "--messages", "2000", "--partitions", "4", "--workers", "4", "--quiet"])
        .args(extra)
        .output()
        .expect("run baton check pipeline");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Shown with --nocapture, and on failure.
    println!("{stdout}");
    eprintln!("{stderr}");
    Run { ok: out.status.success(), stdout, took: t0.elapsed() }
}

#[test]
fn pipeline_is_exactly_once() {
    let r = check_pipeline(&["--timeout", "45"]);
    assert_exactly_once(&r, 2000);
    let out = &r.stdout;
    // Nothing went wrong, so nothing was rolled back or left unknown.
    assert_eq!(count(out, "rolled back"), 0, "{out}");
    assert_eq!(count(out, "unknown outcomes"), 0, "{out}");
    assert_eq!(count(out, "committed txns"), count(out, "transactions"), "{out}");
    assert!(r.took < Duration::from_secs(60), "took {:?}", r.took);
}

#[test]
fn pipeline_is_exactly_once_through_broker_kills_and_worker_kills() {
    let r = check_pipeline(&["--kill-broker", "3", "--kill-workers", "--timeout", "45"]);
    assert_exactly_once(&r, 2000);
    let out = &r.stdout;
    assert!(out.contains("faults                broker kills 3,"), "{out}");
    assert_eq!(out.matches("  kill ").count(), 3, "{out}");
    // Each worker fault happened at least once; the batch held past its
    // lease was refused (rejected_ack), never committed (stale_commit is 0 above).
    let faults = out.lines().find(|l| l.starts_with("faults ")).unwrap();
    for f in ["batches abandoned 0", "held past lease 0", "commits cut 0"] {
        assert!(!faults.contains(f), "{faults}");
    }
    assert!(r.took < Duration::from_secs(90), "took {:?}", r.took);
}

#[test]
fn a_commit_held_past_its_lease_is_refused() {
    // Worker faults only: with no broker restart to renew leases (I5), the
    // batch held past its lease must be rolled back with rejected_ack (I4).
    let r = check_pipeline(&["--kill-workers", "--timeout", "45"]);
    assert_exactly_once(&r, 2000);
    let out = &r.stdout;
    let faults = out.lines().find(|l| l.starts_with("faults ")).unwrap();
    assert!(faults.contains("broker kills 0,"), "{faults}");
    assert!(!faults.contains("held past lease 0"), "{faults}");
    let rb = out.lines().find(|l| l.starts_with("rolled back ")).unwrap();
    assert!(rb.contains("rejected_ack"), "{rb}");
    assert!(r.took < Duration::from_secs(60), "took {:?}", r.took);
}
