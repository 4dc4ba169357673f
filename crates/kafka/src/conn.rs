//! One client connection: a reader that cuts frames and starts each request,
//! and a writer that sends the answers strictly in request order.
//!
//! Requests are pipelined: a request's work is *started* (its commands handed
//! to the engine) before the next frame is read, and only its answer waits.
//! Starting in order keeps Kafka's per-connection ordering (two produces to a
//! partition append in the order sent, which idempotent sequences depend on)
//! while a producer with several requests in flight gets them group-committed
//! together instead of one fdatasync each.
//!
//! The reader also holds the connection's SASL state (`sasl::Gate`): SASL
//! requests are answered here because they change that state, and nothing
//! else is started before authentication. Each request is counted when read
//! and timed when its answer is ready; the connection's end is counted once,
//! with its reason. A connection with nothing read and nothing in flight for
//! the idle time is closed, so idle clients cannot hold descriptors forever.
//!
//! Every frame holds its claimed size of the node's request memory (D87) from
//! the moment its length prefix is read until its answer is ready: past the
//! budget the reader waits before reading the frame's bytes, and a frame
//! whose bytes do not all arrive within the request read timeout closes the
//! connection, so a client trickling frames cannot keep memory forever. An
//! answer that carries records keeps the hold its handler took for them
//! (D88) until the writer has put it in the socket.

use crate::frame::{self, Parsed};
use crate::metrics::CloseReason;
use crate::sasl::{Gate, Verdict};
use crate::{handler, Ctx, KafkaStats};
use baton_core::request_memory::MemoryHold;
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufWriter};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// Requests started but not yet answered, per connection. Past this the
/// reader stops reading, which pushes back on the client through TCP.
const MAX_IN_FLIGHT: usize = 64;

/// What a request produces: a response frame, nothing (Produce with acks=0),
/// or a reason to close the connection.
pub type Reply = Result<Option<Answer>, String>;

/// A response frame and the request memory held for what it carries (a
/// Fetch's records, D88), given back once the frame is written: an answer a
/// client does not read stays counted until the connection closes.
pub struct Answer {
    pub frame: Bytes,
    pub mem: MemoryHold,
}

impl From<Bytes> for Answer {
    fn from(frame: Bytes) -> Answer {
        Answer { frame, mem: MemoryHold::none() }
    }
}
type Pending = Pin<Box<dyn Future<Output = Reply> + Send>>;

enum Slot {
    Done(Reply),
    Pending(Pending),
}

/// A slot and what the writer needs to time and count it: the API (none for
/// a bare SASL token) and when its frame was read.
struct Item {
    slot: Slot,
    api: Option<ApiKey>,
    /// The request's memory (D87), given back once its answer is ready.
    mem: MemoryHold,
    at: Instant,
}

/// Run the request up to its first wait, so whatever it hands the engine is
/// handed over now, in arrival order. The future is polled again later by
/// the writer with a real waker; every future here re-registers on each poll.
fn start(mut fut: Pending) -> Slot {
    let mut cx = Context::from_waker(Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(r) => Slot::Done(r),
        Poll::Pending => Slot::Pending(fut),
    }
}

