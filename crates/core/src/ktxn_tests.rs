//! Kafka transactions in the planner and apply (D48): what a commit, an abort, a fence
//! and a timeout do to the state, each checked against the invariant it must keep.

use crate::command::*;
use crate::entry::Effect;
use crate::kafka_ops::{ProduceOutcome as O, ProduceRequest};
use crate::ktxn_plan::{TxnError, TxnOp, TxnReply};
use crate::model::*;
use crate::plan_tests::{kafka_batch, storage, Fixture, S};
use crate::state::State;

fn txn_batch(n: usize, pid: i64, epoch: i16, seq: i32) -> Vec<u8> {
    let mut b = kafka_batch(n, pid, epoch, seq);
    let attrs = i16::from_be_bytes([b[21], b[22]]) | baton_wire::ATTR_TRANSACTIONAL;
    b[21..23].copy_from_slice(&attrs.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

impl Fixture {
    fn txn(&mut self, now: Micros, op: TxnOp) -> Result<TxnReply, TxnError> {
        let r = self.at(now).step(|p| p.kafka_txn(op)).unwrap();
        self.done();
        r
    }

    fn produce_to(&mut self, now: Micros, part: &str, b: Vec<u8>, txn_id: Option<&str>) -> O {
        let r = self.at(now).produce(ProduceRequest {
            topic: "t".into(),
            partition: part.into(),
            batches: vec![b],
            create: false,
            producer_expiry: crate::kafka_ops::DEFAULT_PRODUCER_EXPIRY,
            txn_id: txn_id.map(str::to_string),
            implicit_txn: false,
        });
        self.done();
        r.unwrap()
    }

    fn init(&mut self, now: Micros, tid: &str, timeout_ms: i32) -> (i64, i16) {
        match self.txn(now, TxnOp::Init { tid: tid.into(), timeout_ms, producer: -1, epoch: -1 }) {
            Ok(TxnReply::Producer { producer, epoch }) => (producer, epoch),
            other => panic!("init: {other:?}"),
        }
    }

    fn add(
        &mut self,
        now: Micros,
        tid: &str,
        (producer, epoch): (i64, i16),
        parts: &[&str],
    ) -> Result<TxnReply, TxnError> {
        let parts = parts.iter().map(|p| ("t".to_string(), p.to_string())).collect();
        self.txn(now, TxnOp::AddPartitions { tid: tid.into(), producer, epoch, parts })
    }

    fn end(
        &mut self,
        now: Micros,
        tid: &str,
        (producer, epoch): (i64, i16),
        commit: bool,
    ) -> Result<TxnReply, TxnError> {
        self.txn(now, TxnOp::End { tid: tid.into(), producer, epoch, commit, bump: false })
    }

    fn part(&self, name: &str) -> &crate::partition::Partition {
        self.p.state.partition("t", name).unwrap()
    }

    fn topic(&mut self, now: Micros, partitions: u32) {
        self.at(now).create_topic("t", partitions).unwrap();
        self.done();
    }
}

fn offsets_of(r: &PopResult) -> Vec<u64> {
    r.messages.iter().map(|m| m.0).collect()
}

#[test]
fn a_commit_is_one_entry_with_its_markers_and_its_offsets() {
    let mut f = Fixture::new();
    f.topic(S, 2);
    f.push(S, "in", "0", &["i0", "i1", "i2"]);
    let pe = f.init(2 * S, "x", 60_000);
    f.add(3 * S, "x", pe, &["0", "1"]).unwrap();
    f.txn(3 * S, TxnOp::AddOffsets { tid: "x".into(), producer: pe.0, epoch: pe.1, group: "g".into() }).unwrap();
    assert_eq!(f.produce_to(4 * S, "0", txn_batch(3, pe.0, pe.1, 0), Some("x")), O::Appended { base_offset: 0 });
    assert_eq!(f.produce_to(4 * S, "1", txn_batch(1, pe.0, pe.1, 0), Some("x")), O::Appended { base_offset: 0 });
    let offs = vec![("in".to_string(), "0".to_string(), 2)];
    let op = TxnOp::Offsets {
        tid: "x".into(),
        producer: pe.0,
        epoch: pe.1,
        group: "g".into(),
        offsets: offs,
        implicit: false,
    };
    f.txn(5 * S, op).unwrap();
    // I7: while the transaction is open nothing of it is stable, and no pop delivers it.
    assert_eq!(f.part("0").planned_stable(), 0);
    assert!(f.pop(5 * S, "t", Some("h"), 10).is_none());
    assert!(!f.p.state.group_ids.contains_key("g"), "offsets wait for the commit");
    let before = f.log.len();
    f.end(6 * S, "x", pe, true).unwrap();
    assert_eq!(f.log.len(), before + 1, "the commit is one entry");
    let kinds: Vec<&str> = f.log[before]
        .effects
        .iter()
        .map(|e| match e {
            Effect::Append { .. } => "append",
            Effect::KafkaTxnMark { commit: true, .. } => "commit-mark",
            Effect::Commit { .. } => "offset",
            Effect::CreateGroup { .. } => "group",
            Effect::KafkaTxnEnd { commit: true, .. } => "end",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["append", "commit-mark", "append", "commit-mark", "group", "offset", "end"]);
    assert_eq!(f.part("0").planned_stable(), 4);
    let g = f.p.state.group_ids["g"];
    assert_eq!(f.p.state.partition("in", "0").unwrap().cursors[&g].next, 2);
    // The marker (offset 3) is no one's: the pop delivers the records and passes it.
    let r = f.pop(7 * S, "t", Some("h"), 10).unwrap();
    let got = offsets_of(&r);
    let r2 = f.pop(7 * S, "t", Some("h"), 10).unwrap();
    let mut all = [got, offsets_of(&r2)].concat();
    all.sort();
    assert_eq!(all, vec![0, 0, 1, 2], "partition 0: 0..3, partition 1: 0; markers never");
}

#[test]
fn an_abort_hides_its_records_from_pops_and_lists_them_for_fetch() {
    let mut f = Fixture::new();
    f.topic(S, 1);
    assert_eq!(f.produce_to(S, "0", kafka_batch(1, -1, -1, -1), None), O::Appended { base_offset: 0 });
    let pe = f.init(2 * S, "x", 60_000);
    f.add(2 * S, "x", pe, &["0"]).unwrap();
    assert_eq!(f.produce_to(3 * S, "0", txn_batch(2, pe.0, pe.1, 0), Some("x")), O::Appended { base_offset: 1 });
    assert_eq!(f.produce_to(3 * S, "0", kafka_batch(1, -1, -1, -1), None), O::Appended { base_offset: 3 });
    assert_eq!(f.part("0").planned_stable(), 1, "stable stops at the open transaction's first offset");
    let r = f.pop(4 * S, "t", None, 10).unwrap();
    assert_eq!(offsets_of(&r), vec![0], "nothing past the stable end is delivered");
    f.ack(4 * S, &r, 0, AckStatus::Completed).unwrap();
    f.end(5 * S, "x", pe, false).unwrap();
    let p = f.part("0");
    assert_eq!((p.end, p.planned_stable()), (5, 5));
    assert_eq!(p.txns.aborted_in(0, 5), vec![(pe.0, 1)]);
    assert_eq!(p.txns.hidden_end(1), Some(3));
    assert!(p.is_marker(4) && !p.is_marker(3));
    let r = f.pop(6 * S, "t", None, 10).unwrap();
    assert_eq!(offsets_of(&r), vec![3], "aborted records and the marker are never delivered");
    f.ack(6 * S, &r, 3, AckStatus::Completed).unwrap();
    assert!(f.pop(7 * S, "t", None, 10).is_none());
    let q = f.p.state.group_ids[QUEUE_MODE];
    let c = &f.part("0").cursors[&q];
    assert_eq!((c.next, c.done.len()), (5, 0), "the cursor moved past every hidden offset");
}

#[test]
fn a_new_epoch_fences_the_zombie_and_aborts_its_transaction() {
    let mut f = Fixture::new();
    f.topic(S, 1);
    let old = f.init(S, "x", 60_000);
    f.add(S, "x", old, &["0"]).unwrap();
    assert!(matches!(f.produce_to(2 * S, "0", txn_batch(1, old.0, old.1, 0), Some("x")), O::Appended { .. }));
    let new = f.init(3 * S, "x", 60_000);
    assert_eq!(new, (old.0, old.1 + 1), "same producer, next epoch");
    assert_eq!(f.part("0").txns.aborted_in(0, 10), vec![(old.0, 0)], "the zombie's open transaction was aborted");
    let end = f.part("0").end;
    assert_eq!(f.add(4 * S, "x", old, &["0"]), Err(TxnError::Fenced));
    assert_eq!(f.produce_to(4 * S, "0", txn_batch(1, old.0, old.1, 1), Some("x")), O::InvalidProducerEpoch);
    assert_eq!(f.end(4 * S, "x", old, true), Err(TxnError::Fenced));
    assert_eq!(f.part("0").end, end, "nothing of the zombie's was stored");
    // The new epoch works, its sequence from 0.
    f.add(5 * S, "x", new, &["0"]).unwrap();
    assert!(matches!(f.produce_to(5 * S, "0", txn_batch(1, new.0, new.1, 0), Some("x")), O::Appended { .. }));
    f.end(6 * S, "x", new, true).unwrap();
    // A retried EndTxn is answered as the first; the opposite one is refused.
    assert_eq!(f.end(6 * S, "x", new, true), Ok(TxnReply::Done));
    assert!(matches!(f.end(6 * S, "x", new, false), Err(TxnError::InvalidState(_))));
}

#[test]
fn a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced() {
    let mut f = Fixture::new();
    f.topic(S, 1);
    let pe = f.init(S, "x", 2_000);
    f.add(S, "x", pe, &["0"]).unwrap();
    f.produce_to(S, "0", txn_batch(2, pe.0, pe.1, 0), Some("x"));
    assert_eq!(f.txn(2 * S, TxnOp::Expire), Ok(TxnReply::Expired(0)));
    assert_eq!(f.part("0").planned_stable(), 0);
    assert_eq!(f.txn(4 * S, TxnOp::Expire), Ok(TxnReply::Expired(1)));
    assert_eq!(f.part("0").planned_stable(), 3);
    assert_eq!(f.part("0").txns.aborted_in(0, 3), vec![(pe.0, 0)]);
    assert_eq!(f.end(4 * S, "x", pe, true), Err(TxnError::Fenced));
    assert_eq!(f.p.state.ktxn.ids["x"].epoch, pe.1 + 1);
}

#[test]
fn a_transactional_batch_outside_its_transaction_stores_nothing() {
    let mut f = Fixture::new();
    f.topic(S, 2);
    let pe = f.init(S, "x", 60_000);
    let refused = |o: O| matches!(o, O::InvalidTxnState(_));
    assert!(refused(f.produce_to(S, "0", txn_batch(1, pe.0, pe.1, 0), Some("x"))), "not added");
    f.add(S, "x", pe, &["0"]).unwrap();
    assert!(refused(f.produce_to(S, "1", txn_batch(1, pe.0, pe.1, 0), Some("x"))), "another partition");
    assert!(refused(f.produce_to(S, "0", txn_batch(1, pe.0, pe.1, 0), Some("y"))), "another transactional id");
    assert!(refused(f.produce_to(S, "0", kafka_batch(1, pe.0, pe.1, 0), Some("x"))), "not marked transactional");
    let idem = f.at(S).init_producer().unwrap();
    f.done();
    assert!(refused(f.produce_to(S, "0", txn_batch(1, idem, 0, 0), Some("x"))), "an idempotent producer's");
    assert_eq!((f.part("0").end, f.part("1").end), (0, 0));
}

#[test]
fn bounds_and_bad_arguments_are_refused_before_anything_is_planned() {
    let mut f = Fixture::new();
    f.p.limits.max_kafka_txn_ids = 1;
    let before = f.log.len();
    let init = |tid: &str, timeout_ms| TxnOp::Init { tid: tid.into(), timeout_ms, producer: -1, epoch: -1 };
    assert_eq!(f.txn(S, init("x", 0)), Err(TxnError::InvalidTimeout));
    assert_eq!(f.txn(S, init("x", 900_001)), Err(TxnError::InvalidTimeout));
    f.init(S, "x", 1000);
    assert!(matches!(f.txn(S, init("y", 1000)), Err(TxnError::TooMany(_))));
    assert_eq!(f.log.len(), before + 1);
    let pe = (f.p.state.ktxn.ids["x"].producer, 0);
    assert_eq!(f.add(S, "x", pe, &["9"]), Err(TxnError::UnknownPartition));
    assert_eq!(f.add(S, "nope", pe, &["9"]), Err(TxnError::UnknownId));
    assert_eq!(f.add(S, "x", (pe.0 + 1, 0), &["9"]), Err(TxnError::ProducerIdMismatch));
    assert_eq!(f.log.len(), before + 1, "no refusal wrote an entry");
}

#[test]
fn replay_rebuilds_the_same_transaction_state() {
    let mut f = Fixture::new();
    f.topic(S, 2);
    let a = f.init(S, "a", 2_000);
    let b = f.init(S, "b", 60_000);
    f.add(S, "a", a, &["0", "1"]).unwrap();
    f.add(S, "b", b, &["0"]).unwrap();
    for (part, batch, tid) in [
        ("0", txn_batch(2, a.0, a.1, 0), "a"),
        ("0", txn_batch(1, b.0, b.1, 0), "b"),
        ("1", txn_batch(1, a.0, a.1, 0), "a"),
    ] {
        let o = f.produce_to(2 * S, part, batch, Some(tid));
        assert!(matches!(o, O::Appended { .. }), "{part} {tid}: {o:?}");
    }
    f.end(3 * S, "b", b, true).unwrap();
    assert_eq!(f.txn(9 * S, TxnOp::Expire), Ok(TxnReply::Expired(1)));
    let r = f.pop(10 * S, "t", None, 10).unwrap();
    f.ack(10 * S, &r, r.messages[0].0, AckStatus::Completed).unwrap();
    let live = serde_json::to_value(&f.p.state).unwrap();
    let mut replayed = State::new(storage(&f._dir.path().join("replay")));
    for e in &f.log {
        replayed.apply(e).unwrap();
    }
    replayed.applied_index = f.p.state.applied_index;
    assert_eq!(serde_json::to_value(&replayed).unwrap(), live, "replay diverged from the live state");
    assert_eq!(f.part("0").txns.aborted_in(0, 10), vec![(a.0, 0)], "{:?}", f.part("0").txns);
    assert!(f.p.state.ktxn.ids["a"].open_since.is_none());
}

#[test]
fn a_spent_epoch_gives_the_id_a_new_producer_and_aborts_under_the_old_one() {
    let mut f = Fixture::new();
    f.topic(S, 1);
    let old = f.init(S, "x", 60_000);
    f.p.state.ktxn.ids.get_mut("x").unwrap().epoch = i16::MAX - 1;
    let worn = (old.0, i16::MAX - 1);
    f.add(S, "x", worn, &["0"]).unwrap();
    assert!(matches!(f.produce_to(S, "0", txn_batch(1, worn.0, worn.1, 0), Some("x")), O::Appended { .. }));
    let new = f.init(2 * S, "x", 60_000);
    assert_ne!(new.0, old.0, "a new producer id");
    assert_eq!(new.1, 0);
    // The abort's marker names the producer that wrote the records, so readers drop them.
    assert_eq!(f.part("0").txns.aborted_in(0, 10), vec![(old.0, 0)]);
    assert!(f.part("0").txns.open.is_empty());
    assert_eq!(f.p.state.ktxn.by_producer.get(&new.0).map(String::as_str), Some("x"));
    assert!(!f.p.state.ktxn.by_producer.contains_key(&old.0), "the spent producer is no one's");
    assert_eq!(f.add(3 * S, "x", worn, &["0"]), Err(TxnError::ProducerIdMismatch));
}

#[test]
fn a_partition_at_its_aborted_bound_takes_no_new_transaction_but_ends_open_ones() {
    let mut f = Fixture::new();
    f.p.limits.max_aborted_txns = 1;
    f.topic(S, 1);
    let a = f.init(S, "a", 2_000);
    let b = f.init(S, "b", 60_000);
    f.add(S, "a", a, &["0"]).unwrap();
    f.add(S, "b", b, &["0"]).unwrap();
    f.produce_to(S, "0", txn_batch(1, a.0, a.1, 0), Some("a"));
    f.produce_to(S, "0", txn_batch(1, b.0, b.1, 0), Some("b"));
    f.end(2 * S, "b", b, false).unwrap();
    assert!(matches!(f.add(2 * S, "b", b, &["0"]), Err(TxnError::TooMany(_))), "the bound is hit");
    let mut implicit = ProduceRequest {
        topic: "t".into(),
        partition: "0".into(),
        batches: vec![txn_batch(1, b.0, b.1, 1)],
        create: false,
        producer_expiry: crate::kafka_ops::DEFAULT_PRODUCER_EXPIRY,
        txn_id: Some("b".into()),
        implicit_txn: true,
    };
    let r = f.at(2 * S).produce(implicit.clone()).unwrap();
    f.done();
    assert!(matches!(r, O::InvalidTxnState(_)), "nor through a v2 produce: {r:?}");
    // A transaction already open here still ends, past the bound: its timeout aborts it.
    assert_eq!(f.txn(4 * S, TxnOp::Expire), Ok(TxnReply::Expired(1)));
    assert_eq!(f.part("0").txns.aborted.len(), 2);
    assert_eq!(f.part("0").planned_stable(), f.part("0").end);
    implicit.batches = vec![txn_batch(1, b.0, b.1, 1)];
    let end = f.part("0").end;
    let _ = f.at(5 * S).produce(implicit);
    f.done();
    assert_eq!(f.part("0").end, end, "still refused, nothing stored");
}
