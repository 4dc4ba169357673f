use super::*;

fn store() -> Arc<Store> {
    Arc::new(Store::new(8, 1 << 20))
}

#[test]
fn append_rotate_find_restore_and_delete() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("p");
    let st = store();
    let mut f = PartitionFiles::create(1, dir.clone(), 10, st.clone());
    assert_eq!(f.append(0, 100, &[[7, 0]], b"0123456789ab", None).unwrap(), (0, 0));
    assert_eq!(f.append(1, 200, &[[8, 0], [9, DEDUP_FLAG | 5]], b"xyz", None).unwrap(), (1, 0));
    assert_eq!(f.append(3, 300, &[[10, 0]], b"uvw", None).unwrap(), (1, 3));
    let found = f.find(2).unwrap().unwrap();
    assert_eq!((found.seg, found.rec.base, found.rec.count, found.rec.ts), (1, 1, 2, 200));
    assert_eq!(f.span(found.seg, &found.rec).unwrap().read().unwrap(), b"xyz");
    assert_eq!(f.next(&found).unwrap().unwrap().rec.base, 3);
    assert!(f.find(4).unwrap().is_none());
    assert_eq!(f.txid_at(2).unwrap(), Some(9));
    assert_eq!(f.first_at_or_after(150).unwrap().unwrap().base, 1);
    assert_eq!(f.first_at_or_after(250).unwrap().unwrap().base, 3);
    assert!(f.first_at_or_after(301).unwrap().is_none());
    assert_eq!(f.txid_scan(0, 100).find(8).unwrap(), Some(1));
    assert_eq!(f.txid_scan(1, 100).find(7).unwrap(), None, "below start");
    f.flush_index().unwrap();
    let marks = f.marks();
    assert_eq!((marks[1].batches, marks[1].msgs, marks[1].first_ts, marks[1].last_ts), (2, 3, 200, 300));
    f.append(4, 400, &[[11, 0]], b"late", None).unwrap();
    f.flush_index().unwrap();
    let mut r = PartitionFiles::restore(1, dir.clone(), 10, st.clone(), &marks).unwrap();
    assert_eq!(r.marks(), marks);
    assert_eq!(fs::metadata(seg_path(&dir, 1)).unwrap().len(), 6);
    assert_eq!(fs::metadata(file_path(&dir, 1, 0, Kind::Idx)).unwrap().len(), 2 * REC);
    assert_eq!(fs::metadata(file_path(&dir, 1, 0, Kind::Txid)).unwrap().len(), 3 * TXID);
    assert_eq!(r.dedup_after(150).unwrap(), vec![(200, [9, 5])], "the flagged key, read back");
    assert!(r.dedup_after(200).unwrap().is_empty());
    assert_eq!(r.txid_at(3).unwrap(), Some(10), "read back from the file");
    assert_eq!(r.txid_at(4).unwrap(), None, "cut back to the mark");
    assert_eq!(r.retire_below(1).len(), 3);
    assert_eq!(r.segments.len(), 1);
    assert!(seg_path(&dir, 0).exists(), "retired files wait for the checkpoint");
}

/// Many partitions through a store of 8 files: every one stays readable and
/// writable, and the store never holds more than its budget.
#[test]
fn more_partitions_than_the_file_budget_all_work() {
    let d = tempfile::tempdir().unwrap();
    let st = store();
    let mut parts: Vec<PartitionFiles> =
        (0..50).map(|i| PartitionFiles::create(i, d.path().join(i.to_string()), 1 << 20, st.clone())).collect();
    for round in 0..3u64 {
        for (i, p) in parts.iter_mut().enumerate() {
            let body = format!("p{i}r{round}");
            p.append(round, round, &[[i as u64 * 100 + round, 0]], body.as_bytes(), None).unwrap();
            assert!(st.open_files() <= 8);
        }
    }
    for (i, p) in parts.iter_mut().enumerate() {
        let f = p.find(1).unwrap().unwrap();
        assert_eq!(p.span(f.seg, &f.rec).unwrap().read().unwrap(), format!("p{i}r1").as_bytes());
        assert_eq!(p.txid_at(2).unwrap(), Some(i as u64 * 100 + 2));
        p.flush_index().unwrap();
        assert_eq!(p.txid_at(0).unwrap(), Some(i as u64 * 100));
    }
    assert!(st.stats.evictions.load(std::sync::atomic::Ordering::Relaxed) > 0);
}

