//! Bounds of one HTTP request through the real binary (issue #12 items 6 and
//! 12, HTTP part): a fetch names each partition once, holds at most
//! `--http-fetch-max-entries` entries and carries at most
//! `--http-fetch-max-bytes` of records whatever `maxBytes` it asks for; an
//! ack's `error` text is kept to `--max-ack-error-bytes`. And a pop whose
//! messages cannot be read (500) does not keep the lease it was granted.
//! Settings are given as `BATON_*` environment variables.

use crate::common;

use common::api::{client, Api};
use common::Server;
use serde_json::{json, Value};

fn api_env(envs: &[(&str, &str)]) -> Api {
    Api { s: Server::start_env(envs), c: client() }
}

async fn fetch(api: &Api, entries: Value) -> (u16, Value) {
    api.post("/api/v1/fetch", json!({ "entries": entries })).await
}

#[tokio::test]
async fn fetch_refuses_repeated_partitions_and_too_many_entries() {
    let api = api_env(&[("BATON_HTTP_FETCH_MAX_ENTRIES", "3")]);
    api.push_n("fq", "p0", "a", 0..2).await;
    let e = |p: &str| json!({"queue": "fq", "partition": p, "offset": 0});
    let (st, v) = fetch(&api, json!([e("p0"), e("p1"), e("p0")])).await;
    assert_eq!((st, &v["code"]), (400, &json!("duplicate_entry")), "{v}");
    assert!(v["error"].as_str().unwrap().contains("entries[2]"), "{v}");
    assert_eq!(api.metric("baton_http_errors_total{status=\"400\",code=\"duplicate_entry\"}").await, 1.0);
    // Omitted and named Default are the same partition.
    let (st, v) =
        fetch(&api, json!([{"queue": "fq", "offset": 0}, {"queue": "fq", "partition": "Default", "offset": 1}])).await;
    assert_eq!((st, &v["code"]), (400, &json!("duplicate_entry")), "{v}");
    let (st, v) = fetch(&api, json!([e("p0"), e("p1"), e("p2"), e("p3")])).await;
    assert_eq!((st, &v["code"]), (400, &json!("invalid_entries")), "{v}");
    let (st, v) = fetch(&api, json!([e("p0"), e("p1"), e("p2")])).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["entries"][0]["records"].as_array().unwrap().len(), 2, "{v}");
}

#[tokio::test]
async fn fetch_answer_is_capped_whatever_max_bytes_asks() {
    const CAP: usize = 32 * 1024;
    let api = api_env(&[("BATON_HTTP_FETCH_MAX_BYTES", "32768")]);
    // One batch per push: 8 KB each, 8 per partition, 128 KB in all.
    for p in ["a", "b"] {
        for i in 0..8 {
            let (st, v) = api
                .post(
                    "/api/v1/push",
                    json!({"items": [{"queue": "big", "partition": p, "payload": format!("{i}{}", "x".repeat(8000))}]}),
                )
                .await;
            assert_eq!(st, 201, "{v}");
        }
    }
    let mut next = [0u64, 0u64];
    let mut seen = [Vec::new(), Vec::new()];
    for _round in 0..40 {
        if next == [8, 8] {
            break;
        }
        let entries = json!([
            {"queue": "big", "partition": "a", "offset": next[0], "maxBytes": 1_000_000_000_000_000u64},
            {"queue": "big", "partition": "b", "offset": next[1], "maxBytes": 1_000_000_000_000_000u64},
        ]);
        let (st, v) = api.post("/api/v1/fetch", json!({"entries": entries, "maxBytes": u64::MAX})).await;
        assert_eq!(st, 200, "{v}");
        let mut bytes = 0;
        let mut count = 0;
        for (k, e) in v["entries"].as_array().unwrap().iter().enumerate() {
            assert_eq!(e["highWatermark"], 8, "{e}");
            for r in e["records"].as_array().unwrap() {
                assert_eq!(r["offset"], next[k], "records come in order, from the offset asked");
                bytes += r["payload"].as_str().unwrap().len();
                seen[k].push(r["offset"].as_u64().unwrap());
                next[k] += 1;
                count += 1;
            }
        }
        assert!(count >= 1, "every fetch makes progress: {v}");
        assert!(bytes <= CAP, "an answer carried {bytes} payload bytes, past the {CAP}-byte cap");
    }
    assert_eq!(seen, [(0..8).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>()]);
    assert!(api.metric("baton_http_fetch_clamped_total").await >= 1.0, "the clamp is counted");
    // A batch larger than the cap still comes out, alone, so a reader gets past it.
    let (st, v) = api
        .post("/api/v1/push", json!({"items": [{"queue": "big", "partition": "c", "payload": "y".repeat(40_000)}]}))
        .await;
    assert_eq!(st, 201, "{v}");
    api.push_n("big", "c", "small", 0..2).await;
    let e = api.fetch("big", "c", 0).await;
    let recs = e["records"].as_array().unwrap();
    assert_eq!(recs.len(), 1, "only the large batch: {}", recs.len());
    assert_eq!(recs[0]["payload"].as_str().map(str::len), Some(40_000));
}

