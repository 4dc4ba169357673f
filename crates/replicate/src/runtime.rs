//! openraft's runtime: tokio's, except for a Raft clock that this member can move forward
//! (D73). openraft 0.9 has no `transfer_leader`: a follower refuses every vote while the
//! lease it gives its leader runs (openraft's `election_timeout_max` since it last heard
//! it), so with four or more voters a leader's hand-over found no majority. A follower told
//! by its own leader that it hands over moves this clock past that lease
//! ([`let_lease_go`]); openraft then sees the lease as over, as after a silence.
//!
//! Owns only that clock's offset. Must never move the clock back (openraft's times are
//! monotonic), and never move it but on the word of this member's current leader
//! (`handover::release` checks that). Raft's safety does not rest on it: the lease only
//! keeps a follower from disturbing a leader it still hears.

use std::future::Future;
use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use openraft::async_runtime::{AsyncRuntime, TokioOneShotSender};
use openraft::OptionalSend;

/// How far the Raft clock runs ahead of tokio's, in ns; only ever grows.
static AHEAD_NS: AtomicU64 = AtomicU64::new(0);

fn ahead() -> Duration {
    Duration::from_nanos(AHEAD_NS.load(Ordering::Acquire))
}

/// Moves the Raft clock forward by `by`: every lease and timer openraft dated before now
/// is that much older.
pub fn let_lease_go(by: Duration) {
    AHEAD_NS.fetch_add(u64::try_from(by.as_nanos()).unwrap_or(u64::MAX / 4), Ordering::AcqRel);
}

/// An instant on the Raft clock: tokio's plus what [`let_lease_go`] added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RaftInstant(tokio::time::Instant);

impl RaftInstant {
    /// The tokio instant at which the Raft clock reads this (sooner, once the clock moved).
    fn on_tokio(self) -> tokio::time::Instant {
        self.0.checked_sub(ahead()).unwrap_or_else(tokio::time::Instant::now)
    }
}

impl openraft::Instant for RaftInstant {
    fn now() -> Self {
        RaftInstant(tokio::time::Instant::now() + ahead())
    }
}

impl Add<Duration> for RaftInstant {
    type Output = RaftInstant;
    fn add(self, d: Duration) -> RaftInstant {
        RaftInstant(self.0 + d)
    }
}

impl AddAssign<Duration> for RaftInstant {
    fn add_assign(&mut self, d: Duration) {
        self.0 += d;
    }
}

impl Sub<Duration> for RaftInstant {
    type Output = RaftInstant;
    fn sub(self, d: Duration) -> RaftInstant {
        RaftInstant(self.0 - d)
    }
}

impl SubAssign<Duration> for RaftInstant {
    fn sub_assign(&mut self, d: Duration) {
        self.0 -= d;
    }
}

impl Sub<RaftInstant> for RaftInstant {
    type Output = Duration;
    fn sub(self, earlier: RaftInstant) -> Duration {
        self.0.saturating_duration_since(earlier.0)
    }
}

/// The runtime a cluster member's Raft runs on: its own thread (D75). On the runtime that
/// serves clients, openraft's core task waited behind hundreds of request tasks each time it
/// yielded (2.6 ms from a proposal to its log append, under the pipeline benchmark), and
/// every commit waited with it. Made once per process, on first use.
pub fn dedicated() -> Result<tokio::runtime::Handle, String> {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    if let Some(rt) = RT.get() {
        return Ok(rt.handle().clone());
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("baton-raft")
        .enable_all()
        .build()
        .map_err(|e| format!("the Raft runtime: {e}"))?;
    // A racing first use built another; the one kept is the first set, the other dropped.
    let _ = RT.set(rt);
    RT.get().map(|rt| rt.handle().clone()).ok_or_else(|| "the Raft runtime was not kept".into())
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct BatonRuntime;

impl AsyncRuntime for BatonRuntime {
    type JoinError = tokio::task::JoinError;
    type JoinHandle<T: OptionalSend + 'static> = tokio::task::JoinHandle<T>;
    type Sleep = tokio::time::Sleep;
    type Instant = RaftInstant;
    type TimeoutError = tokio::time::error::Elapsed;
    type Timeout<R, T: Future<Output = R> + OptionalSend> = tokio::time::Timeout<T>;
    type ThreadLocalRng = rand::rngs::ThreadRng;
    type OneshotSender<T: OptionalSend> = TokioOneShotSender<T>;
    type OneshotReceiverError = tokio::sync::oneshot::error::RecvError;
    type OneshotReceiver<T: OptionalSend> = tokio::sync::oneshot::Receiver<T>;

    fn spawn<T>(future: T) -> Self::JoinHandle<T::Output>
    where
        T: Future + OptionalSend + 'static,
        T::Output: OptionalSend + 'static,
    {
        tokio::task::spawn(future)
    }

    fn sleep(duration: Duration) -> Self::Sleep {
        tokio::time::sleep(duration)
    }

    fn sleep_until(deadline: RaftInstant) -> Self::Sleep {
        tokio::time::sleep_until(deadline.on_tokio())
    }

    fn timeout<R, F: Future<Output = R> + OptionalSend>(duration: Duration, future: F) -> Self::Timeout<R, F> {
        tokio::time::timeout(duration, future)
    }

    fn timeout_at<R, F: Future<Output = R> + OptionalSend>(deadline: RaftInstant, future: F) -> Self::Timeout<R, F> {
        tokio::time::timeout_at(deadline.on_tokio(), future)
    }

    fn is_panic(join_error: &Self::JoinError) -> bool {
        join_error.is_panic()
    }

    fn thread_rng() -> Self::ThreadLocalRng {
        rand::thread_rng()
    }

    fn oneshot<T>() -> (Self::OneshotSender<T>, Self::OneshotReceiver<T>)
    where
        T: OptionalSend,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        (TokioOneShotSender(tx), rx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::Instant;

    #[tokio::test]
    async fn the_raft_clock_moves_forward_and_deadlines_with_it() {
        let before = RaftInstant::now();
        let deadline = before + Duration::from_secs(2);
        let_lease_go(Duration::from_secs(2));
        let after = RaftInstant::now();
        assert!(after - before >= Duration::from_secs(2), "{:?}", after - before);
        // A deadline dated before the move is due now, on tokio's clock.
        let t = std::time::Instant::now();
        BatonRuntime::sleep_until(deadline).await;
        assert!(t.elapsed() < Duration::from_secs(1), "slept {:?}", t.elapsed());
        assert!(RaftInstant::now() >= after, "never back");
    }
}
