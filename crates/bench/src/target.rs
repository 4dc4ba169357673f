//! The system under test, behind one trait, so the same workloads can later
//! drive Kafka, RabbitMQ, NATS, Redis or PostgreSQL side by side with Baton.
//!
//! Methods return `impl Future + Send` (native async functions in traits), so
//! workloads stay generic over `T: Target` with no boxing and no macro crate,
//! and their futures can be spawned on a multi-threaded runtime.

use bytes::Bytes;
use std::fmt;
use std::future::Future;

/// One message to produce.
#[derive(Clone, Debug)]
pub struct Msg {
    /// Partition index, `0..partitions` as given to [`Target::setup`]. A batch
    /// passed to [`Target::produce`] holds messages of one partition.
    pub partition: u32,
    /// Producer-chosen id, unique within a run (Baton deduplicates by it).
    pub txid: String,
    /// Payload bytes: printable ASCII without `"` or `\`, so every system can
    /// carry them as they are (Baton sends them as a JSON string).
    pub payload: Bytes,
}

/// One message handed out by [`Target::consume`]; passed back to [`Target::ack`].
#[derive(Clone, Debug)]
pub struct Delivery {
    /// The system's own id of the partition the message came from.
    pub partition: String,
    /// The producer's id of the message.
    pub txid: String,
    /// The lease (or delivery tag) the ack must name, when the system has one.
    pub lease: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchError(pub String);

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BenchError {}

impl From<String> for BenchError {
    fn from(s: String) -> Self {
        BenchError(s)
    }
}

impl From<&str> for BenchError {
    fn from(s: &str) -> Self {
        BenchError(s.to_string())
    }
}

pub type Result<T> = std::result::Result<T, BenchError>;

/// A message system as the workloads see it. One value is shared by every
/// worker of a run (`&self`), so implementations keep their own connection pool.
pub trait Target: Send + Sync + 'static {
    /// Short name for reports: `baton`, later `kafka`, `rabbitmq`...
    fn system(&self) -> &'static str;

    /// Create or configure `queue` with `partitions` partitions and remember it:
    /// every later call works on that queue. Idempotent.
    fn setup(&self, queue: &str, partitions: u32) -> impl Future<Output = Result<()>> + Send;

    /// Write `batch` (one partition) and return when the system says it is
    /// written in the sense of [`Target::ack_meaning`].
    fn produce(&self, batch: Vec<Msg>) -> impl Future<Output = Result<()>> + Send;

    /// Take up to `max` messages. An empty vector means nothing arrived within
    /// the implementation's wait time.
    fn consume(&self, max: usize) -> impl Future<Output = Result<Vec<Delivery>>> + Send;

    /// Acknowledge deliveries as processed, so they are not delivered again.
    fn ack(&self, deliveries: Vec<Delivery>) -> impl Future<Output = Result<()>> + Send;

    /// What a successful `produce` (and `ack`) guarantees, in one line, for the report.
    fn ack_meaning(&self) -> &'static str;
}

impl From<BenchError> for String {
    fn from(e: BenchError) -> String {
        e.0
    }
}
