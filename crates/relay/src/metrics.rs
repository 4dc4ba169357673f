//! The relay's counters and gauges and the tiny HTTP server that shows them
//! as Prometheus text on `/metrics`. Must never block delivery: counters are
//! atomics, and the gauges come from their own PostgreSQL connection.

use crate::schema::Names;
use axum::routing::get;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Default)]
pub struct Metrics {
    pub delivered: AtomicU64,
    pub duplicates: AtomicU64,
    pub parked: AtomicU64,
    pub refused: AtomicU64,
    pub fenced: AtomicU64,
    pub unknown: AtomicU64,
    pub backlog: AtomicU64,
    /// Age of the oldest pending event, in milliseconds.
    pub lag_ms: AtomicU64,
    pub buckets_owned: AtomicU64,
    /// Rounds that spanned several buckets and went as one guarded entry.
    pub rounds_whole: AtomicU64,
    /// Rounds that spanned several buckets and had to go bucket by bucket (a fence,
    /// duplicate or refusal in one of them).
    pub rounds_split: AtomicU64,
    /// Delivered rows deleted by --prune-after-secs.
    pub pruned: AtomicU64,
    /// Calls that moved on to the next `--to` member (the current one did not answer).
    pub target_switches: AtomicU64,
}

impl Metrics {
    pub fn text(&self) -> String {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut s = String::new();
        let rows: [(&str, &str, String); 13] = [
            ("baton_relay_delivered_total", "counter", l(&self.delivered).to_string()),
            ("baton_relay_duplicates_total", "counter", l(&self.duplicates).to_string()),
            ("baton_relay_parked_total", "counter", l(&self.parked).to_string()),
            ("baton_relay_refused_total", "counter", l(&self.refused).to_string()),
            ("baton_relay_fenced_total", "counter", l(&self.fenced).to_string()),
            ("baton_relay_unknown_total", "counter", l(&self.unknown).to_string()),
            ("baton_relay_backlog", "gauge", l(&self.backlog).to_string()),
            ("baton_relay_lag_seconds", "gauge", format!("{:.3}", l(&self.lag_ms) as f64 / 1000.0)),
            ("baton_relay_buckets_owned", "gauge", l(&self.buckets_owned).to_string()),
            ("baton_relay_rounds_whole_total", "counter", l(&self.rounds_whole).to_string()),
            ("baton_relay_rounds_split_total", "counter", l(&self.rounds_split).to_string()),
            ("baton_relay_pruned_total", "counter", l(&self.pruned).to_string()),
            ("baton_relay_target_switches_total", "counter", l(&self.target_switches).to_string()),
        ];
        for (name, kind, v) in rows {
            let _ = writeln!(s, "# TYPE {name} {kind}\n{name} {v}");
        }
        s
    }
}

/// Bind `addr` now (so a taken port fails the start) and serve /metrics in a task.
pub async fn serve(addr: &str, m: Arc<Metrics>) -> Result<(), crate::Error> {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("metrics address {addr}: {e}"))?;
    let app = axum::Router::new().route(
        "/metrics",
        get(move || {
            let m = m.clone();
            async move { m.text() }
        }),
    );
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            eprintln!("baton relay: metrics server: {e}");
        }
    });
    Ok(())
}

/// Refresh the backlog and lag gauges every second from a connection of their own.
pub async fn gauges(target: crate::pg::Pg, names: Names, m: Arc<Metrics>) {
    let sql = format!(
        "SELECT count(*), COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 \
         FROM {} WHERE status = 'pending'",
        names.table
    );
    let mut pg = None;
    loop {
        if pg.is_none() {
            pg = target.connect().await.ok();
        }
        if let Some(c) = &pg {
            match c.query_one(&sql, &[]).await {
                Ok(r) => {
                    m.backlog.store(r.get::<_, i64>(0) as u64, Ordering::Relaxed);
                    m.lag_ms.store((r.get::<_, f64>(1) * 1000.0) as u64, Ordering::Relaxed);
                }
                Err(_) => pg = None,
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
