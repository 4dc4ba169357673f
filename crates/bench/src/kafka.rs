//! Kafka over the wire protocol, through librdkafka (the `rdkafka` crate,
//! librdkafka built from source): the [`Target`] adapter behind
//! `--target baton-kafka` (Baton's own Kafka listener) and `--target kafka`
//! (an Apache Kafka broker, `scripts/peers/kafka.sh`). The same code drives
//! both; only the bootstrap address and what "ok" means differ.
//!
//! * produce: one shared producer, `acks=all`, `linger.ms` from `--linger-ms`;
//!   a batch resolves when every message's delivery report has arrived.
//! * consume: a consumer group (`bench-<topic>`), one consumer per consuming
//!   worker; the "ack" is a synchronous offset commit of what was handed out.
//!
//! Submodules: [`txn`], the exactly-once consume-transform-produce pipeline
//! with Kafka transactions; [`e2e`], the end-to-end latency workload
//! (produce → a consumer receives), which runs on any [`Target`].

pub mod e2e;
#[cfg(test)]
mod live_tests;
pub mod txn;

use crate::target::{BenchError, Delivery, Msg, Result, Target};
use crate::{BenchArgs, Workload};
use clap::Args;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::{ClientContext, DefaultClientContext};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{CommitMode, Consumer, StreamConsumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord};
use rdkafka::statistics::{Statistics, Window};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Offset, TopicPartitionList};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::{OnceCell, Semaphore};

/// Flags of the Kafka targets and of the `e2e` workload (flattened into `baton bench`).
#[derive(Args, Debug, Clone)]
pub struct KafkaArgs {
    /// Kafka targets: the producer's linger.ms (how long librdkafka waits to fill a batch).
    #[arg(long, default_value_t = 5)]
    pub linger_ms: u64,
    /// e2e: consuming workers (on Kafka targets, consumers in one group) [default: --partitions, at most 8].
    #[arg(long)]
    pub e2e_consumers: Option<usize>,
    /// e2e: most messages a consumer takes (and then acks) per call.
    #[arg(long, default_value_t = 100)]
    pub e2e_batch: usize,
}

/// Which Kafka-speaking broker: same client code, different address and guarantee.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// Baton's Kafka listener (`baton serve --kafka-addr`).
    BatonKafka,
    /// Apache Kafka (`scripts/peers/kafka.sh start`).
    Kafka,
}

pub const BATON_KAFKA_ACK: &str = "produce (acks=all) is answered after the log entry holding the batch is written \
     and fdatasync'd (group commit; single node); the consume ack is an offset commit, answered after its entry \
     is fdatasync'd";
pub const KAFKA_ACK: &str = "produce (acks=all) is answered once the one in-sync replica has the batch in its page \
     cache, with no fsync (Kafka's default log.flush settings); the consume ack is an offset commit written the \
     same way";

impl Flavor {
    pub fn system(self) -> &'static str {
        match self {
            Flavor::BatonKafka => "baton-kafka",
            Flavor::Kafka => "kafka",
        }
    }

    /// Default bootstrap address: Baton's Kafka default port, or kafka.sh's.
    pub fn default_addr(self) -> &'static str {
        match self {
            Flavor::BatonKafka => "127.0.0.1:9092",
            Flavor::Kafka => "127.0.0.1:19092",
        }
    }

    pub fn ack_meaning(self) -> &'static str {
        match self {
            Flavor::BatonKafka => BATON_KAFKA_ACK,
            Flavor::Kafka => KAFKA_ACK,
        }
    }
}

/// `baton bench --target baton-kafka|kafka`: build the adapter for the
/// workload and run it through the common driver.
pub async fn run(a: &BenchArgs, flavor: Flavor, workers: usize) -> std::result::Result<(), String> {
    if a.batch > 1_000_000 {
        return Err("--batch: at most 1,000,000 on Kafka targets".into());
    }
    let addr = a.addr.clone().unwrap_or_else(|| flavor.default_addr().to_string());
    if a.workload == Some(Workload::Pipeline) {
        let t = Arc::new(txn::KafkaPipeline::new(flavor, &addr, workers, a.kafka.linger_ms)?);
        return crate::run_pipeline_with(t, a, workers).await;
    }
    let consumers = if a.workload == Some(Workload::E2e) { e2e::consumers(a) } else { workers };
    let t = Arc::new(KafkaTarget::new(flavor, &addr, a.kafka.linger_ms, a.wait_ms, consumers)?);
    if matches!(a.workload, Some(Workload::Consume | Workload::E2e)) {
        // Join the group before the clock starts: a run should not time the first rebalance.
        t.setup(&a.queue, a.partitions).await?;
        t.pool().await?;
    }
    crate::run_with(t, a, workers).await
}

