//! The `pipeline` workload: the take-work-commit step (take inputs, write one
//! output per input and consume the inputs, all in one atomic commit) on every
//! system that can do it atomically, behind [`PipelineTarget`]; and the
//! verifier that checks afterwards that every input went through exactly once.
//!
//! The run: feed `count` messages with unique txids over `partitions`
//! partitions (one feeding task per partition, so the feed order inside a
//! partition is the txid order), then `workers` tasks call
//! [`PipelineTarget::step`] in a loop until every input is consumed or the
//! duration passes. Measured: committed transactions/s, messages/s and the
//! latency of each committing step. Then [`verify`] reads the outputs and the
//! remaining inputs back.

use crate::hist::Latency;
use crate::target::{Msg, Result};
use crate::workload::{join_workers, payload, run_prefix, ErrLog, Progress};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One output as read back by [`PipelineTarget::outputs`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// Partition index of the output, `0..partitions`; the same as its input's.
    pub partition: u32,
    /// The txid of the input this output was made from.
    pub txid: String,
}

/// A system that can take inputs and commit their outputs plus their
/// consumption atomically. One value is shared by every worker (`&self`).
///
/// The contract the workload and the verifier rely on:
/// * [`setup`](Self::setup) gets a `name` that is fresh for every run (the
///   `--queue` value plus a run id, letters, digits and `-` only) and creates
///   an input and an output with `partitions` partitions for it. After it,
///   [`outputs`](Self::outputs) and [`remaining_inputs`](Self::remaining_inputs)
///   see this run's data only.
/// * [`feed`](Self::feed) writes a batch of inputs of ONE partition
///   (`Msg::partition`), durably in the sense of [`ack_meaning`](Self::ack_meaning),
///   and returns when the system said so. Batches of one partition are fed one
///   after the other, so the feed order in a partition is the call order.
/// * [`step`](Self::step) takes up to `max` available inputs, writes for each
///   one output in the same partition carrying the input's txid, and consumes
///   the inputs — outputs and consumption in ONE atomic commit: after a crash
///   either all of it happened or none of it. It returns how many inputs it
///   committed, `Ok(0)` when nothing was available (it may wait up to about a
///   second for work first). Many workers call it at once.
/// * [`outputs`](Self::outputs) returns every output of the run, grouped by
///   partition in ascending partition order, and inside a partition in the
///   order the system stored them (the order a reader of that partition sees).
/// * [`remaining_inputs`](Self::remaining_inputs) returns the txids of the
///   inputs not consumed (in any order).
/// * [`fifo_per_partition`](Self::fifo_per_partition) says whether the system
///   promises that a partition's outputs come out in its feed order; only then
///   is the order check a pass/fail check.
pub trait PipelineTarget: Send + Sync + 'static {
    /// Short name for reports: `baton`, `postgres`, `kafka`...
    fn system(&self) -> &'static str;

    /// What a successful commit guarantees, in one line, for the report.
    fn ack_meaning(&self) -> &'static str;

    /// Whether outputs in a partition are promised in the feed order of that partition.
    fn fifo_per_partition(&self) -> bool;

    /// Create the input and the output of this run (see the trait doc).
    fn setup(&self, name: &str, partitions: u32) -> impl Future<Output = Result<()>> + Send;

    /// Write inputs of one partition.
    fn feed(&self, batch: Vec<Msg>) -> impl Future<Output = Result<()>> + Send;

    /// Take up to `max` inputs and commit their outputs and their consumption atomically.
    fn step(&self, max: usize) -> impl Future<Output = Result<usize>> + Send;

    /// Every output of the run, in partition order, each partition in stored order.
    fn outputs(&self) -> impl Future<Output = Result<Vec<Output>>> + Send;

    /// The txids of the inputs still not consumed.
    fn remaining_inputs(&self) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// Latency of the commit alone (without taking the inputs), when the
    /// system's step is two requests and the commit can be timed apart.
    fn commit_latency(&self) -> Option<Latency> {
        None
    }

    /// Forget the commit latencies so far (the warm-up is over).
    fn reset_commit_latency(&self) {}
}

