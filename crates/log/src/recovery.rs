//! Startup replay: verifies every frame of every segment, hands entries to the caller, and
//! cuts a torn tail off the last segment. A segment's frames end at its end or where only
//! zeros follow (a preallocated segment, D16).
//!
//! Must never repair anything except a torn tail of the last segment: any other damage (a bad
//! frame with a valid later frame after it, a bad frame in an older segment, a gap or repeat
//! in indexes) is reported as `WalError::Corrupt` and left on disk for a human.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::Path;

use crate::frame::{self, Decoded};
use crate::segment::{self, SegmentFile};
use crate::{RecoveryInfo, WalConfig, WalError};

/// Scans every segment in `cfg.dir` in order, verifies every frame, and calls
/// `f(index, payload)` for each entry with `index >= from_index`, in index order.
///
/// A torn tail (an incomplete or bad frame at the end of the last segment with no valid frame
/// after it) is truncated away and counted in `truncated_bytes`. Any other damage returns
/// `WalError::Corrupt` with the file and byte offset. Creates the directory if missing.
///
/// Indexes start at 1. `next_index = max(last_index + 1, from_index, 1)`. Missing entries are
/// tolerated only where they are all below `from_index` (a checkpoint covers them): before the
/// first segment, or between segments; otherwise they are corruption.
pub fn recover(
    cfg: &WalConfig,
    from_index: u64,
    mut f: impl FnMut(u64, &[u8]) -> Result<(), WalError>,
) -> Result<RecoveryInfo, WalError> {
    segment::create_dir_durably(&cfg.dir).map_err(|e| WalError::io(format!("creating {}", cfg.dir.display()), e))?;
    let from_index = from_index.max(1);
    let segments = segment::list(&cfg.dir)?;
    let mut info = RecoveryInfo { next_index: from_index, truncated_bytes: 0, entries: 0 };
    // One buffer for all segments: reading a whole segment at once keeps the scan a tight
    // loop over memory, and segments are bounded by segment_bytes plus one batch.
    let mut buf = Vec::new();
    // The index the next frame must carry, once the first segment has fixed it.
    let mut expected: Option<u64> = None;
    for (i, seg) in segments.iter().enumerate() {
        let is_last = i + 1 == segments.len();
        let start = check_segment_start(seg, expected, from_index)?;
        // Wholly below the checkpoint: nothing in it is replayed, so it is not read. Such a
        // segment may be one a checkpoint retired whose rename was not yet durable when the
        // power failed (D20 renames without a directory sync), back under its old name and
        // partly zero-filled already: reading it would refuse a healthy log.
        if let Some(next) = segments.get(i + 1).filter(|n| n.first_index <= from_index) {
            expected = Some(next.first_index);
            continue;
        }
        read_segment(&seg.path, &mut buf)?;
        let scan = scan(&buf, start, from_index, &mut f, &mut info.entries).map_err(|e| match e {
            ScanError::Corrupt(offset, reason) => corrupt(&seg.path, offset, reason),
            // The caller's own error is not corruption; pass it through untouched.
            ScanError::Callback(e) => e,
        })?;
        if let Some((offset, reason, tear)) = scan.damage {
            if !is_last {
                return Err(corrupt(&seg.path, offset, format!("{reason}, in a segment that is not the last")));
            }
            if tear == Tear::Damaged && !cfg.truncate_damaged_tail {
                return Err(corrupt(
                    &seg.path,
                    offset,
                    format!(
                        "{reason}: the last frame (index {}) is whole and no part of it reads as an unwritten sector, \
                         so this is damage, not a torn write, and it may hold writes that were answered; nothing was \
                         cut. Start with --wal-truncate-damaged-tail to cut it and the {} bytes from here",
                        scan.next,
                        buf.len() - offset
                    ),
                ));
            }
            info.truncated_bytes = (buf.len() - offset) as u64;
            truncate(&seg.path, offset as u64, &reason)?;
        }
        expected = Some(scan.next);
    }
    if let Some(next) = expected {
        info.next_index = next.max(from_index);
    }
    Ok(info)
}

