//! The `baton push|pop|ack|queues|groups|tail|cluster` subcommands: a thin layer over
//! `baton-client`, one call (or one loop of calls) per subcommand.
//!
//! Owns only argument parsing, printing (JSON lines on stdout, progress and
//! errors on stderr) and the loops of `push --file` and `tail`. Must never
//! speak HTTP itself (the client does), never ack a message it has not
//! printed, and never hold more of an input file than one request's batch.

use baton_client::{Ack, AckResult, Client, Error, PopOptions, PoppedMessage, PushItem, PushResult, DEFAULT_URL};
use clap::Args;
use serde_json::Value;
use std::io::{BufRead, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Args, Debug, Clone)]
pub struct Conn {
    /// Baton's HTTP address.
    #[arg(long, env = "BATON_URL", default_value = DEFAULT_URL)]
    pub url: String,
}

#[derive(Args, Debug)]
pub struct PushArgs {
    #[command(flatten)]
    pub conn: Conn,
    pub queue: String,
    /// The payload, as JSON (`'{"n": 1}'`, `'"text"'`). Or use --file.
    #[arg(required_unless_present = "file", conflicts_with = "file")]
    pub payload: Option<String>,
    /// Partition (the server's `Default` when left out).
    #[arg(long)]
    pub partition: Option<String>,
    /// Transaction id (dedup key); the server mints one when left out.
    #[arg(long = "txid", conflicts_with = "file")]
    pub txid: Option<String>,
    /// Push every line of this file (`-`: stdin) as one payload, in order.
    #[arg(long)]
    pub file: Option<String>,
    /// Items per push request with --file.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub batch: u32,
    /// With --file: a push request is sent once its payloads reach this many bytes
    /// (keep it under the server's --max-body-bytes).
    #[arg(long, env = "BATON_CLI_MAX_REQUEST_BYTES", default_value_t = 4 << 20)]
    pub max_request_bytes: usize,
    /// With --file: a longer line is refused (the file is not read into memory past it).
    #[arg(long, env = "BATON_CLI_MAX_LINE_BYTES", default_value_t = 16 << 20)]
    pub max_line_bytes: usize,
}

#[derive(Args, Debug)]
pub struct PopArgs {
    #[command(flatten)]
    pub conn: Conn,
    pub queue: String,
    #[arg(long)]
    pub partition: Option<String>,
    /// Most messages.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub batch: u32,
    /// Consumer group (queue mode when left out).
    #[arg(long)]
    pub group: Option<String>,
    /// Long-poll up to this many seconds for a message (the server caps a wait at 60).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=60))]
    pub wait: Option<u64>,
    /// Ack (completed) each message once it is printed.
    #[arg(long)]
    pub ack: bool,
}

#[derive(Args, Debug)]
pub struct AckArgs {
    #[command(flatten)]
    pub conn: Conn,
    #[arg(long)]
    pub partition_id: String,
    #[arg(long)]
    pub lease_id: Option<String>,
    #[arg(long = "txid")]
    pub txid: String,
    #[arg(long, default_value = "completed", value_parser = ["completed", "failed", "retry", "dlq"])]
    pub status: String,
    #[arg(long)]
    pub group: Option<String>,
    /// Why it failed (shown by the DLQ view).
    #[arg(long)]
    pub error: Option<String>,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Args, Debug)]
pub struct TailArgs {
    #[command(flatten)]
    pub conn: Conn,
    pub queue: String,
    /// Consumer group (queue mode when left out); tail acks what it prints in it.
    #[arg(long)]
    pub group: Option<String>,
    /// Stop after this many messages (else until Ctrl-C).
    #[arg(long)]
    pub count: Option<u64>,
    /// Most messages per pop.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub batch: u32,
}

/// An error as the CLI shows it: the server's code and message first.
fn show(e: Error) -> String {
    match e {
        Error::Api { status, code: Some(code), message, .. } => format!("{code}: {message} (HTTP {status})"),
        Error::Api { status, code: None, message, .. } => format!("HTTP {status}: {message}"),
        other => other.to_string(),
    }
}

fn client(c: &Conn) -> Result<Client, String> {
    Client::new(&c.url, 1).map_err(show)
}

/// Run `f` on a one-thread runtime: each subcommand is one caller.
fn block_on<F: std::future::Future<Output = Result<(), String>>>(f: F) -> Result<(), String> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| format!("runtime: {e}"))?.block_on(f)
}

fn print_line(v: &impl serde::Serialize) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, v).map_err(|e| format!("stdout: {e}"))?;
    writeln!(out).map_err(|e| format!("stdout: {e}"))
}

fn item_failed(r: &PushResult, what: &str) -> String {
    format!(
        "{}: {what}: {}",
        r.code.as_deref().unwrap_or("push_failed"),
        r.error.as_deref().unwrap_or("the server did not say why")
    )
}

