//! `baton relay`: the PostgreSQL transactional outbox into Baton (HTTP) or
//! into Kafka (`--to-kafka`: Apache Kafka or Baton's Kafka door). Owns the
//! command line (every flag also a `BATON_RELAY_*` variable) and wires the
//! parts together: schema (init), lease / pg_lease (bucket ownership: Baton
//! locks, or PostgreSQL rows in Kafka mode), deliver / kafka_out (read,
//! publish, mark), metrics and status. Must never mark an event delivered
//! that the target did not answer for: that rule lives in deliver.rs and
//! kafka_out.rs, and nothing here works around it.

mod deliver;
mod kafka_out;
mod kafka_wire;
mod lease;
mod metrics;
mod pg;
mod pg_lease;
mod prune;
mod schema;
mod status;
mod targets;

use clap::{Args, Subcommand};
use std::sync::Arc;
use std::time::Duration;

pub use schema::Names;

#[derive(Args, Debug)]
pub struct RelayArgs {
    #[command(subcommand)]
    pub command: RelayCommand,
}

#[derive(Subcommand, Debug)]
pub enum RelayCommand {
    /// Create the outbox table, its triggers and config (idempotent).
    Init(InitArgs),
    /// Publish the outbox into Baton until stopped.
    Run(Box<RunArgs>),
    /// Print pending, parked and delivered counts (and bucket holders with --to) as JSON.
    Status(StatusArgs),
    /// List the parked events, one JSON line each.
    Parked(PgArgs),
    /// Put parked events back to pending: --id N or --all.
    Release(ReleaseArgs),
}

#[derive(Args, Debug, Clone)]
pub struct PgArgs {
    /// PostgreSQL connection string (postgres://user@host:port/db or key=value form).
    #[arg(long, env = "BATON_RELAY_PG")]
    pub pg: String,
    /// The outbox table.
    #[arg(long, env = "BATON_RELAY_TABLE", default_value = "baton_outbox")]
    pub table: String,
    /// PEM file of the CA(s) that signed PostgreSQL's certificate, trusted beside the
    /// system's roots. TLS is used when --pg says `sslmode=require`, and then always
    /// verified.
    #[arg(long, env = "BATON_RELAY_PG_CA_FILE")]
    pub pg_ca_file: Option<String>,
}

