//! A push planned in steps (D80): each step is one whole entry of whole groups, and the
//! steps together answer exactly what one step would have.

use crate::command::*;
use crate::plan_tests::{Fixture, S};

fn group(part: &str, t: &str, index: usize) -> PushGroup {
    let records =
        vec![PushRecord { txid: t.into(), client_txid: true, value: "1".as_bytes().to_vec().into(), trace: None }];
    let batch =
        baton_wire::encode_batch(&[baton_wire::NewRecord { key: None, value: b"1", txid: Some(t), trace: None }], 0)
            .unwrap();
    PushGroup { queue: "q".into(), partition: part.into(), indexes: vec![index], records, batch }
}

fn groups() -> Vec<PushGroup> {
    // "p1" twice over: the second is a duplicate of the first, across steps.
    vec![group("p0", "a", 0), group("p1", "b", 1), group("p2", "c", 2), group("p1", "b", 3)]
}

fn statuses(mut r: Vec<PushResult>) -> Vec<(usize, String)> {
    r.sort_by_key(|r| r.index);
    r.into_iter().map(|r| (r.index, format!("{:?}", r.status))).collect()
}

#[test]
fn a_push_with_no_time_left_plans_one_group_a_step_and_answers_as_one_step_would() {
    let mut whole = Fixture::new();
    let (all, rest) = whole.at(S).push_step(groups(), None);
    assert!(rest.is_empty());
    whole.done();
    assert_eq!(whole.log.len(), 1);

    let mut stepped = Fixture::new();
    let mut left = groups();
    let mut answers = Vec::new();
    for step in 1..=4 {
        let (done, rest) = stepped.at(S + step).push_step(left, Some(std::time::Duration::ZERO));
        assert_eq!(done.len(), 1, "step {step}: one group, at least one");
        answers.extend(done);
        stepped.done();
        left = rest;
    }
    assert!(left.is_empty());
    // The duplicate group changes nothing, so it writes no entry of its own.
    assert_eq!(stepped.log.len(), 3, "one entry per step that stored something");
    assert_eq!(statuses(answers), statuses(all));
}
