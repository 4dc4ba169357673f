//! The checker judged against the simulator (generate.rs): every history of a
//! correct lease queue, with random interval widths, lost answers, late
//! consumers, nacks, transactions, restarts and Kafka operations, must be
//! judged not-VIOLATION; and each injected broker bug must be judged
//! VIOLATION of its own kind. Fixed seeds, bounded sizes: repeatable.

use super::generate::{self, Bug, Config, Stats};
use super::*;

fn judge(cfg: &Config) -> (Verdict, Stats, String) {
    let mut buf = Vec::new();
    let stats = generate::run(cfg, &mut buf).unwrap();
    let text = String::from_utf8(buf).unwrap();
    let h = parse_str(&text).unwrap_or_else(|e| panic!("the simulator wrote an unreadable history: {e}"));
    let v = check(&h, &Params { skew_us: 1_000 });
    let lines: Vec<&str> = text.lines().collect();
    let report = v.render(&|l| lines.get(l as usize - 1).map(|s| s.to_string()));
    (v, stats, report)
}

fn correct(seed: u64) -> Config {
    Config::small(seed)
}

#[test]
fn a_correct_queue_is_never_a_violation() {
    let mut judged = 0;
    for seed in 1..=30 {
        let (v, s, report) = judge(&correct(seed));
        assert_ne!(v.status, Status::Violation, "seed {seed}:\n{report}");
        assert!(s.messages > 250, "seed {seed}: only {} messages stored", s.messages);
        judged += v.deliveries;
    }
    assert!(judged > 10_000, "the runs must deliver enough to mean something ({judged})");
}

#[test]
fn wide_intervals_and_many_lost_answers_are_still_not_a_violation() {
    for seed in 100..=115 {
        let mut c = correct(seed);
        // Intervals as wide as half a lease, a quarter of all answers lost.
        c.width_us = c.lease_us / 2;
        c.unknown = 0.25;
        c.late = 0.2;
        let (v, _, report) = judge(&c);
        assert_ne!(v.status, Status::Violation, "seed {seed}:\n{report}");
    }
}

#[test]
fn narrow_intervals_without_faults_are_ok() {
    for seed in 200..=205 {
        let mut c = correct(seed);
        c.unknown = 0.0;
        c.crashes = 0;
        let (v, _, report) = judge(&c);
        assert_eq!(v.status, Status::Ok, "seed {seed}:\n{report}");
    }
}

/// Run the buggy broker over a few seeds: the bug must fire, and be caught as `kind`.
fn caught(bug: Bug, kind: Kind, tune: impl Fn(&mut Config)) {
    let mut fired = 0;
    for seed in 1..=8 {
        let mut c = correct(seed);
        c.bug = Some(bug);
        tune(&mut c);
        let (v, s, report) = judge(&c);
        fired += s.bug_fired;
        if v.count(kind) > 0 {
            assert_eq!(v.status, Status::Violation);
            let x = v.violations.iter().find(|x| x.kind == kind).unwrap();
            assert!(!x.lines.is_empty(), "{bug:?}: a violation names its lines:\n{report}");
            return;
        }
    }
    panic!("{bug:?} fired {fired} times and was never caught as {}", kind.name());
}

#[test]
fn a_dropped_push_is_lost() {
    caught(Bug::DropPush, Kind::Lost, |_| {});
}

#[test]
fn an_ack_answered_ok_but_not_applied_is_redelivered_after_ack() {
    caught(Bug::LostAck, Kind::RedeliveredAfterAck, |_| {});
}

#[test]
fn an_unfenced_ack_is_stale() {
    caught(Bug::UnfencedAck, Kind::StaleAck, |c| c.late = 0.3);
}

#[test]
fn a_pop_ignoring_a_live_lease_is_a_double_lease() {
    caught(Bug::DoubleLease, Kind::DoubleLease, |_| {});
}

#[test]
fn a_pop_passing_over_a_pending_message_is_out_of_order() {
    caught(Bug::SkipPending, Kind::Order, |_| {});
}

#[test]
fn a_transaction_storing_half_its_pushes_is_torn() {
    caught(Bug::TornTxn, Kind::TornTxn, |_| {});
}

#[test]
fn a_refused_transaction_that_stored_is_rolled_back_visible() {
    caught(Bug::RolledBackVisible, Kind::RolledBackVisible, |c| c.late = 0.3);
}

#[test]
fn a_retry_stored_again_inside_the_window_is_a_dedup_violation() {
    caught(Bug::DedupBroken, Kind::DedupStoredTwice, |c| c.unknown = 0.2);
}

#[test]
fn an_idempotent_retry_stored_again_is_a_kafka_duplicate() {
    caught(Bug::KafkaDuplicate, Kind::KafkaIdempotentDuplicate, |c| c.unknown = 0.2);
}

#[test]
fn a_stale_committed_offset_is_backwards() {
    caught(Bug::CommitBackwards, Kind::KafkaCommitBackwards, |c| c.unknown = 0.0);
}

#[test]
fn the_benchmark_input_is_ok() {
    let (v, s, report) = judge(&Config::bench(20_000, 3));
    assert!(s.messages >= 20_000, "{}", s.messages);
    assert!(v.deliveries >= 20_000, "the run drains the queue: {}", v.deliveries);
    assert_ne!(v.status, Status::Violation, "{report}");
}
