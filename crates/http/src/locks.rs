//! `POST /api/v1/locks`: locks and semaphores with fencing tokens (Queen's `client.lock()`,
//! `client.semaphore()` and `transaction().guard(lock)`, issue 16).
//!
//! A permit is one KV row, `<name>#<slot>` in the namespace `queen-locks`, written with the
//! lock's lifetime as its expiry: acquire is a `putIfAbsent` on a free slot, renew a `put`
//! with `expect` = the token, release a `delete` with `expect`. The token is the row's KV
//! version, which rises with the state machine's time (I5), so it only ever rises on a
//! lock, also across a release and a new acquire. The guard this answers is a required
//! `check` of the row at the token: put in a transaction's `kv` rider it commits the whole
//! entry only while the permit is still the holder's, judged in the same log entry (I2).
//!
//! Owns the turning of lock operations into KV operations; must never judge a permit
//! itself (every verdict is the planner's, on the row as the log ordered it), and never
//! make one call's operations depend on each other (they are independent, as Queen's are,
//! and run at once).

use crate::body::JsonBody;
use crate::error::ApiError;
use crate::render::iso_us;
use crate::App;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use baton_core::kv::{KvOp, KvResult, KvRow};
use serde::Deserialize;
use serde_json::{json, Value};

/// The KV namespace of every permit (Queen's).
pub const NS: &str = "queen-locks";
/// Longest lock name and owner, in bytes (Queen's).
pub const MAX_NAME_BYTES: usize = 256;
/// Most permits of one semaphore (Queen's).
pub const MAX_LIMIT: u32 = 1024;
/// Most operations in one call (400 `too_many_operations` past it): each may read up to
/// [`MAX_LIMIT`] rows.
pub const MAX_OPS: usize = 64;
/// Most permit rows one call may ask the planner to read, counting each operation at its
/// most (an acquire: its `limit` for each of its tries; a get or a renew, which may list
/// the holders: [`MAX_LIMIT`]; a release: one), 400 `too_many_permits` past it: a full call
/// of gets or renews (what a relay sends for its buckets) fits, and one call of 64 acquires
/// of 1,024-slot semaphores (~200,000 rows) does not. Each read is its own planner step
/// of at most [`MAX_LIMIT`] rows, so this bounds a call's work, not a step's.
pub const MAX_PERMIT_READS: u64 = MAX_OPS as u64 * MAX_LIMIT as u64;
/// Most attempts of one acquire that found a free slot taken by a racing acquire.
const ACQUIRE_TRIES: usize = 3;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocksBody {
    operations: Vec<LockOpJson>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LockOpJson {
    op: String,
    name: String,
    ttl_seconds: Option<u64>,
    owner: Option<String>,
    limit: Option<u32>,
    token: Option<u64>,
    slot: Option<u32>,
}

enum LockOp {
    Acquire { name: String, ttl: u64, owner: String, limit: u32 },
    Renew { name: String, token: u64, ttl: u64, slot: u32, owner: Option<String> },
    Release { name: String, token: u64, slot: u32 },
    Get { name: String },
}

impl LockOp {
    fn name(&self) -> &str {
        match self {
            LockOp::Acquire { name, .. }
            | LockOp::Renew { name, .. }
            | LockOp::Release { name, .. }
            | LockOp::Get { name } => name,
        }
    }

    /// The most permit rows this operation reads (see [`MAX_PERMIT_READS`]).
    fn reads(&self) -> u64 {
        match self {
            LockOp::Acquire { limit, .. } => u64::from(*limit) * ACQUIRE_TRIES as u64,
            LockOp::Renew { .. } | LockOp::Get { .. } => u64::from(MAX_LIMIT),
            LockOp::Release { .. } => 1,
        }
    }
}

fn bad(i: usize, code: &'static str, what: String) -> ApiError {
    ApiError::bad(code, format!("operations[{i}]: {what}"))
}

fn text_ok(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_NAME_BYTES && !s.chars().any(|c| c.is_control())
}

fn lock_op(i: usize, o: LockOpJson) -> Result<LockOp, ApiError> {
    if !text_ok(&o.name) || o.name.contains('#') {
        return Err(bad(
            i,
            "invalid_name",
            format!("a lock's name is 1 to {MAX_NAME_BYTES} bytes, without control characters or '#'"),
        ));
    }
    if let Some(w) = o.owner.as_deref().filter(|w| !text_ok(w)) {
        return Err(bad(i, "invalid_owner", format!("owner {w:?} is not 1 to {MAX_NAME_BYTES} bytes of text")));
    }
    let ttl = || match o.ttl_seconds {
        Some(t) if t > 0 => Ok(t),
        _ => Err(bad(i, "invalid_ttl", "ttlSeconds is a whole number above zero (a lock never lives forever)".into())),
    };
    let token =
        || o.token.filter(|t| *t > 0).ok_or_else(|| bad(i, "missing_token", "the permit's token is needed".into()));
    let slot = o.slot.unwrap_or(0);
    if slot >= MAX_LIMIT {
        return Err(bad(i, "invalid_slot", format!("slot is below {MAX_LIMIT}")));
    }
    Ok(match o.op.as_str() {
        "acquire" => {
            let limit = o.limit.unwrap_or(1);
            if !(1..=MAX_LIMIT).contains(&limit) {
                return Err(bad(i, "invalid_limit", format!("limit is 1 (a lock) to {MAX_LIMIT}")));
            }
            let owner = o.owner.unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
            LockOp::Acquire { ttl: ttl()?, owner, limit, name: o.name }
        }
        "renew" => LockOp::Renew { token: token()?, ttl: ttl()?, slot, owner: o.owner, name: o.name },
        "release" => LockOp::Release { token: token()?, slot, name: o.name },
        "get" => LockOp::Get { name: o.name },
        other => {
            return Err(bad(i, "invalid_op", format!("unknown op {other:?} (acquire, renew, release, get)")));
        }
    })
}

fn key(name: &str, slot: u32) -> String {
    format!("{name}#{slot}")
}

/// What a permit's row holds besides its version (the token) and expiry.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Permit {
    owner: String,
    since: String,
}

