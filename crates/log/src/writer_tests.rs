//! Writer tests: group commit, rotation, truncation, failure latch, shutdown.
//! Must never depend on timing for correctness: batching is forced with a gate item.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

use super::*;
use crate::frame::HEADER_LEN;
use crate::test_util::*;
use crate::RecoveryInfo;
use std::time::Duration;

#[test]
fn writer_handle_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<WalWriter>();
}

#[test]
fn queued_items_share_one_batch_and_are_answered_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let w = WalWriter::start(cfg(dir.path(), 1 << 30), 1).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    let (open, g) = gate(&tx);
    w.submit(g);
    for i in 0..1000 {
        w.submit(item(i, payload(i), &tx));
    }
    drop(open);
    let answers: Vec<Done> = (0..1001).map(|_| rx.recv_timeout(WAIT).unwrap()).collect();
    assert_eq!(answers[0], (u64::MAX, Ok(1)));
    for (i, (id, result)) in answers[1..].iter().enumerate() {
        assert_eq!((*id, result.clone()), (i as u64, Ok(i as u64 + 2)));
    }
    let stats = w.stats();
    // The gate held the writer while everything else queued: exactly one group commit.
    assert_eq!(stats.batches.load(Relaxed), 1);
    assert_eq!(stats.entries.load(Relaxed), 1001);
    assert_eq!(stats.batch_entries.count(), 1);
    assert_eq!(stats.batch_entries.sum(), 1001.0);
    assert_eq!(stats.sync_seconds.count(), 1);
    let expected_bytes: usize =
        (0..1000).map(|i| HEADER_LEN + payload(i).len()).sum::<usize>() + HEADER_LEN + b"gate".len();
    assert_eq!(stats.bytes.load(Relaxed), expected_bytes as u64);
}

#[test]
fn batch_is_capped_by_item_count() {
    let dir = tempfile::tempdir().unwrap();
    let w = WalWriter::start(cfg(dir.path(), 1 << 30), 1).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    let (open, g) = gate(&tx);
    w.submit(g);
    let n = MAX_BATCH_ITEMS as u64 + 10;
    for i in 0..n {
        w.submit(item(i, Vec::new(), &tx));
    }
    drop(open);
    for _ in 0..=n {
        assert!(rx.recv_timeout(WAIT).unwrap().1.is_ok());
    }
    assert_eq!(w.stats().batches.load(Relaxed), 2);
}

#[test]
fn rotation_creates_segments_named_after_their_first_index() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), 100);
    let w = WalWriter::start(c.clone(), 1).unwrap();
    // Each entry is a 60-byte frame, so a segment reaches 100 bytes after two entries.
    let payloads: Vec<Vec<u8>> = (0..7).map(|_| vec![7u8; 60 - HEADER_LEN]).collect();
    assert_eq!(append_one_by_one(&w, &payloads), (1..=7).collect::<Vec<_>>());
    w.shutdown();
    assert_eq!(segment_names(dir.path()), vec![1, 3, 5, 7]);
    let (info, got) = recover_all(&c, 1).unwrap();
    assert_eq!(info.next_index, 8);
    assert_eq!(got.iter().map(|e| e.0).collect::<Vec<_>>(), (1..=7).collect::<Vec<_>>());
}

/// Issue 12 item 11: a rotation that fails (out of descriptors, say) does not latch the
/// log: the batch goes on in the current segment, the next batch rotates, nothing is left
/// behind, and recovery reads every entry. Before, the failure latched the writer.
#[test]
fn a_failed_rotation_writes_on_in_the_current_segment() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), 100);
    let w = WalWriter::start(c.clone(), 1).unwrap();
    let payloads: Vec<Vec<u8>> = (0..7).map(|_| vec![7u8; 60 - HEADER_LEN]).collect();
    w.fail_rotations(2);
    assert_eq!(append_one_by_one(&w, &payloads), (1..=7).collect::<Vec<_>>());
    assert_eq!(w.stats().rotation_failures.load(Relaxed), 2);
    w.shutdown();
    // Entries 3 and 4 found the first segment full and could not rotate; 5 rotated.
    assert_eq!(segment_names(dir.path()), vec![1, 5, 7]);
    let (info, got) = recover_all(&c, 1).unwrap();
    assert_eq!(info.next_index, 8);
    assert_eq!(got.iter().map(|e| e.0).collect::<Vec<_>>(), (1..=7).collect::<Vec<_>>());
}

