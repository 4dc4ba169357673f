//! The spare segment: the next WAL segment, zero-filled ahead of time on its own thread, so
//! rotating to a preallocated segment (D16) never stalls a group commit behind writing a
//! segment's worth of zeros. The same thread keeps segments a checkpoint retired as a pool
//! for the next spares (D20): a retired segment is renamed, not deleted, and zero-filled
//! again when its turn comes. Deleting a 64 MiB file frees (and, on a disk mounted with
//! `discard`, trims) its extents in the next journal commit, and a WAL fdatasync waiting on
//! the disk behind that took 10–130 ms here; overwriting an allocated file changes no
//! metadata at all.
//!
//! Owns only the files `wal.spare` and `wal.recycled.<n>` in the WAL directory, and the
//! segments the writer hands to [`Spare::retire`] (already dropped from its list, oldest
//! first). Must never touch any other named segment: [`Spare::install`] renames the finished
//! spare into place on the writer thread, and only then may the next one be prepared under
//! the same name.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::thread::{self, JoinHandle};

use crossbeam_channel::{Receiver, Sender};

use crate::segment;

/// Not `wal-…`: segment listing must never mistake a half-written spare for log.
pub(crate) const SPARE_NAME: &str = "wal.spare";
/// Retired segments waiting to be a spare again (also never a segment name).
pub(crate) const RECYCLED_PREFIX: &str = "wal.recycled.";

enum State {
    Idle,
    Preparing,
    Ready,
}

enum Job {
    Prepare,
    Retire(Vec<PathBuf>),
}

pub(crate) struct Spare {
    dir: PathBuf,
    path: PathBuf,
    /// `None` only while dropping, to end the thread before joining it.
    jobs: Option<Sender<Job>>,
    done: Receiver<io::Result<()>>,
    state: State,
    thread: Option<JoinHandle<()>>,
}

impl Spare {
    /// Starts the preparing thread; nothing is written until [`Self::prepare`]. Retired
    /// segments a previous run left in the pool are kept (their bytes are rewritten before
    /// use); at most `keep` are ever held.
    pub(crate) fn start(dir: &Path, bytes: u64, keep: usize) -> io::Result<Spare> {
        let path = dir.join(SPARE_NAME);
        // A spare left by a crash may be half written; it is rebuilt when next needed.
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let mut pool = Pool::load(dir, keep)?;
        let (jobs, todo) = crossbeam_channel::unbounded::<Job>();
        let (finished, done) = crossbeam_channel::bounded(1);
        let p = path.clone();
        let thread = thread::Builder::new().name("baton-wal-spare".into()).spawn(move || {
            crate::priority::lower_this_thread();
            // Ends when the writer drops its sender; retirements queued before that are done.
            for job in todo.iter() {
                match job {
                    Job::Prepare => {
                        if finished.send(fill(&p, pool.files.pop(), bytes)).is_err() {
                            break;
                        }
                    }
                    Job::Retire(segments) => segments.iter().for_each(|s| pool.retire(s)),
                }
            }
        })?;
        Ok(Spare { dir: dir.to_path_buf(), path, jobs: Some(jobs), done, state: State::Idle, thread: Some(thread) })
    }

