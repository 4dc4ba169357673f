//! `baton bench --quick` end to end: the driver starts its own Baton (this
//! very binary), produces, consumes, runs a short open-loop step, checks the
//! counts, and prints the table.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// `baton bench ARGS --no-progress --json-out JSON`; asserts it succeeded, returns (stdout, stderr).
fn bench(args: &[&str], json: &Path) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("bench")
        .args(args)
        .args(["--no-progress", "--json-out"])
        .arg(json)
        .output()
        .expect("run baton bench");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "exit {}\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    (stdout, stderr)
}

#[test]
fn bench_quick_runs_and_prints_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("results.jsonl");
    let t0 = Instant::now();
    let (stdout, _) = bench(&["--quick"], &json);
    assert!(t0.elapsed() < Duration::from_secs(60), "took {:?}", t0.elapsed());
    assert!(stdout.contains("| workload | system |"), "{stdout}");
    assert!(stdout.contains("| produce | baton | 8 | 256 | 1 |"), "{stdout}");
    assert!(stdout.contains("| produce | baton | 4 | 256 | 100 |"), "{stdout}");
    assert!(stdout.contains("| consume | baton | 4 | 256 | 100 |"), "{stdout}");
    assert!(stdout.contains("| fixed | baton | 8 | 256 | 1 |"), "{stdout}");
    assert!(stdout.contains("fdatasync"), "{stdout}");
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&json).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[2]["workload"], "consume");
    assert_eq!(lines[2]["msgs"], 12_000);
    assert!(lines[0]["rate"].as_f64().unwrap() > 0.0);
    assert_eq!(lines[3]["held"], true);
}

/// `baton bench pipeline` over the real HTTP path (hyper's connection-level
/// client), open loop with a warm-up: every input committed exactly
/// once and in order, the warm-up's steps left out of the latencies.
#[test]
fn bench_pipeline_against_a_real_server_verifies_and_leaves_out_the_warm_up() {
    let s = common::Server::start_with(&["--kafka-addr", "127.0.0.1:0"]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("pipeline.jsonl");
    let args = format!(
        "pipeline --url http://127.0.0.1:{} --partitions 4 --workers 8 --batch 1 --count 600 \
         --pipeline-rate 400 --warmup-secs 0.5",
        s.port
    );
    let (stdout, stderr) = bench(&args.split_whitespace().collect::<Vec<_>>(), &json);
    assert!(stderr.contains("exactly-once ok") || stdout.contains("exactly-once ok"), "{stdout}\n{stderr}");
    let line: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&json).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(line["msgs"], 600, "{line}");
    let p = &line["pipeline"];
    assert_eq!(p["transactions"], 600, "{line}");
    // About 200 of the 600 steps were due in the first 0.5 s at 400/s.
    let timed = line["commit"]["count"].as_u64().unwrap_or(0);
    // Fewer than all: the warm-up is left out (a loaded machine that falls behind the
    // schedule times more of them, never all).
    assert!((300..600).contains(&timed), "commits timed after the warm-up: {timed}: {line}");
}
