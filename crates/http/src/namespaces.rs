//! Queen's namespaces and tasks (issue 16 item 2, D57): `configure` tags a queue with a
//! namespace and a task, and a consumer pops across every queue of a namespace or task
//! (`GET /api/v1/pop?namespace=&task=`); `admin.get_namespaces`, `get_tasks` and
//! `list_queues(namespace=, task=)` read the tags.
//!
//! A queue's tags are one KV row (`queen-namespaces`, key = queue name) rather than fields
//! of the queue: the queue's options are in the log's and the checkpoint's encoding, and a
//! tag is a label that no delivery rule reads. Owns the rows, their cache and the pop
//! across queues; must never read more than [`MAX_TAGGED`] rows for one call nor the rows
//! more than once per [`TAG_CACHE_MS`], never take more than one planner step per
//! [`MAX_POP_ANY`] queues for one look, and never hold more than [`MAX_WATCHED`] notifiers.

use crate::consume::{attempt_wide, pop_request, refuse_conflating_auto_ack, PopParams};
use crate::error::ApiError;
use crate::App;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use baton_core::engine::MAX_POP_ANY;
use baton_core::kv::{KvOp, KvResult};
use baton_core::{PopRequest, QUEUE_MODE};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// The KV namespace of queues' tags.
pub const NS: &str = "queen-namespaces";
/// Most tagged queues one call reads (a namespace pop, the lists); past it the rest are not
/// seen by that call, and the lists say `truncated`.
pub const MAX_TAGGED: usize = 10_000;
/// Longest namespace or task name, bytes.
const MAX_NAME: usize = 256;

#[derive(Serialize, Deserialize, Clone, Default)]
pub struct Tags {
    pub namespace: Option<String>,
    pub task: Option<String>,
}

fn check(what: &str, v: &Option<String>) -> Result<(), ApiError> {
    match v {
        Some(s) if s.is_empty() || s.len() > MAX_NAME || s.chars().any(char::is_control) => {
            Err(ApiError::bad("invalid_name", format!("{what} is 1 to {MAX_NAME} bytes without control characters")))
        }
        _ => Ok(()),
    }
}

/// Checks tags before a configure changes anything.
pub fn validate(namespace: &Option<String>, task: &Option<String>) -> Result<(), ApiError> {
    check("namespace", namespace)?;
    check("task", task)
}

async fn kv(app: &App, op: KvOp) -> Result<Option<KvResult>, ApiError> {
    let mut r = app.engine.kv(vec![op]).await?.map_err(|_| {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "a namespace row's write rolled back")
    })?;
    Ok(r.pop())
}

/// Records the tags a configure named. A configure that names neither leaves them as they
/// are (Queen's client sends `null` for what it was not given).
pub async fn record(app: &App, queue: &str, tags: Tags) -> Result<(), ApiError> {
    if tags.namespace.is_none() && tags.task.is_none() {
        return Ok(());
    }
    let value = serde_json::to_string(&tags).expect("tags serialize");
    let op = KvOp::Put { ns: NS.into(), key: queue.into(), value, ttl_secs: None, expect: None, required: false };
    let res = kv(app, op).await.map(|_| ());
    app.tags.invalidate();
    res
}

/// Forgets a deleted queue's tags.
pub async fn forget(app: &App, queue: &str) -> Result<(), ApiError> {
    let res = kv(app, KvOp::Delete { ns: NS.into(), key: queue.into(), expect: None, required: false }).await;
    app.tags.invalidate();
    res.map(|_| ())
}

/// One queue's tags (none for an untagged queue).
pub async fn tags_of(app: &App, queue: &str) -> Result<Tags, ApiError> {
    Ok(match kv(app, KvOp::Get { ns: NS.into(), key: queue.into() }).await? {
        Some(KvResult::Found(Some(row))) => {
            row.value.as_deref().and_then(|v| serde_json::from_str(v).ok()).unwrap_or_default()
        }
        _ => Tags::default(),
    })
}

