//! Recovery tests: replay, torn tails, mid-log corruption, index continuity.
//! Must never build expectations from the code under test: offsets are computed from the
//! documented frame layout.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::*;
use crate::frame::{encode, HEADER_LEN, MAGIC_BYTES};
use crate::segment::file_name;
use crate::test_util::*;
use crate::WalWriter;

/// Writes a segment file holding frames for `indexes` with `payload(i)`; returns its path.
fn write_segment(dir: &Path, first: u64, indexes: impl IntoIterator<Item = u64>) -> PathBuf {
    let mut buf = Vec::new();
    for i in indexes {
        encode(&mut buf, i, &payload(i)).unwrap();
    }
    let path = dir.join(file_name(first));
    fs::write(&path, buf).unwrap();
    path
}

fn offset_of(first: u64, index: u64) -> u64 {
    (first..index).map(|i| (HEADER_LEN + payload(i).len()) as u64).sum()
}

fn append(path: &Path, bytes: &[u8]) {
    OpenOptions::new().append(true).open(path).unwrap().write_all(bytes).unwrap();
}

fn expect_corrupt(result: Result<impl std::fmt::Debug, WalError>, path: &Path, offset: u64) {
    match result {
        Err(WalError::Corrupt { file, offset: got, reason }) => {
            assert_eq!(file, path.display().to_string(), "{reason}");
            assert_eq!(got, offset, "{reason}");
        }
        other => panic!("expected Corrupt at {}:{offset}, got {other:?}", path.display()),
    }
}

fn indexes(got: &[(u64, Vec<u8>)]) -> Vec<u64> {
    got.iter().map(|e| e.0).collect()
}

#[test]
fn empty_or_missing_dir_starts_at_one_or_from_index() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(&dir.path().join("not/yet"), 1 << 20);
    let (info, got) = recover_all(&c, 0).unwrap();
    assert!(c.dir.is_dir());
    assert!(got.is_empty());
    assert_eq!(info, RecoveryInfo { next_index: 1, truncated_bytes: 0, entries: 0 });
    assert_eq!(recover_all(&c, 50).unwrap().0.next_index, 50);
}

#[test]
fn replays_in_order_from_the_requested_index() {
    let dir = tempfile::tempdir().unwrap();
    write_segment(dir.path(), 1, 1..=4);
    write_segment(dir.path(), 5, 5..=10);
    let c = cfg(dir.path(), 1 << 20);
    let (info, got) = recover_all(&c, 4).unwrap();
    assert_eq!(indexes(&got), (4..=10).collect::<Vec<_>>());
    assert!(got.iter().all(|(i, p)| *p == payload(*i)));
    assert_eq!(info.entries, 7);
    assert_eq!(info.next_index, 11);
    assert_eq!(recover_all(&c, 100).unwrap().0.next_index, 100);
}

/// Torn tails of several shapes: each must be cut off exactly, leave earlier entries intact,
/// and let a new writer continue so that a second recovery sees everything.
#[test]
fn torn_tails_are_truncated_and_the_log_continues() {
    let mut half_frame = Vec::new();
    encode(&mut half_frame, 6, &[9u8; 100]).unwrap();
    half_frame.truncate(half_frame.len() / 2);
    // A whole frame whose checksum fails is cut only when a sector of it was never written.
    let mut bad_crc = Vec::new();
    encode(&mut bad_crc, 6, &[7u8; 1500]).unwrap();
    bad_crc[HEADER_LEN + 600..HEADER_LEN + 1500].fill(0);
    let mut lone_magic = vec![0u8; 33];
    lone_magic.extend_from_slice(&MAGIC_BYTES);
    lone_magic.extend_from_slice(&[0xEE; 40]);
    // A valid frame with an old index inside a torn write: a payload that embeds a frame
    // must not be mistaken for log data after the tear.
    let mut embedded_old = b"torn".to_vec();
    encode(&mut embedded_old, 2, b"nested").unwrap();

    // Zeros alone are a preallocated tail, not a tear: see zero_tail_is_where_the_log_ends.
    let mut half_then_zeros = half_frame.clone();
    half_then_zeros.resize(half_frame.len() + 4096, 0);
    let tails: [(&str, Vec<u8>); 6] = [
        ("half frame", half_frame),
        ("garbage", vec![0xAB; 57]),
        ("half frame then zeros", half_then_zeros),
        ("bad crc with an unwritten sector", bad_crc),
        ("lone magic", lone_magic),
        ("embedded old frame", embedded_old),
    ];
    for (name, tail) in tails {
        let dir = tempfile::tempdir().unwrap();
        let c = cfg(dir.path(), 1 << 20);
        let w = WalWriter::start(c.clone(), 1).unwrap();
        let payloads: Vec<Vec<u8>> = (1..=5).map(payload).collect();
        append_one_by_one(&w, &payloads);
        w.shutdown();
        let seg = dir.path().join(file_name(1));
        let good_len = fs::metadata(&seg).unwrap().len();
        append(&seg, &tail);

        let (info, got) = recover_all(&c, 1).unwrap();
        assert_eq!(indexes(&got), vec![1, 2, 3, 4, 5], "{name}");
        assert_eq!(info.truncated_bytes, tail.len() as u64, "{name}");
        assert_eq!(info.next_index, 6, "{name}");
        assert_eq!(fs::metadata(&seg).unwrap().len(), good_len, "{name}");

        let w = WalWriter::start(c.clone(), info.next_index).unwrap();
        assert_eq!(append_one_by_one(&w, &[payload(6), payload(7)]), vec![6, 7], "{name}");
        w.shutdown();
        let (info, got) = recover_all(&c, 1).unwrap();
        assert_eq!(indexes(&got), (1..=7).collect::<Vec<_>>(), "{name}");
        assert!(got.iter().all(|(i, p)| *p == payload(*i)), "{name}");
        assert_eq!(info.truncated_bytes, 0, "{name}");
    }
}

