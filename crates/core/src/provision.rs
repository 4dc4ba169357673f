//! Partition segment files made ahead of need, so creating a partition or
//! rotating a segment never puts directory work on the planner (D17).
//!
//! Owns `<data>/partitions/.spare/` and the thread that fills it: empty files,
//! created and opened in advance, handed to the planner by [`Provisioner::take`]
//! (no system call). The planner writes to a taken file at once (the handle
//! does not care about the name) and asks [`Provisioner::place`] to give it its
//! real name, `<part>/<base>.seg`, on this thread. A checkpoint calls
//! [`Provisioner::barrier`] before it syncs directories and records lengths, so
//! every file it names is under that name; recovery deletes `.spare/` (not a
//! partition id) and replay rebuilds partitions newer than the checkpoint.
//! Must never block the planner: when the pool is empty `take` says so and the
//! caller creates the file itself, as it did before.

use crossbeam_channel::{Receiver, Sender, TrySendError};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Files kept ready at most: a burst of a third this many new partitions (three files each,
/// D29) costs the planner nothing.
pub const POOL: usize = 128;

/// The pool for a node allowed `max_open_files` partition files: its spares, and the taken
/// ones held until placed, are open files too, so they stay a small part of the budget.
pub fn pool_for(max_open_files: usize) -> usize {
    (max_open_files / 16).clamp(6, POOL)
}

enum Job {
    /// Rename a taken spare to its segment name, creating the partition directory first.
    Place { spare: PathBuf, dir: PathBuf, target: PathBuf },
    /// Answer once every job sent before it is done, with the first placement error since the last barrier.
    Barrier(std::sync::mpsc::Sender<Result<(), String>>),
}

pub struct Provisioner {
    jobs: Sender<Job>,
    ready: Receiver<(PathBuf, Arc<File>)>,
    /// Placements asked for, and done (renamed or failed), in order: a segment keeps
    /// its taken files open until `done` reaches its ticket (D29).
    sent: AtomicU64,
    done: Arc<AtomicU64>,
}

impl std::fmt::Debug for Provisioner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Provisioner({} ready)", self.ready.len())
    }
}

impl Provisioner {
    /// Start filling `<partitions>/.spare/` (emptied first: a crash may have left spares).
    pub fn start(partitions: &Path) -> io::Result<Arc<Provisioner>> {
        Self::start_with(partitions, POOL)
    }

    /// As [`Provisioner::start`], keeping at most `pool` files ready.
    pub fn start_with(partitions: &Path, pool: usize) -> io::Result<Arc<Provisioner>> {
        let spare_dir = partitions.join(".spare");
        match fs::remove_dir_all(&spare_dir) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        fs::create_dir_all(&spare_dir)?;
        let (jobs, job_rx) = crossbeam_channel::unbounded::<Job>();
        let (ready_tx, ready) = crossbeam_channel::bounded(pool.max(1));
        let done = Arc::new(AtomicU64::new(0));
        let d = done.clone();
        std::thread::Builder::new().name("baton-provision".into()).spawn(move || {
            baton_log::priority::lower_this_thread();
            run(&spare_dir, &job_rx, &ready_tx, &d)
        })?;
        Ok(Arc::new(Provisioner { jobs, ready, sent: AtomicU64::new(0), done }))
    }

    /// A fresh empty file and its spare path, if one is ready.
    pub fn take(&self) -> Option<(PathBuf, Arc<File>)> {
        self.ready.try_recv().ok()
    }

    /// Give a taken spare its name `target` in `dir` (created if missing), in the background.
    /// Returns its ticket: the file is under its name once [`Provisioner::placed`] reaches it.
    pub fn place(&self, spare: PathBuf, dir: PathBuf, target: PathBuf) -> u64 {
        let ticket = self.sent.fetch_add(1, Ordering::Relaxed) + 1;
        // The thread only ends when every sender is gone; this one is not.
        let _ = self.jobs.send(Job::Place { spare, dir, target });
        ticket
    }

    /// Placements done so far, in order; it stops at the first one that failed.
    pub fn placed(&self) -> u64 {
        self.done.load(Ordering::Acquire)
    }

