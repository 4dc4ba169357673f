//! D84: a submitter with nothing else to do writes its own item when the writer thread is
//! idle. What must still hold: answers only after the sync (I3), in index order, never
//! under an index the item was not given, and a failure latches as on the thread.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::thread;

use super::*;
use crate::test_util::*;

#[test]
fn an_item_given_to_an_idle_writer_is_durable_and_answered_before_the_call_returns() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), 1 << 30);
    let w = WalWriter::start(c.clone(), 1).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    for i in 0..3 {
        assert_eq!(w.submit_here_if_idle(item(i, payload(i), &tx)), i + 1);
        // Answered already: no wait for another thread.
        assert_eq!(rx.try_recv().unwrap(), (i, Ok(i + 1)));
        assert_eq!(w.stats().durable_index.load(Relaxed), i + 1);
    }
    let stats = w.stats();
    assert_eq!((stats.batches.load(Relaxed), stats.batches_here.load(Relaxed)), (3, 3));
    assert_eq!(stats.sync_seconds.count(), 3);
    drop(w);
    let (_, got) = recover_all(&c, 1).unwrap();
    assert_eq!(got, (0..3).map(|i| (i + 1, payload(i))).collect::<Vec<_>>());
}

#[test]
fn an_item_given_while_the_writer_is_busy_is_queued_and_answered_after_the_earlier_one() {
    let dir = tempfile::tempdir().unwrap();
    let w = WalWriter::start(cfg(dir.path(), 1 << 30), 1).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    let (open, g) = gate(&tx);
    w.submit(g);
    // Wait until the thread holds the gate (its batch, under the writer's lock).
    let t0 = std::time::Instant::now();
    while w.core.try_lock().is_ok() && t0.elapsed() < WAIT {
        thread::yield_now();
    }
    assert!(t0.elapsed() < WAIT, "the writer thread never took the gate");
    assert_eq!(w.submit_here_if_idle(item(7, payload(7), &tx)), 2);
    assert!(rx.try_recv().is_err(), "nothing may be answered before the gate's entry is written");
    drop(open);
    assert_eq!(rx.recv_timeout(WAIT).unwrap(), (u64::MAX, Ok(1)));
    assert_eq!(rx.recv_timeout(WAIT).unwrap(), (7, Ok(2)));
    assert_eq!(w.stats().batches_here.load(Relaxed), 0);
}

/// Hostile interleaving: four submitters, half of them writing their own items, against
/// the writer thread. Every answer must come in index order, each under the index its call
/// returned, and the log must replay every payload under that index.
#[test]
fn submitters_racing_the_writer_thread_never_reorder_or_misnumber_an_entry() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), 64 << 10);
    let w = Arc::new(WalWriter::start(c.clone(), 1).unwrap());
    let (tx, rx) = crossbeam_channel::unbounded();
    let order = Arc::new(Mutex::new(Vec::new()));
    struct Logged {
        id: u64,
        payload: Vec<u8>,
        order: Arc<Mutex<Vec<u64>>>,
        done: Sender<Done>,
    }
    impl WalItem for Logged {
        fn encode(&self, buf: &mut Vec<u8>) {
            buf.extend_from_slice(&self.payload);
        }
        fn complete(self: Box<Self>, result: Result<u64, WalError>) {
            if let Ok(i) = &result {
                lock(&self.order).push(*i);
            }
            let _ = self.done.send((self.id, result));
        }
    }
    let per = 1_500u64;
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let (w, tx, order) = (Arc::clone(&w), tx.clone(), Arc::clone(&order));
            thread::spawn(move || {
                let mut given = Vec::new();
                for n in 0..per {
                    let id = t * per + n;
                    let it = Box::new(Logged { id, payload: payload(id), order: order.clone(), done: tx.clone() });
                    let index = match (t + n) % 2 {
                        0 => w.submit_here_if_idle(it),
                        _ => w.submit(it),
                    };
                    given.push((id, index));
                    // Now and then a pause, so the writer thread is sometimes idle.
                    if n % 50 == 0 {
                        thread::sleep(std::time::Duration::from_millis(2));
                    }
                }
                given
            })
        })
        .collect();
    let given: HashMap<u64, u64> = threads.into_iter().flat_map(|h| h.join().unwrap()).collect();
    let total = 4 * per;
    for _ in 0..total {
        let (id, result) = rx.recv_timeout(WAIT).unwrap();
        assert_eq!(result, Ok(given[&id]), "item {id}");
    }
    assert_eq!(*lock(&order), (1..=total).collect::<Vec<_>>(), "answers out of index order");
    assert!(w.failure().is_none());
    let here = w.stats().batches_here.load(Relaxed);
    assert!(here > 0, "no submitter ever wrote its own item: the path under test never ran");
    drop(w);
    let (_, got) = recover_all(&c, 1).unwrap();
    let by_index: HashMap<u64, u64> = given.iter().map(|(id, i)| (*i, *id)).collect();
    assert_eq!(got.len() as u64, total);
    for (i, p) in got {
        assert_eq!(p, payload(by_index[&i]), "entry {i}");
    }
}

#[test]
fn a_failed_sync_on_the_submitters_thread_latches_and_refuses_what_follows() {
    let dir = tempfile::tempdir().unwrap();
    let w = WalWriter::start(cfg(dir.path(), 1 << 30), 1).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    w.submit_here_if_idle(item(0, payload(0), &tx));
    assert_eq!(rx.try_recv().unwrap(), (0, Ok(1)));
    w.fail_next_sync();
    w.submit_here_if_idle(item(1, payload(1), &tx));
    let (id, result) = rx.try_recv().unwrap();
    assert_eq!(id, 1);
    assert!(matches!(result, Err(WalError::Failed(ref r)) if r.contains("injected")), "{result:?}");
    assert_eq!(w.stats().durable_index.load(Relaxed), 1);
    assert!(w.failure().is_some());
    w.submit_here_if_idle(item(2, payload(2), &tx));
    w.submit(item(3, payload(3), &tx));
    for want in [2, 3] {
        let (id, result) = rx.recv_timeout(WAIT).unwrap();
        assert_eq!(id, want);
        assert!(matches!(result, Err(WalError::Failed(_))), "{result:?}");
    }
}

#[test]
fn after_shutdown_an_item_is_refused_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), 1 << 30);
    let w = WalWriter::start(c.clone(), 1).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    w.shutdown();
    w.submit_here_if_idle(item(0, payload(0), &tx));
    assert_eq!(rx.try_recv().unwrap(), (0, Err(WalError::Closed)));
    drop(w);
    assert!(recover_all(&c, 1).unwrap().1.is_empty());
}
