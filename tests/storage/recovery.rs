//! Recovery through the real binary: a clean SIGTERM restart, checkpoint plus
//! WAL replay after SIGKILL, a torn WAL tail (truncated, start-up goes on),
//! damage in the middle of the log (start-up refuses and names the place), and
//! restarts without load (state byte-for-byte the same through the API).

use crate::common;

use common::Server;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Frame header: magic u32, payload length u32, crc32c u32, index u64 (all LE).
const FRAME_MAGIC: u32 = 0xFEA1_B7FF;
const FRAME_HEADER: usize = 20;

fn client() -> reqwest::Client {
    // No pooled connections: one kept alive across a restart would point at the dead process.
    reqwest::Client::builder().pool_max_idle_per_host(0).timeout(Duration::from_secs(30)).build().expect("http client")
}

fn pad(n: usize) -> String {
    "x".repeat(n)
}

/// Push items to one (queue, partition); every item must be answered `queued`.
async fn push(c: &reqwest::Client, s: &Server, queue: &str, partition: &str, txids: &[String], pad_len: usize) {
    let items: Vec<Value> = txids
        .iter()
        .map(|t| json!({"queue": queue, "partition": partition, "transactionId": t, "payload": {"t": t, "pad": pad(pad_len)}}))
        .collect();
    let r = c.post(s.url("/api/v1/push")).json(&json!({ "items": items })).send().await.expect("push");
    assert_eq!(r.status(), 201);
    let v: Value = r.json().await.unwrap();
    for (t, r) in txids.iter().zip(v.as_array().expect("array")) {
        assert_eq!(r["transactionId"], json!(t));
        assert_eq!(r["status"], "queued", "{r}");
    }
}

fn ids(prefix: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("{prefix}-{i}")).collect()
}

/// Pop from one partition (queue mode, no wait): the messages, empty on 204.
async fn pop(c: &reqwest::Client, s: &Server, queue: &str, partition: &str, batch: u32) -> Vec<Value> {
    let r = c
        .get(s.url(&format!("/api/v1/pop/queue/{queue}/partition/{partition}?batch={batch}&wait=false")))
        .send()
        .await
        .expect("pop");
    match r.status().as_u16() {
        204 => Vec::new(),
        200 => r.json::<Value>().await.unwrap()["messages"].as_array().unwrap().clone(),
        s => panic!("pop answered {s}: {:?}", r.text().await),
    }
}

/// Ack messages completed; every ack must succeed.
async fn ack(c: &reqwest::Client, s: &Server, msgs: &[Value]) {
    let acks: Vec<Value> = msgs
        .iter()
        .map(|m| json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"], "status": "completed"}))
        .collect();
    let v: Value = c
        .post(s.url("/api/v1/ack/batch"))
        .json(&json!({"consumerGroup": null, "acknowledgments": acks}))
        .send()
        .await
        .expect("ack")
        .json()
        .await
        .unwrap();
    for r in v.as_array().expect("array") {
        assert_eq!(r["success"], true, "{v}");
    }
}

fn offsets(msgs: &[Value]) -> Vec<u64> {
    msgs.iter().map(|m| m["offset"].as_u64().unwrap()).collect()
}

/// The whole log of one partition as fetch returns it (records with offset, txid, payload, ts).
async fn fetch_all(c: &reqwest::Client, s: &Server, queue: &str, partition: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut offset = 0u64;
    loop {
        let body =
            json!({"entries": [{"queue": queue, "partition": partition, "offset": offset, "maxBytes": 1 << 20}]});
        let v: Value = c.post(s.url("/api/v1/fetch")).json(&body).send().await.expect("fetch").json().await.unwrap();
        let e = &v["entries"][0];
        assert!(e["error"].is_null(), "fetch {queue}/{partition}@{offset}: {e}");
        let hw = e["highWatermark"].as_u64().unwrap();
        if offset >= hw {
            return out;
        }
        let recs = e["records"].as_array().unwrap();
        assert!(!recs.is_empty(), "fetch below the high watermark returned nothing: {e}");
        for r in recs {
            assert_eq!(r["offset"], json!(offset), "dense offsets");
            offset += 1;
            out.push(r.clone());
        }
    }
}

/// The log must hold exactly these txids, in this order, with their payloads.
fn assert_log(records: &[Value], txids: &[String], what: &str) {
    let got: Vec<&str> = records.iter().map(|r| r["transactionId"].as_str().unwrap()).collect();
    let want: Vec<&str> = txids.iter().map(|s| s.as_str()).collect();
    assert_eq!(got, want, "{what}: the log's transaction ids");
    for r in records {
        assert_eq!(r["payload"]["t"], r["transactionId"], "{what}: payload of {r}");
    }
}

async fn get_json(c: &reqwest::Client, s: &Server, path: &str) -> Value {
    let r = c.get(s.url(path)).send().await.expect("get");
    assert!(r.status().is_success(), "GET {path}: {}", r.status());
    r.json().await.unwrap()
}

/// What the API shows of the state: queues, consumer groups, and every log.
async fn state_view(c: &reqwest::Client, s: &Server, logs: &[(&str, &str)]) -> Value {
    let mut fetched = serde_json::Map::new();
    for (q, p) in logs {
        fetched.insert(format!("{q}/{p}"), Value::Array(fetch_all(c, s, q, p).await));
    }
    json!({
        "queues": get_json(c, s, "/api/v1/resources/queues").await,
        "groups": get_json(c, s, "/api/v1/consumer-groups").await,
        "logs": fetched,
    })
}

/// The WAL's pool of retired segments (D20).
fn recycled(s: &Server) -> Vec<PathBuf> {
    std::fs::read_dir(s.wal_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("wal.recycled.")))
        .collect()
}

