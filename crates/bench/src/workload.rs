//! The workloads, generic over [`Target`]: closed-loop produce and consume
//! (each worker waits for its answer before the next request), and an
//! open-loop fixed rate step (requests due at scheduled instants, latency
//! from the due instant) that the ramp repeats at rising rates.

use crate::hist::Latency;
use crate::schedule::Schedule;
use crate::target::{Msg, Target};
use bytes::Bytes;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// When a closed-loop workload stops.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stop {
    /// After this many messages in total.
    Count(u64),
    /// After this long (requests in flight at the end still finish and count).
    Duration(Duration),
}

/// What one closed-loop run measured.
#[derive(Debug)]
pub struct Measured {
    pub msgs: u64,
    pub requests: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub secs: f64,
    pub latency: Latency,
}

impl Measured {
    pub fn rate(&self) -> f64 {
        if self.secs > 0.0 {
            self.msgs as f64 / self.secs
        } else {
            0.0
        }
    }
}

/// What one open-loop step measured.
#[derive(Debug)]
pub struct StepMeasured {
    pub rate: u64,
    pub secs: f64,
    pub offered: u64,
    /// Messages answered before the step's end + `drain`: what the system kept up with.
    pub delivered: u64,
    /// Messages answered later, within `grace` (their latency is in the histogram).
    pub answered_late: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    /// Requests sent more than 1 ms after they were due (all connections busy).
    pub behind: u64,
    /// Latency from the due instant to the answer (what a user sees).
    pub latency: Latency,
    /// Latency from the moment the request was sent (the system's service time).
    pub service: Latency,
}

/// Payload of `size` printable bytes, shared by every message of a run.
pub fn payload(size: usize) -> Bytes {
    const ALPHA: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    Bytes::from((0..size).map(|i| ALPHA[i % ALPHA.len()]).collect::<Vec<u8>>())
}

/// A prefix that makes transaction ids unique across runs against one server.
pub fn run_prefix() -> String {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    format!("b{:x}{:x}", t.as_secs(), t.subsec_nanos())
}

fn make_batch(prefix: &str, first: u64, n: u64, partition: u32, payload: &Bytes) -> Vec<Msg> {
    (first..first + n).map(|i| Msg { partition, txid: format!("{prefix}-{i}"), payload: payload.clone() }).collect()
}

/// Errors of a run: how many, and the first one's text.
#[derive(Default)]
pub(crate) struct ErrLog {
    count: AtomicU64,
    first: Mutex<Option<String>>,
}

impl ErrLog {
    pub(crate) fn note(&self, e: impl ToString) {
        if self.count.fetch_add(1, Ordering::Relaxed) == 0 {
            *self.first.lock().expect("error log lock") = Some(e.to_string());
        }
    }
    pub(crate) fn take(&self) -> (u64, Option<String>) {
        (self.count.load(Ordering::Relaxed), self.first.lock().expect("error log lock").clone())
    }
}

/// Wait for closed-loop workers that each return (latency, requests, time of
/// their last answer): the merged latency, the total, and the latest answer.
pub(crate) async fn join_workers(
    tasks: Vec<tokio::task::JoinHandle<(Latency, u64, Instant)>>,
    start: Instant,
    what: &str,
) -> (Latency, u64, Instant) {
    let (mut latency, mut requests, mut end) = (Latency::new(), 0, start);
    for t in tasks {
        let (l, r, last) = t.await.unwrap_or_else(|e| panic!("{what} worker panicked: {e}"));
        latency.merge(&l);
        requests += r;
        end = end.max(last);
    }
    (latency, requests, end)
}

/// A `\r` progress line on stderr, once a second, while the returned guard lives.
pub struct Progress {
    stop: Arc<AtomicBool>,
    handle: Option<tokio::task::JoinHandle<()>>,
}

impl Progress {
    pub fn start(label: String, counter: Arc<AtomicU64>, enabled: bool) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        if !enabled || !std::io::stderr().is_terminal() {
            return Progress { stop, handle: None };
        }
        let s = stop.clone();
        let handle = tokio::spawn(async move {
            let t0 = Instant::now();
            let mut last = 0u64;
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.tick().await;
            loop {
                tick.tick().await;
                if s.load(Ordering::Relaxed) {
                    break;
                }
                let now = counter.load(Ordering::Relaxed);
                let mut e = std::io::stderr().lock();
                let _ = write!(
                    e,
                    "\r[{label}] {:>6.1} s  {now:>10} msgs  {:>9} msg/s   ",
                    t0.elapsed().as_secs_f64(),
                    now - last
                );
                let _ = e.flush();
                last = now;
            }
        });
        Progress { stop, handle: Some(handle) }
    }

    pub async fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            h.abort();
            let _ = h.await;
            eprint!("\r{:80}\r", "");
        }
    }
}

