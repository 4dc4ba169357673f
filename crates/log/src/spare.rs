//! The spare segment: the next WAL segment, zero-filled ahead of time on its own thread, so
//! rotating to a preallocated segment (D16) never stalls a group commit behind writing a
//! segment's worth of zeros.
//!
//! Owns only the file `wal.spare` in the WAL directory. Must never touch a named segment:
//! [`Spare::install`] renames the finished spare into place on the writer thread, and only
//! then may the next one be prepared under the same name.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::thread;

use crossbeam_channel::{Receiver, Sender};

use crate::segment;

/// Not `wal-…`: segment listing must never mistake a half-written spare for log.
pub(crate) const SPARE_NAME: &str = "wal.spare";

enum State {
    Idle,
    Preparing,
    Ready,
}

pub(crate) struct Spare {
    dir: PathBuf,
    path: PathBuf,
    request: Sender<()>,
    done: Receiver<io::Result<()>>,
    state: State,
}

impl Spare {
    /// Starts the preparing thread; nothing is written until [`Self::prepare`].
    pub(crate) fn start(dir: &Path, bytes: u64) -> io::Result<Spare> {
        let path = dir.join(SPARE_NAME);
        // A spare left by a crash may be half written; it is rebuilt when next needed.
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let (request, requests) = crossbeam_channel::bounded::<()>(1);
        let (finished, done) = crossbeam_channel::bounded(1);
        let p = path.clone();
        thread::Builder::new().name("baton-wal-spare".into()).spawn(move || {
            crate::priority::lower_this_thread();
            // Ends when the writer (holding `request`) is gone.
            while requests.recv().is_ok() {
                let made = OpenOptions::new()
                    .create(true)
                    .write(true)
                    .truncate(true)
                    .open(&p)
                    .and_then(|f| segment::zero_fill(&f, 0, bytes));
                if finished.send(made).is_err() {
                    break;
                }
            }
        })?;
        Ok(Spare { dir: dir.to_path_buf(), path, request, done, state: State::Idle })
    }

    /// Starts zero-filling the next spare unless one is ready or under way.
    pub(crate) fn prepare(&mut self) {
        if matches!(self.state, State::Idle) && self.request.try_send(()).is_ok() {
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
        self.state = State::Idle;
        Some((|| {
            std::fs::rename(&self.path, target)?;
            segment::sync_dir(&self.dir)?;
            OpenOptions::new().write(true).open(target)
        })())
    }
}
