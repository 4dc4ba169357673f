//! `/api/v1/ephemeral/*`: Queen's ephemeral queues (`client.ephemeral`, issue 16 item 2;
//! D56). Their messages live in this process's memory only and are **never written to the
//! log**: a restart, a crash or a change of leader loses them, and every answer says so
//! (`"durable": false`). What a `configure` declares is durable: a KV row in the reserved
//! namespace `queen-ephemeral`, so a declared queue comes back after a restart, empty.
//!
//! Owns the routes, the bounds across queues (how many, how many bytes in all) and the ids
//! handed out: `<incarnation>-<queue generation>:<seq>:<partition>`, so an ack from before a
//! restart, or for a queue deleted and made again, answers `stale` and settles nothing.
//! The delivery rules are [`ring`]'s. Must never touch the log for a message, never hold
//! a ring's lock across an await, and never let a queue or the process grow past a bound.

pub mod ring;

use crate::body::JsonBody;
use crate::error::ApiError;
use crate::App;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use baton_core::kv::{KvOp, KvResult};
use parking_lot::Mutex;
use ring::{Full, Options, Outcome, Ring};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// The KV namespace of declared ephemeral queues' options.
pub const NS: &str = "queen-ephemeral";
/// Partitions of one ephemeral queue (429 `too_many_partitions` past it). With
/// [`MAX_GROUPS`] it bounds a ring's cursors (one per group and partition) to 65,536: a
/// pop's expiry pass and a depth view walk them, under the ring's lock.
pub const MAX_PARTITIONS: usize = 1_024;
/// Consumer groups of one ephemeral queue (429 `too_many_groups` past it).
pub const MAX_GROUPS: usize = 64;
/// Most messages one pop hands out.
pub const MAX_BATCH: usize = 10_000;
/// Default of `--ephemeral-max-queues`.
pub const DEFAULT_MAX_QUEUES: u64 = 10_000;
/// Default of `--ephemeral-max-mb`.
pub const DEFAULT_MAX_MB: u64 = 256;
const QUEUE_MODE: &str = "__QUEUE_MODE__";

struct Queue {
    gen: u64,
    ring: Mutex<Ring>,
    /// Wakes long polls of this queue at every push and ack.
    woken: tokio::sync::Notify,
}

/// Every ephemeral queue of the process.
pub struct Ephemeral {
    /// Random per process start: ids of an earlier incarnation are `stale`.
    incarnation: u64,
    next_gen: AtomicU64,
    queues: Mutex<HashMap<String, Arc<Queue>>>,
    /// Payload bytes held by every ring together.
    bytes: AtomicU64,
    /// Messages held by every ring together, kept by [`Ephemeral::with`] as the bytes are,
    /// so /metrics never locks a ring (one scrape used to lock all 10,000).
    messages: AtomicU64,
    pub max_queues: usize,
    pub max_bytes: u64,
}

impl Ephemeral {
    pub fn new(max_queues: usize, max_bytes: u64) -> Ephemeral {
        Ephemeral {
            incarnation: uuid::Uuid::now_v7().as_u64_pair().1 >> 16,
            next_gen: AtomicU64::new(1),
            queues: Mutex::default(),
            bytes: AtomicU64::new(0),
            messages: AtomicU64::new(0),
            max_queues,
            max_bytes,
        }
    }

    /// (queues, messages, bytes) for /metrics.
    pub fn gauges(&self) -> (usize, u64, u64) {
        let queues = self.queues.lock().len();
        (queues, self.messages.load(Relaxed), self.bytes.load(Relaxed))
    }

    /// Runs `f` on the ring and keeps the process-wide byte count true, whatever it did.
    fn with<R>(&self, q: &Queue, f: impl FnOnce(&mut Ring, u64) -> R) -> R {
        let mut ring = q.ring.lock();
        let (bytes, len) = (ring.bytes(), ring.len());
        let room = self.max_bytes.saturating_sub(self.bytes.load(Relaxed));
        let out = f(&mut ring, room);
        follow(&self.bytes, bytes, ring.bytes());
        follow(&self.messages, len, ring.len());
        out
    }
}

/// Moves a process-wide total by one ring's change from `before` to `after`.
fn follow(total: &AtomicU64, before: u64, after: u64) {
    if after >= before {
        total.fetch_add(after - before, Relaxed);
    } else {
        total.fetch_sub(before - after, Relaxed);
    }
}

fn bad(code: &'static str, m: impl Into<String>) -> ApiError {
    ApiError::bad(code, m)
}

fn now_ms() -> u64 {
    baton_core::wall_micros() / 1000
}

