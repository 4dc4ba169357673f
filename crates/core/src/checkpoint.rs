//! Checkpoints and recovery.
//!
//! A checkpoint is the whole in-memory state (everything but message bytes,
//! which live in partition segment files) serialized as of one WAL frame,
//! written to a temp file, fsync'd, renamed over `checkpoint.bin`, and the
//! directory fsync'd; only then are older WAL segments deleted. Partition
//! files are fsync'd first, so the marks the checkpoint records are on disk.
//! Recovery = load the checkpoint, cut partition files back to its marks,
//! replay the WAL after its index (I1 makes the result equal to the state that
//! was lost). Recovery time is bounded by the checkpoint interval.
//!
//! Why not redb: the state is already an in-memory structure with one writer;
//! a single atomically renamed snapshot file needs no page management and
//! keeps restore to one sequential read. Message bytes, the part that grows
//! with data size, are never in the snapshot.

use crate::entry::decode_entries;
use crate::files::{file_path, Kind};
use crate::index::{REC, TXID};
use crate::provision::Provisioner;
use crate::state::{State, StorageConfig};
use crate::store::{PartitionFiles, TailWrite};
use baton_log::{recover as wal_recover, WalConfig, WalError};
use parking_lot::Mutex;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const FILE: &str = "checkpoint.bin";
/// Format 6 (D50): segment marks name their generation. Format 5 (marks without one, all
/// generation 0) is still read.
const MAGIC: &[u8; 8] = b"BATNCKP6";
const MAGIC_5: &[u8; 8] = b"BATNCKP5";
/// Formats this build refuses by name: 1 (before D13), 2 (FNV transaction-id hashes, before D21),
/// 3 (per-message metadata in the checkpoint, before D29).
const OLD_MAGICS: [&[u8; 8]; 4] = [b"BATNCKP1", b"BATNCKP2", b"BATNCKP3", b"BATNCKP4"];

pub struct Snapshot {
    pub index: u64,
    state: Box<State>,
    work: Unsynced,
    unsynced: Arc<Mutex<Unsynced>>,
    provisioner: Option<Arc<Provisioner>>,
    fs_sync: Option<Arc<File>>,
    store: Arc<crate::files::Store>,
    /// The planner's time visiting the listed partitions (the rest of its pause is the
    /// copy), and how many were listed.
    pub visit_us: u64,
    pub parts: usize,
}

/// What a checkpoint must still make durable or delete: files to sync, directories to sync,
/// retired files to delete once no checkpoint names them. A checkpoint that fails for a
/// reason that passes (out of descriptors, a full disk) gives its part back here and the
/// next one does it, instead of latching the node (issue 12 item 11).
#[derive(Debug, Default)]
pub struct Unsynced {
    /// Index records the marks count that the files may not hold yet (D31).
    pub tails: Vec<TailWrite>,
    pub files: Vec<PathBuf>,
    pub dirs: Vec<PathBuf>,
    pub graveyard: Vec<PathBuf>,
    /// Some of the files to sync were not named (`files` does not list them): only a sync
    /// of the whole filesystem covers them.
    pub unnamed: bool,
}

impl Unsynced {
    fn absorb(&mut self, other: Unsynced) {
        self.tails.extend(other.tails);
        self.files.extend(other.files);
        self.dirs.extend(other.dirs);
        self.graveyard.extend(other.graveyard);
        self.unnamed |= other.unnamed;
    }
}

/// Why a checkpoint failed: `Retry` changed nothing that matters (the WAL still holds
/// everything and the next checkpoint does the work again); `Fatal` is a failed sync of
/// data already written, after which the page cache may have dropped it, so the node stops.
#[derive(Debug)]
pub enum CheckpointError {
    Retry(String),
    Fatal(String),
}

impl std::fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckpointError::Retry(e) => write!(f, "{e} (will be retried)"),
            CheckpointError::Fatal(e) => f.write_str(e),
        }
    }
}

