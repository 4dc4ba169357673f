//! The status and analytics views of Queen's admin client (issue 16 item 2):
//! `GET /api/v1/status`, `/status/queues`, `/status/queues/{q}`, `/status/analytics`,
//! `POST /api/v1/stats/refresh`, `GET /api/v1/analytics/system-metrics` and
//! `/analytics/worker-metrics`.
//!
//! Baton keeps no statistics tables to refresh or time series to query: every number here
//! is read live from the state (the same views as `/api/v1/resources/...`) or from the
//! process, so `stats/refresh` only says so and time-range parameters are accepted and
//! not applied (the answers carry `"live": true`). Must never add work to the planner's
//! hot path: each view is one read-only query.

use crate::admin::{all_queues, one_queue, totals};
use crate::error::ApiError;
use crate::paging::Page;
use crate::render::iso_us;
use crate::App;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::LazyLock;
use std::time::Instant;

static STARTED: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Called when the router is built, so uptime counts from the start, not the first ask.
pub(crate) fn mark_start() {
    LazyLock::force(&STARTED);
}

fn queue_stats(q: &baton_core::QueueView) -> Value {
    json!({
        "name": q.name, "queue": q.name, "createdAt": iso_us(q.created_at),
        "partitions": q.partitions.len(),
        "messages": {"total": q.total, "pending": q.depth, "deadLetter": q.dead_letters},
        "leasedPartitions": q.partitions.iter().filter(|p| p.leased).count(),
    })
}

fn counters(app: &App) -> Value {
    let c = app.engine.counters();
    json!({"pushed": c.pushed.load(Relaxed), "popped": c.popped.load(Relaxed), "acked": c.acked.load(Relaxed)})
}

pub async fn status(State(app): State<App>) -> Result<Response, ApiError> {
    let qs = all_queues(&app).await?;
    let mut v = totals(&app, &qs);
    v["status"] = if app.engine.failure().is_none() { "healthy" } else { "failed" }.into();
    v["live"] = true.into();
    v["time"] = iso_us(baton_core::wall_micros()).into();
    v["uptimeSeconds"] = STARTED.elapsed().as_secs().into();
    v["throughput"] = v["counters"].clone();
    Ok(Json(v).into_response())
}

pub async fn queues(State(app): State<App>, page: Result<Query<Page>, QueryRejection>) -> Result<Response, ApiError> {
    let page = Page::from_query(page)?;
    let qs = all_queues(&app).await?;
    let (qs, mut v) = page.cut(qs.iter().map(queue_stats).collect::<Vec<_>>());
    v["live"] = true.into();
    v["queues"] = qs.into();
    Ok(Json(v).into_response())
}

pub async fn queue(
    State(app): State<App>,
    Path(name): Path<String>,
    page: Result<Query<Page>, QueryRejection>,
) -> Result<Response, ApiError> {
    let page = Page::from_query(page)?;
    let q = one_queue(&app, &name).await?;
    let mut v = queue_stats(&q);
    v["live"] = true.into();
    v["options"] = serde_json::to_value(&q.options).unwrap_or_default();
    let (parts, about) = page.cut(q.partitions);
    v["partitionList"] = parts
        .iter()
        .map(|p| json!({"id": p.id, "name": p.name, "messages": p.end - p.start, "pending": p.depth, "leased": p.leased}))
        .collect();
    v["partitionPage"] = about;
    Ok(Json(v).into_response())
}

pub async fn analytics(State(app): State<App>) -> Result<Response, ApiError> {
    let qs = all_queues(&app).await?;
    Ok(Json(json!({
        "live": true,
        "time": iso_us(baton_core::wall_micros()),
        "throughput": counters(&app),
        "queues": qs.iter().map(queue_stats).collect::<Vec<_>>(),
    }))
    .into_response())
}

pub async fn refresh() -> Response {
    Json(json!({"success": true, "live": true, "refreshedAt": iso_us(baton_core::wall_micros())})).into_response()
}

/// A field of /proc/self/status in kB, as bytes.
fn proc_status_bytes(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb * 1024)
}

pub async fn system_metrics(State(app): State<App>) -> Response {
    let cpu: u64 = crate::metrics::thread_cpu_ns().values().sum();
    let fds = std::fs::read_dir("/proc/self/fd").map(|d| d.count()).ok();
    Json(json!({
        "live": true,
        "time": iso_us(baton_core::wall_micros()),
        "uptimeSeconds": STARTED.elapsed().as_secs(),
        "cpuSeconds": cpu as f64 / 1e9,
        "memory": {"rssBytes": proc_status_bytes("VmRSS:"), "peakRssBytes": proc_status_bytes("VmHWM:")},
        "openFiles": fds,
        "connections": {"open": app.cfg.conn_stats.open.load(Relaxed), "refused": app.cfg.conn_stats.refused.load(Relaxed)},
    }))
    .into_response()
}

pub async fn worker_metrics() -> Response {
    let threads: Vec<Value> = crate::metrics::thread_cpu_ns()
        .into_iter()
        .map(|(name, ns)| json!({"name": name, "cpuSeconds": ns as f64 / 1e9}))
        .collect();
    Json(json!({"live": true, "workers": threads})).into_response()
}
