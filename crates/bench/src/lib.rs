//! `baton bench`: the benchmark driver.
//!
//! Workloads run against a [`Target`], chosen with `--target`: Baton over
//! HTTP, or a system people would pick instead (RabbitMQ, NATS JetStream,
//! Redis Streams, PostgreSQL in `peers`; Kafka in `kafka`), behind the same
//! trait, so every system runs the same workload code:
//!
//! * `produce`: closed loop, N workers, each waits for its answer; msg/s and
//!   per-request latency percentiles.
//! * `consume`: closed loop, pop a batch then ack it; msg/s.
//! * `fixed`: open loop at one rate, latency from each request's due instant.
//! * `ramp`: `fixed` steps at rising rates until p99 exceeds the limit or
//!   fewer than 97 % of the offered messages are delivered; reports the
//!   highest rate held.
//! * `pipeline`: take inputs, commit their outputs and their consumption in
//!   one atomic step ([`pipeline::PipelineTarget`]), then verify exactly-once
//!   and per-partition order; only on systems that can do it atomically.
//! * `--quick`: a small produce + consume + fixed-rate run against a Baton it
//!   starts itself; a smoke test of the whole driver in a few seconds.
//! * `storage <scenario>` ([`storage`]): how storage scales with what is stored
//!   (fill, checkpoint, restart, partitions), each on servers it starts from `--exe`.
//!
//! Results go to stdout as a markdown table and, with `--json-out`, as one
//! JSON line per result.

pub mod baton;
pub mod baton_pipeline;
pub mod cluster;
pub mod hist;
pub mod kafka;
pub mod peers;
pub mod pipeline;
pub mod report;
pub mod schedule;
pub mod spawn;
pub mod storage;
pub mod target;
pub mod workload;

use crate::baton::BatonHttp;
use crate::pipeline::{PipelineParams, PipelineTarget};
use crate::report::{Params, PipelineCheck, Row};
use crate::schedule::{next_rate, step_held};
use crate::target::Target;
use crate::workload::{Measured, StepMeasured, Stop};
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// Closed-loop push: each worker waits for its 201 before the next request.
    Produce,
    /// Closed-loop pop + ack of what is in the queue (or --count messages).
    Consume,
    /// Open-loop push at --rate msg/s for --duration seconds.
    Fixed,
    /// Open-loop steps from --rate up by --factor until p99 or delivery fails.
    Ramp,
    /// Feed --count inputs, then --workers take up to --batch each and commit outputs + consumption
    /// atomically until all are done (or --duration passes); then verify exactly-once and order.
    Pipeline,
    /// Open loop at --rate for --duration with consumers running: latency from each message's due
    /// instant until a consumer receives it (produce → consume end to end; kafka::e2e).
    E2e,
}

/// The system `baton bench` measures.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum TargetKind {
    /// Baton over its HTTP API (--url).
    Baton,
    /// Baton over the Kafka wire protocol.
    BatonKafka,
    /// Apache Kafka.
    Kafka,
    /// RabbitMQ: quorum queues, publisher confirms, manual acks.
    Rabbitmq,
    /// NATS JetStream: file-storage streams, durable pull consumers, explicit acks.
    Nats,
    /// Redis Streams: XADD, consumer group XREADGROUP + XACK, appendonly.
    Redis,
    /// PostgreSQL: a queue table, SELECT ... FOR UPDATE SKIP LOCKED, DELETE on ack.
    Postgres,
}

/// The body of a Baton push.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushBody {
    Json,
    Binary,
}

/// Benchmarks with flags of their own.
#[derive(Subcommand, Debug, Clone)]
pub enum BenchCommand {
    /// Storage scaling (issue 18): fill, checkpoint, restart, partitions; servers started from --exe.
    Storage(storage::StorageArgs),
    /// Failover (issue 14): three members started from --exe, the leader SIGKILLed --kills times;
    /// from each SIGKILL to the first push answered 201 through a surviving member.
    Failover(cluster::FailoverArgs),
}