/// D16: a preallocated segment's zeros after the last frame end the log cleanly, in the last
/// segment and in older ones; nothing is truncated or reported.
#[test]
fn zero_tail_is_where_the_log_ends() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), 1 << 20);
    let first = write_segment(dir.path(), 1, 1..=5);
    append(&first, &[0; 10_000]);
    let len = fs::metadata(&first).unwrap().len();
    let (info, got) = recover_all(&c, 1).unwrap();
    assert_eq!(indexes(&got), vec![1, 2, 3, 4, 5]);
    assert_eq!(info, RecoveryInfo { next_index: 6, truncated_bytes: 0, entries: 5 });
    assert_eq!(fs::metadata(&first).unwrap().len(), len, "the zeros are left in place");

    let second = write_segment(dir.path(), 6, 6..=7);
    append(&second, &[0; 100]);
    let (info, got) = recover_all(&c, 1).unwrap();
    assert_eq!(indexes(&got), (1..=7).collect::<Vec<_>>(), "an older segment's zero tail is no damage either");
    assert_eq!(info.truncated_bytes, 0);
}

/// Zeros with a valid frame after them are a hole in acknowledged data, not an end.
#[test]
fn zeros_before_a_later_frame_are_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let seg = write_segment(dir.path(), 1, 1..=3);
    append(&seg, &[0; 64]);
    let mut later = Vec::new();
    encode(&mut later, 4, &payload(4)).unwrap();
    append(&seg, &later);
    expect_corrupt(recover_all(&cfg(dir.path(), 1 << 20), 1), &seg, offset_of(1, 4));
}

#[test]
fn whole_last_segment_torn_leaves_it_empty() {
    let dir = tempfile::tempdir().unwrap();
    write_segment(dir.path(), 1, 1..=3);
    let seg = write_segment(dir.path(), 4, []);
    append(&seg, &[0x55; 10]);
    let (info, got) = recover_all(&cfg(dir.path(), 1 << 20), 1).unwrap();
    assert_eq!(indexes(&got), vec![1, 2, 3]);
    assert_eq!(info.truncated_bytes, 10);
    assert_eq!(info.next_index, 4);
    assert_eq!(fs::metadata(&seg).unwrap().len(), 0);
}

#[test]
fn flipped_payload_byte_mid_log_is_corruption_at_that_frame() {
    let dir = tempfile::tempdir().unwrap();
    let seg = write_segment(dir.path(), 1, 1..=10);
    let mut bytes = fs::read(&seg).unwrap();
    let at = offset_of(1, 3);
    bytes[at as usize + HEADER_LEN + 2] ^= 0x10;
    fs::write(&seg, &bytes).unwrap();

    let mut seen = Vec::new();
    let result = recover(&cfg(dir.path(), 1 << 20), 1, |i, _| {
        seen.push(i);
        Ok(())
    });
    expect_corrupt(result, &seg, at);
    assert_eq!(seen, vec![1, 2]);
    // Corruption is reported, never repaired.
    assert_eq!(fs::read(&seg).unwrap(), bytes);
}

#[test]
fn damaged_length_mid_log_is_corruption_at_that_frame() {
    let dir = tempfile::tempdir().unwrap();
    let seg = write_segment(dir.path(), 1, 1..=10);
    let mut bytes = fs::read(&seg).unwrap();
    let at = offset_of(1, 6) as usize;
    bytes[at + 4..at + 8].copy_from_slice(&u32::MAX.to_le_bytes());
    fs::write(&seg, &bytes).unwrap();
    expect_corrupt(recover_all(&cfg(dir.path(), 1 << 20), 1), &seg, at as u64);
}