#[test]
fn truncate_before_deletes_only_whole_old_segments() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), 100);
    let w = WalWriter::start(c.clone(), 1).unwrap();
    let payloads: Vec<Vec<u8>> = (0..7).map(|_| vec![1u8; 60 - HEADER_LEN]).collect();
    append_one_by_one(&w, &payloads);
    assert_eq!(segment_names(dir.path()), vec![1, 3, 5, 7]);
    // Each step runs on a fresh writer so its effect is observable after shutdown.
    // (before, segments left): [1,2] is wholly below 3; [3,4] is not wholly below 4.
    let steps: [(u64, &[u64]); 4] = [(3, &[3, 5, 7]), (4, &[3, 5, 7]), (5, &[5, 7]), (6, &[5, 7])];
    w.truncate_before(steps[0].0);
    w.shutdown();
    assert_eq!(segment_names(dir.path()), steps[0].1);
    for (before, left) in &steps[1..] {
        // Starting at 8 creates segment 8 once, then reuses it while it stays empty.
        let w = WalWriter::start(c.clone(), 8).unwrap();
        w.truncate_before(*before);
        w.shutdown();
        let mut expected = left.to_vec();
        expected.push(8);
        assert_eq!(segment_names(dir.path()), expected, "truncate_before({before})");
    }
    let (_, got) = recover_all(&c, 5).unwrap();
    assert_eq!(got.iter().map(|e| e.0).collect::<Vec<_>>(), vec![5, 6, 7]);
}

#[test]
fn truncate_before_never_deletes_the_active_segment() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), 100);
    let w = WalWriter::start(c.clone(), 1).unwrap();
    let payloads: Vec<Vec<u8>> = (0..5).map(|_| vec![1u8; 60 - HEADER_LEN]).collect();
    append_one_by_one(&w, &payloads);
    w.truncate_before(u64::MAX);
    // The writer must still be able to append after the truncation.
    append_one_by_one(&w, &payloads[..1]);
    w.shutdown();
    assert_eq!(segment_names(dir.path()), vec![5]);
    let (info, got) = recover_all(&c, 5).unwrap();
    assert_eq!(got.iter().map(|e| e.0).collect::<Vec<_>>(), vec![5, 6]);
    assert_eq!(info.next_index, 7);
}

/// The durable index is what a power-loss campaign holds a restored directory
/// to: it starts at what recovery kept and moves only past a sync that held.
#[test]
fn the_durable_index_moves_only_past_a_successful_sync() {
    let dir = tempfile::tempdir().unwrap();
    let w = WalWriter::start(cfg(dir.path(), 1 << 30), 41).unwrap();
    assert_eq!(w.stats().durable_index.load(Relaxed), 40, "recovered: entries 1..=40");
    assert_eq!(append_one_by_one(&w, &[b"a".to_vec(), b"b".to_vec()]), vec![41, 42]);
    assert_eq!(w.stats().durable_index.load(Relaxed), 42);
    w.fail_next_sync();
    let (tx, rx) = crossbeam_channel::unbounded();
    w.submit(item(43, b"lost".to_vec(), &tx));
    assert!(rx.recv_timeout(WAIT).unwrap().1.is_err());
    assert_eq!(w.stats().durable_index.load(Relaxed), 42, "a failed sync claims nothing");
    w.shutdown();
}