pub async fn serve(stream: TcpStream, peer: SocketAddr, ctx: Arc<Ctx>) {
    let (mut rd, wr) = stream.into_split();
    let (tx, rx) = mpsc::channel::<Item>(MAX_IN_FLIGHT);
    let in_flight = Arc::new(AtomicUsize::new(0));
    let stall = ctx.cfg.connections_max_idle;
    let writer = tokio::spawn(write_loop(wr, rx, peer, ctx.stats.clone(), in_flight.clone(), stall));
    // Every item sent is counted here and uncounted by the writer once written.
    let send = |item: Item| {
        in_flight.fetch_add(1, Relaxed);
        tx.send(item)
    };
    let mut gate = Gate::new(ctx.cfg.sasl_users.clone());
    let mut buf = BytesMut::with_capacity(16 << 10);
    // The frame at the head of `buf`: its memory, and when it must be whole.
    let mut head: Option<(MemoryHold, Instant)> = None;
    let end: Option<(CloseReason, String)> = loop {
        let max = gate.max_frame(ctx.cfg.max_frame_bytes);
        if head.is_none() {
            if let Some(n) = frame::claimed(&buf, max) {
                let mem = ctx.cfg.request_memory.hold(n).await;
                head = Some((mem, Instant::now() + ctx.cfg.request_read_timeout));
            }
        }
        // Taken with the frame it was held for.
        let mut take_mem = || head.take().map_or_else(MemoryHold::none, |(m, _)| m);
        if gate.expects_raw_token() {
            match frame::next_raw(&mut buf, max) {
                Err(e) => break Some((CloseReason::BadFrame, e.to_string())),
                Ok(Some(token)) => {
                    let at = Instant::now();
                    match gate.raw_token(&token, &ctx.stats) {
                        Ok(reply) => {
                            let item =
                                Item { slot: Slot::Done(Ok(Some(reply.into()))), api: None, at, mem: take_mem() };
                            if send(item).await.is_err() {
                                break None;
                            }
                            continue;
                        }
                        Err(reason) => break Some((CloseReason::SaslFailed, reason)),
                    }
                }
                Ok(None) => {}
            }
        } else {
            match frame::next_frame(&mut buf, max) {
                Err(e) => break Some((CloseReason::BadFrame, e.to_string())),
                Ok(Some(f)) => {
                    let at = Instant::now();
                    KafkaStats::bump(&ctx.stats.requests);
                    let parsed = match frame::parse(f) {
                        Ok(p) => p,
                        Err(e) => break Some((CloseReason::BadFrame, e.to_string())),
                    };
                    let api = match &parsed {
                        Parsed::Request(r) | Parsed::Unsupported(r) => r.api,
                        Parsed::ApiVersionsFallback { .. } => ApiKey::ApiVersions,
                    };
                    ctx.stats.request(api);
                    let (slot, close) = match gate.admit(&parsed, &ctx.stats) {
                        Verdict::Refuse(reason) => break Some((CloseReason::Unauthenticated, reason)),
                        Verdict::Answer { body, close } => {
                            ctx.stats.answered(api, &body);
                            let (cid, version) = match &parsed {
                                Parsed::Request(r) | Parsed::Unsupported(r) => (r.header.correlation_id, r.version),
                                Parsed::ApiVersionsFallback { correlation_id } => (*correlation_id, 0),
                            };
                            (
                                Slot::Done(frame::encode_response(cid, api, version, &body).map(|f| Some(f.into()))),
                                close,
                            )
                        }
                        Verdict::Pass => {
                            if let Parsed::Unsupported(r) = &parsed {
                                let n = KafkaStats::bump(&ctx.stats.unsupported_versions);
                                tracing::info!(%peer, api = ?r.api, version = r.version, unsupported_total = n,
                                    "kafka: unsupported version, answering UNSUPPORTED_VERSION");
                            }
                            (start(Box::pin(handler::handle(ctx.clone(), parsed, peer))), None)
                        }
                    };
                    if send(Item { slot, api: Some(api), at, mem: take_mem() }).await.is_err() {
                        break None;
                    }
                    if let Some(reason) = close {
                        break Some((CloseReason::SaslFailed, reason));
                    }
                    continue;
                }
                Ok(None) => {}
            }
        }
        let idle = ctx.cfg.connections_max_idle;
        let wait = head.as_ref().map_or(idle, |(_, by)| by.saturating_duration_since(Instant::now()).min(idle));
        let read = tokio::select! {
            r = tokio::time::timeout(wait, rd.read_buf(&mut buf)) => r,
            // The writer stopped (a client that takes no answers, an answer that cannot be
            // made) and has counted why; nothing read now could be answered.
            _ = tx.closed() => break None,
        };
        let read = match read {
            Ok(r) => r,
            Err(_) if head.as_ref().is_some_and(|(_, by)| Instant::now() >= *by) => {
                let secs = ctx.cfg.request_read_timeout.as_secs_f64();
                let reason =
                    format!("a request's bytes did not all arrive within {secs} s ({} of them read)", buf.len());
                break Some((CloseReason::ReadTimeout, reason));
            }
            // A request still being answered (a long poll) is not idleness.
            Err(_) if in_flight.load(Relaxed) > 0 => continue,
            Err(_) => {
                let ms = ctx.cfg.connections_max_idle.as_millis();
                break Some((CloseReason::Idle, format!("idle for {ms} ms (kafka connections max idle)")));
            }
        };
        match read {
            Ok(0) if buf.is_empty() => break None,
            Ok(0) => {
                let reason = format!("connection closed inside a frame ({} bytes unread)", buf.len());
                break Some((CloseReason::BadFrame, reason));
            }
            Ok(_) => {}
            Err(e) => break Some((CloseReason::Io, format!("read failed: {e}"))),
        }
    };
    // Counted before the writer closes the socket, so a client that sees
    // the close also sees it counted.
    if let Some((why, _)) = &end {
        ctx.stats.close(*why);
    }
    match &end {
        Some((CloseReason::BadFrame, reason)) => {
            let n = KafkaStats::bump(&ctx.stats.bad_frames);
            tracing::warn!(%peer, %reason, bad_frames_total = n, "kafka: bad frame, closing connection");
        }
        Some((CloseReason::Unauthenticated, reason)) => {
            let n = ctx.stats.closed(CloseReason::Unauthenticated);
            tracing::warn!(%peer, %reason, unauthenticated_total = n,
                "kafka: request before SASL authentication, closing connection");
        }
        Some((CloseReason::SaslFailed, reason)) => {
            let n = ctx.stats.closed(CloseReason::SaslFailed);
            tracing::warn!(%peer, %reason, sasl_failed_total = n, "kafka: SASL failed, closing connection");
        }
        Some((_, reason)) => tracing::debug!(%peer, %reason, "kafka: closing connection"),
        None => {}
    }
    // Answers already started are still written; then the writer closes.
    drop(tx);
    let wrote = writer.await.unwrap_or(Some(CloseReason::Io));
    let why = match &end {
        Some((why, _)) => *why,
        None => {
            let why = wrote.unwrap_or(CloseReason::Client);
            ctx.stats.close(why);
            why
        }
    };
    if let Some(user) = gate.user() {
        tracing::debug!(%peer, user, reason = why.label(), "kafka: authenticated connection closed");
    }
}

