//! Read-only verification of a log directory, for `baton check data`: every frame of every
//! segment, judged exactly as [`crate::recover`] judges it (the same scan), but where
//! recovery would cut a torn tail or refuse, this only says so and goes on to the next
//! segment. Segments recovery would not read are scanned too, and marked as such.
//!
//! Must never write, create, truncate or rename anything (files are opened read-only), and
//! never decide what a finding means for the data above the log: the caller knows the
//! checkpoint and does.

use std::path::{Path, PathBuf};

use crate::recovery::{check_segment_start, read_segment, scan, ScanError, Tear};
use crate::segment;
use crate::WalError;

/// What recovery would make of one segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every frame valid, ending at the file's end or where only zeros follow.
    Clean,
    /// The last segment ends in what a crash leaves (a frame cut short, unwritten
    /// sectors): recovery cuts from `offset`. `index` is the index the cut frame carried.
    Torn { offset: u64, index: u64, reason: String },
    /// Recovery refuses to start: damage inside the log, a bad frame in a segment that is
    /// not the last, a whole last frame whose checksum fails, or indexes that do not follow.
    Damaged { offset: u64, reason: String },
}

/// One segment file and what was found in it.
#[derive(Debug, Clone)]
pub struct SegmentReport {
    pub path: PathBuf,
    /// The index its name says its first frame carries.
    pub first_index: u64,
    pub bytes: u64,
    /// Valid frames read before the end or the first damage.
    pub frames: u64,
    /// The index after the last valid frame read.
    pub next_index: u64,
    /// False for a segment recovery does not read: a later segment starts at or below the
    /// first index replay needs, so nothing in it is replayed (it may be a retired segment
    /// being recycled, partly zero-filled already: D20). Such a segment is still scanned
    /// here; what its verdict means is the caller's to say.
    pub read_by_recovery: bool,
    pub verdict: Verdict,
}

/// Reads every segment in `dir` that recovery from `from_index` would read and verifies
/// every frame; `on_entry(index, payload)` is called for each valid frame with
/// `index >= from_index`, in order (the caller checks that payloads decode). A missing
/// directory is an empty log. Errors only when a file cannot be read at all.
pub fn inspect(
    dir: &Path,
    from_index: u64,
    mut on_entry: impl FnMut(u64, &[u8]),
) -> Result<Vec<SegmentReport>, WalError> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let from_index = from_index.max(1);
    let segments = segment::list(dir)?;
    let mut out = Vec::with_capacity(segments.len());
    let mut buf = Vec::new();
    let mut expected: Option<u64> = None;
    // After a damaged segment, where the next one must start is unknown: not judged again.
    let mut after_damage = false;
    for (i, seg) in segments.iter().enumerate() {
        let is_last = i + 1 == segments.len();
        let mut report = SegmentReport {
            path: seg.path.clone(),
            first_index: seg.first_index,
            bytes: std::fs::metadata(&seg.path).map(|m| m.len()).unwrap_or(0),
            frames: 0,
            next_index: seg.first_index,
            read_by_recovery: true,
            verdict: Verdict::Clean,
        };
        // The same rules as recovery, in the same order: where the segment must start first.
        let start_problem = if after_damage { None } else { check_segment_start(seg, expected, from_index).err() };
        let skipped_to = segments.get(i + 1).map(|n| n.first_index).filter(|n| *n <= from_index);
        report.read_by_recovery = start_problem.is_some() || skipped_to.is_none();
        read_segment(&seg.path, &mut buf)?;
        let start = seg.first_index;
        // Index 0 as the lower bound: every frame is handed over, so frames are counted (up
        // to damage too); only those replay would apply are passed on.
        let mut frames = 0;
        let scanned = scan(
            &buf,
            start,
            0,
            &mut |index, payload| {
                if index >= from_index {
                    on_entry(index, payload);
                }
                Ok(())
            },
            &mut frames,
        );
        report.frames = frames;
        report.verdict = match (start_problem, scanned) {
            (Some(e), _) => Verdict::Damaged { offset: 0, reason: reason_of(e) },
            (None, Err(ScanError::Corrupt(offset, reason))) => Verdict::Damaged { offset: offset as u64, reason },
            (None, Err(ScanError::Callback(e))) => Verdict::Damaged { offset: 0, reason: reason_of(e) },
            (None, Ok(end)) => {
                report.next_index = end.next;
                match end.damage {
                    None => Verdict::Clean,
                    Some((offset, reason, _)) if !is_last => Verdict::Damaged {
                        offset: offset as u64,
                        reason: format!("{reason}, in a segment that is not the last"),
                    },
                    Some((offset, reason, Tear::Damaged)) => Verdict::Damaged {
                        offset: offset as u64,
                        reason: format!(
                            "{reason}: the last frame (index {}) is whole and no part of it reads as an \
                             unwritten sector, so this is damage, not a torn write (recovery refuses to start)",
                            end.next
                        ),
                    },
                    Some((offset, reason, Tear::Torn)) => {
                        Verdict::Torn { offset: offset as u64, index: end.next, reason }
                    }
                }
            }
        };
        // Go on from where this segment says it ends (or, when it could not be read to the
        // end, from where its successor says it starts: one finding per damaged segment).
        after_damage = report.read_by_recovery && matches!(report.verdict, Verdict::Damaged { .. });
        expected = if report.read_by_recovery { Some(report.next_index) } else { skipped_to };
        out.push(report);
    }
    Ok(out)
}

