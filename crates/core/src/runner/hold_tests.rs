//! The planner's hold on its open frame while the log has a backlog (D75): bounded by
//! `MAX_HOLD`, and none without a backlog.

use super::{HOLD_POLL, MAX_HOLD};
use crate::engine::{Engine, EngineConfig};
use baton_log::{Log, WalItem};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// A log that completes every frame at once, on a thread of its own, and says it has a
/// backlog when told to.
struct AtOnce {
    backlog: AtomicBool,
    next: AtomicU64,
    frames: AtomicU64,
    done: Mutex<mpsc::Sender<(Box<dyn WalItem>, u64)>>,
}

impl AtOnce {
    fn new() -> Arc<AtOnce> {
        let (tx, rx) = mpsc::channel::<(Box<dyn WalItem>, u64)>();
        std::thread::spawn(move || {
            for (item, index) in rx {
                item.complete(Ok(index));
            }
        });
        Arc::new(AtOnce {
            backlog: AtomicBool::new(false),
            next: AtomicU64::new(1),
            frames: AtomicU64::new(0),
            done: Mutex::new(tx),
        })
    }
}

impl Log for AtOnce {
    fn append(&self, item: Box<dyn WalItem>) -> u64 {
        let index = self.next.fetch_add(1, Ordering::AcqRel);
        self.frames.fetch_add(1, Ordering::AcqRel);
        let _ = self.done.lock().unwrap().send((item, index));
        index
    }
    fn truncate_before(&self, _: u64) {}
    fn failure(&self) -> Option<String> {
        None
    }
    fn shutdown(&self) {}
    fn backlog(&self) -> bool {
        self.backlog.load(Ordering::Acquire)
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

#[test]
fn a_frame_is_held_while_the_log_has_a_backlog_and_never_longer_than_max_hold() {
    let dir = tempfile::tempdir().unwrap();
    let log = AtOnce::new();
    let engine = Engine::start_member(EngineConfig::new(dir.path().to_path_buf()), log.clone()).unwrap();
    engine.promote("me".into()).unwrap();
    let rt = rt();
    // No backlog: a write goes out in a frame of its own, at once.
    let before = log.frames.load(Ordering::Acquire);
    let t = Instant::now();
    assert!(rt.block_on(engine.create_topic("a".into(), 1)).unwrap());
    let alone = t.elapsed();
    assert_eq!(log.frames.load(Ordering::Acquire), before + 1);

    // A backlog that never clears: each write is held, but only for MAX_HOLD.
    log.backlog.store(true, Ordering::Release);
    for name in ["b", "c", "d"] {
        let t = Instant::now();
        assert!(rt.block_on(engine.create_topic(name.into(), 1)).unwrap());
        let took = t.elapsed();
        assert!(took >= MAX_HOLD, "{name}: answered {took:?} after, inside the hold of {MAX_HOLD:?}");
        assert!(took < Duration::from_secs(2), "{name}: held {took:?}, far past {MAX_HOLD:?}");
    }
    // Writes that arrive during a hold join the held frame: twenty at once make a few frames,
    // not twenty.
    let before = log.frames.load(Ordering::Acquire);
    rt.block_on(async {
        let calls: Vec<_> = (0..20)
            .map(|i| {
                let e = engine.clone();
                tokio::spawn(async move { e.create_topic(format!("t{i}"), 1).await })
            })
            .collect();
        for c in calls {
            assert!(c.await.unwrap().unwrap());
        }
    });
    let frames = log.frames.load(Ordering::Acquire) - before;
    assert!(frames < 10, "20 writes during holds took {frames} frames");
    // Every held frame was counted, and with a backlog that never clears each hold ran out.
    let c = engine.counters();
    let (held, timed_out) = (c.frames_held.load(Ordering::Acquire), c.holds_timed_out.load(Ordering::Acquire));
    assert!(held >= 3 + frames, "{held} holds counted");
    assert_eq!(held, timed_out);
    assert!(HOLD_POLL < MAX_HOLD);
    assert!(alone < Duration::from_secs(2), "a write with no backlog took {alone:?}");
    engine.shutdown();
}
