//! Pruning: delete delivered rows older than `--prune-after-secs`, at most
//! [`PRUNE_BATCH`] rows a statement, from a connection of its own. Must never
//! delete a row that is not `delivered` (pending and parked rows are the
//! relay's work and the operator's), and never hold the delivery loop.

use crate::metrics::Metrics;
use crate::schema::Names;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Most rows one DELETE removes: a short statement, a short lock on few rows.
pub const PRUNE_BATCH: i64 = 10_000;

/// Every `min(after, 60 s)` (at least 1 s), delete what is delivered and older than
/// `after_secs`, a batch at a time until less than a batch is left. 0: keep every row.
pub async fn prune(target: crate::pg::Pg, names: Names, after_secs: u64, m: Arc<Metrics>) {
    if after_secs == 0 {
        return;
    }
    // Oldest ids first along the primary key: delivered rows past the age sit at the
    // front, so the scan stops after a batch instead of reading the table.
    let sql = format!(
        "DELETE FROM {t} WHERE id IN (SELECT id FROM {t} WHERE status = 'delivered' \
         AND delivered_at < now() - make_interval(secs => $1) ORDER BY id LIMIT {PRUNE_BATCH})",
        t = names.table
    );
    let every = Duration::from_secs(after_secs.clamp(1, 60));
    let age = after_secs as f64;
    let mut pg = None;
    loop {
        if pg.is_none() {
            pg = target.connect().await.ok();
        }
        if let Some(c) = &pg {
            match c.execute(&sql, &[&age]).await {
                Ok(n) => {
                    m.pruned.fetch_add(n, Ordering::Relaxed);
                    if n as i64 == PRUNE_BATCH {
                        // More to do: the next batch soon, not at once (the table is shared).
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                }
                Err(e) => {
                    eprintln!("baton relay: prune: {e}");
                    pg = None;
                }
            }
        }
        tokio::time::sleep(every).await;
    }
}