/// Uncounts one in-flight item when its answer is done with, however the
/// writer leaves the loop.
struct Uncount<'a>(&'a AtomicUsize);

impl Drop for Uncount<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// Returns why it stopped early, if it did.
async fn write_loop(
    wr: OwnedWriteHalf,
    mut rx: mpsc::Receiver<Item>,
    peer: SocketAddr,
    stats: Arc<KafkaStats>,
    in_flight: Arc<AtomicUsize>,
    stall: Duration,
) -> Option<CloseReason> {
    let mut w = BufWriter::with_capacity(64 << 10, wr);
    // A client that takes no bytes of its answers for the idle time is idle, though
    // answers wait (Kafka's Selector sees no activity either): its answers are
    // dropped with the connection instead of kept in memory for as long as it likes.
    let stalled = |r: Result<std::io::Result<()>, tokio::time::error::Elapsed>| match r {
        Ok(Ok(())) => None,
        Ok(Err(_)) => Some(CloseReason::Io),
        Err(_) => Some(CloseReason::Idle),
    };
    while let Some(item) = rx.recv().await {
        let _done = Uncount(&in_flight);
        let reply = match item.slot {
            Slot::Done(r) => r,
            Slot::Pending(f) => {
                // Send what is already answered before waiting on this one.
                if !w.buffer().is_empty() {
                    if let Some(why) = stalled(tokio::time::timeout(stall, w.flush()).await) {
                        return Some(why);
                    }
                }
                f.await
            }
        };
        // The request is handled: its bytes are dropped with its future.
        drop(item.mem);
        if let Some(api) = item.api {
            stats.latency(api, item.at.elapsed());
            if reply.is_err() {
                stats.unanswered(api);
            }
        }
        match reply {
            Ok(Some(Answer { frame, mem })) => {
                if let Some(why) = stalled(tokio::time::timeout(stall, w.write_all(&frame)).await) {
                    return Some(why);
                }
                // Its bytes are in the socket or in the writer's buffer (at most its capacity).
                drop((frame, mem));
            }
            Ok(None) => {}
            Err(reason) => {
                tracing::error!(%peer, %reason, "kafka: cannot answer, closing connection");
                let _ = w.flush().await;
                let _ = w.shutdown().await;
                return Some(CloseReason::Unanswerable);
            }
        }
        // Flush when nothing else is ready, so pipelined answers share a write.
        if rx.is_empty() {
            if let Some(why) = stalled(tokio::time::timeout(stall, w.flush()).await) {
                return Some(why);
            }
        }
    }
    let _ = w.flush().await;
    let _ = w.shutdown().await;
    None
}