/// How a pipeline run is shaped.
#[derive(Clone, Debug)]
pub struct PipelineParams {
    pub name: String,
    pub partitions: u32,
    pub count: u64,
    /// Messages per feed call.
    pub feed_batch: u64,
    pub size: usize,
    pub workers: usize,
    /// Most inputs per step.
    pub batch: usize,
    /// The step phase stops after this long even if inputs remain.
    pub duration: Duration,
    /// The step phase also stops after this long without a committed input.
    pub idle: Duration,
    /// Open loop: start steps at this many per second overall (the
    /// workers share one schedule), latency counted from each step's due
    /// instant, so a system that falls behind shows it. None: closed loop.
    pub rate: Option<f64>,
    /// Steps due in the first this long run but are not in the latencies
    /// (connections, first reads of each partition, output partitions made on
    /// first push): the figures are the steady state. Throughput counts the whole run.
    pub warmup: Duration,
    pub progress: bool,
}

/// What a pipeline run measured and what the verifier found.
#[derive(Debug)]
pub struct PipelineMeasured {
    pub fed: u64,
    pub feed_secs: f64,
    /// Messages committed (consumed with their outputs written).
    pub msgs: u64,
    /// Committing steps (transactions).
    pub transactions: u64,
    pub secs: f64,
    pub errors: u64,
    pub first_error: Option<String>,
    /// Latency of each step that committed at least one input (open loop:
    /// from its due instant).
    pub latency: Latency,
    /// The target's commit-only latency, when it measures one.
    pub commit_latency: Option<Latency>,
    /// None when the read-back for the verifier failed (then `first_error` says why).
    pub verdict: Option<Verdict>,
}

/// The verifier's findings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    pub fed: u64,
    pub outputs: u64,
    pub remaining: u64,
    /// Fed txids in neither the outputs nor the remaining inputs.
    pub lost: Vec<String>,
    /// Fed txids seen more than once (outputs and remaining inputs together).
    pub duplicated: Vec<String>,
    /// Txids that were never fed.
    pub unknown: Vec<String>,
    /// Outputs in another partition than their input.
    pub wrong_partition: Vec<String>,
    /// Adjacent output pairs in a partition whose inputs were fed in the other order.
    pub out_of_order: Vec<(String, String)>,
    pub fifo_promised: bool,
}

impl Verdict {
    /// Every fed txid exactly once in outputs or remaining inputs, nothing else, right partition.
    pub fn exactly_once(&self) -> bool {
        self.lost.is_empty() && self.duplicated.is_empty() && self.unknown.is_empty() && self.wrong_partition.is_empty()
    }

    /// The order check: Some(pass) when FIFO per partition is promised, None otherwise.
    pub fn order(&self) -> Option<bool> {
        self.fifo_promised.then_some(self.out_of_order.is_empty())
    }

    /// One line for the report.
    pub fn summary(&self) -> String {
        fn few<T: std::fmt::Debug>(v: &[T]) -> String {
            if v.is_empty() {
                String::new()
            } else {
                format!(" e.g. {:?}", &v[..v.len().min(3)])
            }
        }
        let eo = if self.exactly_once() { "ok" } else { "FAILED" };
        let order = match self.order() {
            Some(true) => "ok".to_string(),
            Some(false) => {
                format!("FAILED ({} out-of-order pairs{})", self.out_of_order.len(), few(&self.out_of_order))
            }
            None => format!("not promised ({} out-of-order pairs seen)", self.out_of_order.len()),
        };
        format!(
            "exactly-once {eo}: {} fed, {} outputs, {} remaining, {} lost{}, {} duplicated{}, {} unknown{}, \
             {} in the wrong partition{}; order per partition: {order}",
            self.fed,
            self.outputs,
            self.remaining,
            self.lost.len(),
            few(&self.lost),
            self.duplicated.len(),
            few(&self.duplicated),
            self.unknown.len(),
            few(&self.unknown),
            self.wrong_partition.len(),
            few(&self.wrong_partition),
        )
    }
}