impl Snapshot {
    /// Copy the state on the planner thread (the only consistent moment); it is serialized
    /// later, off it. Every index tail is written first: the marks name only what is in the
    /// index files. Fails (changing nothing a retry needs) when a tail cannot be written.
    pub fn take(state: &mut State) -> Result<Snapshot, CheckpointError> {
        let prov = state.storage.provisioner.clone();
        // Only the partitions changed since the last checkpoint (D31): the others' marks are
        // what that one recorded, and a pass over every partition paused the planner. No
        // index record is written here: the checkpoint's thread writes them (cold files
        // opened by the thousand were a pause of a second and more at 100,000 partitions).
        let started = std::time::Instant::now();
        state.confirm_index_writes();
        let ids = std::mem::take(&mut *state.storage.store.waiting.checkpoint.lock());
        let mut work = std::mem::take(&mut *state.storage.unsynced.lock());
        // A listed partition has (usually) one written segment, three files: past
        // SYNCFS_FROM files the filesystem is synced at once, and no file needs a name.
        let by_name = state.storage.fs_sync.is_none() || !cfg!(target_os = "linux") || ids.len() * 3 <= SYNCFS_FROM;
        work.unnamed |= !by_name;
        for id in &ids {
            let Some(p) = state.parts.get_mut(id) else { continue };
            if let Some(f) = p.files.as_mut() {
                let part = f.checkpoint(prov.as_deref(), by_name);
                p.marks = part.marks;
                work.tails.extend(part.tails);
                work.files.extend(part.files);
                work.dirs.extend(part.dir);
            }
        }
        if !work.dirs.is_empty() {
            work.dirs.push(state.storage.data_dir.join("partitions"));
        }
        work.graveyard.append(&mut state.graveyard);
        state.compaction_unsaved = false;
        let visit_us = started.elapsed().as_micros() as u64;
        // A pointer per partition to its checkpointed fields, copied on its next change
        // while this copy lives (D32): deep copies paused the planner 300-400 ms for
        // 100,000 partitions, and re-copying only the changed ones still 117 ms for 36,000.
        let parts = crate::parts::Parts::of_snapshot(state.parts.snapshot());
        let live = std::mem::replace(&mut state.parts, parts);
        let copy = Box::new(state.clone());
        state.parts = live;
        let unsynced = state.storage.unsynced.clone();
        let fs_sync = state.storage.fs_sync.clone();
        let store = state.storage.store.clone();
        let (index, parts) = (state.applied_index, ids.len());
        Ok(Snapshot { index, state: copy, work, unsynced, provisioner: prov, fs_sync, store, visit_us, parts })
    }

    /// Serialize (here, off the planner) and write the snapshot atomically. `Ok(true)` when
    /// the partition files were synced through their filesystem at once (D31).
    pub fn write(mut self, dir: &Path) -> Result<bool, CheckpointError> {
        let work = std::mem::take(&mut self.work);
        match self.write_named(dir, &work) {
            Ok(syncfs) => Ok(syncfs),
            Err(e) => {
                if matches!(e, CheckpointError::Retry(_)) {
                    self.unsynced.lock().absorb(work);
                }
                Err(e)
            }
        }
    }