fn permit(row: &KvRow) -> Option<Permit> {
    serde_json::from_str(row.value.as_deref()?).ok()
}

fn holder(row: &KvRow) -> Value {
    let slot = row.key.rsplit_once('#').and_then(|(_, s)| s.parse::<u32>().ok());
    let (owner, since) = permit(row).map(|p| (p.owner, p.since)).unzip();
    let renewed =
        row.value.as_deref().and_then(|v| serde_json::from_str::<Value>(v).ok()).map(|v| v["renewedAt"].clone());
    json!({"slot": slot, "owner": owner, "token": row.version, "since": since,
           "renewedAt": renewed, "expiresAt": row.expires.map(iso_us)})
}

fn guard(name: &str, slot: u32, token: u64) -> Value {
    json!({"op": "check", "ns": NS, "key": key(name, slot), "expect": token, "required": true})
}

fn now_iso() -> String {
    iso_us(baton_core::wall_micros())
}

async fn kv(app: &App, ops: Vec<KvOp>) -> Result<Vec<KvResult>, ApiError> {
    // No op here is `required`, so nothing rolls back.
    app.engine.kv(ops).await?.map_err(|rb| {
        ApiError::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "lock_rolled_back",
            format!("lock op {} rolled back", rb.index),
        )
    })
}

fn rows(r: Option<&KvResult>) -> Vec<KvRow> {
    match r {
        Some(KvResult::Many { rows, .. }) | Some(KvResult::Prefix { rows, .. }) => rows.clone(),
        Some(KvResult::Found(Some(row))) => vec![row.clone()],
        _ => Vec::new(),
    }
}

fn written(r: Option<&KvResult>) -> Option<u64> {
    match r {
        Some(KvResult::Write { applied: true, version, .. }) => Some(*version),
        _ => None,
    }
}

/// The held permits of `name`, at most `limit` rows: a prefix read costs the rows that are
/// there, not one probe per possible slot (names hold no `#`, so the prefix is this lock's).
async fn held_rows(app: &App, name: &str, limit: u32) -> Result<Vec<KvRow>, ApiError> {
    let op = KvOp::GetPrefix {
        ns: NS.into(),
        prefix: format!("{name}#"),
        after: None,
        limit: limit as usize,
        keys_only: false,
    };
    Ok(rows(kv(app, vec![op]).await?.first()))
}

async fn holders(app: &App, name: &str) -> Result<Vec<KvRow>, ApiError> {
    held_rows(app, name, MAX_LIMIT).await
}

async fn acquire(app: &App, name: &str, ttl: u64, owner: &str, limit: u32) -> Result<Value, ApiError> {
    let slot_of = |r: &KvRow| r.key.rsplit_once('#').and_then(|(_, s)| s.parse::<u32>().ok());
    for _ in 0..ACQUIRE_TRIES {
        // Rows of slots at or past `limit` (a caller that passed a larger limit) are not
        // this semaphore's view: only slots below `limit` count.
        let held: Vec<KvRow> =
            held_rows(app, name, limit).await?.into_iter().filter(|r| slot_of(r).is_some_and(|s| s < limit)).collect();
        // A retry of an acquire whose answer was lost: the permit the first one took.
        if let Some(mine) = held.iter().find(|r| permit(r).is_some_and(|p| p.owner == owner)) {
            let slot = holder(mine)["slot"].as_u64().unwrap_or(0) as u32;
            return Ok(json!({"acquired": true, "already": true, "slot": slot, "token": mine.version,
                "owner": owner, "guard": guard(name, slot, mine.version), "expiresAt": mine.expires.map(iso_us)}));
        }
        let taken: std::collections::HashSet<u32> = held.iter().filter_map(slot_of).collect();
        let Some(slot) = (0..limit).find(|s| !taken.contains(s)) else {
            return Ok(
                json!({"acquired": false, "reason": "held", "holders": held.iter().map(holder).collect::<Vec<_>>()}),
            );
        };
        let value = json!({"owner": owner, "since": now_iso(), "renewedAt": Value::Null}).to_string();
        let op = KvOp::PutIfAbsent { ns: NS.into(), key: key(name, slot), value, ttl_secs: Some(ttl), required: false };
        if let Some(token) = written(kv(app, vec![op]).await?.first()) {
            return Ok(json!({"acquired": true, "slot": slot, "token": token, "owner": owner,
                "guard": guard(name, slot, token)}));
        }
    }
    let held = holders(app, name).await?;
    Ok(json!({"acquired": false, "reason": "contended", "holders": held.iter().map(holder).collect::<Vec<_>>()}))
}