/// Closed-loop produce: `workers` tasks each send a batch of `batch` messages
/// of `size` bytes and wait for the answer, round-robin over `partitions`.
/// Latency is per request.
pub async fn produce<T: Target>(
    target: Arc<T>,
    workers: usize,
    size: usize,
    batch: u64,
    partitions: u32,
    stop: Stop,
    progress: bool,
) -> Measured {
    let prefix: Arc<str> = run_prefix().into();
    let payload = payload(size);
    let next = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let errs = Arc::new(ErrLog::default());
    let prog = Progress::start("produce".into(), done.clone(), progress);
    let start = Instant::now();
    let deadline = match stop {
        Stop::Duration(d) => Some(start + d),
        Stop::Count(_) => None,
    };
    let mut tasks = Vec::with_capacity(workers);
    for w in 0..workers {
        let (target, prefix, payload, next, done, errs) =
            (target.clone(), prefix.clone(), payload.clone(), next.clone(), done.clone(), errs.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Latency::new();
            let mut requests = 0u64;
            let mut last = start;
            let mut part = (w as u32) % partitions.max(1);
            loop {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
                let first = next.fetch_add(batch, Ordering::Relaxed);
                let n = match stop {
                    Stop::Count(total) if first >= total => break,
                    Stop::Count(total) => batch.min(total - first),
                    Stop::Duration(_) => batch,
                };
                let msgs = make_batch(&prefix, first, n, part, &payload);
                part = (part + 1) % partitions.max(1);
                let t0 = Instant::now();
                match target.produce(msgs).await {
                    Ok(()) => {
                        last = Instant::now();
                        lat.record(last - t0);
                        requests += 1;
                        done.fetch_add(n, Ordering::Relaxed);
                    }
                    Err(e) => {
                        errs.note(e);
                        // Do not spin on a dead server.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
            (lat, requests, last)
        }));
    }
    let (latency, requests, end) = join_workers(tasks, start, "produce").await;
    prog.finish().await;
    let (errors, first_error) = errs.take();
    Measured {
        msgs: done.load(Ordering::Relaxed),
        requests,
        errors,
        first_error,
        secs: (end - start).as_secs_f64(),
        latency,
    }
}

/// Closed-loop consume: `workers` tasks each pop up to `batch` messages, ack
/// them in one batch, and go again. Latency is per pop + ack cycle. With
/// `expect = Some(n)` it stops after `n` messages (or `idle` without any
/// message: then it reports an error); with `None` it drains the queue and
/// stops at the first empty long poll. The time is measured to the last ack.
pub async fn consume<T: Target>(
    target: Arc<T>,
    workers: usize,
    batch: u64,
    expect: Option<u64>,
    idle: Duration,
    progress: bool,
) -> Measured {
    let taken = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let errs = Arc::new(ErrLog::default());
    let last_progress = Arc::new(Mutex::new(Instant::now()));
    let prog = Progress::start("consume".into(), done.clone(), progress);
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(workers);
    for _ in 0..workers {
        let (target, taken, done, errs, last_progress) =
            (target.clone(), taken.clone(), done.clone(), errs.clone(), last_progress.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Latency::new();
            let mut requests = 0u64;
            let mut last = start;
            loop {
                // With a target count, reserve this pop's share first, so
                // concurrent workers never take more than the count together.
                let want = match expect {
                    Some(n) => {
                        let r = taken.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                            (t < n).then(|| t + batch.min(n - t))
                        });
                        match r {
                            Ok(t) => batch.min(n - t),
                            Err(_) => break,
                        }
                    }
                    None => batch,
                };
                let t0 = Instant::now();
                let got = match target.consume(want as usize).await {
                    Ok(d) => d,
                    Err(e) => {
                        if expect.is_some() {
                            taken.fetch_sub(want, Ordering::Relaxed);
                        }
                        errs.note(e);
                        // A server that keeps failing ends the run like an empty queue does.
                        if last_progress.lock().expect("lock").elapsed() >= idle {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                let n = got.len() as u64;
                match expect {
                    // Give back the part of the reservation that did not arrive.
                    Some(_) => {
                        taken.fetch_sub(want - n.min(want), Ordering::Relaxed);
                    }
                    None => {
                        taken.fetch_add(n, Ordering::Relaxed);
                    }
                }
                if got.is_empty() {
                    match expect {
                        None => break,
                        Some(n) => {
                            let stalled = last_progress.lock().expect("lock").elapsed() >= idle;
                            if stalled {
                                errs.note(format!(
                                    "consume: no message for {idle:?} after {} of {n}",
                                    done.load(Ordering::Relaxed)
                                ));
                                break;
                            }
                            continue;
                        }
                    }
                }

                match target.ack(got).await {
                    Ok(()) => {
                        last = Instant::now();
                        lat.record(last - t0);
                        requests += 1;
                        done.fetch_add(n, Ordering::Relaxed);
                        *last_progress.lock().expect("lock") = last;
                    }
                    Err(e) => errs.note(e),
                }
            }
            (lat, requests, last)
        }));
    }
    let (latency, requests, end) = join_workers(tasks, start, "consume").await;
    prog.finish().await;
    let (errors, first_error) = errs.take();
    Measured {
        msgs: done.load(Ordering::Relaxed),
        requests,
        errors,
        first_error,
        secs: (end - start).as_secs_f64(),
        latency,
    }
}