/// Check the read-back of a run. `fed` lists (partition, txid) per partition
/// in feed order (partitions may interleave; only the order inside one
/// partition matters). `outputs` holds each partition's outputs in stored
/// order (partitions may interleave here too).
pub fn verify(fed: &[(u32, String)], outputs: &[Output], remaining: &[String], fifo_promised: bool) -> Verdict {
    // txid -> (partition, position in its partition's feed order)
    let mut pos: HashMap<&str, (u32, u64)> = HashMap::with_capacity(fed.len());
    let mut next_pos: HashMap<u32, u64> = HashMap::new();
    let mut v = Verdict {
        fed: fed.len() as u64,
        outputs: outputs.len() as u64,
        remaining: remaining.len() as u64,
        fifo_promised,
        ..Verdict::default()
    };
    for (p, t) in fed {
        let n = next_pos.entry(*p).or_insert(0);
        pos.insert(t.as_str(), (*p, *n));
        *n += 1;
    }
    let mut seen: HashMap<&str, u32> = HashMap::with_capacity(fed.len());
    for t in outputs.iter().map(|o| o.txid.as_str()).chain(remaining.iter().map(|s| s.as_str())) {
        *seen.entry(t).or_insert(0) += 1;
    }
    for (_, t) in fed {
        match seen.get(t.as_str()) {
            None => v.lost.push(t.clone()),
            Some(1) => {}
            Some(_) => v.duplicated.push(t.clone()),
        }
    }
    let mut unknown: Vec<String> = seen.keys().filter(|t| !pos.contains_key(*t)).map(|t| t.to_string()).collect();
    unknown.sort();
    v.unknown = unknown;
    // The previous output of each partition (its feed position and txid):
    // outputs need not be grouped by partition for this check.
    let mut prev: HashMap<u32, (u64, &str)> = HashMap::new();
    for o in outputs {
        let Some(&(fp, fpos)) = pos.get(o.txid.as_str()) else { continue };
        if fp != o.partition {
            v.wrong_partition.push(o.txid.clone());
            continue;
        }
        if let Some(&(ppos, pt)) = prev.get(&o.partition) {
            if ppos > fpos {
                v.out_of_order.push((pt.to_string(), o.txid.clone()));
            }
        }
        prev.insert(o.partition, (fpos, o.txid.as_str()));
    }
    v
}