async fn renew(app: &App, name: &str, token: u64, ttl: u64, slot: u32, owner: Option<&str>) -> Result<Value, ApiError> {
    let lost = |held: &[KvRow]| json!({"renewed": false, "reason": "lost", "holders": held.iter().map(holder).collect::<Vec<_>>()});
    let row = rows(kv(app, vec![KvOp::Get { ns: NS.into(), key: key(name, slot) }]).await?.first()).pop();
    let Some(p) = row.as_ref().filter(|r| r.version == token).and_then(permit) else {
        return Ok(lost(&holders(app, name).await?));
    };
    if owner.is_some_and(|o| o != p.owner) {
        return Ok(lost(&holders(app, name).await?));
    }
    let value = json!({"owner": p.owner, "since": p.since, "renewedAt": now_iso()}).to_string();
    let op = KvOp::Put {
        ns: NS.into(),
        key: key(name, slot),
        value,
        ttl_secs: Some(ttl),
        expect: Some(token),
        required: false,
    };
    match written(kv(app, vec![op]).await?.first()) {
        Some(t) => Ok(json!({"renewed": true, "slot": slot, "token": t, "guard": guard(name, slot, t)})),
        None => Ok(lost(&holders(app, name).await?)),
    }
}

async fn run(app: &App, op: LockOp) -> Result<Value, ApiError> {
    match op {
        LockOp::Acquire { name, ttl, owner, limit } => acquire(app, &name, ttl, &owner, limit).await,
        LockOp::Renew { name, token, ttl, slot, owner } => renew(app, &name, token, ttl, slot, owner.as_deref()).await,
        LockOp::Release { name, token, slot } => {
            let op = KvOp::Delete { ns: NS.into(), key: key(&name, slot), expect: Some(token), required: false };
            Ok(match kv(app, vec![op]).await?.first() {
                Some(KvResult::Write { applied: true, .. }) => json!({"released": true}),
                _ => json!({"released": false, "reason": "lost"}),
            })
        }
        LockOp::Get { name } => {
            let held = holders(app, &name).await?;
            Ok(json!({"held": !held.is_empty(), "holders": held.iter().map(holder).collect::<Vec<_>>()}))
        }
    }
}

pub async fn locks(State(app): State<App>, JsonBody(body): JsonBody<LocksBody>) -> Result<Response, ApiError> {
    if body.operations.is_empty() {
        return Err(ApiError::bad("empty_operations", "operations must hold at least one op"));
    }
    if body.operations.len() > MAX_OPS {
        return Err(ApiError::bad("too_many_operations", format!("at most {MAX_OPS} lock operations a call")));
    }
    let ops = body.operations.into_iter().enumerate().map(|(i, o)| lock_op(i, o)).collect::<Result<Vec<_>, _>>()?;
    let reads: u64 = ops.iter().map(LockOp::reads).sum();
    if reads > MAX_PERMIT_READS {
        return Err(ApiError::bad(
            "too_many_permits",
            format!("this call could read {reads} permits; at most {MAX_PERMIT_READS} a call (split it)"),
        ));
    }
    // Operations on different locks go to the planner together and their writes share
    // group commits (64 renewals one after another cost 64 fdatasyncs); those on one lock
    // stay in the call's order (four acquires of one semaphore take slots 0..3, not a race
    // among themselves). The answers keep the call's order.
    let n = ops.len();
    let mut by_name: Vec<(String, Vec<(usize, LockOp)>)> = Vec::new();
    for (i, op) in ops.into_iter().enumerate() {
        match by_name.iter_mut().find(|(name, _)| name == op.name()) {
            Some((_, same)) => same.push((i, op)),
            None => by_name.push((op.name().to_string(), vec![(i, op)])),
        }
    }
    let app = &app;
    let lanes = by_name.into_iter().map(|(_, same)| async move {
        let mut out = Vec::with_capacity(same.len());
        for (i, op) in same {
            out.push((i, run(app, op).await?));
        }
        Ok::<_, ApiError>(out)
    });
    // Every lane runs to its end before the answer (an error in one must not drop another's
    // operation half-way, submitted and unanswered); then the first error, if any.
    let mut results = vec![Value::Null; n];
    for lane in futures_util::future::join_all(lanes).await {
        for (i, v) in lane? {
            results[i] = v;
        }
    }
    Ok(Json(json!({"results": results})).into_response())
}
