//! The appender thread: copies planned record batches into partition files,
//! beside the WAL's write and fdatasync of the same frame (D18).
//!
//! Owns the writes of message bytes to partition segment files while the
//! engine runs (recovery replays them on the recovering thread). The planner
//! reserves each batch's place ([`crate::store::PartitionFiles::reserve`]) and
//! hands the frame's writes here as one job; the WAL gets the frame. A frame
//! completes (answers, durable marks, I3) only when both are done, whichever
//! is last ([`Join`]), so no reader is ever given a span whose bytes are not
//! in its file yet. Must never answer a frame whose bytes it could not write:
//! the first failure is sticky, fails that frame and every later one, and
//! latches the engine (the WAL holds the entries; recovery rewrites the files).

use bytes::Bytes;
use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One batch to copy into its file at its reserved position.
#[derive(Debug, Clone)]
pub struct PendingWrite {
    pub file: Arc<File>,
    pub pos: u64,
    pub bytes: Bytes,
}

/// Something that completes when both halves of a frame are done.
pub(crate) trait Joined: Send {
    /// `Ok` with the WAL's index when the entry is durable and its bytes are written.
    fn finish(self: Box<Self>, result: Result<u64, String>);
}

enum Half {
    Neither,
    /// The WAL finished first: its result and the frame, waiting for the bytes.
    Wal(Box<dyn Joined>, Result<u64, String>),
    /// The appender finished first.
    Written(Result<(), String>),
    Done,
}

/// Meeting point of a frame's WAL completion and its appender job.
pub(crate) struct Join(Mutex<Half>);

impl Join {
    pub(crate) fn new() -> Arc<Join> {
        Arc::new(Join(Mutex::new(Half::Neither)))
    }

    /// The WAL's side: completes the frame now if its bytes are written, else leaves it.
    pub(crate) fn wal_done(&self, frame: Box<dyn Joined>, result: Result<u64, String>) {
        let mut h = self.0.lock();
        match std::mem::replace(&mut *h, Half::Done) {
            Half::Neither => *h = Half::Wal(frame, result),
            Half::Written(w) => {
                drop(h);
                frame.finish(combine(result, w));
            }
            Half::Wal(..) | Half::Done => unreachable!("a frame's WAL completion comes once"),
        }
    }

    fn written(&self, w: Result<(), String>) {
        let mut h = self.0.lock();
        match std::mem::replace(&mut *h, Half::Done) {
            Half::Neither => *h = Half::Written(w),
            Half::Wal(frame, result) => {
                drop(h);
                frame.finish(combine(result, w));
            }
            Half::Written(_) | Half::Done => unreachable!("a frame's appender job completes once"),
        }
    }
}

fn combine(wal: Result<u64, String>, written: Result<(), String>) -> Result<u64, String> {
    let idx = wal?;
    written.map(|()| idx).map_err(|e| format!("partition file write failed: {e}"))
}

struct Job {
    writes: Vec<PendingWrite>,
    join: Arc<Join>,
}

/// Handle to the appender thread; the thread ends when this is dropped.
pub(crate) struct Appender {
    jobs: Sender<Job>,
    /// Jobs submitted and not yet finished. Only the submitter adds, so a zero
    /// it reads stays true until it submits again.
    outstanding: Arc<AtomicU64>,
}

impl Appender {
    pub(crate) fn start() -> std::io::Result<Appender> {
        let (jobs, rx) = crossbeam_channel::unbounded::<Job>();
        let outstanding = Arc::new(AtomicU64::new(0));
        let left = outstanding.clone();
        std::thread::Builder::new().name("baton-appender".into()).spawn(move || run(&rx, &left))?;
        Ok(Appender { jobs, outstanding })
    }

    /// Whether every job submitted so far has finished. Frames must complete in
    /// order (a pop may lease records planned in the frame before it, and a
    /// checkpoint trusts the durable index), so a frame with no writes of its own
    /// still joins the appender while an earlier job is unfinished.
    pub(crate) fn idle(&self) -> bool {
        self.outstanding.load(Ordering::Acquire) == 0
    }

