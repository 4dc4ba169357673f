//! A compaction pass over real segment files, without a server: what it drops and keeps,
//! the swap, and what recovery keeps of the generations (D50).

use super::*;
use crate::store::PartitionFiles;
use baton_wire::{encode_batch, set_base_offset, NewRecord};

fn store() -> Arc<Store> {
    Arc::new(Store::new(32, 1 << 20))
}

/// A batch of `keys` at `base` (a key of "-" is a record without one); transactional when asked.
fn batch(keys: &[&str], base: u64, txn: bool) -> Vec<u8> {
    let recs: Vec<NewRecord> = keys
        .iter()
        .map(|k| NewRecord { key: (*k != "-").then_some(k.as_bytes()), value: k.as_bytes(), ..Default::default() })
        .collect();
    let mut b = encode_batch(&recs, 1_700_000_000_000).unwrap();
    set_base_offset(&mut b, base);
    if txn {
        let a = i16::from_be_bytes([b[21], b[22]]) | baton_wire::ATTR_TRANSACTIONAL;
        b[21..23].copy_from_slice(&a.to_be_bytes());
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
    }
    b
}

/// Append batches (one segment each: the segment size is one byte) and write their index.
fn partition(part: u32, dir: &std::path::Path, st: &Arc<Store>, batches: &[(&[&str], bool)]) -> PartitionFiles {
    let mut f = PartitionFiles::create(part, dir.to_path_buf(), 1, st.clone());
    let mut base = 0;
    for (i, (keys, txn)) in batches.iter().enumerate() {
        let txids: Vec<[u64; 2]> = (0..keys.len() as u64).map(|k| [base + k, 0]).collect();
        f.append(base, 10 + i as u64, &txids, &batch(keys, base, *txn), None).unwrap();
        base += keys.len() as u64;
    }
    f.flush_index().unwrap();
    f
}

/// Every (offset, key) readable through the partition's index, in order.
fn read(f: &PartitionFiles) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut at = f.find(0).unwrap();
    while let Some(found) = at {
        let bytes = f.span(found.seg, &found.rec).unwrap().read().unwrap();
        for r in baton_wire::decode_batches(&bytes).unwrap() {
            let k = r.key.map_or("-".to_string(), |k| String::from_utf8(k.to_vec()).unwrap());
            out.push((r.offset, k));
        }
        at = f.next(&found).unwrap();
    }
    out
}

fn run(f: &mut PartitionFiles, upto: u64, aborted: BTreeMap<u64, u64>) -> (Vec<Rewritten>, Vec<PathBuf>) {
    run_at(f, upto, aborted, 0, 0)
}

/// A pass that drops the tombstones (each its key's latest) of batches stamped before
/// `tombstones_before` and merges segments that fit in `segment_bytes` together.
fn run_at(
    f: &mut PartitionFiles,
    upto: u64,
    aborted: BTreeMap<u64, u64>,
    tombstones_before: u64,
    segment_bytes: u64,
) -> (Vec<Rewritten>, Vec<PathBuf>) {
    let crate::compact::Cleanable { segs, through, .. } =
        f.compaction_segments(upto, u64::MAX).expect("closed segments to read");
    f.compacted_through = through;
    let (part, dir) = f.job_target();
    let job = Job { part, dir, segs, aborted, tombstones_before, segment_bytes };
    let stats = CompactStats::default();
    let done = compact(&job, 100, &stats).unwrap();
    let mut old = Vec::new();
    for r in &done {
        old.extend(f.swap(r).expect("the segment is as the pass read it"));
    }
    (done, old)
}