    /// Hands segments the writer no longer lists (oldest first) to the pool, off the
    /// writer thread: kept for reuse up to the pool's size, deleted past it.
    pub(crate) fn retire(&mut self, segments: Vec<PathBuf>) {
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(Job::Retire(segments));
        }
    }

    /// Starts zero-filling the next spare unless one is ready or under way.
    pub(crate) fn prepare(&mut self) {
        if matches!(self.state, State::Idle) && self.jobs.as_ref().is_some_and(|j| j.send(Job::Prepare).is_ok()) {
            self.state = State::Preparing;
        }
    }

    /// The spare renamed to `target` (directory synced) and opened for writing, if one is
    /// finished; `None` if not (the caller creates a plain segment). A spare whose
    /// preparation failed is logged and forgotten, to be tried again at the next rotation.
    pub(crate) fn install(&mut self, target: &Path) -> Option<io::Result<File>> {
        if matches!(self.state, State::Preparing) {
            match self.done.try_recv() {
                Ok(Ok(())) => self.state = State::Ready,
                Ok(Err(e)) => {
                    tracing::warn!(file = %self.path.display(), error = %e, "could not prepare the next wal segment; using a plain one");
                    self.state = State::Idle;
                }
                Err(_) => {}
            }
        }
        if !matches!(self.state, State::Ready) {
            return None;
        }
        // Opened before it is renamed, so nothing after the rename needs a new descriptor
        // but the directory's sync; if that fails the file goes back to being the spare and
        // no segment claims the next index (a later start would find it).
        let file = match OpenOptions::new().write(true).open(&self.path) {
            Ok(f) => f,
            Err(e) => {
                self.state = State::Ready;
                return Some(Err(e));
            }
        };
        if let Err(e) = std::fs::rename(&self.path, target) {
            self.state = State::Ready;
            return Some(Err(e));
        }
        self.state = State::Idle;
        if let Err(e) = segment::sync_dir(&self.dir) {
            if std::fs::rename(target, &self.path).is_ok() {
                self.state = State::Ready;
            }
            return Some(Err(e));
        }
        Some(Ok(file))
    }
}

impl Drop for Spare {
    /// Waits for the thread, so no retirement or zero-fill outlives the writer.
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The spare, zero-filled to `bytes` from a retired segment when there is one (renamed to
/// the spare's name first), else from a new file. Either way it ends exactly `bytes` zeros.
fn fill(spare: &Path, recycled: Option<PathBuf>, bytes: u64) -> io::Result<()> {
    if let Some(r) = recycled {
        if let Err(e) = std::fs::rename(&r, spare) {
            tracing::warn!(file = %r.display(), error = %e, "could not reuse a retired wal segment; making a new one");
        }
    }
    let f = OpenOptions::new().create(true).write(true).truncate(false).open(spare)?;
    // A plain segment may have overshot the size by one batch.
    f.set_len(bytes)?;
    segment::zero_fill(&f, 0, bytes)
}

/// Retired segments kept for reuse, owned by the spare thread.
struct Pool {
    dir: PathBuf,
    files: Vec<PathBuf>,
    keep: usize,
    next: u64,
}

impl Pool {
    fn load(dir: &Path, keep: usize) -> io::Result<Pool> {
        let mut files = Vec::new();
        let mut next = 0;
        for ent in std::fs::read_dir(dir)? {
            let ent = ent?;
            let name = ent.file_name();
            if let Some(n) =
                name.to_str().and_then(|n| n.strip_prefix(RECYCLED_PREFIX)).and_then(|n| n.parse::<u64>().ok())
            {
                next = next.max(n + 1);
                files.push(ent.path());
            }
        }
        let mut pool = Pool { dir: dir.to_path_buf(), files: Vec::new(), keep, next };
        for f in files {
            pool.keep_or_delete(f);
        }
        Ok(pool)
    }

    fn retire(&mut self, segment: &Path) {
        if self.files.len() >= self.keep {
            remove(segment);
            return;
        }
        let to = self.dir.join(format!("{RECYCLED_PREFIX}{}", self.next));
        self.next += 1;
        match std::fs::rename(segment, &to) {
            Ok(()) => self.files.push(to),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(file = %segment.display(), error = %e, "could not keep a retired wal segment; deleting it");
                remove(segment);
            }
        }
    }

    fn keep_or_delete(&mut self, f: PathBuf) {
        if self.files.len() < self.keep {
            self.files.push(f);
        } else {
            remove(&f);
        }
    }
}

/// Failure to delete costs only disk space; it is logged, never latched.
fn remove(f: &Path) {
    match std::fs::remove_file(f) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            tracing::warn!(file = %f.display(), error = %e, "could not delete an old wal segment");
        }
        _ => {}
    }
}