/// D17: with a provisioner the planner makes no file; segments are readable at once
/// through their pinned handles, named as a restart expects once the barrier returns,
/// and let go of once placed.
#[test]
fn provisioned_segments_are_readable_at_once_and_named_after_the_barrier() {
    let d = tempfile::tempdir().unwrap();
    let parts = d.path().join("partitions");
    let prov = Provisioner::start(&parts).unwrap();
    for _ in 0..500 {
        if prov.take().map(|(spare, _)| fs::remove_file(spare).unwrap()).is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    let dir = parts.join("3");
    let st = store();
    let mut f = PartitionFiles::create(3, dir.clone(), 10, st.clone());
    assert_eq!(f.take_dirty_dir(), None, "no directory yet, so none for a checkpoint to sync");
    assert_eq!(f.append(0, 1, &[[5, 0]], b"0123456789ab", Some(&prov)).unwrap(), (0, 0));
    assert_eq!(f.take_dirty_dir(), Some(dir.clone()), "the first segment's placement makes it");
    assert_eq!(f.append(1, 2, &[[6, 0]], b"xyz", Some(&prov)).unwrap(), (1, 0));
    let found = f.find(1).unwrap().unwrap();
    assert_eq!(f.span(found.seg, &found.rec).unwrap().read().unwrap(), b"xyz", "readable before it has its name");
    f.flush_index().unwrap();
    let marks = f.marks();
    prov.barrier().unwrap();
    f.release_pins(Some(&prov));
    assert!(f.segments.iter().all(|s| s.pinned.is_none()), "placed files are let go");
    assert_eq!(f.txid_at(1).unwrap(), Some(6), "reopened by name");
    assert_eq!(fs::read(seg_path(&dir, 0)).unwrap(), b"0123456789ab");
    assert_eq!(fs::read(seg_path(&dir, 1)).unwrap(), b"xyz");
    let r = PartitionFiles::restore(3, dir.clone(), 10, st, &marks).unwrap();
    let found = r.find(1).unwrap().unwrap();
    assert_eq!(r.span(found.seg, &found.rec).unwrap().read().unwrap(), b"xyz");
}

/// The periodic passes visit only partitions with work (D31): a partition is listed once
/// per pass however often it is written, a retirement without a write (retention) lists
/// it for the checkpoint, and a pass takes the marks, files and directory it must.
#[test]
fn partitions_are_listed_once_for_each_pass_that_has_work_for_them() {
    let d = tempfile::tempdir().unwrap();
    let st = store();
    let mut parts: Vec<PartitionFiles> =
        (0..100).map(|i| PartitionFiles::create(i, d.path().join(i.to_string()), 10, st.clone())).collect();
    let drain = |l: &parking_lot::Mutex<Vec<u32>>| std::mem::take(&mut *l.lock());
    assert!(drain(&st.waiting.sweep).is_empty() && drain(&st.waiting.checkpoint).is_empty());
    for (i, body) in [&b"0123456789ab"[..], b"xy", b"z"].into_iter().enumerate() {
        parts[7].append(i as u64, i as u64, &[[i as u64, 0]], body, None).unwrap();
    }
    parts[9].append(0, 0, &[[1, 0]], b"a", None).unwrap();
    assert_eq!(drain(&st.waiting.sweep), vec![7, 9]);
    assert_eq!(drain(&st.waiting.checkpoint), vec![7, 9]);
    let c = parts[7].checkpoint(None, true);
    assert_eq!(c.marks, parts[7].marks());
    assert_eq!((c.marks.len(), c.marks[1].batches, c.marks[1].msgs), (2, 2, 2));
    assert_eq!(c.files.len(), 6, "both segments' three files");
    assert_eq!(c.dir, Some(d.path().join("7")));
    assert_eq!(c.tails.len(), 2, "both segments' records: none is in the files yet");
    let (file, tails) = parts[7].sweep(None);
    assert!(file.is_some(), "appended since the last sweep: its writeback");
    assert!(tails.is_empty(), "the checkpoint already handed out every record");
    assert!(parts[7].sweep(None).0.is_none());
    assert!(drain(&st.waiting.sweep).is_empty(), "nothing pinned: not listed again");
    assert_eq!(parts[7].retire_below(1).len(), 3);
    assert_eq!(drain(&st.waiting.checkpoint), vec![7], "a retirement changes the marks");
    let c = parts[7].checkpoint(None, true);
    assert_eq!((c.marks.len(), c.marks[0].base, c.files.len()), (1, 1, 0));
    assert_eq!(c.tails.len(), 1, "a checkpoint hands out every record not confirmed, again");
    parts[7].append(3, 3, &[[3, 0]], b"w", None).unwrap();
    parts[7].append(4, 4, &[[4, 0]], b"v", None).unwrap();
    assert_eq!(drain(&st.waiting.checkpoint), vec![7], "listed once for two writes");
}

/// Index records written off the planner (D31): handed out by the sweep, written by
/// another thread, confirmed back; until confirmed they are read from the tail, after
/// from the files through the cache (a block cached while short is not served).
#[test]
fn index_records_written_elsewhere_are_read_from_the_tail_until_confirmed() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("p");
    let st = store();
    let mut f = PartitionFiles::create(1, dir.clone(), 1 << 20, st.clone());
    f.append(0, 10, &[[100, 0]], b"a", None).unwrap();
    f.flush_index().unwrap();
    // Cache the `.idx` block while the file holds one record.
    assert_eq!(f.rec(0, 0).unwrap().base, 0);
    f.append(1, 20, &[[101, 0], [102, 0]], b"bc", None).unwrap();
    let (_, tails) = f.sweep(None);
    assert_eq!(tails.len(), 1);
    assert!(f.sweep(None).1.is_empty(), "not handed out twice");
    assert_eq!(fs::metadata(file_path(&dir, 0, 0, Kind::Idx)).unwrap().len(), REC, "not written yet");
    assert_eq!((f.rec(0, 1).unwrap().base, f.txid_at(2).unwrap()), (1, Some(102)), "from the tail");
    for t in &tails {
        t.write(&st).unwrap();
    }
    assert_eq!(fs::metadata(file_path(&dir, 0, 0, Kind::Idx)).unwrap().len(), 2 * REC);
    assert_eq!(fs::metadata(file_path(&dir, 0, 0, Kind::Txid)).unwrap().len(), 3 * TXID);
    for (part, base, gen, b, m) in std::mem::take(&mut *st.waiting.confirmed.lock()) {
        assert_eq!((part, base, gen, b, m), (1, 0, 0, 2, 3));
        f.confirm(base, gen, b, m);
    }
    assert!(!f.segments[0].index.has_tail(), "confirmed records leave the tail");
    let r = f.rec(0, 1).unwrap();
    assert_eq!((r.base, r.ts, r.count), (1, 20, 2), "from the file, not the short cached block");
    assert_eq!(f.txid_at(2).unwrap(), Some(102));
    // A confirmation that arrives late (after a newer write) changes nothing.
    f.confirm(0, 0, 1, 1);
    assert_eq!(f.rec(0, 1).unwrap().base, 1);
}