fn reason_of(e: WalError) -> String {
    match e {
        WalError::Corrupt { reason, .. } => reason,
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame;
    use std::fs;

    fn segment_of(dir: &Path, first: u64, frames: &[(u64, &[u8])]) -> PathBuf {
        let mut buf = Vec::new();
        for (i, p) in frames {
            frame::encode(&mut buf, *i, p).unwrap();
        }
        let path = dir.join(segment::file_name(first));
        fs::write(&path, buf).unwrap();
        path
    }

    #[test]
    fn clean_torn_and_damaged_are_told_apart_and_nothing_changes() {
        let d = tempfile::tempdir().unwrap();
        segment_of(d.path(), 1, &[(1, b"a"), (2, b"b")]);
        let last = segment_of(d.path(), 3, &[(3, b"c"), (4, b"dddd")]);
        let mut seen = Vec::new();
        let r = inspect(d.path(), 2, |i, p| seen.push((i, p.to_vec()))).unwrap();
        assert_eq!(r.len(), 2);
        assert!(r.iter().all(|s| s.verdict == Verdict::Clean), "{r:?}");
        assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), vec![2, 3, 4]);
        assert_eq!((r[0].frames, r[1].frames, r[1].next_index), (2, 2, 5));

        // A frame cut short at the end of the last segment: torn, and the file is untouched.
        let whole = fs::read(&last).unwrap();
        fs::write(&last, &whole[..whole.len() - 2]).unwrap();
        let r = inspect(d.path(), 1, |_, _| {}).unwrap();
        assert!(matches!(&r[1].verdict, Verdict::Torn { index: 4, .. }), "{:?}", r[1].verdict);
        assert_eq!(fs::metadata(&last).unwrap().len(), whole.len() as u64 - 2, "inspect cut nothing");

        // The last frame whole with a flipped payload byte: damage, not a tear.
        let mut bad = whole.clone();
        let n = bad.len();
        bad[n - 1] ^= 0x40;
        fs::write(&last, &bad).unwrap();
        let r = inspect(d.path(), 1, |_, _| {}).unwrap();
        assert!(matches!(&r[1].verdict, Verdict::Damaged { .. }), "{:?}", r[1].verdict);

        // A bad frame in a segment that is not the last is damage, and the next is still read.
        fs::write(&last, &whole).unwrap();
        let first = d.path().join(segment::file_name(1));
        let mut b = fs::read(&first).unwrap();
        b[frame::HEADER_LEN] ^= 1;
        fs::write(&first, &b).unwrap();
        let r = inspect(d.path(), 1, |_, _| {}).unwrap();
        assert!(matches!(&r[0].verdict, Verdict::Damaged { offset: 0, .. }), "{:?}", r[0].verdict);
        assert_eq!(r[1].verdict, Verdict::Clean);
    }

    #[test]
    fn a_segment_wholly_before_the_checkpoint_is_marked_as_one_recovery_does_not_read() {
        let d = tempfile::tempdir().unwrap();
        let old = segment_of(d.path(), 1, &[(1, b"a")]);
        fs::write(&old, b"garbage that would not scan").unwrap();
        segment_of(d.path(), 2, &[(2, b"b")]);
        let r = inspect(d.path(), 3, |_, _| {}).unwrap();
        assert!(!r[0].read_by_recovery && matches!(r[0].verdict, Verdict::Damaged { .. }), "{:?}", r[0]);
        assert!(r[1].read_by_recovery && r[1].verdict == Verdict::Clean, "{:?}", r[1]);
        let r = inspect(d.path(), 1, |_, _| {}).unwrap();
        assert!(r[0].read_by_recovery && matches!(r[0].verdict, Verdict::Damaged { .. }), "read when replay needs it");
        assert!(inspect(&d.path().join("none"), 1, |_, _| {}).unwrap().is_empty());
    }
}
