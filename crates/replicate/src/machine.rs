//! openraft's state machine: Raft's bookkeeping (last applied log id, last membership, the
//! current snapshot) around Baton's apply, which it reaches only through [`Applier`].
//!
//! Owns the snapshot files: `<dir>/snap-<term>-<index>` holds magic `BRS1`, a u32 length, the
//! bincode of its `SnapshotMeta`, a crc32c of that meta, then whatever the applier wrote. A
//! snapshot is written to a `.tmp` file, fdatasync'd and renamed: a crash leaves the old
//! snapshot or the new one. A received snapshot is copied from the stream it arrived in, so
//! memory holds one copy buffer, never a whole snapshot. What is sent is `<snapshot>.send`:
//! the meta and what [`Applier::export`] makes of the body, written when first asked for
//! (a member's own snapshot names its partition files rather than holds them, D43). A
//! snapshot may end before the last entry applied (the state's own checkpoint, D43): the
//! terms and memberships since the current snapshot are kept to name the entry it ends at.
//! Must never: apply an entry out of order or twice (an index at or below the last applied
//! one is refused), report a snapshot whose file is not durable, or start from a snapshot
//! whose meta does not check.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bincode::Options;
use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{EntryPayload, ErrorSubject, ErrorVerb, RaftSnapshotBuilder, SnapshotMeta};
use parking_lot::Mutex;

use crate::{io_error, Entry, Frame, LogId, NodeId, StorageError, StoredMembership, TypeConfig};

const MAGIC: &[u8; 4] = b"BRS1";
const MAX_META: u64 = 1 << 20;
/// The suffix of a snapshot's copy to send, made by [`Applier::export`] when first needed.
const SEND: &str = ".send";

type Meta = SnapshotMeta<NodeId, openraft::BasicNode>;

/// What a node's state is, to Raft: something committed frames are applied to, in order,
/// that can be written out whole and read back.
pub trait Applier: Send + 'static {
    /// Applies one committed planner frame (I1: a pure function of the state and the frame).
    fn apply(&mut self, index: u64, frame: &Frame) -> Result<(), String>;
    /// Writes the whole state as of one applied index to `out` and answers that index: at
    /// most `applied` (the last entry applied, `None` before any), and above `since` (the
    /// current snapshot's).
    fn snapshot(
        &mut self,
        applied: Option<u64>,
        since: Option<u64>,
        out: &mut dyn Write,
    ) -> Result<Snapshotted, String>;
    /// Replaces the whole state with what [`Applier::snapshot`] wrote here, or what
    /// [`Applier::export`] made of it elsewhere.
    fn restore(&mut self, input: &mut dyn Read) -> Result<(), String>;
    /// What a member that needs a snapshot is sent, made from what [`Applier::snapshot`]
    /// wrote (which may name files rather than hold them, D43). Runs without the state
    /// machine's lock: applies go on meanwhile. By default, the same bytes.
    fn export(stored: &mut dyn Read, out: &mut dyn Write) -> Result<(), String>
    where
        Self: Sized,
    {
        io::copy(stored, out).map(|_| ()).map_err(|e| e.to_string())
    }
}

/// What [`Applier::snapshot`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Snapshotted {
    /// It wrote the state as of this entry (`None`: the state before any entry).
    Upto(Option<u64>),
    /// It has nothing newer than the current snapshot: it wrote nothing.
    Unchanged,
}

/// An applier that keeps every frame it was given, in order: for tests that compare
/// replicas (openraft's suite, the cluster tests). Never the engine's applier.
#[cfg(any(test, feature = "testing"))]
#[derive(Default)]
pub struct Recorder(pub Vec<(u64, Vec<u8>)>);

#[cfg(any(test, feature = "testing"))]
impl Applier for Recorder {
    fn apply(&mut self, index: u64, frame: &Frame) -> Result<(), String> {
        self.0.push((index, frame.0.to_vec()));
        Ok(())
    }
    fn snapshot(&mut self, applied: Option<u64>, _: Option<u64>, out: &mut dyn Write) -> Result<Snapshotted, String> {
        bincode::serialize_into(out, &self.0).map_err(|e| e.to_string())?;
        Ok(Snapshotted::Upto(applied))
    }
    fn restore(&mut self, input: &mut dyn Read) -> Result<(), String> {
        self.0 = bincode::deserialize_from(input).map_err(|e| e.to_string())?;
        Ok(())
    }
}

