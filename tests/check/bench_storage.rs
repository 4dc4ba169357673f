//! `baton bench storage <scenario>` end to end at tiny sizes: each scenario
//! starts this very binary as its server(s), and its JSON report must hold
//! sane numbers (RSS > 0, the stored count equal to what was pushed, restart
//! times > 0, checkpoints seen). No speed is asserted: speed is what the
//! scenarios report, in docs/benchmarks/storage.md.

use serde_json::Value;
use std::process::Command;

/// `baton bench storage ARGS --json --no-progress`: (exit ok, the JSON object or Null, stderr).
fn storage(args: &[&str]) -> (bool, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["bench", "storage"])
        .args(args)
        .args(["--json", "--no-progress"])
        .output()
        .expect("run baton bench storage");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (out.status.success(), v, format!("stdout:\n{stdout}\nstderr:\n{stderr}"))
}

fn ok(args: &[&str]) -> (Value, String) {
    let (good, v, text) = storage(args);
    assert!(good, "{args:?} failed\n{text}");
    assert!(v.is_object(), "{args:?}: no JSON object\n{text}");
    (v, text)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn fill_samples_every_tenth_and_stores_them_all_then_restart_reuses_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("filled");
    let d = data.to_str().unwrap();
    let (v, text) = ok(&["fill", "--count", "3000", "--partitions", "3", "--batch", "50", "--data", d]);
    assert!(text.contains("| stored messages | RSS MB |"), "{text}");
    assert_eq!(v["pushed"], 3000, "{v}");
    assert_eq!(v["depth"], 3000, "the server's own count: {v}");
    assert_eq!(v["errors"], 0, "{v}");
    let samples = v["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 11, "{v}");
    let stored: Vec<u64> = samples.iter().map(|s| s["stored"].as_u64().unwrap()).collect();
    assert_eq!(stored, (0..=10).map(|t| 300 * t).collect::<Vec<_>>());
    assert!(samples.iter().all(|s| f(&s["rss_bytes"]) > 1e6 && f(&s["disk_bytes"]) > 0.0), "{v}");
    // 3,000 payloads of 256 bytes are on disk.
    assert!(f(&samples[10]["disk_bytes"]) > f(&samples[0]["disk_bytes"]) + 3000.0 * 256.0, "{v}");
    assert!(v["rss_slope_bytes_per_msg"].is_number(), "{v}");
    assert!(data.join("checkpoint.bin").exists(), "the given directory is kept, stopped cleanly");

    // A filled directory is not filled again (its counts would be wrong): a precise refusal.
    let (good, _, text) = storage(&["fill", "--count", "100", "--data", d]);
    assert!(!good && text.contains("not empty"), "{text}");

    let (v, _) = ok(&["restart", "--data", d, "--runs", "1"]);
    assert!(v["filled"].is_null(), "nothing is filled with --data: {v}");
    let all = v["all"].as_array().unwrap();
    assert_eq!(all.len(), 2, "{v}");
    assert_eq!((all[0]["how"].as_str(), all[1]["how"].as_str()), (Some("sigterm"), Some("sigkill")));
    for r in all {
        assert!(f(&r["health_secs"]) > 0.0 && f(&r["pop_secs"]) >= f(&r["health_secs"]), "{v}");
        assert!(f(&r["stop_secs"]) > 0.0 && f(&r["rss_bytes"]) > 1e6, "{v}");
    }
    assert!(f(&v["data_file_bytes"]) > 3000.0 * 256.0, "{v}");
    assert!(data.exists(), "a given directory is never deleted");
}

#[test]
fn restart_fills_a_directory_of_its_own_without_data() {
    let (v, text) = ok(&["restart", "--count", "500", "--partitions", "2", "--runs", "2"]);
    assert!(text.contains("| sigkill |"), "{text}");
    assert_eq!(v["filled"], 500, "{v}");
    assert_eq!(v["all"].as_array().unwrap().len(), 4, "{v}");
    for how in ["sigterm", "sigkill"] {
        let m = &v["median"][how];
        assert!(f(&m["pop_secs"]) > 0.0 && f(&m["pop_secs"]) < 60.0, "{v}");
    }
}

#[test]
fn checkpoint_sees_checkpoints_and_what_they_wrote() {
    let args = [
        "checkpoint",
        "--rate",
        "1000",
        "--duration",
        "3.5",
        "--checkpoint-interval-secs",
        "1",
        "--workers",
        "8",
        "--consumers",
        "2",
    ];
    let (v, text) = ok(&args);
    assert!(text.contains("checkpoint.bin MB"), "{text}");
    assert_eq!(v["offered"], 3500, "{v}");
    assert_eq!(v["pushed"], 3500, "{v}");
    assert_eq!(v["popped"], 3500, "every message pushed is popped and acked: {v}");
    assert_eq!((v["push_errors"].as_u64(), v["pop_errors"].as_u64()), (Some(0), Some(0)), "{v}");
    let ck = v["checkpoints"].as_array().unwrap();
    assert!(ck.len() >= 2, "a checkpoint a second for 3.5 s: {v}");
    for k in ck {
        assert!(f(&k["checkpoint_bin_bytes"]) > 0.0, "{v}");
        // checkpoint.bin is renamed over at each checkpoint: it is among the files written.
        assert!(f(&k["state_written_bytes"]) >= f(&k["checkpoint_bin_bytes"]), "{v}");
        assert!(f(&k["rss_bytes"]) > 1e6, "{v}");
        // A checkpoint taken while the load ran saw the log grow; one after the last push
        // (the drain of a slow run outlasts the load) may see none.
        if f(&k["at_secs"]) <= 3.5 {
            assert!(f(&k["wal_bytes"]) > 0.0, "{v}");
        }
    }
    assert!(ck.iter().filter(|k| f(&k["wal_bytes"]) > 0.0).count() >= 2, "{v}");
}

#[test]
fn partitions_creates_them_all_and_compares_with_the_baseline() {
    let args = ["partitions", "--partitions", "300", "--baseline-partitions", "20", "--duration", "1", "--rate", "200"];
    let (v, text) = ok(&args);
    assert!(text.contains("p99 ratio 300 / 20"), "{text}");
    assert_eq!(v["errors"], 0, "{v}");
    for (k, parts) in [("baseline", 20), ("run", 300)] {
        let r = &v[k];
        assert_eq!(r["partitions"], parts, "{v}");
        assert_eq!(r["create_errors"], 0, "{v}");
        // 200 cycles/s for 1 s; a slow machine may fall behind, but not to nothing.
        let cycles = r["cycles"].as_u64().unwrap();
        assert!((100..=200).contains(&cycles), "{k}: {cycles} cycles: {v}");
        assert_eq!(r["push"]["count"], cycles, "{v}");
        assert!(f(&r["pop"]["p99_us"]) > 0.0 && f(&r["push"]["p99_us"]) > 0.0, "{v}");
        assert!(f(&r["rss_created_bytes"]) > 1e6, "{v}");
    }
    assert!(f(&v["p99_ratio"]["push"]) > 0.0, "{v}");
}

#[test]
fn a_server_that_does_not_start_fails_the_run_and_bad_sizes_are_refused() {
    // `false serve ...` exits at once: the run failed, with a reason.
    let (good, _, text) = storage(&["fill", "--exe", "/bin/false", "--count", "100"]);
    assert!(!good && text.contains("exited"), "{text}");
    let (good, _, text) = storage(&["fill", "--count", "0"]);
    assert!(!good && text.contains("--count must be at least 10"), "{text}");
    let (good, _, text) = storage(&["partitions", "--duration", "0"]);
    assert!(!good && text.contains("--duration"), "{text}");
}

/// A server that refuses requests (here: every payload is over its limit) makes
/// the run fail: the errors are counted and shown, the first one is named, no p99
/// ratio is claimed from cycles that did not happen, and the run exits non-zero
/// while still printing its report. (This used to be a server out of descriptors;
/// since D29 and the descriptor budget a server no longer runs out.)
#[test]
fn partitions_reports_errors_of_a_server_that_refuses_requests_and_fails() {
    let (good, v, text) = storage(&[
        "partitions",
        "--partitions",
        "40",
        "--baseline-partitions",
        "10",
        "--duration",
        "1",
        "--rate",
        "50",
        "--max-errors",
        "20",
        "--server-arg=--max-payload-bytes",
        "--server-arg=8",
    ]);
    assert!(!good, "errors must fail the run\n{text}");
    assert!(v.is_object(), "a report is printed: {text}");
    assert!(v["errors"].as_u64().unwrap() > 0, "{v}");
    assert!(v["baseline"]["create_errors"].as_u64().unwrap() > 0, "{v}");
    assert!(v["run"]["first_error"].as_str().unwrap_or("").contains("413"), "{v}");
    assert_eq!(v["target"]["errors_met"], false, "{v}");
    assert!(v["target"]["ratio_met"] != true, "no ratio is claimed from failed cycles: {v}");
    assert!(text.contains("requests failed"), "{text}");
}
