//! The `pipeline` workload over Kafka: the standard exactly-once
//! consume-transform-produce loop with Kafka transactions, behind
//! [`PipelineTarget`].
//!
//! Each worker slot is one consumer (group `<name>-g`, `isolation.level =
//! read_committed`, no auto commit) and one transactional producer
//! (`transactional.id = <name>-w<k>`). A step takes up to `max` inputs,
//! begins a transaction, produces one output per input to the same partition
//! of `<name>-out` (key = the input's txid), adds the consumed offsets with
//! `send_offsets_to_transaction` (the consumer's group metadata, so a zombie
//! of an older generation is fenced), and commits. On any failure it aborts
//! and rewinds the consumer to the group's committed offsets, so the inputs
//! of the aborted transaction are taken again.
//!
//! Against Baton's Kafka listener each commit is one Baton log entry (D48).

use super::{base_config, create_topics, delivered, enqueue, producer, Flavor, Producer};
use crate::pipeline::{Output, PipelineTarget};
use crate::target::{BenchError, Msg, Result};
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::producer::Producer as _;
use rdkafka::{Offset, TopicPartitionList};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// Timeout of each transactional call (init, send offsets, commit, abort).
const TXN_TIMEOUT: Duration = Duration::from_secs(10);

struct Slot {
    consumer: StreamConsumer,
    producer: Producer,
    /// Taken from librdkafka while waiting for the group to settle.
    pending: Mutex<VecDeque<OwnedMessage>>,
}

struct Run {
    input: String,
    output: String,
    group: String,
    partitions: u32,
    feeder: Producer,
    slots: Vec<Slot>,
    /// Free slots: front out, back in, so sequential steps go round every member.
    free: Mutex<VecDeque<usize>>,
    available: Semaphore,
}

pub struct KafkaPipeline {
    flavor: Flavor,
    bootstrap: String,
    workers: usize,
    linger_ms: u64,
    run: OnceLock<Run>,
}

impl KafkaPipeline {
    /// `workers`: worker slots (a consumer and a transactional producer each).
    pub fn new(flavor: Flavor, bootstrap: &str, workers: usize, linger_ms: u64) -> Result<KafkaPipeline> {
        Ok(KafkaPipeline {
            flavor,
            bootstrap: bootstrap.to_string(),
            workers: workers.max(1),
            linger_ms,
            run: OnceLock::new(),
        })
    }

    fn run(&self) -> Result<&Run> {
        self.run.get().ok_or_else(|| BenchError("setup() was not called".into()))
    }

    fn slot(&self, name: &str, k: usize, input: &str) -> Result<Slot> {
        let txid = format!("{name}-w{k}");
        let producer = producer(
            &self.bootstrap,
            self.linger_ms,
            &[("transactional.id", txid.as_str()), ("transaction.timeout.ms", "60000")],
        )?;
        if let Err(e) = tokio::task::block_in_place(|| producer.init_transactions(TXN_TIMEOUT)) {
            let why = match self.flavor {
                Flavor::BatonKafka => {
                    " (Baton's Kafka listener does not implement Kafka transactions: InitProducerId with a \
                     transactional.id and the transaction coordinator are not built, see docs/kafka.md; the \
                     pipeline runs on Baton through --target baton)"
                }
                Flavor::Kafka => "",
            };
            return Err(BenchError(format!(
                "{}: init_transactions for transactional.id {txid} at {} failed: {e}{why}",
                self.flavor.system(),
                self.bootstrap
            )));
        }
        let consumer: StreamConsumer = base_config(&self.bootstrap)
            .set("group.id", format!("{name}-g"))
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            .set("isolation.level", "read_committed")
            .create()
            .map_err(|e| BenchError(format!("kafka consumer: {e}")))?;
        consumer.subscribe(&[input]).map_err(|e| BenchError(format!("subscribe {input}: {e}")))?;
        Ok(Slot { consumer, producer, pending: Mutex::new(VecDeque::new()) })
    }

    /// Abort the open transaction and move the consumer back to the group's
    /// committed offsets (its assigned partitions), dropping what it had taken.
    fn abort_and_rewind(&self, s: &Slot) -> Result<()> {
        tokio::task::block_in_place(|| -> Result<()> {
            s.producer.abort_transaction(TXN_TIMEOUT).map_err(|e| BenchError(format!("abort: {e}")))?;
            s.pending.lock().expect("pending lock").clear();
            let committed = s.consumer.committed(TXN_TIMEOUT).map_err(|e| BenchError(format!("committed: {e}")))?;
            let mut to = TopicPartitionList::new();
            for e in committed.elements() {
                let o = match e.offset() {
                    Offset::Offset(n) => Offset::Offset(n),
                    _ => Offset::Beginning,
                };
                to.add_partition_offset(e.topic(), e.partition(), o).map_err(|e| BenchError(e.to_string()))?;
            }
            if to.count() > 0 {
                s.consumer.seek_partitions(to, TXN_TIMEOUT).map_err(|e| BenchError(format!("seek: {e}")))?;
            }
            Ok(())
        })
    }