#[test]
fn damaged_last_frame_of_an_older_segment_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let first = write_segment(dir.path(), 1, 1..=4);
    write_segment(dir.path(), 5, 5..=6);
    let len = fs::metadata(&first).unwrap().len();
    OpenOptions::new().write(true).open(&first).unwrap().set_len(len - 3).unwrap();
    expect_corrupt(recover_all(&cfg(dir.path(), 1 << 20), 1), &first, offset_of(1, 4));
}

#[test]
fn repeated_or_skipped_index_inside_a_segment_is_corruption() {
    // After 1..=3 the next frame claims 3 (a repeat) or 5 (a gap); both are at frame 4's spot.
    for second_run in [3u64, 5] {
        let dir = tempfile::tempdir().unwrap();
        let mut buf = Vec::new();
        for i in (1..=3).chain(second_run..=second_run + 1) {
            encode(&mut buf, i, &payload(i)).unwrap();
        }
        let seg = dir.path().join(file_name(1));
        fs::write(&seg, &buf).unwrap();
        let result = recover_all(&cfg(dir.path(), 1 << 20), 1);
        expect_corrupt(result, &seg, offset_of(1, 4));
    }
}

#[test]
fn first_frame_must_match_the_segment_name() {
    let dir = tempfile::tempdir().unwrap();
    write_segment(dir.path(), 1, 1..=2);
    let seg = write_segment(dir.path(), 3, 4..=5);
    expect_corrupt(recover_all(&cfg(dir.path(), 1 << 20), 1), &seg, 0);
}

#[test]
fn missing_middle_segment_is_corruption_unless_checkpointed() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), 1 << 20);
    write_segment(dir.path(), 1, 1..=3);
    write_segment(dir.path(), 4, 4..=6);
    let third = write_segment(dir.path(), 7, 7..=9);
    fs::remove_file(dir.path().join(file_name(4))).unwrap();
    expect_corrupt(recover_all(&c, 1), &third, 0);
    expect_corrupt(recover_all(&c, 6), &third, 0);
    // Everything missing is below from_index: the checkpoint covers it.
    let (info, got) = recover_all(&c, 7).unwrap();
    assert_eq!(indexes(&got), vec![7, 8, 9]);
    assert_eq!(info.next_index, 10);
}

#[test]
fn overlapping_segments_are_corruption() {
    let dir = tempfile::tempdir().unwrap();
    write_segment(dir.path(), 1, 1..=5);
    let overlap = write_segment(dir.path(), 4, 4..=6);
    expect_corrupt(recover_all(&cfg(dir.path(), 1 << 20), 1), &overlap, 0);
}

#[test]
fn log_starting_after_from_index_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let seg = write_segment(dir.path(), 10, 10..=12);
    let c = cfg(dir.path(), 1 << 20);
    expect_corrupt(recover_all(&c, 9), &seg, 0);
    let (info, got) = recover_all(&c, 10).unwrap();
    assert_eq!(indexes(&got), vec![10, 11, 12]);
    assert_eq!(info.next_index, 13);
}

#[test]
fn callback_error_is_returned_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    write_segment(dir.path(), 1, 1..=5);
    let mut calls = 0;
    let result = recover(&cfg(dir.path(), 1 << 20), 1, |i, _| {
        calls += 1;
        if i == 3 {
            Err(WalError::Io("apply failed".into()))
        } else {
            Ok(())
        }
    });
    assert_eq!(result, Err(WalError::Io("apply failed".into())));
    assert_eq!(calls, 3);
}

#[test]
fn recovery_survives_arbitrary_bytes_without_panicking() {
    // Deterministic pseudo-random segments: any outcome is fine except a panic.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for round in 0..200 {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = Vec::new();
        for i in 1..=(round % 5) {
            encode(&mut bytes, i, &payload(i)).unwrap();
        }
        for _ in 0..(round * 7 % 300) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Bias towards magic bytes so the forward scan is exercised.
            let b = if state.is_multiple_of(5) { MAGIC_BYTES[(state >> 8) as usize % 4] } else { state as u8 };
            bytes.push(b);
        }
        fs::write(dir.path().join(file_name(1)), &bytes).unwrap();
        let result = recover_all(&cfg(dir.path(), 1 << 20), 1);
        if let Ok((info, got)) = result {
            assert!(got.len() as u64 >= round % 5, "round {round} lost valid entries");
            assert_eq!(info.next_index, got.len() as u64 + 1);
        }
    }
}

