//! Queen's conflation (`pop().conflation()`, issue 16 item 2, D61): a conflating consumer
//! group's pop of a partition delivers only the newest message and retires everything
//! behind it. The policy belongs to the (group, queue): the first pop that declares it
//! registers it (a KV row in the reserved namespace [`NS`], key `<group>\u{1e}<queue>`),
//! and from then on every pop of that group on that queue conflates, declared or not.
//!
//! Owns the policy rows, their cache and the conflating pop. Must never deliver an older
//! message of a partition beside a newer one to a conflating group, retire a message the
//! group's lease does not hold (the planner retires them in the lease's own entry), or
//! read the policy row more than once per (group, queue) while it is cached.

use crate::consume::render_pop;
use crate::error::ApiError;
use crate::App;
use axum::http::StatusCode;
use baton_core::kv::{KvOp, KvResult};
use baton_core::PopRequest;
use parking_lot::Mutex;
use std::collections::HashMap;

/// The KV namespace of conflation policies (written only by the pop that registers one).
pub const NS: &str = "queen-conflation";
/// Messages one conflating pop leases to find a partition's newest (it retires the rest).
pub const CONFLATION_BATCH: u32 = 10_000;
/// Policies cached per process; past it the cache starts over (each entry is re-read once).
const MAX_CACHED: usize = 100_000;

/// (group, queue) -> registered policy (`false`: no row, the group does not conflate).
#[derive(Default)]
pub struct Policies(Mutex<HashMap<(String, String), bool>>);

fn key(group: &str, queue: &str) -> String {
    format!("{group}\u{1e}{queue}")
}

impl Policies {
    fn remember(&self, group: &str, queue: &str, on: bool) {
        let mut m = self.0.lock();
        if m.len() >= MAX_CACHED {
            m.clear();
        }
        m.insert((group.to_string(), queue.to_string()), on);
    }

    /// Forgets a deleted group's policies (all queues, or one).
    pub fn forget(&self, group: &str, queue: Option<&str>) {
        self.0.lock().retain(|(g, q), _| g != group || queue.is_some_and(|name| name != q));
    }
}

/// Whether `group`'s pops of `queue` conflate; a pop that declares conflation registers it.
pub async fn policy(app: &App, queue: &str, group: &str, declared: bool) -> Result<bool, ApiError> {
    Ok(policies(app, &[queue.to_string()], group, declared).await?[0])
}

/// Queues of a namespace or task looked up or registered in one KV call.
const POLICY_CHUNK: usize = 512;

/// [`policy`] for each of `queues` (a namespace or task pop, D61 addendum): the cached ones
/// from the cache, the rest in KV calls of up to [`POLICY_CHUNK`] operations each. A pop
/// that declares conflation registers it on every one of them.
pub async fn policies(app: &App, queues: &[String], group: &str, declared: bool) -> Result<Vec<bool>, ApiError> {
    let mut out: Vec<Option<bool>> = {
        let m = app.conflation.0.lock();
        queues
            .iter()
            .map(|q| match m.get(&(group.to_string(), q.clone())).copied() {
                Some(true) => Some(true),
                Some(false) if !declared => Some(false),
                _ => None,
            })
            .collect()
    };
    let unknown: Vec<usize> = (0..queues.len()).filter(|i| out[*i].is_none()).collect();
    for chunk in unknown.chunks(POLICY_CHUNK) {
        let ops = chunk
            .iter()
            .map(|i| {
                let (ns, key) = (NS.to_string(), key(group, &queues[*i]));
                if declared {
                    KvOp::PutIfAbsent { ns, key, value: "true".into(), ttl_secs: None, required: false }
                } else {
                    KvOp::Get { ns, key }
                }
            })
            .collect();
        let results = app.engine.kv(ops).await?.ok().unwrap_or_default();
        for (n, i) in chunk.iter().enumerate() {
            let on = match results.get(n) {
                Some(KvResult::Found(row)) => row.is_some(),
                Some(KvResult::Write { .. }) => true,
                _ => false,
            };
            app.conflation.remember(group, &queues[*i], on);
            out[*i] = Some(on);
        }
    }
    Ok(out.into_iter().map(|o| o.unwrap_or(false)).collect())
}

/// Deletes the policy rows of a deleted group: its one queue's, or (a page a step) all.
pub async fn forget(app: &App, group: &str, queue: Option<&str>) -> Result<(), ApiError> {
    app.conflation.forget(group, queue);
    let del = |k: String| KvOp::Delete { ns: NS.into(), key: k, expect: None, required: false };
    if let Some(q) = queue {
        app.engine.kv(vec![del(key(group, q))]).await?.ok();
        return Ok(());
    }
    let prefix = format!("{group}\u{1e}");
    loop {
        let page = KvOp::GetPrefix { ns: NS.into(), prefix: prefix.clone(), after: None, limit: 1000, keys_only: true };
        let rows = match app.engine.kv(vec![page]).await?.ok().and_then(|mut r| r.pop()) {
            Some(KvResult::Prefix { rows, .. }) if !rows.is_empty() => rows,
            _ => return Ok(()),
        };
        app.engine.kv(rows.into_iter().map(|r| del(r.key)).collect()).await?.ok();
    }
}

/// One conflating pop: the planner leases a partition's backlog, retires every message but
/// the newest in the same entry and answers the newest alone (`PopRequest::conflate`), so a
/// crash cannot leave the backlog leased but not retired. Of `req.queue`, or of the first
/// of `queues` with something (a namespace or task pop, one planner step). `None`: nothing.
pub async fn pop(app: &App, req: &PopRequest, queues: &[String]) -> Result<Option<Vec<u8>>, ApiError> {
    let mut wide = req.clone();
    wide.batch = CONFLATION_BATCH;
    wide.conflate = true;
    let popped = match queues {
        [] => app.engine.pop(wide).await,
        _ => app.engine.pop_any(wide, queues.to_vec()).await,
    };
    let Some(r) = popped.or_else(not_found_is_none)? else { return Ok(None) };
    let (body, ..) = render_pop(r)?;
    let mut v: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "render_failed", e.to_string()))?;
    v["conflation"] = true.into();
    serde_json::to_vec(&v)
        .map(Some)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "render_failed", e.to_string()))
}

fn not_found_is_none(e: baton_core::CoreError) -> Result<Option<baton_core::PopResult>, ApiError> {
    if e.kind == baton_core::ErrorKind::NotFound {
        Ok(None)
    } else {
        Err(e.into())
    }
}