/// Where a segment's entries must start, given where the previous segment ended.
pub(crate) fn check_segment_start(seg: &SegmentFile, expected: Option<u64>, from_index: u64) -> Result<u64, WalError> {
    let first = seg.first_index;
    match expected {
        None if first > from_index => Err(corrupt(
            &seg.path,
            0,
            format!("log starts at index {first} but replay from index {from_index} was requested; entries {from_index}..{first} are missing"),
        )),
        Some(e) if first < e => Err(corrupt(
            &seg.path,
            0,
            format!("segment starts at index {first} but the previous segment already reached index {}", e - 1),
        )),
        // Entries e..first are missing; harmless only if the checkpoint already covers them.
        Some(e) if first > e && first > from_index => Err(corrupt(
            &seg.path,
            0,
            format!("gap: entries {e}..{first} are missing"),
        )),
        _ => Ok(first),
    }
}

pub(crate) fn read_segment(path: &Path, buf: &mut Vec<u8>) -> Result<(), WalError> {
    let ctx = || format!("reading {}", path.display());
    let mut file = File::open(path).map_err(|e| WalError::io(ctx(), e))?;
    // Reading exactly the metadata length (not to EOF) keeps a special file that never ends
    // from hanging recovery.
    let len = file.metadata().map_err(|e| WalError::io(ctx(), e))?.len();
    let len_usize =
        usize::try_from(len).map_err(|_| WalError::Io(format!("{}: {len} bytes does not fit in memory", ctx())))?;
    buf.clear();
    buf.try_reserve_exact(len_usize).map_err(|e| WalError::Io(format!("{}: {e}", ctx())))?;
    (&mut file).take(len).read_to_end(buf).map_err(|e| WalError::io(ctx(), e))?;
    Ok(())
}

pub(crate) struct ScanEnd {
    /// Index the next frame (in this or the next segment) must carry.
    pub next: u64,
    /// Offset and reason of a bad frame with nothing valid after it: a torn tail candidate.
    pub damage: Option<(usize, String, Tear)>,
}

/// What a bad end of the last segment looks like.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) enum Tear {
    /// What a write cut by a crash leaves: a frame cut short, or sectors never written
    /// (zeros, in a preallocated or newly grown file). Never answered, so cut.
    Torn,
    /// A whole frame whose checksum fails with no unwritten sector in it: bits changed on
    /// the way or on the disk. Possibly answered.
    Damaged,
}

/// The sector size torn writes are reasoned in: a write cut by power loss leaves whole
/// sectors either written or not (zeros here, since segments are zero-filled or grown).
const SECTOR: usize = 512;

/// Whether a sector that `[at, at + len)` of the segment overlaps is all zeros (cut at the
/// end of the file): a sector of the frame that was never written. A sector holds more than
/// the frame's bytes; the rest of a lost sector past the frame is zeros too, since nothing
/// after the last write was ever written.
fn has_zero_sector(bytes: &[u8], at: usize, len: usize) -> bool {
    let end = (at + len).min(bytes.len());
    let mut s = at / SECTOR * SECTOR;
    while s < end {
        let sector = &bytes[s..(s + SECTOR).min(bytes.len())];
        if sector.iter().all(|&b| b == 0) {
            return true;
        }
        s += SECTOR;
    }
    false
}

/// Whether a bad frame at `off` (which should carry index `next`) followed by a valid one at
/// `later` is one write cut by a power loss, which can keep any of its sectors and lose the
/// others (writeback flushes its pages in any order before the sync): the bad frame shows a
/// sector that never reached the disk (its header is zeros, or a whole 512-byte sector of it
/// is: segments are zero-filled or grown), the valid frame's index is past `next` by no more
/// frames than the gap has room for, and everything from `off` to the end of the data fits
/// in one batch write (the writer never writes more at once, and syncs each before the
/// next), so none of it can have been answered. A bad frame with every sector present is
/// a changed bit in what may have been answered: damage, refused.
fn lost_sectors_then_rest_of_the_write(bytes: &[u8], off: usize, later: usize, next: u64) -> bool {
    let rest = &bytes[off..];
    let zero_header = rest.len() >= frame::HEADER_LEN && rest[..frame::HEADER_LEN].iter().all(|&b| b == 0);
    let lost_sector = zero_header || frame::whole_len(rest).is_some_and(|len| has_zero_sector(bytes, off, len));
    if !lost_sector {
        return false;
    }
    let Decoded::Frame { index, .. } = frame::decode(&bytes[later..]) else { return false };
    let room = ((later - off) / frame::HEADER_LEN) as u64;
    if index <= next || index - next > room {
        return false;
    }
    let data_end = bytes.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
    data_end.saturating_sub(off) <= MAX_WRITE_BYTES
}

