//! `baton check data DIR` through the real binary, on the directory a real server left:
//! a stopped node's directory is ok (exit 0); for each kind of file, on a fresh copy, a
//! flipped byte, a truncation and a deletion are each reported as damage naming the file
//! (exit 1); files the checkpoint does not name are orphans, not damage; a running
//! server's directory is refused. Every run is checked to leave every byte, name and
//! modification time of the directory as it was.

use crate::common;

use common::api::Api;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn check(dir: &Path, json: bool) -> Out {
    let mut c = Command::new(env!("CARGO_BIN_EXE_baton"));
    c.args(["check", "data"]).arg(dir);
    if json {
        c.arg("--json");
    }
    let o = c.output().expect("run baton check data");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Every file and directory under `dir`: (hash of the bytes, length, modification time).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u64, u64, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let md = fs::symlink_metadata(&p).unwrap();
            let hash = if md.is_dir() {
                todo.push(p.clone());
                0
            } else {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                fs::read(&p).unwrap().hash(&mut h);
                h.finish()
            };
            out.insert(p, (hash, md.len(), md.modified().unwrap()));
        }
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// Runs the check on `dir` and asserts it changed nothing there.
fn check_unchanged(dir: &Path) -> Out {
    let before = snapshot(dir);
    let out = check(dir, false);
    assert!(before == snapshot(dir), "baton check data changed the directory; stdout:\n{}", out.stdout);
    out
}

/// `name` relative to the data directory, as the report names files.
fn rel(data: &Path, p: &Path) -> String {
    p.strip_prefix(data).unwrap().display().to_string()
}

/// Files under `dir` whose name ends in `ext`, sorted.
/// Files of `dir` whose names end in `ext`, the provisioner's empty spares (D17, D81) left out.
fn files_ending(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let spare = |p: &Path| p.components().any(|c| c.as_os_str() == ".spare" || c.as_os_str() == ".spare-parts");
    let mut out: Vec<PathBuf> =
        snapshot(dir).into_keys().filter(|p| p.to_string_lossy().ends_with(ext) && !spare(p)).collect();
    out.sort();
    out
}

/// The end of what was written in a file that may have a zero tail.
fn data_end(p: &Path) -> u64 {
    fs::read(p).unwrap().iter().rposition(|&b| b != 0).map_or(0, |i| i as u64 + 1)
}

#[derive(Clone, Copy, Debug)]
enum Harm {
    Flip,
    Truncate,
    Delete,
}

fn harm(p: &Path, how: Harm) {
    match how {
        Harm::Flip => {
            let mut b = fs::read(p).unwrap();
            // Inside what was written: past a WAL frame header (20 bytes) and a batch's CRC
            // (bytes 17..21), within the checkpoint's body; the middle for longer files. In
            // an idx, the middle record's `pos` (its `ts` is guarded by nothing).
            let at = if p.extension().is_some_and(|e| e == "idx") {
                b.len() / 32 / 2 * 32 + 16
            } else {
                (data_end(p) as usize / 2).max(22).min(b.len() - 1)
            };
            b[at] ^= 0x10;
            fs::write(p, b).unwrap();
        }
        Harm::Truncate => {
            let f = fs::OpenOptions::new().write(true).open(p).unwrap();
            f.set_len(data_end(p).saturating_sub(5)).unwrap();
        }
        Harm::Delete => fs::remove_file(p).unwrap(),
    }
}

fn damage_lines(out: &Out) -> Vec<&str> {
    out.stdout.lines().filter(|l| l.starts_with("damage: ")).collect()
}