#[derive(Args, Debug, Clone)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: Option<BenchCommand>,
    /// What to run (not needed with --quick).
    #[arg(value_enum, required_unless_present = "quick")]
    pub workload: Option<Workload>,
    /// Small produce + consume + fixed-rate run against a Baton started here; finishes in seconds.
    #[arg(long)]
    pub quick: bool,
    /// The system to measure. --quick and --spawn are Baton only.
    #[arg(long, value_enum, default_value_t = TargetKind::Baton)]
    pub target: TargetKind,
    /// Base URL of the Baton HTTP API.
    #[arg(long, default_value = "http://127.0.0.1:6632")]
    pub url: String,
    /// Address of a --target other than baton. Defaults, matching scripts/peers/<system>.sh:
    /// rabbitmq amqp://guest:guest@127.0.0.1:55672/%2f, nats nats://127.0.0.1:54222,
    /// redis redis://127.0.0.1:56379/, postgres "host=127.0.0.1 port=55432 user=postgres dbname=postgres".
    #[arg(long)]
    pub addr: Option<String>,
    /// Start a Baton of our own (`<exe> serve`) in a temp dir on a free port, instead of --url.
    #[arg(long)]
    pub spawn: bool,
    /// Binary to start with --spawn / --quick (default: this executable).
    #[arg(long)]
    pub server_bin: Option<PathBuf>,
    /// Concurrent workers, one connection each [default: 8; 64 for fixed and ramp].
    #[arg(long)]
    pub workers: Option<usize>,
    /// How Baton pushes are sent: Queen's JSON body, or its binary body (`QPB1`: lengths
    /// instead of JSON around the items; the same stored bytes).
    #[arg(long, value_enum, default_value_t = PushBody::Json)]
    pub push_body: PushBody,
    /// Payload bytes per message (printable ASCII, sent as a JSON string).
    #[arg(long, default_value_t = 256)]
    pub size: usize,
    /// Messages per push request; for consume, messages per pop; for pipeline, most inputs per step.
    #[arg(long, default_value_t = 1)]
    pub batch: u64,
    /// Stop after this many messages (produce); consume exactly this many (consume); inputs to feed (pipeline) [10000].
    #[arg(long)]
    pub count: Option<u64>,
    /// Seconds: length of a produce run [default 10], of a fixed run [30], of each ramp step [10], most for the
    /// steps of a pipeline run [60].
    #[arg(long)]
    pub duration: Option<f64>,
    /// Partitions ("p0".."pN-1"); producers round-robin over them, consumers pop any.
    #[arg(long, default_value_t = 8)]
    pub partitions: u32,
    /// Queue name.
    #[arg(long, default_value = "bench")]
    pub queue: String,
    /// Append one JSON line per result to this file.
    #[arg(long)]
    pub json_out: Option<PathBuf>,
    /// Free-form label copied into the JSON lines (e.g. "run 2").
    #[arg(long)]
    pub label: Option<String>,
    /// Offered rate of `fixed`, first rate of `ramp`, msg/s.
    #[arg(long, default_value_t = 1000)]
    pub rate: u64,
    /// Rate factor between ramp steps.
    #[arg(long, default_value_t = 2.0)]
    pub factor: f64,
    /// Most ramp steps.
    #[arg(long, default_value_t = 20)]
    pub max_steps: u32,
    /// A step fails when p99 latency exceeds this (ms); also how long a step waits for late answers.
    #[arg(long, default_value_t = 5000)]
    pub p99_limit_ms: u64,
    /// A step fails when fewer than this fraction of the offered messages are delivered
    /// (answered before the step's end + --drain-ms).
    #[arg(long, default_value_t = 0.97)]
    pub min_delivered: f64,
    /// Open loop: answers arriving this long after a step's end still count as delivered (ms).
    #[arg(long, default_value_t = 1000)]
    pub drain_ms: u64,
    /// Consume: produce this many messages first (with --batch and --workers).
    #[arg(long)]
    pub prefill: Option<u64>,
    /// Consume: long-poll time of each pop, ms; consume --count gives up after this long with no message (×10).
    #[arg(long, default_value_t = 1000)]
    pub wait_ms: u64,
    /// Pipeline: start steps at this many per second overall (open loop; latency from each
    /// step's due instant). Without it the pipeline runs closed loop, as fast as it goes.
    #[arg(long)]
    pub pipeline_rate: Option<f64>,
    /// Pipeline: steps due in the first this many seconds are run but left out of the
    /// latencies (connections, first reads of each partition, output partitions made on
    /// first push); throughput still counts the whole run.
    #[arg(long, default_value_t = 0.0)]
    pub warmup_secs: f64,
    /// Pipeline: messages per feed request (the feed comes before the measured steps).
    #[arg(long, default_value_t = 100)]
    pub feed_batch: u64,
    /// No progress line on stderr.
    #[arg(long)]
    pub no_progress: bool,
    #[command(flatten)]
    pub kafka: kafka::KafkaArgs,
}

