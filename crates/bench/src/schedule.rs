//! Open-loop arithmetic: when each request is due, how many a step offers,
//! when a sender is behind, whether a step held, and the next rate of a ramp.
//!
//! Request `i` of a step is due at `start + i * batch / rate` seconds
//! (computed in integer nanoseconds, so there is no drift over long runs).
//! Worker `w` of `W` owns the requests `i ≡ w (mod W)`, like wrk2's
//! per-connection schedules. Latency is measured from the due instant, not
//! from the moment the request could finally be sent, so a slow answer that
//! delays the next request is charged to the system (no coordinated omission).

use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Offered messages per second.
    rate: u64,
    /// Messages per request.
    batch: u64,
}

impl Schedule {
    pub fn new(rate_msgs_per_sec: u64, batch: u64) -> Schedule {
        assert!(rate_msgs_per_sec > 0, "rate must be positive");
        assert!(batch > 0, "batch must be positive");
        Schedule { rate: rate_msgs_per_sec, batch }
    }

    pub fn rate(&self) -> u64 {
        self.rate
    }

    pub fn batch(&self) -> u64 {
        self.batch
    }

    pub fn requests_per_sec(&self) -> f64 {
        self.rate as f64 / self.batch as f64
    }

    /// When request `i` is due, counted from the start of the step.
    pub fn due(&self, i: u64) -> Duration {
        let ns = i as u128 * self.batch as u128 * 1_000_000_000 / self.rate as u128;
        Duration::from_nanos(ns.min(u64::MAX as u128) as u64)
    }

    /// How many requests are due strictly before `d`: the requests a step of
    /// length `d` offers. The smallest `n` with `due(n) >= d`.
    pub fn requests_in(&self, d: Duration) -> u64 {
        // due(i) < d  <=>  i*batch*1e9 / rate < d_ns  (integer division)
        //             <=>  i*batch*1e9 < d_ns*rate   (floor(x/r) < d iff x < d*r)
        let lim = d.as_nanos() * self.rate as u128;
        let per = self.batch as u128 * 1_000_000_000;
        (lim.div_ceil(per)).min(u64::MAX as u128) as u64
    }

    /// How late request `i` is when it is sent `elapsed` after the start; zero
    /// when it is on time or early.
    pub fn lateness(&self, i: u64, elapsed: Duration) -> Duration {
        elapsed.saturating_sub(self.due(i))
    }

    /// A sender is behind when it sends request `i` more than `tolerance`
    /// after it was due: its previous answers took longer than its share of
    /// the schedule, so its connections, not the schedule, set the pace.
    pub fn is_behind(&self, i: u64, elapsed: Duration, tolerance: Duration) -> bool {
        self.lateness(i, elapsed) > tolerance
    }

    /// The requests worker `w` of `workers` sends in a step offering `offered`.
    pub fn worker_requests(w: u64, workers: u64, offered: u64) -> impl Iterator<Item = u64> {
        (w..offered).step_by(workers.max(1) as usize)
    }
}

/// Whether a step held its rate: at least `min_delivered` of the offered
/// messages delivered, and p99 latency (from the due instants) within the limit.
pub fn step_held(offered: u64, delivered: u64, p99_us: u64, p99_limit_us: u64, min_delivered: f64) -> bool {
    if offered == 0 {
        return false;
    }
    (delivered as f64) >= min_delivered * offered as f64 && p99_us <= p99_limit_us
}

