//! Suffix truncation on the writer thread: the entries from an index on are removed from
//! disk, durably, before the caller hears Ok, and the next batch is written where they were.
//!
//! Owns the order of the removal, so a crash at any point leaves a log recovery accepts and
//! that is a prefix of the log before the truncation (Raft tolerates an uncommitted tail
//! coming back; it does not tolerate a hole): whole later segments are deleted newest first,
//! then the segment that holds the index is cut at that entry's first byte (a size change,
//! which the journal applies whole), then the file and the directory are synced.
//! Must never: delete or cut an entry below the index; answer Ok before the syncs returned;
//! go on writing after a failure here (it latches: the disk's state is no longer known).

use std::fs::{self, OpenOptions};
use std::sync::atomic::Ordering;

use super::Writer;
use crate::frame::{self, Decoded};
use crate::recovery::read_segment;
use crate::segment;
use crate::WalError;

impl Writer {
    pub(super) fn truncate_from(&mut self, index: u64) -> Result<(), WalError> {
        if let Some(reason) = self.shared.failure() {
            return Err(WalError::Failed(reason));
        }
        if index >= self.next_index {
            return if index == self.next_index {
                Ok(())
            } else {
                Err(WalError::OutOfRange(format!(
                    "cannot truncate from entry {index}: the log ends at entry {}",
                    self.next_index - 1
                )))
            };
        }
        let oldest = self.segments.front().map_or(self.next_index, |s| s.first_index);
        if index < oldest {
            return Err(WalError::OutOfRange(format!(
                "cannot truncate from entry {index}: the log starts at entry {oldest} (older entries were purged)"
            )));
        }
        self.cut(index).map_err(|reason| {
            self.shared.latch(reason.clone());
            WalError::Failed(reason)
        })
    }

    fn cut(&mut self, index: u64) -> Result<(), String> {
        let mut deleted = false;
        while self.segments.len() > 1 && self.segments.back().is_some_and(|s| s.first_index >= index) {
            let seg = self.segments.pop_back().expect("checked");
            fs::remove_file(&seg.path)
                .map_err(|e| format!("delete {} to truncate the log: {e}", seg.path.display()))?;
            deleted = true;
        }
        let seg = self.segments.back().expect("the log keeps its oldest segment").clone();
        let offset = if seg.first_index >= index { 0 } else { offset_of(&seg.path, seg.first_index, index)? };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&seg.path)
            .map_err(|e| format!("open {} to truncate the log: {e}", seg.path.display()))?;
        file.set_len(offset).map_err(|e| format!("cut {} at byte {offset}: {e}", seg.path.display()))?;
        file.sync_all().map_err(|e| format!("fsync of {} after cutting it: {e}", seg.path.display()))?;
        if deleted {
            segment::sync_dir(&self.dir).map_err(|e| format!("fsync of {}: {e}", self.dir.display()))?;
        }
        self.active = file;
        self.active_size = offset;
        self.next_index = index;
        self.shared.stats.durable_index.store(index - 1, Ordering::Release);
        Ok(())
    }
}

/// The byte at which entry `index` starts in the segment at `path`, whose first entry is
/// `first`; every frame before it must be whole (they were all synced and answered).
fn offset_of(path: &std::path::Path, first: u64, index: u64) -> Result<u64, String> {
    let mut buf = Vec::new();
    read_segment(path, &mut buf).map_err(|e| e.to_string())?;
    let (mut at, mut expected) = (0usize, first);
    while expected < index {
        match frame::decode(&buf[at..]) {
            Decoded::Frame { index: got, len, .. } if got == expected => {
                at += len;
                expected += 1;
            }
            Decoded::Frame { index: got, .. } => {
                return Err(format!("{} at byte {at}: entry {got} where {expected} was due", path.display()))
            }
            Decoded::Invalid(reason) => {
                return Err(format!("{} at byte {at} (entry {expected}): {reason}", path.display()))
            }
        }
    }
    Ok(at as u64)
}
