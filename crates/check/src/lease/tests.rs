//! Hand-built histories, written as the JSONL a recorder writes: each kind of
//! violation (and that its excerpt names exactly the lines that prove it),
//! each kind of ambiguity (which must not be a violation), and each reason
//! for UNKNOWN. Times are in ms here (`t` is written in µs). The queue `q`
//! has a 1000 ms lease, no dead-lettering on its own, a 60 s dedup window; the
//! checker's skew margin is 10 ms.

use super::verdict::Violation;
use super::*;

const MS: u64 = 1000;

struct B {
    lines: Vec<String>,
    next: u64,
}

type L = [u32; 2];

impl B {
    fn new() -> B {
        let mut b = B { lines: Vec::new(), next: 0 };
        b.line(r#"{"type":"queue","queue":"q","lease_ms":1000,"retry_limit":2,"dead_letters":false,"dedup_window_ms":60000}"#);
        b
    }
    fn line(&mut self, s: impl Into<String>) -> u32 {
        self.lines.push(s.into());
        self.lines.len() as u32
    }
    /// An operation invoked at `t0` ms and completed at `t1` ms as `kind`
    /// (`ok`, `failed`, `unknown`, or `open`: no completion line).
    fn op(&mut self, t0: u64, t1: u64, f: &str, args: &str, kind: &str, result: &str) -> L {
        self.next += 1;
        let id = self.next;
        let a = self.line(format!(r#"{{"type":"invoke","id":{id},"t":{},"process":{id},"f":"{f}"{args}}}"#, t0 * MS));
        if kind == "open" {
            return [a, 0];
        }
        let b = self.line(format!(r#"{{"type":"{kind}","id":{id},"t":{},"process":{id}{result}}}"#, t1 * MS));
        [a, b]
    }
    fn push(&mut self, t0: u64, t1: u64, kind: &str, txid: &str) -> L {
        let args = format!(r#","queue":"q","messages":[{{"partition":"0","txid":"{txid}"}}]"#);
        self.op(t0, t1, "push", &args, kind, "")
    }
    fn pop(&mut self, t0: u64, t1: u64, lease: &str, msgs: &[(u64, &str)]) -> L {
        let m: Vec<String> = msgs.iter().map(|(o, t)| format!(r#"{{"offset":{o},"txid":"{t}"}}"#)).collect();
        let result = format!(r#","partition":"0","lease":"{lease}","messages":[{}]"#, m.join(","));
        self.op(t0, t1, "pop", r#","queue":"q","consumer":"c","batch":10"#, "ok", &result)
    }
    fn ack(&mut self, t0: u64, t1: u64, kind: &str, lease: &str, items: &[(&str, &str)]) -> L {
        let a: Vec<String> = items.iter().map(|(t, s)| format!(r#"{{"txid":"{t}","status":"{s}"}}"#)).collect();
        self.op(t0, t1, "ack", &format!(r#","lease":"{lease}","acks":[{}]"#, a.join(",")), kind, "")
    }
    fn log(&mut self, queue: &str, entries: &[&str]) -> u32 {
        let e: Vec<String> =
            entries.iter().enumerate().map(|(o, t)| format!(r#"{{"offset":{o},"txid":"{t}"}}"#)).collect();
        self.line(format!(r#"{{"type":"final_log","queue":"{queue}","partition":"0","entries":[{}]}}"#, e.join(",")))
    }
    fn waiting(&mut self, offsets: &[u64]) -> u32 {
        let o: Vec<String> = offsets.iter().map(u64::to_string).collect();
        self.line(format!(
            r#"{{"type":"final_waiting","queue":"q","partition":"0","from":0,"offsets":[{}]}}"#,
            o.join(",")
        ))
    }
    fn judge(&self) -> Verdict {
        let h = parse_str(&self.lines.join("\n")).unwrap_or_else(|e| panic!("{e}"));
        check(&h, &Params { skew_us: 10 * MS })
    }
}

fn render(b: &B, v: &Verdict) -> String {
    v.render(&|l| b.lines.get(l as usize - 1).cloned())
}

/// Exactly one violation, of `kind`, naming `lines`.
fn only(b: &B, kind: Kind, lines: &[u32]) -> Violation {
    let v = b.judge();
    assert_eq!(v.status, Status::Violation, "{}", render(b, &v));
    assert_eq!(v.total_violations(), 1, "{}", render(b, &v));
    let x = v.violations[0].clone();
    assert_eq!(x.kind, kind, "{}", render(b, &v));
    let mut want = lines.to_vec();
    want.sort_unstable();
    assert_eq!(x.lines, want, "{}", render(b, &v));
    x
}

fn ok(b: &B) {
    let v = b.judge();
    assert_eq!(v.status, Status::Ok, "{}", render(b, &v));
}

fn not_violation(b: &B) -> Verdict {
    let v = b.judge();
    assert_ne!(v.status, Status::Violation, "{}", render(b, &v));
    v
}

/// m0 pushed and popped under L1.
fn leased() -> (B, L, L) {
    let mut b = B::new();
    let push = b.push(0, 10, "ok", "m0");
    let pop = b.pop(20, 30, "L1", &[(0, "m0")]);
    (b, push, pop)
}

// ---- violations -------------------------------------------------------------

#[test]
fn a_push_answered_ok_missing_from_the_log_is_lost() {
    let mut b = B::new();
    let p = b.push(0, 10, "ok", "m0");
    b.push(20, 30, "ok", "m1");
    b.log("q", &["m1"]);
    let x = only(&b, Kind::Lost, &p);
    assert_eq!(x.txid.as_deref(), Some("m0"));
}

#[test]
fn a_message_neither_waiting_nor_settled_is_lost() {
    let mut b = B::new();
    b.push(0, 10, "ok", "m0");
    let log = b.log("q", &["m0"]);
    let w = b.waiting(&[]);
    let x = only(&b, Kind::Lost, &[log, w]);
    assert_eq!(x.offset, Some(0));
}

#[test]
fn a_delivery_the_log_does_not_hold_is_a_phantom() {
    let (mut b, _, _) = leased();
    let p = b.pop(2000, 2010, "L2", &[(0, "m9")]);
    let log = b.log("q", &["m0"]);
    b.waiting(&[0]);
    let x = only(&b, Kind::Phantom, &[p[0], p[1], log]);
    assert!(x.detail.contains("the final log holds m0"), "{}", x.detail);
}

#[test]
fn a_log_entry_no_operation_wrote_is_a_phantom() {
    let mut b = B::new();
    b.push(0, 10, "ok", "m0");
    let refused = b.push(20, 30, "failed", "m1");
    let log = b.log("q", &["m0", "m1"]);
    b.waiting(&[0, 1]);
    let x = only(&b, Kind::Phantom, &[refused[0], refused[1], log]);
    assert_eq!(x.offset, Some(1));
}

#[test]
fn a_delivery_after_an_ack_answered_ok_is_redelivered_after_ack() {
    let (mut b, _, pop) = leased();
    let ack = b.ack(40, 50, "ok", "L1", &[("m0", "completed")]);
    let again = b.pop(60, 70, "L2", &[(0, "m0")]);
    b.log("q", &["m0"]);
    b.waiting(&[0]);
    // The ack answered ok is also contradicted by the waiting list: two findings.
    let v = b.judge();
    assert_eq!(v.count(Kind::RedeliveredAfterAck), 2, "{}", render(&b, &v));
    assert_eq!(v.violations[0].lines, vec![pop[1], ack[0], ack[1], again[0], again[1]]);
    assert!(v.violations[1].detail.contains("still waiting"));
}

#[test]
fn a_pop_while_another_lease_is_certainly_live_is_a_double_lease() {
    let (mut b, _, a) = leased();
    let second = b.pop(100, 110, "L2", &[(0, "m0")]);
    b.ack(200, 210, "ok", "L2", &[("m0", "completed")]);
    b.log("q", &["m0"]);
    b.waiting(&[]);
    only(&b, Kind::DoubleLease, &[1, a[0], a[1], second[0], second[1]]);
}

#[test]
fn an_ack_answered_ok_after_its_lease_certainly_ran_out_is_stale() {
    let (mut b, _, a) = leased();
    // Latest end: answered at 30 + 1000 lease + 10 skew = 1040.
    let k = b.ack(1041, 1050, "ok", "L1", &[("m0", "completed")]);
    b.log("q", &["m0"]);
    b.waiting(&[]);
    only(&b, Kind::StaleAck, &[1, a[0], a[1], k[0], k[1]]);
}

#[test]
fn an_ack_answered_ok_after_another_pop_got_the_partition_is_stale() {
    let mut b = B::new();
    b.push(0, 10, "ok", "m0");
    b.push(0, 10, "ok", "m1");
    let a = b.pop(20, 30, "L1", &[(0, "m0"), (1, "m1")]);
    // A nack whose answer was lost may have released L1: the next pop is fine...
    b.ack(40, 0, "open", "L1", &[("m0", "retry")]);
    let next = b.pop(100, 110, "L2", &[(0, "m0"), (1, "m1")]);
    // ...but then L1 was over, and an ack on it must be refused.
    let k = b.ack(200, 210, "ok", "L1", &[("m1", "completed")]);
    b.ack(300, 310, "ok", "L2", &[("m0", "completed")]);
    b.log("q", &["m0", "m1"]);
    b.waiting(&[]);
    only(&b, Kind::StaleAck, &[a[0], a[1], next[0], next[1], k[0], k[1]]);
}

#[test]
fn a_batch_out_of_offset_order_is_an_order_violation() {
    let mut b = B::new();
    b.push(0, 10, "ok", "m0");
    b.push(0, 10, "ok", "m1");
    let p = b.pop(20, 30, "L1", &[(1, "m1"), (0, "m0")]);
    b.ack(40, 50, "ok", "L1", &[("m0", "completed"), ("m1", "completed")]);
    b.log("q", &["m0", "m1"]);
    b.waiting(&[]);
    only(&b, Kind::Order, &p);
}

#[test]
fn a_pop_passing_over_an_unsettled_offset_is_an_order_violation() {
    let mut b = B::new();
    b.push(0, 10, "ok", "m0");
    b.push(0, 10, "ok", "m1");
    let p = b.pop(20, 30, "L1", &[(1, "m1")]);
    b.ack(40, 50, "ok", "L1", &[("m1", "completed")]);
    let log = b.log("q", &["m0", "m1"]);
    b.waiting(&[0]);
    let x = only(&b, Kind::Order, &[p[0], p[1], log]);
    assert_eq!(x.offset, Some(0));
}

#[test]
fn a_transaction_partly_in_the_log_is_torn() {
    let (mut b, _, _) = leased();
    let pushes = r#","acks":[{"lease":"L1","txid":"m0","status":"completed"}],"pushes":[{"queue":"out","partition":"0","txid":"o1"},{"queue":"out","partition":"0","txid":"o2"}]"#;
    let t = b.op(40, 0, "txn", pushes, "open", "");
    b.log("q", &["m0"]);
    let out = b.log("out", &["o1"]);
    b.waiting(&[]);
    let x = only(&b, Kind::TornTxn, &[t[0], out]);
    assert_eq!(x.txid.as_deref(), Some("o2"));
}

#[test]
fn a_transaction_applied_by_its_pushes_but_not_its_acks_is_torn() {
    let (mut b, _, _) = leased();
    let pushes = r#","acks":[{"lease":"L1","txid":"m0","status":"completed"}],"pushes":[{"queue":"out","partition":"0","txid":"o1"}]"#;
    let t = b.op(40, 50, "txn", pushes, "unknown", "");
    b.log("q", &["m0"]);
    b.log("out", &["o1"]);
    let w = b.waiting(&[0]);
    let x = only(&b, Kind::TornTxn, &[t[0], t[1], w]);
    assert!(x.detail.contains("still waiting"), "{}", x.detail);
}

#[test]
fn a_rolled_back_transaction_in_the_log_is_rolled_back_visible() {
    let (mut b, _, _) = leased();
    let pushes = r#","acks":[{"lease":"L1","txid":"m0","status":"completed"}],"pushes":[{"queue":"out","partition":"0","txid":"o1"}]"#;
    let t = b.op(40, 50, "txn", pushes, "failed", "");
    b.log("q", &["m0"]);
    let out = b.log("out", &["o1"]);
    b.waiting(&[0]);
    only(&b, Kind::RolledBackVisible, &[t[0], t[1], out]);
}

#[test]
fn one_push_stored_twice_is_a_dedup_violation() {
    let mut b = B::new();
    let p = b.push(0, 10, "ok", "m0");
    let log = b.log("q", &["m0", "m0"]);
    b.waiting(&[0, 1]);
    only(&b, Kind::DedupStoredTwice, &[p[0], p[1], log]);
}

#[test]
fn a_retry_stored_again_inside_the_window_is_a_dedup_violation() {
    let mut b = B::new();
    let first = b.push(0, 0, "open", "m0");
    let retry = b.push(100, 110, "ok", "m0");
    b.push(200, 210, "ok", "m1");
    let log = b.log("q", &["m0", "m0", "m1"]);
    b.waiting(&[0, 1, 2]);
    // Both stores happened between 0 (the first invocation) and 210 (m1, above
    // both, answered): 210 ms apart at most, inside the 60 s window.
    only(&b, Kind::DedupStoredTwice, &[first[0], retry[0], retry[1], log]);
}

#[test]
fn a_committed_offset_read_after_it_was_certainly_overwritten_goes_backwards() {
    let mut b = B::new();
    let c5 = b.op(0, 10, "kafka_commit", r#","group":"g","topic":"k","partition":0,"offset":5"#, "ok", "");
    let c9 = b.op(20, 30, "kafka_commit", r#","group":"g","topic":"k","partition":0,"offset":9"#, "ok", "");
    let r = b.op(40, 50, "kafka_offset_fetch", r#","group":"g","topic":"k","partition":0"#, "ok", r#","offset":5"#);
    only(&b, Kind::KafkaCommitBackwards, &[c5[0], c5[1], c9[0], c9[1], r[0], r[1]]);
}

#[test]
fn no_committed_offset_after_a_commit_goes_backwards() {
    let mut b = B::new();
    let c = b.op(0, 10, "kafka_commit", r#","group":"g","topic":"k","partition":0,"offset":3"#, "ok", "");
    let r = b.op(40, 50, "kafka_offset_fetch", r#","group":"g","topic":"k","partition":0"#, "ok", r#","offset":-1"#);
    only(&b, Kind::KafkaCommitBackwards, &[c[0], c[1], r[0], r[1]]);
}

#[test]
fn an_idempotent_retry_stored_twice_is_a_kafka_duplicate() {
    let mut b = B::new();
    let args = r#","topic":"k","partition":0,"producer":{"id":7,"epoch":0,"seq":0},"records":[{"payload":"k0"}]"#;
    let first = b.op(0, 5, "kafka_produce", args, "unknown", "");
    let retry = b.op(100, 110, "kafka_produce", args, "ok", r#","base_offset":1"#);
    let log = b.line(
        r#"{"type":"final_log","queue":"k","partition":"0","entries":[{"offset":0,"payload":"k0"},{"offset":1,"payload":"k0"}]}"#,
    );
    only(&b, Kind::KafkaIdempotentDuplicate, &[first[0], first[1], retry[0], retry[1], log]);
}

// ---- ambiguities: none of these is a violation ------------------------------

#[test]
fn an_unknown_push_absent_at_the_end_is_fine() {
    let mut b = B::new();
    b.push(0, 10, "unknown", "m0");
    b.push(20, 0, "open", "m1");
    b.log("q", &[]);
    b.waiting(&[]);
    ok(&b);
}

#[test]
fn an_unknown_push_present_at_the_end_is_fine() {
    let mut b = B::new();
    b.push(0, 0, "open", "m0");
    b.push(20, 30, "unknown", "m1");
    b.pop(40, 50, "L1", &[(0, "m0"), (1, "m1")]);
    b.log("q", &["m0", "m1"]);
    b.waiting(&[0, 1]);
    ok(&b);
}

#[test]
fn an_unknown_ack_followed_by_redelivery_is_fine() {
    let (mut b, _, _) = leased();
    b.ack(40, 50, "unknown", "L1", &[("m0", "completed")]);
    b.pop(1100, 1110, "L2", &[(0, "m0")]);
    b.ack(1200, 1210, "ok", "L2", &[("m0", "completed")]);
    b.log("q", &["m0"]);
    b.waiting(&[]);
    ok(&b);
}

#[test]
fn redelivery_after_a_nack_or_a_lease_expiry_is_fine() {
    let mut b = B::new();
    b.push(0, 10, "ok", "m0");
    b.push(0, 10, "ok", "m1");
    b.pop(20, 30, "L1", &[(0, "m0"), (1, "m1")]);
    // m0 done, m1 failed: the lease is released and m1 comes back at once.
    b.ack(40, 50, "ok", "L1", &[("m0", "completed"), ("m1", "failed")]);
    b.pop(60, 70, "L2", &[(1, "m1")]);
    b.ack(80, 90, "ok", "L2", &[("m1", "retry")]);
    b.pop(100, 110, "L3", &[(1, "m1")]);
    // L3 is never acked: after it runs out, m1 comes back again.
    b.pop(1200, 1210, "L4", &[(1, "m1")]);
    b.ack(1300, 1310, "ok", "L4", &[("m1", "completed")]);
    b.log("q", &["m0", "m1"]);
    b.waiting(&[]);
    ok(&b);
}

#[test]
fn an_ack_and_a_pop_whose_intervals_overlap_may_be_in_either_order() {
    let (mut b, _, _) = leased();
    // The ack was invoked before the pop but answered after it was invoked: the
    // pop may have come first (after L1 ran out).
    b.ack(1000, 1200, "ok", "L1", &[("m0", "completed")]);
    b.pop(1100, 1150, "L2", &[(0, "m0")]);
    b.log("q", &["m0"]);
    b.waiting(&[]);
    ok(&b);
}

#[test]
fn pops_that_may_straddle_the_lease_boundary_are_not_a_double_lease() {
    let (mut b, _, _) = leased();
    // L1 is certainly live only until 20 + 1000 - 10 = 1010; this pop may land after.
    b.pop(1005, 1100, "L2", &[(0, "m0")]);
    b.ack(1200, 1210, "ok", "L2", &[("m0", "completed")]);
    b.log("q", &["m0"]);
    b.waiting(&[]);
    ok(&b);
    // Nor is a pop invoked before the other was answered: it may have come first.
    let mut b = B::new();
    b.push(0, 10, "ok", "m0");
    b.pop(20, 300, "L1", &[(0, "m0")]);
    b.pop(250, 260, "L2", &[(0, "m0")]);
    b.log("q", &["m0"]);
    b.waiting(&[0]);
    let v = not_violation(&b);
    assert_eq!(v.count(Kind::DoubleLease), 0);
}

#[test]
fn a_possible_release_before_the_next_pop_is_not_a_double_lease() {
    let (mut b, _, _) = leased();
    b.ack(40, 0, "open", "L1", &[("m0", "failed")]);
    b.pop(100, 110, "L2", &[(0, "m0")]);
    b.ack(200, 210, "ok", "L2", &[("m0", "completed")]);
    b.log("q", &["m0"]);
    b.waiting(&[]);
    ok(&b);
}

#[test]
fn an_ack_near_the_lease_end_or_after_a_restart_is_not_stale() {
    let (mut b, _, _) = leased();
    b.ack(1039, 1050, "ok", "L1", &[("m0", "completed")]);
    b.log("q", &["m0"]);
    b.waiting(&[]);
    ok(&b);
    // I5: a restart renews every lease it inherits for a full lease time.
    let (mut b, _, _) = leased();
    b.line(format!(r#"{{"type":"nemesis","t":{},"fault":"kill","phase":"start"}}"#, 500 * MS));
    b.line(format!(r#"{{"type":"nemesis","t":{},"fault":"kill","phase":"end"}}"#, 800 * MS));
    b.ack(1700, 1710, "ok", "L1", &[("m0", "completed")]);
    b.log("q", &["m0"]);
    b.waiting(&[]);
    ok(&b);
}

/// A fault that says it did not restart the node (a SIGSTOP: the lease clock ran on
/// while it was frozen) renews nothing: an ack after the lease ran out is stale. Without
/// that word it may have been a restart (I5), and the same ack is judged fine.
#[test]
fn a_fault_that_did_not_restart_the_node_renews_no_lease() {
    let stopped = |end: &str| {
        let (mut b, _, _) = leased();
        b.line(format!(r#"{{"type":"nemesis","t":{},"fault":"stop","phase":"start"}}"#, 500 * MS));
        b.line(format!(r#"{{"type":"nemesis","t":{},"fault":"stop","phase":"end"{end}}}"#, 800 * MS));
        b.ack(1700, 1710, "ok", "L1", &[("m0", "completed")]);
        b.log("q", &["m0"]);
        b.waiting(&[]);
        b
    };
    let b = stopped(r#","restarted":false"#);
    let v = b.judge();
    assert_eq!((v.status, v.count(Kind::StaleAck)), (Status::Violation, 1), "{}", render(&b, &v));
    ok(&stopped(""));
    ok(&stopped(r#","restarted":true"#));
}

#[test]
fn an_extend_answered_ok_keeps_the_lease_live() {
    let (mut b, _, _) = leased();
    b.op(900, 910, "extend", r#","lease":"L1""#, "ok", "");
    b.ack(1800, 1810, "ok", "L1", &[("m0", "completed")]);
    b.log("q", &["m0"]);
    b.waiting(&[]);
    ok(&b);
}

#[test]
fn an_extend_may_shorten_the_lease_so_a_later_pop_is_not_a_double_lease() {
    // An extend sets the end to (its instant + seconds): a 1 s extend 10 ms into a
    // 5 s lease ends it at ~1.02 s. Found by the recorder (tests/histories/extend-shortens-lease.jsonl).
    let mut b = B::new();
    b.line(r#"{"type":"queue","queue":"q","lease_ms":5000,"dead_letters":false}"#);
    b.push(0, 10, "ok", "m0");
    b.pop(20, 30, "L1", &[(0, "m0")]);
    b.op(40, 45, "extend", r#","lease":"L1","seconds":1"#, "ok", "");
    b.op(50, 60, "extend", r#","lease":"L1","seconds":1"#, "unknown", "");
    b.pop(1500, 1510, "L2", &[(0, "m0")]);
    b.log("q", &["m0"]);
    b.waiting(&[0]);
    ok(&b);
}

#[test]
fn a_pop_inside_the_end_an_ok_extend_set_is_a_double_lease() {
    let (mut b, _, a) = leased();
    let e = b.op(900, 910, "extend", r#","lease":"L1","seconds":2"#, "ok", "");
    // Certain end: the extend's invocation 900 + 2000 - 10 skew; the pop's own end
    // (1020 - 10) no longer counts once an extend certainly took effect.
    let second = b.pop(1500, 1510, "L2", &[(0, "m0")]);
    b.log("q", &["m0"]);
    b.waiting(&[0]);
    let v = b.judge();
    assert_eq!(v.count(Kind::DoubleLease), 1, "{}", render(&b, &v));
    let _ = (a, e, second);
}

#[test]
fn committing_a_lower_offset_or_reading_during_a_commit_is_fine() {
    let mut b = B::new();
    b.op(0, 10, "kafka_commit", r#","group":"g","topic":"k","partition":0,"offset":9"#, "ok", "");
    b.op(20, 30, "kafka_commit", r#","group":"g","topic":"k","partition":0,"offset":5"#, "ok", "");
    b.op(40, 50, "kafka_offset_fetch", r#","group":"g","topic":"k","partition":0"#, "ok", r#","offset":5"#);
    b.op(60, 200, "kafka_commit", r#","group":"g","topic":"k","partition":0,"offset":12"#, "ok", "");
    b.op(70, 80, "kafka_offset_fetch", r#","group":"g","topic":"k","partition":0"#, "ok", r#","offset":12"#);
    b.op(90, 100, "kafka_offset_fetch", r#","group":"g","topic":"k","partition":0"#, "ok", r#","offset":5"#);
    ok(&b);
}

#[test]
fn stores_further_apart_than_the_window_or_without_dedup_are_fine() {
    let mut b = B::new();
    b.push(0, 10, "ok", "m0");
    b.push(61_000, 61_010, "ok", "m0");
    b.log("q", &["m0", "m0"]);
    b.waiting(&[0, 1]);
    ok(&b);
    let mut b = B::new();
    b.lines[0] = b.lines[0].replace("60000", "0");
    b.push(0, 10, "ok", "m0");
    b.push(20, 30, "ok", "m0");
    b.log("q", &["m0", "m0"]);
    b.waiting(&[0, 1]);
    ok(&b);
}

#[test]
fn a_plain_kafka_retry_may_duplicate() {
    let mut b = B::new();
    let args = r#","topic":"k","partition":0,"records":[{"payload":"k0"}]"#;
    b.op(0, 5, "kafka_produce", args, "unknown", "");
    b.op(100, 110, "kafka_produce", args, "ok", "");
    b.line(r#"{"type":"final_log","queue":"k","partition":"0","entries":[{"offset":0,"payload":"k0"},{"offset":1,"payload":"k0"}]}"#);
    ok(&b);
}

#[test]
fn a_kafka_record_popped_over_http_with_a_minted_txid_is_not_a_phantom() {
    let mut b = B::new();
    b.lines[0] = b.lines[0].replace(r#""queue":"q""#, r#""queue":"k""#);
    let args = r#","topic":"k","partition":0,"records":[{"payload":"k0"}]"#;
    b.op(0, 5, "kafka_produce", args, "ok", "");
    let pop = r#","partition":"0","lease":"L1","messages":[{"offset":0,"txid":"minted-1"}]"#;
    b.op(20, 30, "pop", r#","queue":"k","consumer":"c","batch":1"#, "ok", pop);
    b.line(
        r#"{"type":"final_log","queue":"k","partition":"0","entries":[{"offset":0,"txid":"minted-1","payload":"k0"}]}"#,
    );
    ok(&b);
    // The same delivery with no record behind it is one.
    b.lines[1] = b.lines[1].replace("k0", "k1");
    b.lines[2] = b.lines[2].replace("ok", "failed");
    assert_eq!(b.judge().count(Kind::Phantom), 2, "the entry and its delivery");
}

#[test]
fn a_dead_lettered_message_is_not_lost() {
    let (mut b, _, _) = leased();
    b.ack(40, 50, "ok", "L1", &[("m0", "failed")]);
    b.log("q", &["m0"]);
    b.waiting(&[]);
    b.line(r#"{"type":"final_dlq","queue":"q","entries":[{"partition":"0","group":"__QUEUE_MODE__","offset":0}]}"#);
    ok(&b);
}

// ---- UNKNOWN ------------------------------------------------------------------

#[test]
fn an_ok_push_to_a_partition_never_read_is_unknown() {
    let mut b = B::new();
    b.push(0, 10, "ok", "m0");
    let v = not_violation(&b);
    assert_eq!(v.status, Status::Unknown);
    assert_eq!(v.unknown(Why::NoFinalLog), 1);
}

#[test]
fn an_ack_naming_a_lease_no_pop_returned_is_unknown() {
    let mut b = B::new();
    b.push(0, 10, "ok", "m0");
    b.ack(40, 50, "ok", "L7", &[("m0", "completed")]);
    b.log("q", &["m0"]);
    let v = not_violation(&b);
    assert_eq!(v.status, Status::Unknown);
    assert_eq!(v.unknown(Why::UnknownLease), 1);
}

#[test]
fn a_message_only_the_unread_dlq_can_explain_is_unknown() {
    let (mut b, _, _) = leased();
    b.lines[0] = b.lines[0].replace(r#""dead_letters":false"#, r#""dead_letters":true"#);
    // Never acked: its lease ran out past the retry limit, or it was lost.
    b.log("q", &["m0"]);
    b.waiting(&[]);
    let v = not_violation(&b);
    assert_eq!(v.status, Status::Unknown);
    assert_eq!(v.unknown(Why::DlqNotRead), 1);
    // Read, the DLQ decides: not there, so lost.
    b.line(r#"{"type":"final_dlq","queue":"q","entries":[]}"#);
    assert_eq!(b.judge().count(Kind::Lost), 1);
}

#[test]
fn a_queue_without_its_options_is_unknown() {
    let mut b = B::new();
    b.lines[0] = b.lines[0].replace(r#""queue":"q""#, r#""queue":"other""#);
    b.push(0, 10, "ok", "m0");
    b.pop(20, 30, "L1", &[(0, "m0")]);
    b.log("q", &["m0"]);
    b.waiting(&[0]);
    let v = not_violation(&b);
    assert_eq!(v.unknown(Why::QueueNotDeclared), 1);
}

// ---- the reader -------------------------------------------------------------------

#[test]
fn what_is_not_a_history_is_refused_with_its_line() {
    let e = parse_str("{\"type\":\"queue\",\"queue\":\"q\",\"lease_ms\":1}\n{\"type\":\"ok\",\"id\":4,\"t\":1}")
        .unwrap_err();
    assert!(e.starts_with("line 2:") && e.contains("not open"), "{e}");
    let e = parse_str(r#"{"type":"invoke","id":1,"t":1,"f":"ack","lease":"L","acks":[{"txid":"a","status":"maybe"}]}"#)
        .unwrap_err();
    assert!(e.contains("maybe"), "{e}");
    let e = parse_str(
        r#"{"type":"invoke","id":1,"t":5,"f":"pop","queue":"q"}
{"type":"ok","id":1,"t":4}"#,
    )
    .unwrap_err();
    assert!(e.contains("before its invocation"), "{e}");
}

#[test]
fn exit_codes_say_the_verdict() {
    assert_eq!(Status::Ok.exit_code(), 0);
    assert_eq!(Status::Violation.exit_code(), 1);
    assert_eq!(Status::Unknown.exit_code(), 2);
}