    /// One transaction over `msgs` (taken by slot `s`).
    async fn commit(&self, r: &Run, s: &Slot, msgs: &[OwnedMessage]) -> Result<()> {
        tokio::task::block_in_place(|| s.producer.begin_transaction())
            .map_err(|e| BenchError(format!("begin: {e}")))?;
        let mut futs = Vec::with_capacity(msgs.len());
        for m in msgs {
            let key = m.key().unwrap_or_default();
            futs.push(enqueue(&s.producer, &r.output, m.partition(), key, m.payload().unwrap_or_default()).await?);
        }
        delivered(futs).await?;
        let mut next: BTreeMap<i32, i64> = BTreeMap::new();
        for m in msgs {
            let e = next.entry(m.partition()).or_insert(m.offset() + 1);
            *e = (*e).max(m.offset() + 1);
        }
        let mut tpl = TopicPartitionList::new();
        for (p, o) in next {
            tpl.add_partition_offset(&r.input, p, Offset::Offset(o)).map_err(|e| BenchError(e.to_string()))?;
        }
        let cgm = s.consumer.group_metadata().ok_or_else(|| BenchError("no consumer group metadata".into()))?;
        tokio::task::block_in_place(|| {
            s.producer
                .send_offsets_to_transaction(&tpl, &cgm, TXN_TIMEOUT)
                .map_err(|e| BenchError(format!("send_offsets_to_transaction: {e}")))?;
            s.producer.commit_transaction(TXN_TIMEOUT).map_err(|e| BenchError(format!("commit_transaction: {e}")))
        })
    }
}

/// Poll every slot's consumer until the group has settled: all partitions
/// assigned and every member that can have one has one.
async fn settle(slots: &[Slot], partitions: u32, group: &str) -> Result<()> {
    let want = slots.len().min(partitions as usize);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        for s in slots {
            if let Ok(r) = tokio::time::timeout(Duration::from_millis(20), s.consumer.recv()).await {
                let m = r.map_err(|e| BenchError(format!("consumer of group {group}: {e}")))?;
                s.pending.lock().expect("pending lock").push_back(m.detach());
            }
        }
        let counts: Vec<usize> =
            slots.iter().map(|s| s.consumer.assignment().map(|a| a.count()).unwrap_or(0)).collect();
        if counts.iter().sum::<usize>() == partitions as usize && counts.iter().filter(|&&n| n > 0).count() == want {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(BenchError(format!("consumer group {group}: not settled after 60 s ({counts:?})")));
        }
    }
}

/// Read `topic` from `from` (per partition) to its current end (the last
/// stable offset with `read_committed`); keys per partition in stored order.
async fn read_to_end(
    bootstrap: &str,
    topic: &str,
    from: &[(i32, Offset)],
    read_committed: bool,
) -> Result<BTreeMap<i32, Vec<String>>> {
    let c: StreamConsumer = base_config(bootstrap)
        .set("group.id", format!("{topic}-reader"))
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .set("isolation.level", if read_committed { "read_committed" } else { "read_uncommitted" })
        .create()
        .map_err(|e| BenchError(format!("kafka reader: {e}")))?;
    let mut tpl = TopicPartitionList::new();
    for (p, o) in from {
        tpl.add_partition_offset(topic, *p, *o).map_err(|e| BenchError(e.to_string()))?;
    }
    c.assign(&tpl).map_err(|e| BenchError(format!("assign {topic}: {e}")))?;
    let mut out: BTreeMap<i32, Vec<String>> = from.iter().map(|(p, _)| (*p, Vec::new())).collect();
    let mut at_end = BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while at_end.len() < from.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        let r = tokio::time::timeout(left, c.recv())
            .await
            .map_err(|_| BenchError(format!("read back {topic}: not at the end after 120 s")))?;
        match r {
            Ok(m) => {
                let key = m.key().map(|k| String::from_utf8_lossy(k).into_owned()).unwrap_or_default();
                out.entry(m.partition()).or_default().push(key);
            }
            Err(KafkaError::PartitionEOF(p)) => {
                at_end.insert(p);
            }
            Err(e) => return Err(BenchError(format!("read back {topic}: {e}"))),
        }
    }
    Ok(out)
}