/// Run the benchmark described by `a`; print results; fail if a closed-loop
/// run saw errors (or, with --quick, if anything at all looks wrong).
pub fn run(a: BenchArgs) -> Result<(), String> {
    match a.command {
        Some(BenchCommand::Storage(s)) => return storage::run(s),
        Some(BenchCommand::Failover(f)) => return storage::report(&f.common, |_| cluster::run(&f)),
        None => {}
    }
    if a.batch == 0 || a.size == 0 || a.partitions == 0 || a.workers == Some(0) || a.rate == 0 {
        return Err("--batch, --size, --partitions, --workers and --rate must be positive".into());
    }
    if a.factor.is_nan() || a.factor <= 1.0 {
        return Err("--factor must be greater than 1".into());
    }
    let rt =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| format!("tokio runtime: {e}"))?;
    let res = rt.block_on(run_async(a));
    // The results are printed by now. Dropping the runtime would wait without limit for
    // work still running, and a Kafka client's teardown inside librdkafka has been seen
    // to never end (about one Kafka-transactions pipeline run in twenty): bound it.
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
    res
}

async fn run_async(a: BenchArgs) -> Result<(), String> {
    if a.quick && a.target != TargetKind::Baton {
        return Err("--quick runs against Baton only".into());
    }
    if a.spawn && a.target != TargetKind::Baton {
        return Err("--spawn starts a Baton; start other systems with scripts/peers/<system>.sh start".into());
    }
    let workers = a.workers.unwrap_or(
        if matches!(a.workload, Some(Workload::Fixed | Workload::Ramp | Workload::E2e)) && !a.quick { 64 } else { 8 },
    );
    let pipeline = a.workload == Some(Workload::Pipeline);
    let pool = workers.max(8);
    match a.target {
        TargetKind::Baton => run_baton(&a, workers).await,
        // ---- Kafka arms: replaced by the Kafka engineer (crates/bench/src/kafka.rs). ----
        TargetKind::BatonKafka => kafka::run(&a, kafka::Flavor::BatonKafka, workers).await,
        TargetKind::Kafka => kafka::run(&a, kafka::Flavor::Kafka, workers).await,
        // ---- end of the Kafka arms ----
        TargetKind::Rabbitmq => {
            no_pipeline(pipeline, "rabbitmq")?;
            let t = peers::rabbitmq::Rabbit::connect(&peer_addr(&a, peers::rabbitmq::DEFAULT_ADDR), pool, a.wait_ms)
                .await?;
            run_with(Arc::new(t), &a, workers).await
        }
        TargetKind::Nats => {
            no_pipeline(pipeline, "nats")?;
            let t = peers::nats::Nats::connect(&peer_addr(&a, peers::nats::DEFAULT_ADDR), a.wait_ms).await?;
            run_with(Arc::new(t), &a, workers).await
        }
        TargetKind::Redis => {
            no_pipeline(pipeline, "redis")?;
            let t = peers::redis::RedisStreams::connect(&peer_addr(&a, peers::redis::DEFAULT_ADDR), pool, a.wait_ms)
                .await?;
            run_with(Arc::new(t), &a, workers).await
        }
        TargetKind::Postgres => {
            let t = peers::postgres::Postgres::connect(&peer_addr(&a, peers::postgres::DEFAULT_ADDR), pool, a.wait_ms)
                .await?;
            if pipeline {
                run_pipeline_with(Arc::new(t), &a, workers).await
            } else {
                run_with(Arc::new(t), &a, workers).await
            }
        }
    }
}

fn peer_addr(a: &BenchArgs, default: &str) -> String {
    a.addr.clone().unwrap_or_else(|| default.to_string())
}

fn no_pipeline(pipeline: bool, system: &str) -> Result<(), String> {
    if pipeline {
        return Err(format!(
            "pipeline: not built for {system}; it runs on baton, postgres and kafka, whose one commit covers \
             consuming the inputs and writing the outputs"
        ));
    }
    Ok(())
}

