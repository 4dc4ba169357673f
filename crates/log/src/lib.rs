//! Baton's write-ahead log: checksummed frames in numbered segment files, appended by one
//! group-commit thread and replayed by [`recover`].
//!
//! This file owns the public vocabulary (config, errors, the item contract, recovery summary).
//! It must never hold I/O logic: the on-disk format lives in `frame`, file handling in `segment`,
//! replay in `recovery` (and its read-only twin for `baton check data` in `inspect`), appending
//! in `writer`, metrics in `stats`.
//!
//! Invariant I3, enforced in `writer`: no answer claims success before its entry is durable
//! (written and fdatasync'd).

mod frame;
pub mod inspect;
#[cfg(feature = "mutants")]
pub mod mutant;
pub mod priority;
pub mod reader;
mod recovery;
mod segment;
mod spare;
mod stats;
mod writer;

#[cfg(test)]
mod test_util;

use std::fmt::Display;
use std::path::PathBuf;

pub use reader::WalReader;
pub use recovery::recover;
pub use segment::write_paced;
pub use stats::{Histogram, WalStats};
pub use writer::WalWriter;

/// Where the log lives and how big a segment may grow before the writer starts a new one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalConfig {
    pub dir: PathBuf,
    /// Rotate when the active segment has reached this many bytes (checked between batches,
    /// so a segment can overshoot by up to one batch).
    pub segment_bytes: u64,
    /// Zero-fill each segment to `segment_bytes` before writing to it (D16), so an fdatasync
    /// never has a new file size to commit. Off: segments grow as they are written.
    pub preallocate: bool,
    /// With `preallocate`, up to this many segments a checkpoint retired are kept and
    /// zero-filled again as the next spares instead of deleted (D20).
    pub recycle: usize,
    /// Recovery cuts a last frame that is whole but fails its checksum (damage, not a torn
    /// write: it may hold answered writes) instead of refusing to start. Off by default: an
    /// operator decides, after reading the refusal.
    pub truncate_damaged_tail: bool,
}

impl WalConfig {
    pub const DEFAULT_SEGMENT_BYTES: u64 = 64 << 20;
    /// 16 segments of 64 MiB: what a checkpoint interval of 30 s retires at about 35 MB/s of log.
    pub const DEFAULT_RECYCLE: usize = 16;

    pub fn new(dir: impl Into<PathBuf>) -> Self {
        WalConfig {
            dir: dir.into(),
            segment_bytes: Self::DEFAULT_SEGMENT_BYTES,
            preallocate: true,
            recycle: Self::DEFAULT_RECYCLE,
            truncate_damaged_tail: false,
        }
    }
}

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum WalError {
    #[error("wal io error: {0}")]
    Io(String),
    #[error("wal corrupted at {file}:{offset}: {reason}")]
    Corrupt { file: String, offset: u64, reason: String },
    /// Latched after a write or sync error; the log never accepts writes again in this process.
    #[error("wal is failed and refuses writes: {0}")]
    Failed(String),
    #[error("wal is shut down")]
    Closed,
    /// A request about entries the log does not hold (past its end, or purged).
    #[error("wal: {0}")]
    OutOfRange(String),
}

impl WalError {
    pub(crate) fn io(context: impl Display, err: std::io::Error) -> Self {
        WalError::Io(format!("{context}: {err}"))
    }
}

/// What the writer thread needs from each submitted item.
///
/// `encode` runs on the WAL writer thread, so serialization work stays off the caller's thread.
/// It must only append to `buf` (which already holds other frames of the batch); it must not
/// read, modify or remove bytes it did not write.
///
/// `complete` is called exactly once: after the batch holding the item has been written AND
/// fdatasync'd (`Ok(index)`), or with the error that prevented that. It runs on the writer
/// thread, or on the submitter's thread (when the log is already failed or closed, or when
/// the submitter wrote its own item, D84), so it should only hand the result off (e.g. send
/// on a channel), never block, and never wait for another item's completion.
pub trait WalItem: Send + 'static {
    fn encode(&self, buf: &mut Vec<u8>);
    fn complete(self: Box<Self>, result: Result<u64, WalError>);
}

/// The seam between the planner and whatever makes its frames durable: the local WAL
/// ([`WalWriter`]) on a single node, a replicated log later.
///
/// The log owns its index: `append` numbers the frame and says which number it got, and
/// frames are made durable (and completed) in that order. The caller never numbers frames.
/// A frame the log cannot take (too large, an encoding that panics, an index that does not
/// follow) latches the log: that frame and every later one complete with an error, so no
/// frame can ever be answered under an index another frame was planned on (I3).
pub trait Log: Send + Sync {
    /// Hands one frame to the log and returns the index it will carry. `item.complete` is
    /// called exactly once, with that index or with the error that kept it from being durable.
    fn append(&self, item: Box<dyn WalItem>) -> u64;
    /// [`Self::append`] from a caller with nothing else to do until the frame is durable: a
    /// log whose writer is idle may make the frame durable, and complete it, on the caller's
    /// thread before returning (D84). Otherwise, and by default, the same as `append`.
    fn append_idle(&self, item: Box<dyn WalItem>) -> u64 {
        self.append(item)
    }
    /// Entries below `index` are covered by a checkpoint and may be dropped.
    fn truncate_before(&self, index: u64);
    /// `Some(reason)` once the log is latched failed.
    fn failure(&self) -> Option<String>;
    /// Finish what was appended, then refuse more.
    fn shutdown(&self);
    /// Whether a frame appended now would only wait behind one still being made durable:
    /// the caller may as well add to its next frame a little longer (D75). A log whose
    /// writer groups waiting frames itself (the local WAL) never says so.
    fn backlog(&self) -> bool {
        false
    }
}

/// The largest payload one frame may carry: a [`Log`] refuses (and latches on) a bigger one,
/// so callers bound what they put in a frame well below it.
pub const MAX_FRAME_PAYLOAD: usize = frame::MAX_PAYLOAD;

/// The index the log's oldest segment starts at, read without changing anything; `None`
/// when there is no log yet. Lets recovery decide, before it deletes or cuts anything,
/// whether the log still holds every entry after its checkpoint.
pub fn first_index(dir: &std::path::Path) -> Result<Option<u64>, WalError> {
    if !dir.exists() {
        return Ok(None);
    }
    Ok(segment::list(dir)?.first().map(|s| s.first_index))
}

/// Summary of a [`recover`] pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoveryInfo {
    /// The index the next appended entry must get: `max(last_index + 1, from_index, 1)`.
    pub next_index: u64,
    /// Bytes cut from the end of the last segment because they held a torn write.
    pub truncated_bytes: u64,
    /// Entries handed to the callback (those with index >= from_index).
    pub entries: u64,
}
