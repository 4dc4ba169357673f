//! The request-memory budget (D87): bytes of client requests being read or
//! read and not yet answered, over both front doors together; and (D88) the
//! bytes of answers that carry records, from before the records are read
//! until the answer is written.
//!
//! A door takes a hold for a request's claimed size (a Kafka frame's length
//! prefix, an HTTP body's length) before it reads the request's bytes, and
//! drops it once the request is handled. Past the budget a door reads nothing
//! more from that connection until memory is given back, so the client is
//! slowed by TCP, as a RabbitMQ memory alarm or Kafka's
//! `queued.max.request.bytes` slows it.
//!
//! A hold is taken as soon as its size is free, not in the order asked: a
//! heartbeat is not kept behind a 100 MiB produce waiting for room. And the
//! last eighth of the budget is only for requests of at most
//! [`SMALL_REQUEST`] bytes, so clients trickling large frames (each held until
//! the read deadline) can fill seven eighths but never stop the small
//! requests of everyone else.
//!
//! Owns only the count. Must never refuse a request and never block a thread:
//! a hold is awaited. A request larger than what it may take cannot exist
//! (`baton serve` refuses to start unless [`RequestMemory::largest`] holds the
//! largest Kafka frame and HTTP body), and what bounds a hold's life is the
//! door's read deadline (`--request-read-timeout-secs`: a request's bytes
//! arrive whole within it or the connection closes) and the engine's bounds.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::Arc;
use tokio::sync::Notify;

/// `--max-request-memory-mb`'s default.
pub const DEFAULT_MAX_REQUEST_MEMORY_MB: u64 = 1024;
/// `--request-read-timeout-secs`'s default.
pub const DEFAULT_REQUEST_READ_TIMEOUT_SECS: u64 = 30;
/// Requests up to this size may use the last eighth of the budget.
pub const SMALL_REQUEST: usize = 64 << 10;

#[derive(Debug)]
pub struct RequestMemory {
    limit: usize,
    /// Kept for small requests: a large one leaves this much free.
    reserve: usize,
    held: AtomicUsize,
    /// Holds waiting; a drop wakes them only when there are any (no lock per request).
    waiting: AtomicUsize,
    freed: Notify,
    waits: AtomicU64,
}

/// Memory held for one request; given back when dropped.
#[derive(Debug)]
pub struct MemoryHold(Option<(Arc<RequestMemory>, usize)>);

impl MemoryHold {
    /// Holds nothing (a request with no bytes to read).
    pub fn none() -> MemoryHold {
        MemoryHold(None)
    }

    /// Takes `other` into this one, both given back together. Holds of another budget
    /// (there is one per node) are given back now rather than mixed in.
    pub fn absorb(&mut self, mut other: MemoryHold) {
        match (&mut self.0, other.0.take()) {
            (_, None) => {}
            (None, theirs) => self.0 = theirs,
            (Some((m, n)), Some((o, k))) if Arc::ptr_eq(m, &o) => *n += k,
            (Some(_), theirs) => drop(MemoryHold(theirs)),
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.0.as_ref().map_or(0, |(_, n)| *n)
    }
}

impl Drop for MemoryHold {
    fn drop(&mut self) {
        if let Some((m, n)) = self.0.take() {
            // SeqCst with `hold`'s: a waiter either is seen here and woken, or its
            // try comes after this and sees the memory given back.
            m.held.fetch_sub(n, SeqCst);
            if m.waiting.load(SeqCst) > 0 {
                m.freed.notify_waiters();
            }
        }
    }
}

impl RequestMemory {
    pub fn new(limit_bytes: usize) -> Arc<RequestMemory> {
        Arc::new(RequestMemory::with_limit(limit_bytes))
    }

    fn with_limit(limit_bytes: usize) -> RequestMemory {
        let limit = limit_bytes.max(1);
        RequestMemory {
            limit,
            reserve: limit / 8,
            held: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            freed: Notify::new(),
            waits: AtomicU64::new(0),
        }
    }

    /// The largest request that can be held.
    pub fn largest(&self) -> usize {
        (self.limit - self.reserve).max(SMALL_REQUEST.min(self.limit))
    }

    /// Takes `n` (already clamped) if it is free now, under the same rule as [`Self::hold`].
    fn take(&self, n: usize) -> bool {
        let floor = if n > SMALL_REQUEST { self.reserve } else { 0 };
        self.held.fetch_update(SeqCst, SeqCst, |h| (h + n + floor <= self.limit).then_some(h + n)).is_ok()
    }

    /// Holds `bytes` (at most [`Self::largest`]) if they are free now, without waiting:
    /// for a caller that can make do with less (a Fetch answer trimmed to its first batch).
    pub fn try_hold(self: &Arc<Self>, bytes: usize) -> Option<MemoryHold> {
        let n = bytes.min(self.largest());
        if n == 0 {
            return Some(MemoryHold(None));
        }
        self.take(n).then(|| MemoryHold(Some((self.clone(), n))))
    }

    /// Counts `bytes` already in memory, without waiting and past the budget if need be: an
    /// answer that came out larger than what was held before it was made (JSON's escapes).
    /// Anything that waits for a hold waits for these to be given back too.
    pub fn count(self: &Arc<Self>, bytes: usize) -> MemoryHold {
        if bytes == 0 {
            return MemoryHold(None);
        }
        self.held.fetch_add(bytes, SeqCst);
        MemoryHold(Some((self.clone(), bytes)))
    }

