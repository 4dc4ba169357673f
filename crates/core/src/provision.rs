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
//!
//! Also owns `<data>/partitions/.spare-parts/`: whole partition directories made ahead of
//! need, each holding the three empty files of segment 0, closed (no descriptor is held).
//! A new partition takes one by [`Provisioner::take_dir`] and the planner renames it into
//! place: one rename, where making it there cost a `mkdir` and three creates, each an inode
//! allocation (0.1-3 ms on the development VM, D81). The pool grows with demand, doubling
//! each time a take finds it empty, up to its bound; it is kept across restarts (a directory
//! is adopted only if it holds exactly those three empty files, else deleted).

use crossbeam_channel::{Receiver, Sender, TrySendError};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Work short of at most this many spare directories makes them itself rather than wait:
/// a few tens of ms at most, about one push step (D80), so a workload that makes a
/// partition or two per transaction faster than the provisioner refills keeps its latency.
pub(crate) const DIRS_SLACK: usize = 16;

/// Longest work waits for spare directories (D81): a waiting transaction is then refused,
/// and a transaction's expiry goes ahead and makes its files on the planner.
pub(crate) const DIRS_WAIT_MAX: Duration = Duration::from_secs(10);

/// Files kept ready at most: a burst of a third this many new partitions (three files each,
/// D29) costs the planner nothing.
pub const POOL: usize = 128;

/// The pool for a node allowed `max_open_files` partition files: its spares, and the taken
/// ones held until placed, are open files too, so they stay a small part of the budget.
pub fn pool_for(max_open_files: usize) -> usize {
    (max_open_files / 16).clamp(6, POOL)
}

/// Where spare partition directories wait (a name no partition id can have).
pub const SPARE_PARTS: &str = ".spare-parts";

/// Whether a name under `partitions/` is the provisioner's (`.spare`, `.spare-parts`), not a
/// partition: recovery, `baton check data` and the snapshot tests all pass over these.
pub fn is_spare_name(name: &str) -> bool {
    name == ".spare" || name == SPARE_PARTS
}

/// Spare partition directories kept ready at most, by default (`--spare-partition-dirs`):
/// one HTTP or Kafka transaction may write to 1,000 partitions.
pub const DEFAULT_SPARE_DIRS: usize = 1024;

/// The most `--spare-partition-dirs` may ask for: the pool's queue is allocated whole at
/// start, so `u64::MAX` aborted the process before this bound.
pub const MAX_SPARE_DIRS: usize = 1_000_000;

/// Spare partition directories the pool starts by wanting (or what was adopted, if more).
const DIRS_FIRST: usize = 16;

/// The three files a spare partition directory holds: segment 0's, empty.
fn spare_dir_files(dir: &Path) -> [PathBuf; 3] {
    crate::files::Kind::ALL.map(|k| crate::files::file_path(dir, 0, 0, k))
}

enum Job {
    /// The directory pool fell below its target, or grew it: make more.
    Refill,
    /// A taken spare directory that could not be used: delete it.
    Discard(PathBuf),
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
    dirs: Receiver<PathBuf>,
    /// How many spare directories the thread keeps ready (grows with demand, D81).
    dir_target: Arc<std::sync::atomic::AtomicUsize>,
    dir_max: usize,
}

impl std::fmt::Debug for Provisioner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Provisioner({} ready)", self.ready.len())
    }
}

impl Provisioner {
    /// Start filling `<partitions>/.spare/` (emptied first: a crash may have left spares).
    pub fn start(partitions: &Path) -> io::Result<Arc<Provisioner>> {
        Self::start_with(partitions, POOL, DEFAULT_SPARE_DIRS)
    }

    /// As [`Provisioner::start`], keeping at most `pool` files and `max_dirs` spare partition
    /// directories ready (0: none, every partition's directory is made where it is needed).
    pub fn start_with(partitions: &Path, pool: usize, max_dirs: usize) -> io::Result<Arc<Provisioner>> {
        let spare_dir = partitions.join(".spare");
        match fs::remove_dir_all(&spare_dir) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        fs::create_dir_all(&spare_dir)?;
        let dirs_at = partitions.join(SPARE_PARTS);
        fs::create_dir_all(&dirs_at)?;
        let (jobs, job_rx) = crossbeam_channel::unbounded::<Job>();
        let (ready_tx, ready) = crossbeam_channel::bounded(pool.max(1));
        let (dirs_tx, dirs) = crossbeam_channel::bounded(max_dirs.max(1));
        let dir_target = Arc::new(std::sync::atomic::AtomicUsize::new(DIRS_FIRST.min(max_dirs)));
        let done = Arc::new(AtomicU64::new(0));
        let d = done.clone();
        let target = dir_target.clone();
        std::thread::Builder::new().name("baton-provision".into()).spawn(move || {
            baton_log::priority::lower_this_thread();
            let mut dirs = DirPool::adopt(dirs_at, dirs_tx, target, max_dirs);
            run(&spare_dir, &job_rx, &ready_tx, &d, &mut dirs)
        })?;
        Ok(Arc::new(Provisioner { jobs, ready, sent: AtomicU64::new(0), done, dirs, dir_target, dir_max: max_dirs }))
    }