fn check_name(what: &str, s: &str) -> Result<(), ApiError> {
    if s.is_empty() || s.len() > 256 || s.chars().any(char::is_control) {
        return Err(bad("invalid_name", format!("{what} is 1 to 256 bytes without control characters")));
    }
    Ok(())
}

async fn declared(app: &App, queue: &str) -> Result<Option<Options>, ApiError> {
    let op = KvOp::Get { ns: NS.into(), key: queue.into() };
    let res = app.engine.kv(vec![op]).await?.map_err(|_| bad("internal", "a read rolled back"))?;
    Ok(match res.first() {
        Some(KvResult::Found(Some(row))) => row.value.as_deref().and_then(|v| serde_json::from_str(v).ok()),
        _ => None,
    })
}

/// The queue, made in memory (with its declared options, or the defaults) if it is not.
/// `create: false` answers None for a queue neither in memory nor declared.
async fn queue(app: &App, name: &str, create: bool) -> Result<Option<Arc<Queue>>, ApiError> {
    check_name("queue", name)?;
    let eph = &app.ephemeral;
    if let Some(q) = eph.queues.lock().get(name) {
        return Ok(Some(q.clone()));
    }
    let options = match declared(app, name).await? {
        Some(o) => o,
        None if create => Options::default(),
        None => return Ok(None),
    };
    let mut qs = eph.queues.lock();
    if let Some(q) = qs.get(name) {
        return Ok(Some(q.clone()));
    }
    if qs.len() >= eph.max_queues {
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_queues",
            format!("at most {} ephemeral queues (--ephemeral-max-queues)", eph.max_queues),
        ));
    }
    let q = Arc::new(Queue {
        gen: eph.next_gen.fetch_add(1, Relaxed),
        ring: Mutex::new(Ring::new(options)),
        woken: tokio::sync::Notify::new(),
    });
    qs.insert(name.to_string(), q.clone());
    Ok(Some(q))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OptionsJson {
    max_bytes: Option<u64>,
    max_length: Option<u64>,
    policy: Option<String>,
    ttl_seconds: Option<u64>,
    lease_seconds: Option<u64>,
    retry_limit: Option<u32>,
    /// Accepted and not used: a pop answers with what it has at once.
    #[allow(dead_code)]
    window_buffer: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigureBody {
    queue: String,
    #[serde(default)]
    options: Option<OptionsJson>,
}

pub async fn configure(State(app): State<App>, JsonBody(b): JsonBody<ConfigureBody>) -> Result<Response, ApiError> {
    check_name("queue", &b.queue)?;
    let d = Options::default();
    let o = b.options.unwrap_or(OptionsJson {
        max_bytes: None,
        max_length: None,
        policy: None,
        ttl_seconds: None,
        lease_seconds: None,
        retry_limit: None,
        window_buffer: None,
    });
    let options = Options {
        max_bytes: o.max_bytes.unwrap_or(d.max_bytes),
        max_length: o.max_length.unwrap_or(d.max_length),
        policy: o.policy.unwrap_or(d.policy),
        ttl_seconds: o.ttl_seconds.unwrap_or(d.ttl_seconds),
        lease_seconds: o.lease_seconds.unwrap_or(d.lease_seconds),
        retry_limit: o.retry_limit.unwrap_or(d.retry_limit),
    };
    if !matches!(options.policy.as_str(), "reject" | "drop-oldest") {
        return Err(bad("invalid_option", "policy is \"reject\" or \"drop-oldest\""));
    }
    if options.max_bytes == 0 || options.max_bytes > app.ephemeral.max_bytes {
        return Err(bad(
            "invalid_option",
            format!("maxBytes is 1 to {} (--ephemeral-max-mb)", app.ephemeral.max_bytes),
        ));
    }
    if options.max_length == 0 || options.lease_seconds == 0 || options.lease_seconds > 86_400 {
        return Err(bad("invalid_option", "maxLength is at least 1; leaseSeconds 1 to 86,400"));
    }
    let value = serde_json::to_string(&options).expect("options serialize");
    let op = KvOp::Put { ns: NS.into(), key: b.queue.clone(), value, ttl_secs: None, expect: None, required: false };
    app.engine.kv(vec![op]).await?.map_err(|_| bad("internal", "a write rolled back"))?;
    let q = queue(&app, &b.queue, true).await?.expect("made");
    q.ring.lock().options = options.clone();
    Ok(Json(json!({"queue": b.queue, "configured": true, "options": options, "durable": false})).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueBody {
    queue: String,
}

pub async fn reset(State(app): State<App>, JsonBody(b): JsonBody<QueueBody>) -> Result<Response, ApiError> {
    let dropped = match queue(&app, &b.queue, false).await? {
        Some(q) => app.ephemeral.with(&q, |r, _| r.reset()),
        None => 0,
    };
    Ok(Json(json!({"queue": b.queue, "dropped": dropped, "durable": false})).into_response())
}

pub async fn delete(State(app): State<App>, Path(name): Path<String>) -> Result<Response, ApiError> {
    check_name("queue", &name)?;
    let was_declared = declared(&app, &name).await?.is_some();
    if was_declared {
        let op = KvOp::Delete { ns: NS.into(), key: name.clone(), expect: None, required: false };
        app.engine.kv(vec![op]).await?.map_err(|_| bad("internal", "a write rolled back"))?;
    }
    let removed = app.ephemeral.queues.lock().remove(&name);
    if let Some(q) = &removed {
        app.ephemeral.with(q, |r, _| r.reset());
        q.woken.notify_waiters();
    }
    Ok(Json(json!({"queue": name, "deleted": was_declared || removed.is_some()})).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageJson {
    payload: Box<RawValue>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushBody {
    queue: String,
    partition: Option<String>,
    messages: Vec<MessageJson>,
}

pub async fn push(State(app): State<App>, JsonBody(b): JsonBody<PushBody>) -> Result<Response, ApiError> {
    let partition = b.partition.unwrap_or_else(|| "Default".into());
    check_name("partition", &partition)?;
    if b.messages.len() > crate::push::MAX_ITEMS {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_many_items",
            format!("at most {} messages a push", crate::push::MAX_ITEMS),
        ));
    }
    let mut payloads = Vec::with_capacity(b.messages.len());
    for (i, m) in b.messages.into_iter().enumerate() {
        let p = m.payload.get();
        if p.len() > app.cfg.max_payload_bytes {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                format!("messages[{i}]: over {} bytes", app.cfg.max_payload_bytes),
            ));
        }
        crate::payload::check(p, app.cfg.max_payload_depth)
            .map_err(|e| bad("bad_payload", format!("messages[{i}].payload: {e}")))?;
        payloads.push(p.to_string());
    }
    let q = queue(&app, &b.queue, true).await?.expect("made");
    let pushed = app.ephemeral.with(&q, |r, room| {
        if r.partitions() >= MAX_PARTITIONS && !r.has_partition(&partition) {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_partitions",
                format!("at most {MAX_PARTITIONS} partitions of an ephemeral queue"),
            ));
        }
        r.push(&partition, payloads, now_ms(), room).map_err(|f| {
            let what = match f {
                Full::Length(n) => format!("the queue holds at most {n} messages (maxLength)"),
                Full::Bytes(n) => {
                    format!("the queue or the process may take {n} more bytes (maxBytes, --ephemeral-max-mb)")
                }
            };
            ApiError::new(StatusCode::TOO_MANY_REQUESTS, "ephemeral_queue_full", what)
        })
    })?;
    q.woken.notify_waiters();
    Ok(Json(json!({"queue": b.queue, "partition": partition, "pushed": pushed, "durable": false})).into_response())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PopQuery {
    queue: String,
    partition: Option<String>,
    batch: Option<usize>,
    #[serde(default)]
    wait: bool,
    timeout: Option<u64>,
    group: Option<String>,
    #[serde(default)]
    auto_ack: bool,
}

fn message_id(eph: &Ephemeral, q: &Queue, d: &ring::Delivered) -> String {
    format!("{:x}-{:x}:{}:{}", eph.incarnation, q.gen, d.seq, d.partition)
}

pub async fn pop(State(app): State<App>, Query(p): Query<PopQuery>) -> Result<Response, ApiError> {
    let group = p.group.unwrap_or_else(|| QUEUE_MODE.into());
    check_name("group", &group)?;
    let batch = p.batch.unwrap_or(1).clamp(1, MAX_BATCH);
    let wait_ms = if p.wait { p.timeout.unwrap_or(30_000).min(app.cfg.max_wait_ms) } else { 0 };
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(wait_ms);
    let q = queue(&app, &p.queue, true).await?.expect("made");
    loop {
        let woken = q.woken.notified();
        let got = app.ephemeral.with(&q, |r, _| {
            if r.groups() >= MAX_GROUPS && !r.has_group(&group) {
                return Err(ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too_many_groups",
                    format!("at most {MAX_GROUPS} groups of an ephemeral queue"),
                ));
            }
            Ok(r.pop(&group, p.partition.as_deref(), batch, now_ms(), p.auto_ack))
        })?;
        if !got.is_empty() || tokio::time::Instant::now() >= deadline {
            let messages: Vec<Value> = got
                .iter()
                .map(|d| {
                    json!({"id": message_id(&app.ephemeral, &q, d), "partition": d.partition,
                           "payload": crate::payload::text_json(&d.payload), "attempts": d.attempts})
                })
                .collect();
            return Ok(Json(json!({"queue": p.queue, "messages": messages, "durable": false})).into_response());
        }
        tokio::select! {
            _ = woken => {}
            _ = tokio::time::sleep_until(deadline) => {}
            _ = app.shutdown.triggered() => {
                return Ok(Json(json!({"queue": p.queue, "messages": [], "durable": false})).into_response());
            }
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AckJson {
    id: String,
    status: Option<String>,
    #[allow(dead_code)]
    error: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AckBody {
    queue: String,
    group: Option<String>,
    acks: Vec<AckJson>,
}

pub async fn ack(State(app): State<App>, JsonBody(b): JsonBody<AckBody>) -> Result<Response, ApiError> {
    let group = b.group.unwrap_or_else(|| QUEUE_MODE.into());
    if b.acks.len() > MAX_BATCH {
        return Err(bad("too_many_acks", format!("at most {MAX_BATCH} acks a call")));
    }
    let mut settled = Vec::with_capacity(b.acks.len());
    for (i, a) in b.acks.iter().enumerate() {
        let completed = match a.status.as_deref() {
            None | Some("completed") => true,
            Some("failed" | "retry") => false,
            Some(s) => {
                return Err(bad("invalid_status", format!("acks[{i}].status {s:?}: completed, failed or retry")))
            }
        };
        settled.push(completed);
    }
    let q = queue(&app, &b.queue, false).await?;
    let prefix = q.as_ref().map(|q| format!("{:x}-{:x}:", app.ephemeral.incarnation, q.gen));
    let results: Vec<Value> = b
        .acks
        .iter()
        .zip(settled)
        .map(|(a, completed)| {
            let mine = prefix.as_deref().and_then(|p| a.id.strip_prefix(p));
            let parsed = mine.and_then(|rest| {
                let (seq, part) = rest.split_once(':')?;
                Some((seq.parse::<u64>().ok()?, part))
            });
            let outcome = match (&q, parsed) {
                (Some(q), Some((seq, part))) => match app.ephemeral.with(q, |r, _| r.ack(&group, part, seq, completed))
                {
                    Outcome::Acked => "acked",
                    Outcome::Redelivered => "redelivered",
                    Outcome::Dropped => "dropped",
                    Outcome::Unknown => "unknown",
                },
                _ => "stale",
            };
            json!({"id": a.id, "outcome": outcome})
        })
        .collect();
    if let Some(q) = &q {
        q.woken.notify_waiters();
    }
    Ok(Json(json!({"queue": b.queue, "results": results, "durable": false})).into_response())
}

fn depth_json(name: &str, q: &Queue) -> Value {
    let r = q.ring.lock();
    let groups: Vec<Value> = r
        .group_depths()
        .into_iter()
        .map(|(g, pending, leased)| {
            let name = if g == QUEUE_MODE { Value::Null } else { Value::String(g) };
            json!({"group": name, "pending": pending, "leased": leased})
        })
        .collect();
    json!({"queue": name, "length": r.len(), "bytes": r.bytes(), "partitions": r.partitions(),
           "dropped": r.dropped, "options": r.options, "groups": groups, "durable": false})
}

pub async fn queues(State(app): State<App>) -> Result<Response, ApiError> {
    let mut out: Vec<Value> = {
        let qs = app.ephemeral.queues.lock();
        let mut names: Vec<&String> = qs.keys().collect();
        names.sort();
        names.into_iter().map(|n| depth_json(n, &qs[n])).collect()
    };
    // Declared queues not yet touched since a restart: there, and empty.
    let op = KvOp::GetPrefix {
        ns: NS.into(),
        prefix: String::new(),
        after: None,
        limit: app.ephemeral.max_queues,
        keys_only: true,
    };
    if let Ok(Ok(res)) = app.engine.kv(vec![op]).await {
        if let Some(KvResult::Prefix { rows, .. }) = res.first() {
            for row in rows {
                if !out.iter().any(|q| q["queue"] == row.key.as_str()) {
                    out.push(json!({"queue": row.key, "length": 0, "bytes": 0, "partitions": 0, "dropped": 0,
                                    "groups": [], "durable": false}));
                }
            }
        }
    }
    Ok(Json(json!({"queues": out, "durable": false})).into_response())
}

pub async fn depth(State(app): State<App>, Path(name): Path<String>) -> Result<Response, ApiError> {
    match queue(&app, &name, false).await? {
        Some(q) => Ok(Json(depth_json(&name, &q)).into_response()),
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "ephemeral_queue_not_found",
            format!("no ephemeral queue {name:?}"),
        )),
    }
}