/// Baton over HTTP, at --url or started here (--spawn, --quick).
async fn run_baton(a: &BenchArgs, workers: usize) -> Result<(), String> {
    let mut spawned = if a.spawn || a.quick {
        let s = spawn::Spawned::start(a.server_bin.as_deref())?;
        eprintln!("bench: started baton (pid {}) at {}", s.pid(), s.url);
        Some(s)
    } else {
        None
    };
    let url = spawned.as_ref().map_or(a.url.clone(), |s| s.url.clone());
    let target =
        Arc::new(BatonHttp::new(&url, workers.max(8), a.wait_ms)?.binary_push(a.push_body == PushBody::Binary));
    if let Err(e) = target.wait_healthy(Duration::from_secs(30)).await {
        if let Some(s) = spawned.as_mut() {
            s.check_alive()?;
            return Err(format!("{e}; log:\n{}", s.log()));
        }
        return Err(e.to_string());
    }
    let res = if a.workload == Some(Workload::Pipeline) {
        let p = Arc::new(baton_pipeline::BatonPipeline::new(&url)?);
        run_pipeline_with(p, a, workers).await
    } else {
        run_with(target, a, workers).await
    };
    if let (Err(f), Some(s)) = (&res, spawned.as_mut()) {
        if s.check_alive().is_err() {
            return Err(format!("{f}; server log:\n{}", s.log()));
        }
    }
    res
}

/// Set up `target` and run the workload (or --quick) on it; print the
/// table, append the JSON lines; fail if the run had errors.
pub async fn run_with<T: Target>(target: Arc<T>, a: &BenchArgs, workers: usize) -> Result<(), String> {
    target.setup(&a.queue, a.partitions).await?;
    let res = if a.quick {
        quick(&target, a).await
    } else {
        let wl = a.workload.expect("clap requires a workload without --quick");
        run_workload(&target, a, wl, workers).await
    };
    finish(res, a)
}