/// The client settings every Kafka client of the bench shares.
pub(crate) fn base_config(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        // One broker on loopback: fail fast instead of librdkafka's long retries.
        .set("socket.connection.setup.timeout.ms", "10000")
        .set("log_level", "3");
    c
}

/// With `BATON_BENCH_KAFKA_STATS=1` in the environment, every producer
/// prints librdkafka's own statistics once a second on stderr: per broker the
/// produce request round trip (`rtt`: send to answer, the broker's service
/// time plus loopback) and the time a message waited in the client
/// (`int_latency`: linger and batching), and per topic the batch sizes. The
/// same client measures both brokers, so these split a latency difference
/// into broker and client parts.
pub(crate) struct StatsCtx;

impl ClientContext for StatsCtx {
    fn stats(&self, s: Statistics) {
        fn w(w: &Option<Window>) -> String {
            w.as_ref().map_or("-".into(), |w| format!("p50 {} p99 {} avg {} µs (n {})", w.p50, w.p99, w.avg, w.cnt))
        }
        for b in s.brokers.values().filter(|b| b.nodeid >= 0) {
            eprintln!(
                "librdkafka stats {} {}: rtt {}; int_latency {}; outbuf_latency {}",
                s.name,
                b.nodename,
                w(&b.rtt),
                w(&b.int_latency),
                w(&b.outbuf_latency)
            );
        }
        for t in s.topics.values() {
            eprintln!(
                "librdkafka stats {} topic {}: batch bytes p50 {} avg {}, messages per batch p50 {} avg {}",
                s.name, t.topic, t.batchsize.p50, t.batchsize.avg, t.batchcnt.p50, t.batchcnt.avg
            );
        }
    }
}

pub(crate) type Producer = FutureProducer<StatsCtx>;

/// A producer with `acks=all` and the given linger; extra settings on top.
pub(crate) fn producer(bootstrap: &str, linger_ms: u64, extra: &[(&str, &str)]) -> Result<Producer> {
    let mut c = base_config(bootstrap);
    c.set("acks", "all").set("linger.ms", linger_ms.to_string()).set("compression.type", "none");
    if std::env::var_os("BATON_BENCH_KAFKA_STATS").is_some_and(|v| v == "1") {
        c.set("statistics.interval.ms", "1000");
    }
    for (k, v) in extra {
        c.set(*k, *v);
    }
    c.create_with_context(StatsCtx).map_err(|e| BenchError(format!("kafka producer for {bootstrap}: {e}")))
}

/// Hand one record to librdkafka; waits (bounded) while its queue is full.
pub(crate) async fn enqueue(
    p: &Producer,
    topic: &str,
    partition: i32,
    key: &[u8],
    value: &[u8],
) -> Result<DeliveryFuture> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let rec = FutureRecord::to(topic).partition(partition).key(key).payload(value);
        match p.send_result(rec) {
            Ok(f) => return Ok(f),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            Err((e, _)) => return Err(BenchError(format!("produce to {topic}/{partition}: {e}"))),
        }
    }
}

/// Wait for delivery reports; the first failure is the error.
pub(crate) async fn delivered(futs: Vec<DeliveryFuture>) -> Result<()> {
    let mut first = None;
    for f in futs {
        let e = match f.await {
            Ok(Ok(_)) => continue,
            Ok(Err((e, _))) => format!("delivery: {e}"),
            Err(_) => "delivery: the producer went away".to_string(),
        };
        first.get_or_insert(e);
    }
    first.map_or(Ok(()), |e| Err(BenchError(e)))
}