#[test]
fn failed_sync_latches_and_fails_every_later_item() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), 1 << 30);
    let w = WalWriter::start(c.clone(), 1).unwrap();
    assert_eq!(append_one_by_one(&w, &[b"ok".to_vec()]), vec![1]);
    assert_eq!(w.failure(), None);

    w.fail_next_sync();
    let (tx, rx) = crossbeam_channel::unbounded();
    w.submit(item(2, b"lost".to_vec(), &tx));
    let (_, result) = rx.recv_timeout(WAIT).unwrap();
    let reason = match result {
        Err(WalError::Failed(reason)) => reason,
        other => panic!("expected Failed, got {other:?}"),
    };
    assert!(reason.contains("injected sync failure"), "{reason}");
    assert_eq!(w.failure(), Some(reason.clone()));

    // The hook fires once, so success here would mean the latch did not hold.
    let size_before = fs::metadata(dir.path().join(segment::file_name(1))).unwrap().len();
    for id in 3..6 {
        w.submit(item(id, b"later".to_vec(), &tx));
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), (id, Err(WalError::Failed(reason.clone()))));
    }
    let size_after = fs::metadata(dir.path().join(segment::file_name(1))).unwrap().len();
    assert_eq!(size_before, size_after, "wrote after latching failure");
    assert_eq!(w.stats().batches.load(Relaxed), 1);
    w.shutdown();
}

#[test]
fn failure_fails_the_whole_queued_batch() {
    let dir = tempfile::tempdir().unwrap();
    let w = WalWriter::start(cfg(dir.path(), 1 << 30), 1).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    let (open, g) = gate(&tx);
    w.submit(g);
    for i in 0..50 {
        w.submit(item(i, payload(i), &tx));
    }
    w.fail_next_sync();
    drop(open);
    for _ in 0..51 {
        let (id, result) = rx.recv_timeout(WAIT).unwrap();
        assert!(matches!(result, Err(WalError::Failed(_))), "{id}: {result:?}");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn real_write_error_latches_failure() {
    // /dev/full accepts opens and fails every write with ENOSPC: a genuine I/O error.
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/dev/full", dir.path().join(segment::file_name(1))).unwrap();
    let w = WalWriter::start(cfg(dir.path(), 1 << 30), 1).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    w.submit(item(1, b"a".to_vec(), &tx));
    let (_, result) = rx.recv_timeout(WAIT).unwrap();
    assert!(matches!(&result, Err(WalError::Failed(r)) if r.contains("write to")), "{result:?}");
    assert!(w.failure().is_some());
    w.submit(item(2, b"b".to_vec(), &tx));
    assert!(matches!(rx.recv_timeout(WAIT).unwrap(), (2, Err(WalError::Failed(_)))));
    assert_eq!(w.stats().batches.load(Relaxed), 0);
}

#[test]
fn shutdown_finishes_queued_items_then_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), 1 << 30);
    let w = Arc::new(WalWriter::start(c.clone(), 1).unwrap());
    let (tx, rx) = crossbeam_channel::unbounded();
    let (open, g) = gate(&tx);
    w.submit(g);
    for i in 0..200 {
        w.submit(item(i, payload(i), &tx));
    }
    let stopper = {
        let w = Arc::clone(&w);
        thread::spawn(move || w.shutdown())
    };
    // Wait until shutdown has closed the door while the writer is still gated, so the items
    // above are provably queued when shutdown begins.
    let deadline = std::time::Instant::now() + WAIT;
    while !w.shared.closed.load(Ordering::Acquire) {
        assert!(std::time::Instant::now() < deadline, "shutdown never closed");
        thread::yield_now();
    }
    w.submit(item(1000, Vec::new(), &tx));
    assert_eq!(rx.recv_timeout(WAIT).unwrap(), (1000, Err(WalError::Closed)));
    drop(open);
    stopper.join().unwrap();
    let mut answers = HashMap::new();
    while let Ok((id, result)) = rx.try_recv() {
        assert!(answers.insert(id, result).is_none(), "item {id} answered twice");
    }
    assert_eq!(answers.len(), 201);
    assert!(answers.values().all(|r| r.is_ok()), "{answers:?}");
    w.shutdown(); // idempotent
    w.submit(item(5000, Vec::new(), &tx));
    assert_eq!(rx.recv_timeout(WAIT).unwrap(), (5000, Err(WalError::Closed)));
    let (_, got) = recover_all(&c, 1).unwrap();
    assert_eq!(got.len(), 201);
}