    /// A spare partition directory holding segment 0's three empty files, if one is ready:
    /// the caller renames it to the partition's directory. An empty pool doubles its target
    /// (up to its bound), so a workload that makes partitions in bursts finds them ready next
    /// time.
    pub fn take_dir(&self) -> Option<PathBuf> {
        let got = self.dirs.try_recv().ok();
        if got.is_none() && self.dir_max > 0 {
            let t = self.dir_target.load(Ordering::Relaxed);
            self.dir_target.store(t.saturating_mul(2).clamp(1, self.dir_max), Ordering::Relaxed);
        }
        if self.dir_max > 0 {
            // The thread sleeps while both pools are full; this wakes it to refill.
            let _ = self.jobs.send(Job::Refill);
        }
        got
    }

    /// Spare partition directories ready now.
    pub fn dirs_ready(&self) -> usize {
        self.dirs.len()
    }

    /// Most spare partition directories the pool may hold (`--spare-partition-dirs`).
    pub fn dirs_max(&self) -> usize {
        self.dir_max
    }

    /// Grows the pool's target to at least `n` (within its bound) and wakes the thread: a
    /// transaction waits for that many (runner/txn_wait.rs).
    pub fn want_dirs(&self, n: usize) {
        self.dir_target.fetch_max(n.min(self.dir_max), Ordering::Relaxed);
        let _ = self.jobs.send(Job::Refill);
    }

    /// Whether work that would make `need` new partition directories should wait for the
    /// pool (D81): more are needed than are ready, by more than `slack`, and the pool may
    /// hold them all. When it should, the pool is asked for them.
    pub fn short_of(&self, need: usize, slack: usize) -> bool {
        if need <= self.dirs_ready().saturating_add(slack) || need > self.dir_max {
            return false;
        }
        self.want_dirs(need);
        true
    }