    /// Queue one frame's writes (possibly none); `join` hears when they are in the files.
    pub(crate) fn submit(&self, writes: Vec<PendingWrite>, join: Arc<Join>) {
        self.outstanding.fetch_add(1, Ordering::AcqRel);
        if let Err(e) = self.jobs.send(Job { writes, join }) {
            self.outstanding.fetch_sub(1, Ordering::AcqRel);
            e.into_inner().join.written(Err("the appender thread is gone".into()));
        }
    }
}

fn run(rx: &Receiver<Job>, outstanding: &AtomicU64) {
    let mut failed: Option<String> = None;
    for job in rx {
        let result = match &failed {
            Some(e) => Err(e.clone()),
            None => write_all(&job.writes).inspect_err(|e| failed = Some(e.clone())),
        };
        job.join.written(result);
        outstanding.fetch_sub(1, Ordering::AcqRel);
    }
}

fn write_all(writes: &[PendingWrite]) -> Result<(), String> {
    for w in writes {
        w.file.write_all_at(&w.bytes, w.pos).map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    struct Probe(mpsc::Sender<Result<u64, String>>);

    impl Joined for Probe {
        fn finish(self: Box<Self>, result: Result<u64, String>) {
            self.0.send(result).unwrap();
        }
    }

    fn file(dir: &std::path::Path, name: &str) -> Arc<File> {
        Arc::new(
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .open(dir.join(name))
                .unwrap(),
        )
    }

    #[test]
    fn a_frame_completes_after_both_halves_in_either_order() {
        let d = tempfile::tempdir().unwrap();
        let f = file(d.path(), "a");
        let a = Appender::start().unwrap();
        let (tx, rx) = mpsc::channel();
        // WAL first: nothing completes until the bytes are written.
        let j = Join::new();
        j.wal_done(Box::new(Probe(tx.clone())), Ok(7));
        assert!(rx.try_recv().is_err());
        a.submit(vec![PendingWrite { file: f.clone(), pos: 0, bytes: Bytes::from_static(b"abc") }], j);
        assert_eq!(rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap(), Ok(7));
        assert_eq!(std::fs::read(d.path().join("a")).unwrap(), b"abc", "written before the frame completed");
        // Appender first, then the WAL: completes on the WAL's side; a WAL error wins.
        let j = Join::new();
        a.submit(vec![PendingWrite { file: f, pos: 3, bytes: Bytes::from_static(b"de") }], j.clone());
        for _ in 0..1000 {
            if matches!(*j.0.lock(), Half::Written(_)) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(rx.try_recv().is_err());
        j.wal_done(Box::new(Probe(tx)), Err("disk gone".into()));
        assert_eq!(rx.recv().unwrap(), Err("disk gone".into()));
        assert_eq!(std::fs::read(d.path().join("a")).unwrap(), b"abcde");
    }

    #[test]
    fn idle_only_once_every_submitted_job_has_finished() {
        let d = tempfile::tempdir().unwrap();
        let a = Appender::start().unwrap();
        assert!(a.idle());
        let (tx, rx) = mpsc::channel();
        let j = Join::new();
        a.submit(vec![PendingWrite { file: file(d.path(), "f"), pos: 0, bytes: Bytes::from_static(b"x") }], j.clone());
        j.wal_done(Box::new(Probe(tx)), Ok(1));
        rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap().unwrap();
        for _ in 0..1000 {
            if a.idle() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        panic!("the appender never became idle after its only job");
    }

    #[test]
    fn a_failed_write_fails_its_frame_and_every_later_one() {
        let d = tempfile::tempdir().unwrap();
        // Opened read-only: every write fails.
        std::fs::write(d.path().join("ro"), b"").unwrap();
        let ro = Arc::new(File::open(d.path().join("ro")).unwrap());
        let ok = file(d.path(), "ok");
        let a = Appender::start().unwrap();
        let (tx, rx) = mpsc::channel();
        for (f, idx) in [(ro, 1u64), (ok, 2)] {
            let j = Join::new();
            a.submit(vec![PendingWrite { file: f, pos: 0, bytes: Bytes::from_static(b"x") }], j.clone());
            j.wal_done(Box::new(Probe(tx.clone())), Ok(idx));
        }
        for _ in 0..2 {
            let e = rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap().unwrap_err();
            assert!(e.starts_with("partition file write failed: "), "{e}");
        }
        assert_eq!(std::fs::read(d.path().join("ok")).unwrap(), b"", "nothing written after the first failure");
    }
}