#[test]
fn dropping_the_handle_answers_everything() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    {
        let w = WalWriter::start(cfg(dir.path(), 1 << 30), 1).unwrap();
        for i in 0..100 {
            w.submit(item(i, payload(i), &tx));
        }
    }
    let results: Vec<Done> = rx.try_iter().collect();
    assert_eq!(results.len(), 100);
    assert!(results.iter().all(|(id, r)| *r == Ok(id + 1)), "{results:?}");
}

#[test]
fn dropped_pending_answers_closed() {
    let (tx, rx) = crossbeam_channel::unbounded();
    drop(Pending(Some(item(9, Vec::new(), &tx))));
    assert_eq!(rx.try_recv().unwrap(), (9, Err(WalError::Closed)));
    assert!(rx.try_recv().is_err(), "answered twice");
}

struct PanickyItem(Sender<Done>);

impl WalItem for PanickyItem {
    fn encode(&self, _buf: &mut Vec<u8>) {
        panic!("encode bug (expected by the test)");
    }
    fn complete(self: Box<Self>, result: Result<u64, WalError>) {
        let _ = self.0.send((0, result));
    }
}

#[test]
fn panicking_encode_latches_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let w = WalWriter::start(cfg(dir.path(), 1 << 30), 1).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    assert_eq!(w.submit(Box::new(PanickyItem(tx.clone()))), 1);
    assert!(matches!(rx.recv_timeout(WAIT).unwrap(), (0, Err(WalError::Failed(_)))));
    // Index 1 was promised to the frame that failed: no later frame may take it.
    assert_eq!(w.submit(item(7, b"after".to_vec(), &tx)), 2);
    assert!(matches!(rx.recv_timeout(WAIT).unwrap(), (7, Err(WalError::Failed(_)))));
    assert!(w.failure().is_some());
}

/// Regression (issue 12 item 1): a frame over the cap used to fail alone without using up
/// its index, so the next frame of the batch was written and answered under it while the
/// planner counted on the next one. Now the log latches and answers nothing after it `Ok`.
#[test]
fn oversized_frame_latches_and_no_later_frame_takes_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), 1 << 30);
    let w = WalWriter::start(c.clone(), 1).unwrap();
    assert_eq!(append_one_by_one(&w, &[b"before".to_vec()]), vec![1]);
    let (tx, rx) = crossbeam_channel::unbounded();
    let (open, g) = gate(&tx);
    assert_eq!(w.submit(g), 2);
    assert_eq!(w.submit(item(1, vec![7u8; crate::MAX_FRAME_PAYLOAD + 1], &tx)), 3);
    assert_eq!(w.submit(item(2, b"small".to_vec(), &tx)), 4);
    drop(open);
    let mut answers: Vec<Done> = (0..3).map(|_| rx.recv_timeout(WAIT).unwrap()).collect();
    answers.sort_by_key(|a| a.0);
    for (id, result) in &answers {
        assert!(matches!(result, Err(WalError::Failed(_))), "item {id} answered {result:?}");
    }
    assert!(w.failure().unwrap().contains("frame cap"), "{:?}", w.failure());
    assert_eq!(w.submit(item(3, b"later".to_vec(), &tx)), 5);
    assert!(matches!(rx.recv_timeout(WAIT).unwrap(), (3, Err(WalError::Failed(_)))));
    w.shutdown();
    // Nothing of the failed batch reached the disk: the log still ends at the entry before it.
    let (info, entries) = recover_all(&c, 1).unwrap();
    assert_eq!(info.next_index, 2);
    assert_eq!(entries.len(), 1);
}

#[test]
fn start_refuses_a_next_index_behind_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), 1 << 30);
    let w = WalWriter::start(c.clone(), 1).unwrap();
    append_one_by_one(&w, &[b"a".to_vec(), b"b".to_vec()]);
    w.shutdown();
    assert!(matches!(WalWriter::start(c.clone(), 1), Err(WalError::Corrupt { .. })));
    // The value recover() returns is accepted and continues the log in a new segment.
    let (info, _) = recover_all(&c, 1).unwrap();
    let w = WalWriter::start(c.clone(), info.next_index).unwrap();
    assert_eq!(append_one_by_one(&w, &[b"c".to_vec()]), vec![3]);
    w.shutdown();
    assert_eq!(segment_names(dir.path()), vec![1, 3]);
}