#[test]
fn a_pass_keeps_each_keys_latest_and_every_offset_and_swaps_in_a_generation() {
    let d = tempfile::tempdir().unwrap();
    let st = store();
    let batches: [(&[&str], bool); 5] =
        [(&["a", "b", "-"], false), (&["a", "c"], false), (&["b", "b"], false), (&["c"], false), (&["a"], false)];
    let mut f = partition(3, d.path(), &st, &batches);
    assert_eq!(f.segments.len(), 5);
    // The active segment (offset 8) is never read; nothing past `upto` either.
    let crate::compact::Cleanable { segs, through, .. } = f.compaction_segments(6, u64::MAX).unwrap();
    assert_eq!((segs.len(), through), (2, 5), "segments ending past offset 6 wait");
    let (done, old) = run(&mut f, u64::MAX, BTreeMap::new());
    // Closed: a@0 b@1 -@2 | a@3 c@4 | b@5 b@6 | c@7 ; active: a@8.
    assert_eq!(read(&f), [(2, "-"), (3, "a"), (6, "b"), (7, "c"), (8, "a")].map(|(o, k)| (o, k.to_string())));
    assert_eq!(done.len(), 3, "the segments with something to drop: {done:?}");
    assert_eq!(old.len(), 9, "three files of each replaced generation");
    let marks = f.marks();
    assert_eq!(marks.iter().map(|m| m.gen).collect::<Vec<_>>(), [1, 1, 1, 0, 0]);
    assert_eq!(marks[0].batches, 1, "a batch keeps its place in the index");
    // Offsets still resolve to their batch, and a dropped one to the batch spanning it.
    assert_eq!(f.find(1).unwrap().unwrap().rec.base, 0);
    assert_eq!(f.txid_at(1).unwrap(), Some(1), "the transaction-id records are by offset, kept");
    // Nothing new closed: no second pass is offered.
    assert!(f.compaction_segments(u64::MAX, u64::MAX).is_none());

    // Recovery keeps the generation the marks name and deletes the others.
    let stray = file_path(d.path(), 0, 7, Kind::Seg);
    fs::write(&stray, b"a pass cut off by a crash").unwrap();
    let r = PartitionFiles::restore(3, d.path().to_path_buf(), 1, st.clone(), &marks).unwrap();
    assert_eq!(read(&r), read(&f));
    assert!(!stray.exists() && old.iter().all(|p| !p.exists()), "only the marked generation is left");
    assert!(file_path(d.path(), 0, 1, Kind::Txid).exists());
}

#[test]
fn aborted_records_are_nobodys_latest_and_a_changed_segment_is_not_swapped() {
    let d = tempfile::tempdir().unwrap();
    let st = store();
    // b@2 is in an aborted transaction: a@0 stays the latest a... and b@1 the latest b.
    let batches: [(&[&str], bool); 3] = [(&["a", "b"], false), (&["b", "a"], true), (&["x"], false)];
    let mut f = partition(3, d.path(), &st, &batches);
    let aborted = BTreeMap::from([(2, 3)]);
    let (done, _) = run(&mut f, u64::MAX, aborted);
    // a@3 is committed (outside the aborted span) and newer than a@0; b@2 is aborted.
    assert_eq!(read(&f), [(1, "b"), (2, "b"), (3, "a"), (4, "x")].map(|(o, k)| (o, k.to_string())));
    assert_eq!(done.len(), 1);

    // A swap for a segment retired (or rewritten) since the pass read it is refused.
    let mut g = partition(4, &d.path().join("g"), &st, &batches);
    let segs = g.compaction_segments(u64::MAX, u64::MAX).unwrap().segs;
    let (part, dir) = g.job_target();
    let job = Job { part, dir, segs, aborted: BTreeMap::new(), tombstones_before: 0, segment_bytes: 0 };
    let done = compact(&job, 100, &CompactStats::default()).unwrap();
    assert_eq!(done.len(), 1);
    g.retire_below(2);
    assert!(g.swap(&done[0]).is_none());
}

#[test]
fn a_pass_tracks_at_most_max_keys_and_keeps_what_it_did_not_track() {
    let d = tempfile::tempdir().unwrap();
    let st = store();
    let batches: [(&[&str], bool); 3] = [(&["a", "b"], false), (&["a", "b"], false), (&["z"], false)];
    let f = partition(3, d.path(), &st, &batches);
    let segs = f.compaction_segments(u64::MAX, u64::MAX).unwrap().segs;
    let (part, dir) = f.job_target();
    let job = Job { part, dir, segs, aborted: BTreeMap::new(), tombstones_before: 0, segment_bytes: 0 };
    let stats = CompactStats::default();
    let done = compact(&job, 1, &stats).unwrap();
    assert_eq!(stats.capped_passes.load(Relaxed), 1);
    // Only "a" was tracked: a@0 goes, both b stay.
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].removed, 1);
}

