//! Hand-written request bodies and marker-counting answer checks: the fast
//! path of the load generator (crates/bench), next to the typed client so
//! that a change of the API's shapes is made in this crate only.
//!
//! Owns the byte layout of push, ack-batch and transaction bodies and the
//! borrowing parse of pop and fetch answers. The load generator shares the
//! cores with the server it measures, so these must never build a JSON tree
//! of a request or an answer where a marker count or a borrowing parse does;
//! every body they write must parse to exactly what the typed
//! [`crate::Client`] would send (the tests below compare).

use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// One message of a hand-written push: transaction id and payload text
/// (sent as a JSON string).
pub trait PushMsg {
    fn txid(&self) -> &str;
    fn payload(&self) -> &[u8];
}

/// One delivery to ack (queue mode, `completed`).
pub trait AckMsg {
    fn txid(&self) -> &str;
    fn partition_id(&self) -> &str;
    fn lease_id(&self) -> Option<&str>;
}

/// Append `s` as a JSON string. The fast path copies plain ASCII; anything
/// else goes through serde_json.
pub fn push_json_str(buf: &mut Vec<u8>, s: &[u8]) {
    if s.iter().all(|&b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\') {
        buf.push(b'"');
        buf.extend_from_slice(s);
        buf.push(b'"');
    } else {
        let text = String::from_utf8_lossy(s);
        serde_json::to_writer(&mut *buf, &text).expect("writing to a Vec cannot fail");
    }
}

/// `s` as a JSON string literal.
pub fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a str serializes")
}

/// The body of `POST /api/v1/push` for one batch to one partition;
/// `queue_json` and `partition_json` are already JSON strings ([`json_str`]).
pub fn push_body<M: PushMsg>(queue_json: &str, partition_json: &str, batch: &[M]) -> Vec<u8> {
    let per =
        batch.first().map_or(0, |m| m.payload().len() + m.txid().len()) + queue_json.len() + partition_json.len() + 64;
    let mut b = Vec::with_capacity(16 + per * batch.len());
    b.extend_from_slice(b"{\"items\":[");
    for (i, m) in batch.iter().enumerate() {
        if i > 0 {
            b.push(b',');
        }
        b.extend_from_slice(b"{\"queue\":");
        b.extend_from_slice(queue_json.as_bytes());
        b.extend_from_slice(b",\"partition\":");
        b.extend_from_slice(partition_json.as_bytes());
        b.extend_from_slice(b",\"transactionId\":");
        push_json_str(&mut b, m.txid().as_bytes());
        b.extend_from_slice(b",\"payload\":");
        push_json_str(&mut b, m.payload());
        b.push(b'}');
    }
    b.extend_from_slice(b"]}");
    b
}

/// The same batch as Queen's binary push body (`QPB1`, docs/api.md "Binary push"): flags
/// 4 (every item carries its transaction id) and 2 (the answer is the counts only); each
/// payload is the JSON string [`push_body`] would send.
pub fn push_body_binary<M: PushMsg>(queue: &str, partition: &str, batch: &[M]) -> Vec<u8> {
    let per = batch.first().map_or(0, |m| m.payload().len() + m.txid().len()) + 16;
    let mut b = Vec::with_capacity(32 + queue.len() + partition.len() + per * batch.len());
    b.extend_from_slice(b"QPB1\x06");
    b.extend_from_slice(&1u32.to_le_bytes());
    for name in [queue, partition] {
        b.extend_from_slice(&(name.len() as u16).to_le_bytes());
        b.extend_from_slice(name.as_bytes());
    }
    b.extend_from_slice(&(batch.len() as u32).to_le_bytes());
    for m in batch {
        b.extend_from_slice(&(m.txid().len() as u16).to_le_bytes());
        b.extend_from_slice(m.txid().as_bytes());
        let at = b.len();
        b.extend_from_slice(&[0; 4]);
        push_json_str(&mut b, m.payload());
        let len = (b.len() - at - 4) as u32;
        b[at..at + 4].copy_from_slice(&len.to_le_bytes());
    }
    b
}

/// How many items a counts answer of a binary push (`{"count", "queued", ...}`) queued.
pub fn binary_queued(answer: &[u8]) -> usize {
    serde_json::from_slice::<serde_json::Value>(answer).ok().and_then(|v| v["queued"].as_u64()).unwrap_or(0) as usize
}