#[derive(Args, Debug)]
pub struct InitArgs {
    #[command(flatten)]
    pub pg: PgArgs,
    /// Buckets the aggregates are hashed into (kept from the first init).
    #[arg(long, env = "BATON_RELAY_BUCKETS", default_value_t = 256)]
    pub buckets: u32,
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub pg: PgArgs,
    /// Baton's HTTP address, or several members of a cluster, comma-separated (at most
    /// 16): one is used at a time, the next after one that does not answer.
    #[arg(long, env = "BATON_RELAY_TO", default_value = "http://127.0.0.1:6632", value_parser = targets::checked)]
    pub to: String,
    /// Publish into Kafka instead (host:port of Apache Kafka or Baton's Kafka door, or
    /// several brokers comma-separated: the next is asked when one does not answer):
    /// one Kafka transaction per bucket and round, exactly once for read_committed consumers.
    #[arg(long, env = "BATON_RELAY_TO_KAFKA", conflicts_with = "to", value_parser = kafka_brokers)]
    pub to_kafka: Option<String>,
    /// Kafka mode: partitions of the topics the relay creates (`<prefix>-<aggregate_type>`).
    #[arg(long, env = "BATON_RELAY_KAFKA_PARTITIONS", default_value_t = 8)]
    pub kafka_partitions: i32,
    /// Kafka mode: buckets published at once (each lane its own connections; a lane's
    /// buckets go one after another).
    #[arg(long, env = "BATON_RELAY_KAFKA_LANES", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub kafka_lanes: u16,
    /// Kafka mode: SASL/PLAIN user for a listener that demands it (with --kafka-sasl-password;
    /// PLAIN sends the password as is: use it on a private network or a TLS tunnel).
    #[arg(long, env = "BATON_RELAY_KAFKA_SASL_USER", requires = "kafka_sasl_password")]
    pub kafka_sasl_user: Option<String>,
    /// Kafka mode: the SASL/PLAIN password (better in the environment than on a command
    /// line that `ps` shows).
    #[arg(long, env = "BATON_RELAY_KAFKA_SASL_PASSWORD", requires = "kafka_sasl_user", hide_env_values = true)]
    pub kafka_sasl_password: Option<Secret>,
    /// This relay's name, the owner of its bucket locks (default: host-pid).
    #[arg(long, env = "BATON_RELAY_ID")]
    pub relay_id: Option<String>,
    /// Buckets to create if the table is not there yet (init's --buckets).
    #[arg(long, env = "BATON_RELAY_BUCKETS", default_value_t = 256)]
    pub buckets: u32,
    /// Queues (topics in Kafka mode) are `<prefix>-<aggregate_type>`; parked events also go to `<prefix>-parked`.
    #[arg(long, env = "BATON_RELAY_QUEUE_PREFIX", default_value = "outbox")]
    pub queue_prefix: String,
    /// Lifetime of a bucket lease (renewed every third of it).
    #[arg(long, env = "BATON_RELAY_LEASE_SECS", default_value_t = 10)]
    pub lease_secs: u64,
    /// Poll the table at least this often (LISTEN wakes it sooner).
    #[arg(long, env = "BATON_RELAY_POLL_MS", default_value_t = 500)]
    pub poll_ms: u64,
    /// Most events read per round (1..=100,000: Baton's push bound).
    #[arg(long, env = "BATON_RELAY_BATCH", default_value_t = 500, value_parser = clap::value_parser!(i64).range(1..=100_000))]
    pub batch: i64,
    /// Refusals of one event before it is parked.
    #[arg(long, env = "BATON_RELAY_MAX_ATTEMPTS", default_value_t = 5)]
    pub max_attempts: i32,
    /// Base of the exponential backoff after a refusal, in milliseconds.
    #[arg(long, env = "BATON_RELAY_BACKOFF_MS", default_value_t = 200)]
    pub backoff_ms: u64,
    /// Delete delivered rows older than this many seconds (a batch of 10,000 at a time,
    /// checked every min(this, 60) s). 0: keep them (prune them yourself).
    /// At most ten years (315,360,000).
    #[arg(long, env = "BATON_RELAY_PRUNE_AFTER_SECS", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=315_360_000))]
    pub prune_after_secs: u64,
    /// Where /metrics is served.
    #[arg(long, env = "BATON_RELAY_METRICS_ADDR", default_value = "127.0.0.1:6640")]
    pub metrics_addr: String,
    /// Test-only fault injection: wait this long inside each round, between reading the
    /// events and pushing them with the round's guards, so a test can stop the relay while
    /// it holds a guard that will go stale (tests/relay/relay.rs::paused_relay_is_fenced). 0: never.
    #[arg(long, env = "BATON_RELAY_TEST_ROUND_HOLD_MS", default_value_t = 0, hide = true)]
    pub test_round_hold_ms: u64,
    /// Test-only fault injection (Kafka mode): wait this long after a transaction's
    /// EndTxn(commit) answered and before its rows are marked, so a kill -9 lands between
    /// the two (tests/relay/relay_kafka.rs::kill9_mid_flight_exactly_once). 0: never.
    #[arg(long, env = "BATON_RELAY_TEST_COMMIT_HOLD_MS", default_value_t = 0, hide = true)]
    pub test_commit_hold_ms: u64,
}

/// `--to-kafka`: one to 16 `host:port`, comma-separated, none empty or twice.
fn kafka_brokers(list: &str) -> Result<String, String> {
    let b: Vec<&str> = list.split(',').map(str::trim).collect();
    if b.len() > targets::MAX_TARGETS {
        return Err(format!("{} brokers; at most {}", b.len(), targets::MAX_TARGETS));
    }
    for (i, a) in b.iter().enumerate() {
        let port = a.rsplit_once(':').and_then(|(h, p)| (!h.is_empty()).then_some(p));
        if port.and_then(|p| p.parse::<u16>().ok()).is_none() {
            return Err(format!("{a:?} is not host:port"));
        }
        if b[..i].contains(a) {
            return Err(format!("{a} named twice"));
        }
    }
    Ok(list.to_string())
}

