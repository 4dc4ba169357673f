//! Latency histogram: microseconds in an HdrHistogram with 3 significant
//! digits (0.1 % relative error), from 1 µs to one hour.

use hdrhistogram::Histogram;
use std::time::Duration;

const MAX_US: u64 = 3_600_000_000;

#[derive(Clone, Debug)]
pub struct Latency {
    h: Histogram<u64>,
}

/// The figures a report shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Percentiles {
    pub count: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

impl Latency {
    pub fn new() -> Self {
        Latency { h: Histogram::new_with_bounds(1, MAX_US, 3).expect("valid histogram bounds") }
    }

    /// Record one value in microseconds; 0 counts as 1 µs and values past an
    /// hour as an hour, so nothing is dropped.
    pub fn record_us(&mut self, us: u64) {
        self.h.saturating_record(us.clamp(1, MAX_US));
    }

    pub fn record(&mut self, d: Duration) {
        self.record_us(d.as_micros().min(u64::MAX as u128) as u64);
    }

    pub fn merge(&mut self, other: &Latency) {
        self.h.add(&other.h).expect("histograms with the same bounds merge");
    }

    pub fn count(&self) -> u64 {
        self.h.len()
    }

    /// The value at percentile `p` (0..=100), in µs: the smallest recorded
    /// bucket such that at least `p` % of the values are at or below it
    /// (reported as the highest value equivalent to that bucket). 0 when empty.
    pub fn percentile_us(&self, p: f64) -> u64 {
        if self.h.is_empty() {
            return 0;
        }
        // p / 100 in floating point can land just above the quantile meant
        // (99.9 / 100 = 0.9990000000000001), which would pick the next value;
        // round to nine decimals first.
        let q = ((p * 1e7).round() / 1e9).clamp(0.0, 1.0);
        self.h.value_at_quantile(q)
    }

    pub fn summary(&self) -> Percentiles {
        Percentiles {
            count: self.count(),
            p50_us: self.percentile_us(50.0),
            p99_us: self.percentile_us(99.0),
            p999_us: self.percentile_us(99.9),
            max_us: if self.h.is_empty() { 0 } else { self.h.max() },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_is_zero() {
        let h = Latency::new();
        assert_eq!(h.summary(), Percentiles::default());
    }

    #[test]
    fn exact_below_2048_us() {
        // With 3 significant digits every value below 2048 has its own bucket.
        let mut h = Latency::new();
        for v in 1..=1000 {
            h.record_us(v);
        }
        assert_eq!(h.count(), 1000);
        assert_eq!(h.percentile_us(50.0), 500);
        assert_eq!(h.percentile_us(99.0), 990);
        assert_eq!(h.percentile_us(99.9), 999);
        assert_eq!(h.percentile_us(100.0), 1000);
        assert_eq!(h.summary().max_us, 1000);
    }

    #[test]
    fn relative_error_within_a_tenth_of_a_percent() {
        let mut h = Latency::new();
        for v in 1..=1_000_000u64 {
            h.record_us(v);
        }
        for (p, want) in [(50.0, 500_000.0), (99.0, 990_000.0), (99.9, 999_000.0)] {
            let got = h.percentile_us(p) as f64;
            assert!((got - want).abs() / want <= 0.001, "p{p}: got {got}, want {want}");
        }
    }

    #[test]
    fn tail_is_seen() {
        // 990 fast requests and 10 slow ones: p99 is still fast, p99.9 is slow.
        let mut h = Latency::new();
        for _ in 0..990 {
            h.record_us(100);
        }
        for _ in 0..10 {
            h.record(Duration::from_millis(50));
        }
        let s = h.summary();
        assert_eq!(s.p50_us, 100);
        assert_eq!(s.p99_us, 100);
        assert!((49_950..=50_050).contains(&s.p999_us), "{s:?}");
    }

    #[test]
    fn merge_adds_counts_and_zero_is_one() {
        let mut a = Latency::new();
        let mut b = Latency::new();
        a.record_us(0);
        b.record_us(10);
        b.record_us(20);
        a.merge(&b);
        assert_eq!(a.count(), 3);
        assert_eq!(a.percentile_us(0.0), 1);
        assert_eq!(a.percentile_us(100.0), 20);
    }

    #[test]
    fn huge_values_saturate() {
        let mut h = Latency::new();
        h.record(Duration::from_secs(10_000));
        assert_eq!(h.count(), 1);
        assert!(h.percentile_us(50.0) >= MAX_US);
    }
}