/// The next rate of a ramp: `rate * factor`, but always at least one more.
pub fn next_rate(rate: u64, factor: f64) -> u64 {
    let next = (rate as f64 * factor).round();
    if next.is_finite() && next > rate as f64 {
        (next as u64).max(rate + 1)
    } else {
        rate + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_instants_are_evenly_spaced() {
        let s = Schedule::new(1000, 1); // one request per millisecond
        assert_eq!(s.due(0), Duration::ZERO);
        assert_eq!(s.due(1), Duration::from_millis(1));
        assert_eq!(s.due(2500), Duration::from_millis(2500));
        // A batch of 100 at 25,000 msg/s is 250 requests/s: one per 4 ms.
        let s = Schedule::new(25_000, 100);
        assert_eq!(s.requests_per_sec(), 250.0);
        assert_eq!(s.due(1), Duration::from_millis(4));
        assert_eq!(s.due(250), Duration::from_secs(1));
    }

    #[test]
    fn no_drift_with_uneven_intervals() {
        // 3 requests/s: 333,333,333.3 ns apart; request 3 is due at exactly 1 s
        // and request 3,000,000 at exactly 1,000,000 s.
        let s = Schedule::new(3, 1);
        assert_eq!(s.due(1), Duration::from_nanos(333_333_333));
        assert_eq!(s.due(2), Duration::from_nanos(666_666_666));
        assert_eq!(s.due(3), Duration::from_secs(1));
        assert_eq!(s.due(3_000_000), Duration::from_secs(1_000_000));
    }

    #[test]
    fn requests_in_a_step() {
        let s = Schedule::new(1000, 1);
        assert_eq!(s.requests_in(Duration::from_secs(10)), 10_000);
        assert_eq!(s.requests_in(Duration::ZERO), 0);
        // Due at 0 only.
        assert_eq!(s.requests_in(Duration::from_nanos(1)), 1);
        let s = Schedule::new(3, 1);
        assert_eq!(s.requests_in(Duration::from_secs(1)), 3); // 0, 1/3, 2/3
        let s = Schedule::new(25_000, 100);
        assert_eq!(s.requests_in(Duration::from_secs(2)), 500);
        // Every request counted is due inside the step, the next one is not.
        for (rate, batch, ms) in [(7u64, 1u64, 1000u64), (999, 10, 1234), (100_000, 1, 1)] {
            let s = Schedule::new(rate, batch);
            let d = Duration::from_millis(ms);
            let n = s.requests_in(d);
            assert!(n == 0 || s.due(n - 1) < d, "{rate} {batch} {ms}");
            assert!(s.due(n) >= d, "{rate} {batch} {ms}");
        }
    }

    #[test]
    fn workers_share_the_schedule_exactly_once() {
        let offered = 103;
        let mut seen = vec![0u32; offered as usize];
        for w in 0..8 {
            for i in Schedule::worker_requests(w, 8, offered) {
                seen[i as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n == 1));
        assert_eq!(Schedule::worker_requests(2, 8, 30).collect::<Vec<_>>(), vec![2, 10, 18, 26]);
    }

    #[test]
    fn behind_detection() {
        let s = Schedule::new(1000, 1);
        let tol = Duration::from_millis(1);
        // Request 10 is due at 10 ms.
        assert!(!s.is_behind(10, Duration::from_millis(5), tol)); // early
        assert_eq!(s.lateness(10, Duration::from_millis(5)), Duration::ZERO);
        assert!(!s.is_behind(10, Duration::from_millis(11), tol)); // exactly the tolerance
        assert!(s.is_behind(10, Duration::from_micros(11_001), tol));
        assert_eq!(s.lateness(10, Duration::from_millis(25)), Duration::from_millis(15));
    }

    #[test]
    fn step_verdict() {
        let lim = 5_000_000;
        assert!(step_held(1000, 1000, 4_000, lim, 0.97));
        assert!(step_held(1000, 970, 4_000, lim, 0.97));
        assert!(!step_held(1000, 969, 4_000, lim, 0.97));
        assert!(!step_held(1000, 1000, 5_000_001, lim, 0.97));
        assert!(step_held(1000, 1000, 5_000_000, lim, 0.97));
        assert!(!step_held(0, 0, 0, lim, 0.97));
    }

    #[test]
    fn ramp_rates() {
        assert_eq!(next_rate(1000, 2.0), 2000);
        assert_eq!(next_rate(1000, 1.25), 1250);
        assert_eq!(next_rate(1, 1.1), 2); // always moves
        assert_eq!(next_rate(10, 0.5), 11);
    }
}
