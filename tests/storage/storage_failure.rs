//! Fail-stop on storage errors (I3): when a WAL write fails (here: the disk
//! is full), Baton answers 503 with the reason, takes no more writes, and
//! never claims success for something it did not make durable. Every push
//! that was answered 201 before the failure is present after a restart on a
//! healthy disk.
//!
//! With the WAL preallocated (the default, D16) the log's own writes cannot
//! run out of space inside a segment; a full disk then shows as the
//! appender's partition-file write failing (D18), or as the next segment not
//! being preallocated in time, whichever comes first. Either is the same
//! fail-stop: 503 with the reason, latched, and recovery on a healthy disk
//! rewrites the partition files from the log.
//!
//! Needs root to mount a tiny tmpfs; where that is not allowed the test says
//! so and returns.

use crate::common;

use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Baton, Mount};

/// `baton serve` on a fresh port over `dir`, healthy; stderr goes to `log`
/// (off the tiny disk). A port taken between `free_port` and the bind is
/// retried on another one; any other failure to start names the log's tail.
async fn spawn(dir: &std::path::Path, log: &std::path::Path, prealloc: bool) -> (Baton, u16) {
    for _ in 0..5 {
        let port = common::free_port();
        let err = std::fs::OpenOptions::new().create(true).append(true).open(log).expect("open server log");
        let child = Baton(
            Command::new(env!("CARGO_BIN_EXE_baton"))
                .args(["serve", "--http-addr", &format!("127.0.0.1:{port}"), "--kafka-addr", "127.0.0.1:0"])
                .arg("--data-dir")
                .arg(dir)
                .args(["--wal-segment-mb", "1", "--partition-segment-mb", "1", "--checkpoint-interval-secs", "3600"])
                .args(["--wal-preallocate", if prealloc { "true" } else { "false" }])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(err)
                .spawn()
                .expect("spawn baton"),
        );
        match wait_health(child, port).await {
            Ok(child) => return (child, port),
            Err(()) => {
                let text = std::fs::read_to_string(log).unwrap_or_default();
                if !text.contains("Address already in use") {
                    panic!("baton did not become healthy; its log:\n{text}");
                }
            }
        }
    }
    panic!("five fresh ports were all taken before baton could bind them");
}