    fn write_named(&self, dir: &Path, work: &Unsynced) -> Result<bool, CheckpointError> {
        use CheckpointError::{Fatal, Retry};
        // Every file this snapshot names must be under that name before it is opened by
        // name and before the directories are synced.
        crate::failpoint::hit("checkpoint.taken");
        if let Some(p) = &self.provisioner {
            p.barrier().map_err(Retry)?;
        }
        // The index records the marks count, before their files are synced.
        for t in &work.tails {
            match t.write(&self.store) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && work.graveyard_covers(&t.path()) => {}
                Err(e) => return Err(Retry(format!("write the index of {}: {e}", t.path().display()))),
            }
        }
        crate::failpoint::hit("checkpoint.index_flushed");
        let mut seen = std::collections::HashSet::new();
        let files: Vec<&PathBuf> = work.files.iter().filter(|p| seen.insert(*p)).collect();
        let many = work.unnamed || files.len() + work.dirs.len() > SYNCFS_FROM;
        if let Some(d) = self.fs_sync.as_ref().filter(|_| many && cfg!(target_os = "linux")) {
            // One flush of the filesystem instead of a journal commit per file: 15,000
            // partitions written in an interval are 45,000 fsyncs, each in front of the
            // WAL's fdatasync on the same disk, and a clean stop after 100,000 partitions
            // synced 300,000 files by name for a minute (issue 18). Creates and renames are
            // in it too. A writeback error anywhere on it since the last call fails it: Fatal.
            sync_filesystem(d).map_err(|e| Fatal(format!("sync the partitions' filesystem: {e}")))?;
            crate::failpoint::hit("checkpoint.files_synced");
            return self.write_file(dir, work, true);
        }
        for path in files {
            let f = match File::open(path) {
                Ok(f) => f,
                // Retired and deleted by an earlier checkpoint after this one was asked for.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && work.graveyard_covers(path) => continue,
                Err(e) => return Err(Retry(format!("open {} to sync it: {e}", path.display()))),
            };
            f.sync_data().map_err(|e| Fatal(format!("sync partition file {}: {e}", path.display())))?;
        }
        // New segment files must survive a power cut as directory entries too.
        for d in &work.dirs {
            let f = match File::open(d) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && work.graveyard_covers(d) => continue,
                Err(e) => return Err(Retry(format!("open {} to sync it: {e}", d.display()))),
            };
            f.sync_all().map_err(|e| Fatal(format!("sync {}: {e}", d.display())))?;
        }
        crate::failpoint::hit("checkpoint.files_synced");
        self.write_file(dir, work, false)
    }

    /// Write `checkpoint.bin` once the files it names are durable, then delete what it no
    /// longer names. Returns `syncfs` (whether the files were synced all at once).
    fn write_file(&self, dir: &Path, work: &Unsynced, syncfs: bool) -> Result<bool, CheckpointError> {
        use CheckpointError::{Fatal, Retry};
        let tmp = dir.join("checkpoint.tmp");
        let f = File::create(&tmp).map_err(|e| Retry(format!("create {}: {e}", tmp.display())))?;
        write_streamed(&f, &self.state).map_err(Retry)?;
        f.sync_all().map_err(|e| Retry(format!("sync {}: {e}", tmp.display())))?;
        crate::failpoint::hit("checkpoint.tmp_written");
        fs::rename(&tmp, dir.join(FILE)).map_err(|e| Retry(format!("rename {}: {e}", tmp.display())))?;
        crate::failpoint::hit("checkpoint.renamed");
        let d = File::open(dir).map_err(|e| Fatal(format!("open data dir: {e}")))?;
        d.sync_all().map_err(|e| Fatal(format!("sync data dir: {e}")))?;
        crate::failpoint::hit("checkpoint.dir_synced");
        // Only now, with a durable checkpoint that does not name them, may retired files go.
        for (n, p) in work.graveyard.iter().enumerate() {
            if n == 1 {
                crate::failpoint::hit("checkpoint.deleting");
            }
            let res = if p.is_dir() { fs::remove_dir_all(p) } else { fs::remove_file(p) };
            match res {
                // A partition deleted before its first append never had a directory (D17).
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => tracing::warn!(path = %p.display(), error = %e, "could not delete a retired file"),
                Ok(()) => {}
            }
        }
        Ok(syncfs)
    }
}

/// Partition files (and directories) to sync beyond which a checkpoint syncs their whole
/// filesystem at once (D31). Below it each is synced by name, so a small checkpoint does
/// not wait for other writers' dirty data on a shared disk.
pub const SYNCFS_FROM: usize = 512;

/// D36: makes durable whatever the last process under `data_dir` wrote and never
/// synced. A crash leaves its last log batch, or a checkpoint renamed before its
/// directory was synced, in the page cache; recovery replays and serves from
/// them, so they must be on disk before anything built on them is answered.
pub(crate) fn sync_left_behind(data_dir: &Path) -> Result<(), String> {
    let d = File::open(data_dir).map_err(|e| format!("open {}: {e}", data_dir.display()))?;
    // Only a platform without syncfs falls back; a write-back error it reports must refuse.
    sync_filesystem(&d)
        .or_else(|e| if e.kind() == std::io::ErrorKind::Unsupported { d.sync_all() } else { Err(e) })
        .map_err(|e| format!("syncing what the last run left unsynced in {} failed: {e}", data_dir.display()))
}