impl PipelineTarget for KafkaPipeline {
    fn system(&self) -> &'static str {
        self.flavor.system()
    }

    fn ack_meaning(&self) -> &'static str {
        match self.flavor {
            Flavor::BatonKafka => super::BATON_KAFKA_ACK,
            Flavor::Kafka => {
                "a transaction commit (outputs + consumed offsets, read_committed readers) is answered once the \
                 transaction coordinator has written the commit markers to the one replica's page cache, with no \
                 fsync (Kafka's default log.flush settings)"
            }
        }
    }

    fn fifo_per_partition(&self) -> bool {
        // One consumer owns a partition at a time and writes its outputs to
        // the same partition in offset order; a new owner starts at the
        // committed offset, after the fenced owner's last commit.
        true
    }

    async fn setup(&self, name: &str, partitions: u32) -> Result<()> {
        let parts = partitions.max(1);
        let (input, output) = (format!("{name}-in"), format!("{name}-out"));
        create_topics(&self.bootstrap, &[&input, &output], parts).await?;
        let feeder = producer(&self.bootstrap, self.linger_ms, &[("enable.idempotence", "true")])?;
        let mut slots = Vec::with_capacity(self.workers);
        for k in 0..self.workers {
            slots.push(self.slot(name, k, &input)?);
        }
        let group = format!("{name}-g");
        settle(&slots, parts, &group).await?;
        let n = slots.len();
        let run = Run {
            input,
            output,
            group,
            partitions: parts,
            feeder,
            slots,
            free: Mutex::new((0..n).collect()),
            available: Semaphore::new(n),
        };
        self.run.set(run).map_err(|_| BenchError("setup() called twice".into()))
    }

    async fn feed(&self, batch: Vec<Msg>) -> Result<()> {
        let r = self.run()?;
        let mut futs = Vec::with_capacity(batch.len());
        for m in &batch {
            let p = (m.partition % r.partitions) as i32;
            futs.push(enqueue(&r.feeder, &r.input, p, m.txid.as_bytes(), &m.payload).await?);
        }
        delivered(futs).await
    }

    async fn step(&self, max: usize) -> Result<usize> {
        let r = self.run()?;
        let permit = r.available.acquire().await.map_err(|_| BenchError("slots closed".into()))?;
        permit.forget();
        let k = r.free.lock().expect("free lock").pop_front().ok_or_else(|| BenchError("no free slot".into()))?;
        let s = &r.slots[k];
        let max = max.max(1);
        let mut msgs: Vec<OwnedMessage> = {
            let mut q = s.pending.lock().expect("pending lock");
            let n = q.len().min(max);
            q.drain(..n).collect()
        };
        let mut err = None;
        if msgs.is_empty() {
            match tokio::time::timeout(Duration::from_secs(1), s.consumer.recv()).await {
                Ok(Ok(m)) => msgs.push(m.detach()),
                Ok(Err(e)) => err = Some(BenchError(format!("consume {}: {e}", r.input))),
                Err(_) => {}
            }
        }
        while err.is_none() && !msgs.is_empty() && msgs.len() < max {
            match tokio::time::timeout(Duration::ZERO, s.consumer.recv()).await {
                Ok(Ok(m)) => msgs.push(m.detach()),
                Ok(Err(e)) => err = Some(BenchError(format!("consume {}: {e}", r.input))),
                Err(_) => break,
            }
        }
        let res = match err {
            Some(e) => {
                // Taken but not processed: keep them, in order, for the next step.
                let mut q = s.pending.lock().expect("pending lock");
                for m in msgs.into_iter().rev() {
                    q.push_front(m);
                }
                Err(e)
            }
            None if msgs.is_empty() => Ok(0),
            None => match self.commit(r, s, &msgs).await {
                Ok(()) => Ok(msgs.len()),
                Err(e) => match self.abort_and_rewind(s) {
                    Ok(()) => Err(e),
                    // The slot's position is unknown now: keep it out of the pool.
                    Err(e2) => return Err(BenchError(format!("{e}; then {e2}; slot {k} retired"))),
                },
            },
        };
        r.free.lock().expect("free lock").push_back(k);
        r.available.add_permits(1);
        res
    }

    async fn outputs(&self) -> Result<Vec<Output>> {
        let r = self.run()?;
        let from: Vec<(i32, Offset)> = (0..r.partitions as i32).map(|p| (p, Offset::Beginning)).collect();
        let read = read_to_end(&self.bootstrap, &r.output, &from, true).await?;
        Ok(read
            .into_iter()
            .flat_map(|(p, keys)| keys.into_iter().map(move |txid| Output { partition: p as u32, txid }))
            .collect())
    }

    async fn remaining_inputs(&self) -> Result<Vec<String>> {
        let r = self.run()?;
        let c: StreamConsumer = base_config(&self.bootstrap)
            .set("group.id", &r.group)
            .set("enable.auto.commit", "false")
            .create()
            .map_err(|e| BenchError(format!("kafka consumer: {e}")))?;
        let mut tpl = TopicPartitionList::new();
        for p in 0..r.partitions as i32 {
            tpl.add_partition(&r.input, p);
        }
        let committed = tokio::task::block_in_place(|| c.committed_offsets(tpl, TXN_TIMEOUT))
            .map_err(|e| BenchError(format!("committed offsets of {}: {e}", r.group)))?;
        let from: Vec<(i32, Offset)> = committed
            .elements()
            .iter()
            .map(|e| match e.offset() {
                Offset::Offset(n) => (e.partition(), Offset::Offset(n)),
                _ => (e.partition(), Offset::Beginning),
            })
            .collect();
        let read = read_to_end(&self.bootstrap, &r.input, &from, false).await?;
        Ok(read.into_values().flatten().collect())
    }
}