pub fn push(a: PushArgs) -> Result<(), String> {
    block_on(async move {
        let c = client(&a.conn)?;
        match &a.file {
            None => {
                let text = a.payload.as_deref().unwrap_or_default();
                let payload: Value =
                    serde_json::from_str(text).map_err(|e| format!("invalid_json: the payload is not JSON: {e}"))?;
                let item = PushItem {
                    queue: a.queue.clone(),
                    partition: a.partition.clone(),
                    transaction_id: a.txid.clone(),
                    payload,
                };
                let r = c.push(&[item]).await.map_err(show)?.remove(0);
                print_line(&r)?;
                if r.status == "failed" {
                    return Err(item_failed(&r, "the item was not queued"));
                }
                Ok(())
            }
            Some(path) => push_file(&c, &a, path).await,
        }
    })
}

/// Read one line of at most `max` bytes (without its newline); `None` at the end.
fn read_line<R: BufRead>(r: &mut R, max: usize, buf: &mut Vec<u8>) -> Result<Option<()>, String> {
    buf.clear();
    let n = r.by_ref().take(max as u64 + 1).read_until(b'\n', buf).map_err(|e| format!("read: {e}"))?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
    } else if buf.len() > max {
        return Err(format!("line_too_long: a line is over --max-line-bytes ({max})"));
    }
    Ok(Some(()))
}

async fn push_file(c: &Client, a: &PushArgs, path: &str) -> Result<(), String> {
    let mut input: Box<dyn BufRead> = if path == "-" {
        Box::new(std::io::BufReader::new(std::io::stdin()))
    } else {
        let f = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
        Box::new(std::io::BufReader::new(f))
    };
    let pushed = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    // The progress line comes from its own task, so it keeps its pace while a push is slow.
    let progress = {
        let pushed = pushed.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.tick().await;
            loop {
                tick.tick().await;
                let n = pushed.load(Relaxed);
                eprintln!("push: {n} pushed, {:.0}/s", n as f64 / t0.elapsed().as_secs_f64());
            }
        })
    };
    let res = push_lines(c, a, &mut input, &pushed).await;
    progress.abort();
    let n = pushed.load(Relaxed);
    let secs = t0.elapsed().as_secs_f64();
    match res {
        Ok(dups) => {
            eprintln!("push: {n} pushed ({dups} duplicate) in {secs:.1} s, {:.0}/s", n as f64 / secs.max(1e-9));
            Ok(())
        }
        Err(e) => Err(format!("{e} ({n} pushed before it)")),
    }
}

/// Push the lines in order, a batch per request; the number of duplicates.
async fn push_lines(c: &Client, a: &PushArgs, input: &mut impl BufRead, pushed: &AtomicU64) -> Result<u64, String> {
    let mut line = Vec::new();
    let mut batch: Vec<PushItem> = Vec::new();
    let (mut bytes, mut line_no, mut first_line, mut dups) = (0usize, 0u64, 1u64, 0u64);
    loop {
        let more = read_line(input, a.max_line_bytes, &mut line).map_err(|e| format!("line {}: {e}", line_no + 1))?;
        if more.is_some() {
            line_no += 1;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let payload: Value =
                serde_json::from_slice(&line).map_err(|e| format!("invalid_json: line {line_no} is not JSON: {e}"))?;
            bytes += line.len();
            batch.push(PushItem {
                queue: a.queue.clone(),
                partition: a.partition.clone(),
                transaction_id: None,
                payload,
            });
        }
        let full = batch.len() >= a.batch as usize || bytes >= a.max_request_bytes;
        if !batch.is_empty() && (full || more.is_none()) {
            let results = c.push(&batch).await.map_err(show)?;
            for (i, r) in results.iter().enumerate() {
                match r.status.as_str() {
                    "failed" => {
                        pushed.fetch_add(i as u64, Relaxed);
                        return Err(item_failed(
                            r,
                            &format!("the item of line {} was not queued", first_line + i as u64),
                        ));
                    }
                    "duplicate" => dups += 1,
                    _ => {}
                }
            }
            pushed.fetch_add(batch.len() as u64, Relaxed);
            batch.clear();
            bytes = 0;
            first_line = line_no + 1;
        }
        if more.is_none() {
            return Ok(dups);
        }
    }
}

