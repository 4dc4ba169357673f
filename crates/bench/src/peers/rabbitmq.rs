//! RabbitMQ over AMQP 0-9-1 (lapin): quorum queues, publisher confirms,
//! manual acks.
//!
//! Mapping. Partition `i` is a durable quorum queue `<queue>.p<i>`
//! (`x-queue-type=quorum`), published to through the default exchange.
//! Produce publishes the batch (persistent, txid as `message-id`) on a channel
//! in confirm mode and waits for every confirm. Consume uses a consumer
//! "slot": a channel with one `basic.consume` per partition queue and a
//! per-consumer prefetch of the requested batch size; it waits up to the wait
//! time for the first delivery and then takes what has already arrived, up
//! to `max`. The slot stays with that batch until its ack, one `basic.ack`
//! per delivery tag (not `multiple`: the merged consumers can hand out tags
//! out of order, and prefetched deliveries not yet handed out must stay
//! unacked). Slots and publish channels are created
//! on demand and reused, so there are at most as many as concurrent workers;
//! they are spread over a few connections. Order: FIFO per queue for one
//! consumer; with several consumers, any.
//!
//! "ok": a publisher confirm for a quorum queue is sent after the message's
//! Raft log entry is fsync'd (one node here, so not replicated). A
//! `basic.ack` gets no answer in AMQP 0-9-1: ack returns once it is sent.

use crate::target::{BenchError, Delivery, Msg, Result, Target};
use futures_util::stream::{select_all, SelectAll};
use futures_util::{FutureExt, StreamExt};
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions, ConfirmSelectOptions,
    QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, Consumer};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// What scripts/peers/rabbitmq.sh starts.
pub const DEFAULT_ADDR: &str = "amqp://guest:guest@127.0.0.1:55672/%2f";

pub const ACK_MEANING: &str = "a publisher confirm is sent after the quorum queue's Raft log entry is fsync'd \
     (single node, not replicated); consumer acks (basic.ack) are not answered";

/// Connections the channels are spread over (each has its own socket and reader task).
const CONNECTIONS: usize = 4;

pub struct Rabbit {
    conns: Vec<Connection>,
    next: AtomicU64,
    wait: Duration,
    queues: OnceLock<Vec<String>>,
    publishers: Mutex<Vec<Channel>>,
    idle_slots: Mutex<Vec<Slot>>,
    held: Mutex<HashMap<u64, Slot>>,
}

/// A consuming channel: one consumer per partition queue, merged.
struct Slot {
    id: u64,
    channel: Channel,
    deliveries: SelectAll<Consumer>,
}

fn amqp_err(what: &'static str) -> impl Fn(lapin::Error) -> BenchError {
    move |e| BenchError(format!("rabbitmq {what}: {e}"))
}

impl Rabbit {
    /// `addr` like `amqp://guest:guest@127.0.0.1:55672/%2f`.
    pub async fn connect(addr: &str, pool: usize, wait_ms: u64) -> Result<Rabbit> {
        let mut conns = Vec::new();
        for _ in 0..CONNECTIONS.min(pool.max(1)) {
            let c = Connection::connect(addr, ConnectionProperties::default()).await.map_err(|e| {
                BenchError(format!("rabbitmq connect {addr}: {e} (is it running? scripts/peers/rabbitmq.sh start)"))
            })?;
            conns.push(c);
        }
        Ok(Rabbit {
            conns,
            next: AtomicU64::new(0),
            wait: Duration::from_millis(wait_ms),
            queues: OnceLock::new(),
            publishers: Mutex::new(Vec::new()),
            idle_slots: Mutex::new(Vec::new()),
            held: Mutex::new(HashMap::new()),
        })
    }

    async fn channel(&self) -> Result<(u64, Channel)> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let c = self.conns[n as usize % self.conns.len()].create_channel().await.map_err(amqp_err("channel"))?;
        Ok((n, c))
    }

    fn queues(&self) -> Result<&[String]> {
        self.queues.get().map(|q| q.as_slice()).ok_or_else(|| BenchError("setup() was not called".into()))
    }

    async fn new_slot(&self, prefetch: usize) -> Result<Slot> {
        let (id, channel) = self.channel().await?;
        // Per-consumer prefetch (quorum queues do not support a global one).
        channel
            .basic_qos(prefetch.clamp(1, u16::MAX as usize) as u16, BasicQosOptions { global: false })
            .await
            .map_err(amqp_err("basic.qos"))?;
        let mut consumers = Vec::new();
        for q in self.queues()? {
            let c = channel
                .basic_consume(
                    q.as_str().into(),
                    format!("bench-{id}-{q}").into(),
                    BasicConsumeOptions::default(),
                    FieldTable::default(),
                )
                .await
                .map_err(amqp_err("basic.consume"))?;
            consumers.push(c);
        }
        Ok(Slot { id, channel, deliveries: select_all(consumers) })
    }
}