/// Healthy within 60 s (a loaded 2-core CI machine), or Err once it exited.
async fn wait_health(mut child: Baton, port: u16) -> Result<Baton, ()> {
    let c = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(r) = c.get(format!("http://127.0.0.1:{port}/health")).send().await {
            if r.status() == 200 {
                return Ok(child);
            }
        }
        if child.0.try_wait().ok().flatten().is_some() {
            return Err(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(())
}

#[tokio::test]
async fn full_disk_latches_503_and_loses_no_answered_push() {
    full_disk(false, 20_000).await;
}

#[tokio::test]
async fn full_disk_with_a_preallocated_wal_latches_503_and_loses_no_answered_push() {
    full_disk(true, 20_000).await;
}

/// Pushes of 5 × 500 B: each frame's partition writes are small enough for the
/// planner to make them itself (D78), so the disk fills up on that path.
#[tokio::test]
async fn full_disk_under_small_pushes_written_by_the_planner_latches_503_and_loses_nothing() {
    full_disk(true, 500).await;
}

async fn full_disk(prealloc: bool, payload_bytes: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("small");
    let Some(_m) = tiny_disk(&mnt, "3m") else { return };
    let data = mnt.join("data");
    let (child, port) = spawn(&data, &tmp.path().join("first.log"), prealloc).await;
    let c = reqwest::Client::new();
    let payload = "x".repeat(payload_bytes);
    let Filled { answered, refused, failure } = push_until_failure(&c, port, "m", &payload, 10_000).await;
    let failure = failure.expect("a 3 MiB disk filled up and the push failed");
    assert!(failure["error"].as_str().unwrap_or("").contains("No space"), "the failure says why: {failure}");
    assert!(!answered.is_empty(), "some pushes succeeded before the disk filled");
    // Latched: health says failed, and later writes are refused even if they are small.
    let h = c.get(format!("http://127.0.0.1:{port}/health")).send().await.unwrap();
    assert_eq!(h.status(), 503);
    assert_eq!(failure["code"], "outcome_unknown", "{failure}");
    let r = c
        .post(format!("http://127.0.0.1:{port}/api/v1/push"))
        .json(&json!({"items": [{"queue": "q", "payload": 1}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    let m: Value = c.get(format!("http://127.0.0.1:{port}/metrics")).send().await.unwrap().json().await.unwrap();
    let inline = m["metrics"]["baton_planner_frames_written_inline_total"].as_f64().expect("the inline counter");
    if payload_bytes * 5 < 4 << 10 {
        assert!(inline > 0.0, "small pushes were written by the planner (D78): {inline}");
    } else {
        assert_eq!(inline, 0.0, "pushes past 4 KiB go to the appender thread");
    }
    drop(child);

    // Restart from a copy on a healthy disk: every answered push is there, once.
    let copy = tmp.path().join("copy");
    let st = Command::new("cp").arg("-a").arg(&data).arg(&copy).status().unwrap();
    assert!(st.success());
    let (child, port) = spawn(&copy, &tmp.path().join("second.log"), prealloc).await;
    let seen = read_back(&c, port, &payload).await;
    drop(child);
    for id in &answered {
        assert_eq!(seen.get(id), Some(&1), "answered push {id} must be present exactly once");
    }
    assert!(seen.values().all(|n| *n == 1), "no message is stored twice");
    for id in &refused {
        assert!(!seen.contains_key(id), "refused push {id} must not be stored");
    }
}

/// Only the partition files' disk fills up (a 1 MiB tmpfs under `partitions/`), under
/// pushes small enough for the planner to write them itself (D78). The frame whose
/// bytes could not be written is not answered success, the engine latches, and every
/// push answered before it is readable from the running server: no reader is given a
/// span whose bytes are not in its file (I3).
#[tokio::test]
async fn a_full_partition_disk_under_small_pushes_answers_no_push_whose_bytes_are_not_written() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let Some(_m) = tiny_disk(&data.join("partitions"), "1m") else { return };
    let (child, port) = spawn(&data, &tmp.path().join("server.log"), true).await;
    let c = reqwest::Client::new();
    let payload = "y".repeat(500);
    let Filled { answered, failure, .. } = push_until_failure(&c, port, "s", &payload, 5_000).await;
    let failure = failure.expect("a 1 MiB partition disk filled up and a push failed");
    let text = failure.to_string();
    assert!(text.contains("partition file write failed") && text.contains("No space"), "{failure}");
    assert!(!answered.is_empty(), "some pushes succeeded before the disk filled");
    let m: Value = c.get(format!("http://127.0.0.1:{port}/metrics")).send().await.unwrap().json().await.unwrap();
    let inline = m["metrics"]["baton_planner_frames_written_inline_total"].as_f64().expect("the inline counter");
    assert!(inline > 0.0, "small pushes were written by the planner (D78): {inline}");
    let h = c.get(format!("http://127.0.0.1:{port}/health")).send().await.unwrap();
    assert_eq!(h.status(), 503, "latched after the partition write failed");

    // Every answered push reads back whole from the running server.
    let seen = read_back(&c, port, &payload).await;
    drop(child);
    for id in &answered {
        assert_eq!(seen.get(id), Some(&1), "answered push {id} is readable from the running server, once");
    }
}

/// What pushing until the disk filled up gave: the ids answered `queued`, those answered
/// `failed`, and the first failure (an item's, or a 503's body).
struct Filled {
    answered: Vec<String>,
    refused: Vec<String>,
    failure: Option<Value>,
}

/// Pushes of five messages of `payload` (ids `<prefix><i>-<j>`) to queue `q`, at most
/// `max` of them, until one fails.
async fn push_until_failure(c: &reqwest::Client, port: u16, prefix: &str, payload: &str, max: usize) -> Filled {
    let mut f = Filled { answered: Vec::new(), refused: Vec::new(), failure: None };
    for i in 0..max {
        let items: Vec<Value> = (0..5)
            .map(|j| json!({"queue": "q", "transactionId": format!("{prefix}{i}-{j}"), "payload": payload}))
            .collect();
        let r = c
            .post(format!("http://127.0.0.1:{port}/api/v1/push"))
            .json(&json!({ "items": items }))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap();
        match status {
            201 => {
                for (j, it) in body.as_array().expect("one result per item").iter().enumerate() {
                    match it["status"].as_str() {
                        Some("queued") => f.answered.push(format!("{prefix}{i}-{j}")),
                        Some("failed") => {
                            f.refused.push(format!("{prefix}{i}-{j}"));
                            f.failure.get_or_insert_with(|| it.clone());
                        }
                        other => panic!("unexpected item status {other:?}: {body}"),
                    }
                }
            }
            // Not added to `refused`: a 503 promises nothing either way about its items.
            503 => f.failure = Some(body),
            s => panic!("unexpected status {s}: {body}"),
        }
        if f.failure.is_some() {
            break;
        }
    }
    f
}

/// How many times each id is stored in queue `q`, read through fetch from offset 0;
/// every record must carry `payload` whole.
async fn read_back(c: &reqwest::Client, port: u16, payload: &str) -> std::collections::HashMap<String, u32> {
    let mut seen = std::collections::HashMap::<String, u32>::new();
    let mut offset = 0u64;
    for _ in 0..100_000 {
        let r = c
            .post(format!("http://127.0.0.1:{port}/api/v1/fetch"))
            .json(
                &json!({"entries": [{"queue": "q", "partition": "Default", "offset": offset, "maxBytes": 1_000_000}]}),
            )
            .send()
            .await
            .unwrap();
        let body: Value = r.json().await.unwrap();
        let recs = body["entries"][0]["records"].as_array().cloned().unwrap_or_default();
        if recs.is_empty() {
            return seen;
        }
        for rec in &recs {
            assert_eq!(rec["payload"], payload, "a record read back whole: {rec}");
            *seen.entry(rec["transactionId"].as_str().unwrap().to_string()).or_default() += 1;
            offset = rec["offset"].as_u64().unwrap() + 1;
        }
    }
    panic!("the queue never ran out of records to read back");
}

/// A tmpfs of `size` mounted at `dir` (made first), unmounted when dropped; `None`, said
/// on stderr, where mounting is not allowed (it needs root).
fn tiny_disk(dir: &std::path::Path, size: &str) -> Option<Mount> {
    std::fs::create_dir_all(dir).unwrap();
    let ok = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(dir).status();
    if !ok.map(|s| s.success()).unwrap_or(false) {
        eprintln!("SKIPPED: cannot mount a tmpfs here (needs root); the fail-stop test did not run");
        return None;
    }
    Some(Mount(dir.to_path_buf()))
}
