//! I5 across terms (D41, amended by D49): what a new leader does with the leases it
//! inherits, at the planner.

use crate::command::*;
use crate::model::*;
use crate::plan_tests::{Fixture, S};

/// Regression (I5 across terms, CI on 2026-12-02): a new leader whose clock ran ahead by
/// more than what was left of a lease at its election saw that lease as already expired,
/// extended nothing and leased the message to a second consumer. Liveness is judged by the
/// last term's time (the last entry applied), never by the new leader's clock.
#[test]
fn i5_a_new_leader_ahead_by_more_than_the_lease_left_keeps_it() {
    let mut f = Fixture::new();
    f.configure(0, "q", QueueOptions { lease_time: 10, ..Default::default() });
    f.configure(0, "old", QueueOptions { lease_time: 1, ..Default::default() });
    f.push(S, "q", "p", &["a"]);
    f.push(S, "old", "p", &["z"]);
    f.pop(S, "old", None, 1).expect("a lease that ends at 2 s");
    f.pop(3 * S, "q", None, 1).expect("the first consumer's lease, until 13 s");
    // The old leader's last entry is at 3 s; the new one's clock reads 20 s (17 s ahead).
    let n = f.at(20 * S).inherit_leases().unwrap();
    f.done();
    assert_eq!(n, 1, "the live lease is extended; the one the last term saw end is not");
    assert!(f.pop(29 * S, "q", None, 1).is_none(), "leased again inside the extension");
    assert!(f.pop(29 * S, "old", None, 1).is_some(), "a lease that ended in the last term stays ended");
    assert!(f.pop(30 * S + 1, "q", None, 1).is_some(), "the extension ends a full lease time after the election");
}

/// I5 across terms keeps what was left of a lease, not the queue's whole `leaseTime` (D41 as
/// amended by D49): a share consumer's short lock (here a 5 s `leaseSeconds` on a queue of
/// 300 s) ends as long after the election as it had left at the last term's last entry,
/// whatever the new leader's clock reads; the old rule held it for 300 s more.
#[test]
fn i5_a_new_leader_keeps_what_was_left_of_a_short_lease_and_no_more() {
    let mut f = Fixture::new();
    f.configure(0, "q", QueueOptions { lease_time: 300, ..Default::default() });
    f.push(S, "q", "p", &["a"]);
    let req = PopRequest {
        queue: "q".into(),
        partition: None,
        group: None,
        batch: 1,
        lease_secs: Some(5),
        from_ts: None,
        auto_ack: false,
        conflate: false,
    };
    assert!(f.at(S).pop(&req).unwrap().is_some(), "a lease until 6 s");
    f.done();
    // The last term's last entry at 3 s: 3 s of the lease were left. The new leader's clock
    // reads 20 s (17 s ahead of the old one).
    f.push(3 * S, "q", "p", &["b"]);
    assert_eq!(f.at(20 * S).inherit_leases().unwrap(), 1);
    f.done();
    assert!(f.pop(22 * S, "q", None, 1).is_none(), "leased again before what was left had passed");
    let again = f.pop(23 * S + 1, "q", None, 1).expect("the lease ends 3 s after the election");
    assert_eq!(again.messages, vec![(0, 2)], "the first message, on its second delivery");
}
