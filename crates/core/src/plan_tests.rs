//! Planner and apply, without threads or WAL: each invariant that the
//! planner or apply enforces has a test here.

use crate::command::*;
use crate::entry::Entry;
use crate::model::*;
use crate::plan::Planner;
use crate::state::{State, StorageConfig};

pub(crate) const S: u64 = 1_000_000;

pub(crate) struct Fixture {
    pub(crate) p: Planner,
    pub(crate) log: Vec<Entry>,
    pub(crate) _dir: tempfile::TempDir,
}

pub(crate) fn storage(dir: &std::path::Path) -> StorageConfig {
    StorageConfig {
        data_dir: dir.to_path_buf(),
        segment_bytes: 4096,
        provisioner: None,
        defer_writes: false,
        ..Default::default()
    }
}

impl Fixture {
    pub(crate) fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let p = Planner::new(State::new(storage(&dir.path().join("live"))));
        Fixture { p, log: Vec::new(), _dir: dir }
    }

    pub(crate) fn at(&mut self, now: Micros) -> &mut Planner {
        self.p.begin(now);
        &mut self.p
    }

    pub(crate) fn done(&mut self) {
        if let Some(e) = self.p.finish().expect("a whole plan") {
            self.log.push(e);
        }
    }

    pub(crate) fn push(&mut self, now: Micros, queue: &str, part: &str, txids: &[&str]) -> Vec<PushResult> {
        let records: Vec<PushRecord> = txids
            .iter()
            .map(|t| PushRecord {
                txid: t.to_string(),
                client_txid: true,
                value: format!("\"{t}\"").into_bytes().into(),
                trace: None,
            })
            .collect();
        let recs: Vec<_> = records
            .iter()
            .map(|r| baton_wire::NewRecord { key: None, value: &r.value, txid: Some(&r.txid), trace: None })
            .collect();
        let batch = baton_wire::encode_batch(&recs, (now / 1000) as i64).unwrap();
        let g = PushGroup {
            queue: queue.into(),
            partition: part.into(),
            indexes: (0..txids.len()).collect(),
            records,
            batch,
        };
        let r = self.at(now).push(vec![g]);
        self.done();
        r
    }

    pub(crate) fn pop(&mut self, now: Micros, queue: &str, group: Option<&str>, batch: u32) -> Option<PopResult> {
        let req = PopRequest {
            queue: queue.into(),
            partition: None,
            group: group.map(str::to_string),
            batch,
            lease_secs: None,
            from_ts: None,
            auto_ack: false,
            conflate: false,
        };
        let r = self.at(now).pop(&req).unwrap();
        self.done();
        r
    }

    pub(crate) fn ack(&mut self, now: Micros, r: &PopResult, offset: u64, status: AckStatus) -> Result<(), CoreError> {
        let item = AckItem { part: r.part, txid: None, offset: Some(offset), lease: r.lease, status, error: None };
        let group = (r.group != QUEUE_MODE).then_some(r.group.clone());
        let out = self.at(now).ack(group.as_deref(), &[item]).pop().unwrap();
        self.done();
        out
    }

    pub(crate) fn configure(&mut self, now: Micros, queue: &str, o: QueueOptions) {
        self.at(now).configure(queue, o).unwrap();
        self.done();
    }
}

fn offsets(r: &PopResult) -> Vec<u64> {
    r.messages.iter().map(|m| m.0).collect()
}

#[test]
fn fifo_and_one_lease_per_partition_per_group() {
    let mut f = Fixture::new();
    f.push(10 * S, "q", "p", &["a", "b", "c"]);
    let r = f.pop(11 * S, "q", None, 2).unwrap();
    assert_eq!(offsets(&r), vec![0, 1]);
    // While the lease lives, the partition is closed to the group (FIFO).
    assert!(f.pop(12 * S, "q", None, 2).is_none());
    // Another group reads independently.
    let g = f.pop(12 * S, "q", Some("g"), 10).unwrap();
    assert_eq!(offsets(&g), vec![0, 1, 2]);
}

#[test]
fn i6_acked_message_is_not_delivered_again() {
    let mut f = Fixture::new();
    f.push(S, "q", "p", &["a", "b"]);
    let r = f.pop(2 * S, "q", None, 10).unwrap();
    f.ack(3 * S, &r, 0, AckStatus::Completed).unwrap();
    f.ack(3 * S, &r, 1, AckStatus::Completed).unwrap();
    assert!(f.pop(4 * S, "q", None, 10).is_none());
    // Even after every lease would have expired.
    assert!(f.pop(4000 * S, "q", None, 10).is_none());
    f.push(4001 * S, "q", "p", &["c"]);
    assert_eq!(offsets(&f.pop(4002 * S, "q", None, 10).unwrap()), vec![2]);
}