struct Inner<A> {
    dir: PathBuf,
    applier: A,
    applied: Option<LogId>,
    membership: StoredMembership,
    current: Option<(Meta, PathBuf)>,
    /// Names received snapshots apart.
    received: u64,
    /// The first log id of each leader's run since the current snapshot (the one it ends at
    /// first), and each membership in effect since: a snapshot may end before the last entry
    /// applied (D43), and its meta must name that entry's term and membership.
    terms: Vec<LogId>,
    memberships: Vec<StoredMembership>,
}

/// The state machine handed to openraft; its snapshot builder shares it.
pub struct Machine<A> {
    inner: Arc<Mutex<Inner<A>>>,
    /// This member's log: nothing is applied before it is durable here (D76).
    log: Arc<std::sync::OnceLock<crate::log_store::LogStore>>,
}

impl<A> Clone for Machine<A> {
    fn clone(&self) -> Self {
        Machine { inner: Arc::clone(&self.inner), log: Arc::clone(&self.log) }
    }
}

fn snap_err(verb: ErrorVerb, e: impl std::fmt::Display) -> StorageError {
    io_error(ErrorSubject::Snapshot(None), verb, e)
}

fn meta_codec() -> impl Options {
    bincode::options().with_limit(MAX_META).with_fixint_encoding()
}

impl<A: Applier> Machine<A> {
    /// Opens the snapshots in `dir` (creating it durably) and restores `applier` from the
    /// newest; with none, the applier is taken as the empty state.
    pub fn open(dir: &Path, mut applier: A) -> Result<Machine<A>, StorageError> {
        crate::meta::create_dir_durably(dir).map_err(|e| snap_err(ErrorVerb::Write, e))?;
        let mut newest: Option<(Meta, PathBuf)> = None;
        for entry in fs::read_dir(dir).map_err(|e| snap_err(ErrorVerb::Read, e))? {
            let path = entry.map_err(|e| snap_err(ErrorVerb::Read, e))?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
            if name.ends_with(".tmp") || name.ends_with(SEND) {
                // A copy to send is made again when it is needed.
                // Half-written or half-received: never renamed into place, so never relied on.
                fs::remove_file(&path).map_err(|e| snap_err(ErrorVerb::Delete, e))?;
                continue;
            }
            if !name.starts_with("snap-") {
                continue;
            }
            let meta = read_meta(&mut File::open(&path).map_err(|e| snap_err(ErrorVerb::Read, e))?)
                .map_err(|e| snap_err(ErrorVerb::Read, format!("{}: {e}", path.display())))?;
            if newest.as_ref().is_none_or(|(m, _)| m.last_log_id < meta.last_log_id) {
                newest = Some((meta, path));
            }
        }
        let (mut applied, mut membership) = (None, StoredMembership::default());
        if let Some((meta, path)) = &newest {
            let mut f = File::open(path).map_err(|e| snap_err(ErrorVerb::Read, e))?;
            read_meta(&mut f).map_err(|e| snap_err(ErrorVerb::Read, e))?;
            applier.restore(&mut io::BufReader::new(f)).map_err(|e| snap_err(ErrorVerb::Read, e))?;
            applied = meta.last_log_id;
            membership = meta.last_membership.clone();
        }
        Ok(Machine {
            inner: Arc::new(Mutex::new(Inner {
                dir: dir.to_path_buf(),
                applier,
                applied,
                terms: applied.into_iter().collect(),
                memberships: vec![membership.clone()],
                membership,
                current: newest,
                received: 0,
            })),
            log: Arc::default(),
        })
    }

    /// From now on an entry is applied only once this member's own copy of it is durable
    /// (D76). A leader's entries commit once a majority holds them, which since D76 may not
    /// yet include the leader itself: applying one there first would put into the engine's
    /// state (and its checkpoint) an entry the leader's log could still lose, to a crash
    /// before its sync. Set once, before Raft starts.
    pub fn apply_only_durable(&self, log: crate::log_store::LogStore) {
        let _ = self.log.set(log);
    }

    /// Runs `f` on the applier (for the node's reads of its state and for tests).
    pub fn with_applier<R>(&self, f: impl FnOnce(&mut A) -> R) -> R {
        f(&mut self.inner.lock().applier)
    }