/// A batch of (key, value) records at `base`; a `None` value is a tombstone.
fn kv_batch(kvs: &[(&str, Option<&str>)], base: u64) -> Vec<u8> {
    use kafka_protocol::records::*;
    let recs: Vec<Record> = kvs
        .iter()
        .enumerate()
        .map(|(i, (k, v))| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: i as i32 - 1,
            timestamp: 1_700_000_000_000,
            key: Some(bytes::Bytes::copy_from_slice(k.as_bytes())),
            value: v.map(|v| bytes::Bytes::copy_from_slice(v.as_bytes())),
            headers: Default::default(),
        })
        .collect();
    let mut b = bytes::BytesMut::new();
    let opts = RecordEncodeOptions { version: 2, compression: Compression::None };
    RecordBatchEncoder::encode(&mut b, &recs, &opts).unwrap();
    let mut v = b.to_vec();
    set_base_offset(&mut v, base);
    v
}

/// One segment per batch, batch `i` stamped `10 + i`: a=1 b=1 | a=(tombstone) | b=2 | x.
fn with_a_tombstone(part: u32, dir: &std::path::Path, st: &Arc<Store>) -> PartitionFiles {
    let batches: [&[(&str, Option<&str>)]; 4] =
        [&[("a", Some("1")), ("b", Some("1"))], &[("a", None)], &[("b", Some("2"))], &[("x", Some("x"))]];
    let mut f = PartitionFiles::create(part, dir.to_path_buf(), 1, st.clone());
    let mut base = 0;
    for (i, kvs) in batches.iter().enumerate() {
        let txids: Vec<[u64; 2]> = (0..kvs.len() as u64).map(|k| [base + k, 0]).collect();
        f.append(base, 10 + i as u64, &txids, &kv_batch(kvs, base), None).unwrap();
        base += kvs.len() as u64;
    }
    f.flush_index().unwrap();
    f
}

#[test]
fn a_tombstone_goes_once_older_than_delete_retention_and_young_segments_wait() {
    let d = tempfile::tempdir().unwrap();
    let st = store();
    // min.compaction.lag.ms: a segment with a record stamped at or after 12 waits, and so
    // does every segment after it.
    let f = with_a_tombstone(3, &d.path().join("lag"), &st);
    let crate::compact::Cleanable { segs, through, .. } = f.compaction_segments(u64::MAX, 12).unwrap();
    assert_eq!((segs.len(), through), (2, 3), "only the segments stamped 10 and 11");
    assert!(f.compaction_segments(u64::MAX, 10).is_none(), "nothing is old enough");

    // delete.retention.ms not passed (the tombstone is stamped 11, not before 11): it stays,
    // as the latest of its key, and a=1 goes.
    let mut f = with_a_tombstone(4, &d.path().join("keep"), &st);
    run_at(&mut f, u64::MAX, BTreeMap::new(), 11, 0);
    assert_eq!(read(&f), [(2, "a"), (3, "b"), (4, "x")].map(|(o, k)| (o, k.to_string())));

    // Passed: the tombstone goes with everything its key had; the other keys are untouched.
    let mut f = with_a_tombstone(5, &d.path().join("drop"), &st);
    let (done, _) = run_at(&mut f, u64::MAX, BTreeMap::new(), 12, 0);
    assert_eq!(read(&f), [(3, "b"), (4, "x")].map(|(o, k)| (o, k.to_string())));
    assert_eq!(done.iter().map(|r| r.removed).sum::<u64>(), 3);
    // Offsets still resolve: the emptied batch keeps its span.
    assert_eq!(f.find(2).unwrap().unwrap().rec.base, 2);
}

