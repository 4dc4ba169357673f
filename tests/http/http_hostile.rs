//! A hostile client against the real binary: valid bodies of every JSON route, mutated at
//! random (bytes flipped, cut, repeated, spliced into one another, numbers out of range,
//! deep nesting, huge counts), sent by the thousand. Every answer must be a success or a
//! 4xx with the `{error, code}` body; never a 5xx, a reset connection or a hang; the node
//! stays healthy and a normal push and pop still work after. Deterministic (a fixed seed)
//! and bounded in count. This is not the libFuzzer run the issue asks for (that is for the
//! Kafka decoders, crates/kafka/fuzz): it drives the whole HTTP path, planner included.

use crate::common;

use common::api::{read, Api};
use serde_json::json;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const SEEDS: [(&str, &str); 9] = [
    (
        "/api/v1/push",
        r#"{"items":[{"queue":"h","partition":"p","transactionId":"t1","payload":{"a":[1,2.5,"x",null,true]}}]}"#,
    ),
    (
        "/api/v1/transaction",
        r#"{"operations":[{"type":"push","items":[{"queue":"h2","payload":1}]},{"type":"kv","op":"put","namespace":"n","key":"k","value":"v"}],"requiredLeases":[]}"#,
    ),
    (
        "/api/v1/ack",
        r#"{"transactionId":"t1","partitionId":"00000000-0000-0000-0000-000000000000","leaseId":"00000000-0000-0000-0000-000000000000","status":"completed"}"#,
    ),
    (
        "/api/v1/ack/batch",
        r#"{"acknowledgments":[{"transactionId":"t1","partitionId":"x","status":"failed","error":"e"}]}"#,
    ),
    ("/api/v1/fetch", r#"{"entries":[{"queue":"h","partition":"p","offset":0,"maxBytes":4096}]}"#),
    (
        "/api/v1/kv",
        r#"{"ops":[{"op":"put","namespace":"n","key":"k","value":"v","ttlSeconds":10},{"op":"getPrefix","namespace":"n","prefix":"k"}]}"#,
    ),
    ("/api/v1/timers", r#"{"ops":[{"op":"schedule","queue":"h","timerKey":"t","delayMs":100000,"payload":{"x":1}}]}"#),
    ("/api/v1/configure", r#"{"queue":"h3","options":{"leaseTime":5,"maxSize":100,"retryLimit":2}}"#),
    ("/api/v1/push", r#"{"items":[{"queue":"h","payload":"s"},{"queue":"h","partition":"q","payload":[[[]]]}]}"#),
];

const SPLICES: [&str; 12] = [
    "1e400",
    "-1",
    "18446744073709551616",
    "\"\\ud800\"",
    "null",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    "\"__QUEUE_MODE__\"",
    "\"a/b\"",
    "{}",
    "\"\u{0}\"",
    "9999999999999999999",
    "\"x\"",
];

/// Replaces the value after a random `:` (up to the next `,` or `}`) with a hostile one:
/// the body stays JSON, so the hostile value reaches the checks past the parser.
fn replace_value(r: &mut Rng, seed: &str) -> Vec<u8> {
    let colons: Vec<usize> = seed.match_indices(':').map(|(i, _)| i).collect();
    let at = colons[r.below(colons.len())] + 1;
    let end = seed[at..].find([',', '}']).map_or(seed.len(), |e| at + e);
    let hostile = SPLICES[r.below(SPLICES.len())];
    format!("{}{}{}", &seed[..at], hostile, &seed[end..]).into_bytes()
}

fn mutate(r: &mut Rng, seed: &str) -> Vec<u8> {
    if r.below(2) == 0 {
        return replace_value(r, seed);
    }
    let mut b = seed.as_bytes().to_vec();
    for _ in 0..1 + r.below(3) {
        if b.is_empty() {
            break;
        }
        let at = r.below(b.len());
        match r.below(6) {
            0 => b[at] = (r.next() & 0xFF) as u8,
            1 => b.truncate(at),
            2 => {
                let s = SPLICES[r.below(SPLICES.len())].as_bytes();
                b.splice(at..(at + r.below(8)).min(b.len()), s.iter().copied());
            }
            3 => {
                let end = (at + 1 + r.below(40)).min(b.len());
                let piece = b[at..end].to_vec();
                b.splice(at..at, piece);
            }
            4 => {
                b.remove(at);
            }
            _ => {
                let other = SEEDS[r.below(SEEDS.len())].1.as_bytes();
                let o = r.below(other.len());
                b.splice(at.., other[o..].iter().copied());
            }
        }
    }
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutated_bodies_get_precise_answers_and_the_node_stays_whole() {
    let api = Api::start();
    let mut r = Rng(0x5EED_BA70_0000_0001);
    let mut statuses = std::collections::BTreeMap::new();
    for round in 0..40 {
        let mut reqs = Vec::new();
        for _ in 0..250 {
            let (path, seed) = SEEDS[r.below(SEEDS.len())];
            let body = mutate(&mut r, seed);
            let c = api.c.clone();
            let url = api.s.url(path);
            reqs.push(tokio::spawn(async move {
                let resp = c
                    .post(url)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("request failed ({e}) for {}", String::from_utf8_lossy(&body)));
                let status = resp.status().as_u16();
                let bytes = resp.bytes().await.expect("read the answer");
                (status, bytes, body)
            }));
        }
        for h in reqs {
            let (status, bytes, body) = h.await.unwrap();
            let shown = String::from_utf8_lossy(&body).into_owned();
            assert!(status < 500, "round {round}: {status} for {shown}: {}", String::from_utf8_lossy(&bytes));
            if status >= 400 {
                let v: serde_json::Value = serde_json::from_slice(&bytes)
                    .unwrap_or_else(|_| panic!("{status} without a JSON body for {shown}"));
                assert!(v["code"].is_string() && v["error"].is_string(), "{status} {v} for {shown}");
            }
            *statuses.entry(status).or_insert(0u32) += 1;
        }
    }
    eprintln!("answers by status: {statuses:?}");
    // Both paths were exercised: refusals and successes.
    assert!(statuses.keys().any(|s| *s >= 400) && statuses.keys().any(|s| *s < 300), "{statuses:?}");
    let (st, v) = read(api.c.get(api.s.url("/health")).send().await.unwrap()).await;
    assert_eq!((st, v["status"].clone()), (200, json!("healthy")), "{v}");
    api.push_n("after", "p", "a", 0..3).await;
    assert_eq!(api.pop_some("after", "batch=10").await.len(), 3);
}