    /// Runs `f` on the applier with the last log id applied to it, holding Raft's apply off
    /// meanwhile: what `f` replays cannot interleave with what Raft applies next.
    pub fn with_applied<R>(&self, f: impl FnOnce(&mut A, Option<LogId>) -> R) -> R {
        let mut i = self.inner.lock();
        let applied = i.applied;
        f(&mut i.applier, applied)
    }
}

impl<A: Applier> Machine<A> {
    /// The current snapshot as it is sent: its meta, then what [`Applier::export`] makes of
    /// its body, in a file made the first time it is asked for (off the lock).
    async fn sendable(&self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        // A newer snapshot may replace this one (and delete its files) while it is copied:
        // the copy is then made of the newer one.
        for attempt in 0.. {
            let current = self.inner.lock().current.clone();
            let Some((meta, path)) = current else { return Ok(None) };
            match self.try_sendable(meta, path.clone()).await {
                Err(e) if attempt < 3 && self.inner.lock().current.as_ref().is_none_or(|(_, p)| *p != path) => {
                    tracing::debug!(error = %e, "the snapshot to send was replaced; sending the newer one");
                }
                other => return other,
            }
        }
        unreachable!("the loop returns")
    }

    async fn try_sendable(&self, meta: Meta, path: PathBuf) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        let (dir, send) = (self.inner.lock().dir.clone(), send_path(&path));
        let made = send.clone();
        tokio::task::spawn_blocking(move || {
            if made.exists() {
                return Ok(());
            }
            let mut stored = io::BufReader::new(File::open(&path).map_err(|e| e.to_string())?);
            let meta = read_meta(&mut stored)?;
            let mut tmp = made.clone().into_os_string();
            tmp.push(".tmp");
            publish(&dir, Path::new(&tmp), &made, |f| {
                let mut w = io::BufWriter::new(f);
                write_meta(&mut w, &meta).map_err(|e| e.to_string())?;
                A::export(&mut stored, &mut w)?;
                w.flush().map_err(|e| e.to_string())
            })
        })
        .await
        .map_err(|e| snap_err(ErrorVerb::Read, e))?
        .map_err(|e| snap_err(ErrorVerb::Read, e))?;
        let file = tokio::fs::File::open(send).await.map_err(|e| snap_err(ErrorVerb::Read, e))?;
        Ok(Some(Snapshot { meta, snapshot: Box::new(file) }))
    }
}

fn write_meta(out: &mut impl Write, meta: &Meta) -> io::Result<()> {
    let body = meta_codec().serialize(meta).map_err(|e| io::Error::other(e.to_string()))?;
    out.write_all(MAGIC)?;
    out.write_all(&(body.len() as u32).to_le_bytes())?;
    out.write_all(&body)?;
    out.write_all(&crc32c::crc32c(&body).to_le_bytes())
}

fn read_meta(input: &mut impl Read) -> Result<Meta, String> {
    let mut head = [0u8; 8];
    input.read_exact(&mut head).map_err(|e| format!("snapshot header: {e}"))?;
    if &head[0..4] != MAGIC {
        return Err("not a snapshot (bad magic)".into());
    }
    let len = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as u64;
    if len > MAX_META {
        return Err(format!("snapshot meta of {len} bytes is over the {MAX_META}-byte cap"));
    }
    let mut body = vec![0u8; len as usize + 4];
    input.read_exact(&mut body).map_err(|e| format!("snapshot meta: {e}"))?;
    let (body, crc) = body.split_at(len as usize);
    if crc32c::crc32c(body).to_le_bytes() != crc {
        return Err("snapshot meta checksum mismatch".into());
    }
    meta_codec().deserialize(body).map_err(|e| format!("snapshot meta does not decode: {e}"))
}

/// Writes `tmp` whole with `fill`, syncs it, renames it to `path` and syncs the directory.
fn publish(
    dir: &Path,
    tmp: &Path,
    path: &Path,
    fill: impl FnOnce(&mut File) -> Result<(), String>,
) -> Result<(), String> {
    let mut f = OpenOptions::new().write(true).create(true).truncate(true).open(tmp).map_err(|e| e.to_string())?;
    fill(&mut f)?;
    f.sync_data().map_err(|e| e.to_string())?;
    fs::rename(tmp, path).map_err(|e| e.to_string())?;
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| e.to_string())
}

fn snap_name(meta: &Meta) -> String {
    let (term, index) = meta.last_log_id.map_or((0, 0), |l| (l.leader_id.term, l.index + 1));
    format!("snap-{term:020}-{index:020}")
}