/// A value never shown by `Debug` (a password among the arguments).
#[derive(Clone)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Secret, Self::Err> {
        Ok(Secret(s.to_string()))
    }
}

impl RunArgs {
    /// The SASL/PLAIN credentials of the Kafka mode, when given.
    pub(crate) fn kafka_sasl(&self) -> Option<baton_client::kafka::SaslPlain> {
        match (&self.kafka_sasl_user, &self.kafka_sasl_password) {
            (Some(user), Some(password)) => {
                Some(baton_client::kafka::SaslPlain { user: user.clone(), password: password.0.clone() })
            }
            _ => None,
        }
    }
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    pub pg: PgArgs,
    /// Baton's HTTP address (or members, comma-separated): when given, the bucket lock
    /// holders are shown too (without it, Kafka mode's lease holders from PostgreSQL, when
    /// there are any).
    #[arg(long, env = "BATON_RELAY_TO", value_parser = targets::checked)]
    pub to: Option<String>,
}

#[derive(Args, Debug)]
pub struct ReleaseArgs {
    #[command(flatten)]
    pub pg: PgArgs,
    /// The parked event to release.
    #[arg(long, env = "BATON_RELAY_RELEASE_ID", conflicts_with = "all", required_unless_present = "all")]
    pub id: Option<i64>,
    /// Release every parked event.
    #[arg(long, env = "BATON_RELAY_RELEASE_ALL")]
    pub all: bool,
}

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Entry point of `baton relay ...`.
pub fn run(a: RelayArgs) -> Result<(), Error> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        match a.command {
            RelayCommand::Init(i) => {
                let names = Names::new(&i.pg.table)?;
                let mut pg = pg::Pg::new(&i.pg)?.connect().await?;
                schema::init(&mut pg, &names, i.buckets).await?;
                let b = schema::buckets(&pg, &names).await?;
                println!("{}", serde_json::json!({"table": names.table, "buckets": b}));
                Ok(())
            }
            RelayCommand::Run(r) => run_relay(*r).await,
            RelayCommand::Status(s) => status::status(&s).await,
            RelayCommand::Parked(p) => status::parked(&p).await,
            RelayCommand::Release(r) => status::release(&r).await,
        }
    })
}

async fn run_relay(r: RunArgs) -> Result<(), Error> {
    if let Some(k) = r.to_kafka.clone() {
        return run_kafka(r, k).await;
    }
    let names = Names::new(&r.pg.table)?;
    let target = pg::Pg::new(&r.pg)?;
    let mut pg = target.connect().await?;
    schema::init(&mut pg, &names, r.buckets).await?;
    let buckets = schema::buckets(&pg, &names).await?;
    let relay_id = r.relay_id.clone().unwrap_or_else(|| format!("relay-{}", std::process::id()));
    let m = Arc::new(metrics::Metrics::default());
    let baton = Arc::new(targets::Targets::new(&r.to, Duration::from_secs(10), m.clone())?);
    metrics::serve(&r.metrics_addr, m.clone()).await?;
    let leases = Arc::new(lease::Leases::new(baton.clone(), relay_id.clone(), buckets, r.lease_secs, m.clone()));
    let maintain = tokio::spawn(leases.clone().maintain());
    let wake = Arc::new(tokio::sync::Notify::new());
    deliver::listen(target.clone(), names.channel(), wake.clone()).await?;
    tokio::spawn(metrics::gauges(target.clone(), names.clone(), m.clone()));
    tokio::spawn(prune::prune(target.clone(), names.clone(), r.prune_after_secs, m.clone()));
    eprintln!("baton relay {relay_id}: {buckets} buckets, table {}, to {}", names.table, r.to);
    let d = deliver::Deliverer { pg, baton, names, args: r, leases: leases.clone(), m };
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let held = Held::Baton(leases);
    tokio::select! {
        res = deliver::drive(d, wake) => res,
        _ = term.recv() => stop(&relay_id, maintain, &held).await,
        _ = tokio::signal::ctrl_c() => stop(&relay_id, maintain, &held).await,
    }
}