/// Every tagged queue (at most [`MAX_TAGGED`]) with its tags, in name order, and whether
/// there were more. Served from [`TagCache`]: at most one read of the rows per
/// [`TAG_CACHE_MS`] on the planner, however many namespace pops and lists come.
pub async fn tagged(app: &App) -> Result<Arc<Tagged>, ApiError> {
    if let Some(t) = app.tags.fresh() {
        return Ok(t);
    }
    // One reader refreshes; the others wait for it and take its answer.
    let _one = app.tags.refresh.lock().await;
    if let Some(t) = app.tags.fresh() {
        return Ok(t);
    }
    let generation = app.tags.generation.load(Relaxed);
    let op = KvOp::GetPrefix { ns: NS.into(), prefix: String::new(), after: None, limit: MAX_TAGGED, keys_only: false };
    let t = Arc::new(match kv(app, op).await? {
        Some(KvResult::Prefix { rows, next_after }) => Tagged {
            rows: rows
                .into_iter()
                .filter_map(|r| Some((r.key, serde_json::from_str(r.value.as_deref()?).ok()?)))
                .collect(),
            truncated: next_after.is_some(),
        },
        _ => Tagged::default(),
    });
    app.tags.reads.fetch_add(1, Relaxed);
    *app.tags.slot.lock() = Some((std::time::Instant::now(), generation, t.clone()));
    Ok(t)
}

/// The tagged queues as read at one time.
#[derive(Default)]
pub struct Tagged {
    pub rows: Vec<(String, Tags)>,
    pub truncated: bool,
}

/// How long a read of the tags serves namespace pops and lists. A configure or delete on
/// this node drops it at once; one on another node (a cluster forwards writes to the
/// leader, so only after a leader change) is seen within this time.
pub const TAG_CACHE_MS: u64 = 1000;

/// The last read of the tag rows (D57): namespace pops must not read up to [`MAX_TAGGED`]
/// rows on the planner each time they are called.
#[derive(Default)]
pub struct TagCache {
    slot: parking_lot::Mutex<Option<(std::time::Instant, u64, Arc<Tagged>)>>,
    refresh: tokio::sync::Mutex<()>,
    /// Bumped by every tag write on this node: a read started before it is not kept.
    generation: AtomicU64,
    /// Reads of the rows (`baton_namespace_tag_reads_total`).
    pub reads: AtomicU64,
}

impl TagCache {
    fn fresh(&self) -> Option<Arc<Tagged>> {
        let slot = self.slot.lock();
        let (at, generation, t) = slot.as_ref()?;
        let live = at.elapsed() < std::time::Duration::from_millis(TAG_CACHE_MS)
            && *generation == self.generation.load(Relaxed);
        live.then(|| t.clone())
    }

    fn invalidate(&self) {
        self.generation.fetch_add(1, Relaxed);
    }
}

/// Whether a queue's tags match a filter (`None` matches anything).
pub fn matches(t: &Tags, namespace: Option<&str>, task: Option<&str>) -> bool {
    namespace.is_none_or(|n| t.namespace.as_deref() == Some(n)) && task.is_none_or(|k| t.task.as_deref() == Some(k))
}

fn listing(rows: &[(String, Tags)], truncated: bool, key: &str, pick: fn(&Tags) -> Option<&String>) -> Response {
    let mut by: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (q, t) in rows {
        if let Some(n) = pick(t) {
            by.entry(n).or_default().push(q);
        }
    }
    let list: Vec<_> = by.into_iter().map(|(n, qs)| json!({ key: n, "queues": qs, "queueCount": qs.len() })).collect();
    Json(json!({ format!("{key}s"): list, "truncated": truncated })).into_response()
}

pub async fn namespaces(State(app): State<App>) -> Result<Response, ApiError> {
    let t = tagged(&app).await?;
    Ok(listing(&t.rows, t.truncated, "namespace", |t| t.namespace.as_ref()))
}

pub async fn tasks(State(app): State<App>) -> Result<Response, ApiError> {
    let t = tagged(&app).await?;
    Ok(listing(&t.rows, t.truncated, "task", |t| t.task.as_ref()))
}

/// The namespace and task of a pop; the rest of its query is a queue pop's [`PopParams`]
/// (read apart: serde's `flatten` cannot read numbers out of a query string).
#[derive(Deserialize)]
pub struct PopAcross {
    namespace: Option<String>,
    task: Option<String>,
}

/// Where the next namespace pop starts, so one busy queue does not starve the others.
static ROTATE: AtomicUsize = AtomicUsize::new(0);

/// A namespace with more queues than this is not waited on through every queue's notifier
/// (one per queue per waiting pop): it is looked at again every [`REPASS_MS`] instead.
pub const MAX_WATCHED: usize = 1024;
const REPASS_MS: u64 = 250;