/// Regression (issue 12 item 7): a segment a checkpoint retired comes back under its old name
/// after a power loss (its rename to the recycling pool was not durable) with part of it
/// zero-filled again. It is wholly below the checkpoint, so replay must not read it; before,
/// its broken frames refused a healthy log.
#[test]
fn a_damaged_segment_wholly_below_the_checkpoint_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let old = write_segment(dir.path(), 1, 1..=4);
    write_segment(dir.path(), 5, 5..=7);
    let len = fs::metadata(&old).unwrap().len() as usize;
    let mut bytes = fs::read(&old).unwrap();
    bytes[HEADER_LEN..len / 2].fill(0);
    fs::write(&old, &bytes).unwrap();
    let c = cfg(dir.path(), 1 << 20);
    // A checkpoint covers 1..=4 (and 5): replay starts at 6.
    let (info, got) = recover_all(&c, 6).unwrap();
    assert_eq!((info.next_index, indexes(&got)), (8, vec![6, 7]));
    // The same damage below an index replay needs is still corruption.
    expect_corrupt(recover_all(&c, 4), &old, 0);
}

/// Regression (issue 12 item 17): a byte flipped inside the whole last frame was cut as a
/// torn tail with only a warning, dropping writes that may have been answered. A torn write
/// leaves a frame short or a sector unwritten; a whole frame with every sector present whose
/// checksum fails is damage: refused, nothing cut, unless the operator says to cut it.
#[test]
fn a_whole_last_frame_with_a_bad_checksum_is_damage_not_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let seg = write_segment(dir.path(), 1, 1..=5);
    let mut bytes = fs::read(&seg).unwrap();
    let at = offset_of(1, 5) as usize;
    bytes[at + HEADER_LEN + 1] ^= 0x04;
    fs::write(&seg, &bytes).unwrap();
    let mut c = cfg(dir.path(), 1 << 20);
    match recover_all(&c, 1) {
        Err(WalError::Corrupt { offset, reason, .. }) => {
            assert_eq!(offset, at as u64);
            assert!(
                reason.contains("damage, not a torn write") && reason.contains("--wal-truncate-damaged-tail"),
                "{reason}"
            );
        }
        other => panic!("expected the damage to be refused, got {other:?}"),
    }
    assert_eq!(fs::read(&seg).unwrap(), bytes, "nothing was cut");
    c.truncate_damaged_tail = true;
    let (info, got) = recover_all(&c, 1).unwrap();
    assert_eq!((indexes(&got), info.next_index), (vec![1, 2, 3, 4], 5));
}

/// Regression (issue 12 item 7): a power loss during the last write can keep its later
/// sectors and lose its first ones (zeros in a preallocated segment). That write was never
/// answered: it is a torn tail, cut, not a refusal to start.
#[test]
fn a_last_write_whose_first_sectors_were_lost_is_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let seg = write_segment(dir.path(), 1, 1..=3);
    let good = fs::metadata(&seg).unwrap().len() as usize;
    // The cut write: frames 4..=9 of 300 bytes each, its first 1,024 bytes never written.
    let mut write = Vec::new();
    for i in 4..=9 {
        encode(&mut write, i, &[b'x'; 280]).unwrap();
    }
    let hole_end = (good + 1024) / 512 * 512 - good;
    write[..hole_end].fill(0);
    append(&seg, &write);
    append(&seg, &[0; 4096]);
    let (info, got) = recover_all(&cfg(dir.path(), 1 << 20), 1).unwrap();
    assert_eq!((indexes(&got), info.next_index), (vec![1, 2, 3], 4));
    assert_eq!(fs::metadata(&seg).unwrap().len() as usize, good);
}

/// A power loss may keep any sectors of the last, unsynced write, in any order: here its
/// first sector (the first frame's header) reached the disk and its second did not, while
/// the later ones did. Nothing of that write was answered, so it is a torn tail like the
/// one above, not damage (issue 13: no false "corruption" at start-up after a power cut).
#[test]
fn a_last_write_with_a_lost_sector_in_its_middle_is_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let seg = write_segment(dir.path(), 1, 1..=3);
    let good = fs::metadata(&seg).unwrap().len() as usize;
    let mut write = Vec::new();
    for i in 4..=9 {
        encode(&mut write, i, &[b'x'; 280]).unwrap();
    }
    // The second sector the write touches, wholly inside it, never written: frame 4 is
    // whole before it, frames 5..=7 lose bytes to it, frames 8 and 9 are whole after it.
    let lost = (good / 512 + 1) * 512 - good;
    assert!((300..600).contains(&lost) && lost + 512 > 900 && lost + 512 < 1200, "the layout assumed: {lost}");
    write[lost..lost + 512].fill(0);
    append(&seg, &write);
    append(&seg, &[0; 4096]);
    let (info, got) = recover_all(&cfg(dir.path(), 1 << 20), 1).unwrap();
    assert_eq!((indexes(&got), info.next_index), (vec![1, 2, 3, 4], 5));
    assert_eq!(fs::metadata(&seg).unwrap().len() as usize, good + 300);
}