#[test]
fn i4_expired_lease_fences_its_acks_and_changes_nothing() {
    let mut f = Fixture::new();
    f.configure(0, "q", QueueOptions { lease_time: 5, ..Default::default() });
    f.push(S, "q", "p", &["a"]);
    let r = f.pop(2 * S, "q", None, 1).unwrap();
    let before = serde_json::to_value(&f.p.state).unwrap();
    let err = f.ack(8 * S, &r, 0, AckStatus::Completed).unwrap_err();
    assert_eq!(err.code, "lease_not_live");
    assert_eq!(serde_json::to_value(&f.p.state).unwrap(), before, "a fenced ack changed state");
    // Redelivered with the failure charged.
    let again = f.pop(9 * S, "q", None, 1).unwrap();
    assert_eq!(again.messages, vec![(0, 2)]);
    // The old lease id stays fenced even though the partition is leased again.
    let err = f.ack(9 * S, &r, 0, AckStatus::Completed).unwrap_err();
    assert_eq!(err.code, "lease_not_live");
}

#[test]
fn failed_ack_charges_and_dead_letters_past_retry_limit() {
    let mut f = Fixture::new();
    f.configure(0, "q", QueueOptions { retry_limit: 1, ..Default::default() });
    f.push(S, "q", "p", &["a", "b"]);
    let r = f.pop(2 * S, "q", None, 2).unwrap();
    f.ack(3 * S, &r, 1, AckStatus::Completed).unwrap();
    f.ack(3 * S, &r, 0, AckStatus::Failed).unwrap();
    let r = f.pop(4 * S, "q", None, 2).unwrap();
    assert_eq!(r.messages, vec![(0, 2)], "only the failed message comes back, b was settled");
    f.ack(5 * S, &r, 0, AckStatus::Failed).unwrap();
    assert!(f.pop(6 * S, "q", None, 2).is_none(), "past retryLimit the message is dead-lettered");
    let q = f.p.state.queue("q").unwrap();
    assert_eq!(q.dlq.len(), 1);
    assert_eq!(q.dlq[0].offset, 0);
}

#[test]
fn nack_releases_the_lease_and_retry_is_free() {
    let mut f = Fixture::new();
    f.push(S, "q", "p", &["a", "b", "c"]);
    let r = f.pop(2 * S, "q", None, 3).unwrap();
    f.ack(3 * S, &r, 0, AckStatus::Retry).unwrap();
    let r2 = f.pop(4 * S, "q", None, 3).unwrap();
    assert_eq!(r2.messages, vec![(0, 1), (1, 1), (2, 1)], "retry charges nothing; the whole lease was released");
    assert_eq!(f.ack(5 * S, &r, 1, AckStatus::Completed).unwrap_err().code, "lease_not_live");
}

#[test]
fn dedup_within_window_and_within_request() {
    let mut f = Fixture::new();
    let r = f.push(S, "q", "p", &["a", "a", "b"]);
    assert!(matches!(r[0].status, PushStatus::Queued { offset: 0, .. }));
    assert!(matches!(r[1].status, PushStatus::Duplicate { .. }));
    assert!(matches!(r[2].status, PushStatus::Queued { offset: 1, .. }));
    let r = f.push(2 * S, "q", "p", &["b", "c"]);
    assert!(matches!(r[0].status, PushStatus::Duplicate { .. }));
    assert!(matches!(r[1].status, PushStatus::Queued { offset: 2, .. }));
    // After the window (default 3600 s) the id may be written again.
    let r = f.push(3700 * S, "q", "p", &["a"]);
    assert!(matches!(r[0].status, PushStatus::Queued { offset: 3, .. }));
    // What was stored reads back without the duplicate.
    let p = f.p.state.partition("q", "p").unwrap();
    let spans = p.spans_for(&[0, 1, 2, 3]);
    let mut ids = Vec::new();
    for s in spans {
        for r in baton_wire::decode_batches(&s.read().unwrap()).unwrap() {
            ids.push((r.offset, r.txid.unwrap()));
        }
    }
    assert_eq!(ids, vec![(0, "a".into()), (1, "b".into()), (2, "c".into()), (3, "a".into())]);
}

#[test]
fn i5_time_never_goes_back() {
    let mut f = Fixture::new();
    f.push(100 * S, "q", "p", &["a"]);
    f.push(50 * S, "q", "p", &["b"]);
    assert_eq!(f.log.len(), 2);
    assert!(f.log[1].ts > f.log[0].ts, "a clock step back still gives a later entry time");
}

