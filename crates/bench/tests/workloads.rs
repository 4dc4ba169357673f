//! The workloads against an in-memory target: counts add up, consume drains,
//! and the open loop charges a slow system for the requests it delayed
//! (no coordinated omission).

use baton_bench::target::{Delivery, Msg, Result, Target};
use baton_bench::workload::{self, Stop};
use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

/// A queue in memory; every call takes `delay`.
struct Mem {
    delay: Duration,
    q: Mutex<VecDeque<Msg>>,
    txids: Mutex<HashSet<String>>,
    acked: Mutex<u64>,
}

impl Mem {
    fn new(delay: Duration) -> Mem {
        Mem { delay, q: Mutex::new(VecDeque::new()), txids: Mutex::new(HashSet::new()), acked: Mutex::new(0) }
    }
}

impl Target for Mem {
    fn system(&self) -> &'static str {
        "mem"
    }
    async fn setup(&self, _queue: &str, _partitions: u32) -> Result<()> {
        Ok(())
    }
    async fn produce(&self, batch: Vec<Msg>) -> Result<()> {
        tokio::time::sleep(self.delay).await;
        let p = batch[0].partition;
        assert!(batch.iter().all(|m| m.partition == p), "one partition per batch");
        for m in batch {
            assert!(self.txids.lock().unwrap().insert(m.txid.clone()), "txid reused: {}", m.txid);
            self.q.lock().unwrap().push_back(m);
        }
        Ok(())
    }
    async fn consume(&self, max: usize) -> Result<Vec<Delivery>> {
        tokio::time::sleep(self.delay).await;
        let mut q = self.q.lock().unwrap();
        let n = max.min(q.len());
        Ok(q.drain(..n).map(|m| Delivery { partition: m.partition.to_string(), txid: m.txid, lease: None }).collect())
    }
    async fn ack(&self, d: Vec<Delivery>) -> Result<()> {
        *self.acked.lock().unwrap() += d.len() as u64;
        Ok(())
    }
    fn ack_meaning(&self) -> &'static str {
        "in memory"
    }
}

#[tokio::test]
async fn produce_count_then_consume_drains() {
    let t = std::sync::Arc::new(Mem::new(Duration::from_micros(100)));
    let m = workload::produce(t.clone(), 4, 16, 7, 3, Stop::Count(1000), false).await;
    assert_eq!(m.msgs, 1000);
    assert_eq!(m.errors, 0);
    assert_eq!(m.requests, 143); // 142 full batches of 7 and one of 6
    assert_eq!(m.latency.count(), 143);
    assert_eq!(t.q.lock().unwrap().len(), 1000);
    assert!(t.q.lock().unwrap().iter().all(|m| m.payload.len() == 16));

    let c = workload::consume(t.clone(), 3, 50, None, Duration::from_secs(1), false).await;
    assert_eq!(c.msgs, 1000);
    assert_eq!(*t.acked.lock().unwrap(), 1000);
    assert!(t.q.lock().unwrap().is_empty());
}

#[tokio::test]
async fn produce_by_duration_stops() {
    let t = std::sync::Arc::new(Mem::new(Duration::from_millis(1)));
    let m = workload::produce(t, 2, 8, 1, 1, Stop::Duration(Duration::from_millis(200)), false).await;
    assert!(m.msgs > 10, "{m:?}");
    assert!(m.secs < 1.0, "{m:?}");
}

#[tokio::test]
async fn consume_exact_count() {
    let t = std::sync::Arc::new(Mem::new(Duration::ZERO));
    workload::produce(t.clone(), 1, 8, 100, 1, Stop::Count(500), false).await;
    let c = workload::consume(t.clone(), 2, 64, Some(300), Duration::from_secs(1), false).await;
    assert_eq!(c.msgs, 300);
    assert_eq!(c.errors, 0);
    assert_eq!(t.q.lock().unwrap().len(), 200);
    // Asking for more than there is ends with an error after the idle time.
    let c = workload::consume(t.clone(), 1, 64, Some(1000), Duration::from_millis(50), false).await;
    assert_eq!(c.msgs, 200);
    assert_eq!(c.errors, 1);
}

#[tokio::test]
async fn open_loop_fast_system_holds() {
    let t = std::sync::Arc::new(Mem::new(Duration::from_micros(200)));
    let s = workload::open_loop(
        t,
        4,
        8,
        1,
        2,
        400,
        Duration::from_millis(500),
        Duration::from_secs(1),
        Duration::from_secs(1),
        false,
    )
    .await;
    assert_eq!(s.offered, 200);
    assert_eq!(s.delivered, 200);
    assert_eq!(s.answered_late, 0);
    assert_eq!(s.errors, 0);
    // Timer slop aside, a 0.2 ms system answers well within 20 ms.
    assert!(s.latency.percentile_us(50.0) < 20_000, "{s:?}");
}

#[tokio::test]
async fn open_loop_charges_queueing_to_the_system() {
    // One connection, a request due every 10 ms, each taking 50 ms: the
    // system can do 20/s of the 100/s offered. A closed-loop measurement would
    // report 50 ms for every request; from the due instants the delay grows
    // by 40 ms per request, so the tail is far above 50 ms.
    let t = std::sync::Arc::new(Mem::new(Duration::from_millis(50)));
    let s = workload::open_loop(
        t,
        1,
        8,
        1,
        1,
        100,
        Duration::from_millis(500),
        Duration::from_millis(100),
        Duration::from_millis(300),
        false,
    )
    .await;
    assert_eq!(s.offered, 50);
    assert!(s.delivered < 20, "{s:?}");
    // Answers within the grace but after the drain still give latencies.
    assert!(s.answered_late > 0, "{s:?}");
    assert!(s.behind > 5, "{s:?}");
    // Every offered request is in the latency histogram, delivered or not.
    assert_eq!(s.latency.count(), 50);
    assert!(s.latency.percentile_us(99.0) >= 300_000, "{s:?}");
    // Service time stays near the 50 ms the system takes.
    assert!(s.service.percentile_us(50.0) < 60_000, "{s:?}");
}