    /// A taken spare directory the caller could not use (its rename failed): deleted on this thread.
    pub fn discard_dir(&self, dir: PathBuf) {
        let _ = self.jobs.send(Job::Discard(dir));
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

/// The spare partition directories: what is ready, and how to make one more.
struct DirPool {
    at: PathBuf,
    tx: Sender<PathBuf>,
    target: Arc<std::sync::atomic::AtomicUsize>,
    /// Names are `<instance>-<n>`: a member's rebuild starts a new provisioner while the old
    /// thread may still be making one, and the two must never make the same name.
    instance: u128,
    made: u64,
    max: usize,
}

impl DirPool {
    /// Takes in what an earlier run left ready, if it is exactly three empty files of
    /// segment 0; deletes the rest (a crash while one was made).
    fn adopt(at: PathBuf, tx: Sender<PathBuf>, target: Arc<std::sync::atomic::AtomicUsize>, max: usize) -> DirPool {
        let instance = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let pool = DirPool { at, tx, target, instance, made: 0, max };
        let Ok(entries) = fs::read_dir(&pool.at) else { return pool };
        let mut adopted = 0;
        for ent in entries.flatten() {
            let dir = ent.path();
            let whole = fs::read_dir(&dir).map(|d| d.count() == 3).unwrap_or(false)
                && spare_dir_files(&dir).iter().all(|f| fs::metadata(f).is_ok_and(|m| m.is_file() && m.len() == 0));
            if whole && adopted < max && pool.tx.try_send(dir.clone()).is_ok() {
                adopted += 1;
            } else if let Err(e) = fs::remove_dir_all(&dir) {
                tracing::warn!(dir = %dir.display(), error = %e, "could not delete a spare partition directory");
            }
        }
        pool.target.fetch_max(adopted, Ordering::Relaxed);
        pool
    }

    fn wants(&self) -> bool {
        let n = self.tx.len();
        n < self.target.load(Ordering::Relaxed) && n < self.max
    }

    /// Makes one spare directory. An error (a full disk) is logged; the caller waits before
    /// the next try. `Ok(false)`: the provisioner is gone (a rebuild started another), so
    /// this thread must make no more in the directory the new one now owns.
    fn make_one(&mut self) -> io::Result<bool> {
        let dir = self.at.join(format!("{:x}-{}", self.instance, self.made));
        self.made += 1;
        fs::create_dir(&dir)?;
        for f in spare_dir_files(&dir) {
            if let Err(e) = OpenOptions::new().write(true).create_new(true).open(&f) {
                let _ = fs::remove_dir_all(&dir);
                return Err(e);
            }
        }
        match self.tx.try_send(dir.clone()) {
            Ok(()) => Ok(true),
            Err(e) => {
                let _ = fs::remove_dir_all(&dir);
                Ok(!e.is_disconnected())
            }
        }
    }
}

fn run(
    spare_dir: &Path,
    jobs: &Receiver<Job>,
    ready: &Sender<(PathBuf, Arc<File>)>,
    done: &AtomicU64,
    dirs: &mut DirPool,
) {
    let mut failed: Option<String> = None;
    let mut made = 0u64;
    loop {
        while let Ok(job) = jobs.try_recv() {
            do_job(job, &mut failed, done);
        }
        if ready.is_full() {
            if dirs.wants() {
                match dirs.make_one() {
                    Ok(true) => {}
                    Ok(false) => return,
                    Err(e) => {
                        tracing::warn!(dir = %dirs.at.display(), error = %e, "could not make a spare partition directory");
                        match jobs.recv_timeout(Duration::from_secs(1)) {
                            Ok(job) => do_job(job, &mut failed, done),
                            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
                        }
                    }
                }
                continue;
            }
            // Woken by the next job: every take is followed by a place, or a refill.
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
        Job::Refill => {}
        Job::Discard(dir) => {
            if let Err(e) = fs::remove_dir_all(&dir) {
                tracing::warn!(dir = %dir.display(), error = %e, "could not delete an unused spare partition directory");
            }
        }
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

    fn wait_dirs(p: &Provisioner, n: usize) {
        for _ in 0..1_000 {
            if p.dirs_ready() >= n {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the directory pool never reached {n}: {} ready", p.dirs_ready());
    }

    /// A spare directory holds segment 0's three empty files and becomes a partition's
    /// directory by one rename; a pool found empty grows, up to its bound (D81).
    #[test]
    fn a_spare_directory_is_a_first_segment_ready_to_rename() {
        let d = tempfile::tempdir().unwrap();
        let parts = d.path().join("partitions");
        let p = Provisioner::start_with(&parts, 6, 40).unwrap();
        wait_dirs(&p, DIRS_FIRST);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(p.dirs_ready(), DIRS_FIRST, "the pool starts small");
        let mut taken = Vec::new();
        while let Some(dir) = p.take_dir() {
            taken.push(dir);
        }
        assert_eq!(taken.len(), DIRS_FIRST);
        let target = parts.join("7");
        fs::rename(&taken[0], &target).unwrap();
        for f in spare_dir_files(&target) {
            assert_eq!(fs::metadata(&f).unwrap().len(), 0, "{}", f.display());
        }
        assert_eq!(fs::read_dir(&target).unwrap().count(), 3);
        // The take that found the pool empty doubled its target, never past the bound.
        wait_dirs(&p, 32);
        assert!(p.take_dir().is_some());
        while p.take_dir().is_some() {}
        wait_dirs(&p, 40);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(p.dirs_ready(), 40, "the bound holds");
    }

    /// A restart adopts the whole spare directories an earlier run left, and deletes the
    /// rest: one a crash left half made, and one whose file is not empty.
    #[test]
    fn a_restart_adopts_whole_spare_directories_and_deletes_the_rest() {
        let d = tempfile::tempdir().unwrap();
        let parts = d.path().join("partitions");
        let at = parts.join(SPARE_PARTS);
        fs::create_dir_all(&at).unwrap();
        for i in 0..20 {
            let dir = at.join(format!("old-{i}"));
            fs::create_dir(&dir).unwrap();
            for f in spare_dir_files(&dir) {
                fs::write(f, b"").unwrap();
            }
        }
        let half = at.join("half");
        fs::create_dir(&half).unwrap();
        fs::write(&spare_dir_files(&half)[0], b"").unwrap();
        let written = at.join("written");
        fs::create_dir(&written).unwrap();
        for f in spare_dir_files(&written) {
            fs::write(f, b"x").unwrap();
        }
        let p = Provisioner::start_with(&parts, 6, 1024).unwrap();
        wait_dirs(&p, 20);
        assert!(!half.exists() && !written.exists(), "broken spares are deleted");
        let mut adopted = 0;
        while let Some(dir) = p.take_dir() {
            adopted += usize::from(dir.file_name().unwrap().to_string_lossy().starts_with("old-"));
        }
        assert_eq!(adopted, 20, "every whole one is adopted");
        drop(p);
        // With no pool allowed, nothing is made and what is left is deleted.
        let p = Provisioner::start_with(&parts, 6, 0).unwrap();
        p.barrier().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(p.dirs_ready(), 0);
        assert!(p.take_dir().is_none());
        assert_eq!(fs::read_dir(&at).unwrap().count(), 0, "no spare directory is kept");
    }
}