/// Create `topics` with `partitions` partitions each (replication factor 1)
/// unless they exist; then check that each has at least that many partitions.
pub(crate) async fn create_topics(bootstrap: &str, topics: &[&str], partitions: u32) -> Result<()> {
    let admin: AdminClient<DefaultClientContext> =
        base_config(bootstrap).create().map_err(|e| BenchError(format!("kafka admin client: {e}")))?;
    let new: Vec<NewTopic> =
        topics.iter().map(|t| NewTopic::new(t, partitions as i32, TopicReplication::Fixed(1))).collect();
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(20)));
    let res = tokio::time::timeout(Duration::from_secs(30), admin.create_topics(&new, &opts))
        .await
        .map_err(|_| BenchError(format!("create topics at {bootstrap}: no answer in 30 s")))?
        .map_err(|e| BenchError(format!("create topics at {bootstrap}: {e}")))?;
    for r in res {
        match r {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((t, code)) => return Err(BenchError(format!("create topic {t}: {code}"))),
        }
    }
    for t in topics {
        let have = partition_count(admin.inner(), t).await?;
        if have < partitions as usize {
            return Err(BenchError(format!(
                "topic {t} has {have} partitions, fewer than --partitions {partitions}: use another --queue"
            )));
        }
    }
    Ok(())
}

