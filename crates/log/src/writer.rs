//! The group-commit writer: one dedicated OS thread that turns every queued item into a frame in
//! one buffer and makes the whole batch durable with one write and one fdatasync. The active
//! segment and the batch sit behind one lock, which a submitter with nothing else to do may take
//! to write its own item while the thread is idle (D84).
//!
//! Enforces I3: no answer claims success before its entry is durable (fdatasync'd).
//! Must never: complete an item with `Ok` before the sync of its batch returned `Ok`; retry a
//! failed write or fsync (after a failed fsync the page cache no longer says what is on disk);
//! write anything after latching failure; delete the active segment; drop an item without
//! completing it; write an item under any index but the one `append` gave it (a frame it
//! cannot take latches, so no later frame takes that index: the `Log` contract).

use std::collections::VecDeque;
use std::fs::{self, File};
use std::os::unix::fs::FileExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::thread::{self, JoinHandle};
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};

use crate::frame;
use crate::segment::{self, SegmentFile};
use crate::spare::Spare;
use crate::stats::WalStats;
use crate::{WalConfig, WalError, WalItem};

/// Stop draining the queue once a batch holds this many encoded bytes: bounds the latency
/// the first item of a batch waits behind the others, and the size of one write.
const MAX_BATCH_BYTES: usize = 8 << 20;
const MAX_BATCH_ITEMS: usize = 50_000;
/// After an unusually large batch, give the memory back instead of keeping it forever.
const KEEP_BUF_CAPACITY: usize = 2 * MAX_BATCH_BYTES;

enum Msg {
    /// An item and the index [`WalWriter::append`] promised it.
    Item(Pending, u64),
    TruncateBefore(u64),
    /// Remove every entry from this index on (`WalWriter::truncate_from`), then answer.
    TruncateFrom(u64, Sender<Result<(), WalError>>),
    Shutdown,
}

/// An item that has not been answered yet. Dropping it answers `Closed`, so an item discarded
/// anywhere (a channel torn down during shutdown, a send racing shutdown, a panic unwinding
/// the writer) is still completed exactly once.
struct Pending(Option<Box<dyn WalItem>>);

