//! The fuzz target's way in (crates/http/fuzz): every JSON body the API
//! takes, judged exactly as its route judges it (the same functions), with
//! no engine and no I/O, so libFuzzer can run it millions of times. A route's
//! judging must never panic, and must never allocate more than a bound set by
//! the input's size and the configured limits; the target checks both.
//! Never used by the server itself.

use crate::body::parse;
use crate::consume::{ack_item, AckBatchBody, AckBody};
use crate::kv::{kv_op, timer_op, KvBody, TimersBody};
use crate::HttpConfig;

/// Judges `data` as the body of every JSON route: push, transaction, ack, ack batch, KV,
/// timers, and the payload check on its own. Returns how many routes accepted it.
pub fn judge_bodies(data: &[u8]) -> usize {
    let cfg = HttpConfig::default();
    let mut accepted = 0;
    accepted += crate::push::push_request(data, &cfg).is_ok() as usize;
    accepted += crate::txn::txn_request(data, &cfg).is_ok() as usize;
    if let Ok(a) = parse::<AckBody>(data) {
        accepted += ack_item(0, &a, cfg.max_ack_error_bytes).is_ok() as usize;
    }
    if let Ok(b) = parse::<AckBatchBody>(data) {
        accepted += b.acknowledgments.iter().all(|a| ack_item(0, a, cfg.max_ack_error_bytes).is_ok()) as usize;
    }
    if let Ok(b) = parse::<KvBody>(data) {
        let ops: Result<Vec<_>, _> =
            b.operations.into_iter().enumerate().map(|(i, o)| kv_op(i, o, cfg.max_payload_depth)).collect();
        accepted += ops.is_ok_and(|ops| baton_core::kv::validate(&ops).is_ok()) as usize;
    }
    if let Ok(b) = parse::<TimersBody>(data) {
        let ops: Result<Vec<_>, _> =
            b.operations.into_iter().enumerate().map(|(i, o)| timer_op(i, o, cfg.max_payload_depth)).collect();
        accepted += ops.is_ok_and(|ops| baton_core::timers::validate(&ops).is_ok()) as usize;
    }
    if let Ok(s) = std::str::from_utf8(data) {
        accepted += crate::payload::check(s, cfg.max_payload_depth).is_ok() as usize;
    }
    accepted
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_route_judges_its_own_valid_body_and_refuses_junk() {
        let push = br#"{"items":[{"queue":"q","payload":{"a":1}}]}"#;
        assert!(super::judge_bodies(push) >= 2, "push and the payload check accept it");
        assert_eq!(super::judge_bodies(b"\xff{"), 0);
        let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        assert_eq!(super::judge_bodies(deep.as_bytes()), 0);
    }
}
