//! `baton check history` through the real binary: the exit code is the verdict
//! (0 OK, 1 VIOLATION, 2 UNKNOWN, 3 unreadable), the human report quotes the
//! lines that prove a violation, `--json` is one JSON object, and a generated
//! history (`--generate N --out FILE`) is judged OK. No server: the checker
//! only reads a file.

use crate::common;

use common::cli::baton;
use serde_json::Value;
use std::path::Path;

fn history(dir: &Path, name: &str, lines: &[&str]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p.to_str().unwrap().to_owned()
}

const QUEUE: &str = r#"{"type":"queue","queue":"q","lease_ms":1000,"dead_letters":false}"#;
const PUSH: &str =
    r#"{"type":"invoke","id":1,"t":0,"process":1,"f":"push","queue":"q","messages":[{"partition":"0","txid":"m0"}]}"#;
const PUSH_OK: &str = r#"{"type":"ok","id":1,"t":10,"process":1,"statuses":["queued"]}"#;
const WAITING: &str = r#"{"type":"final_waiting","queue":"q","partition":"0","from":0,"offsets":[0]}"#;

#[test]
fn the_exit_code_is_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let log = r#"{"type":"final_log","queue":"q","partition":"0","entries":[{"offset":0,"txid":"m0"}]}"#;
    let ok = history(dir.path(), "ok.jsonl", &[QUEUE, PUSH, PUSH_OK, log, WAITING]);
    let r = baton(&["check", "history", "--check", &ok]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.starts_with("verdict                     OK"), "{}", r.stdout);

    let empty_log = r#"{"type":"final_log","queue":"q","partition":"0","entries":[]}"#;
    let lost = history(dir.path(), "lost.jsonl", &[QUEUE, PUSH, PUSH_OK, empty_log]);
    let r = baton(&["check", "history", "--check", &lost]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("LOST at q/0 txid m0"), "{}", r.stdout);
    // The excerpt quotes lines 2 and 3: the push and its ok.
    assert!(r.stdout.contains(&format!("       2: {PUSH}")), "{}", r.stdout);
    assert!(r.stdout.contains(&format!("       3: {PUSH_OK}")), "{}", r.stdout);

    let unread = history(dir.path(), "unread.jsonl", &[QUEUE, PUSH, PUSH_OK]);
    let r = baton(&["check", "history", "--check", &unread]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("UNKNOWN no_final_log"), "{}", r.stdout);

    let broken = history(dir.path(), "broken.jsonl", &[QUEUE, PUSH_OK]);
    let r = baton(&["check", "history", "--check", &broken]);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("line 2") && r.stderr.contains("not open"), "{}", r.stderr);
}

#[test]
fn json_is_one_object_with_the_excerpts() {
    let dir = tempfile::tempdir().unwrap();
    let empty_log = r#"{"type":"final_log","queue":"q","partition":"0","entries":[]}"#;
    let lost = history(dir.path(), "lost.jsonl", &[QUEUE, PUSH, PUSH_OK, empty_log]);
    let r = baton(&["check", "history", "--check", &lost, "--json"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let v: Value = serde_json::from_str(r.stdout.trim()).expect("one JSON object");
    assert_eq!(v["status"], "VIOLATION");
    assert_eq!(v["violation_counts"]["lost"], 1);
    assert_eq!(v["violations"][0]["kind"], "lost");
    assert_eq!(v["violations"][0]["lines"], serde_json::json!([2, 3]));
    assert_eq!(v["excerpts"]["2"], PUSH);
}

#[test]
fn a_generated_history_is_ok() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("h.jsonl");
    let out = out.to_str().unwrap();
    let r = baton(&["check", "history", "--generate", "5000", "--out", out, "--seed", "9"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = baton(&["check", "history", "--check", out]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // The 5000 pushed messages and the transactions' outputs.
    let line = r.stdout.lines().find(|l| l.starts_with("messages ")).expect("a messages line");
    let n: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(n > 5000, "{line}");
    assert!(r.stdout.contains("messages/s"), "{}", r.stdout);
}

/// Histories a recorder run exposed a checker mistake with, each judged right now.
#[test]
fn kept_histories_are_judged_right() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/histories");
    // An extend of 1 s, 12 ms into a 2 s lease, ended it early: the next pop of the
    // group, 1 s later, is not a double lease (it was flagged when the checker
    // took extends to only lengthen a lease). Its logs were not kept: UNKNOWN.
    let p = dir.join("extend-shortens-lease.jsonl");
    let r = baton(&["check", "history", "--check", p.to_str().unwrap(), "--json"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    let v: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["violation_counts"]["double_lease"].as_u64().unwrap_or(0), 0, "{}", r.stdout);
}
