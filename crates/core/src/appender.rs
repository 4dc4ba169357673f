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
//!
//! A small frame's writes are made by the submitter itself when nothing earlier
//! is outstanding (D78): a few kilobytes into the page cache cost less than the
//! wake-up and hand-off of a thread, which at low rates was a tenth of Baton's
//! CPU per Kafka transaction. Files are still written in frame order, and the
//! failure stays sticky across both paths.
//!
//! Must never hold a descriptor per partition of a frame: a placed file is
//! named by its key and opened through the store's bounded set when its bytes
//! are written ([`WriteTarget::Stored`], D79), so a frame that writes to more
//! partitions than `--max-open-files` keeps no more files open than that.

use crate::files::{file_path, FileKey, Store};
use bytes::Bytes;
use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One batch to copy into its file at its reserved position.
#[derive(Debug, Clone)]
pub struct PendingWrite {
    pub file: WriteTarget,
    pub pos: u64,
    pub bytes: Bytes,
}

/// The file a pending write goes to.
#[derive(Debug, Clone)]
pub enum WriteTarget {
    /// A file only reachable by this handle: a segment's spare not yet placed under its
    /// name (D17; counted and bounded as pinned by the store).
    Open(Arc<File>),
    /// A file under its name, looked up (opened if the set let it go) when written, and
    /// let go right after (D79): a reserved place holds no descriptor while it waits.
    Stored { store: Arc<Store>, key: FileKey, dir: Arc<Path> },
}

impl WriteTarget {
    /// The file, opened through the store's set if it is not open there now.
    pub fn open(&self) -> std::io::Result<Arc<File>> {
        match self {
            WriteTarget::Open(f) => Ok(f.clone()),
            WriteTarget::Stored { store, key, dir } => {
                store.get_with(*key, || file_path(dir, key.base, key.gen, key.kind), false)
            }
        }
    }

    pub fn write_all_at(&self, bytes: &[u8], pos: u64) -> std::io::Result<()> {
        self.open()?.write_all_at(bytes, pos)
    }
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

/// A frame's writes of at most this many bytes are made by the submitter when
/// no earlier job is outstanding (D78); larger ones go to the thread, where
/// they overlap the WAL's write and fdatasync. Small on purpose: a page-cache
/// copy of a 27 kB batch cost the planner ~180 µs and could wait on the ext4
/// journal (D18); a one-record step is a few hundred bytes.
pub(crate) const INLINE_WRITE_BYTES: usize = 4 << 10;

/// Where a frame's writes stand once handed over.
pub(crate) enum Begun {
    /// Nothing to write and nothing earlier outstanding: the WAL alone completes the frame.
    Nothing,
    /// Already in their files (written by the submitter): the WAL alone completes the frame.
    Written,
    /// The frame completes when the WAL and this meet.
    Join(Arc<Join>),
}

impl Begun {
    /// The join the frame must meet, counting frames written by the submitter.
    pub(crate) fn join(self, inline_frames: &AtomicU64) -> Option<Arc<Join>> {
        match self {
            Begun::Nothing => None,
            Begun::Written => {
                inline_frames.fetch_add(1, Ordering::Relaxed);
                None
            }
            Begun::Join(j) => Some(j),
        }
    }
}

/// Handle to the appender thread; the thread ends when this is dropped.
pub(crate) struct Appender {
    jobs: Sender<Job>,
    /// Jobs submitted and not yet finished. Only the submitter adds, so a zero
    /// it reads stays true until it submits again.
    outstanding: Arc<AtomicU64>,
    /// The first write failure, on either path; every later frame fails with it.
    failed: Arc<Mutex<Option<String>>>,
}

impl Appender {
    pub(crate) fn start() -> std::io::Result<Appender> {
        let (jobs, rx) = crossbeam_channel::unbounded::<Job>();
        let outstanding = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(Mutex::new(None));
        let (left, sticky) = (outstanding.clone(), failed.clone());
        std::thread::Builder::new().name("baton-appender".into()).spawn(move || run(&rx, &left, &sticky))?;
        Ok(Appender { jobs, outstanding, failed })
    }

    /// Whether every job submitted so far has finished. Frames must complete in
    /// order (a pop may lease records planned in the frame before it, and a
    /// checkpoint trusts the durable index), so a frame with no writes of its own
    /// still joins the appender while an earlier job is unfinished.
    pub(crate) fn idle(&self) -> bool {
        self.outstanding.load(Ordering::Acquire) == 0
    }