#[tokio::test]
async fn ack_error_text_is_cut_to_the_bound() {
    let api = api_env(&[]);
    api.configure("dq", json!({"retryLimit": 0})).await;
    api.push_n("dq", "Default", "m", 0..2).await;
    let msgs = api.pop_some("dq", "batch=2").await;
    let long = "e".repeat(100_000);
    let r = api.ack(&msgs[0], "dlq", Some(&long)).await;
    assert_eq!(r["success"], true, "{r}");
    // Two-byte characters: the cut never splits one.
    let wide = "é".repeat(3000);
    let r = api.ack(&msgs[1], "dlq", Some(&wide)).await;
    assert_eq!(r["success"], true, "{r}");
    let d = api.dlq("dq").await;
    let mut errors: Vec<String> =
        d["messages"].as_array().unwrap().iter().map(|m| m["errorMessage"].as_str().unwrap().to_string()).collect();
    errors.sort();
    assert_eq!(errors.len(), 2, "{d}");
    let lens: Vec<usize> = errors.iter().map(|e| e.len()).collect();
    assert!(errors[0] == "e".repeat(4096), "cut to --max-ack-error-bytes (4096 by default); lengths {lens:?}");
    assert!(errors[1] == "é".repeat(2048), "cut at a character boundary; lengths {lens:?}");
    assert_eq!(api.metric("baton_http_ack_error_cut_total").await, 2.0);
}

/// Every file under `dir` whose bytes contain `needle`, with the position.
fn find_in_files(dir: &std::path::Path, needle: &[u8], out: &mut Vec<(std::path::PathBuf, usize)>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            find_in_files(&p, needle, out);
        } else if p.extension().is_some_and(|x| x == "seg") || p.to_string_lossy().contains("spare") {
            if let Ok(b) = std::fs::read(&p) {
                if let Some(i) = b.windows(needle.len()).position(|w| w == needle) {
                    out.push((p, i));
                }
            }
        }
    }
}

/// Flip the case of the first byte of `needle` wherever it is stored under
/// `dir`; returns how many copies. A record can sit in a spare file that the
/// provisioner renames to its segment name at any moment, so a file that
/// vanished between the scan and the write means scan again (bounded).
fn flip_stored(dir: &std::path::Path, needle: &[u8]) -> usize {
    use std::os::unix::fs::FileExt;
    'scan: for _ in 0..50 {
        let mut hits = Vec::new();
        find_in_files(dir, needle, &mut hits);
        for (p, at) in &hits {
            let f = match std::fs::OpenOptions::new().read(true).write(true).open(p) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    continue 'scan;
                }
                Err(e) => panic!("{}: {e}", p.display()),
            };
            let mut b = [0u8; 1];
            f.read_exact_at(&mut b, *at as u64).unwrap();
            f.write_all_at(&[b[0] ^ 0x20], *at as u64).unwrap();
        }
        return hits.len();
    }
    panic!("the files holding the record kept moving")
}

#[tokio::test]
async fn a_pop_that_cannot_read_its_messages_releases_its_lease() {
    let api = api_env(&[]);
    let marker = "stored-bytes-marker-0123456789";
    let (st, v) = api.post("/api/v1/push", json!({"items": [{"queue": "rd", "payload": marker}]})).await;
    assert_eq!(st, 201, "{v}");
    // Damage the stored batch (its CRC no longer matches) under the running server.
    assert!(flip_stored(&api.s.dir, marker.as_bytes()) > 0, "the partition file holding the record");
    let (st, v) = api.pop("rd", "batch=1").await;
    assert_eq!((st, &v["code"]), (500, &json!("read_failed")), "{v}");
    // The damage is not silent: health says so (before: "healthy") and the reads are counted.
    let (st, v) = api.get("/health").await;
    assert_eq!((st, &v["code"]), (503, &json!("storage_damaged")), "{v}");
    assert!(api.metric("baton_storage_damaged_reads_total").await >= 1.0);
    // The bytes come back: the message is delivered at once, not after the
    // lease the failed pop took (300 s by default) runs out.
    let damaged = format!("S{}", &marker[1..]);
    assert!(flip_stored(&api.s.dir, damaged.as_bytes()) > 0, "the damaged copies are found again");
    let msgs = api.pop_some("rd", "batch=1").await;
    assert_eq!(msgs[0]["data"], json!(marker));
}
