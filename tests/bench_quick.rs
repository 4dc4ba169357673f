//! `baton bench --quick` end to end: the driver starts its own Baton (this
//! very binary), produces, consumes, runs a short open-loop step, checks the
//! counts, and prints the table.

use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn bench_quick_runs_and_prints_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("results.jsonl");
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["bench", "--quick", "--no-progress", "--json-out"])
        .arg(&json)
        .output()
        .expect("run baton bench --quick");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {}\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
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