/// Print and save the rows of a run; its failure (if any) becomes the error.
fn finish(res: Outcome, a: &BenchArgs) -> Result<(), String> {
    let (rows, failure) = match res {
        Ok(rows) => (rows, None),
        Err((rows, e)) => (rows, Some(e)),
    };
    println!("{}", report::markdown(&rows));
    if let Some(p) = &a.json_out {
        report::append_json(p, &rows).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    failure.map_or(Ok(()), Err)
}

/// The pipeline workload on `target`: feed, steps, verify; one row.
pub async fn run_pipeline_with<P: PipelineTarget>(target: Arc<P>, a: &BenchArgs, workers: usize) -> Result<(), String> {
    let count = a.count.unwrap_or(10_000);
    let pp = PipelineParams {
        name: format!("{}-{}", a.queue, workload::run_prefix()),
        partitions: a.partitions,
        count,
        feed_batch: a.feed_batch.max(1),
        size: a.size,
        workers,
        batch: a.batch as usize,
        duration: Duration::from_secs_f64(a.duration.unwrap_or(60.0)),
        idle: Duration::from_millis(a.wait_ms.saturating_mul(10).max(5000)),
        progress: !a.no_progress,
        rate: a.pipeline_rate,
        warmup: Duration::from_secs_f64(a.warmup_secs.max(0.0)),
    };
    let m = pipeline::run(target.clone(), &pp).await?;
    eprintln!("pipeline: fed {} messages in {:.2} s ({} per request)", m.fed, m.feed_secs, pp.feed_batch);
    let mut p = params(a, workers, a.batch);
    p.count = Some(count);
    p.queue = pp.name.clone();
    let mut r = Row::new("pipeline", target.system(), target.ack_meaning(), p);
    r.msgs = m.msgs;
    r.secs = m.secs;
    r.rate = if m.secs > 0.0 { m.msgs as f64 / m.secs } else { 0.0 };
    r.requests = m.transactions;
    r.errors = m.errors;
    r.label = a.label.clone();
    r.first_error = m.first_error.clone();
    r.set_latency(m.latency.summary());
    if let Some(c) = &m.commit_latency {
        let q = c.summary();
        let ms = |us: u64| us as f64 / 1000.0;
        eprintln!(
            "pipeline: commit alone: p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.2} ms ({} commits)",
            ms(q.p50_us),
            ms(q.p99_us),
            ms(q.p999_us),
            ms(q.max_us),
            q.count
        );
        r.commit = Some(q);
    }
    let mut problems = Vec::new();
    if m.errors > 0 {
        problems.push(format!("{} errors", m.errors));
    }
    if m.fed < count {
        problems.push(format!("fed {} of {count}", m.fed));
    }
    match &m.verdict {
        None => problems.push("the verifier could not read the outputs back".into()),
        Some(v) => {
            if !v.exactly_once() {
                problems.push("exactly-once check failed".into());
            }
            if v.order() == Some(false) {
                problems.push("order check failed".into());
            }
            r.pipeline = Some(PipelineCheck {
                transactions: m.transactions,
                transactions_per_sec: if m.secs > 0.0 { m.transactions as f64 / m.secs } else { 0.0 },
                fed: m.fed,
                remaining: v.remaining,
                exactly_once: v.exactly_once(),
                order: v.order(),
                out_of_order_pairs: v.out_of_order.len() as u64,
                summary: v.summary(),
            });
        }
    }
    let res =
        if problems.is_empty() { Ok(vec![r]) } else { Err((vec![r], format!("pipeline: {}", problems.join("; ")))) };
    finish(res, a)
}

type Outcome = Result<Vec<Row>, (Vec<Row>, String)>;

fn params(a: &BenchArgs, workers: usize, batch: u64) -> Params {
    Params {
        workers,
        size: a.size,
        batch,
        partitions: a.partitions,
        queue: a.queue.clone(),
        offered_rate: None,
        count: None,
        duration_secs: None,
    }
}

fn closed_row<T: Target>(t: &T, workload: &str, p: Params, m: &Measured, label: &Option<String>) -> Row {
    let mut r = Row {
        workload: workload.into(),
        system: t.system().into(),
        params: p,
        msgs: m.msgs,
        secs: m.secs,
        rate: m.rate(),
        requests: m.requests,
        errors: m.errors,
        p50_us: 0,
        p99_us: 0,
        p999_us: 0,
        max_us: 0,
        offered: None,
        answered_late: None,
        behind: None,
        held: None,
        service_p99_us: None,
        ack_meaning: t.ack_meaning().into(),
        pipeline: None,
        commit: None,
        label: label.clone(),
        first_error: m.first_error.clone(),
    };
    r.set_latency(m.latency.summary());
    r
}

fn open_row<T: Target>(t: &T, workload: &str, mut p: Params, m: &StepMeasured, a: &BenchArgs) -> Row {
    p.offered_rate = Some(m.rate);
    p.duration_secs = Some(m.secs);
    let lat = m.latency.summary();
    let held = step_held(m.offered, m.delivered, lat.p99_us, a.p99_limit_ms * 1000, a.min_delivered);
    let mut r = Row {
        workload: workload.into(),
        system: t.system().into(),
        params: p,
        msgs: m.delivered,
        secs: m.secs,
        rate: m.delivered as f64 / m.secs,
        requests: m.service.count(),
        errors: m.errors,
        p50_us: 0,
        p99_us: 0,
        p999_us: 0,
        max_us: 0,
        offered: Some(m.offered),
        answered_late: Some(m.answered_late),
        behind: Some(m.behind),
        held: Some(held),
        service_p99_us: Some(m.service.summary().p99_us),
        ack_meaning: t.ack_meaning().into(),
        pipeline: None,
        commit: None,
        label: a.label.clone(),
        first_error: m.first_error.clone(),
    };
    r.set_latency(lat);
    r
}

async fn run_workload<T: Target>(t: &Arc<T>, a: &BenchArgs, wl: Workload, workers: usize) -> Outcome {
    let progress = !a.no_progress;
    let mut rows = Vec::new();
    match wl {
        Workload::Produce => {
            let stop = match (a.count, a.duration) {
                (Some(n), _) => Stop::Count(n),
                (None, d) => Stop::Duration(Duration::from_secs_f64(d.unwrap_or(10.0))),
            };
            let m = workload::produce(t.clone(), workers, a.size, a.batch, a.partitions, stop, progress).await;
            let mut p = params(a, workers, a.batch);
            match stop {
                Stop::Count(n) => p.count = Some(n),
                Stop::Duration(d) => p.duration_secs = Some(d.as_secs_f64()),
            }
            rows.push(closed_row(&**t, "produce", p, &m, &a.label));
        }
        Workload::Consume => {
            if let Some(n) = a.prefill {
                let m = workload::produce(t.clone(), workers, a.size, a.batch, a.partitions, Stop::Count(n), progress)
                    .await;
                let mut p = params(a, workers, a.batch);
                p.count = Some(n);
                rows.push(closed_row(&**t, "prefill", p, &m, &a.label));
            }
            let idle = Duration::from_millis(a.wait_ms.saturating_mul(10));
            let m = workload::consume(t.clone(), workers, a.batch, a.count, idle, progress).await;
            let mut p = params(a, workers, a.batch);
            p.count = a.count;
            rows.push(closed_row(&**t, "consume", p, &m, &a.label));
        }
        Workload::Fixed => {
            let secs = Duration::from_secs_f64(a.duration.unwrap_or(30.0));
            let m = workload::open_loop(
                t.clone(),
                workers,
                a.size,
                a.batch,
                a.partitions,
                a.rate,
                secs,
                Duration::from_millis(a.drain_ms),
                Duration::from_millis(a.p99_limit_ms),
                progress,
            )
            .await;
            rows.push(open_row(&**t, "fixed", params(a, workers, a.batch), &m, a));
        }
        Workload::Ramp => {
            let secs = Duration::from_secs_f64(a.duration.unwrap_or(10.0));
            let mut rate = a.rate;
            let mut best: Option<Row> = None;
            for _ in 0..a.max_steps {
                let m = workload::open_loop(
                    t.clone(),
                    workers,
                    a.size,
                    a.batch,
                    a.partitions,
                    rate,
                    secs,
                    Duration::from_millis(a.drain_ms),
                    Duration::from_millis(a.p99_limit_ms),
                    progress,
                )
                .await;
                let row = open_row(&**t, "ramp", params(a, workers, a.batch), &m, a);
                eprintln!(
                    "ramp: {rate} msg/s offered, {:.0} delivered, {} answered after the drain, p99 {:.2} ms, {} sent late: {}",
                    row.rate,
                    m.answered_late,
                    row.p99_us as f64 / 1000.0,
                    m.behind,
                    if row.held == Some(true) { "held" } else { "not held" }
                );
                let held = row.held == Some(true);
                if held {
                    best = Some(row.clone());
                }
                rows.push(row);
                if !held {
                    break;
                }
                rate = next_rate(rate, a.factor);
            }
            match best {
                Some(mut b) => {
                    b.workload = "ramp-max".into();
                    rows.push(b);
                }
                None => return Err((rows, format!("ramp: not even the first rate ({}) held", a.rate))),
            }
        }
        Workload::Pipeline => return Err((rows, "pipeline runs through run_pipeline_with".into())),
        Workload::E2e => rows.push(kafka::e2e::row(t, a, workers).await),
    }
    let closed_errors: u64 = rows.iter().filter(|r| r.held.is_none()).map(|r| r.errors).sum();
    if closed_errors > 0 {
        return Err((rows, format!("{closed_errors} requests failed")));
    }
    Ok(rows)
}

/// The `--quick` run: every workload once, small, with its results checked.
async fn quick<T: Target>(t: &Arc<T>, a: &BenchArgs) -> Outcome {
    let progress = !a.no_progress;
    let mut rows = Vec::new();
    let mut problems = Vec::new();

    let m = workload::produce(t.clone(), 8, a.size, 1, a.partitions, Stop::Count(2000), progress).await;
    let mut p = params(a, 8, 1);
    p.count = Some(2000);
    rows.push(closed_row(&**t, "produce", p, &m, &a.label));
    let mut produced = m.msgs;

    let m = workload::produce(t.clone(), 4, a.size, 100, a.partitions, Stop::Count(10_000), progress).await;
    let mut p = params(a, 4, 100);
    p.count = Some(10_000);
    rows.push(closed_row(&**t, "produce", p, &m, &a.label));
    produced += m.msgs;
    if produced != 12_000 {
        problems.push(format!("produced {produced} of 12000 messages"));
    }

    let m = workload::consume(t.clone(), 4, 100, Some(produced), Duration::from_secs(10), progress).await;
    let mut p = params(a, 4, 100);
    p.count = Some(produced);
    rows.push(closed_row(&**t, "consume", p, &m, &a.label));
    if m.msgs != produced {
        problems.push(format!("consumed {} of {produced} messages", m.msgs));
    }

    let m = workload::open_loop(
        t.clone(),
        8,
        a.size,
        1,
        a.partitions,
        500,
        Duration::from_secs(2),
        Duration::from_secs(1),
        Duration::from_secs(5),
        progress,
    )
    .await;
    let row = open_row(&**t, "fixed", params(a, 8, 1), &m, a);
    if row.held != Some(true) {
        problems.push(format!(
            "fixed 500 msg/s did not hold: {} of {} delivered, p99 {} µs",
            m.delivered, m.offered, row.p99_us
        ));
    }
    rows.push(row);

    let errors: u64 = rows.iter().map(|r| r.errors).sum();
    if errors > 0 {
        problems.push(format!("{errors} requests failed"));
    }
    if problems.is_empty() {
        Ok(rows)
    } else {
        Err((rows, format!("quick: {}", problems.join("; "))))
    }
}