#[test]
fn empty_segment_of_the_right_name_is_reused() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), 1 << 30);
    WalWriter::start(c.clone(), 1).unwrap().shutdown();
    WalWriter::start(c.clone(), 1).unwrap().shutdown();
    assert_eq!(segment_names(dir.path()), vec![1]);
}

/// D16: segments are zero-filled to full size before use; the log they hold replays exactly;
/// a restart on a segment that never got a frame reuses it; rotation takes the spare the
/// writer had prepared, already full size.
#[test]
fn preallocated_segments_replay_and_rotate_into_the_spare() {
    let dir = tempfile::tempdir().unwrap();
    let seg_bytes = 64 << 10;
    let c = WalConfig { preallocate: true, ..cfg(dir.path(), seg_bytes) };
    let len_of = |first: u64| fs::metadata(dir.path().join(segment::file_name(first))).unwrap().len();

    // Started and stopped with no entry: the blank segment is taken again, not refused.
    WalWriter::start(c.clone(), 1).unwrap().shutdown();
    assert_eq!(len_of(1), seg_bytes, "full size before the first write");
    let (info, _) = recover_all(&c, 1).unwrap();
    assert_eq!(info, RecoveryInfo { next_index: 1, truncated_bytes: 0, entries: 0 });
    let w = WalWriter::start(c.clone(), 1).unwrap();

    // Past half the segment, the spare is prepared in the background.
    let big: Vec<Vec<u8>> = (0..40).map(|i| vec![i as u8 + 1; 1000]).collect();
    assert_eq!(append_one_by_one(&w, &big), (1..=40).collect::<Vec<_>>());
    assert_eq!(len_of(1), seg_bytes, "frames overwrite the zeros; the file does not grow");
    let spare = dir.path().join("wal.spare");
    let deadline = std::time::Instant::now() + WAIT;
    while fs::metadata(&spare).map(|m| m.len()).unwrap_or(0) < seg_bytes && std::time::Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    thread::sleep(Duration::from_millis(200)); // its sync and hand-over
    let more: Vec<Vec<u8>> = (0..40).map(|i| vec![i as u8 + 100; 1000]).collect();
    assert_eq!(append_one_by_one(&w, &more), (41..=80).collect::<Vec<_>>());
    w.shutdown();
    let names = segment_names(dir.path());
    assert!(names.len() >= 2, "rotated: {names:?}");
    assert_eq!(len_of(names[1]), seg_bytes, "the second segment is the preallocated spare");

    let (info, got) = recover_all(&c, 1).unwrap();
    assert_eq!(info.truncated_bytes, 0);
    assert_eq!(info.next_index, 81);
    let want: Vec<Vec<u8>> = big.into_iter().chain(more).collect();
    assert_eq!(got.into_iter().map(|(_, p)| p).collect::<Vec<_>>(), want);
}