    /// Wait until every placement asked for so far is done (bounded: 60 s). An error names
    /// the first placement that failed since the last barrier; the files it concerns are not
    /// where a checkpoint would say they are, so the checkpoint must not be written.
    pub fn barrier(&self) -> Result<(), String> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.jobs.send(Job::Barrier(tx)).map_err(|_| "the provisioning thread is gone".to_string())?;
        rx.recv_timeout(Duration::from_secs(60))
            .map_err(|_| "placing new partition files took over 60 s".to_string())?
    }
}

fn run(spare_dir: &Path, jobs: &Receiver<Job>, ready: &Sender<(PathBuf, Arc<File>)>, done: &AtomicU64) {
    let mut failed: Option<String> = None;
    let mut made = 0u64;
    loop {
        while let Ok(job) = jobs.try_recv() {
            do_job(job, &mut failed, done);
        }
        if ready.is_full() {
            // Woken by the next job: every take is followed by a place.
            match jobs.recv() {
                Ok(job) => do_job(job, &mut failed, done),
                Err(_) => return,
            }
            continue;
        }
        let path = spare_dir.join(made.to_string());
        made += 1;
        match OpenOptions::new().read(true).write(true).create_new(true).open(&path) {
            Ok(f) => match ready.try_send((path, Arc::new(f))) {
                Ok(()) | Err(TrySendError::Full(_)) => {}
                Err(TrySendError::Disconnected(_)) => return,
            },
            Err(e) => {
                // A full disk, say: the planner creates files itself meanwhile; try again later.
                tracing::warn!(dir = %spare_dir.display(), error = %e, "could not make a spare partition file");
                match jobs.recv_timeout(Duration::from_secs(1)) {
                    Ok(job) => do_job(job, &mut failed, done),
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                    Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
                }
            }
        }
    }
}

fn do_job(job: Job, failed: &mut Option<String>, done: &AtomicU64) {
    match job {
        Job::Place { spare, dir, target } => {
            if let Err(e) = fs::create_dir_all(&dir).and_then(|_| fs::rename(&spare, &target)) {
                let msg = format!("place {} as {}: {e}", spare.display(), target.display());
                tracing::error!("{msg}");
                failed.get_or_insert(msg);
                // Not counted: the file is only reachable by its handle, so every segment from
                // here on keeps its handles (the barrier fails checkpoints until a restart).
                return;
            }
            done.fetch_add(1, Ordering::Release);
        }
        Job::Barrier(done) => {
            let _ = done.send(failed.take().map_or(Ok(()), Err));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    fn wait_full(p: &Provisioner) {
        for _ in 0..500 {
            if p.ready.len() == POOL {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the pool never filled: {} ready", p.ready.len());
    }

    #[test]
    fn a_taken_file_is_written_at_once_and_named_by_the_barrier() {
        let d = tempfile::tempdir().unwrap();
        let parts = d.path().join("partitions");
        fs::create_dir_all(parts.join(".spare")).unwrap();
        fs::write(parts.join(".spare/stale"), b"left by a crash").unwrap();
        let p = Provisioner::start(&parts).unwrap();
        wait_full(&p);
        assert!(!parts.join(".spare/stale").exists(), "old spares are cleared at start");
        let (spare, f) = p.take().unwrap();
        f.write_all_at(b"batch", 0).unwrap();
        let target = parts.join("7").join("00000000000000000000.seg");
        p.place(spare.clone(), parts.join("7"), target.clone());
        p.barrier().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"batch", "the bytes written before the rename are under the new name");
        assert!(!spare.exists());
        f.write_all_at(b"more", 5).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"batchmore", "the handle still writes the named file");
    }

    #[test]
    fn a_failed_placement_fails_the_next_barrier_only() {
        let d = tempfile::tempdir().unwrap();
        let parts = d.path().join("partitions");
        let p = Provisioner::start(&parts).unwrap();
        wait_full(&p);
        let taken: Vec<_> = std::iter::from_fn(|| p.take()).take(POOL).collect();
        assert_eq!(taken.len(), POOL, "every ready file can be taken");
        // The target's parent is a plain file: the rename cannot happen.
        fs::write(parts.join("blocker"), b"").unwrap();
        let (spare, _) = &taken[0];
        p.place(spare.clone(), parts.join("blocker"), parts.join("blocker/x.seg"));
        let e = p.barrier().unwrap_err();
        assert!(e.contains("blocker"), "{e}");
        assert!(p.barrier().is_ok(), "the error is reported once");
    }
}