/// The body of `POST /api/v1/ack/batch` (queue mode: `consumerGroup` null, all `completed`).
pub fn ack_body<A: AckMsg>(deliveries: &[A]) -> Vec<u8> {
    let mut b = Vec::with_capacity(48 + deliveries.len() * 160);
    b.extend_from_slice(b"{\"consumerGroup\":null,\"acknowledgments\":[");
    for (i, d) in deliveries.iter().enumerate() {
        if i > 0 {
            b.push(b',');
        }
        b.extend_from_slice(b"{\"transactionId\":");
        push_json_str(&mut b, d.txid().as_bytes());
        b.extend_from_slice(b",\"partitionId\":");
        push_json_str(&mut b, d.partition_id().as_bytes());
        if let Some(l) = d.lease_id() {
            b.extend_from_slice(b",\"leaseId\":");
            push_json_str(&mut b, l.as_bytes());
        }
        b.extend_from_slice(b",\"status\":\"completed\"}");
    }
    b.extend_from_slice(b"]}");
    b
}

/// The body of a take-work-commit transaction: ack every popped message
/// with `lease`, push each one's payload (as it came, raw) to partition
/// `partition` of the queue `output_json`, requiring `lease` to be live.
pub fn txn_ack_push_body(output_json: &str, partition: &str, lease: &str, msgs: &[RawPoppedMsg<'_>]) -> Vec<u8> {
    let lease_json = json_str(lease);
    let part_json = json_str(partition);
    let mut b = Vec::with_capacity(128 + msgs.len() * 420);
    b.extend_from_slice(b"{\"operations\":[");
    for m in msgs {
        b.extend_from_slice(b"{\"type\":\"ack\",\"transactionId\":");
        b.extend_from_slice(json_str(&m.transaction_id).as_bytes());
        b.extend_from_slice(b",\"partitionId\":");
        b.extend_from_slice(json_str(&m.partition_id).as_bytes());
        b.extend_from_slice(b",\"leaseId\":");
        b.extend_from_slice(lease_json.as_bytes());
        b.extend_from_slice(b",\"status\":\"completed\"},");
    }
    b.extend_from_slice(b"{\"type\":\"push\",\"items\":[");
    for (i, m) in msgs.iter().enumerate() {
        if i > 0 {
            b.push(b',');
        }
        b.extend_from_slice(b"{\"queue\":");
        b.extend_from_slice(output_json.as_bytes());
        b.extend_from_slice(b",\"partition\":");
        b.extend_from_slice(part_json.as_bytes());
        b.extend_from_slice(b",\"transactionId\":");
        b.extend_from_slice(json_str(&m.transaction_id).as_bytes());
        b.extend_from_slice(b",\"payload\":");
        b.extend_from_slice(m.data.map_or("null", |d| d.get()).as_bytes());
        b.push(b'}');
    }
    b.extend_from_slice(b"]}],\"requiredLeases\":[");
    b.extend_from_slice(lease_json.as_bytes());
    b.extend_from_slice(b"]}");
    b
}

/// The body of a one-entry `POST /api/v1/fetch`.
pub fn fetch_one_body(queue_json: &str, partition_json: &str, offset: u64, max_bytes: u64) -> Vec<u8> {
    format!(
        "{{\"entries\":[{{\"queue\":{queue_json},\"partition\":{partition_json},\"offset\":{offset},\"maxBytes\":{max_bytes}}}]}}"
    )
    .into_bytes()
}

/// The path and query of a pop (queue mode) of `queue`.
pub fn pop_path(queue: &str, batch: usize, wait_ms: Option<u64>, lease_seconds: Option<u64>) -> String {
    let mut p = format!("/api/v1/pop/queue/{queue}?batch={}", batch.clamp(1, 10_000));
    match wait_ms {
        Some(t) => p.push_str(&format!("&wait=true&timeout={t}")),
        None => p.push_str("&wait=false"),
    }
    if let Some(s) = lease_seconds {
        p.push_str(&format!("&leaseSeconds={s}"));
    }
    p
}

/// How many items of a push answer were `queued`.
pub fn count_queued(answer: &[u8]) -> usize {
    count(answer, b"\"status\":\"queued\"")
}

/// How many results of an ack answer were `success: true`.
pub fn count_acked(answer: &[u8]) -> usize {
    count(answer, b"\"success\":true")
}

/// Whether a transaction answer says `success: true`.
pub fn txn_committed(answer: &[u8]) -> bool {
    memchr::memmem::find(answer, b"\"success\":true").is_some()
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    memchr::memmem::find_iter(hay, needle).count()
}

/// The first 300 bytes of an answer, for an error message.
pub fn snippet(body: &[u8]) -> String {
    String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned()
}

/// A pop answer read without copying: only what a consumer acks or forwards.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawPopped<'a> {
    #[serde(borrow, default)]
    pub partition: Cow<'a, str>,
    #[serde(borrow, default)]
    pub lease_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub messages: Vec<RawPoppedMsg<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawPoppedMsg<'a> {
    #[serde(borrow)]
    pub transaction_id: Cow<'a, str>,
    #[serde(borrow)]
    pub partition_id: Cow<'a, str>,
    #[serde(borrow, default)]
    pub lease_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub data: Option<&'a RawValue>,
}