#[test]
fn a_pass_waits_until_enough_is_dirty_or_a_dirty_record_waited_the_max_lag() {
    let d = tempfile::tempdir().unwrap();
    let st = store();
    // Three closed segments stamped 10, 11, 12 (and the active one), none read by a pass.
    let mut f = with_a_tombstone(3, &d.path().join("p"), &st);
    let c = f.compaction_segments(u64::MAX, u64::MAX).unwrap();
    assert_eq!((c.clean, c.dirty_since), (0, 10));
    assert!(c.due(0.5, 0) && c.due(0.99, 0), "all dirty");
    assert!(!c.due(1.0, 0), "a ratio of 1 is never passed (Kafka: more than the ratio)");
    assert!(c.due(1.0, 11), "but a record stamped 10 waited past a max lag ending at 11");
    assert!(!c.due(1.0, 10), "not at 10");
    f.compacted_through = c.through;

    // One more closed segment after that pass: a quarter or so of the bytes are dirty.
    f.append(5, 14, &[[5, 0]], &kv_batch(&[("y", Some("y"))], 5), None).unwrap();
    f.flush_index().unwrap();
    let c = f.compaction_segments(u64::MAX, u64::MAX).unwrap();
    let ratio = c.dirty as f64 / (c.clean + c.dirty) as f64;
    assert!(c.clean > 0 && (0.1..0.4).contains(&ratio), "clean {} dirty {}", c.clean, c.dirty);
    assert_eq!(c.dirty_since, 13, "the segment of x, closed by the append of y");
    assert!(!c.due(0.5, 0), "the default ratio waits");
    assert!(c.due(0.05, 0), "a low ratio runs");
    assert!(c.due(0.5, 14), "a max lag runs it anyway");
}

#[test]
fn closed_segments_that_fit_in_one_are_merged_and_everything_still_resolves() {
    let d = tempfile::tempdir().unwrap();
    let st = store();
    let batches: [(&[&str], bool); 5] =
        [(&["a", "b", "-"], false), (&["a", "c"], false), (&["b", "b"], false), (&["c"], false), (&["a"], false)];
    let mut f = partition(3, d.path(), &st, &batches);
    let before: Vec<u64> = (0..9).map(|o| f.txid_at(o).unwrap().unwrap()).collect();
    let (done, old) = run_at(&mut f, u64::MAX, BTreeMap::new(), 0, 1 << 20);
    // The four closed segments are one now; the active one is untouched.
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].olds.len(), 4);
    assert_eq!(old.len(), 12, "three files of each merged segment");
    let marks = f.marks();
    assert_eq!(
        marks.iter().map(|m| (m.base, m.gen, m.batches, m.msgs)).collect::<Vec<_>>(),
        [(0, 1, 4, 8), (8, 0, 1, 1)]
    );
    assert_eq!(read(&f), [(2, "-"), (3, "a"), (6, "b"), (7, "c"), (8, "a")].map(|(o, k)| (o, k.to_string())));
    // Every offset resolves to its batch and keeps its transaction-id record.
    assert_eq!(f.find(4).unwrap().unwrap().rec.base, 3);
    assert_eq!(f.find(6).unwrap().unwrap().rec.base, 5);
    assert_eq!((0..9).map(|o| f.txid_at(o).unwrap().unwrap()).collect::<Vec<_>>(), before);
    assert!(f.first_at_or_after(12).unwrap().is_some_and(|r| r.base == 5));
    // Recovery from the marks reads the same, and deleted what the marks do not name.
    let r = PartitionFiles::restore(3, d.path().to_path_buf(), 1 << 20, st.clone(), &marks).unwrap();
    assert_eq!(read(&r), read(&f));
    assert!(old.iter().all(|p| !p.exists()));
    // A merge of segments a reader changed since the pass is refused.
    let mut g = partition(4, &d.path().join("g"), &st, &batches);
    let segs = g.compaction_segments(u64::MAX, u64::MAX).unwrap().segs;
    let (part, dir) = g.job_target();
    let job = Job { part, dir, segs, aborted: BTreeMap::new(), tombstones_before: 0, segment_bytes: 1 << 20 };
    let done = compact(&job, 100, &CompactStats::default()).unwrap();
    g.retire_below(3);
    assert!(g.swap(&done[0]).is_none(), "the merge's first segment was retired");
}