    /// Waits until `bytes` (at most [`Self::largest`]) are free, then holds them.
    pub async fn hold(self: &Arc<Self>, bytes: usize) -> MemoryHold {
        let n = bytes.min(self.largest());
        if n == 0 {
            return MemoryHold(None);
        }
        let take = || self.take(n);
        if take() {
            return MemoryHold(Some((self.clone(), n)));
        }
        self.waits.fetch_add(1, Relaxed);
        // Counted out however the wait ends, a client gone mid-wait included.
        let _waiting = Waiting::new(&self.waiting);
        loop {
            // Registered before the try, so memory freed between the two wakes it.
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if take() {
                return MemoryHold(Some((self.clone(), n)));
            }
            freed.await;
        }
    }

    /// Bytes held now.
    pub fn held(&self) -> usize {
        self.held.load(Relaxed)
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Holds that had to wait for memory, since start.
    pub fn waits(&self) -> u64 {
        self.waits.load(Relaxed)
    }
}

struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(count: &'a AtomicUsize) -> Waiting<'a> {
        count.fetch_add(1, SeqCst);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

impl Default for RequestMemory {
    fn default() -> Self {
        RequestMemory::with_limit((DEFAULT_MAX_REQUEST_MEMORY_MB << 20) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const MB: usize = 1 << 20;

    fn spawn_hold(m: &Arc<RequestMemory>, n: usize) -> tokio::task::JoinHandle<MemoryHold> {
        let m = m.clone();
        tokio::spawn(async move { m.hold(n).await })
    }

    async fn settle() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    #[tokio::test]
    async fn large_holds_wait_past_seven_eighths_and_small_ones_pass_them() {
        let m = RequestMemory::new(8 * MB);
        assert_eq!(m.largest(), 7 * MB);
        let a = m.hold(4 * MB).await;
        let b = m.hold(3 * MB).await;
        assert_eq!((m.held(), m.waits()), (7 * MB, 0));
        // 1 MiB is free, but it is the small requests' eighth.
        let big = spawn_hold(&m, 2 * MB);
        settle().await;
        assert!(!big.is_finished(), "a large hold must not take the last eighth");
        assert_eq!(m.waits(), 1, "the wait is counted when it begins");
        // Small requests pass the waiting large one, up to the whole budget.
        let smalls: Vec<MemoryHold> = take_smalls(&m, 16, SMALL_REQUEST).await;
        assert_eq!(m.held(), 8 * MB);
        let one_more = spawn_hold(&m, 1);
        settle().await;
        assert!(!one_more.is_finished(), "nothing past the budget, however small");
        drop(a);
        let big = tokio::time::timeout(Duration::from_secs(5), big).await.unwrap().unwrap();
        let one_more = tokio::time::timeout(Duration::from_secs(5), one_more).await.unwrap().unwrap();
        assert_eq!(m.held(), 3 * MB + MB + 2 * MB + 1, "b, the smalls, big and one byte");
        drop((b, big, one_more, smalls));
        assert_eq!(m.held(), 0);
    }

    #[tokio::test]
    async fn try_hold_takes_only_what_is_free_now_under_the_same_rule() {
        let m = RequestMemory::new(8 * MB);
        let a = m.try_hold(6 * MB).expect("free");
        assert!(m.try_hold(2 * MB).is_none(), "a large hold must not take the last eighth");
        assert_eq!(m.held(), 6 * MB, "a refused try holds nothing");
        let small = m.try_hold(SMALL_REQUEST).expect("a small one may use the last eighth");
        assert!(m.try_hold(0).is_some());
        assert_eq!((m.held(), m.waits()), (6 * MB + SMALL_REQUEST, 0), "a try never waits");
        drop((a, small));
        assert_eq!(m.held(), 0);
    }

    #[tokio::test]
    async fn counted_bytes_go_past_the_budget_make_holds_wait_and_absorbed_ones_go_back_together() {
        let m = RequestMemory::new(8 * MB);
        let mut a = m.hold(2 * MB).await;
        a.absorb(m.count(7 * MB));
        assert_eq!((a.bytes(), m.held()), (9 * MB, 9 * MB), "counted past the budget");
        let small = spawn_hold(&m, 1);
        settle().await;
        assert!(!small.is_finished(), "nothing is free while counted bytes fill the budget");
        let mut none = MemoryHold::none();
        none.absorb(MemoryHold::none());
        assert_eq!(none.bytes(), 0);
        let other = RequestMemory::new(MB);
        a.absorb(other.hold(10).await);
        assert_eq!((a.bytes(), other.held()), (9 * MB, 0), "another budget's hold is given back, not mixed in");
        drop(a);
        let small = tokio::time::timeout(Duration::from_secs(5), small).await.unwrap().unwrap();
        assert_eq!(m.held(), 1);
        drop(small);
    }

    async fn take_smalls(m: &Arc<RequestMemory>, k: usize, n: usize) -> Vec<MemoryHold> {
        let mut v = Vec::new();
        for _ in 0..k {
            v.push(tokio::time::timeout(Duration::from_secs(1), m.hold(n)).await.expect("a small hold fits"));
        }
        v
    }

    #[tokio::test]
    async fn a_hold_larger_than_the_largest_takes_the_largest_and_zero_takes_nothing() {
        let m = RequestMemory::new(8 * MB);
        let all = m.hold(1 << 40).await;
        assert_eq!(m.held(), 7 * MB);
        drop(all);
        let none = m.hold(0).await;
        assert_eq!((m.held(), m.waits()), (0, 0));
        drop(none);
        // A budget smaller than a small request still takes one whole.
        let tiny = RequestMemory::new(1000);
        let h = tiny.hold(5000).await;
        assert_eq!(tiny.held(), 1000);
        // A wait given up (its client gone) is counted out.
        let gone = spawn_hold(&tiny, 10);
        settle().await;
        assert_eq!(tiny.waiting.load(SeqCst), 1);
        gone.abort();
        settle().await;
        assert_eq!(tiny.waiting.load(SeqCst), 0);
        drop(h);
        assert_eq!(tiny.held(), 0);
    }
}