/// `None` for a file gone between listing and looking (the spare thread renames them).
fn inode(p: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| m.ino())
}

fn names(paths: &[PathBuf]) -> BTreeSet<String> {
    paths.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect()
}

/// Start offsets and lengths of the frames of one WAL segment (stops at the first non-frame).
fn frames(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut off = 0;
    while off + FRAME_HEADER <= bytes.len() {
        let magic = u32::from_le_bytes(bytes[off..off + 4].try_into().unwrap());
        if magic != FRAME_MAGIC {
            break;
        }
        let len = FRAME_HEADER + u32::from_le_bytes(bytes[off + 4..off + 8].try_into().unwrap()) as usize;
        if off + len > bytes.len() {
            break;
        }
        out.push((off, len));
        off += len;
    }
    out
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut esc = false;
    for ch in s.chars() {
        match (esc, ch) {
            (false, '\u{1b}') => esc = true,
            (true, 'm') => esc = false,
            (true, _) => {}
            (false, c) => out.push(c),
        }
    }
    out
}

/// Where a segment's frames end; after them there may only be preallocated zeros (D16).
fn used_len(bytes: &[u8]) -> usize {
    let used: usize = frames(bytes).iter().map(|f| f.1).sum();
    assert!(bytes[used..].iter().all(|&b| b == 0), "after the frames, only the preallocated zeros");
    used
}

/// Writes `bytes` right after the segment's last frame, as a write interrupted there leaves them.
fn write_after_frames(path: &Path, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let used = used_len(&std::fs::read(path).unwrap());
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(bytes, used as u64).unwrap();
}

fn garbage(n: usize, mut seed: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 24) as u8
        })
        .collect()
}