/// The most one batch write can hold: the writer's batch cap plus the one frame that crossed
/// it, at its largest.
const MAX_WRITE_BYTES: usize = (8 << 20) + frame::HEADER_LEN + frame::MAX_PAYLOAD;

pub(crate) enum ScanError {
    /// Offset and reason; the caller attaches the file name.
    Corrupt(usize, String),
    Callback(WalError),
}

/// Walks the frames of one segment.
pub(crate) fn scan(
    bytes: &[u8],
    first_index: u64,
    from_index: u64,
    f: &mut impl FnMut(u64, &[u8]) -> Result<(), WalError>,
    entries: &mut u64,
) -> Result<ScanEnd, ScanError> {
    let mut off = 0;
    let mut next = first_index;
    while off < bytes.len() {
        match frame::decode(&bytes[off..]) {
            Decoded::Frame { index, payload, len } => {
                if index != next {
                    let what = if index < next { "repeat" } else { "gap" };
                    return Err(ScanError::Corrupt(off, format!("{what}: expected index {next}, found {index}")));
                }
                if index >= from_index {
                    f(index, payload).map_err(ScanError::Callback)?;
                    *entries += 1;
                }
                next =
                    next.checked_add(1).ok_or_else(|| ScanError::Corrupt(off, "index space exhausted".to_string()))?;
                off += len;
            }
            // A preallocated segment's unwritten zeros (D16): where the log ends, not damage.
            Decoded::Invalid(_) if bytes[off..].iter().all(|&b| b == 0) => break,
            Decoded::Invalid(reason) => {
                // A later frame that validates means the log went on after this point, so this
                // is damage inside acknowledged data, not an interrupted final write — unless
                // it is the rest of one write whose first sectors were lost.
                if let Some(rel) = frame::find_valid_frame(&bytes[off + 1..], next) {
                    let later = off + 1 + rel;
                    if lost_sectors_then_rest_of_the_write(bytes, off, later, next) {
                        let why =
                            format!("{reason}; unwritten sectors, then the rest of the same write from offset {later}");
                        return Ok(ScanEnd { next, damage: Some((off, why, Tear::Torn)) });
                    }
                    return Err(ScanError::Corrupt(off, format!("{reason}; a valid frame follows at offset {later}")));
                }
                // A write cut short leaves zeros where it stopped: at the frame's end (and on
                // past it), or in a sector it never reached. A whole frame with neither is
                // damage.
                let tear = match frame::whole_len(&bytes[off..]) {
                    Some(len) if bytes[off + len - 1] != 0 && !has_zero_sector(bytes, off, len) => Tear::Damaged,
                    _ => Tear::Torn,
                };
                return Ok(ScanEnd { next, damage: Some((off, reason, tear)) });
            }
        }
    }
    Ok(ScanEnd { next, damage: None })
}

fn truncate(path: &Path, len: u64, reason: &str) -> Result<(), WalError> {
    tracing::warn!(file = %path.display(), offset = len, %reason, "truncating torn wal tail");
    let ctx = || format!("truncating {} to {len} bytes", path.display());
    let file = OpenOptions::new().write(true).open(path).map_err(|e| WalError::io(ctx(), e))?;
    file.set_len(len).map_err(|e| WalError::io(ctx(), e))?;
    // The new length is metadata, so a full fsync is needed for it to survive a crash.
    file.sync_all().map_err(|e| WalError::io(ctx(), e))
}

fn corrupt(path: &Path, offset: usize, reason: String) -> WalError {
    WalError::Corrupt { file: path.display().to_string(), offset: offset as u64, reason }
}

#[cfg(test)]
#[path = "recovery_tests.rs"]
mod tests;