impl Target for Rabbit {
    fn system(&self) -> &'static str {
        "rabbitmq"
    }

    async fn setup(&self, queue: &str, partitions: u32) -> Result<()> {
        if queue.is_empty() || !queue.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) {
            return Err(BenchError(format!("queue name {queue:?}: use letters, digits, '.', '_', '-'")));
        }
        let names: Vec<String> = (0..partitions.max(1)).map(|p| format!("{queue}.p{p}")).collect();
        let (_, ch) = self.channel().await?;
        let mut args = FieldTable::default();
        args.insert("x-queue-type".into(), AMQPValue::LongString("quorum".into()));
        for q in &names {
            ch.queue_declare(
                q.as_str().into(),
                QueueDeclareOptions { durable: true, ..Default::default() },
                args.clone(),
            )
            .await
            .map_err(amqp_err("queue.declare"))?;
        }
        let _ = ch.close(200, "setup done".into()).await;
        let _ = self.queues.set(names);
        Ok(())
    }

    async fn produce(&self, batch: Vec<Msg>) -> Result<()> {
        let queues = self.queues()?;
        let Some(first) = batch.first() else { return Ok(()) };
        let q = &queues[first.partition as usize % queues.len()];
        let ch = self.publishers.lock().expect("publishers lock").pop();
        let ch = match ch {
            Some(c) => c,
            None => {
                let (_, c) = self.channel().await?;
                c.confirm_select(ConfirmSelectOptions::default()).await.map_err(amqp_err("confirm.select"))?;
                c
            }
        };
        let mut pending = Vec::with_capacity(batch.len());
        for m in &batch {
            let props = BasicProperties::default().with_delivery_mode(2).with_message_id(m.txid.as_str().into());
            let confirm = ch
                .basic_publish("".into(), q.as_str().into(), BasicPublishOptions::default(), &m.payload, props)
                .await
                .map_err(amqp_err("basic.publish"))?;
            pending.push(confirm);
        }
        for c in pending {
            let conf = c.await.map_err(amqp_err("publisher confirm"))?;
            if !conf.is_ack() {
                return Err(BenchError(format!("rabbitmq: publish to {q} was nacked")));
            }
        }
        // Back to the pool only after a clean round: a failed channel is dropped.
        self.publishers.lock().expect("publishers lock").push(ch);
        Ok(())
    }

    async fn consume(&self, max: usize) -> Result<Vec<Delivery>> {
        let max = max.max(1);
        let slot = self.idle_slots.lock().expect("slots lock").pop();
        let mut slot = match slot {
            Some(s) => s,
            None => self.new_slot(max).await?,
        };
        let mut got = Vec::new();
        if let Ok(first) = tokio::time::timeout(self.wait, slot.deliveries.next()).await {
            match first {
                Some(d) => got.push(d.map_err(amqp_err("delivery"))?),
                None => return Err(BenchError("rabbitmq: the consumers were cancelled".into())),
            }
            // Then whatever has already arrived, without waiting.
            while got.len() < max {
                match slot.deliveries.next().now_or_never() {
                    Some(Some(d)) => got.push(d.map_err(amqp_err("delivery"))?),
                    _ => break,
                }
            }
        }
        if got.is_empty() {
            self.idle_slots.lock().expect("slots lock").push(slot);
            return Ok(Vec::new());
        }
        let out = got
            .into_iter()
            .map(|d| {
                let txid = d
                    .properties
                    .message_id()
                    .as_ref()
                    .map(|s| s.as_str().to_string())
                    .ok_or_else(|| BenchError("rabbitmq: message without message-id".into()))?;
                Ok(Delivery {
                    partition: d.routing_key.as_str().to_string(),
                    txid,
                    lease: Some(format!("{}/{}", slot.id, d.delivery_tag)),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.held.lock().expect("held lock").insert(slot.id, slot);
        Ok(out)
    }

    async fn ack(&self, deliveries: Vec<Delivery>) -> Result<()> {
        let mut slot_id = None;
        let mut tags = Vec::with_capacity(deliveries.len());
        for d in &deliveries {
            let (s, tag) = d
                .lease
                .as_deref()
                .and_then(|l| l.split_once('/'))
                .and_then(|(s, t)| Some((s.parse::<u64>().ok()?, t.parse::<u64>().ok()?)))
                .ok_or_else(|| BenchError(format!("rabbitmq ack: bad lease {:?}", d.lease)))?;
            if *slot_id.get_or_insert(s) != s {
                return Err(BenchError("rabbitmq ack: deliveries of several consumes in one ack".into()));
            }
            tags.push(tag);
        }
        let Some(slot_id) = slot_id else { return Ok(()) };
        let slot = self
            .held
            .lock()
            .expect("held lock")
            .remove(&slot_id)
            .ok_or_else(|| BenchError(format!("rabbitmq ack: slot {slot_id} holds no deliveries")))?;
        for t in tags {
            slot.channel.basic_ack(t, BasicAckOptions { multiple: false }).await.map_err(amqp_err("basic.ack"))?;
        }
        self.idle_slots.lock().expect("slots lock").push(slot);
        Ok(())
    }

    fn ack_meaning(&self) -> &'static str {
        ACK_MEANING
    }
}