/// (a) SIGTERM: exit code 0, then every record, cursor, live lease and dedup entry is back.
#[tokio::test]
async fn sigterm_then_restart_keeps_data_and_cursors() {
    let mut s = Server::start();
    let c = client();
    let (x, y) = (ids("a-x", 0..30), ids("a-y", 0..10));
    push(&c, &s, "a", "x", &x[..20], 10).await;
    push(&c, &s, "a", "x", &x[20..], 10).await;
    push(&c, &s, "a", "y", &y, 10).await;
    let m = pop(&c, &s, "a", "x", 12).await;
    assert_eq!(offsets(&m), (0..12).collect::<Vec<_>>());
    ack(&c, &s, &m).await;
    let held = pop(&c, &s, "a", "x", 5).await; // leased, not acked: must survive the restart
    assert_eq!(offsets(&held), (12..17).collect::<Vec<_>>());
    let m = pop(&c, &s, "a", "y", 4).await;
    ack(&c, &s, &m).await;
    let before = state_view(&c, &s, &[("a", "x"), ("a", "y")]).await;

    let st = s.terminate();
    assert_eq!(st.code(), Some(0), "SIGTERM exit status {st}; log:\n{}", s.log());
    assert!(s.dir.join("checkpoint.bin").exists(), "shutdown writes a checkpoint");
    s.restart();

    let after = state_view(&c, &s, &[("a", "x"), ("a", "y")]).await;
    assert_eq!(before, after, "state after a SIGTERM restart");
    assert_log(after["logs"]["a/x"].as_array().unwrap(), &x, "a/x");
    assert_log(after["logs"]["a/y"].as_array().unwrap(), &y, "a/y");
    // The lease taken before the restart is still live: x is still leased, and acks under it work.
    assert!(pop(&c, &s, "a", "x", 100).await.is_empty(), "x stays leased");
    ack(&c, &s, &held).await;
    // Cursors: delivery resumes exactly after what was acked.
    assert_eq!(offsets(&pop(&c, &s, "a", "x", 100).await), (17..30).collect::<Vec<_>>());
    assert_eq!(offsets(&pop(&c, &s, "a", "y", 100).await), (4..10).collect::<Vec<_>>());
    // The dedup index came back too.
    let v: Value = c
        .post(s.url("/api/v1/push"))
        .json(&json!({"items": [{"queue": "a", "partition": "x", "transactionId": "a-x-0", "payload": 1}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v[0]["status"], "duplicate", "{v}");
}

/// (b) Checkpoint + WAL replay: old WAL segments are deleted after a checkpoint, and a
/// SIGKILL after more pushes and acks loses none of them.
#[tokio::test]
async fn checkpoint_and_wal_replay_after_kill9() {
    let mut s = Server::start_with(&["--checkpoint-interval-secs", "1", "--wal-segment-mb", "1"]);
    let c = client();
    let mut seen = BTreeSet::new();
    // Phase 1: about 4 MB of entries, so the WAL rolls over several 1 MiB segments.
    let mut c0 = Vec::new();
    for i in 0..40 {
        let t = ids(&format!("b-c0-{i}"), 0..100);
        push(&c, &s, "b", "c0", &t, 1000).await;
        c0.extend(t);
        seen.extend(names(&s.wal_segments()));
    }
    assert!(seen.len() >= 3, "the WAL should have rolled over: {seen:?}");
    // Wait for a checkpoint (interval 1 s) and the deletion of the segments it covers.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.wal_segments().len() >= seen.len() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    seen.extend(names(&s.wal_segments()));
    assert!(s.dir.join("checkpoint.bin").exists(), "a checkpoint was written");
    let now = names(&s.wal_segments());
    assert!(
        now.len() < seen.len(),
        "segments covered by the checkpoint are retired: written {seen:?}, present {now:?}"
    );
    // D20: retired segments wait in the pool (nothing was written since, so no spare took one).
    let pool: BTreeSet<u64> = recycled(&s).iter().filter_map(|p| inode(p)).collect();
    assert!(!pool.is_empty(), "retired segments are kept for reuse");
    // Phase 2, after the checkpoint: 3 MB more, so rotations take spares made from the pool
    // and the crash below lands on a log that runs through reused files; then pops, acks.
    let mut reused = false;
    for i in 0..30 {
        let t = ids(&format!("b-c0-more-{i}"), 0..100);
        push(&c, &s, "b", "c0", &t, 1000).await;
        c0.extend(t);
        reused |= s.wal_segments().iter().filter_map(|p| inode(p)).any(|i| pool.contains(&i));
    }
    assert!(reused, "a segment after the checkpoint is a reused file");
    let mut c1 = Vec::new();
    for i in 0..5 {
        let t = ids(&format!("b-c0-late-{i}"), 0..50);
        push(&c, &s, "b", "c0", &t, 1000).await;
        c0.extend(t);
        let t = ids(&format!("b-c1-{i}"), 0..20);
        push(&c, &s, "b", "c1", &t, 100).await;
        c1.extend(t);
    }
    let m = pop(&c, &s, "b", "c0", 150).await;
    assert_eq!(m.len(), 150);
    ack(&c, &s, &m).await;
    let m = pop(&c, &s, "b", "c1", 50).await;
    assert_eq!(m.len(), 50);
    ack(&c, &s, &m).await;
    let m = pop(&c, &s, "b", "c1", 7).await;
    ack(&c, &s, &m[..3]).await; // a partly acked lease
    s.kill9();
    seen.extend(names(&s.wal_segments()));
    let present = names(&s.wal_segments());
    assert!(
        present.len() < seen.len() && !present.contains("wal-00000000000000000001.log"),
        "old segments stay retired: written {seen:?}, present {present:?}"
    );
    assert!(s.dir.join("checkpoint.bin").exists());

    s.restart();
    let log = s.log();
    let recovered: Vec<String> = log.lines().filter(|l| l.contains("recovered")).map(strip_ansi).collect();
    println!("recovery: {recovered:#?}");
    assert_log(&fetch_all(&c, &s, "b", "c0").await, &c0, "b/c0");
    assert_log(&fetch_all(&c, &s, "b", "c1").await, &c1, "b/c1");
    // Acks: c0 resumes at 150. c1's partial lease is still live; the rest of it can be acked.
    assert_eq!(offsets(&pop(&c, &s, "b", "c0", 1000).await), (150..1150).collect::<Vec<_>>());
    assert!(pop(&c, &s, "b", "c1", 100).await.is_empty(), "c1 is still leased");
    ack(&c, &s, &m[3..]).await;
    assert_eq!(offsets(&pop(&c, &s, "b", "c1", 100).await), (57..c1.len() as u64).collect::<Vec<_>>());
}

/// (c) A torn WAL tail (garbage, or half of a frame) is cut off; start-up goes on and all
/// acknowledged data and acks are intact, twice in a row.
#[tokio::test]
async fn torn_wal_tail_is_truncated_and_data_is_intact() {
    let mut s = Server::start_with(&["--checkpoint-interval-secs", "3600"]);
    let c = client();
    let mut t = ids("c", 0..20);
    push(&c, &s, "c", "p", &t[..10], 50).await;
    push(&c, &s, "c", "p", &t[10..], 50).await;
    let m = pop(&c, &s, "c", "p", 5).await;
    ack(&c, &s, &m).await;
    s.kill9();

    // Round 1: random bytes after the last frame.
    let segs = s.wal_segments();
    let last = segs.last().expect("a wal segment").clone();
    let len = used_len(&std::fs::read(&last).unwrap()) as u64;
    write_after_frames(&last, &garbage(777, 0x9E37_79B9_7F4A_7C15));
    s.restart();
    assert_eq!(std::fs::metadata(&last).unwrap().len(), len, "the torn tail is truncated back to the last good frame");
    assert!(s.log().contains("torn"), "the truncation is logged");
    assert_log(&fetch_all(&c, &s, "c", "p").await, &t, "after garbage tail");
    let more = ids("c-more", 0..10);
    push(&c, &s, "c", "p", &more, 50).await;
    t.extend(more);
    let m = pop(&c, &s, "c", "p", 3).await;
    assert_eq!(offsets(&m), vec![5, 6, 7]);
    ack(&c, &s, &m).await;
    s.kill9();

    // Round 2: the first half of a real frame, as an interrupted write leaves it.
    let last = s.wal_segments().last().unwrap().clone();
    let bytes = std::fs::read(&last).unwrap();
    let used = used_len(&bytes);
    let fr = frames(&bytes[..used]);
    let (off, flen) = *fr.iter().max_by_key(|f| f.1).expect("frames were written after the restart");
    write_after_frames(&last, &bytes[off..off + flen / 2]);
    s.restart();
    assert_eq!(std::fs::read(&last).unwrap(), &bytes[..used], "the torn frame is cut off");
    assert_log(&fetch_all(&c, &s, "c", "p").await, &t, "after a torn frame");
    assert_eq!(offsets(&pop(&c, &s, "c", "p", 100).await), (8..30).collect::<Vec<_>>());
}

/// Flip one byte in the middle of `seg`; returns the offset of the frame it damaged.
fn flip_middle(seg: &Path) -> usize {
    let mut bytes = std::fs::read(seg).unwrap();
    let used = used_len(&bytes);
    let fr = frames(&bytes[..used]);
    assert!(fr.len() >= 3, "enough frames to damage one in the middle: {}", fr.len());
    let mid = used / 2;
    let (start, _) = *fr.iter().find(|(o, l)| *o <= mid && mid < o + l).unwrap();
    bytes[mid] ^= 0x5A;
    std::fs::write(seg, &bytes).unwrap();
    start
}

fn assert_refuses(s: &mut Server, seg: &Path, frame: usize) {
    let damaged = std::fs::read(seg).unwrap();
    for attempt in 0..2 {
        let st = s.restart_expect_exit(Duration::from_secs(30));
        assert!(!st.success(), "start-up must fail on mid-log damage (attempt {attempt}): {st}");
        let log = s.log();
        let place = format!("{}:{frame}", seg.display());
        assert!(log.contains(&place), "the error names the file and offset {place}; log:\n{log}");
        assert_eq!(std::fs::read(seg).unwrap(), damaged, "damage is left on disk, not repaired");
    }
}

/// (d) A flipped byte in the middle of an early segment (no checkpoint covers it): the
/// server refuses to start and says where.
#[tokio::test]
async fn mid_log_corruption_in_an_early_segment_refuses_to_start() {
    let mut s = Server::start_with(&["--checkpoint-interval-secs", "3600", "--wal-segment-mb", "1"]);
    let c = client();
    for i in 0..30 {
        push(&c, &s, "d", "p", &ids(&format!("d-{i}"), 0..100), 1000).await;
    }
    s.kill9();
    let segs = s.wal_segments();
    assert!(segs.len() >= 3, "several segments: {segs:?}");
    let frame = flip_middle(&segs[0]);
    assert_refuses(&mut s, &segs[0], frame);
}

/// (d') Damage in the middle of the last segment, with valid frames after it, is not a torn
/// tail: truncating there would drop acknowledged entries, so start-up must refuse.
#[tokio::test]
async fn mid_log_corruption_in_the_last_segment_is_not_taken_for_a_torn_tail() {
    let mut s = Server::start_with(&["--checkpoint-interval-secs", "3600"]);
    let c = client();
    for i in 0..20 {
        push(&c, &s, "d2", "p", &ids(&format!("d2-{i}"), 0..10), 100).await;
    }
    s.kill9();
    let segs = s.wal_segments();
    let last = segs.last().unwrap().clone();
    let frame = flip_middle(&last);
    assert_refuses(&mut s, &last, frame);
}

/// (e) Two restarts in a row without load (SIGKILL, then SIGTERM): the state seen through
/// the API is identical each time.
#[tokio::test]
async fn restarts_without_load_leave_state_identical() {
    let mut s = Server::start();
    let c = client();
    push(&c, &s, "e1", "p0", &ids("e1-p0", 0..25), 20).await;
    push(&c, &s, "e1", "p1", &ids("e1-p1", 0..15), 20).await;
    push(&c, &s, "e2", "Default", &ids("e2", 0..12), 20).await;
    let m = pop(&c, &s, "e1", "p0", 10).await;
    ack(&c, &s, &m).await;
    let m = pop(&c, &s, "e1", "p0", 4).await; // left leased
    assert_eq!(m.len(), 4);
    let m = pop(&c, &s, "e2", "Default", 6).await;
    ack(&c, &s, &m[..2]).await; // a partly acked lease
                                // A consumer group besides queue mode.
    let r = c.get(s.url("/api/v1/pop/queue/e1?batch=7&wait=false&consumerGroup=g1")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let m = r.json::<Value>().await.unwrap()["messages"].as_array().unwrap().clone();
    let acks: Vec<Value> = m
        .iter()
        .map(|m| json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"], "status": "completed"}))
        .collect();
    let v: Value = c
        .post(s.url("/api/v1/ack/batch"))
        .json(&json!({"consumerGroup": "g1", "acknowledgments": acks}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(v.as_array().unwrap().iter().all(|r| r["success"] == true), "{v}");

    let logs = [("e1", "p0"), ("e1", "p1"), ("e2", "Default")];
    let v0 = state_view(&c, &s, &logs).await;
    s.kill9();
    s.restart();
    let v1 = state_view(&c, &s, &logs).await;
    assert_eq!(v0, v1, "state after a SIGKILL restart without load");
    let st = s.terminate();
    assert_eq!(st.code(), Some(0), "{st}");
    s.restart();
    let v2 = state_view(&c, &s, &logs).await;
    assert_eq!(v0, v2, "state after a second (SIGTERM) restart without load");
}

/// Long poll one queue (queue mode, batch 1) for up to `timeout_ms`: (status, messages).
async fn long_poll(c: &reqwest::Client, s: &Server, queue: &str, timeout_ms: u64) -> (u16, Vec<Value>) {
    let r = c
        .get(s.url(&format!("/api/v1/pop/queue/{queue}?batch=1&wait=true&timeout={timeout_ms}")))
        .send()
        .await
        .expect("pop");
    let st = r.status().as_u16();
    let msgs =
        if st == 200 { r.json::<Value>().await.unwrap()["messages"].as_array().unwrap().clone() } else { vec![] };
    (st, msgs)
}

/// A message whose lease was orphaned by a crash comes back to a consumer that is already
/// long-polling as soon as that lease expires, just as it does without a crash.
#[tokio::test]
async fn long_poll_wakes_when_a_lease_inherited_across_a_crash_expires() {
    let mut s = Server::start();
    let c = client();
    let r: Value = c
        .post(s.url("/api/v1/configure"))
        .json(&json!({"queue": "lp", "options": {"leaseTime": 2}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["configured"], true, "{r}");
    push(&c, &s, "lp", "Default", &ids("lp", 0..2), 10).await;

    // Without a crash: the waiting pop is woken when the lease expires (about 2 s).
    let leased = Instant::now();
    assert_eq!(pop(&c, &s, "lp", "Default", 1).await.len(), 1);
    let (st, m) = long_poll(&c, &s, "lp", 8000).await;
    let waited = leased.elapsed();
    assert_eq!(st, 200, "the expired lease's message is delivered to the waiting pop");
    assert!(waited < Duration::from_millis(4500), "woken at lease expiry, after {waited:?}");
    ack(&c, &s, &m).await;

    // With a crash between the pop and the lease's expiry: the same is expected.
    let leased = Instant::now();
    assert_eq!(pop(&c, &s, "lp", "Default", 1).await.len(), 1);
    s.kill9();
    s.restart();
    let (st, _) = long_poll(&c, &s, "lp", 8000).await;
    let waited = leased.elapsed();
    assert!(
        st == 200 && waited < Duration::from_millis(4500),
        "a lease inherited from before the crash expired about 2 s after its pop, but the waiting \
         pop answered {st} after {waited:?} (the long poll is never woken by its expiry)"
    );
}

/// (c'') A byte flipped inside the whole last frame is damage, not a torn write: start-up is
/// refused with the reason and nothing is cut (before: cut as a torn tail with only a warning,
/// dropping answered pushes). The operator's flag cuts it.
#[tokio::test]
async fn a_damaged_last_frame_refuses_start_until_the_operator_cuts_it() {
    let mut s = Server::start_with(&["--checkpoint-interval-secs", "3600"]);
    let c = client();
    let t = ids("d", 0..10);
    push(&c, &s, "d", "p", &t, 50).await;
    s.kill9();
    let last = s.wal_segments().last().unwrap().clone();
    let mut bytes = std::fs::read(&last).unwrap();
    let used = used_len(&bytes);
    let (off, flen) = *frames(&bytes[..used]).last().expect("frames");
    bytes[off + flen - 3] ^= 0x20;
    std::fs::write(&last, &bytes).unwrap();
    let st = s.restart_expect_exit(Duration::from_secs(20));
    assert!(!st.success());
    assert!(s.log().contains("damage, not a torn write"), "{}", s.log());
    assert_eq!(std::fs::read(&last).unwrap(), bytes, "nothing was cut");
    s.add_args(&["--wal-truncate-damaged-tail", "true"]);
    s.restart();
    assert_eq!(used_len(&std::fs::read(&last).unwrap()), off, "the damaged frame was cut at the operator's word");
}
