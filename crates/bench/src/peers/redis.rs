//! Redis Streams: `XADD` to produce, a consumer group (`XREADGROUP` + `XACK`)
//! to consume.
//!
//! Mapping. A partition is a stream, `<queue>:p<i>`; every stream has the
//! consumer group `bench` (created from the start of the stream, so a consume
//! run drains what an earlier produce run left). Produce sends the batch's
//! `XADD`s in one pipeline and waits for every reply. Consume is one
//! `XREADGROUP ... BLOCK <wait> STREAMS <all partitions> >`; Redis hands out up
//! to COUNT entries per stream, so entries beyond `max` are kept in a local
//! buffer (already delivered to us, pending in the group) and returned by the
//! next consume. Ack is `XACK` per stream. Acked entries stay in the stream
//! (a log, like Kafka's; no `XDEL` or trimming): memory grows with the run.
//! Order: FIFO per stream for one reader; with several consumers, any.
//!
//! Connections: a checkout pool, one connection per call in flight, because
//! a blocking `XREADGROUP` holds its connection until it returns.
//!
//! "ok": Redis answers once the command is applied in memory and appended to
//! the AOF buffer; with the default `appendfsync everysec` the AOF is fsync'd
//! about once a second, not before the answer.

use crate::target::{BenchError, Delivery, Msg, Result, Target};
use redis::aio::MultiplexedConnection;
use redis::streams::{StreamReadOptions, StreamReadReply};
use redis::{AsyncCommands, AsyncConnectionConfig, Client, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// What scripts/peers/redis.sh starts.
pub const DEFAULT_ADDR: &str = "redis://127.0.0.1:56379/";

pub const ACK_MEANING: &str = "XADD and XACK are answered once applied in memory and appended to the AOF \
     (appendonly yes); the AOF is fsync'd about once a second (appendfsync everysec), not before the answer; \
     single node, not replicated";

const GROUP: &str = "bench";

pub struct RedisStreams {
    client: Client,
    config: AsyncConnectionConfig,
    /// Idle connections, each with its consumer name.
    idle: Mutex<Vec<(MultiplexedConnection, String)>>,
    next_conn: AtomicU64,
    wait_ms: u64,
    keys: OnceLock<Vec<String>>,
    /// Entries a read returned beyond what its caller asked for.
    extra: Mutex<VecDeque<Delivery>>,
}

fn redis_err(what: &'static str) -> impl Fn(redis::RedisError) -> BenchError {
    move |e| BenchError(format!("redis {what}: {e}"))
}

impl RedisStreams {
    /// `addr` like `redis://127.0.0.1:56379/`; `pool` = connections opened at start.
    pub async fn connect(addr: &str, pool: usize, wait_ms: u64) -> Result<RedisStreams> {
        let client = Client::open(addr).map_err(|e| BenchError(format!("--addr {addr:?}: {e}")))?;
        // A blocking read takes up to wait_ms: the answer timeout must be longer.
        let config = AsyncConnectionConfig::new()
            .set_response_timeout(Some(Duration::from_millis(wait_ms) + Duration::from_secs(30)))
            .set_connection_timeout(Some(Duration::from_secs(10)));
        let r = RedisStreams {
            client,
            config,
            idle: Mutex::new(Vec::new()),
            next_conn: AtomicU64::new(0),
            wait_ms,
            keys: OnceLock::new(),
            extra: Mutex::new(VecDeque::new()),
        };
        let mut conns = Vec::with_capacity(pool);
        for _ in 0..pool.max(1) {
            conns.push(
                r.open().await.map_err(|e| BenchError(format!("{e} (is it running? scripts/peers/redis.sh start)")))?,
            );
        }
        r.idle.lock().expect("pool lock").extend(conns);
        Ok(r)
    }

    async fn open(&self) -> Result<(MultiplexedConnection, String)> {
        let c = self
            .client
            .get_multiplexed_async_connection_with_config(&self.config)
            .await
            .map_err(redis_err("connect"))?;
        Ok((c, format!("c{}", self.next_conn.fetch_add(1, Ordering::Relaxed))))
    }

    async fn take(&self) -> Result<(MultiplexedConnection, String)> {
        let c = self.idle.lock().expect("pool lock").pop();
        match c {
            Some(c) => Ok(c),
            None => self.open().await,
        }
    }

    /// Back to the pool. Callers drop a connection whose call failed instead of giving it back.
    fn give(&self, c: (MultiplexedConnection, String)) {
        self.idle.lock().expect("pool lock").push(c);
    }

    fn keys(&self) -> Result<&[String]> {
        self.keys.get().map(|k| k.as_slice()).ok_or_else(|| BenchError("setup() was not called".into()))
    }

    fn take_extra(&self, max: usize) -> Vec<Delivery> {
        let mut x = self.extra.lock().expect("extra lock");
        let n = max.min(x.len());
        x.drain(..n).collect()
    }
}

fn field_str(map: &HashMap<String, Value>, k: &str) -> Option<String> {
    match map.get(k)? {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

impl Target for RedisStreams {
    fn system(&self) -> &'static str {
        "redis"
    }

    async fn setup(&self, queue: &str, partitions: u32) -> Result<()> {
        if queue.is_empty() || !queue.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) {
            return Err(BenchError(format!("queue name {queue:?}: use letters, digits, '.', '_', '-'")));
        }
        let keys: Vec<String> = (0..partitions.max(1)).map(|p| format!("{queue}:p{p}")).collect();
        let (mut c, name) = self.take().await?;
        for k in &keys {
            let r: redis::RedisResult<()> =
                redis::cmd("XGROUP").arg("CREATE").arg(k).arg(GROUP).arg("0").arg("MKSTREAM").query_async(&mut c).await;
            match r {
                Ok(()) => {}
                // An earlier run made it: keep it (and what it holds).
                Err(e) if e.code() == Some("BUSYGROUP") => {}
                Err(e) => return Err(redis_err("XGROUP CREATE")(e)),
            }
        }
        self.give((c, name));
        let _ = self.keys.set(keys);
        Ok(())
    }

    async fn produce(&self, batch: Vec<Msg>) -> Result<()> {
        let keys = self.keys()?;
        let Some(first) = batch.first() else { return Ok(()) };
        let key = &keys[first.partition as usize % keys.len()];
        let mut pipe = redis::pipe();
        for m in &batch {
            pipe.cmd("XADD").arg(key).arg("*").arg("t").arg(&m.txid).arg("p").arg(&m.payload[..]);
        }
        let (mut c, name) = self.take().await?;
        let ids: Vec<String> = pipe.query_async(&mut c).await.map_err(redis_err("XADD"))?;
        self.give((c, name));
        if ids.len() != batch.len() {
            return Err(BenchError(format!("redis XADD: {} of {} ids", ids.len(), batch.len())));
        }
        Ok(())
    }

    async fn consume(&self, max: usize) -> Result<Vec<Delivery>> {
        let max = max.max(1);
        let got = self.take_extra(max);
        if !got.is_empty() {
            return Ok(got);
        }
        let keys = self.keys()?;
        let (mut c, name) = self.take().await?;
        let opts = StreamReadOptions::default().group(GROUP, &name).count(max).block(self.wait_ms as usize);
        let ids: Vec<&str> = keys.iter().map(|_| ">").collect();
        let reply: Option<StreamReadReply> =
            c.xread_options(keys, &ids, &opts).await.map_err(redis_err("XREADGROUP"))?;
        self.give((c, name));
        let mut all = Vec::new();
        for sk in reply.map(|r| r.keys).unwrap_or_default() {
            for e in sk.ids {
                let txid = field_str(&e.map, "t")
                    .ok_or_else(|| BenchError(format!("redis: entry {} of {} has no txid", e.id, sk.key)))?;
                all.push(Delivery { partition: sk.key.clone(), txid, lease: Some(e.id) });
            }
        }
        if all.len() > max {
            self.extra.lock().expect("extra lock").extend(all.drain(max..));
        }
        Ok(all)
    }

    async fn ack(&self, deliveries: Vec<Delivery>) -> Result<()> {
        let mut by_key: HashMap<&str, Vec<&str>> = HashMap::new();
        for d in &deliveries {
            let id = d.lease.as_deref().ok_or_else(|| BenchError("redis ack: delivery without an entry id".into()))?;
            by_key.entry(d.partition.as_str()).or_default().push(id);
        }
        if by_key.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for (k, ids) in &by_key {
            pipe.cmd("XACK").arg(*k).arg(GROUP).arg(ids);
        }
        let (mut c, name) = self.take().await?;
        let acked: Vec<u64> = pipe.query_async(&mut c).await.map_err(redis_err("XACK"))?;
        self.give((c, name));
        let n: u64 = acked.iter().sum();
        if n != deliveries.len() as u64 {
            return Err(BenchError(format!("redis XACK: {n} of {} acknowledged", deliveries.len())));
        }
        Ok(())
    }

    fn ack_meaning(&self) -> &'static str {
        ACK_MEANING
    }
}