/// A fetch answer read without copying the payloads.
#[derive(Deserialize)]
pub struct RawFetchAnswer<'a> {
    #[serde(borrow)]
    pub entries: Vec<RawFetchEntry<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawFetchEntry<'a> {
    #[serde(borrow, default)]
    pub records: Vec<RawFetchRecord<'a>>,
    #[serde(default)]
    pub high_watermark: u64,
    #[serde(borrow, default)]
    pub error: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawFetchRecord<'a> {
    pub offset: u64,
    #[serde(borrow)]
    pub transaction_id: Cow<'a, str>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Ack, FetchEntry, PushItem};
    use serde_json::{json, Value};

    struct M(&'static str, &'static str);
    impl PushMsg for M {
        fn txid(&self) -> &str {
            self.0
        }
        fn payload(&self) -> &[u8] {
            self.1.as_bytes()
        }
    }
    struct D(&'static str, &'static str, Option<&'static str>);
    impl AckMsg for D {
        fn txid(&self) -> &str {
            self.0
        }
        fn partition_id(&self) -> &str {
            self.1
        }
        fn lease_id(&self) -> Option<&str> {
            self.2
        }
    }

    #[test]
    fn push_body_is_what_the_typed_client_sends() {
        let b = push_body(&json_str("q"), &json_str("p0"), &[M("a", "xx"), M("b\"", "é")]);
        let v: Value = serde_json::from_slice(&b).unwrap();
        let typed = json!({"items": [
            PushItem::new("q", "p0", "a", json!("xx")),
            PushItem::new("q", "p0", "b\"", json!("é")),
        ]});
        assert_eq!(v, typed);
    }

    #[test]
    fn ack_body_is_the_queen_shape() {
        let v: Value = serde_json::from_slice(&ack_body(&[D("t1", "pid", Some("L")), D("t1", "pid", None)])).unwrap();
        let typed = |lease: Option<&str>| {
            let mut a = serde_json::to_value(Ack {
                transaction_id: "t1".into(),
                partition_id: "pid".into(),
                lease_id: lease.map(str::to_string),
                status: "completed".into(),
                error: None,
                consumer_group: None,
            })
            .unwrap();
            // The typed client sends `leaseId: null`; the fast path leaves it out: the same to the server.
            if lease.is_none() {
                a.as_object_mut().unwrap().remove("leaseId");
            }
            a
        };
        assert_eq!(v, json!({"consumerGroup": null, "acknowledgments": [typed(Some("L")), typed(None)]}));
    }

    #[test]
    fn txn_body_acks_with_the_lease_and_pushes_to_the_same_partition() {
        let raw: Box<RawValue> = serde_json::from_str("\"xy\"").unwrap();
        let m =
            RawPoppedMsg { transaction_id: "t1".into(), partition_id: "P".into(), lease_id: None, data: Some(&raw) };
        let v: Value = serde_json::from_slice(&txn_ack_push_body(&json_str("q-out"), "p3", "L", &[m])).unwrap();
        assert_eq!(
            v,
            json!({"operations": [
                {"type": "ack", "transactionId": "t1", "partitionId": "P", "leaseId": "L", "status": "completed"},
                {"type": "push", "items": [{"queue": "q-out", "partition": "p3", "transactionId": "t1", "payload": "xy"}]}
            ], "requiredLeases": ["L"]})
        );
    }

    #[test]
    fn fetch_body_is_what_the_typed_client_sends() {
        let v: Value = serde_json::from_slice(&fetch_one_body(&json_str("q"), &json_str("p"), 7, 99)).unwrap();
        let e = FetchEntry { queue: "q".into(), partition: "p".into(), offset: 7, max_bytes: 99 };
        assert_eq!(v, json!({"entries": [e]}));
    }

    #[test]
    fn pop_answer_parses_and_markers_count() {
        let b = br#"{"success":true,"partition":"p","leaseId":"L","messages":[{"id":"x","transactionId":"t","data":{"a":[1,2]},"partitionId":"p","leaseId":"L","offset":0}]}"#;
        let v: RawPopped = serde_json::from_slice(b).unwrap();
        assert_eq!(v.messages.len(), 1);
        assert_eq!(v.messages[0].transaction_id, "t");
        assert_eq!(v.messages[0].lease_id.as_deref(), Some("L"));
        assert_eq!(v.messages[0].data.unwrap().get(), r#"{"a":[1,2]}"#);
        assert_eq!(count_queued(br#"[{"status":"queued"},{"status":"duplicate"},{"status":"queued"}]"#), 2);
        assert_eq!(count_acked(br#"[{"success":true},{"success":false}]"#), 1);
        assert_eq!(
            pop_path("q", 0, Some(5), Some(30)),
            "/api/v1/pop/queue/q?batch=1&wait=true&timeout=5&leaseSeconds=30"
        );
    }
}