/// Print each message, then ack (completed, in `group`) the ones printed.
async fn print_and_ack(
    c: &Client,
    msgs: &[PoppedMessage],
    lease: Option<&str>,
    group: Option<&str>,
    ack: bool,
) -> Result<(), String> {
    let mut printed = 0;
    let mut out = Ok(());
    for m in msgs {
        if let Err(e) = print_line(m) {
            out = Err(e);
            break;
        }
        printed += 1;
    }
    if ack && printed > 0 {
        let acks: Vec<Ack> = msgs[..printed]
            .iter()
            .map(|m| Ack { consumer_group: group.map(str::to_string), ..Ack::completed(m, lease) })
            .collect();
        let results = c.ack_batch(&acks).await.map_err(show)?;
        if let Some(r) = results.iter().find(|r| !r.success) {
            return Err(ack_refused(r));
        }
    }
    out
}

fn ack_refused(r: &AckResult) -> String {
    format!(
        "{}: {}",
        r.code.as_deref().unwrap_or("ack_refused"),
        r.error.as_deref().unwrap_or("the server did not say why")
    )
}

pub fn pop(a: PopArgs) -> Result<(), String> {
    block_on(async move {
        let c = client(&a.conn)?;
        let o = PopOptions {
            partition: a.partition.clone(),
            batch: Some(a.batch),
            wait_ms: a.wait.map(|s| s * 1000),
            group: a.group.clone(),
            ..Default::default()
        };
        let Some(p) = c.pop_with(&a.queue, &o).await.map_err(show)? else { return Ok(()) };
        print_and_ack(&c, &p.messages, p.lease_id.as_deref(), a.group.as_deref(), a.ack).await
    })
}

pub fn ack(a: AckArgs) -> Result<(), String> {
    block_on(async move {
        let c = client(&a.conn)?;
        let ack = Ack {
            transaction_id: a.txid,
            partition_id: a.partition_id,
            lease_id: a.lease_id,
            status: a.status,
            error: a.error,
            consumer_group: a.group,
        };
        let r = c.ack(&ack).await.map_err(show)?;
        print_line(&r)?;
        if !r.success {
            return Err(ack_refused(&r));
        }
        Ok(())
    })
}

/// Print each element of `v[key]` (or of `v` itself when it is a list) as a JSON line.
fn print_each(v: &Value, key: &str) -> Result<(), String> {
    match v.get(key).unwrap_or(v) {
        Value::Array(items) => items.iter().try_for_each(print_line),
        other => print_line(other),
    }
}

#[derive(Args, Debug)]
pub struct ClusterArgs {
    #[command(flatten)]
    pub conn: Conn,
    #[command(subcommand)]
    pub op: ClusterOp,
    /// Longest wait for the answer, in seconds (a member joining catches up first).
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
}

#[derive(clap::Subcommand, Debug)]
pub enum ClusterOp {
    /// The member's view of its cluster (GET /cluster).
    Status,
    /// Add a member as a voter once it has caught up (start it first with --peers naming it).
    Add {
        /// The new member's node id.
        #[arg(long)]
        id: u64,
        /// Its Raft address, HOST:PORT (what it listens on for Raft).
        #[arg(long)]
        raft_addr: String,
    },
    /// Take a member out of the membership (a dead one, to replace it).
    Remove {
        #[arg(long)]
        id: u64,
    },
}

pub fn cluster(a: ClusterArgs) -> Result<(), String> {
    block_on(async move {
        let mut c = client(&a.conn)?;
        c.timeout = Duration::from_secs(a.timeout.max(1));
        let v = match a.op {
            ClusterOp::Status => c.cluster().await,
            ClusterOp::Add { id, raft_addr } => c.add_member(id, &raft_addr).await,
            ClusterOp::Remove { id } => c.remove_member(id).await,
        };
        print_line(&v.map_err(show)?)
    })
}

pub fn queues(a: ListArgs) -> Result<(), String> {
    block_on(async move { print_each(&client(&a.conn)?.queues().await.map_err(show)?, "queues") })
}

pub fn groups(a: ListArgs) -> Result<(), String> {
    block_on(async move { print_each(&client(&a.conn)?.groups().await.map_err(show)?, "groups") })
}

pub fn tail(a: TailArgs) -> Result<(), String> {
    block_on(async move {
        let c = client(&a.conn)?;
        let mut seen = 0u64;
        let stop = tokio::signal::ctrl_c();
        tokio::pin!(stop);
        while a.count.is_none_or(|n| seen < n) {
            // Never lease more than is left to print: the rest would wait out its lease.
            let batch = a.count.map_or(a.batch as u64, |n| (n - seen).min(a.batch as u64)) as u32;
            let o =
                PopOptions { batch: Some(batch), wait_ms: Some(30_000), group: a.group.clone(), ..Default::default() };
            let popped = tokio::select! {
                r = c.pop_with(&a.queue, &o) => r.map_err(show)?,
                _ = &mut stop => return Ok(()),
            };
            let Some(p) = popped else { continue };
            print_and_ack(&c, &p.messages, p.lease_id.as_deref(), a.group.as_deref(), true).await?;
            seen += p.messages.len() as u64;
        }
        Ok(())
    })
}