async fn partition_count<C: rdkafka::ClientContext>(client: &rdkafka::client::Client<C>, topic: &str) -> Result<usize> {
    // A fresh topic can take a moment to show its partitions in metadata.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let md = tokio::task::block_in_place(|| client.fetch_metadata(Some(topic), Duration::from_secs(10)))
            .map_err(|e| BenchError(format!("metadata of {topic}: {e}")))?;
        let n = md.topics().iter().find(|t| t.name() == topic).map_or(0, |t| t.partitions().len());
        if n > 0 || Instant::now() >= deadline {
            return Ok(n);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A message a consumer took from librdkafka that no call has handed out yet.
struct Pending {
    partition: i32,
    offset: i64,
    key: String,
}

/// One group member; a consuming worker holds it from `consume` to `ack`.
struct Slot {
    consumer: StreamConsumer,
    pending: Mutex<VecDeque<Pending>>,
}

/// The consumers of one group. A `consume` checks a free one out and its
/// `ack` checks it back in, so the offsets a commit names are exactly the
/// messages that call handed out, and no two workers share a consumer.
struct Pool {
    slots: Vec<Slot>,
    /// Free slots, taken from the front and put back at the end, so that
    /// callers one after the other go round every member (and its partitions).
    free: Mutex<VecDeque<usize>>,
    available: Semaphore,
}

impl Pool {
    async fn checkout(&self) -> Result<usize> {
        let permit = self.available.acquire().await.map_err(|_| BenchError("consumer pool closed".into()))?;
        permit.forget();
        let i = self.free.lock().expect("pool lock").pop_front();
        i.ok_or_else(|| BenchError("consumer pool: a permit without a free consumer".into()))
    }

    fn checkin(&self, i: usize) {
        self.free.lock().expect("pool lock").push_back(i);
        self.available.add_permits(1);
    }
}

pub struct KafkaTarget {
    flavor: Flavor,
    bootstrap: String,
    wait: Duration,
    consumers: usize,
    producer: Producer,
    /// (topic, partitions), set by `setup`.
    topic: OnceLock<(String, u32)>,
    pool: OnceCell<Pool>,
}

impl KafkaTarget {
    /// `consumers`: group members to create on the first `consume` (one per
    /// consuming worker); `wait_ms`: how long a consume waits for a first message.
    pub fn new(flavor: Flavor, bootstrap: &str, linger_ms: u64, wait_ms: u64, consumers: usize) -> Result<KafkaTarget> {
        Ok(KafkaTarget {
            flavor,
            bootstrap: bootstrap.to_string(),
            wait: Duration::from_millis(wait_ms.max(1)),
            consumers: consumers.max(1),
            producer: producer(bootstrap, linger_ms, &[])?,
            topic: OnceLock::new(),
            pool: OnceCell::new(),
        })
    }

    fn topic(&self) -> Result<(&str, u32)> {
        let (t, p) = self.topic.get().ok_or_else(|| BenchError("setup() was not called".into()))?;
        Ok((t.as_str(), *p))
    }

    async fn pool(&self) -> Result<&Pool> {
        self.pool.get_or_try_init(|| self.make_pool()).await
    }

    /// Create the group's consumers, subscribe, and poll them until the
    /// group has settled (every partition assigned, every member that can
    /// have one has one), so a run does not time its first rebalance.
    async fn make_pool(&self) -> Result<Pool> {
        let (topic, parts) = self.topic()?;
        let group = format!("bench-{topic}");
        let mut slots = Vec::with_capacity(self.consumers);
        for _ in 0..self.consumers {
            let consumer: StreamConsumer = base_config(&self.bootstrap)
                .set("group.id", &group)
                .set("enable.auto.commit", "false")
                .set("auto.offset.reset", "earliest")
                .create()
                .map_err(|e| BenchError(format!("kafka consumer: {e}")))?;
            consumer.subscribe(&[topic]).map_err(|e| BenchError(format!("subscribe {topic}: {e}")))?;
            slots.push(Slot { consumer, pending: Mutex::new(VecDeque::new()) });
        }
        let want_members = self.consumers.min(parts as usize);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            for s in &slots {
                if let Ok(r) = tokio::time::timeout(Duration::from_millis(20), s.consumer.recv()).await {
                    let m = r.map_err(|e| BenchError(format!("consumer of {topic}: {e}")))?;
                    s.pending.lock().expect("pending lock").push_back(pending(&m));
                }
            }
            let counts: Vec<usize> =
                slots.iter().map(|s| s.consumer.assignment().map(|a| a.count()).unwrap_or(0)).collect();
            let members = counts.iter().filter(|&&n| n > 0).count();
            if counts.iter().sum::<usize>() == parts as usize && members == want_members {
                break;
            }
            if Instant::now() >= deadline {
                return Err(BenchError(format!(
                    "consumer group {group}: not settled after 60 s (partitions per member: {counts:?})"
                )));
            }
        }
        let n = slots.len();
        Ok(Pool { slots, free: Mutex::new((0..n).collect()), available: Semaphore::new(n) })
    }
}

fn pending(m: &impl Message) -> Pending {
    Pending {
        partition: m.partition(),
        offset: m.offset(),
        key: m.key().map(|k| String::from_utf8_lossy(k).into_owned()).unwrap_or_default(),
    }
}

/// The consumer slot and offset a delivery carries in its lease: `"slot:offset"`.
fn parse_lease(d: &Delivery) -> Result<(usize, i64)> {
    let l = d.lease.as_deref().unwrap_or_default();
    let (s, o) = l.split_once(':').ok_or_else(|| BenchError(format!("ack: bad lease {l:?}")))?;
    match (s.parse(), o.parse()) {
        (Ok(s), Ok(o)) => Ok((s, o)),
        _ => Err(BenchError(format!("ack: bad lease {l:?}"))),
    }
}

/// Next offsets to commit: per partition, one past the highest offset handed out.
fn commit_list(topic: &str, handed: impl IntoIterator<Item = (i32, i64)>) -> Result<TopicPartitionList> {
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    for (p, o) in handed {
        let e = next.entry(p).or_insert(o + 1);
        *e = (*e).max(o + 1);
    }
    let mut tpl = TopicPartitionList::new();
    for (p, o) in next {
        tpl.add_partition_offset(topic, p, Offset::Offset(o)).map_err(|e| BenchError(format!("offset list: {e}")))?;
    }
    Ok(tpl)
}

impl Target for KafkaTarget {
    fn system(&self) -> &'static str {
        self.flavor.system()
    }

    async fn setup(&self, queue: &str, partitions: u32) -> Result<()> {
        if queue.is_empty() || !queue.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) {
            return Err(BenchError(format!("queue name {queue:?}: use letters, digits, '.', '_', '-'")));
        }
        create_topics(&self.bootstrap, &[queue], partitions.max(1)).await?;
        let _ = self.topic.set((queue.to_string(), partitions.max(1)));
        Ok(())
    }

    async fn produce(&self, batch: Vec<Msg>) -> Result<()> {
        let (topic, parts) = self.topic()?;
        let mut futs = Vec::with_capacity(batch.len());
        for m in &batch {
            let p = (m.partition % parts) as i32;
            futs.push(enqueue(&self.producer, topic, p, m.txid.as_bytes(), &m.payload).await?);
        }
        delivered(futs).await
    }

    async fn consume(&self, max: usize) -> Result<Vec<Delivery>> {
        let pool = self.pool().await?;
        let i = pool.checkout().await?;
        let slot = &pool.slots[i];
        let max = max.max(1);
        let mut got: Vec<Pending> = {
            let mut q = slot.pending.lock().expect("pending lock");
            let n = q.len().min(max);
            q.drain(..n).collect()
        };
        let mut err = None;
        if got.is_empty() {
            match tokio::time::timeout(self.wait, slot.consumer.recv()).await {
                Ok(Ok(m)) => got.push(pending(&m)),
                Ok(Err(e)) => err = Some(e),
                Err(_) => {}
            }
        }
        // Whatever librdkafka has already fetched, without waiting again.
        while err.is_none() && !got.is_empty() && got.len() < max {
            match tokio::time::timeout(Duration::ZERO, slot.consumer.recv()).await {
                Ok(Ok(m)) => got.push(pending(&m)),
                Ok(Err(e)) => err = Some(e),
                Err(_) => break,
            }
        }
        if let Some(e) = err {
            // Keep what was taken for the next call; this one reports the error.
            slot.pending.lock().expect("pending lock").extend(got);
            pool.checkin(i);
            return Err(BenchError(format!("consume: {e}")));
        }
        if got.is_empty() {
            pool.checkin(i);
        }
        Ok(got
            .into_iter()
            .map(|p| Delivery {
                partition: p.partition.to_string(),
                txid: p.key,
                lease: Some(format!("{i}:{}", p.offset)),
            })
            .collect())
    }

    async fn ack(&self, deliveries: Vec<Delivery>) -> Result<()> {
        if deliveries.is_empty() {
            return Ok(());
        }
        let (topic, _) = self.topic()?;
        let pool = self.pool.get().ok_or_else(|| BenchError("ack before any consume".into()))?;
        let mut slot = None;
        let mut handed = Vec::with_capacity(deliveries.len());
        for d in &deliveries {
            let (s, o) = parse_lease(d)?;
            if *slot.get_or_insert(s) != s || s >= pool.slots.len() {
                return Err(BenchError("ack: deliveries of more than one consume call".into()));
            }
            let p = d.partition.parse::<i32>().map_err(|_| BenchError(format!("ack: partition {:?}", d.partition)))?;
            handed.push((p, o));
        }
        let i = slot.expect("deliveries is not empty");
        let tpl = commit_list(topic, handed)?;
        let r = tokio::task::block_in_place(|| pool.slots[i].consumer.commit(&tpl, CommitMode::Sync));
        pool.checkin(i);
        r.map_err(|e| BenchError(format!("offset commit: {e}")))
    }

    fn ack_meaning(&self) -> &'static str {
        self.flavor.ack_meaning()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_list_names_one_past_the_highest_offset_per_partition() {
        let tpl = commit_list("t", [(1, 5), (0, 9), (1, 7), (1, 6), (0, 3)]).unwrap();
        let got: Vec<(i32, Offset)> = tpl.elements().iter().map(|e| (e.partition(), e.offset())).collect();
        assert_eq!(got, vec![(0, Offset::Offset(10)), (1, Offset::Offset(8))]);
    }

    #[test]
    fn leases_round_trip_and_bad_ones_are_errors() {
        let d = |l: &str| Delivery { partition: "0".into(), txid: "x".into(), lease: Some(l.into()) };
        assert_eq!(parse_lease(&d("3:42")).unwrap(), (3, 42));
        assert!(parse_lease(&d("3")).is_err());
        assert!(parse_lease(&d("a:1")).is_err());
        assert!(parse_lease(&Delivery { partition: "0".into(), txid: "x".into(), lease: None }).is_err());
    }
}
