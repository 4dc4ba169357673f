use super::*;
use crate::test_util::*;
use crate::{WalConfig, WalWriter};

fn read_all(r: &mut WalReader, start: u64, end: u64, max: usize) -> Vec<(u64, Vec<u8>)> {
    let mut got = Vec::new();
    let n = r.read(start, end, max, |i, p| got.push((i, p.to_vec()))).unwrap();
    assert_eq!(n as usize, got.len());
    got
}

fn expect(range: std::ops::Range<u64>) -> Vec<(u64, Vec<u8>)> {
    range.map(|i| (i, payload(i - 1))).collect()
}

/// Reads see every entry in order across segment boundaries, from any start, whether the
/// segments grow as written or were preallocated with zeros past the last frame (D16).
#[test]
fn reads_any_range_across_segments_plain_and_preallocated() {
    for preallocate in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut c = cfg(dir.path(), 200);
        c.preallocate = preallocate;
        let w = WalWriter::start(c, 1).unwrap();
        let payloads: Vec<Vec<u8>> = (0..60).map(payload).collect();
        append_one_by_one(&w, &payloads);
        assert!(segment_names(dir.path()).len() > 3, "the test needs several segments");
        let mut r = WalReader::new(dir.path());
        assert_eq!(read_all(&mut r, 1, 61, usize::MAX), expect(1..61), "preallocate {preallocate}");
        for start in [1, 2, 17, 33, 59, 60] {
            let mut fresh = WalReader::new(dir.path());
            assert_eq!(read_all(&mut fresh, start, start + 5, usize::MAX), expect(start..(start + 5).min(61)));
        }
        // Past the end: nothing, and no error.
        assert!(read_all(&mut r, 61, 70, usize::MAX).is_empty());
        assert!(read_all(&mut r, 5, 5, usize::MAX).is_empty());
        w.shutdown();
    }
}

/// The byte budget bounds a read but never stalls it: the first entry always comes.
#[test]
fn a_byte_budget_bounds_the_read_and_sequential_reads_continue() {
    let dir = tempfile::tempdir().unwrap();
    let w = WalWriter::start(cfg(dir.path(), 300), 1).unwrap();
    let payloads: Vec<Vec<u8>> = (0..40).map(payload).collect();
    append_one_by_one(&w, &payloads);
    let mut r = WalReader::new(dir.path());
    let one = read_all(&mut r, 1, 41, 0);
    assert_eq!(one, expect(1..2));
    let mut next = 2;
    let mut all = one;
    while next < 41 {
        let got = read_all(&mut r, next, 41, 30);
        assert!(!got.is_empty());
        assert!(got.iter().map(|(_, p)| p.len()).sum::<usize>() < 30 + 20);
        next = got.last().unwrap().0 + 1;
        all.extend(got);
    }
    assert_eq!(all, expect(1..41));
    w.shutdown();
}

/// A cursor left pointing into a tail that was truncated and rewritten must not hand out
/// the old bytes: the index in each frame is checked, and rewritten entries read as new.
#[test]
fn a_truncated_and_rewritten_tail_reads_as_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let w = WalWriter::start(cfg(dir.path(), 1 << 20), 1).unwrap();
    let payloads: Vec<Vec<u8>> = (0..20).map(payload).collect();
    append_one_by_one(&w, &payloads);
    let mut r = WalReader::new(dir.path());
    assert_eq!(read_all(&mut r, 1, 11, usize::MAX), expect(1..11));
    w.truncate_from(8).unwrap();
    assert_eq!(read_all(&mut r, 11, 21, usize::MAX), vec![], "entries past the cut are gone");
    let new: Vec<Vec<u8>> = (0..5).map(|i| format!("new-{i}").into_bytes()).collect();
    append_one_by_one(&w, &new);
    let got = read_all(&mut r, 8, 20, usize::MAX);
    assert_eq!(got, (0..5).map(|i| (8 + i, format!("new-{i}").into_bytes())).collect::<Vec<_>>());
    w.shutdown();
}

/// Entries in segments a checkpoint deleted are not there; the read says so by handing
/// over nothing, and later entries still read.
#[test]
fn purged_segments_read_as_absent() {
    let dir = tempfile::tempdir().unwrap();
    let c = WalConfig { recycle: 0, ..cfg(dir.path(), 200) };
    let w = WalWriter::start(c, 1).unwrap();
    let payloads: Vec<Vec<u8>> = (0..60).map(payload).collect();
    append_one_by_one(&w, &payloads);
    let mut r = WalReader::new(dir.path());
    assert_eq!(read_all(&mut r, 1, 4, usize::MAX), expect(1..4));
    w.truncate_before(40);
    // truncate_before runs on the writer thread after the batch it arrived with, which may
    // hold the next append: the second append after it is ordered after the deletion.
    append_one_by_one(&w, &[b"after".to_vec(), b"after".to_vec()]);
    let first = segment_names(dir.path())[0];
    assert!(first > 4 && first <= 40, "segments below 40 deleted, first now {first}");
    assert!(read_all(&mut r, 4, 10, usize::MAX).is_empty());
    assert_eq!(read_all(&mut r, first, first + 3, usize::MAX), expect(first..first + 3));
    w.shutdown();
}

/// A frame whose bytes were damaged on disk is never handed out.
#[test]
fn a_damaged_frame_ends_the_read() {
    let dir = tempfile::tempdir().unwrap();
    let w = WalWriter::start(cfg(dir.path(), 1 << 20), 1).unwrap();
    let payloads: Vec<Vec<u8>> = (0..10).map(payload).collect();
    append_one_by_one(&w, &payloads);
    w.shutdown();
    let seg = crate::segment::list(dir.path()).unwrap()[0].path.clone();
    let mut bytes = std::fs::read(&seg).unwrap();
    // Flip one payload byte of the fifth frame.
    let mut at = 0;
    for _ in 0..4 {
        at += frame::whole_len(&bytes[at..]).unwrap();
    }
    bytes[at + HEADER_LEN] ^= 0x40;
    std::fs::write(&seg, &bytes).unwrap();
    let mut r = WalReader::new(dir.path());
    assert_eq!(read_all(&mut r, 1, 11, usize::MAX), expect(1..5));
}
