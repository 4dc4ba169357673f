//! Suffix truncation: what is removed stays removed across a restart, what is kept is
//! untouched, the next append takes the first removed index, and bad requests change nothing.

use crate::test_util::*;
use crate::{WalConfig, WalError, WalWriter};

fn payloads(from: u64, to: u64, tag: &str) -> Vec<Vec<u8>> {
    (from..=to).map(|i| format!("{tag}-{i}").into_bytes()).collect()
}

/// Writes 1..=20 one batch each, truncates from `cut`, appends 3 new entries, shuts down and
/// returns what recovery replays.
fn truncate_and_reopen(c: &WalConfig, cut: u64) -> Vec<(u64, Vec<u8>)> {
    let w = WalWriter::start(c.clone(), 1).unwrap();
    assert_eq!(append_one_by_one(&w, &payloads(1, 20, "old")), (1..=20).collect::<Vec<_>>());
    w.truncate_from(cut).unwrap();
    assert_eq!(w.stats().durable_index.load(std::sync::atomic::Ordering::Relaxed), cut - 1);
    assert_eq!(append_one_by_one(&w, &payloads(cut, cut + 2, "new")), vec![cut, cut + 1, cut + 2]);
    w.shutdown();
    let (info, got) = recover_all(c, 1).unwrap();
    assert_eq!(info.next_index, cut + 3);
    assert_eq!(info.truncated_bytes, 0, "a truncation leaves nothing for recovery to cut");
    got
}

fn expected(cut: u64) -> Vec<(u64, Vec<u8>)> {
    let mut v: Vec<(u64, Vec<u8>)> = (1..cut).map(|i| (i, format!("old-{i}").into_bytes())).collect();
    v.extend((cut..cut + 3).map(|i| (i, format!("new-{i}").into_bytes())));
    v
}

#[test]
fn a_truncated_tail_is_gone_after_a_restart_and_new_entries_take_its_indexes() {
    for preallocate in [false, true] {
        // Small segments: entries 1..=20 span several, so the cut lands inside one, at the
        // first entry of one, in the active one and at entry 1.
        for cut in [1, 2, 7, 13, 19, 20] {
            let dir = tempfile::tempdir().unwrap();
            let mut c = cfg(dir.path(), 64);
            c.preallocate = preallocate;
            assert_eq!(truncate_and_reopen(&c, cut), expected(cut), "cut {cut}, preallocate {preallocate}");
        }
    }
}

#[test]
fn later_segments_are_deleted_and_the_cut_one_becomes_active() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), 64);
    let w = WalWriter::start(c.clone(), 1).unwrap();
    append_one_by_one(&w, &payloads(1, 20, "old"));
    let before = segment_names(dir.path());
    assert!(before.len() >= 4, "{before:?}");
    let cut = before[1] + 1;
    w.truncate_from(cut).unwrap();
    assert_eq!(segment_names(dir.path()), before[..2].to_vec());
    // Appends go on in the cut segment, then rotate as usual.
    append_one_by_one(&w, &payloads(cut, cut + 9, "new"));
    w.shutdown();
    let (_, got) = recover_all(&c, 1).unwrap();
    assert_eq!(got.len() as u64, cut + 9);
    assert_eq!(got[cut as usize - 1], (cut, format!("new-{cut}").into_bytes()));
}

#[test]
fn a_truncation_out_of_range_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), 64);
    let w = WalWriter::start(c.clone(), 1).unwrap();
    append_one_by_one(&w, &payloads(1, 20, "old"));
    match w.truncate_from(22) {
        Err(WalError::OutOfRange(m)) => assert!(m.contains("ends at entry 20"), "{m}"),
        other => panic!("{other:?}"),
    }
    // The end itself: nothing to remove.
    w.truncate_from(21).unwrap();
    w.truncate_before(12);
    // truncate_before runs after the batch it was queued with: the answer to the second
    // append means it has run.
    append_one_by_one(&w, &payloads(21, 22, "old"));
    let oldest = segment_names(dir.path())[0];
    assert!(oldest > 1, "old segments were purged");
    match w.truncate_from(oldest - 1) {
        Err(WalError::OutOfRange(m)) => assert!(m.contains("purged"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(w.failure(), None, "a refused request does not latch");
    w.shutdown();
    let (info, got) = recover_all(&c, oldest).unwrap();
    assert_eq!(info.next_index, 23);
    assert_eq!(got.last().unwrap(), &(22, b"old-22".to_vec()));
}

#[test]
fn a_latched_log_refuses_to_truncate() {
    let dir = tempfile::tempdir().unwrap();
    let w = WalWriter::start(cfg(dir.path(), 1 << 20), 1).unwrap();
    append_one_by_one(&w, &payloads(1, 3, "old"));
    w.fail_next_sync();
    let (tx, rx) = crossbeam_channel::unbounded();
    w.submit(item(9, b"x".to_vec(), &tx));
    assert!(rx.recv_timeout(WAIT).unwrap().1.is_err());
    assert!(matches!(w.truncate_from(2), Err(WalError::Failed(_))));
    w.shutdown();
}
