//! The `e2e` workload: end-to-end latency, from the instant a message is due
//! to be produced to the instant a consuming worker has it in hand, at a
//! fixed offered rate. Generic over [`Target`], so Kafka clients (produce →
//! a group consumer receives) and Baton's HTTP path (push → pop) are measured
//! by the same code.
//!
//! Producers follow the open-loop schedule of the `fixed` workload (request
//! `i` due at `start + i / rate`, one message per request, worker `w` of `W`
//! owns `i ≡ w mod W`). The txid is `<run prefix>-<i>`, and producer and
//! consumers run in this one process, so a consumer finds the due instant of
//! what it received from the txid alone: no clock in the payload, no clock
//! skew. Consumers take batches and ack them after the receive instant is
//! recorded, so the ack is not part of the latency. A message never received
//! by the end (+ grace) is recorded at the latency it had reached then (a
//! lower bound), so losses cannot improve the percentiles.

use crate::hist::Latency;
use crate::report::{Params, Row};
use crate::schedule::{step_held, Schedule};
use crate::target::{Msg, Target};
use crate::workload::{payload, run_prefix, Progress};
use crate::BenchArgs;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Consuming workers of an e2e run: `--e2e-consumers`, else one per partition up to 8.
pub fn consumers(a: &BenchArgs) -> usize {
    a.kafka.e2e_consumers.unwrap_or((a.partitions as usize).clamp(1, 8)).max(1)
}

/// What one e2e run measured.
#[derive(Debug)]
pub struct E2eMeasured {
    pub rate: u64,
    pub secs: f64,
    pub offered: u64,
    /// Produce requests answered with success.
    pub produced: u64,
    /// Messages of this run received (each counted once).
    pub received: u64,
    /// Of those, received before the end + drain.
    pub on_time: u64,
    /// Messages of this run received again after their first receipt.
    pub duplicates: u64,
    /// Messages of other runs (left over in the queue) received and acked.
    pub foreign: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    /// Produce requests sent more than 1 ms after they were due.
    pub behind: u64,
    /// Due instant → received by a consumer.
    pub latency: Latency,
    /// Due instant → produce answered.
    pub produce: Latency,
    /// Send → produce answered.
    pub service: Latency,
}

#[derive(Default)]
struct Errs {
    count: AtomicU64,
    first: Mutex<Option<String>>,
}

impl Errs {
    fn note(&self, e: impl ToString) {
        if self.count.fetch_add(1, Ordering::Relaxed) == 0 {
            *self.first.lock().expect("error lock") = Some(e.to_string());
        }
    }
}

/// The message number in `txid` if it belongs to this run (`<prefix>-<i>`).
fn message_number(prefix: &str, txid: &str) -> Option<u64> {
    txid.strip_prefix(prefix)?.strip_prefix('-')?.parse().ok()
}