/// Kafka mode (D58): leases in PostgreSQL, one Kafka transaction per bucket and round.
async fn run_kafka(r: RunArgs, bootstrap: String) -> Result<(), Error> {
    let names = Names::new(&r.pg.table)?;
    let target = pg::Pg::new(&r.pg)?;
    let mut pg = target.connect().await?;
    schema::init(&mut pg, &names, r.buckets).await?;
    let buckets = schema::buckets(&pg, &names).await?;
    let relay_id = r.relay_id.clone().unwrap_or_else(|| format!("relay-{}", std::process::id()));
    let m = Arc::new(metrics::Metrics::default());
    metrics::serve(&r.metrics_addr, m.clone()).await?;
    let leases = Arc::new(pg_lease::PgLeases::new(
        target.clone(),
        names.clone(),
        relay_id.clone(),
        buckets,
        r.lease_secs,
        m.clone(),
    ));
    let maintain = tokio::spawn(leases.clone().maintain());
    let wake = Arc::new(tokio::sync::Notify::new());
    deliver::listen(target.clone(), names.channel(), wake.clone()).await?;
    tokio::spawn(metrics::gauges(target.clone(), names.clone(), m.clone()));
    tokio::spawn(prune::prune(target.clone(), names.clone(), r.prune_after_secs, m.clone()));
    probe_kafka(&bootstrap, r.kafka_sasl().as_ref()).await?;
    eprintln!("baton relay {relay_id}: {buckets} buckets, table {}, to kafka {bootstrap}", names.table);
    let out = kafka_out::KafkaOut::new(pg, names, r, bootstrap, leases.clone(), m);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let held = Held::Pg(leases);
    tokio::select! {
        res = deliver::drive(out, wake) => res,
        _ = term.recv() => stop(&relay_id, maintain, &held).await,
        _ = tokio::signal::ctrl_c() => stop(&relay_id, maintain, &held).await,
    }
}

/// One connection to the bootstrap at start: credentials the listener refuses (or SASL it
/// does not speak) stop the relay with the broker's reason instead of failing every round;
/// a listener that is not up yet is only reported (the rounds retry it).
async fn probe_kafka(bootstrap: &str, sasl: Option<&baton_client::kafka::SaslPlain>) -> Result<(), Error> {
    use baton_client::kafka::{KafkaConn, KafkaError};
    for b in bootstrap.split(',').map(str::trim) {
        match KafkaConn::connect_with(b, Duration::from_secs(10), sasl).await {
            Ok(_) => return Ok(()),
            // SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE.
            Err(e @ KafkaError::Code { code: 58 | 33 | 34, .. }) => return Err(format!("kafka {b}: {e}").into()),
            Err(e) => eprintln!("baton relay: kafka {b} not reachable yet ({e}); the rounds will retry"),
        }
    }
    Ok(())
}

/// Where a relay's bucket leases live: Baton locks (HTTP mode, D51) or PostgreSQL rows
/// (Kafka mode, D58). Both are maintained every lease/3 and released on a planned stop.
enum Held {
    Baton(Arc<lease::Leases>),
    Pg(Arc<pg_lease::PgLeases>),
}

/// Planned stop: release the buckets so that another relay takes them at once
/// instead of after the lease. A round in flight is cut at an await point: what it
/// pushed and did not mark is re-sent by the next owner and answered `duplicate`
/// (Baton), or found in the bucket's committed position and marked by it (Kafka).
async fn stop(relay_id: &str, maintain: tokio::task::JoinHandle<()>, held: &Held) -> Result<(), Error> {
    maintain.abort();
    let res = match held {
        Held::Baton(l) => l.release_all().await,
        Held::Pg(l) => l.release_all().await,
    };
    eprintln!("baton relay {relay_id}: stopped, buckets released");
    res
}