/// `GET /api/v1/pop?namespace=&task=`: one pop from the first queue of the namespace (and/or
/// task) that has messages for the group, starting at a rotating queue. One look costs one
/// planner step per [`MAX_POP_ANY`] queues (`Engine::pop_any`); with `wait=true` it waits
/// on the queues' notifiers (up to [`MAX_WATCHED`] queues) or looks again every
/// [`REPASS_MS`].
pub async fn pop(
    State(app): State<App>,
    q: Result<Query<PopAcross>, axum::extract::rejection::QueryRejection>,
    p: Result<Query<PopParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::bad("invalid_query", e.body_text()))?;
    let Query(p) = p.map_err(|e| ApiError::bad("invalid_query", e.body_text()))?;
    if q.namespace.is_none() && q.task.is_none() {
        return Err(ApiError::bad("missing_queue", "a pop names a queue, a namespace or a task"));
    }
    validate(&q.namespace, &q.task)?;
    let queues: Vec<String> = tagged(&app)
        .await?
        .rows
        .iter()
        .filter(|(_, t)| matches(t, q.namespace.as_deref(), q.task.as_deref()))
        .map(|(name, _)| name.clone())
        .collect();
    let (req, wait, deadline) = pop_request(&app, String::new(), None, &p)?;
    let wide = p.width()?;
    p.check_conflation(&req)?;
    let declared = p.declares_conflation();
    let empty = || match declared {
        // Queen's client needs the policy's echo on an empty pop too.
        true => Json(json!({"success": true, "messages": [], "conflation": true})).into_response(),
        false => StatusCode::NO_CONTENT.into_response(),
    };
    if queues.is_empty() && !wait {
        return Ok(empty());
    }
    let group = req.group.clone().unwrap_or_else(|| QUEUE_MODE.to_string());
    let notifiers: Vec<_> = if queues.len() <= MAX_WATCHED {
        queues.iter().map(|name| app.engine.pop_notifier(name, &group)).collect()
    } else {
        Vec::new()
    };
    loop {
        let mut woken: Vec<_> = notifiers.iter().map(|n| Box::pin(n.notified())).collect();
        for w in &mut woken {
            w.as_mut().enable();
        }
        if !queues.is_empty() {
            let start = ROTATE.fetch_add(1, Relaxed) % queues.len();
            let rotated: Vec<String> = queues[start..].iter().chain(&queues[..start]).cloned().collect();
            if let Some(answer) = look(&app, &req, rotated, wide, declared).await? {
                return Ok(answer);
            }
        }
        if !wait || tokio::time::Instant::now() >= deadline {
            return Ok(empty());
        }
        let watched = !notifiers.is_empty() || queues.is_empty();
        let any = async {
            if !watched {
                tokio::time::sleep(std::time::Duration::from_millis(REPASS_MS)).await;
            } else if woken.is_empty() {
                std::future::pending::<()>().await;
            } else {
                futures_util::future::select_all(woken).await;
            }
        };
        tokio::select! {
            _ = any => {}
            _ = tokio::time::sleep_until(deadline) => {}
            _ = app.shutdown.triggered() => return Ok(empty()),
        }
    }
}

/// One look over the tagged queues, in the rotated order: the group's conflating queues
/// (a policy registered per (group, queue), D61; a pop that declares conflation registers
/// it on each) answer its newest message of a partition, the others a pop of up to `wide`
/// partitions of the first queue with messages. [`MAX_POP_ANY`] queues a planner step.
async fn look(
    app: &App,
    req: &PopRequest,
    queues: Vec<String>,
    wide: u32,
    declared: bool,
) -> Result<Option<Response>, ApiError> {
    let on = match &req.group {
        Some(g) => crate::conflation::policies(app, &queues, g, declared).await?,
        None => vec![false; queues.len()],
    };
    let (mut conflating, mut plain) = (Vec::new(), Vec::new());
    for (q, on) in queues.into_iter().zip(on) {
        if on {
            conflating.push(q)
        } else {
            plain.push(q)
        }
    }
    refuse_conflating_auto_ack(!conflating.is_empty(), req)?;
    for chunk in conflating.chunks(MAX_POP_ANY) {
        if let Some(body) = crate::conflation::pop(app, req, chunk).await? {
            return Ok(Some(([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response()));
        }
    }
    for chunk in plain.chunks(MAX_POP_ANY) {
        if let Some(answer) = attempt_wide(app, req, chunk, wide).await? {
            return Ok(Some(answer));
        }
    }
    Ok(None)
}