/// Checkpoint format 5's marks had no generation: read through `legacy_marks` they are
/// generation 0, and format 6's keep theirs (D50).
#[test]
fn format_5_marks_read_as_generation_0() {
    #[derive(Serialize)]
    struct V5 {
        base: u64,
        len: u64,
        batches: u64,
        msgs: u64,
        first_ts: u64,
        last_ts: u64,
    }
    let old =
        bincode::serialize(&vec![V5 { base: 7, len: 100, batches: 2, msgs: 3, first_ts: 4, last_ts: 5 }]).unwrap();
    let m: Vec<SegmentMark> = legacy_marks(|| bincode::deserialize(&old)).unwrap();
    assert_eq!(m, [SegmentMark { base: 7, len: 100, batches: 2, msgs: 3, first_ts: 4, last_ts: 5, gen: 0 }]);
    let new = vec![SegmentMark { gen: 4, ..m[0].clone() }];
    let back: Vec<SegmentMark> = bincode::deserialize(&bincode::serialize(&new).unwrap()).unwrap();
    assert_eq!(back, new);
    assert!(legacy_marks(|| bincode::deserialize::<Vec<SegmentMark>>(&old[..old.len() - 1])).is_err());
}

#[test]
fn a_segment_closes_by_age_from_its_first_batch_and_by_its_topics_size() {
    let d = tempfile::tempdir().unwrap();
    let st = store();
    let mut f = PartitionFiles::create(1, d.path().join("p"), 1 << 20, st.clone());
    f.set_roll(1 << 20, 100);
    f.prepare(0, 1_000, None).unwrap();
    f.append(0, 1_000, &[[1, 0]], b"a", None).unwrap();
    f.append(1, 1_099, &[[2, 0]], b"b", None).unwrap();
    assert_eq!(f.segments.len(), 1, "younger than the age: same segment");
    // The planner's check and the apply's agree: prepare opens the segment the append uses.
    f.prepare(2, 1_100, None).unwrap();
    assert_eq!(f.segments.len(), 2, "prepare rolled at the age");
    assert_eq!(f.append(2, 1_100, &[[3, 0]], b"c", None).unwrap(), (2, 0));
    assert_eq!(f.segments.len(), 2, "the append found the segment prepare opened");
    // A smaller size from the topic's configs closes the active segment at its next append.
    f.append(3, 1_101, &[[4, 0]], b"dddd", None).unwrap();
    f.set_roll(4, Micros::MAX);
    assert_eq!(f.append(4, 1_102, &[[5, 0]], b"e", None).unwrap(), (4, 0));
    assert_eq!(f.segments.iter().map(|s| s.base).collect::<Vec<_>>(), [0, 2, 4]);
}