#[test]
fn delayed_processing_holds_messages_back() {
    let mut f = Fixture::new();
    f.configure(0, "q", QueueOptions { delayed_processing: 10, ..Default::default() });
    f.push(S, "q", "p", &["a"]);
    assert!(f.pop(5 * S, "q", None, 1).is_none());
    assert!(f.pop(12 * S, "q", None, 1).is_some());
}

#[test]
fn retention_trims_whole_segments_and_moves_cursors() {
    let mut f = Fixture::new();
    f.configure(0, "q", QueueOptions { retention_seconds: 10, ..Default::default() });
    for i in 0..40u64 {
        let id = format!("m{i}");
        f.push(S + i, "q", "p", &[&id]);
    }
    f.push(100 * S, "q", "p", &["late"]);
    f.at(105 * S).retention().unwrap();
    f.done();
    let p = f.p.state.partition("q", "p").unwrap();
    assert_eq!(p.start, 40, "every message older than the retention is gone");
    assert_eq!(p.files.as_ref().unwrap().segments.len(), 1, "old segment files were deleted");
    let r = f.pop(106 * S, "q", None, 10).unwrap();
    assert_eq!(offsets(&r), vec![40]);
}

#[test]
fn i1_replay_rebuilds_the_same_state() {
    let mut f = Fixture::new();
    f.configure(0, "q", QueueOptions { lease_time: 5, retry_limit: 1, ..Default::default() });
    for i in 0..20u64 {
        let a = format!("a{i}");
        let b = format!("b{i}");
        f.push(S + i * S, "q", if i % 2 == 0 { "p0" } else { "p1" }, &[&a, &b]);
    }
    let mut t = 30 * S;
    for round in 0..30 {
        t += S;
        let group = if round % 3 == 0 { Some("g") } else { None };
        if let Some(r) = f.pop(t, "q", group, 3) {
            for (i, (o, _)) in r.messages.iter().enumerate() {
                let st = match (round + i) % 4 {
                    0 => AckStatus::Failed,
                    1 => continue, // left to expire
                    _ => AckStatus::Completed,
                };
                let _ = f.ack(t, &r, *o, st);
            }
        }
        if round == 10 {
            t += 10 * S;
        }
    }
    let live = serde_json::to_value(&f.p.state).unwrap();
    let dir = f._dir.path().join("replay");
    let mut replayed = State::new(storage(&dir));
    for e in &f.log {
        replayed.apply(e).unwrap();
    }
    replayed.applied_index = f.p.state.applied_index;
    assert_eq!(serde_json::to_value(&replayed).unwrap(), live, "replay diverged from the live state");
    // The partition files, index files included (D29), are rebuilt byte for byte too.
    for p in f.p.state.parts.values_mut() {
        let id = &{ p.id };
        let q = replayed.parts.get_mut(id).unwrap();
        p.files.as_mut().unwrap().flush_index().unwrap();
        q.files.as_mut().unwrap().flush_index().unwrap();
        let (a, b) = (p.files.as_ref().unwrap(), q.files.as_ref().unwrap());
        assert_eq!(a.marks(), b.marks());
        for m in a.marks() {
            for kind in crate::files::Kind::ALL {
                let path = |d: &std::path::Path| {
                    crate::files::file_path(&d.join("partitions").join(id.to_string()), m.base, m.gen, kind)
                };
                let ra = std::fs::read(path(&f._dir.path().join("live"))).unwrap();
                let rb = std::fs::read(path(&dir)).unwrap();
                assert_eq!(ra, rb, "partition {id} segment {} .{}", m.base, kind.ext());
                assert!(!ra.is_empty() || m.len == 0);
            }
        }
    }
}

#[test]
fn i2_one_request_is_one_entry_across_partitions() {
    let mut f = Fixture::new();
    let mk = |part: &str, t: &str| {
        let records =
            vec![PushRecord { txid: t.into(), client_txid: true, value: "1".as_bytes().to_vec().into(), trace: None }];
        let batch = baton_wire::encode_batch(
            &[baton_wire::NewRecord { key: None, value: b"1", txid: Some(t), trace: None }],
            0,
        )
        .unwrap();
        PushGroup { queue: "q".into(), partition: part.into(), indexes: vec![0], records, batch }
    };
    f.at(S).push(vec![mk("p0", "x"), mk("p1", "y")]);
    f.done();
    assert_eq!(f.log.len(), 1, "a push touching two partitions is one entry");
    let appends = f.log[0].effects.iter().filter(|e| matches!(e, crate::entry::Effect::Append { .. })).count();
    assert_eq!(appends, 2);
}