/// A server on a temp dir with small segments and a checkpoint a second, three queues of
/// messages (enough that the log rotated and a checkpoint retired its first segment), some
/// popped and acked, then stopped with SIGTERM.
async fn stopped_node() -> Api {
    let api = Api::with(&["--wal-segment-mb", "1", "--partition-segment-mb", "1", "--checkpoint-interval-secs", "1"]);
    let pad = "p".repeat(20_000);
    for round in 0..24 {
        let q = format!("q{}", round % 3);
        let ids: Vec<String> = (0..8).map(|i| format!("{q}-{round}-{i}")).collect();
        let items: Vec<(&str, Value)> = ids.iter().map(|t| (t.as_str(), json!({"t": t, "pad": pad}))).collect();
        for r in api.push(&q, "0", &items).await {
            assert_eq!(r["status"], "queued", "{r}");
        }
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while api.s.wal_segments().first().is_some_and(|p| p.ends_with("wal-00000000000000000001.log")) {
        assert!(Instant::now() < deadline, "no checkpoint retired the first log segment in 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for q in ["q0", "q1", "q2"] {
        api.push_n(q, "0", &format!("{q}-late"), 0..3).await;
    }
    let msgs = api.pop_some("q1", "batch=5").await;
    api.ack_ok(&msgs).await;
    api
}

#[tokio::test]
async fn a_stopped_node_is_ok_and_each_kind_of_harm_to_each_kind_of_file_is_damage() {
    let mut api = stopped_node().await;
    let data = api.s.dir.clone();

    // While the server runs, the directory is refused, not read.
    let live = check_unchanged(&data);
    assert_eq!(live.code, 1, "{}", live.stdout);
    assert!(live.stderr.contains("running server") && live.stderr.contains("Stop the server"), "{}", live.stderr);
    assert!(!live.stdout.contains("ok:"), "{}", live.stdout);

    assert!(api.s.terminate().success(), "log:\n{}", api.s.log());
    let ok = check_unchanged(&data);
    assert_eq!(ok.code, 0, "stdout:\n{}\nstderr:\n{}", ok.stdout, ok.stderr);
    assert!(
        damage_lines(&ok).is_empty() && ok.stdout.lines().last().is_some_and(|l| l.starts_with("ok: ")),
        "{}",
        ok.stdout
    );
    let report: Value = serde_json::from_str(&check(&data, true).stdout).expect("--json prints JSON");
    assert!(report["batches"].as_u64().unwrap() >= 24 + 3, "{report}");
    assert!(report["checkpoint_index"].as_u64().unwrap() > 0, "{report}");
    assert!(report["findings"].as_array().unwrap().iter().all(|f| f["kind"] != "damage"), "{report}");

    let wal = data.join("wal");
    let segs = files_ending(&wal, ".log");
    assert!(!segs[0].ends_with("wal-00000000000000000001.log"), "the log must start after entry 1: {segs:?}");
    let parts = files_ending(&data.join("partitions"), ".seg");
    assert!(parts.len() > 3, "every queue's partition rotated at least once: {parts:?}");
    let mut targets =
        vec![data.join("checkpoint.bin"), segs.last().unwrap().clone(), parts[0].clone(), parts[1].clone()];
    // Files main is adding (issue 18): harmed the same way when this build writes them.
    for ext in [".idx", ".txid"] {
        targets.extend(files_ending(&data.join("partitions"), ext).into_iter().take(1));
    }

    let scratch = tempfile::tempdir().unwrap();
    for (n, target) in targets.iter().enumerate() {
        let harms: &[Harm] = &[Harm::Flip, Harm::Truncate, Harm::Delete];
        for &how in harms {
            let copy = scratch.path().join(format!("{n}-{how:?}"));
            copy_dir(&data, &copy);
            let file = copy.join(target.strip_prefix(&data).unwrap());
            harm(&file, how);
            let out = check_unchanged(&copy);
            let mut name = rel(&copy, &file);
            // The only log segment gone: nothing tells what it was called, so the report
            // names the log's directory.
            if matches!(how, Harm::Delete) && file.extension().is_some_and(|e| e == "log") && segs.len() == 1 {
                name = "wal".to_string();
            }
            let lines = damage_lines(&out);
            assert!(
                out.code == 1 && lines.iter().any(|l| l.starts_with(&format!("damage: {name}: "))),
                "{how:?} {name}: exit {}, want a damage line naming it; stdout:\n{}\nstderr:\n{}",
                out.code,
                out.stdout,
                out.stderr
            );
            assert!(out.stdout.lines().last().is_some_and(|l| l.starts_with("damaged: ")), "{}", out.stdout);
        }
    }
}

#[tokio::test]
async fn files_the_checkpoint_does_not_name_are_orphans_not_damage() {
    let mut api = stopped_node().await;
    assert!(api.s.terminate().success(), "log:\n{}", api.s.log());
    let data = api.s.dir.clone();
    let part = files_ending(&data.join("partitions"), ".seg")[0].parent().unwrap().to_path_buf();
    fs::write(part.join("stray.bin"), b"not a segment").unwrap();
    fs::create_dir_all(data.join("partitions").join("4242")).unwrap();
    fs::write(data.join("partitions/4242/00000000000000000000.seg"), b"").unwrap();
    let out = check_unchanged(&data);
    assert_eq!(out.code, 0, "orphans are not damage; stdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    for name in [rel(&data, &part.join("stray.bin")), "partitions/4242".to_string()] {
        assert!(out.stdout.lines().any(|l| l.starts_with(&format!("orphan: {name}: "))), "{name}:\n{}", out.stdout);
    }
    assert!(out.stdout.lines().last().is_some_and(|l| l.starts_with("ok: ")), "{}", out.stdout);
}

/// What a crash leaves (a torn log tail, partition bytes past the marks, partitions newer
/// than the checkpoint) is not damage: recovery handles all of it.
#[tokio::test]
async fn a_node_killed_under_load_is_not_reported_damaged() {
    let mut api = stopped_node().await;
    let (c, url) = (api.c.clone(), api.s.url("/api/v1/push"));
    let load = tokio::spawn(async move {
        for i in 0..100_000u32 {
            let items: Vec<Value> = (0..4)
                .map(|j| json!({"queue": format!("k{}", i % 7), "partition": "0", "payload": {"i": i, "j": j, "pad": "x".repeat(3_000)}}))
                .collect();
            // Refused or cut off once the server is killed: that is the point.
            if c.post(&url).json(&json!({ "items": items })).send().await.is_err() {
                return;
            }
        }
    });
    // Past at least one checkpoint taken under this load (one a second).
    let ckpt = api.s.dir.join("checkpoint.bin");
    let seen = fs::metadata(&ckpt).unwrap().modified().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while fs::metadata(&ckpt).unwrap().modified().unwrap() == seen {
        assert!(Instant::now() < deadline, "no checkpoint in 30 s under load");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    api.s.kill9();
    let _ = load.await;
    let out = check_unchanged(&api.s.dir);
    assert_eq!(out.code, 0, "stdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    assert!(damage_lines(&out).is_empty(), "{}", out.stdout);
    // And the server agrees: it starts on what the check passed.
    api.s.restart();
}
