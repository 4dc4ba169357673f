//! Lock-free WAL metrics: counters and fixed-bucket histograms the server exports to Prometheus.
//!
//! Owns only numbers. Must never block, allocate on the observe path, or format output
//! (cumulative bucket export is the caller's job).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// fdatasync latency buckets, seconds: spans NVMe (~50µs) to a struggling disk (>1s).
pub(crate) const SYNC_SECONDS_BOUNDS: &[f64] =
    &[0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5];

/// Entries per group commit: powers of two up to the writer's per-batch item cap.
pub(crate) const BATCH_ENTRIES_BOUNDS: &[f64] =
    &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 4096.0, 16384.0, 65536.0];

#[derive(Debug)]
pub struct WalStats {
    /// Group commits that were written and synced.
    pub batches: AtomicU64,
    /// Of `batches`, those written and synced on the submitter's thread, the writer thread
    /// being idle (D84).
    pub batches_here: AtomicU64,
    /// Entries made durable.
    pub entries: AtomicU64,
    /// Bytes made durable (frame headers included).
    pub bytes: AtomicU64,
    /// fdatasync latency, seconds.
    pub sync_seconds: Histogram,
    /// Entries per group commit.
    pub batch_entries: Histogram,
    /// Rotations that failed (the batch went on in the current segment).
    pub rotation_failures: AtomicU64,
    /// The last entry known to be on disk: recovered at start, then the last
    /// entry of each batch whose fdatasync returned Ok. Every answer the
    /// writer gave Ok is at or below it (I3), which is what a power-loss
    /// campaign holds a restored directory to.
    pub durable_index: AtomicU64,
}

impl WalStats {
    pub fn new() -> Self {
        WalStats {
            batches: AtomicU64::new(0),
            batches_here: AtomicU64::new(0),
            entries: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            sync_seconds: Histogram::new(SYNC_SECONDS_BOUNDS),
            batch_entries: Histogram::new(BATCH_ENTRIES_BOUNDS),
            rotation_failures: AtomicU64::new(0),
            durable_index: AtomicU64::new(0),
        }
    }
}

impl Default for WalStats {
    fn default() -> Self {
        Self::new()
    }
}

/// Fixed-bucket histogram with Prometheus `le` semantics: a value equal to a bound lands in
/// that bound's bucket. Readers may see a bucket, sum and count from slightly different
/// instants; scrapes tolerate that, and it keeps `observe` free of locks.
#[derive(Debug)]
pub struct Histogram {
    bounds: Vec<f64>,
    /// One per bound plus a final +Inf bucket.
    counts: Box<[AtomicU64]>,
    sum_bits: AtomicU64,
    count: AtomicU64,
}

impl Histogram {
    /// Bounds are sorted and deduplicated, and NaN bounds dropped, so any input yields a
    /// usable histogram instead of a panic.
    pub fn new(bounds: &[f64]) -> Self {
        let mut bounds: Vec<f64> = bounds.iter().copied().filter(|b| !b.is_nan()).collect();
        bounds.sort_by(f64::total_cmp);
        bounds.dedup();
        let counts = (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect();
        Histogram { bounds, counts, sum_bits: AtomicU64::new(0f64.to_bits()), count: AtomicU64::new(0) }
    }

    /// NaN is ignored: it has no bucket and would poison the sum forever.
    pub fn observe(&self, v: f64) {
        if v.is_nan() {
            return;
        }
        let bucket = self.bounds.partition_point(|b| *b < v);
        if let Some(c) = self.counts.get(bucket) {
            c.fetch_add(1, Relaxed);
        }
        // fetch_update's closure always returns Some, so this cannot fail.
        let _ = self.sum_bits.fetch_update(Relaxed, Relaxed, |bits| Some((f64::from_bits(bits) + v).to_bits()));
        self.count.fetch_add(1, Relaxed);
    }

    pub fn bounds(&self) -> &[f64] {
        &self.bounds
    }

    /// Per-bucket counts, not cumulative; the last element is the +Inf bucket.
    pub fn bucket_counts(&self) -> Vec<u64> {
        self.counts.iter().map(|c| c.load(Relaxed)).collect()
    }

    pub fn sum(&self) -> f64 {
        f64::from_bits(self.sum_bits.load(Relaxed))
    }

    pub fn count(&self) -> u64 {
        self.count.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_le_semantics() {
        let h = Histogram::new(&[1.0, 5.0, 10.0]);
        for v in [0.5, 1.0, 1.5, 5.0, 10.0, 10.5, 1e9, -3.0] {
            h.observe(v);
        }
        assert_eq!(h.bucket_counts(), vec![3, 2, 1, 2]);
        assert_eq!(h.count(), 8);
        assert!((h.sum() - (0.5 + 1.0 + 1.5 + 5.0 + 10.0 + 10.5 + 1e9 - 3.0)).abs() < 1e-6);
    }

    #[test]
    fn bounds_are_normalised_and_nan_ignored() {
        let h = Histogram::new(&[5.0, f64::NAN, 1.0, 5.0]);
        assert_eq!(h.bounds(), &[1.0, 5.0]);
        h.observe(f64::NAN);
        h.observe(3.0);
        assert_eq!(h.bucket_counts(), vec![0, 1, 0]);
        assert_eq!(h.count(), 1);
        assert_eq!(h.sum(), 3.0);
    }

    #[test]
    fn no_bounds_means_everything_is_inf() {
        let h = Histogram::new(&[]);
        h.observe(1.0);
        h.observe(f64::INFINITY);
        assert_eq!(h.bucket_counts(), vec![2]);
    }

    #[test]
    fn concurrent_observes_are_all_counted() {
        let h = Histogram::new(&[0.5]);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        h.observe(1.0);
                    }
                });
            }
        });
        assert_eq!(h.count(), 40_000);
        assert_eq!(h.bucket_counts(), vec![0, 40_000]);
        assert_eq!(h.sum(), 40_000.0);
    }

    #[test]
    fn default_stats_have_the_documented_buckets() {
        let s = WalStats::default();
        assert_eq!(s.sync_seconds.bounds(), SYNC_SECONDS_BOUNDS);
        assert_eq!(s.batch_entries.bounds(), BATCH_ENTRIES_BOUNDS);
        assert_eq!(s.batch_entries.bucket_counts().len(), BATCH_ENTRIES_BOUNDS.len() + 1);
    }
}