    /// Hand over one frame's writes (possibly none), in frame order: written
    /// here when small and nothing earlier is outstanding, else queued.
    pub(crate) fn begin(&self, writes: Vec<PendingWrite>) -> Begun {
        if !self.idle() {
            let j = Join::new();
            self.submit(writes, j.clone());
            return Begun::Join(j);
        }
        if writes.is_empty() {
            return Begun::Nothing;
        }
        if writes.iter().map(|w| w.bytes.len()).sum::<usize>() > INLINE_WRITE_BYTES {
            let j = Join::new();
            self.submit(writes, j.clone());
            return Begun::Join(j);
        }
        match write_sticky(&writes, &self.failed) {
            Ok(()) => Begun::Written,
            Err(e) => {
                let j = Join::new();
                j.written(Err(e));
                Begun::Join(j)
            }
        }
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

fn run(rx: &Receiver<Job>, outstanding: &AtomicU64, failed: &Mutex<Option<String>>) {
    for job in rx {
        job.join.written(write_sticky(&job.writes, failed));
        outstanding.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Writes unless an earlier write failed; the first failure is kept for every later frame.
fn write_sticky(writes: &[PendingWrite], failed: &Mutex<Option<String>>) -> Result<(), String> {
    if let Some(e) = &*failed.lock() {
        return Err(e.clone());
    }
    write_all(writes).inspect_err(|e| *failed.lock() = Some(e.clone()))
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
        a.submit(
            vec![PendingWrite { file: WriteTarget::Open(f.clone()), pos: 0, bytes: Bytes::from_static(b"abc") }],
            j,
        );
        assert_eq!(rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap(), Ok(7));
        assert_eq!(std::fs::read(d.path().join("a")).unwrap(), b"abc", "written before the frame completed");
        // Appender first, then the WAL: completes on the WAL's side; a WAL error wins.
        let j = Join::new();
        a.submit(
            vec![PendingWrite { file: WriteTarget::Open(f), pos: 3, bytes: Bytes::from_static(b"de") }],
            j.clone(),
        );
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
        a.submit(
            vec![PendingWrite {
                file: WriteTarget::Open(file(d.path(), "f")),
                pos: 0,
                bytes: Bytes::from_static(b"x"),
            }],
            j.clone(),
        );
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

    fn wait_written(j: &Join) {
        for _ in 0..1000 {
            if matches!(*j.0.lock(), Half::Written(_)) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        panic!("the appender never wrote its job");
    }

    #[test]
    fn a_small_frame_is_written_before_begin_returns_and_a_large_one_by_the_thread() {
        let d = tempfile::tempdir().unwrap();
        let f = file(d.path(), "p");
        let a = Appender::start().unwrap();
        assert!(matches!(a.begin(Vec::new()), Begun::Nothing));
        let small = PendingWrite { file: WriteTarget::Open(f.clone()), pos: 0, bytes: Bytes::from_static(b"small") };
        assert!(matches!(a.begin(vec![small]), Begun::Written), "a small frame with nothing outstanding");
        assert_eq!(std::fs::read(d.path().join("p")).unwrap(), b"small", "in the file when begin returns");
        let big = Bytes::from(vec![7u8; INLINE_WRITE_BYTES + 1]);
        let Begun::Join(j) = a.begin(vec![PendingWrite { file: WriteTarget::Open(f), pos: 5, bytes: big }]) else {
            panic!("a frame past INLINE_WRITE_BYTES goes to the thread");
        };
        wait_written(&j);
        assert_eq!(std::fs::read(d.path().join("p")).unwrap().len(), 5 + INLINE_WRITE_BYTES + 1);
        let counted = AtomicU64::new(0);
        assert!(Begun::Written.join(&counted).is_none());
        assert!(Begun::Nothing.join(&counted).is_none());
        assert_eq!(counted.load(Ordering::Relaxed), 1, "only frames written by the submitter are counted");
    }

    #[test]
    fn a_failure_on_either_path_fails_every_later_frame_on_both() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("ro"), b"").unwrap();
        let ro = Arc::new(File::open(d.path().join("ro")).unwrap());
        let ok = file(d.path(), "ok");
        let (tx, rx) = mpsc::channel();
        let failed_with = |b: Begun, idx: u64| -> String {
            let Begun::Join(j) = b else { panic!("a failed frame must be joined, never reported written") };
            j.wal_done(Box::new(Probe(tx.clone())), Ok(idx));
            rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap().unwrap_err()
        };
        // Inline failure first, then a large frame on the thread and a small one inline.
        let a = Appender::start().unwrap();
        let small = |f: &Arc<File>| {
            vec![PendingWrite { file: WriteTarget::Open(f.clone()), pos: 0, bytes: Bytes::from_static(b"x") }]
        };
        let large = |f: &Arc<File>| {
            vec![PendingWrite {
                file: WriteTarget::Open(f.clone()),
                pos: 0,
                bytes: Bytes::from(vec![1u8; INLINE_WRITE_BYTES * 2]),
            }]
        };
        let first = failed_with(a.begin(small(&ro)), 1);
        assert!(first.starts_with("partition file write failed: "), "{first}");
        assert_eq!(failed_with(a.begin(large(&ok)), 2), first, "the thread keeps the inline failure");
        assert_eq!(failed_with(a.begin(small(&ok)), 3), first);
        // Thread failure first, then a small frame that would be written inline.
        let b = Appender::start().unwrap();
        let first = failed_with(b.begin(large(&ro)), 1);
        assert_eq!(failed_with(b.begin(small(&ok)), 2), first, "the inline path keeps the thread's failure");
        assert_eq!(std::fs::read(d.path().join("ok")).unwrap(), b"", "nothing written after the first failure");
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
            a.submit(
                vec![PendingWrite { file: WriteTarget::Open(f), pos: 0, bytes: Bytes::from_static(b"x") }],
                j.clone(),
            );
            j.wal_done(Box::new(Probe(tx.clone())), Ok(idx));
        }
        for _ in 0..2 {
            let e = rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap().unwrap_err();
            assert!(e.starts_with("partition file write failed: "), "{e}");
        }
        assert_eq!(std::fs::read(d.path().join("ok")).unwrap(), b"", "nothing written after the first failure");
    }
}
