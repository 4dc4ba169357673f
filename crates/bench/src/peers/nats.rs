//! NATS JetStream: one stream in file storage, one durable pull consumer
//! with explicit acks.
//!
//! Mapping. The queue is a stream `BENCH_<queue>` (work-queue retention: an
//! acked message is removed, as in a queue) over the subjects
//! `bench.<queue>.>`; partition `i` is the subject `bench.<queue>.p<i>`.
//! Produce publishes every message of the batch with its txid as
//! `Nats-Msg-Id` (JetStream's own dedup, in its 2-minute window) and waits for
//! every PubAck. Consume is one durable pull consumer (`bench`) shared by all
//! workers: a no-wait fetch of up to `max` messages, and when that finds none,
//! a pull that waits up to the wait time for the first. Ack publishes `+ACK`
//! to each message's reply subject and flushes the connection: the server
//! does not answer it (no double ack). Order: the stream's order for one
//! puller; with several pullers, any.
//!
//! "ok": a PubAck means the message is stored in the stream's file, written to
//! the OS, NOT fsync'd: JetStream syncs its files on an interval (default 2
//! minutes), not per message. Single server, not replicated.

use crate::target::{BenchError, Delivery, Msg, Result, Target};
use async_nats::header::{HeaderMap, NATS_MESSAGE_ID};
use async_nats::jetstream::consumer::{pull, AckPolicy, PullConsumer};
use async_nats::jetstream::stream::{Config as StreamConfig, RetentionPolicy, StorageType};
use async_nats::jetstream::{self, Context};
use bytes::Bytes;
use futures_util::StreamExt;
use std::sync::OnceLock;
use std::time::Duration;

/// What scripts/peers/nats.sh starts.
pub const DEFAULT_ADDR: &str = "nats://127.0.0.1:54222";

pub const ACK_MEANING: &str = "a PubAck is sent once the message is in the stream's file (file storage), \
     written to the OS but not fsync'd (JetStream syncs on an interval, default 2 min); consumer acks are \
     not answered; single server, not replicated";

const CONSUMER: &str = "bench";

pub struct Nats {
    client: async_nats::Client,
    js: Context,
    wait: Duration,
    prep: OnceLock<Prepared>,
}

struct Prepared {
    subjects: Vec<String>,
    consumer: PullConsumer,
}

fn nats_err(what: &'static str) -> impl Fn(&dyn std::fmt::Display) -> BenchError {
    move |e| BenchError(format!("nats {what}: {e}"))
}

impl Nats {
    pub async fn connect(addr: &str, wait_ms: u64) -> Result<Nats> {
        let client = async_nats::ConnectOptions::new()
            .connection_timeout(Duration::from_secs(10))
            // Requests (PubAcks, pulls) may queue behind a busy server.
            .request_timeout(Some(Duration::from_secs(60)))
            .connect(addr)
            .await
            .map_err(|e| {
                BenchError(format!("nats connect {addr}: {e} (is it running? scripts/peers/nats.sh start)"))
            })?;
        let js = jetstream::new(client.clone());
        Ok(Nats { client, js, wait: Duration::from_millis(wait_ms), prep: OnceLock::new() })
    }

    fn prep(&self) -> Result<&Prepared> {
        self.prep.get().ok_or_else(|| BenchError("setup() was not called".into()))
    }
}

impl Target for Nats {
    fn system(&self) -> &'static str {
        "nats"
    }

    async fn setup(&self, queue: &str, partitions: u32) -> Result<()> {
        // Stream names and subject tokens: no '.', '*', '>' or spaces.
        if queue.is_empty() || !queue.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-".contains(&b)) {
            return Err(BenchError(format!("queue name {queue:?}: use letters, digits, '_', '-' for nats")));
        }
        let stream = self
            .js
            .get_or_create_stream(StreamConfig {
                name: format!("BENCH_{queue}"),
                subjects: vec![format!("bench.{queue}.>")],
                storage: StorageType::File,
                retention: RetentionPolicy::WorkQueue,
                ..Default::default()
            })
            .await
            .map_err(|e| nats_err("create stream")(&e))?;
        let consumer: PullConsumer = stream
            .get_or_create_consumer(
                CONSUMER,
                pull::Config {
                    durable_name: Some(CONSUMER.into()),
                    ack_policy: AckPolicy::Explicit,
                    // The default (1000) would cap workers × batch in flight.
                    max_ack_pending: 100_000,
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| nats_err("create consumer")(&e))?;
        let subjects = (0..partitions.max(1)).map(|p| format!("bench.{queue}.p{p}")).collect();
        let _ = self.prep.set(Prepared { subjects, consumer });
        Ok(())
    }

    async fn produce(&self, batch: Vec<Msg>) -> Result<()> {
        let p = self.prep()?;
        let Some(first) = batch.first() else { return Ok(()) };
        let subject = p.subjects[first.partition as usize % p.subjects.len()].clone();
        // Send the whole batch, then wait for its PubAcks.
        let mut pending = Vec::with_capacity(batch.len());
        for m in batch {
            let mut h = HeaderMap::new();
            h.insert(NATS_MESSAGE_ID, m.txid.as_str());
            let f = self
                .js
                .publish_with_headers(subject.clone(), h, m.payload)
                .await
                .map_err(|e| nats_err("publish")(&e))?;
            pending.push(f);
        }
        for f in pending {
            let ack = f.await.map_err(|e| nats_err("PubAck")(&e))?;
            if ack.duplicate {
                return Err(BenchError(format!("nats: message {} was taken as a duplicate", ack.sequence)));
            }
        }
        Ok(())
    }

    async fn consume(&self, max: usize) -> Result<Vec<Delivery>> {
        let p = self.prep()?;
        let max = max.max(1);
        let mut out = Vec::new();
        let mut msgs = p.consumer.fetch().max_messages(max).messages().await.map_err(|e| nats_err("fetch")(&e))?;
        while let Some(m) = msgs.next().await {
            out.push(m.map_err(|e| nats_err("fetch")(&e))?);
        }
        if out.is_empty() {
            // Nothing there now: wait (up to the wait time) for the first one.
            let mut msgs = p
                .consumer
                .batch()
                .max_messages(1)
                .expires(self.wait)
                .messages()
                .await
                .map_err(|e| nats_err("pull")(&e))?;
            while let Some(m) = msgs.next().await {
                out.push(m.map_err(|e| nats_err("pull")(&e))?);
            }
        }
        out.into_iter()
            .map(|m| {
                let m = m.message;
                let txid = m
                    .headers
                    .as_ref()
                    .and_then(|h| h.get(NATS_MESSAGE_ID))
                    .map(|v| v.as_str().to_string())
                    .ok_or_else(|| BenchError(format!("nats: message on {} without Nats-Msg-Id", m.subject)))?;
                let reply = m.reply.ok_or_else(|| BenchError("nats: message without a reply subject".into()))?;
                Ok(Delivery { partition: m.subject.to_string(), txid, lease: Some(reply.to_string()) })
            })
            .collect()
    }

    async fn ack(&self, deliveries: Vec<Delivery>) -> Result<()> {
        if deliveries.is_empty() {
            return Ok(());
        }
        for d in deliveries {
            let reply = d.lease.ok_or_else(|| BenchError("nats ack: delivery without a reply subject".into()))?;
            self.client.publish(reply, Bytes::from_static(b"+ACK")).await.map_err(|e| nats_err("ack")(&e))?;
        }
        // The acks are on the wire (not confirmed by the server).
        self.client.flush().await.map_err(|e| nats_err("flush")(&e))
    }

    fn ack_meaning(&self) -> &'static str {
        ACK_MEANING
    }
}
