//! One client connection: a reader that cuts frames and starts each request,
//! and a writer that sends the answers strictly in request order.
//!
//! Requests are pipelined: a request's work is *started* (its commands handed
//! to the engine) before the next frame is read, and only its answer waits.
//! Starting in order keeps Kafka's per-connection ordering (two produces to a
//! partition append in the order sent, which idempotent sequences depend on)
//! while a producer with several requests in flight gets them group-committed
//! together instead of one fdatasync each.

use crate::frame::{self, Parsed};
use crate::{handler, Ctx, KafkaStats};
use bytes::{Bytes, BytesMut};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufWriter};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// Requests started but not yet answered, per connection. Past this the
/// reader stops reading, which pushes back on the client through TCP.
const MAX_IN_FLIGHT: usize = 64;

/// What a request produces: a response frame, nothing (Produce with acks=0),
/// or a reason to close the connection.
pub type Reply = Result<Option<Bytes>, String>;
type Pending = Pin<Box<dyn Future<Output = Reply> + Send>>;

enum Slot {
    Done(Reply),
    Pending(Pending),
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
    let (tx, rx) = mpsc::channel::<Slot>(MAX_IN_FLIGHT);
    let writer = tokio::spawn(write_loop(wr, rx, peer));
    let mut buf = BytesMut::with_capacity(16 << 10);
    let bad: Option<String> = loop {
        match frame::next_frame(&mut buf, ctx.cfg.max_frame_bytes) {
            Err(e) => break Some(e.to_string()),
            Ok(Some(f)) => {
                KafkaStats::bump(&ctx.stats.requests);
                let parsed = match frame::parse(f) {
                    Ok(p) => p,
                    Err(e) => break Some(e.to_string()),
                };
                if let Parsed::Unsupported(r) = &parsed {
                    let n = KafkaStats::bump(&ctx.stats.unsupported_versions);
                    tracing::info!(%peer, api = ?r.api, version = r.version, unsupported_total = n,
                        "kafka: unsupported version, answering UNSUPPORTED_VERSION");
                }
                let slot = start(Box::pin(handler::handle(ctx.clone(), parsed, peer)));
                if tx.send(slot).await.is_err() {
                    break None;
                }
                continue;
            }
            Ok(None) => {}
        }
        match rd.read_buf(&mut buf).await {
            Ok(0) if buf.is_empty() => break None,
            Ok(0) => break Some(format!("connection closed inside a frame ({} bytes unread)", buf.len())),
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(%peer, error = %e, "kafka: read failed");
                break None;
            }
        }
    };
    if let Some(reason) = bad {
        let n = KafkaStats::bump(&ctx.stats.bad_frames);
        tracing::warn!(%peer, %reason, bad_frames_total = n, "kafka: bad frame, closing connection");
    }
    // Answers already started are still written; then the writer closes.
    drop(tx);
    let _ = writer.await;
}

async fn write_loop(wr: OwnedWriteHalf, mut rx: mpsc::Receiver<Slot>, peer: SocketAddr) {
    let mut w = BufWriter::with_capacity(64 << 10, wr);
    while let Some(slot) = rx.recv().await {
        let reply = match slot {
            Slot::Done(r) => r,
            Slot::Pending(f) => {
                // Send what is already answered before waiting on this one.
                if !w.buffer().is_empty() && w.flush().await.is_err() {
                    return;
                }
                f.await
            }
        };
        match reply {
            Ok(Some(frame)) => {
                if w.write_all(&frame).await.is_err() {
                    return;
                }
            }
            Ok(None) => {}
            Err(reason) => {
                tracing::error!(%peer, %reason, "kafka: cannot answer, closing connection");
                break;
            }
        }
        // Flush when nothing else is ready, so pipelined answers share a write.
        if rx.is_empty() && w.flush().await.is_err() {
            return;
        }
    }
    let _ = w.flush().await;
    let _ = w.shutdown().await;
}