/// Run the whole pipeline workload against `t`: setup, feed, steps, verify.
pub async fn run<P: PipelineTarget>(t: Arc<P>, pp: &PipelineParams) -> Result<PipelineMeasured> {
    let parts = pp.partitions.max(1);
    t.setup(&pp.name, parts).await?;
    let prefix = run_prefix();
    let body = payload(pp.size);
    let errs = Arc::new(ErrLog::default());

    // Feed: message i goes to partition i % parts; one task per partition
    // sends its messages in txid order, so that is the feed order.
    let feed_start = Instant::now();
    let mut feeders = Vec::new();
    for p in 0..parts {
        let mine: Vec<u64> = (p as u64..pp.count).step_by(parts as usize).collect();
        let (t, prefix, body, errs) = (t.clone(), prefix.clone(), body.clone(), errs.clone());
        let fb = pp.feed_batch.max(1) as usize;
        feeders.push(tokio::spawn(async move {
            let mut fed = Vec::with_capacity(mine.len());
            for chunk in mine.chunks(fb) {
                let batch: Vec<Msg> = chunk
                    .iter()
                    .map(|i| Msg { partition: p, txid: format!("{prefix}-{i}"), payload: body.clone() })
                    .collect();
                let txids: Vec<String> = batch.iter().map(|m| m.txid.clone()).collect();
                match t.feed(batch).await {
                    Ok(()) => fed.extend(txids.into_iter().map(|x| (p, x))),
                    // A failed feed stops this partition: what comes after
                    // would not follow a known order.
                    Err(e) => {
                        errs.note(format!("feed: {e}"));
                        break;
                    }
                }
            }
            fed
        }));
    }
    let mut fed = Vec::with_capacity(pp.count as usize);
    for f in feeders {
        fed.extend(f.await.expect("feeder panicked"));
    }
    let feed_secs = feed_start.elapsed().as_secs_f64();
    let total = fed.len() as u64;

    // Steps.
    let done = Arc::new(AtomicU64::new(0));
    let last_progress = Arc::new(Mutex::new(Instant::now()));
    let prog = Progress::start("pipeline".into(), done.clone(), pp.progress);
    let start = Instant::now();
    let deadline = start + pp.duration;
    let tickets = Arc::new(AtomicU64::new(0));
    let warm_end = start + pp.warmup;
    let warm = (!pp.warmup.is_zero()).then(|| {
        let t = t.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(warm_end.into()).await;
            t.reset_commit_latency();
        })
    });
    let mut workers = Vec::new();
    for _ in 0..pp.workers.max(1) {
        let (t, done, errs, last_progress) = (t.clone(), done.clone(), errs.clone(), last_progress.clone());
        let (batch, idle, rate, tickets) = (pp.batch.max(1), pp.idle, pp.rate, tickets.clone());
        workers.push(tokio::spawn(async move {
            let mut lat = Latency::new();
            let (mut txs, mut last) = (0u64, start);
            while done.load(Ordering::Relaxed) < total && Instant::now() < deadline {
                let t0 = match rate {
                    Some(r) => {
                        let k = tickets.fetch_add(1, Ordering::Relaxed);
                        let due = start + Duration::from_secs_f64(k as f64 / r);
                        tokio::time::sleep_until(due.into()).await;
                        due
                    }
                    None => Instant::now(),
                };
                match t.step(batch).await {
                    Ok(0) => {
                        if last_progress.lock().expect("lock").elapsed() >= idle {
                            break;
                        }
                    }
                    Ok(n) => {
                        last = Instant::now();
                        if t0 >= warm_end {
                            lat.record(last - t0);
                        }
                        txs += 1;
                        done.fetch_add(n as u64, Ordering::Relaxed);
                        *last_progress.lock().expect("lock") = last;
                    }
                    Err(e) => {
                        errs.note(format!("step: {e}"));
                        if last_progress.lock().expect("lock").elapsed() >= idle {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
            (lat, txs, last)
        }));
    }
    let (latency, transactions, end) = join_workers(workers, start, "pipeline").await;
    if let Some(w) = warm {
        w.abort();
    }
    prog.finish().await;
    let msgs = done.load(Ordering::Relaxed);

    let verdict = match (t.outputs().await, t.remaining_inputs().await) {
        (Ok(out), Ok(rem)) => Some(verify(&fed, &out, &rem, t.fifo_per_partition())),
        (Err(e), _) | (_, Err(e)) => {
            errs.note(format!("read-back: {e}"));
            None
        }
    };
    let (errors, first_error) = errs.take();
    Ok(PipelineMeasured {
        fed: total,
        feed_secs,
        msgs,
        transactions,
        secs: (end - start).as_secs_f64(),
        errors,
        first_error,
        latency,
        commit_latency: t.commit_latency(),
        verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed() -> Vec<(u32, String)> {
        // Two partitions, interleaved as the feeders would be.
        vec![(0, "a0".into()), (1, "b0".into()), (0, "a1".into()), (1, "b1".into()), (0, "a2".into())]
    }

    fn out(p: u32, t: &str) -> Output {
        Output { partition: p, txid: t.into() }
    }

    #[test]
    fn a_clean_run_passes() {
        let o = vec![out(0, "a0"), out(0, "a1"), out(1, "b0")];
        let v = verify(&fed(), &o, &["a2".into(), "b1".into()], true);
        assert!(v.exactly_once(), "{v:?}");
        assert_eq!(v.order(), Some(true));
        assert_eq!((v.fed, v.outputs, v.remaining), (5, 3, 2));
        assert!(v.summary().starts_with("exactly-once ok"), "{}", v.summary());
    }

    #[test]
    fn catches_a_loss() {
        let o = vec![out(0, "a0"), out(0, "a1"), out(1, "b0"), out(1, "b1")];
        let v = verify(&fed(), &o, &[], true);
        assert!(!v.exactly_once());
        assert_eq!(v.lost, vec!["a2".to_string()]);
        assert!(v.summary().contains("FAILED"), "{}", v.summary());
    }

    #[test]
    fn catches_a_duplicate_in_outputs_and_across_outputs_and_inputs() {
        let o = vec![out(0, "a0"), out(0, "a1"), out(0, "a1"), out(0, "a2"), out(1, "b0"), out(1, "b1")];
        let v = verify(&fed(), &o, &[], true);
        assert_eq!(v.duplicated, vec!["a1".to_string()]);
        assert!(!v.exactly_once());
        // Committed output whose input is still there: also a duplicate.
        let o = vec![out(0, "a0"), out(0, "a1"), out(0, "a2"), out(1, "b0"), out(1, "b1")];
        let v = verify(&fed(), &o, &["b1".into()], true);
        assert_eq!(v.duplicated, vec!["b1".to_string()]);
        assert!(!v.exactly_once());
    }

    #[test]
    fn catches_an_out_of_order_pair_only_as_a_failure_when_promised() {
        let o = vec![out(0, "a1"), out(0, "a0"), out(0, "a2"), out(1, "b0"), out(1, "b1")];
        let v = verify(&fed(), &o, &[], true);
        assert!(v.exactly_once(), "order is a separate check: {v:?}");
        assert_eq!(v.out_of_order, vec![("a1".to_string(), "a0".to_string())]);
        assert_eq!(v.order(), Some(false));
        let v = verify(&fed(), &o, &[], false);
        assert_eq!(v.order(), None);
        assert!(v.summary().contains("not promised (1 out-of-order pairs seen)"), "{}", v.summary());
    }

    #[test]
    fn order_is_checked_per_partition_even_when_partitions_interleave() {
        let o = vec![out(0, "a0"), out(1, "b1"), out(0, "a2"), out(1, "b0"), out(0, "a1")];
        let v = verify(&fed(), &o, &[], true);
        assert_eq!(
            v.out_of_order,
            vec![("b1".to_string(), "b0".to_string()), ("a2".to_string(), "a1".to_string())],
            "{v:?}"
        );
    }

    #[test]
    fn order_does_not_compare_across_partitions() {
        // b0 is fed before a1 overall, but they are in different partitions.
        let o = vec![out(0, "a0"), out(0, "a1"), out(0, "a2"), out(1, "b0"), out(1, "b1")];
        let v = verify(&fed(), &o, &[], true);
        assert_eq!(v.order(), Some(true), "{v:?}");
    }

    /// An in-memory pipeline: `dup_every` makes every n-th step commit one output twice.
    struct Mem {
        parts: Mutex<Vec<std::collections::VecDeque<String>>>,
        out: Mutex<Vec<Vec<String>>>,
        steps: AtomicU64,
        dup_every: Option<u64>,
        step_delay: Duration,
    }

    impl Mem {
        fn new(dup_every: Option<u64>, step_delay: Duration) -> Mem {
            Mem {
                parts: Mutex::new(Vec::new()),
                out: Mutex::new(Vec::new()),
                steps: AtomicU64::new(0),
                dup_every,
                step_delay,
            }
        }
    }

    impl PipelineTarget for Mem {
        fn system(&self) -> &'static str {
            "mem"
        }
        fn ack_meaning(&self) -> &'static str {
            "in memory"
        }
        fn fifo_per_partition(&self) -> bool {
            true
        }
        async fn setup(&self, _name: &str, partitions: u32) -> Result<()> {
            *self.parts.lock().unwrap() = vec![Default::default(); partitions as usize];
            *self.out.lock().unwrap() = vec![Vec::new(); partitions as usize];
            Ok(())
        }
        async fn feed(&self, batch: Vec<Msg>) -> Result<()> {
            let p = batch[0].partition as usize;
            assert!(batch.iter().all(|m| m.partition as usize == p), "one partition per feed");
            self.parts.lock().unwrap()[p].extend(batch.into_iter().map(|m| m.txid));
            Ok(())
        }
        async fn step(&self, max: usize) -> Result<usize> {
            tokio::time::sleep(self.step_delay).await;
            let n = self.steps.fetch_add(1, Ordering::Relaxed) + 1;
            let mut parts = self.parts.lock().unwrap();
            let Some(p) = (0..parts.len()).find(|&p| !parts[p].is_empty()) else { return Ok(0) };
            let k = max.min(parts[p].len());
            let taken: Vec<String> = parts[p].drain(..k).collect();
            let mut out = self.out.lock().unwrap();
            if self.dup_every.is_some_and(|d| n.is_multiple_of(d)) {
                out[p].push(taken[0].clone());
            }
            out[p].extend(taken);
            Ok(k)
        }
        async fn outputs(&self) -> Result<Vec<Output>> {
            let out = self.out.lock().unwrap();
            Ok(out
                .iter()
                .enumerate()
                .flat_map(|(p, v)| v.iter().map(move |t| Output { partition: p as u32, txid: t.clone() }))
                .collect())
        }
        async fn remaining_inputs(&self) -> Result<Vec<String>> {
            Ok(self.parts.lock().unwrap().iter().flatten().cloned().collect())
        }
    }

    fn params(count: u64, duration: Duration) -> PipelineParams {
        PipelineParams {
            name: "t".into(),
            partitions: 4,
            count,
            feed_batch: 7,
            size: 8,
            workers: 3,
            batch: 5,
            duration,
            idle: Duration::from_secs(2),
            progress: false,
            rate: None,
            warmup: Duration::ZERO,
        }
    }

    /// Steps due in the warm-up are run and counted but not in the latencies.
    #[tokio::test]
    async fn steps_in_the_warm_up_are_not_in_the_latencies() {
        let mut pp = params(1000, Duration::from_secs(30));
        pp.rate = Some(400.0);
        pp.warmup = Duration::from_millis(250);
        let m = run(Arc::new(Mem::new(None, Duration::ZERO)), &pp).await.unwrap();
        assert_eq!((m.msgs, m.errors), (1000, 0));
        let warm = m.transactions - m.latency.count();
        assert!(
            (80..=120).contains(&warm),
            "about 100 of {} steps were due in 250 ms at 400/s: {warm}",
            m.transactions
        );
    }

    /// Paced steps cannot finish before their schedule: 1000 messages in
    /// steps of at most 5 at 400 steps/s is at least 200 steps, 0.5 s.
    #[tokio::test]
    async fn a_paced_run_keeps_to_its_schedule() {
        let mut pp = params(1000, Duration::from_secs(30));
        pp.rate = Some(400.0);
        let t0 = Instant::now();
        let m = run(Arc::new(Mem::new(None, Duration::ZERO)), &pp).await.unwrap();
        assert_eq!((m.msgs, m.errors), (1000, 0));
        assert!(t0.elapsed() >= Duration::from_millis(490), "ran ahead of its schedule: {:?}", t0.elapsed());
        assert!(m.verdict.unwrap().exactly_once());
    }

    #[tokio::test]
    async fn the_workload_runs_to_completion_and_verifies() {
        let m = run(Arc::new(Mem::new(None, Duration::ZERO)), &params(1000, Duration::from_secs(30))).await.unwrap();
        assert_eq!((m.fed, m.msgs, m.errors), (1000, 1000, 0));
        assert!(m.transactions >= 200, "batches of at most 5: {}", m.transactions);
        assert_eq!(m.latency.count(), m.transactions);
        let v = m.verdict.unwrap();
        assert!(v.exactly_once() && v.order() == Some(true), "{}", v.summary());
    }

    #[tokio::test]
    async fn the_workload_reports_a_duplicate_the_target_made() {
        let m = run(Arc::new(Mem::new(Some(10), Duration::ZERO)), &params(500, Duration::from_secs(30))).await.unwrap();
        let v = m.verdict.unwrap();
        assert!(!v.exactly_once(), "{}", v.summary());
        assert!(!v.duplicated.is_empty());
    }

    #[tokio::test]
    async fn a_run_cut_short_by_the_duration_leaves_inputs_that_still_verify() {
        let slow = Duration::from_millis(20);
        let m = run(Arc::new(Mem::new(None, slow)), &params(5000, Duration::from_millis(300))).await.unwrap();
        let v = m.verdict.unwrap();
        assert!(m.msgs < 5000 && v.remaining == 5000 - m.msgs, "{} done, {}", m.msgs, v.summary());
        assert!(v.exactly_once() && v.order() == Some(true), "{}", v.summary());
    }

    #[test]
    fn catches_unknown_and_wrong_partition() {
        let o = vec![out(0, "a0"), out(0, "a1"), out(0, "a2"), out(0, "b0"), out(1, "b1"), out(1, "zz")];
        let v = verify(&fed(), &o, &[], true);
        assert_eq!(v.unknown, vec!["zz".to_string()]);
        assert_eq!(v.wrong_partition, vec!["b0".to_string()]);
        assert!(!v.exactly_once());
    }
}