/// Open loop at a fixed `rate` (msg/s) for `secs`: requests of `batch`
/// messages are due at [`Schedule::due`] instants, shared by `workers`
/// connections; each is measured from its due instant. A message counts as
/// delivered when its answer arrives before the step's end + `drain`; later
/// answers (up to `grace` after the end) still give their latency; requests
/// not answered by then are abandoned and recorded at the latency they had
/// reached (a lower bound).
#[allow(clippy::too_many_arguments)]
pub async fn open_loop<T: Target>(
    target: Arc<T>,
    workers: usize,
    size: usize,
    batch: u64,
    partitions: u32,
    rate: u64,
    secs: Duration,
    drain: Duration,
    grace: Duration,
    progress: bool,
) -> StepMeasured {
    let sched = Schedule::new(rate, batch);
    let offered = sched.requests_in(secs);
    let prefix: Arc<str> = run_prefix().into();
    let payload = payload(size);
    let done = Arc::new(AtomicU64::new(0));
    let errs = Arc::new(ErrLog::default());
    let prog = Progress::start(format!("{rate} msg/s"), done.clone(), progress);
    // Leave the workers a moment to be spawned before request 0 is due.
    let start = Instant::now() + Duration::from_millis(20);
    let on_time = start + secs + drain.min(grace);
    let cutoff = start + secs + grace;
    let tolerance = Duration::from_millis(1);
    let mut tasks = Vec::with_capacity(workers);
    for w in 0..workers as u64 {
        let (target, prefix, payload, done, errs) =
            (target.clone(), prefix.clone(), payload.clone(), done.clone(), errs.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Latency::new();
            let mut svc = Latency::new();
            let (mut delivered, mut late, mut behind) = (0u64, 0u64, 0u64);
            for i in Schedule::worker_requests(w, workers as u64, offered) {
                let due = start + sched.due(i);
                // tokio timers tick in whole milliseconds and round up: aim a
                // millisecond early; an early send is measured from the send.
                if let Some(early) = due.checked_sub(Duration::from_millis(1)) {
                    tokio::time::sleep_until(early.into()).await;
                }
                let sent = Instant::now();
                if sent >= cutoff {
                    lat.record(cutoff.saturating_duration_since(due));
                    continue;
                }
                if sched.is_behind(i, sent.saturating_duration_since(start), tolerance) {
                    behind += 1;
                }
                let from = due.min(sent);
                let msgs = make_batch(&prefix, i * batch, batch, (i % partitions.max(1) as u64) as u32, &payload);
                match tokio::time::timeout_at(cutoff.into(), target.produce(msgs)).await {
                    Ok(Ok(())) => {
                        let now = Instant::now();
                        lat.record(now - from);
                        svc.record(now - sent);
                        if now <= on_time {
                            delivered += batch;
                        } else {
                            late += batch;
                        }
                        done.fetch_add(batch, Ordering::Relaxed);
                    }
                    Ok(Err(e)) => errs.note(e),
                    Err(_) => lat.record(cutoff.saturating_duration_since(from)),
                }
            }
            (lat, svc, delivered, late, behind)
        }));
    }
    let mut latency = Latency::new();
    let mut service = Latency::new();
    let (mut delivered, mut answered_late, mut behind) = (0, 0, 0);
    for t in tasks {
        let (l, s, d, al, b) = t.await.expect("open-loop worker panicked");
        latency.merge(&l);
        service.merge(&s);
        delivered += d;
        answered_late += al;
        behind += b;
    }
    prog.finish().await;
    let (errors, first_error) = errs.take();
    StepMeasured {
        rate,
        secs: secs.as_secs_f64(),
        offered: offered * batch,
        delivered,
        answered_late,
        errors,
        first_error,
        behind,
        latency,
        service,
    }
}