fn sync_filesystem(d: &File) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid open descriptor; syncfs only reads it.
        if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = d;
        Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "syncfs is Linux only"))
    }
}

impl Unsynced {
    /// A file (or directory) retired since: it is deleted, not synced.
    fn graveyard_covers(&self, path: &Path) -> bool {
        self.graveyard.iter().any(|g| path.starts_with(g))
    }
}

/// Writes `MAGIC`, the body's CRC and the bincode body, serializing straight into the
/// file a MiB at a time (D20). Serializing into one buffer first made a 30 MB allocation
/// and copy per checkpoint (at 350k messages), and that burst of CPU and page faults on
/// 2 cores was where the worst commits of a steady load clustered; written in one go it
/// also sat in front of the WAL's next fdatasync. Now each MiB is serialized, then waited
/// onto the disk ([`baton_log::write_paced`]) before the next, which spreads the work.
fn write_streamed(f: &File, state: &State) -> Result<(), String> {
    let mut w = Paced { file: f, at: 12, buf: Vec::with_capacity(PACE), crc: 0, err: None };
    let res = bincode::serialize_into(&mut w, state);
    w.flush_buf();
    if let Some(e) = w.err.take() {
        return Err(format!("write checkpoint: {e}"));
    }
    res.map_err(|e| e.to_string())?;
    let mut head = MAGIC.to_vec();
    head.extend_from_slice(&w.crc.to_le_bytes());
    baton_log::write_paced(f, 0, &head).map_err(|e| format!("write checkpoint: {e}"))
}

const PACE: usize = 1 << 20;

/// The body's writer: buffers a MiB, adds it to the CRC, writes it paced at `at`.
struct Paced<'f> {
    file: &'f File,
    at: u64,
    buf: Vec<u8>,
    crc: u32,
    /// The first I/O error; bincode sees a plain failure and stops.
    err: Option<std::io::Error>,
}

impl Paced<'_> {
    fn flush_buf(&mut self) {
        if self.buf.is_empty() || self.err.is_some() {
            return;
        }
        self.crc = crc32c::crc32c_append(self.crc, &self.buf);
        match baton_log::write_paced(self.file, self.at, &self.buf) {
            Ok(()) => self.at += self.buf.len() as u64,
            Err(e) => self.err = Some(e),
        }
        self.buf.clear();
    }
}

impl std::io::Write for Paced<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= PACE {
            self.flush_buf();
        }
        match &self.err {
            Some(e) => Err(std::io::Error::new(e.kind(), e.to_string())),
            None => Ok(data.len()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn load(dir: &Path) -> Result<Option<State>, String> {
    let path = dir.join(FILE);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("read {}: {e}", path.display())),
    };
    decode(&bytes, &path).map(Some)
}

/// A checkpoint's bytes as recovery judges them (magic, CRC, decode); `path` names them in
/// errors.
pub(crate) fn decode(bytes: &[u8], path: &Path) -> Result<State, String> {
    if let Some(v) = OLD_MAGICS.iter().position(|m| bytes.len() >= 12 && &bytes[..8] == *m) {
        return Err(format!(
            "{} was written by an older Baton (checkpoint format {}); this build reads formats 5 and 6 \
             only: start with a fresh --data-dir",
            path.display(),
            v + 1
        ));
    }
    let v5 = bytes.len() >= 12 && &bytes[..8] == MAGIC_5;
    if bytes.len() < 12 || (&bytes[..8] != MAGIC && !v5) {
        return Err(format!("{} is not a Baton checkpoint", path.display()));
    }
    let crc = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if crc32c::crc32c(&bytes[12..]) != crc {
        return Err(format!("{} is damaged (crc mismatch)", path.display()));
    }
    let body = || bincode::deserialize(&bytes[12..]).map_err(|e| format!("decode {}: {e}", path.display()));
    if v5 {
        crate::store::legacy_marks(body)
    } else {
        body()
    }
}