#[test]
fn bad_names_are_refused_and_change_nothing() {
    let mut f = Fixture::new();
    let r = f.push(S, "q", "a/b", &["x"]);
    assert!(matches!(&r[0].status, PushStatus::Failed(e) if e.code == "invalid_partition"));
    assert!(f.p.state.partition("q", "a/b").is_none());
    let r = f.push(S, "", "p", &["x"]);
    assert!(matches!(&r[0].status, PushStatus::Failed(e) if e.code == "invalid_queue"));
}

fn txn_push(queue: &str, part: &str, txid: &str, index: usize) -> PushGroup {
    let records =
        vec![PushRecord { txid: txid.into(), client_txid: true, value: "1".as_bytes().to_vec().into(), trace: None }];
    let batch =
        baton_wire::encode_batch(&[baton_wire::NewRecord { key: None, value: b"1", txid: Some(txid), trace: None }], 0)
            .unwrap();
    PushGroup { queue: queue.into(), partition: part.into(), indexes: vec![index], records, batch }
}

fn txn_ack(r: &PopResult, offset: u64, index: usize) -> crate::txn::TxnAck {
    crate::txn::TxnAck {
        index,
        group: None,
        item: AckItem {
            part: r.part,
            txid: None,
            offset: Some(offset),
            lease: r.lease,
            status: AckStatus::Completed,
            error: None,
        },
    }
}

#[test]
fn i2_transaction_acks_and_pushes_as_one_entry() {
    use crate::txn::{TxnOutcome, TxnRequest};
    let mut f = Fixture::new();
    f.push(S, "in", "p", &["a"]);
    let r = f.pop(2 * S, "in", None, 1).unwrap();
    let before = f.log.len();
    let t = TxnRequest {
        acks: vec![txn_ack(&r, 0, 0)],
        pushes: vec![txn_push("out", "p", "o1", 1)],
        required_leases: vec![r.lease.unwrap()],
        flat_len: 2,
        ..Default::default()
    };
    let out = f.at(3 * S).transaction(t).unwrap();
    f.done();
    assert!(matches!(out, TxnOutcome::Committed(ref v) if v.len() == 2), "{out:?}");
    assert_eq!(f.log.len(), before + 1, "the transaction is one entry");
    assert!(f.pop(4 * S, "in", None, 1).is_none());
    assert!(f.pop(4 * S, "out", None, 1).is_some());
}

#[test]
fn i4_transaction_with_expired_lease_rolls_back_whole() {
    use crate::txn::{TxnOutcome, TxnRequest};
    let mut f = Fixture::new();
    f.configure(0, "in", QueueOptions { lease_time: 5, ..Default::default() });
    f.push(S, "in", "p", &["a"]);
    let r = f.pop(2 * S, "in", None, 1).unwrap();
    let before = serde_json::to_value(&f.p.state).unwrap();
    let t = TxnRequest {
        acks: vec![txn_ack(&r, 0, 1)],
        pushes: vec![txn_push("out", "p", "o1", 0)],
        required_leases: vec![r.lease.unwrap()],
        flat_len: 2,
        ..Default::default()
    };
    let out = f.at(10 * S).transaction(t).unwrap();
    assert!(f.p.finish().expect("a whole plan").is_none(), "a rollback writes no entry");
    assert!(matches!(out, TxnOutcome::RolledBack { reason: "rejected_ack", failed_index: Some(1), .. }), "{out:?}");
    assert_eq!(serde_json::to_value(&f.p.state).unwrap(), before, "a rollback changed state");
    assert!(f.p.state.queue("out").is_none(), "the output queue was not even created");
}

#[test]
fn transaction_rolls_back_on_duplicate_push() {
    use crate::txn::{TxnOutcome, TxnRequest};
    let mut f = Fixture::new();
    f.push(S, "out", "p", &["o1"]);
    f.push(S, "in", "p", &["a"]);
    let r = f.pop(2 * S, "in", None, 1).unwrap();
    let t = TxnRequest {
        acks: vec![txn_ack(&r, 0, 0)],
        pushes: vec![txn_push("out", "p", "o1", 1)],
        required_leases: vec![],
        flat_len: 2,
        ..Default::default()
    };
    let out = f.at(3 * S).transaction(t).unwrap();
    assert!(matches!(out, TxnOutcome::RolledBack { reason: "duplicate", failed_index: Some(1), .. }), "{out:?}");
    assert!(f.p.finish().expect("a whole plan").is_none());
    // The input is still leased and unsettled.
    assert_eq!(f.p.state.partition("in", "p").unwrap().cursors.values().next().unwrap().next, 0);
}

