//! D85: the nacks of one call under one lease are each charged, and only once.

use crate::command::*;
use crate::model::*;
use crate::plan_tests::{Fixture, S};
use crate::state::State;

fn item(r: &PopResult, offset: u64, status: AckStatus) -> AckItem {
    AckItem { part: r.part, txid: None, offset: Some(offset), lease: r.lease, status, error: None }
}

fn ack_all(f: &mut Fixture, now: Micros, items: &[AckItem]) -> Vec<Result<(), String>> {
    let out = f.at(now).ack(None, items).into_iter().map(|r| r.map_err(|e| e.code.to_string())).collect();
    f.done();
    out
}

#[test]
fn every_nack_of_one_call_under_one_lease_is_charged_once() {
    let mut f = Fixture::new();
    f.push(S, "q", "p", &["a", "b", "c", "d", "e"]);
    let r = f.pop(2 * S, "q", None, 5).unwrap();
    let items = [
        item(&r, 1, AckStatus::Completed),
        item(&r, 0, AckStatus::Failed),
        item(&r, 2, AckStatus::Failed),
        item(&r, 2, AckStatus::Failed),
        item(&r, 1, AckStatus::Failed),
        item(&r, 9, AckStatus::Failed),
        item(&r, 3, AckStatus::Retry),
    ];
    let got = ack_all(&mut f, 3 * S, &items);
    assert_eq!(
        got,
        vec![
            Ok(()),
            Ok(()),
            Ok(()),
            Err("already_acked".into()),
            Err("already_acked".into()),
            Err("not_leased".into()),
            Ok(())
        ]
    );
    // 0 and 2 were charged (second delivery), 3 was given back free, 4 never named.
    let again = f.pop(4 * S, "q", None, 5).unwrap();
    assert_eq!(again.messages, vec![(0, 2), (2, 2), (3, 1), (4, 1)]);
    // The entries rebuild the same state.
    let dir = tempfile::tempdir().unwrap();
    let mut replayed = State::new(crate::plan_tests::storage(dir.path()));
    for e in &f.log {
        replayed.apply(e).unwrap();
    }
    assert_eq!(serde_json::to_value(&replayed).unwrap(), serde_json::to_value(&f.p.state).unwrap());
}

#[test]
fn a_later_nack_past_the_retry_limit_is_dead_lettered() {
    let mut f = Fixture::new();
    f.configure(0, "q", QueueOptions { retry_limit: 1, ..Default::default() });
    f.push(S, "q", "p", &["a", "b"]);
    let r = f.pop(2 * S, "q", None, 2).unwrap();
    assert_eq!(
        ack_all(&mut f, 3 * S, &[item(&r, 0, AckStatus::Failed), item(&r, 1, AckStatus::Failed)]),
        vec![Ok(()), Ok(())]
    );
    let r = f.pop(4 * S, "q", None, 2).unwrap();
    assert_eq!(r.messages, vec![(0, 2), (1, 2)]);
    assert_eq!(
        ack_all(&mut f, 5 * S, &[item(&r, 0, AckStatus::Failed), item(&r, 1, AckStatus::Failed)]),
        vec![Ok(()), Ok(())]
    );
    assert!(f.pop(6 * S, "q", None, 2).is_none(), "both are past retryLimit");
    let dlq: Vec<u64> = f.p.state.queue("q").unwrap().dlq.iter().map(|d| d.offset).collect();
    assert_eq!(dlq, vec![0, 1]);
}

#[test]
fn a_nack_naming_a_lease_ended_by_another_call_is_still_refused() {
    let mut f = Fixture::new();
    f.push(S, "q", "p", &["a", "b"]);
    let r = f.pop(2 * S, "q", None, 2).unwrap();
    assert_eq!(ack_all(&mut f, 3 * S, &[item(&r, 0, AckStatus::Failed)]), vec![Ok(())]);
    assert_eq!(ack_all(&mut f, 3 * S, &[item(&r, 1, AckStatus::Failed)]), vec![Err("lease_not_live".into())]);
    let again = f.pop(4 * S, "q", None, 2).unwrap();
    assert_eq!(again.messages, vec![(0, 2), (1, 1)], "the refused nack charged nothing");
}