/// Rebuild the state from disk; returns it with the next WAL index.
///
/// Decides before it acts: everything that would make the directory unrecoverable (a log
/// that no longer reaches back to the checkpoint, a partition file shorter than the
/// checkpoint recorded or missing) is found by reading only, and refused with nothing
/// changed on disk. Only then are files the checkpoint does not know deleted and the rest
/// cut back to its marks.
/// `wal: None` is a cluster member's start (D40): the state is the checkpoint's, and the
/// committed entries after it come back through Raft, not from a local log.
pub fn recover(storage: StorageConfig, wal: Option<&WalConfig>) -> Result<(State, u64), String> {
    fs::create_dir_all(&storage.data_dir).map_err(|e| format!("create {}: {e}", storage.data_dir.display()))?;
    let loaded = load(&storage.data_dir)?;
    let had_checkpoint = loaded.is_some();
    let mut state = loaded.unwrap_or_default();
    state.next_lease = state.next_lease.max(1);
    state.storage = storage.clone();
    let parts_dir = storage.data_dir.join("partitions");
    preflight(&state, had_checkpoint, &parts_dir, wal)?;
    fs::create_dir_all(&parts_dir).map_err(|e| e.to_string())?;
    // Partitions created after the checkpoint are recreated by replay, from empty. Spare
    // partition directories stay: the provisioner adopts the whole ones (D81).
    for ent in fs::read_dir(&parts_dir).map_err(|e| e.to_string())? {
        let ent = ent.map_err(|e| e.to_string())?;
        if ent.file_name() == crate::provision::SPARE_PARTS {
            continue;
        }
        let known = ent
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|id| state.parts.contains_key(&id));
        if !known {
            fs::remove_dir_all(ent.path()).map_err(|e| e.to_string())?;
        }
    }
    let ids: Vec<u32> = state.parts.keys().copied().collect();
    for id in ids {
        let dir = state.part_dir(id);
        let p = state.parts.get_mut(&id).expect("key listed");
        p.files = Some(
            PartitionFiles::restore(id, dir, storage.segment_bytes, storage.store.clone(), &p.marks)
                .map_err(|e| format!("restore partition {id}: {e}"))?,
        );
    }
    let queues: Vec<_> = state.queues.keys().copied().collect();
    for q in queues {
        state.set_rolls(q);
    }
    // The dedup window as of the checkpoint, from the files just cut to its marks; replay
    // then adds and expires keys as apply did live.
    let now = state.last_ts;
    for p in state.parts.values_mut() {
        let window = state.queues.get(&p.queue).map_or(0, |q| q.options.dedup_window_seconds);
        p.rebuild_dedup(window, now).map_err(|e| format!("rebuild partition {} dedup window: {e}", p.id))?;
    }
    let from = state.applied_index + 1;
    let Some(wal) = wal else {
        for p in state.parts.values() {
            p.publish_all();
        }
        return Ok((state, from));
    };
    let info = wal_recover(wal, from, |index, payload| {
        let entries = decode_entries(payload).map_err(|e| WalError::Corrupt {
            file: "wal".into(),
            offset: index,
            reason: format!("entry {index} does not decode: {e}"),
        })?;
        for e in &entries {
            state.apply(e).map_err(|e| WalError::Io(e.to_string()))?;
        }
        state.applied_index = index;
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    if info.truncated_bytes > 0 {
        tracing::warn!(bytes = info.truncated_bytes, "truncated a torn WAL tail");
    }
    tracing::info!(entries = info.entries, next_index = info.next_index, "recovered");
    for p in state.parts.values() {
        p.publish_all();
    }
    Ok((state, info.next_index.max(from)))
}

/// The read-only half of recovery: refuses, naming what is wrong, every directory that
/// recovery could only make worse.
fn preflight(state: &State, had_checkpoint: bool, parts_dir: &Path, wal: Option<&WalConfig>) -> Result<(), String> {
    let from = state.applied_index + 1;
    let first = match wal {
        Some(wal) => baton_log::first_index(&wal.dir).map_err(|e| e.to_string())?,
        // A member's partitions past its checkpoint are rebuilt from the Raft log.
        None => Some(from),
    };
    let refuse = |why: String| {
        Err(format!(
            "{why}; nothing was changed on disk. Restore the missing file(s), or start with a fresh --data-dir"
        ))
    };
    if let Some(first) = first.filter(|f| *f > from) {
        let what =
            if had_checkpoint { "the checkpoint covers entries up to" } else { "there is no checkpoint.bin, so" };
        return refuse(format!(
            "the log starts at entry {first} but {what} {}: entries {from}..{} are in neither",
            from - 1,
            first - 1
        ));
    }
    if !had_checkpoint && first.is_none() {
        let spare = |n: &std::ffi::OsStr| n.to_str().is_some_and(crate::provision::is_spare_name);
        let data = fs::read_dir(parts_dir).map(|mut d| d.any(|e| e.is_ok_and(|e| !spare(&e.file_name()))));
        if data.unwrap_or(false) {
            return refuse(format!(
                "{} holds partition data but there is neither a checkpoint.bin nor a log to describe it",
                parts_dir.display()
            ));
        }
    }
    for (id, p) in &state.parts {
        let dir = state.part_dir(*id);
        for m in &p.marks {
            for (kind, want) in [(Kind::Seg, m.len), (Kind::Idx, m.batches * REC), (Kind::Txid, m.msgs * TXID)] {
                let path = file_path(&dir, m.base, m.gen, kind);
                let len = match fs::metadata(&path) {
                    Ok(md) => md.len(),
                    Err(e) => return refuse(format!("partition {id}: {} is missing ({e})", path.display())),
                };
                if len < want {
                    return refuse(format!(
                        "partition {id}: {} is {len} bytes but the checkpoint recorded {want} (truncated or damaged)",
                        path.display(),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The checkpoint in `dir` as recovery reads it (magic, CRC, decode), changing nothing:
/// `None` when there is none. For `baton check data`, through [`crate::inspect`] only.
pub fn load_read_only(dir: &Path) -> Result<Option<State>, String> {
    load(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A format-1 checkpoint (before D13) is refused with a reason, not misread.
    #[test]
    fn an_older_format_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = OLD_MAGICS[0].to_vec();
        bytes.extend_from_slice(&[0u8; 16]);
        fs::write(dir.path().join(FILE), bytes).unwrap();
        let e = load(dir.path()).expect_err("refused");
        assert!(e.contains("older Baton") && e.contains("format 1"), "{e}");
    }

    /// The streamed writer makes exactly the file one buffer would have (magic, CRC of
    /// the body, body), across several MiB of body, and a flipped body byte is caught.
    #[test]
    fn a_streamed_checkpoint_is_the_buffered_format_and_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = State::default();
        // Past three MiB of body: values of ~500 bytes, 8,000 keys.
        for i in 0..8_000u64 {
            let e = crate::state::KvEntry { value: format!("\"{}\"", "v".repeat(500)), version: i, expires: None };
            state.kv.entry("ns".into()).or_default().insert(format!("key-{i}"), e);
        }
        let f = File::create(dir.path().join(FILE)).unwrap();
        write_streamed(&f, &state).unwrap();
        drop(f);
        let body = bincode::serialize(&state).unwrap();
        assert!(body.len() > 3 * PACE, "{}", body.len());
        let mut want = MAGIC.to_vec();
        want.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
        want.extend_from_slice(&body);
        let got = fs::read(dir.path().join(FILE)).unwrap();
        assert!(got == want, "the streamed file differs from the buffered format");
        let back = load(dir.path()).unwrap().expect("a checkpoint");
        assert_eq!(back.kv["ns"].len(), 8_000);
        assert_eq!(back.kv["ns"]["key-7999"].version, 7_999);
        let mut bad = got;
        let n = bad.len();
        bad[n / 2] ^= 1;
        fs::write(dir.path().join(FILE), bad).unwrap();
        assert!(load(dir.path()).err().is_some_and(|e| e.contains("crc mismatch")));
    }
}