/// Run producers and consumers against `t` (set up already) at `rate` msg/s
/// for `secs`; answers and receipts after `secs + grace` are abandoned.
#[allow(clippy::too_many_arguments)]
pub async fn run<T: Target>(
    t: Arc<T>,
    producers: usize,
    consumers: usize,
    size: usize,
    partitions: u32,
    rate: u64,
    secs: Duration,
    drain: Duration,
    grace: Duration,
    consume_batch: usize,
    progress: bool,
) -> E2eMeasured {
    let errs = Arc::new(Errs::default());
    let foreign = Arc::new(AtomicU64::new(0));
    let prefix: Arc<str> = run_prefix().into();

    // Warm-up: one consume per consumer before the clock starts, so a Kafka
    // group has settled (and earlier leftovers are acked) before anything is due.
    let mut warm = Vec::new();
    for _ in 0..consumers.max(1) {
        let (t, errs, foreign) = (t.clone(), errs.clone(), foreign.clone());
        warm.push(tokio::spawn(async move {
            match t.consume(consume_batch).await {
                Ok(d) if d.is_empty() => {}
                Ok(d) => {
                    foreign.fetch_add(d.len() as u64, Ordering::Relaxed);
                    if let Err(e) = t.ack(d).await {
                        errs.note(format!("ack: {e}"));
                    }
                }
                Err(e) => errs.note(format!("consume: {e}")),
            }
        }));
    }
    for w in warm {
        w.await.expect("e2e warm-up panicked");
    }

    let sched = Schedule::new(rate, 1);
    let offered = sched.requests_in(secs);
    let seen: Arc<Vec<AtomicBool>> = Arc::new((0..offered).map(|_| AtomicBool::new(false)).collect());
    let received = Arc::new(AtomicU64::new(0));
    let produced = Arc::new(AtomicU64::new(0));
    let producers_left = Arc::new(AtomicU64::new(producers.max(1) as u64));
    let prog = Progress::start(format!("e2e {rate} msg/s"), received.clone(), progress);
    let start = Instant::now() + Duration::from_millis(20);
    let on_time_by = start + secs + drain.min(grace);
    let cutoff = start + secs + grace;
    let body = payload(size);

    let mut ptasks = Vec::new();
    for w in 0..producers.max(1) as u64 {
        let (t, prefix, body, errs, produced, left) =
            (t.clone(), prefix.clone(), body.clone(), errs.clone(), produced.clone(), producers_left.clone());
        let workers = producers.max(1) as u64;
        ptasks.push(tokio::spawn(async move {
            let (mut lat, mut svc, mut behind) = (Latency::new(), Latency::new(), 0u64);
            for i in Schedule::worker_requests(w, workers, offered) {
                let due = start + sched.due(i);
                if let Some(early) = due.checked_sub(Duration::from_millis(1)) {
                    tokio::time::sleep_until(early.into()).await;
                }
                let sent = Instant::now();
                if sent >= cutoff {
                    break;
                }
                if sched.is_behind(i, sent.saturating_duration_since(start), Duration::from_millis(1)) {
                    behind += 1;
                }
                let msg = Msg {
                    partition: (i % partitions.max(1) as u64) as u32,
                    txid: format!("{prefix}-{i}"),
                    payload: body.clone(),
                };
                match tokio::time::timeout_at(cutoff.into(), t.produce(vec![msg])).await {
                    Ok(Ok(())) => {
                        let now = Instant::now();
                        lat.record(now - due.min(sent));
                        svc.record(now - sent);
                        produced.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(Err(e)) => errs.note(format!("produce: {e}")),
                    Err(_) => errs.note("produce: no answer by the end of the grace period"),
                }
            }
            left.fetch_sub(1, Ordering::Relaxed);
            (lat, svc, behind)
        }));
    }

    let mut ctasks = Vec::new();
    for _ in 0..consumers.max(1) {
        let (t, prefix, errs, seen, received, produced, left, foreign) = (
            t.clone(),
            prefix.clone(),
            errs.clone(),
            seen.clone(),
            received.clone(),
            produced.clone(),
            producers_left.clone(),
            foreign.clone(),
        );
        ctasks.push(tokio::spawn(async move {
            let (mut lat, mut on_time, mut dups) = (Latency::new(), 0u64, 0u64);
            loop {
                let all_in = left.load(Ordering::Relaxed) == 0
                    && received.load(Ordering::Relaxed) >= produced.load(Ordering::Relaxed);
                if all_in || Instant::now() >= cutoff {
                    break;
                }
                let got = match tokio::time::timeout_at(cutoff.into(), t.consume(consume_batch)).await {
                    Ok(Ok(d)) => d,
                    Ok(Err(e)) => {
                        errs.note(format!("consume: {e}"));
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                    Err(_) => break,
                };
                if got.is_empty() {
                    continue;
                }
                let now = Instant::now();
                for d in &got {
                    match message_number(&prefix, &d.txid).filter(|&i| i < offered) {
                        Some(i) if !seen[i as usize].swap(true, Ordering::Relaxed) => {
                            lat.record(now.saturating_duration_since(start + sched.due(i)));
                            if now <= on_time_by {
                                on_time += 1;
                            }
                            received.fetch_add(1, Ordering::Relaxed);
                        }
                        Some(_) => dups += 1,
                        None => {
                            foreign.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                if let Err(e) = t.ack(got).await {
                    errs.note(format!("ack: {e}"));
                }
            }
            (lat, on_time, dups)
        }));
    }

    let (mut produce, mut service, mut behind) = (Latency::new(), Latency::new(), 0);
    for p in ptasks {
        let (l, s, b) = p.await.expect("e2e producer panicked");
        produce.merge(&l);
        service.merge(&s);
        behind += b;
    }
    let (mut latency, mut on_time, mut duplicates) = (Latency::new(), 0, 0);
    for c in ctasks {
        let (l, o, d) = c.await.expect("e2e consumer panicked");
        latency.merge(&l);
        on_time += o;
        duplicates += d;
    }
    prog.finish().await;
    // Never received: charged the latency reached at the cutoff.
    for (i, s) in seen.iter().enumerate() {
        if !s.load(Ordering::Relaxed) {
            latency.record(cutoff.saturating_duration_since(start + sched.due(i as u64)));
        }
    }
    let first_error = errs.first.lock().expect("error lock").clone();
    E2eMeasured {
        rate,
        secs: secs.as_secs_f64(),
        offered,
        produced: produced.load(Ordering::Relaxed),
        received: received.load(Ordering::Relaxed),
        on_time,
        duplicates,
        foreign: foreign.load(Ordering::Relaxed),
        errors: errs.count.load(Ordering::Relaxed),
        first_error,
        behind,
        latency,
        produce,
        service,
    }
}

/// `baton bench e2e`: one run at --rate for --duration (default 30 s); one row.
/// The row's latency is due → received; `service_p99_us` is the produce
/// answer's p99 from the send. Duplicates are errors.
pub async fn row<T: Target>(t: &Arc<T>, a: &BenchArgs, workers: usize) -> Row {
    let secs = Duration::from_secs_f64(a.duration.unwrap_or(30.0));
    let consumers = consumers(a);
    let m = run(
        t.clone(),
        workers,
        consumers,
        a.size,
        a.partitions,
        a.rate,
        secs,
        Duration::from_millis(a.drain_ms),
        Duration::from_millis(a.p99_limit_ms),
        a.kafka.e2e_batch.clamp(1, 10_000),
        !a.no_progress,
    )
    .await;
    let lat = m.latency.summary();
    let prod = m.produce.summary();
    eprintln!(
        "e2e ({}): {} offered, {} produced, {} received ({} on time, {} duplicates, {} from earlier runs), \
         {} sent late; produce answer from due p50 {:.2} ms p99 {:.2} ms; end to end p50 {:.2} ms p99 {:.2} ms",
        t.system(),
        m.offered,
        m.produced,
        m.received,
        m.on_time,
        m.duplicates,
        m.foreign,
        m.behind,
        prod.p50_us as f64 / 1e3,
        prod.p99_us as f64 / 1e3,
        lat.p50_us as f64 / 1e3,
        lat.p99_us as f64 / 1e3,
    );
    let params = Params {
        workers,
        size: a.size,
        batch: 1,
        partitions: a.partitions,
        queue: a.queue.clone(),
        offered_rate: Some(m.rate),
        count: None,
        duration_secs: Some(m.secs),
    };
    let mut r = Row::new("e2e", t.system(), t.ack_meaning(), params);
    r.msgs = m.on_time;
    r.secs = m.secs;
    r.rate = m.on_time as f64 / m.secs.max(1e-9);
    r.requests = m.produced;
    r.errors = m.errors + m.duplicates;
    r.offered = Some(m.offered);
    r.answered_late = Some(m.received - m.on_time);
    r.behind = Some(m.behind);
    r.held =
        Some(m.duplicates == 0 && step_held(m.offered, m.on_time, lat.p99_us, a.p99_limit_ms * 1000, a.min_delivered));
    r.service_p99_us = Some(m.service.summary().p99_us);
    r.label = a.label.clone();
    r.first_error = m.first_error.or_else(|| (m.duplicates > 0).then(|| format!("{} duplicates", m.duplicates)));
    r.set_latency(lat);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::{Delivery, Result};
    use std::collections::VecDeque;

    /// An in-memory queue: what is produced can be consumed after `delay`.
    struct Mem {
        q: Mutex<VecDeque<(Instant, String)>>,
        delay: Duration,
        acked: AtomicU64,
    }

    impl Target for Mem {
        fn system(&self) -> &'static str {
            "mem"
        }
        async fn setup(&self, _: &str, _: u32) -> Result<()> {
            Ok(())
        }
        async fn produce(&self, batch: Vec<Msg>) -> Result<()> {
            let at = Instant::now() + self.delay;
            self.q.lock().unwrap().extend(batch.into_iter().map(|m| (at, m.txid)));
            Ok(())
        }
        async fn consume(&self, max: usize) -> Result<Vec<Delivery>> {
            for _ in 0..200 {
                let mut out = Vec::new();
                {
                    let mut q = self.q.lock().unwrap();
                    while out.len() < max && q.front().is_some_and(|(at, _)| *at <= Instant::now()) {
                        let (_, txid) = q.pop_front().unwrap();
                        out.push(Delivery { partition: "0".into(), txid, lease: None });
                    }
                }
                if !out.is_empty() {
                    return Ok(out);
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            Ok(Vec::new())
        }
        async fn ack(&self, d: Vec<Delivery>) -> Result<()> {
            self.acked.fetch_add(d.len() as u64, Ordering::Relaxed);
            Ok(())
        }
        fn ack_meaning(&self) -> &'static str {
            "memory"
        }
    }

    #[test]
    fn txids_of_this_run_only() {
        assert_eq!(message_number("bX", "bX-17"), Some(17));
        assert_eq!(message_number("bX", "bY-17"), None);
        assert_eq!(message_number("bX", "bX17"), None);
        assert_eq!(message_number("bX", "bX-"), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn measures_the_delay_between_produce_and_receipt() {
        let t = Arc::new(Mem { q: Mutex::new(VecDeque::new()), delay: Duration::from_millis(30), acked: 0.into() });
        // A leftover of an earlier run is acked and not counted.
        t.q.lock().unwrap().push_back((Instant::now(), "old-1".into()));
        let m = run(
            t.clone(),
            4,
            2,
            16,
            2,
            500,
            Duration::from_millis(400),
            Duration::from_secs(1),
            Duration::from_secs(2),
            10,
            false,
        )
        .await;
        assert_eq!(m.offered, 200);
        assert_eq!((m.produced, m.received, m.on_time, m.duplicates, m.foreign), (200, 200, 200, 0, 1));
        assert_eq!(m.errors, 0, "{:?}", m.first_error);
        assert_eq!(t.acked.load(Ordering::Relaxed), 201);
        let s = m.latency.summary();
        assert!(s.p50_us >= 30_000 && s.p99_us < 200_000, "{s:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lost_message_is_charged_up_to_the_cutoff() {
        struct Lossy(Mem);
        impl Target for Lossy {
            fn system(&self) -> &'static str {
                "lossy"
            }
            async fn setup(&self, _: &str, _: u32) -> Result<()> {
                Ok(())
            }
            async fn produce(&self, mut batch: Vec<Msg>) -> Result<()> {
                batch.retain(|m| !m.txid.ends_with("-7"));
                self.0.produce(batch).await
            }
            async fn consume(&self, max: usize) -> Result<Vec<Delivery>> {
                self.0.consume(max).await
            }
            async fn ack(&self, d: Vec<Delivery>) -> Result<()> {
                self.0.ack(d).await
            }
            fn ack_meaning(&self) -> &'static str {
                "lossy"
            }
        }
        let mem = Mem { q: Mutex::new(VecDeque::new()), delay: Duration::ZERO, acked: 0.into() };
        let grace = Duration::from_millis(500);
        let m = run(Arc::new(Lossy(mem)), 2, 1, 16, 1, 100, Duration::from_millis(200), grace, grace, 10, false).await;
        assert_eq!((m.offered, m.produced, m.received), (20, 20, 19));
        // Message 7 was due at 70 ms and is recorded at cutoff - due ≈ 630 ms.
        assert!(m.latency.summary().max_us >= 600_000, "{:?}", m.latency.summary());
    }
}
