//! A small typed client for the HTTP calls the verifier (and later the
//! bench) makes: configure, push, pop, ack, transaction, fetch, queue view.
//!
//! Errors keep the distinction the verifier needs: a transport error or a
//! 5xx means "the outcome is unknown" for anything that writes; a 4xx means
//! the server refused the request and changed nothing.

use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::time::Duration;

#[derive(Debug, Clone)]
pub enum Error {
    /// Connection refused or reset, timeout, body cut short: nothing is known.
    Transport(String),
    /// The server answered with this status and body.
    Status { code: u16, body: String },
    /// A 2xx whose body is not the shape we expect.
    Shape(String),
}

impl Error {
    /// 5xx or transport: whatever the request would have written may or may not be there.
    pub fn is_unknown(&self) -> bool {
        match self {
            Error::Transport(_) => true,
            Error::Status { code, .. } => *code >= 500,
            Error::Shape(_) => false,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Transport(m) => write!(f, "transport: {m}"),
            Error::Status { code, body } => write!(f, "HTTP {code}: {}", truncate(body, 300)),
            Error::Shape(m) => write!(f, "unexpected answer: {m}"),
        }
    }
}

fn truncate(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// One item of a push (or of a transaction's push operation).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PushItem {
    pub queue: String,
    pub partition: String,
    pub transaction_id: String,
    pub payload: Value,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushResult {
    pub status: String,
    #[serde(default)]
    pub offset: Option<u64>,
    #[serde(default)]
    pub partition_id: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoppedMessage {
    pub transaction_id: String,
    #[serde(default)]
    pub data: Value,
    pub offset: u64,
    pub partition_id: String,
    #[serde(default)]
    pub lease_id: Option<String>,
    #[serde(default)]
    pub delivery_attempt: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Popped {
    pub partition: String,
    pub partition_id: String,
    #[serde(default)]
    pub lease_id: Option<String>,
    #[serde(default)]
    pub messages: Vec<PoppedMessage>,
}

/// An ack by transactionId under a lease (queue mode).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ack {
    pub transaction_id: String,
    pub partition_id: String,
    pub lease_id: Option<String>,
    pub status: String,
}

impl Ack {
    pub fn completed(m: &PoppedMessage, lease: Option<&str>) -> Ack {
        Ack {
            transaction_id: m.transaction_id.clone(),
            partition_id: m.partition_id.clone(),
            lease_id: lease.map(str::to_string).or_else(|| m.lease_id.clone()),
            status: "completed".into(),
        }
    }
}

/// What `POST /api/v1/transaction` said.
#[derive(Debug, Clone)]
pub enum TxnOutcome {
    /// 200 `success: true`: durable and applied.
    Committed { results: Vec<Value> },
    /// 200 `success: false`: rolled back, nothing changed.
    RolledBack { reason: String, failed_index: Option<usize>, error: String },
    /// 5xx, transport error or timeout: it may or may not have committed.
    Unknown(String),
    /// 4xx: refused before the engine saw it, nothing changed.
    Refused { code: u16, body: String },
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FetchEntry {
    pub queue: String,
    pub partition: String,
    pub offset: u64,
    pub max_bytes: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FetchedRecord {
    pub offset: u64,
    #[serde(default)]
    pub transaction_id: Option<String>,
    #[serde(default)]
    pub payload: Value,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fetched {
    #[serde(default)]
    pub records: Vec<FetchedRecord>,
    #[serde(default)]
    pub high_watermark: u64,
    #[serde(default)]
    pub log_start_offset: u64,
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    /// Timeout of every request except long polls (which get their wait + 5 s).
    pub timeout: Duration,
}

impl Client {
    /// `base` like `http://127.0.0.1:6632`; `pool` = idle connections kept (one per concurrent caller).
    pub fn new(base: &str, pool: usize) -> Result<Client> {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(pool.max(1))
            .tcp_nodelay(true)
            .http1_only()
            .connect_timeout(Duration::from_secs(2))
            .build()
            .map_err(|e| Error::Transport(format!("http client: {e}")))?;
        let base = base.trim_end_matches('/').to_string();
        reqwest::Url::parse(&base).map_err(|e| Error::Shape(format!("url {base}: {e}")))?;
        Ok(Client { http, base, timeout: Duration::from_secs(10) })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    async fn send(&self, rb: reqwest::RequestBuilder) -> Result<(StatusCode, String)> {
        let r = rb.send().await.map_err(|e| Error::Transport(describe(&e)))?;
        let status = r.status();
        let body = r.text().await.map_err(|e| Error::Transport(describe(&e)))?;
        Ok((status, body))
    }

    async fn post_json<B: Serialize + ?Sized>(&self, path: &str, body: &B) -> Result<(StatusCode, String)> {
        self.send(self.http.post(self.url(path)).json(body).timeout(self.timeout)).await
    }

    /// GET /health answers 200.
    pub async fn health(&self) -> Result<()> {
        let (s, t) = self.send(self.http.get(self.url("/health")).timeout(Duration::from_secs(2))).await?;
        ok_status(s, &t)?;
        Ok(())
    }

    /// Poll /health until it answers or `within` passes.
    pub async fn wait_healthy(&self, within: Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match self.health().await {
                Ok(()) => return Ok(()),
                Err(e) if tokio::time::Instant::now() >= deadline => return Err(e),
                Err(_) => tokio::time::sleep(Duration::from_millis(25)).await,
            }
        }
    }

    /// POST /api/v1/configure with these options (merged over the current ones).
    pub async fn configure(&self, queue: &str, options: Value) -> Result<Value> {
        let (s, t) = self.post_json("/api/v1/configure", &json!({"queue": queue, "options": options})).await?;
        ok_status(s, &t)?;
        parse(&t)
    }

    /// POST /api/v1/push: one result per item, in order.
    pub async fn push(&self, items: &[PushItem]) -> Result<Vec<PushResult>> {
        let (s, t) = self.post_json("/api/v1/push", &json!({ "items": items })).await?;
        ok_status(s, &t)?;
        let v: Vec<PushResult> = parse(&t)?;
        if v.len() != items.len() {
            return Err(Error::Shape(format!("push of {} items answered {} results", items.len(), v.len())));
        }
        Ok(v)
    }

    /// GET /api/v1/pop/queue/:q[/partition/:p]; `None` when empty (204 or no messages).
    /// `wait_ms` = Some(t) long-polls up to t ms.
    pub async fn pop(
        &self,
        queue: &str,
        partition: Option<&str>,
        batch: u32,
        wait_ms: Option<u64>,
    ) -> Result<Option<Popped>> {
        let mut path = format!("/api/v1/pop/queue/{queue}");
        if let Some(p) = partition {
            path.push_str(&format!("/partition/{p}"));
        }
        let (wait, t) = match wait_ms {
            Some(t) => (true, t),
            None => (false, 0),
        };
        path.push_str(&format!("?batch={batch}&wait={wait}&timeout={t}"));
        let (s, body) = self
            .send(
                self.http
                    .get(self.url(&path))
                    .timeout(Duration::from_millis(t) + self.timeout.max(Duration::from_secs(5))),
            )
            .await?;
        if s == StatusCode::NO_CONTENT {
            return Ok(None);
        }
        ok_status(s, &body)?;
        let p: Popped = parse(&body)?;
        Ok((!p.messages.is_empty()).then_some(p))
    }

    /// POST /api/v1/ack/batch; one result object per ack.
    pub async fn ack_batch(&self, acks: &[Ack]) -> Result<Vec<Value>> {
        let (s, t) = self.post_json("/api/v1/ack/batch", &json!({ "acknowledgments": acks })).await?;
        ok_status(s, &t)?;
        parse(&t)
    }

    /// POST /api/v1/transaction: acks (each with its lease), then one push
    /// operation with `pushes`, requiring `required_leases` to be live.
    pub async fn transaction(&self, acks: &[Ack], pushes: &[PushItem], required_leases: &[String]) -> TxnOutcome {
        self.transaction_within(acks, pushes, required_leases, self.timeout).await
    }

    /// [`Client::transaction`] that gives up (outcome unknown) after `timeout`.
    pub async fn transaction_within(
        &self,
        acks: &[Ack],
        pushes: &[PushItem],
        required_leases: &[String],
        timeout: Duration,
    ) -> TxnOutcome {
        let mut ops: Vec<Value> = acks
            .iter()
            .map(|a| {
                json!({"type": "ack", "transactionId": a.transaction_id, "partitionId": a.partition_id,
                       "leaseId": a.lease_id, "status": a.status})
            })
            .collect();
        if !pushes.is_empty() {
            ops.push(json!({"type": "push", "items": pushes}));
        }
        let body = json!({"operations": ops, "requiredLeases": required_leases});
        let req = self.http.post(self.url("/api/v1/transaction")).json(&body).timeout(timeout);
        let (s, t) = match self.send(req).await {
            Ok(x) => x,
            Err(e) => return TxnOutcome::Unknown(e.to_string()),
        };
        if s.is_server_error() {
            return TxnOutcome::Unknown(format!("HTTP {}: {}", s.as_u16(), truncate(&t, 300)));
        }
        if !s.is_success() {
            return TxnOutcome::Refused { code: s.as_u16(), body: t };
        }
        let v: Value = match serde_json::from_str(&t) {
            Ok(v) => v,
            // A 2xx we cannot read: we cannot say what happened.
            Err(e) => return TxnOutcome::Unknown(format!("unreadable 2xx answer ({e}): {}", truncate(&t, 300))),
        };
        match v.get("success").and_then(Value::as_bool) {
            Some(true) => TxnOutcome::Committed {
                results: v.get("results").and_then(Value::as_array).cloned().unwrap_or_default(),
            },
            Some(false) => TxnOutcome::RolledBack {
                reason: v.get("reason").and_then(Value::as_str).unwrap_or("unspecified").to_string(),
                failed_index: v.get("failedIndex").and_then(Value::as_u64).map(|x| x as usize),
                error: v.get("error").and_then(Value::as_str).unwrap_or("").to_string(),
            },
            None => TxnOutcome::Unknown(format!("2xx without success: {}", truncate(&t, 300))),
        }
    }

    /// POST /api/v1/fetch: one answer per entry, in order.
    pub async fn fetch(&self, entries: &[FetchEntry]) -> Result<Vec<Fetched>> {
        #[derive(Deserialize)]
        struct Answer {
            entries: Vec<Fetched>,
        }
        let (s, t) = self.post_json("/api/v1/fetch", &json!({ "entries": entries })).await?;
        ok_status(s, &t)?;
        let a: Answer = parse(&t)?;
        if a.entries.len() != entries.len() {
            return Err(Error::Shape(format!("fetch of {} entries answered {}", entries.len(), a.entries.len())));
        }
        Ok(a.entries)
    }

    /// Every record of one partition from `from` up to the high watermark seen
    /// at the last read. An unknown partition reads as empty.
    pub async fn fetch_all(&self, queue: &str, partition: &str, from: u64) -> Result<Vec<FetchedRecord>> {
        let mut out = Vec::new();
        let mut offset = from;
        loop {
            let mut got = self
                .fetch(&[FetchEntry { queue: queue.into(), partition: partition.into(), offset, max_bytes: 1 << 20 }])
                .await?;
            let f = got.pop().expect("one entry asked, one answered");
            match f.error.as_deref() {
                None => {}
                Some("UNKNOWN_TOPIC_OR_PARTITION") if offset == 0 => return Ok(out),
                Some(e) => return Err(Error::Shape(format!("fetch {queue}/{partition} at {offset}: {e}"))),
            }
            if offset < f.log_start_offset {
                return Err(Error::Shape(format!(
                    "fetch {queue}/{partition}: log starts at {} (retention?), asked {offset}",
                    f.log_start_offset
                )));
            }
            if f.records.is_empty() {
                if offset >= f.high_watermark {
                    return Ok(out);
                }
                return Err(Error::Shape(format!(
                    "fetch {queue}/{partition} at {offset}: no records below high watermark {}",
                    f.high_watermark
                )));
            }
            for r in f.records {
                if r.offset >= offset {
                    offset = r.offset + 1;
                    out.push(r);
                }
            }
            if offset >= f.high_watermark {
                return Ok(out);
            }
        }
    }

    /// GET /api/v1/resources/queues/:q (the queue view with `partitionList`).
    pub async fn queue_view(&self, queue: &str) -> Result<Value> {
        let (s, t) = self
            .send(self.http.get(self.url(&format!("/api/v1/resources/queues/{queue}"))).timeout(self.timeout))
            .await?;
        ok_status(s, &t)?;
        parse(&t)
    }
}

fn ok_status(s: StatusCode, body: &str) -> Result<()> {
    if s.is_success() {
        Ok(())
    } else {
        Err(Error::Status { code: s.as_u16(), body: body.to_string() })
    }
}

fn parse<T: for<'de> Deserialize<'de>>(t: &str) -> Result<T> {
    serde_json::from_str(t).map_err(|e| Error::Shape(format!("{e}: {}", truncate(t, 300))))
}

fn describe(e: &reqwest::Error) -> String {
    use std::error::Error as _;
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str(": ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    s
}
