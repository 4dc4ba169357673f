//! What `baton check data` may know of a data directory, read without changing it: the
//! checkpoint reduced to what names files (partitions, their segment marks), where each file
//! lives, whether a log entry decodes, and a shared lock that tells a live server apart.
//!
//! Why a view and not `State`: the checker must not follow every change of the in-memory
//! state, only the format of the files; when the checkpoint's format changes, this file is
//! where the checker learns it. Must never write, create, truncate, rename or lock a file
//! for writing: everything here opens read-only.

use crate::checkpoint;
use crate::model::PartId;
use std::fs::{File, TryLockError};
use std::io::Read;
use std::path::{Path, PathBuf};

/// What the checkpoint records of one segment file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkView {
    /// The offset of the segment's first message (its file name).
    pub base: u64,
    /// The generation of its files (D50): 0 as written.
    pub gen: u32,
    /// Bytes of the file the checkpoint covers; recovery cuts the file back to this.
    pub len: u64,
    /// Index records (`<base>.idx`) the checkpoint covers.
    pub batches: Option<u64>,
    /// Transaction-id records (`<base>.txid`, [`TXID_RECORD`] bytes each) it covers.
    pub msgs: Option<u64>,
}

/// Bytes per `.txid` record (D29).
pub const TXID_RECORD: u64 = crate::index::TXID;

/// One partition as the checkpoint names it.
#[derive(Debug, Clone)]
pub struct PartitionView {
    pub id: PartId,
    pub queue: String,
    pub name: String,
    /// First offset still stored (retention moves it).
    pub start: u64,
    /// Next offset to assign, as of the checkpoint.
    pub end: u64,
    pub marks: Vec<MarkView>,
    /// The node's transaction-id key (D21), so `.txid` records can be recomputed.
    pub hash_key: [u64; 2],
}

/// The `.txid` record a message would have, without its dedup flag (D29): the key of its
/// transaction id, or for a record without one (Kafka), of `<partition>-<offset>`.
pub fn txid_record(hash_key: [u64; 2], partition: &str, offset: u64, txid: Option<&str>) -> [u64; 2] {
    match txid {
        Some(t) => crate::model::txid_key(hash_key, t),
        None => crate::model::txid_key(hash_key, &format!("{partition}-{offset}")),
    }
}

/// A `.txid` record without its dedup flag.
pub fn txid_unflagged(k: [u64; 2]) -> [u64; 2] {
    [k[0], k[1] & !crate::model::DEDUP_FLAG]
}

#[derive(Debug, Clone)]
pub struct CheckpointView {
    /// The last log entry the checkpoint covers; replay starts after it.
    pub index: u64,
    /// Sorted by id.
    pub partitions: Vec<PartitionView>,
}

pub fn checkpoint_path(data_dir: &Path) -> PathBuf {
    data_dir.join("checkpoint.bin")
}

pub fn wal_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("wal")
}

pub fn partitions_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("partitions")
}

pub fn partition_dir(data_dir: &Path, id: PartId) -> PathBuf {
    partitions_dir(data_dir).join(id.to_string())
}

/// `<part dir>/<base:020>.seg`, or `<base:020>.g<gen>.seg` once compacted (D50).
pub fn segment_path(part_dir: &Path, base: u64, gen: u32) -> PathBuf {
    crate::files::file_path(part_dir, base, gen, crate::files::Kind::Seg)
}

/// The checkpoint, checked as recovery checks it (magic, CRC, decode); `Ok(None)` when
/// there is none, `Err` naming what is wrong with one that is there.
pub fn read_checkpoint(data_dir: &Path) -> Result<Option<CheckpointView>, String> {
    let Some(state) = checkpoint::load_read_only(data_dir)? else { return Ok(None) };
    let mut partitions: Vec<PartitionView> = state
        .parts
        .values()
        .map(|p| PartitionView {
            id: p.id,
            queue: state.queues.get(&p.queue).map(|q| q.name.clone()).unwrap_or_default(),
            name: p.name.clone(),
            start: p.start,
            end: p.end,
            marks: p
                .marks
                .iter()
                .map(|m| MarkView {
                    base: m.base,
                    gen: m.gen,
                    len: m.len,
                    batches: Some(m.batches),
                    msgs: Some(m.msgs),
                })
                .collect(),
            hash_key: state.hash_key,
        })
        .collect();
    partitions.sort_by_key(|p| p.id);
    Ok(Some(CheckpointView { index: state.applied_index, partitions }))
}

/// The number of entries in one log frame's payload, or why it does not decode.
pub fn decode_entries(payload: &[u8]) -> Result<usize, String> {
    crate::entry::decode_entries(payload).map(|e| e.len())
}

/// A shared lock on the data directory, held while it is checked: a server holds the
/// exclusive one for its whole life (`dirlock`), so getting this one means none runs, and
/// none can start (it would be refused) until the check lets go. Writes nothing.
pub struct ReadLock {
    _dir: File,
}

pub fn lock_for_reading(data_dir: &Path) -> Result<ReadLock, String> {
    let dir = File::open(data_dir).map_err(|e| format!("open {}: {e}", data_dir.display()))?;
    if !dir.metadata().map_err(|e| format!("{}: {e}", data_dir.display()))?.is_dir() {
        return Err(format!("{} is not a directory", data_dir.display()));
    }
    match dir.try_lock_shared() {
        Ok(()) => Ok(ReadLock { _dir: dir }),
        Err(TryLockError::WouldBlock) => {
            let mut pid = String::new();
            let _ = File::open(data_dir.join("LOCK")).and_then(|mut f| f.read_to_string(&mut pid));
            let who = match pid.trim() {
                "" => "a running server".to_string(),
                p => format!("a running server (process {p})"),
            };
            Err(format!(
                "{} is in use by {who}: its files change while they are read, so they are not checked. \
                 Stop the server first",
                data_dir.display()
            ))
        }
        Err(TryLockError::Error(e)) => Err(format!("lock {} for reading: {e}", data_dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_directory_is_refused_and_a_free_one_is_read() {
        let d = tempfile::tempdir().unwrap();
        let held = crate::dirlock::DirLock::acquire(d.path()).unwrap();
        let e = lock_for_reading(d.path()).err().expect("refused while a server holds it");
        assert!(e.contains(&format!("process {}", std::process::id())) && e.contains("Stop the server"), "{e}");
        drop(held);
        let r = lock_for_reading(d.path()).expect("free");
        assert!(crate::dirlock::DirLock::acquire(d.path()).is_err(), "no server starts while it is checked");
        drop(r);
        assert!(read_checkpoint(d.path()).unwrap().is_none());
        std::fs::write(checkpoint_path(d.path()), b"BATNCKP5\0\0\0\0junk").unwrap();
        assert!(read_checkpoint(d.path()).err().is_some_and(|e| e.contains("crc")));
    }
}