pub(crate) fn kafka_batch(n: usize, pid: i64, epoch: i16, seq: i32) -> Vec<u8> {
    let vals: Vec<String> = (0..n).map(|i| format!("v{i}")).collect();
    let recs: Vec<_> = vals
        .iter()
        .map(|v| baton_wire::NewRecord { key: None, value: v.as_bytes(), txid: None, trace: None })
        .collect();
    let mut b = baton_wire::encode_batch(&recs, 0).unwrap();
    b[43..51].copy_from_slice(&pid.to_be_bytes());
    b[51..53].copy_from_slice(&epoch.to_be_bytes());
    b[53..57].copy_from_slice(&seq.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

#[test]
fn kafka_idempotent_producer_drops_retries_and_refuses_gaps() {
    use crate::kafka_ops::{ProduceOutcome as O, ProduceRequest};
    let mut f = Fixture::new();
    f.at(S).create_topic("t", 2).unwrap();
    f.done();
    let pid = f.at(S).init_producer().unwrap();
    f.done();
    let produce = |f: &mut Fixture, b: Vec<u8>| {
        let r = f.at(2 * S).produce(ProduceRequest {
            topic: "t".into(),
            partition: "1".into(),
            batches: vec![b],
            create: false,
            producer_expiry: crate::kafka_ops::DEFAULT_PRODUCER_EXPIRY,
            txn_id: None,
            implicit_txn: false,
        });
        f.done();
        r.unwrap()
    };
    assert_eq!(produce(&mut f, kafka_batch(3, pid, 0, 0)), O::Appended { base_offset: 0 });
    assert_eq!(produce(&mut f, kafka_batch(3, pid, 0, 0)), O::Duplicate { base_offset: 0 }, "a retry is dropped");
    assert_eq!(produce(&mut f, kafka_batch(2, pid, 0, 5)), O::OutOfOrderSequence, "a gap is refused");
    assert_eq!(produce(&mut f, kafka_batch(2, pid, 0, 3)), O::Appended { base_offset: 3 });
    assert_eq!(
        produce(&mut f, kafka_batch(1, -1, -1, -1)),
        O::Appended { base_offset: 5 },
        "non-idempotent producers are not checked"
    );
    let mut bad = kafka_batch(1, -1, -1, -1);
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert!(matches!(produce(&mut f, bad), O::CorruptMessage(_)));
    assert_eq!(f.p.state.partition("t", "1").unwrap().end, 6, "nothing of a refused batch was stored");
    let r = f.at(3 * S).produce(ProduceRequest {
        topic: "nope".into(),
        partition: "0".into(),
        batches: vec![kafka_batch(1, -1, -1, -1)],
        create: false,
        producer_expiry: crate::kafka_ops::DEFAULT_PRODUCER_EXPIRY,
        txn_id: None,
        implicit_txn: false,
    });
    assert_eq!(r.unwrap(), O::UnknownTopicOrPartition);
}

#[test]
fn kafka_offset_commit_moves_the_group_cursor() {
    let mut f = Fixture::new();
    f.push(S, "q", "0", &["a", "b", "c"]);
    let r = f.at(2 * S).commit_offsets("g", "q", &[("0".into(), 2), ("9".into(), 1)]);
    f.done();
    assert!(r[0].is_ok());
    assert_eq!(r[1].as_ref().unwrap_err().code, "partition_not_found");
    let popped = f.pop(3 * S, "q", Some("g"), 10).unwrap();
    assert_eq!(offsets(&popped), vec![2]);
}

/// Ack offset 0 of `r` and push one message, as one transaction under `r`'s lease.
fn ack_and_push(r: &PopResult, queue: &str, part: &str, txid: &str) -> crate::txn::TxnRequest {
    crate::txn::TxnRequest {
        acks: vec![txn_ack(r, 0, 0)],
        pushes: vec![txn_push(queue, part, txid, 1)],
        required_leases: vec![r.lease.unwrap()],
        flat_len: 2,
        ..Default::default()
    }
}

/// Regression (issue 12 item 2): the output queue at maxSize made the push fail after the
/// acks were emitted, and the half (the ack) was logged: the input message was lost. Now the
/// push path's own check runs first and the transaction rolls back whole.
#[test]
fn i2_transaction_pushing_into_a_full_queue_rolls_back_whole() {
    use crate::txn::TxnOutcome;
    let mut f = Fixture::new();
    f.configure(0, "out", QueueOptions { max_size: 1, ..Default::default() });
    f.push(S, "out", "p", &["already"]);
    f.push(S, "in", "p", &["a"]);
    let r = f.pop(2 * S, "in", None, 1).unwrap();
    let before = serde_json::to_value(&f.p.state).unwrap();
    let logged = f.log.len();
    let t = ack_and_push(&r, "out", "p", "o1");
    let out = f.at(3 * S).step(|p| p.transaction(t)).unwrap();
    assert!(matches!(out, TxnOutcome::RolledBack { reason: "queue_full", failed_index: Some(1), .. }), "{out:?}");
    f.done();
    assert_eq!(f.log.len(), logged, "a rollback writes no entry");
    assert_eq!(serde_json::to_value(&f.p.state).unwrap(), before, "a rollback changed state");
    // The input is still leased and acks under its lease.
    f.ack(4 * S, &r, 0, AckStatus::Completed).unwrap();
}

/// The same transaction fits when its own ack makes the room: the check counts the queue's
/// depth as the pushes will see it, after the acks are applied (as the push path does).
#[test]
fn transaction_acking_and_pushing_into_the_same_full_queue_fits_after_its_ack() {
    use crate::txn::TxnOutcome;
    let mut f = Fixture::new();
    f.configure(0, "q", QueueOptions { max_size: 1, ..Default::default() });
    f.push(S, "q", "p", &["a"]);
    let r = f.pop(2 * S, "q", None, 1).unwrap();
    let t = ack_and_push(&r, "q", "p2", "next");
    let out = f.at(3 * S).step(|p| p.transaction(t)).unwrap();
    assert!(matches!(out, TxnOutcome::Committed(_)), "{out:?}");
    f.done();
}

/// I2's structural guard: a request refused after it emitted an effect is a broken plan;
/// `finish` hands back the reason and no entry, whatever the request was.
#[test]
fn a_refusal_after_an_effect_breaks_the_plan() {
    let mut f = Fixture::new();
    let p = f.at(S);
    let res: Result<(), CoreError> = p.step(|p| {
        p.emit_pub(crate::entry::Effect::Configure { queue: "q".into(), options: QueueOptions::default() })?;
        Err(CoreError::bad("late", "refused after an effect"))
    });
    assert!(res.is_err());
    let broken = f.p.finish().expect_err("a half plan must not become an entry");
    assert!(broken.contains("refused after an effect"), "{broken}");
    // The next request starts clean.
    f.at(2 * S);
    assert!(f.p.finish().expect("a whole plan").is_none());
}

#[test]
fn a_push_over_the_entry_limit_is_refused_before_anything_is_planned() {
    let mut f = Fixture::new();
    f.p.limits.max_entry_bytes = 1024;
    let big = "x".repeat(2000);
    let r = f.push(S, "newq", "p", &[big.as_str()]);
    assert!(matches!(&r[0].status, PushStatus::Failed(e) if e.code == "entry_too_large"), "{:?}", r[0].status);
    assert!(f.p.state.queue("newq").is_none(), "nothing of the refused push was planned");
    let r = f.push(2 * S, "newq", "p", &["small"]);
    assert!(matches!(r[0].status, PushStatus::Queued { .. }));
}

#[test]
fn groups_are_bounded() {
    let mut f = Fixture::new();
    f.p.limits.max_groups = 2;
    f.push(S, "q", "p", &["a"]);
    assert!(f.pop(2 * S, "q", Some("g1"), 1).is_some());
    assert!(f.pop(2 * S, "q", Some("g2"), 1).is_some());
    let req = PopRequest {
        queue: "q".into(),
        partition: None,
        group: Some("g3".into()),
        batch: 1,
        lease_secs: None,
        from_ts: None,
        auto_ack: false,
        conflate: false,
    };
    let e = f.at(3 * S).step(|p| p.pop(&req)).unwrap_err();
    assert_eq!((e.kind, e.code), (ErrorKind::Overloaded, "too_many_groups"));
    assert!(f.p.finish().expect("a whole plan").is_none());
}

/// Regression (issue 12 item 8, I4): an ack without a leaseId settled under whatever lease
/// the group held, so a consumer whose lease had expired settled the message redelivered to
/// another one.
#[test]
fn i4_an_ack_must_name_its_lease() {
    let mut f = Fixture::new();
    f.configure(0, "q", QueueOptions { lease_time: 1, ..Default::default() });
    f.push(S, "q", "p", &["a"]);
    let first = f.pop(2 * S, "q", None, 1).unwrap();
    let second = f.pop(4 * S, "q", None, 1).expect("redelivered after the first lease expired");
    let mut stale = first.clone();
    stale.lease = None;
    let e = f.ack(4 * S + 1, &stale, 0, AckStatus::Completed).unwrap_err();
    assert_eq!(e.code, "lease_required");
    f.ack(4 * S + 2, &second, 0, AckStatus::Completed).unwrap();
}

/// Regression (issue 12 item 8): `deadLetterQueue: false` was ignored.
#[test]
fn no_dead_letters_when_the_queue_has_no_dead_letter_queue() {
    let mut f = Fixture::new();
    f.configure(0, "q", QueueOptions { retry_limit: 0, dead_letter_queue: false, ..Default::default() });
    f.push(S, "q", "p", &["a"]);
    let r = f.pop(2 * S, "q", None, 1).unwrap();
    f.ack(3 * S, &r, 0, AckStatus::Failed).unwrap();
    let again = f.pop(4 * S, "q", None, 1).expect("past retryLimit, without a DLQ it comes back");
    assert_eq!(offsets(&again), vec![0]);
}

/// Item 12: a pop of a large batch count over large messages built an answer of any size
/// (10,000 messages of 1 MiB: 10 GB). The lease stops at the stored-bytes bound, and a
/// message larger than the bound still goes, alone.
#[test]
fn a_pop_is_bounded_by_the_bytes_it_will_read() {
    let mut f = Fixture::new();
    for i in 0..5 {
        let big = format!("{i}{}", "x".repeat(100));
        f.push(S + i, "q", "p", &[big.as_str()]);
    }
    let one = f.p.state.partition("q", "p").unwrap().find(0).unwrap().rec.len as u64;
    f.p.limits.max_pop_bytes = one * 5 / 2;
    let r = f.pop(2 * S, "q", None, 100).unwrap();
    assert_eq!(r.messages.len(), 2, "two batches fit in two and a half");
    assert!(r.spans.iter().map(|s| s.len as u64).sum::<u64>() <= one * 5 / 2);
    f.p.limits.max_pop_bytes = 1;
    let r = f.pop(3 * S, "q", Some("g"), 100).unwrap();
    assert_eq!(r.messages.len(), 1, "a message over the bound still goes, alone");
}

/// D30: a pop of the queue looks only at its group's candidates. Against a brute-force
/// look at every partition, over random pushes, pops, acks, nacks, expiries and seeks of
/// two groups on 40 partitions: a pop that finds nothing must mean nothing is deliverable.
#[test]
fn a_pop_that_finds_nothing_means_no_partition_has_anything() {
    let mut f = Fixture::new();
    f.configure(S, "q", QueueOptions { lease_time: 5, retry_limit: 1_000, ..Default::default() });
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let mut t = 2 * S;
    let mut held: Vec<PopResult> = Vec::new();
    let mut empty_pops = 0;
    for step in 0..4_000u64 {
        t += rnd(400_000) + 1;
        match rnd(10) {
            0 => {
                let tx = format!("m{step}");
                f.push(t, "q", &format!("p{}", rnd(40)), &[tx.as_str()]);
            }
            1..=5 => {
                let group = ["g1", "g2"][rnd(2) as usize];
                let g = (group != "g1").then_some(group);
                match f.pop(t, "q", g, 1 + rnd(5) as u32) {
                    Some(r) => held.push(r),
                    None => {
                        empty_pops += 1;
                        let Some(&gid) = f.p.state.group_ids.get(g.unwrap_or(QUEUE_MODE)) else {
                            assert!(f.p.state.parts.is_empty(), "a pop before any partition makes no group");
                            continue;
                        };
                        for p in f.p.state.parts.values() {
                            let Some(c) = p.cursors.get(&gid) else {
                                assert_eq!(p.end, p.start, "partition {} never popped by {group} has messages", p.name);
                                continue;
                            };
                            if c.lease.as_ref().is_some_and(|l| l.expires > t) {
                                continue;
                            }
                            let next = c.next.max(p.start);
                            let open = (next..p.end).any(|o| !c.done.contains(&o));
                            assert!(!open, "step {step}: {group} found nothing but {} has messages", p.name);
                        }
                    }
                }
            }
            6..=8 if !held.is_empty() => {
                let r = held.swap_remove(rnd(held.len() as u64) as usize);
                let status = if rnd(4) == 0 { AckStatus::Failed } else { AckStatus::Completed };
                for (o, _) in &r.messages {
                    let _ = f.ack(t, &r, *o, status);
                }
            }
            9 if rnd(8) == 0 => {
                let group = ["g2", "g3"][rnd(2) as usize];
                f.at(t).seek(group, "q", None, None, false).unwrap();
                f.done();
            }
            _ => held.retain(|_| rnd(3) != 0),
        }
    }
    assert!(empty_pops > 50, "the test must see empty pops: {empty_pops}");
}

/// A hostile consumer acks a large lease by transactionId in reverse order, in one request:
/// each ack must not read the lease's `.txid` records again (that was O(lease²) reads on
/// the planner, every client stalled behind one request).
#[test]
fn acking_a_lease_by_transaction_id_in_reverse_reads_each_id_about_once() {
    use std::sync::atomic::Ordering::Relaxed;
    const N: usize = 3000;
    let ids: Vec<String> = (0..N).map(|i| format!("m{i}")).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let reads = |f: &Fixture| f.p.state.storage.store.stats.txid_reads.load(Relaxed);
    let item = |r: &PopResult, t: &str| AckItem {
        part: r.part,
        txid: Some(t.into()),
        offset: None,
        lease: r.lease,
        status: AckStatus::Completed,
        error: None,
    };

    let mut f = Fixture::new();
    f.push(S, "q", "p", &refs[..N / 2]);
    f.push(S, "q", "p", &refs[N / 2..]);
    let r = f.pop(2 * S, "q", None, N as u32).unwrap();
    assert_eq!(r.messages.len(), N);
    let before = reads(&f);
    let items: Vec<AckItem> = ids.iter().rev().map(|t| item(&r, t)).collect();
    let out = f.at(3 * S).ack(None, &items);
    f.done();
    assert!(out.iter().all(Result::is_ok), "{:?}", out.iter().find(|o| o.is_err()));
    let used = reads(&f) - before;
    assert!(used <= 2 * N as u64, "{used} .txid reads to ack {N} messages");
    assert!(f.pop(4 * S, "q", None, 10).is_none(), "every message was settled");

    // The transaction path looks messages up the same way.
    use crate::txn::{TxnAck, TxnOutcome, TxnRequest};
    let mut f = Fixture::new();
    f.push(S, "in", "p", &refs[..N / 2]);
    f.push(S, "in", "p", &refs[N / 2..]);
    let r = f.pop(2 * S, "in", None, N as u32).unwrap();
    let before = reads(&f);
    let acks: Vec<TxnAck> =
        ids.iter().rev().enumerate().map(|(i, t)| TxnAck { index: i, group: None, item: item(&r, t) }).collect();
    let t = TxnRequest { acks, required_leases: vec![r.lease.unwrap()], flat_len: N, ..Default::default() };
    let out = f.at(3 * S).transaction(t).unwrap();
    f.done();
    assert!(matches!(out, TxnOutcome::Committed(ref v) if v.len() == N), "{out:?}");
    let used = reads(&f) - before;
    assert!(used <= 4 * N as u64, "{used} .txid reads for a transaction acking {N} messages");
    assert!(f.pop(4 * S, "in", None, 10).is_none(), "every message was settled");
}

/// D61: a conflating pop leases a partition's backlog and retires all but its newest
/// message in that same entry (a crash cannot leave the backlog leased and not retired),
/// and only the newest is answered and read.
#[test]
fn a_conflating_pop_retires_the_backlog_in_the_entry_that_leases_it() {
    let mut f = Fixture::new();
    f.push(S, "q", "p", &["a", "b", "c", "d"]);
    let req = PopRequest {
        queue: "q".into(),
        partition: None,
        group: Some("g".into()),
        batch: 100,
        lease_secs: None,
        from_ts: None,
        auto_ack: false,
        conflate: true,
    };
    let before = f.log.len();
    let r = f.at(2 * S).pop(&req).unwrap().expect("the newest message");
    f.done();
    assert_eq!(f.log.len(), before + 1, "the lease and the retire are one entry");
    let newest = r.messages.iter().map(|m| m.0).collect::<Vec<_>>();
    assert_eq!(newest.len(), 1);
    assert_eq!(r.spans.len(), 1, "only the newest is read");
    f.ack(3 * S, &r, newest[0], AckStatus::Completed).unwrap();
    assert!(f.pop(4 * S, "q", Some("g"), 100).is_none(), "the older three were settled by the pop");
    // Another group is untouched.
    assert_eq!(f.pop(5 * S, "q", Some("h"), 100).map(|r| r.messages.len()), Some(4));
}