impl<A: Applier> Inner<A> {
    /// Builds a snapshot of what the applier can write, or keeps the current one when it has
    /// nothing newer; `Ok(None)` only when there is neither.
    fn build(&mut self) -> Result<Option<Meta>, String> {
        let since = self.current.as_ref().map(|(m, _)| m.last_log_id.map(|l| l.index));
        let applied = self.applied.map(|a| a.index);
        let body = self.dir.join("body.tmp");
        let covered = {
            let f = File::create(&body).map_err(|e| e.to_string())?;
            let mut w = io::BufWriter::new(f);
            let covered = self.applier.snapshot(applied, since.flatten(), &mut w)?;
            w.flush().map_err(|e| e.to_string())?;
            covered
        };
        let covered = match covered {
            Snapshotted::Upto(c) if since.is_none_or(|s| c > s) => c,
            _ => {
                let _ = fs::remove_file(&body);
                return Ok(self.current.as_ref().map(|c| c.0.clone()));
            }
        };
        if covered > applied {
            return Err(format!("the state's snapshot covers {covered:?}, past the last entry applied ({applied:?})"));
        }
        let (last_log_id, last_membership) = match covered {
            None => (None, self.membership_at_start()),
            Some(c) => (
                Some(self.log_id_at(c).ok_or_else(|| format!("no term is known for entry {c}"))?),
                self.membership_at(c),
            ),
        };
        let meta = Meta { last_log_id, last_membership, snapshot_id: String::new() };
        let name = snap_name(&meta);
        let meta = Meta { snapshot_id: name.clone(), ..meta };
        let (path, tmp) = (self.dir.join(&name), self.dir.join(format!("{name}.tmp")));
        publish(&self.dir, &tmp, &path, |f| {
            let mut w = io::BufWriter::new(f);
            write_meta(&mut w, &meta).map_err(|e| e.to_string())?;
            io::copy(&mut File::open(&body).map_err(|e| e.to_string())?, &mut w).map_err(|e| e.to_string())?;
            w.flush().map_err(|e| e.to_string())
        })?;
        let _ = fs::remove_file(&body);
        self.replace_current(meta.clone(), path);
        Ok(Some(meta))
    }

    /// The log id of applied entry `index`: its leader's run is the last one begun at or
    /// before it.
    fn log_id_at(&self, index: u64) -> Option<LogId> {
        let run = self.terms.iter().rev().find(|t| t.index <= index)?;
        Some(LogId::new(run.leader_id, index))
    }

    fn membership_at_start(&self) -> StoredMembership {
        self.memberships.first().filter(|m| m.log_id().is_none()).cloned().unwrap_or_default()
    }

    fn membership_at(&self, index: u64) -> StoredMembership {
        let at = |m: &&StoredMembership| m.log_id().is_none_or(|l| l.index <= index);
        self.memberships.iter().rev().find(at).cloned().unwrap_or_default()
    }

    /// The newest snapshot becomes current; older ones go (best effort: they cost only disk),
    /// and so does the history before it.
    fn replace_current(&mut self, meta: Meta, path: PathBuf) {
        let at = meta.last_log_id.map_or(0, |l| l.index);
        if let Some(keep) = self.terms.iter().rposition(|t| t.index <= at) {
            self.terms.drain(..keep);
        }
        if let Some(keep) = self.memberships.iter().rposition(|m| m.log_id().is_none_or(|l| l.index <= at)) {
            self.memberships.drain(..keep);
        }
        if let Some((_, old)) = self.current.replace((meta, path.clone())) {
            if old != path {
                let _ = fs::remove_file(&old);
                let _ = fs::remove_file(send_path(&old));
            }
        }
    }

    /// After an install the state is the snapshot's: its history starts there.
    fn reset_history(&mut self, meta: &Meta) {
        self.terms = meta.last_log_id.into_iter().collect();
        self.memberships = vec![meta.last_membership.clone()];
    }
}

fn send_path(snapshot: &Path) -> PathBuf {
    let mut name = snapshot.as_os_str().to_owned();
    name.push(SEND);
    PathBuf::from(name)
}