/// D20: segments a checkpoint retires go to the spare thread's pool (at most `recycle`; the
/// rest are deleted), a restart keeps the pool, and a later spare is a pool file zero-filled
/// again: the log it then holds replays exactly. A pool file used without its zero-fill
/// would fail the replay (its old frames carry earlier indexes).
#[test]
fn retired_segments_are_reused_as_spares_and_the_pool_is_bounded() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let seg_bytes = 64 << 10;
    let c = WalConfig { preallocate: true, recycle: 2, ..cfg(dir.path(), seg_bytes) };
    let inode = |p: &Path| fs::metadata(p).unwrap().ino();
    let seg_path = |n: u64| dir.path().join(segment::file_name(n));
    let pool = || {
        let mut v: Vec<PathBuf> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(crate::spare::RECYCLED_PREFIX))
            .collect();
        v.sort();
        v
    };

    let w = WalWriter::start(c.clone(), 1).unwrap();
    let first: Vec<Vec<u8>> = (0..300).map(|i| vec![(i % 250) as u8 + 1; 1000]).collect();
    append_one_by_one(&w, &first);
    let names = segment_names(dir.path());
    assert!(names.len() >= 4, "rotated several times: {names:?}");
    let active = *names.last().unwrap();
    let retired: Vec<u64> = names[..names.len() - 1].iter().map(|n| inode(&seg_path(*n))).collect();
    w.truncate_before(301);
    w.shutdown(); // joins the spare thread, so the retirement has happened
    assert_eq!(segment_names(dir.path()), vec![active]);
    let kept = pool();
    assert_eq!(kept.len(), 2, "two kept, the rest deleted: {kept:?}");
    assert!(kept.iter().all(|p| retired.contains(&inode(p))), "the pool holds retired segments");

    // A new process keeps the pool; its first spare comes from it.
    let w = WalWriter::start(c.clone(), 301).unwrap();
    let second: Vec<Vec<u8>> = (0..40).map(|i| vec![i as u8 + 7; 1000]).collect();
    assert_eq!(append_one_by_one(&w, &second), (301..=340).collect::<Vec<_>>());
    let spare = dir.path().join(crate::spare::SPARE_NAME);
    let deadline = std::time::Instant::now() + WAIT;
    while !(pool().len() == 1 && segment::is_blank(&spare).unwrap_or(false)) && std::time::Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(pool().len(), 1, "one pool file taken for the spare");
    thread::sleep(Duration::from_millis(200)); // its sync and hand-over
    let third: Vec<Vec<u8>> = (0..40).map(|i| vec![i as u8 + 77; 1000]).collect();
    assert_eq!(append_one_by_one(&w, &third), (341..=380).collect::<Vec<_>>());
    w.shutdown();
    let names = segment_names(dir.path());
    // The first run's last segment, this run's first, then the one the spare became.
    assert_eq!(names.len(), 3, "{names:?}");
    assert_eq!(&names[..2], &[active, 301]);
    assert!(retired.contains(&inode(&seg_path(names[2]))), "the next segment is a retired one, reused");
    assert_eq!(fs::metadata(seg_path(names[2])).unwrap().len(), seg_bytes);

    let (info, got) = recover_all(&c, 301).unwrap();
    assert_eq!(info.truncated_bytes, 0);
    assert_eq!(info.next_index, 381);
    let want: Vec<Vec<u8>> = second.into_iter().chain(third).collect();
    assert_eq!(got.into_iter().map(|(_, p)| p).collect::<Vec<_>>(), want);
}

/// A caller that numbers its own entries (Raft's log) can never have one written under
/// another number: `submit_at` takes the item only when the index matches, and hands it back
/// unanswered otherwise.
#[test]
fn submit_at_takes_only_the_index_it_was_told() {
    let dir = tempfile::tempdir().unwrap();
    let w = WalWriter::start(cfg(dir.path(), 1 << 20), 5).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    assert!(w.submit_at(item(0, b"five".to_vec(), &tx), 5).is_ok());
    let (back, got) = w.submit_at(item(1, b"seven".to_vec(), &tx), 7).expect_err("7 is not next");
    assert_eq!(got, 6);
    assert_eq!(w.next_index(), 6);
    assert!(w.submit_at(back, 6).is_ok(), "the item handed back is whole and can go in its place");
    let mut done: Vec<_> = (0..2).map(|_| rx.recv_timeout(WAIT).unwrap()).collect();
    done.sort_by_key(|d| d.0);
    assert_eq!(done[0].1.as_ref().unwrap(), &5);
    assert_eq!(done[1].1.as_ref().unwrap(), &6);
    assert!(rx.try_recv().is_err(), "nothing answered twice");
    w.shutdown();
    let (_, got) = recover_all(&cfg(dir.path(), 1 << 20), 5).unwrap();
    assert_eq!(got, vec![(5, b"five".to_vec()), (6, b"seven".to_vec())]);
}