impl Pending {
    fn complete(mut self, result: Result<u64, WalError>) {
        if let Some(item) = self.0.take() {
            deliver(item, result);
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(item) = self.0.take() {
            deliver(item, Err(WalError::Closed));
        }
    }
}

/// A panicking callback must not take the writer thread, and every later answer, with it.
fn deliver(item: Box<dyn WalItem>, result: Result<u64, WalError>) {
    if catch_unwind(AssertUnwindSafe(move || item.complete(result))).is_err() {
        tracing::error!("WalItem::complete panicked; continuing");
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The guarded data is a plain value that is always left consistent, so a panic elsewhere
    // while holding the lock is no reason to stop.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// State shared between the handle and the writer thread.
struct Shared {
    stats: Arc<WalStats>,
    /// Fast-path flag so `submit` does not take the reason lock while healthy.
    failed: AtomicBool,
    reason: Mutex<Option<String>>,
    closed: AtomicBool,
    /// Items sent to the writer thread and not yet taken into a batch by it. Changed only
    /// under the index lock (up) and the writer's lock (down), so a submitter holding both
    /// that reads 0 knows every earlier item is written and answered (D84).
    queued: AtomicU64,
    #[cfg(test)]
    fail_next_sync: AtomicBool,
    /// Rotations a test makes fail before they touch anything.
    fail_rotations: std::sync::atomic::AtomicU64,
}

impl Shared {
    fn failure(&self) -> Option<String> {
        if !self.failed.load(Ordering::Acquire) {
            return None;
        }
        lock(&self.reason).clone()
    }

    /// The first reason wins: later errors are usually consequences of the first.
    fn latch(&self, reason: String) {
        let mut slot = lock(&self.reason);
        if slot.is_none() {
            tracing::error!(%reason, "wal failed; refusing all further writes");
            *slot = Some(reason);
        }
        self.failed.store(true, Ordering::Release);
    }
}

/// Handle to the WAL writer thread. Dropping it shuts the thread down (see [`Self::shutdown`]).
pub struct WalWriter {
    tx: Sender<Msg>,
    /// The index the next appended item gets. Held while sending, so the channel's order is
    /// the order of the indexes handed out.
    next: Mutex<u64>,
    shared: Arc<Shared>,
    /// The files and the batch. The writer thread holds it for a whole batch (take, write,
    /// sync, answer); a submitter that finds it free and nothing queued writes its own item
    /// under it (D84).
    core: Arc<Mutex<Option<Writer>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl WalWriter {
    /// Starts appending at `next_index`, which must be the value [`crate::recover`] returned.
    ///
    /// Appends go to a fresh segment named after `next_index` (an existing empty segment of
    /// that name is reused). Never appending to a segment an earlier process wrote means the
    /// writer never depends on where a previous run, or a torn-tail truncation, left off.
    pub fn start(cfg: WalConfig, next_index: u64) -> Result<WalWriter, WalError> {
        let next_index = next_index.max(1);
        segment::create_dir_durably(&cfg.dir)
            .map_err(|e| WalError::io(format!("creating {}", cfg.dir.display()), e))?;
        let mut segments: VecDeque<SegmentFile> = segment::list(&cfg.dir)?.into();
        let active = open_active(&cfg, &mut segments, next_index)?;
        let spare = if cfg.preallocate {
            Some(
                Spare::start(&cfg.dir, cfg.segment_bytes, cfg.recycle)
                    .map_err(|e| WalError::io("starting the wal spare thread", e))?,
            )
        } else {
            None
        };
        let (tx, rx) = crossbeam_channel::unbounded();
        let stats = WalStats::new();
        // What recovery kept is on disk: the engine synced it before replaying (D36).
        stats.durable_index.store(next_index - 1, Ordering::Relaxed);
        let shared = Arc::new(Shared {
            stats: Arc::new(stats),
            failed: AtomicBool::new(false),
            reason: Mutex::new(None),
            closed: AtomicBool::new(false),
            queued: AtomicU64::new(0),
            #[cfg(test)]
            fail_next_sync: AtomicBool::new(false),
            fail_rotations: std::sync::atomic::AtomicU64::new(0),
        });
        let writer = Writer {
            dir: cfg.dir,
            segment_bytes: cfg.segment_bytes,
            shared: Arc::clone(&shared),
            segments,
            active,
            active_size: 0,
            spare,
            next_index,
            buf: Vec::with_capacity(MAX_BATCH_BYTES),
            slots: Vec::new(),
            batch_entries: 0,
        };
        let core = Arc::new(Mutex::new(Some(writer)));
        let thread_core = Arc::clone(&core);
        let thread = thread::Builder::new()
            .name("baton-wal".into())
            .spawn(move || run(&thread_core, &rx))
            .map_err(|e| WalError::io("spawning the wal writer thread", e))?;
        Ok(WalWriter { tx, next: Mutex::new(next_index), shared, core, thread: Mutex::new(Some(thread)) })
    }

    /// Non-blocking enqueue; returns the index the item will carry. If the WAL is latched
    /// failed or closed, `complete()` is called with the error right here, on the caller's
    /// thread (the index is used up all the same: nothing is ever written after a latch).
    pub fn submit(&self, item: Box<dyn WalItem>) -> u64 {
        let next = lock(&self.next);
        let index = *next;
        self.enqueue(next, item);
        index
    }

    /// [`Self::submit`] for a caller that numbers its entries itself (Raft's log): the item
    /// is taken only if it gets `index`; otherwise it is handed back, untouched and never
    /// completed, with the index it would have got. Checked under the index lock, so an
    /// entry can never be written under a number its caller did not give it.
    pub fn submit_at(&self, item: Box<dyn WalItem>, index: u64) -> Result<(), (Box<dyn WalItem>, u64)> {
        let next = lock(&self.next);
        if *next != index {
            return Err((item, *next));
        }
        self.enqueue(next, item);
        Ok(())
    }

    /// [`Self::submit`] from a caller that has nothing else to do until the item is durable
    /// (D84). When nothing is queued and the writer thread is between batches, the item is
    /// written and synced here, as a batch of its own, and completed before this returns:
    /// one thread hand-off less for each request of a lightly loaded node. Otherwise it is
    /// queued exactly as `submit` queues it. The same code writes, syncs and answers either
    /// way (I3), and items are still written and completed in index order: the item is taken
    /// here only while the index lock is held, nothing is queued, and the writer's lock is
    /// free, which together mean every earlier item is written and answered.
    pub fn submit_here_if_idle(&self, item: Box<dyn WalItem>) -> u64 {
        let mut next = lock(&self.next);
        let index = *next;
        let open = self.shared.failure().is_none() && !self.shared.closed.load(Ordering::Acquire);
        if open && self.shared.queued.load(Ordering::Acquire) == 0 {
            let mut core = match self.core.try_lock() {
                Ok(w) => Some(w),
                Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
                Err(TryLockError::WouldBlock) => None,
            };
            if let Some(w) = core.as_mut().and_then(|c| c.as_mut()) {
                *next = next.saturating_add(1);
                drop(next);
                w.accept(Pending(Some(item)), index);
                w.commit();
                self.shared.stats.batches_here.fetch_add(1, Ordering::Relaxed);
                return index;
            }
        }
        self.enqueue(next, item);
        index
    }

    /// The index the next submitted item gets.
    pub fn next_index(&self) -> u64 {
        *lock(&self.next)
    }

    fn enqueue(&self, mut next: MutexGuard<'_, u64>, item: Box<dyn WalItem>) {
        let pending = Pending(Some(item));
        let index = *next;
        *next = next.saturating_add(1);
        if let Some(reason) = self.shared.failure() {
            drop(next);
            pending.complete(Err(WalError::Failed(reason)));
        } else if self.shared.closed.load(Ordering::Acquire) {
            drop(next);
            pending.complete(Err(WalError::Closed));
        } else {
            // If shutdown won the race, send hands the item back (or the channel discards
            // it later) and Pending's Drop answers Closed.
            self.shared.queued.fetch_add(1, Ordering::AcqRel);
            let _ = self.tx.send(Msg::Item(pending, index));
        }
    }

    /// Removes every entry with index >= `index`, durably, before it returns; the next
    /// append gets `index`. What Raft asks of a follower whose uncommitted tail conflicts
    /// with its leader's. Appends submitted before it are committed first; none can be
    /// submitted while it runs (it holds the index lock). `index` must be within the log:
    /// not past its end, not below its oldest segment. A failure on the disk latches.
    pub fn truncate_from(&self, index: u64) -> Result<(), WalError> {
        let mut next = lock(&self.next);
        if let Some(reason) = self.shared.failure() {
            return Err(WalError::Failed(reason));
        }
        if self.shared.closed.load(Ordering::Acquire) {
            return Err(WalError::Closed);
        }
        if index > *next {
            return Err(WalError::OutOfRange(format!(
                "cannot truncate from entry {index}: the log ends at entry {}",
                *next - 1
            )));
        }
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.tx.send(Msg::TruncateFrom(index, tx)).map_err(|_| WalError::Closed)?;
        let r = rx.recv().unwrap_or(Err(WalError::Closed));
        if r.is_ok() {
            *next = index;
        }
        r
    }

    /// Deletes whole segments all of whose entries have index < `index`. Runs on the writer
    /// thread after the current batch; never deletes the active segment.
    pub fn truncate_before(&self, index: u64) {
        let _ = self.tx.send(Msg::TruncateBefore(index));
    }

    pub fn stats(&self) -> Arc<WalStats> {
        Arc::clone(&self.shared.stats)
    }

    /// `Some(reason)` once latched failed.
    pub fn failure(&self) -> Option<String> {
        self.shared.failure()
    }

    /// Finishes everything already submitted (write, sync, complete), then stops the thread.
    /// Later submits complete with `Closed`. Idempotent; concurrent callers all return only
    /// after the thread has stopped.
    pub fn shutdown(&self) {
        let mut thread = lock(&self.thread);
        self.shared.closed.store(true, Ordering::Release);
        let Some(handle) = thread.take() else { return };
        let _ = self.tx.send(Msg::Shutdown);
        // A completion callback that drops the last handle runs on the writer thread itself;
        // joining there would deadlock, and the Shutdown message already ends the loop.
        if handle.thread().id() == thread::current().id() {
            return;
        }
        if handle.join().is_err() {
            tracing::error!("wal writer thread panicked");
        }
    }

    #[cfg(test)]
    pub(crate) fn fail_next_sync(&self) {
        self.shared.fail_next_sync.store(true, Ordering::SeqCst);
    }

    #[cfg(test)]
    pub(crate) fn fail_rotations(&self, n: u64) {
        self.shared.fail_rotations.store(n, Ordering::SeqCst);
    }
}

impl crate::Log for WalWriter {
    fn append(&self, item: Box<dyn WalItem>) -> u64 {
        self.submit(item)
    }

    fn append_idle(&self, item: Box<dyn WalItem>) -> u64 {
        self.submit_here_if_idle(item)
    }

    fn truncate_before(&self, index: u64) {
        WalWriter::truncate_before(self, index)
    }

    fn failure(&self) -> Option<String> {
        WalWriter::failure(self)
    }

    fn shutdown(&self) {
        WalWriter::shutdown(self)
    }
}

impl Drop for WalWriter {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn open_active(cfg: &WalConfig, segments: &mut VecDeque<SegmentFile>, next_index: u64) -> Result<File, WalError> {
    if let Some(last) = segments.back() {
        let ctx = |e| WalError::io(format!("inspecting {}", last.path.display()), e);
        let len = fs::metadata(&last.path).map_err(ctx)?.len();
        // A segment with no frame yet (empty, or only its preallocated zeros) is taken as is.
        if last.first_index == next_index && (len == 0 || segment::is_blank(&last.path).map_err(ctx)?) {
            let file = segment::open_write(&last.path)?;
            preallocate(cfg, &file, &last.path, len)?;
            return Ok(file);
        }
        // Appending at or before entries already on disk would repeat indexes, which the next
        // recovery would reject: refuse now instead of writing a log that cannot be replayed.
        if last.first_index >= next_index {
            return Err(WalError::Corrupt {
                file: last.path.display().to_string(),
                offset: 0,
                reason: format!(
                    "segment starts at index {} ({len} bytes) but the writer was asked to start at {next_index}; pass the next_index returned by recover()",
                    last.first_index
                ),
            });
        }
    }
    let (seg, file) = segment::create(&cfg.dir, next_index)?;
    preallocate(cfg, &file, &seg.path, 0)?;
    segments.push_back(seg);
    Ok(file)
}

/// Zero-fills a blank segment of `len` bytes up to the segment size, when configured. Done
/// here, before the first write, it costs start-up one segment of zeros; later segments come
/// from the spare thread.
fn preallocate(cfg: &WalConfig, file: &File, path: &std::path::Path, len: u64) -> Result<(), WalError> {
    if cfg.preallocate && len < cfg.segment_bytes {
        segment::zero_fill(file, len, cfg.segment_bytes)
            .map_err(|e| WalError::io(format!("preallocating {}", path.display()), e))?;
    }
    Ok(())
}

/// One queued item and what it will be answered with if the batch becomes durable.
struct Slot {
    pending: Pending,
    outcome: Result<u64, WalError>,
}

/// The files and the open batch. Touched only under `WalWriter::core`: by the writer thread,
/// or by a submitter writing its own item while the thread is idle (D84).
struct Writer {
    dir: PathBuf,
    segment_bytes: u64,
    shared: Arc<Shared>,
    /// Oldest first; the last one is the active segment.
    segments: VecDeque<SegmentFile>,
    active: File,
    /// Where the next batch is written: the end of the frames, not of a preallocated file.
    active_size: u64,
    /// Prepares the next preallocated segment; `None` when preallocation is off.
    spare: Option<Spare>,
    next_index: u64,
    /// Encoded frames of the current batch; reused so steady state does not allocate.
    buf: Vec<u8>,
    slots: Vec<Slot>,
    /// Frames in `buf`.
    batch_entries: u64,
}

/// The writer thread: takes what is queued as one batch under the writer's lock, writes,
/// syncs and answers it, and repeats.
fn run(core: &Mutex<Option<Writer>>, rx: &Receiver<Msg>) {
    let mut stopping = false;
    loop {
        // Once stopping, only what is already queued gets written; then the thread ends
        // and dropping the receiver answers any straggler with Closed.
        let first = if stopping { rx.try_recv().ok() } else { rx.recv().ok() };
        let Some(first) = first else { break };
        let mut guard = lock(core);
        let Some(w) = guard.as_mut() else { break };
        let (mut truncate, mut tail) = (None, None);
        w.take(first, &mut truncate, &mut tail, &mut stopping);
        // A suffix truncation ends the batch: what came before it is committed first.
        while tail.is_none() && w.buf.len() < MAX_BATCH_BYTES && w.slots.len() < MAX_BATCH_ITEMS {
            match rx.try_recv() {
                Ok(msg) => w.take(msg, &mut truncate, &mut tail, &mut stopping),
                Err(_) => break,
            }
        }
        w.commit();
        if let Some(index) = truncate {
            w.truncate_before(index);
        }
        if let Some((index, reply)) = tail {
            let _ = reply.send(w.truncate_from(index));
        }
    }
    // The files and the spare thread end with this thread (the spare's Drop joins it), so
    // `shutdown` returns after the last retirement; a submitter finds no writer and queues,
    // which answers Closed.
    lock(core).take();
}

impl Writer {
    fn take(
        &mut self,
        msg: Msg,
        truncate: &mut Option<u64>,
        tail: &mut Option<(u64, Sender<Result<(), WalError>>)>,
        stopping: &mut bool,
    ) {
        match msg {
            Msg::Item(pending, index) => {
                self.accept(pending, index);
                self.shared.queued.fetch_sub(1, Ordering::AcqRel);
            }
            Msg::TruncateBefore(index) => *truncate = Some(truncate.map_or(index, |t| t.max(index))),
            Msg::TruncateFrom(index, reply) => *tail = Some((index, reply)),
            Msg::Shutdown => *stopping = true,
        }
    }

    /// Encodes the item as the next frame of the batch, under the index `append` gave it.
    fn accept(&mut self, pending: Pending, index: u64) {
        let outcome = match (self.shared.failure(), pending.0.as_deref()) {
            (Some(reason), _) => Err(WalError::Failed(reason)),
            (None, None) => return, // already answered; nothing to write
            (None, Some(item)) => self.encode(item, index).map_err(|reason| {
                // The Log contract: a frame the log cannot take latches it, so that no later
                // frame is written under this index while its planner counted on another.
                self.shared.latch(reason.clone());
                WalError::Failed(reason)
            }),
        };
        self.slots.push(Slot { pending, outcome });
    }

    fn encode(&mut self, item: &dyn WalItem, index: u64) -> Result<u64, String> {
        if index != self.next_index {
            return Err(format!("frame promised index {index} but the log is at {}", self.next_index));
        }
        let Some(after) = index.checked_add(1) else {
            return Err("wal index space exhausted".into());
        };
        let start = frame::begin(&mut self.buf);
        let buf = &mut self.buf;
        if catch_unwind(AssertUnwindSafe(|| item.encode(buf))).is_err() {
            self.buf.truncate(start);
            return Err(format!("encoding entry {index} panicked"));
        }
        let Some(frame_bytes) = self.buf.get_mut(start..) else {
            // encode removed bytes of earlier frames in this batch; they can no longer be
            // trusted, so the batch must not be written (the caller latches).
            return Err("WalItem::encode removed bytes it did not write".to_string());
        };
        match frame::seal(frame_bytes, index) {
            Ok(()) => {
                self.next_index = after;
                self.batch_entries += 1;
                Ok(index)
            }
            Err(reason) => {
                self.buf.truncate(start);
                Err(reason)
            }
        }
    }

    /// Makes the batch durable, then answers every item in submission order.
    fn commit(&mut self) {
        if self.slots.is_empty() {
            return;
        }
        let written = match self.shared.failure() {
            Some(reason) => Err(reason),
            None if self.buf.is_empty() => Ok(()),
            None => self.write_batch(),
        };
        let failure = written.err().map(|reason| {
            self.shared.latch(reason.clone());
            WalError::Failed(reason)
        });
        // I3: this is the only place that answers Ok, and it is reached with failure == None
        // only after write_batch's fdatasync returned Ok for every frame in this batch.
        for slot in self.slots.drain(..) {
            let outcome = match (&failure, slot.outcome) {
                (Some(err), Ok(_)) => Err(err.clone()),
                (_, outcome) => outcome,
            };
            slot.pending.complete(outcome);
        }
        self.buf.clear();
        if self.buf.capacity() > KEEP_BUF_CAPACITY {
            self.buf = Vec::with_capacity(MAX_BATCH_BYTES);
        }
        self.batch_entries = 0;
    }

    /// One write and one fdatasync for the whole batch. A failure here is never retried: the
    /// caller latches it.
    fn write_batch(&mut self) -> Result<(), String> {
        let first_index = self.next_index - self.batch_entries;
        if self.active_size > 0 && self.active_size >= self.segment_bytes {
            // A new segment that cannot be made now (out of descriptors, say) leaves the
            // batch in the current one, past its size, and is tried again by the next batch:
            // segments are a size to aim at, and a full one is not a reason to stop the node
            // (issue 12 item 11). A failed rotation leaves no file behind it.
            if let Err(e) = self.rotate(first_index) {
                if self.shared.stats.rotation_failures.fetch_add(1, Ordering::Relaxed) == 0 {
                    tracing::warn!(error = %e, "could not start a new wal segment; writing on in the current one");
                }
            }
        }
        let path = self.active_path();
        self.active.write_all_at(&self.buf, self.active_size).map_err(|e| format!("write to {path}: {e}"))?;
        let started = Instant::now();
        self.sync_active().map_err(|e| format!("fdatasync of {path}: {e}"))?;
        let stats = &self.shared.stats;
        stats.sync_seconds.observe(started.elapsed().as_secs_f64());
        let bytes = self.buf.len() as u64;
        self.active_size += bytes;
        // Half a segment ahead is ample time to zero-fill the next one.
        if let Some(spare) = self.spare.as_mut().filter(|_| self.active_size * 2 >= self.segment_bytes) {
            spare.prepare();
        }
        stats.batches.fetch_add(1, Ordering::Relaxed);
        stats.entries.fetch_add(self.batch_entries, Ordering::Relaxed);
        stats.bytes.fetch_add(bytes, Ordering::Relaxed);
        stats.batch_entries.observe(self.batch_entries as f64);
        stats.durable_index.store(self.next_index - 1, Ordering::Release);
        Ok(())
    }

    fn sync_active(&self) -> std::io::Result<()> {
        #[cfg(test)]
        if self.shared.fail_next_sync.swap(false, Ordering::SeqCst) {
            return Err(std::io::Error::other("injected sync failure"));
        }
        #[cfg(feature = "mutants")]
        if crate::mutant::is("skip-sync") {
            return Ok(());
        }
        segment::sync_data(&self.active)
    }

    /// Starts a new segment whose first entry is `first_index`. The old one is already
    /// durable: every batch written to it was synced before being answered.
    fn rotate(&mut self, first_index: u64) -> Result<(), String> {
        if self.shared.fail_rotations.load(Ordering::SeqCst) > 0 {
            self.shared.fail_rotations.fetch_sub(1, Ordering::SeqCst);
            return Err("injected rotation failure".into());
        }
        let target = self.dir.join(segment::file_name(first_index));
        let installed = self.spare.as_mut().and_then(|s| s.install(&target));
        let (seg, file) = match installed {
            Some(Ok(file)) => (SegmentFile { first_index, path: target }, file),
            Some(Err(e)) => return Err(format!("installing the preallocated segment {}: {e}", target.display())),
            // Not ready (a slow disk, or preparing it failed): a plain, growing segment.
            None => segment::create(&self.dir, first_index).map_err(|e| e.to_string())?,
        };
        self.active = file;
        self.active_size = 0;
        self.segments.push_back(seg);
        Ok(())
    }

    fn active_path(&self) -> String {
        self.segments.back().map(|s| s.path.display().to_string()).unwrap_or_default()
    }

    /// Drops old segments oldest-first, so a crash midway still leaves a contiguous log.
    /// A segment's entries end where the next segment begins, so it is wholly below `index`
    /// iff the next segment starts at or before `index`. With preallocation they go to the
    /// spare thread's pool (D20: renamed or deleted there, never on this thread, which every
    /// commit waits on); without, they are deleted here. Failure to delete costs only disk
    /// space and is not latched.
    fn truncate_before(&mut self, index: u64) {
        if self.shared.failed.load(Ordering::Acquire) {
            return;
        }
        if self.spare.is_some() {
            let mut retired = Vec::new();
            while self.oldest_is_below(index) {
                retired.extend(self.segments.pop_front().map(|s| s.path));
            }
            match self.spare.as_mut() {
                Some(spare) if !retired.is_empty() => spare.retire(retired),
                _ => {}
            }
            return;
        }
        let mut removed = false;
        while self.oldest_is_below(index) {
            let Some(oldest) = self.segments.front() else {
                break;
            };
            match fs::remove_file(&oldest.path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::warn!(file = %oldest.path.display(), error = %e, "could not delete old wal segment");
                    break;
                }
            }
            self.segments.pop_front();
            removed = true;
        }
        if removed {
            if let Err(e) = segment::sync_dir(&self.dir) {
                tracing::warn!(dir = %self.dir.display(), error = %e, "fsync after deleting wal segments failed");
            }
        }
    }

    /// Whether the oldest segment holds only entries below `index` and is not the active one.
    fn oldest_is_below(&self, index: u64) -> bool {
        self.segments.len() >= 2 && self.segments.get(1).is_some_and(|next| next.first_index <= index)
    }
}

#[cfg(test)]
#[path = "writer/here_tests.rs"]
mod here_tests;
mod tail;
#[cfg(test)]
#[path = "writer/tail_tests.rs"]
mod tail_tests;

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
