//! `POST /api/v1/fetch`: reading records by offset, without a lease.
//!
//! Owns the bounds of one fetch: how many entries, one entry per partition,
//! and how many stored bytes one answer may carry in all. Must never build an
//! answer larger than `--http-fetch-max-bytes` (plus the one batch that lets
//! a reader past a batch larger than that), and never hand the planner a
//! walk longer than that budget: the planner walks each entry's batch list up
//! to the entry's byte limit, and every other request waits behind it.

use crate::body::JsonBody;
use crate::error::ApiError;
use crate::payload::payload_json;
use crate::render::read_records;
use crate::App;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use baton_core::FetchRequest;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::HashMap;

/// Default of `--http-fetch-max-bytes`: 64 MiB of stored records per answer.
pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;
/// Default of `--http-fetch-max-entries`.
pub const DEFAULT_MAX_ENTRIES: usize = 1000;
/// An entry's limit when neither it nor the request names one.
const DEFAULT_ENTRY_BYTES: u64 = 1 << 20;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FetchBody {
    entries: Vec<FetchEntry>,
    max_bytes: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FetchEntry {
    queue: String,
    partition: Option<String>,
    offset: u64,
    max_bytes: Option<u64>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EntryJson {
    queue: String,
    partition: String,
    records: Vec<RecordJson>,
    high_watermark: u64,
    log_start_offset: u64,
    error: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RecordJson {
    offset: u64,
    transaction_id: Option<String>,
    payload: Box<RawValue>,
    ts: i64,
}

#[derive(Serialize)]
struct FetchAnswer {
    entries: Vec<EntryJson>,
}

pub async fn fetch(State(app): State<App>, JsonBody(body): JsonBody<FetchBody>) -> Result<Response, ApiError> {
    let max_entries = app.cfg.fetch_max_entries;
    let n = body.entries.len();
    if n == 0 || n > max_entries {
        return Err(ApiError::bad(
            "invalid_entries",
            format!("entries must hold 1 to {max_entries} items (--http-fetch-max-entries); it holds {n}"),
        ));
    }
    let mut seen: HashMap<(&str, &str), usize> = HashMap::with_capacity(n);
    for (i, e) in body.entries.iter().enumerate() {
        let part = e.partition.as_deref().unwrap_or(baton_core::DEFAULT_PARTITION);
        if let Some(first) = seen.insert((&e.queue, part), i) {
            // A repeated partition would be read and rendered once per mention.
            return Err(ApiError::bad(
                "duplicate_entry",
                format!(
                    "entries[{i}] names {}/{part} again (first in entries[{first}]); name a partition once",
                    e.queue
                ),
            ));
        }
    }
    // A maxBytes above the budget is clamped, as Kafka clamps a fetch to its
    // fetch.max.bytes: a client asking for "as much as there is" still works.
    // The entries share the budget, so the planner's walk is bounded by it too.
    let budget = app.cfg.fetch_max_bytes;
    let share = (budget / n as u64).max(1);
    let default_max = body.max_bytes.unwrap_or(DEFAULT_ENTRY_BYTES);
    if body.entries.iter().any(|e| e.max_bytes.unwrap_or(default_max) > share) {
        crate::metrics::FETCH_CLAMPED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    let reqs = body
        .entries
        .iter()
        .map(|e| FetchRequest {
            queue: e.queue.clone(),
            partition: e.partition.clone().unwrap_or_else(|| baton_core::DEFAULT_PARTITION.into()),
            offset: e.offset,
            max_bytes: e.max_bytes.unwrap_or(default_max).min(share),
            // Kafka transactions' open, aborted and control records are never shown (D48).
            committed: true,
        })
        .collect();
    let mut results = app.engine.fetch(reqs).await?;
    let mut used = 0u64;
    for r in &mut results {
        // The engine gives each entry its first batch even past its limit (so a
        // reader gets past a large batch); past the whole budget only the very
        // first batch of the answer is kept.
        let keep = r.spans.iter().take_while(|s| {
            let fits = used == 0 || used + s.len as u64 <= budget;
            if fits {
                used += s.len as u64;
            }
            fits
        });
        let keep = keep.count();
        r.spans.truncate(keep);
    }
    // D88: held before the records are read, until the answer is sent.
    let mem = crate::held::before_read(&app, used).await;
    let mut entries = Vec::with_capacity(results.len());
    for r in results {
        let recs = read_records(&r.spans, |o| o >= r.from_offset && o < r.last_stable && !r.hides(o))
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "read_failed", e))?;
        let records = recs
            .into_iter()
            .map(|m| RecordJson {
                offset: m.offset,
                payload: payload_json(m.value.as_deref()),
                transaction_id: m.txid,
                ts: m.timestamp_ms,
            })
            .collect();
        let error = r.error.map(|e| match e.code {
            "offset_out_of_range" => "OFFSET_OUT_OF_RANGE",
            _ => "UNKNOWN_TOPIC_OR_PARTITION",
        });
        entries.push(EntryJson {
            queue: r.queue,
            partition: r.partition,
            records,
            high_watermark: r.high_watermark,
            log_start_offset: r.log_start,
            error,
        });
    }
    let body = serde_json::to_vec(&FetchAnswer { entries })
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "render_failed", e.to_string()))?;
    Ok(crate::held::json(&app, body, mem))
}
