//! Answers that hold the node's request memory (D88): a pop's or a fetch's
//! records are held before they are read from storage, and the answer made
//! of them keeps the hold until hyper has taken its last chunk, so answers
//! that clients do not read cannot add up past the budget.
//!
//! Owns the hold's life on the way out. Must never make an answer wait after
//! it is made (the bytes exist; only what would make more waits), and never
//! give the hold back while most of the answer is still unwritten: the body
//! is handed to hyper in chunks, and hyper asks for the next one only when
//! its write buffer has room, so what hyper has taken is at most its buffer.

use crate::App;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use baton_core::request_memory::MemoryHold;
use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

/// What hyper is handed at a time. Copied out, so the answer's buffer is freed
/// with the hold, not kept alive by the last chunks hyper has yet to write.
const CHUNK: usize = 64 << 10;

/// Waits until `raw` bytes (what is about to be read from storage) are free.
pub(crate) async fn before_read(app: &App, raw: u64) -> MemoryHold {
    app.cfg.request_memory.hold(usize::try_from(raw).unwrap_or(usize::MAX)).await
}

/// The answer `body`, holding `mem` (and whatever `body` came to past it) until sent.
pub(crate) fn json(app: &App, body: Vec<u8>, mut mem: MemoryHold) -> Response {
    let over = body.len().saturating_sub(mem.bytes());
    mem.absorb(app.cfg.request_memory.count(over));
    let body = Body::new(HeldBody { rest: body, at: 0, _mem: mem });
    ([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response()
}

struct HeldBody {
    rest: Vec<u8>,
    at: usize,
    /// Given back when hyper drops the body: after it took the last chunk, or with the connection.
    _mem: MemoryHold,
}

impl hyper::body::Body for HeldBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let me = &mut *self;
        if me.at >= me.rest.len() {
            me.rest = Vec::new();
            return Poll::Ready(None);
        }
        if me.at == 0 && me.rest.len() <= CHUNK {
            // The usual small answer: handed over whole, without a copy.
            let all = std::mem::take(&mut me.rest);
            me.at = usize::MAX;
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(all)))));
        }
        let end = (me.at + CHUNK).min(me.rest.len());
        let chunk = Bytes::copy_from_slice(&me.rest[me.at..end]);
        me.at = end;
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.at >= self.rest.len()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact((self.rest.len() - self.at.min(self.rest.len())) as u64)
    }
}
