//! End-to-end tests through the public API only, the way the core crate uses it.
//! Must never reach into crate internals: if these compile and pass, the API contract holds.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::thread;

use baton_log::{recover, WalConfig, WalError, WalItem, WalWriter};

/// Records completions in the order the writer makes them.
type Log = Arc<Mutex<Vec<(u32, u32, Result<u64, WalError>)>>>;

struct Msg {
    thread: u32,
    seq: u32,
    log: Log,
}

impl Msg {
    fn payload(thread: u32, seq: u32) -> Vec<u8> {
        format!("t{thread}-s{seq}").into_bytes()
    }
}

impl WalItem for Msg {
    fn encode(&self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(&Msg::payload(self.thread, self.seq));
    }
    fn complete(self: Box<Self>, result: Result<u64, WalError>) {
        self.log.lock().unwrap().push((self.thread, self.seq, result));
    }
}

#[test]
fn concurrent_submitters_get_dense_ordered_indexes_exactly_once() {
    const THREADS: u32 = 8;
    const PER_THREAD: u32 = 300;
    let dir = tempfile::tempdir().unwrap();
    let cfg = WalConfig {
        dir: dir.path().to_path_buf(),
        // Every batch after the first starts a new segment, so rotation runs under concurrency.
        segment_bytes: 1,
        // Every rotation races the spare thread: some segments are preallocated, some plain.
        preallocate: true,
        recycle: 2,
        truncate_damaged_tail: false,
    };
    let info = recover(&cfg, 1, |_, _| Ok(())).unwrap();
    assert_eq!(info.next_index, 1);
    let wal = Arc::new(WalWriter::start(cfg.clone(), info.next_index).unwrap());
    let log: Log = Arc::default();
    thread::scope(|s| {
        for t in 0..THREADS {
            let (wal, log) = (Arc::clone(&wal), Arc::clone(&log));
            s.spawn(move || {
                for seq in 0..PER_THREAD {
                    let log = Arc::clone(&log);
                    wal.submit(Box::new(Msg { thread: t, seq, log }));
                }
            });
        }
    });
    wal.shutdown();
    let log = log.lock().unwrap();
    let total = (THREADS * PER_THREAD) as usize;
    assert_eq!(log.len(), total, "every item completes exactly once");

    let mut by_index = HashMap::new();
    let mut seen = HashSet::new();
    let mut last_seq: HashMap<u32, u32> = HashMap::new();
    for (pos, (t, seq, result)) in log.iter().enumerate() {
        let index = result.clone().expect("append failed");
        // Completion order is index order, and indexes are dense from 1.
        assert_eq!(index, pos as u64 + 1);
        assert!(seen.insert((*t, *seq)), "t{t} s{seq} completed twice");
        // One thread's submissions keep their order.
        if let Some(prev) = last_seq.insert(*t, *seq) {
            assert!(prev < *seq, "t{t}: s{prev} got a later index than s{seq}");
        }
        by_index.insert(index, Msg::payload(*t, *seq));
    }

    let stats = wal.stats();
    assert_eq!(stats.entries.load(Relaxed), total as u64);
    assert_eq!(stats.batch_entries.count(), stats.batches.load(Relaxed));
    assert_eq!(stats.batch_entries.sum(), total as f64);

    let mut replayed = 0u64;
    let info = recover(&cfg, 1, |i, p| {
        assert_eq!(Some(p), by_index.get(&i).map(Vec::as_slice), "payload of {i}");
        replayed += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(replayed, total as u64);
    assert_eq!(info.next_index, total as u64 + 1);
    assert_eq!(info.truncated_bytes, 0);
    // Segments only: the spare being prepared (`wal.spare`) is not one.
    let segments = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("wal-"))
        .count() as u64;
    assert_eq!(segments, stats.batches.load(Relaxed));
}

/// Holds the writer thread inside encode until released, so submissions queue up behind it.
struct Gate {
    open: Mutex<std::sync::mpsc::Receiver<()>>,
    log: Log,
}

impl WalItem for Gate {
    fn encode(&self, buf: &mut Vec<u8>) {
        let _ = self.open.lock().unwrap().recv_timeout(std::time::Duration::from_secs(30));
        buf.extend_from_slice(b"gate");
    }
    fn complete(self: Box<Self>, result: Result<u64, WalError>) {
        self.log.lock().unwrap().push((u32::MAX, 0, result));
    }
}

#[test]
fn concurrent_submissions_are_group_committed() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = WalConfig::new(dir.path());
    let wal = Arc::new(WalWriter::start(cfg, 1).unwrap());
    let log: Log = Arc::default();
    let (open, gate_rx) = std::sync::mpsc::channel();
    wal.submit(Box::new(Gate { open: Mutex::new(gate_rx), log: Arc::clone(&log) }));
    thread::scope(|s| {
        for t in 0..4 {
            let (wal, log) = (Arc::clone(&wal), Arc::clone(&log));
            s.spawn(move || {
                for seq in 0..250 {
                    let log = Arc::clone(&log);
                    wal.submit(Box::new(Msg { thread: t, seq, log }));
                }
            });
        }
    });
    drop(open);
    wal.shutdown();
    let stats = wal.stats();
    assert_eq!(stats.entries.load(Relaxed), 1001);
    // 1001 entries queued behind one gate: far fewer syncs than entries.
    assert_eq!(stats.batches.load(Relaxed), 1);
    assert_eq!(stats.sync_seconds.count(), 1);
    assert_eq!(log.lock().unwrap().len(), 1001);
}

#[test]
fn submit_after_shutdown_is_closed_on_the_callers_thread() {
    let dir = tempfile::tempdir().unwrap();
    let wal = WalWriter::start(WalConfig::new(dir.path()), 1).unwrap();
    wal.shutdown();
    let log: Log = Arc::default();
    wal.submit(Box::new(Msg { thread: 0, seq: 0, log: Arc::clone(&log) }));
    // Answered synchronously: no waiting needed.
    assert_eq!(log.lock().unwrap().as_slice(), &[(0, 0, Err(WalError::Closed))]);
    assert_eq!(wal.failure(), None);
}