impl<A: Applier> RaftSnapshotBuilder<TypeConfig> for Machine<A> {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let inner = Arc::clone(&self.inner);
        let (meta, path) = tokio::task::spawn_blocking(move || {
            let mut i = inner.lock();
            match i.build()? {
                Some(meta) => Ok((meta, i.current.as_ref().expect("just built").1.clone())),
                None => Err("the state has nothing to snapshot yet".to_string()),
            }
        })
        .await
        .map_err(|e| snap_err(ErrorVerb::Write, e))?
        .map_err(|e| snap_err(ErrorVerb::Write, e))?;
        // What openraft keeps of a snapshot it built is its meta: the stored file, not a copy
        // to send (which for a member would be every partition file, D43).
        let file = tokio::fs::File::open(path).await.map_err(|e| snap_err(ErrorVerb::Read, e))?;
        Ok(Snapshot { meta, snapshot: Box::new(file) })
    }
}

impl<A: Applier> RaftStateMachine<TypeConfig> for Machine<A> {
    type SnapshotBuilder = Self;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        let i = self.inner.lock();
        Ok((i.applied, i.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<()>, StorageError>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        if let (Some(log), Some(last)) = (self.log.get(), entries.last()) {
            log.durable_through(last.log_id.index)
                .await
                .map_err(|e| io_error(ErrorSubject::Apply(last.log_id), ErrorVerb::Write, e))?;
        }
        let mut i = self.inner.lock();
        let mut out = Vec::new();
        for e in entries {
            if i.applied.is_some_and(|a| a.index >= e.log_id.index) {
                return Err(io_error(
                    ErrorSubject::Apply(e.log_id),
                    ErrorVerb::Write,
                    format!("entry {} is at or below the last applied one", e.log_id),
                ));
            }
            if i.terms.last().is_none_or(|t| t.leader_id != e.log_id.leader_id) {
                i.terms.push(e.log_id);
            }
            match &e.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(frame) => i
                    .applier
                    .apply(e.log_id.index, frame)
                    .map_err(|err| io_error(ErrorSubject::Apply(e.log_id), ErrorVerb::Write, err))?,
                EntryPayload::Membership(m) => {
                    i.membership = StoredMembership::new(Some(e.log_id), m.clone());
                    let m = i.membership.clone();
                    i.memberships.push(m);
                }
            }
            i.applied = Some(e.log_id);
            out.push(());
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> Self {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<tokio::fs::File>, StorageError> {
        let path = {
            let mut i = self.inner.lock();
            i.received += 1;
            i.dir.join(format!("recv-{}.tmp", i.received))
        };
        let f = tokio::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .await
            .map_err(|e| snap_err(ErrorVerb::Write, e))?;
        Ok(Box::new(f))
    }

    async fn install_snapshot(&mut self, meta: &Meta, snapshot: Box<tokio::fs::File>) -> Result<(), StorageError> {
        let mut src = snapshot.into_std().await;
        let inner = Arc::clone(&self.inner);
        let meta = meta.clone();
        tokio::task::spawn_blocking(move || {
            let mut i = inner.lock();
            src.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
            let got = read_meta(&mut src)?;
            if got.last_log_id != meta.last_log_id || got.last_membership != meta.last_membership {
                return Err(format!(
                    "received snapshot holds {:?}, not the {:?} it was sent as",
                    got.last_log_id, meta.last_log_id
                ));
            }
            let name = snap_name(&meta);
            let (path, tmp) = (i.dir.join(&name), i.dir.join(format!("{name}.tmp")));
            let dir = i.dir.clone();
            src.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
            publish(&dir, &tmp, &path, |f| io::copy(&mut src, f).map(|_| ()).map_err(|e| e.to_string()))?;
            let mut f = io::BufReader::new(File::open(&path).map_err(|e| e.to_string())?);
            read_meta(&mut f)?;
            i.applier.restore(&mut f)?;
            i.applied = meta.last_log_id;
            i.membership = meta.last_membership.clone();
            i.reset_history(&meta);
            i.replace_current(Meta { snapshot_id: name, ..meta }, path);
            Ok(())
        })
        .await
        .map_err(|e| snap_err(ErrorVerb::Write, e))?
        .map_err(|e| snap_err(ErrorVerb::Write, e))?;
        // The stream it came in is spent: its temporary file goes.
        let dir = self.inner.lock().dir.clone();
        for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
            if entry.file_name().to_str().is_some_and(|n| n.starts_with("recv-")) {
                let _ = fs::remove_file(entry.path());
            }
        }
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        self.sendable().await
    }
}
