//! KV planning: reads, writes with versions and expiry, and compare-and-set
//! preconditions. A request's ops run in order over an overlay of the state,
//! so a later op sees an earlier op's write; effects are emitted only once
//! every op marked `required` has held, so a lost precondition changes
//! nothing (and, inside a transaction, rolls the whole entry back: I2).

use crate::command::CoreError;
use crate::entry::Effect;
use crate::held;
use crate::limits::Limits;
use crate::model::Micros;
use crate::plan::Planner;
use crate::state::KvEntry;
use std::collections::{BTreeMap, HashMap};

pub const MAX_KEY_LEN: usize = 1024;
/// The reserved namespace of Kafka group configs (D67): written only by the Kafka door.
pub const KAFKA_GROUP_CONFIGS: &str = "kafka-group-configs";
pub const MAX_VALUE_LEN: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq)]
pub enum KvOp {
    Get {
        ns: String,
        key: String,
    },
    GetMany {
        ns: String,
        keys: Vec<String>,
    },
    GetPrefix {
        ns: String,
        prefix: String,
        after: Option<String>,
        limit: usize,
        keys_only: bool,
    },
    /// `expect`: the version the key must have now (0 = absent).
    Put {
        ns: String,
        key: String,
        value: String,
        ttl_secs: Option<u64>,
        expect: Option<u64>,
        required: bool,
    },
    PutIfAbsent {
        ns: String,
        key: String,
        value: String,
        ttl_secs: Option<u64>,
        required: bool,
    },
    Delete {
        ns: String,
        key: String,
        expect: Option<u64>,
        required: bool,
    },
    Incr {
        ns: String,
        key: String,
        delta: i64,
        min: Option<i64>,
        max: Option<i64>,
        ttl_secs: Option<u64>,
        required: bool,
    },
    Check {
        ns: String,
        key: String,
        expect: u64,
        required: bool,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct KvRow {
    pub key: String,
    pub value: Option<String>,
    pub version: u64,
    pub expires: Option<Micros>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum KvResult {
    Found(Option<KvRow>),
    Many {
        rows: Vec<KvRow>,
        missing: Vec<String>,
    },
    Prefix {
        rows: Vec<KvRow>,
        next_after: Option<String>,
    },
    /// A write: applied with its new version, or not with the reason and what is there now.
    Write {
        applied: bool,
        reason: Option<&'static str>,
        version: u64,
        current: Option<KvRow>,
    },
}

impl KvResult {
    fn failed_required(&self, required: bool) -> bool {
        required && matches!(self, KvResult::Write { applied: false, .. })
    }
}

/// A lost required precondition: which op, why, and what the key holds now.
#[derive(Debug, Clone, PartialEq)]
pub struct KvRollback {
    pub index: usize,
    pub result: KvResult,
}

fn check_key(ns: &str, key: &str) -> Result<(), CoreError> {
    if ns.is_empty() || ns.len() > 200 {
        return Err(CoreError::bad("invalid_namespace", "ns must be 1 to 200 bytes"));
    }
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        return Err(CoreError::bad("invalid_key", format!("key must be 1 to {MAX_KEY_LEN} bytes")));
    }
    Ok(())
}

/// Shape checks that need no state; a request failing them is a 400.
fn check_ttl(ttl: &Option<u64>) -> Result<(), CoreError> {
    match ttl {
        Some(t) if t.saturating_mul(1000) > crate::limits::MAX_DELAY_MS => Err(CoreError::bad(
            "invalid_ttl",
            format!("ttlSeconds is at most {} (ten years)", crate::limits::MAX_DELAY_MS / 1000),
        )),
        _ => Ok(()),
    }
}

pub fn validate(ops: &[KvOp]) -> Result<(), CoreError> {
    for op in ops {
        match op {
            KvOp::Get { ns, key } | KvOp::Delete { ns, key, .. } | KvOp::Check { ns, key, .. } => check_key(ns, key)?,
            KvOp::Incr { ns, key, ttl_secs, .. } => {
                check_key(ns, key)?;
                check_ttl(ttl_secs)?;
            }
            KvOp::GetMany { ns, keys } => {
                for k in keys {
                    check_key(ns, k)?;
                }
            }
            KvOp::GetPrefix { ns, .. } => check_key(ns, "x")?,
            KvOp::Put { ns, key, value, ttl_secs, .. } | KvOp::PutIfAbsent { ns, key, value, ttl_secs, .. } => {
                check_key(ns, key)?;
                check_ttl(ttl_secs)?;
                if value.len() > MAX_VALUE_LEN {
                    return Err(CoreError::new(
                        crate::ErrorKind::TooLarge,
                        "value_too_large",
                        format!("a KV value is at most {MAX_VALUE_LEN} bytes"),
                    ));
                }
            }
        }
    }
    Ok(())
}

type Overlay = HashMap<(String, String), Option<KvEntry>>;

struct View<'a> {
    p: &'a Planner,
    over: Overlay,
    now: Micros,
}

impl View<'_> {
    fn get(&self, ns: &str, key: &str) -> Option<KvEntry> {
        match self.over.get(&(ns.to_string(), key.to_string())) {
            Some(v) => v.clone(),
            None => self.p.state.kv.get(ns).and_then(|m| m.get(key)).filter(|e| e.live(self.now)).cloned(),
        }
    }
    fn row(&self, ns: &str, key: &str) -> Option<KvRow> {
        self.get(ns, key).map(|e| KvRow {
            key: key.to_string(),
            value: Some(e.value),
            version: e.version,
            expires: e.expires,
        })
    }
    fn version(&self, ns: &str, key: &str) -> u64 {
        self.get(ns, key).map(|e| e.version).unwrap_or(0)
    }
    /// Versions only grow, even across a delete (no tombstones needed): a new
    /// version is at least the entry's time (I5 makes that strictly increasing).
    fn next_version(&self, ns: &str, key: &str) -> u64 {
        self.now.max(self.version(ns, key) + 1)
    }
    fn set(&mut self, ns: &str, key: &str, e: Option<KvEntry>) {
        self.over.insert((ns.to_string(), key.to_string()), e);
    }
}

fn expiry(now: Micros, ttl: Option<u64>) -> Option<Micros> {
    ttl.map(|t| now.saturating_add(t.saturating_mul(1_000_000)))
}

impl Planner {
    /// Judge and (unless a required precondition fails) emit KV ops. Returns
    /// the per-op results, or the first lost required precondition.
    pub fn kv(&mut self, ops: &[KvOp]) -> Result<Result<Vec<KvResult>, KvRollback>, CoreError> {
        let now = self.now();
        let mut v = View { p: self, over: HashMap::new(), now };
        let mut results = Vec::with_capacity(ops.len());
        for (i, op) in ops.iter().enumerate() {
            let (res, required) = run_op(&mut v, op);
            if res.failed_required(required) {
                return Ok(Err(KvRollback { index: i, result: res }));
            }
            results.push(res);
        }
        let mut writes: Vec<_> = v.over.into_iter().collect();
        writes.sort_by(|a, b| a.0.cmp(&b.0));
        // Sized against the stored entries (expired ones hold memory until swept).
        let grow: i64 = writes
            .iter()
            .map(|((ns, key), e)| {
                let old = self.state.kv.get(ns).and_then(|m| m.get(key)).map_or(0, |o| held::kv_size(ns, key, o));
                e.as_ref().map_or(0, |e| held::kv_size(ns, key, e)) as i64 - old as i64
            })
            .sum();
        let have = self.state.kv_bytes();
        Limits::admit_held("KV entries", "kv_full", "max KV MB", have, grow, self.limits.max_kv_bytes)?;
        for ((ns, key), e) in writes {
            let eff = match e {
                Some(e) => Effect::KvSet { ns, key, value: e.value, version: e.version, expires: e.expires },
                None => Effect::KvDel { ns, key },
            };
            self.emit_pub(eff)?;
        }
        Ok(Ok(results))
    }
}

fn not_applied(v: &View, ns: &str, key: &str, reason: &'static str) -> KvResult {
    KvResult::Write { applied: false, reason: Some(reason), version: v.version(ns, key), current: v.row(ns, key) }
}

/// A lost `expect`, named as Queen names it (its lock client tells its own renewal from a
/// takeover by `version`): the key is gone (`absent`), should have been absent (`exists`),
/// or is at another version (`version`).
fn mismatch(v: &View, ns: &str, key: &str, expect: u64) -> KvResult {
    let reason = match (expect, v.version(ns, key)) {
        (_, 0) => "absent",
        (0, _) => "exists",
        _ => "version",
    };
    not_applied(v, ns, key, reason)
}

fn run_op(v: &mut View, op: &KvOp) -> (KvResult, bool) {
    let now = v.now;
    match op {
        KvOp::Get { ns, key } => (KvResult::Found(v.row(ns, key)), false),
        KvOp::GetMany { ns, keys } => {
            let mut rows = Vec::new();
            let mut missing = Vec::new();
            for k in keys {
                match v.row(ns, k) {
                    Some(r) => rows.push(r),
                    None => missing.push(k.clone()),
                }
            }
            (KvResult::Many { rows, missing }, false)
        }
        KvOp::GetPrefix { ns, prefix, after, limit, keys_only } => {
            let start = after.clone().unwrap_or_else(|| prefix.clone());
            let wanted = |k: &str| k.starts_with(prefix.as_str()) && k >= start.as_str() && after.as_deref() != Some(k);
            // Writes earlier in this same request (the overlay) count: they are what the
            // request's later operations see everywhere else. Enough stored keys are read
            // that the overlay's deletions cannot leave the page short.
            let over: Vec<(&str, &Option<KvEntry>)> =
                v.over.iter().filter(|((n, k), _)| n == ns && wanted(k)).map(|((_, k), e)| (k.as_str(), e)).collect();
            let mut page: BTreeMap<&str, &KvEntry> = BTreeMap::new();
            if let Some(m) = v.p.state.kv.get(ns) {
                let stored = m
                    .range(start.clone()..)
                    .take_while(|(k, _)| k.starts_with(prefix.as_str()))
                    .filter(|(k, e)| wanted(k) && e.live(now))
                    .take(limit.saturating_add(over.len()).saturating_add(1));
                page.extend(stored.map(|(k, e)| (k.as_str(), e)));
            }
            for (k, e) in over {
                match e {
                    Some(e) if e.live(now) => page.insert(k, e),
                    _ => page.remove(k),
                };
            }
            let mut rows = Vec::new();
            let mut next_after = None;
            for (k, e) in page {
                if rows.len() == *limit {
                    next_after = rows.last().map(|r: &KvRow| r.key.clone());
                    break;
                }
                let value = (!keys_only).then(|| e.value.clone());
                rows.push(KvRow { key: k.to_string(), value, version: e.version, expires: e.expires });
            }
            (KvResult::Prefix { rows, next_after }, false)
        }
        KvOp::Put { ns, key, value, ttl_secs, expect, required } => {
            if let Some(x) = expect.filter(|x| *x != v.version(ns, key)) {
                return (mismatch(v, ns, key, x), *required);
            }
            let version = v.next_version(ns, key);
            v.set(ns, key, Some(KvEntry { value: value.clone(), version, expires: expiry(now, *ttl_secs) }));
            (KvResult::Write { applied: true, reason: None, version, current: None }, *required)
        }
        KvOp::PutIfAbsent { ns, key, value, ttl_secs, required } => {
            if v.get(ns, key).is_some() {
                return (not_applied(v, ns, key, "exists"), *required);
            }
            let version = v.next_version(ns, key);
            v.set(ns, key, Some(KvEntry { value: value.clone(), version, expires: expiry(now, *ttl_secs) }));
            (KvResult::Write { applied: true, reason: None, version, current: None }, *required)
        }
        KvOp::Delete { ns, key, expect, required } => {
            if let Some(x) = expect.filter(|x| *x != v.version(ns, key)) {
                return (mismatch(v, ns, key, x), *required);
            }
            if v.get(ns, key).is_none() {
                return (not_applied(v, ns, key, "absent"), *required);
            }
            v.set(ns, key, None);
            (KvResult::Write { applied: true, reason: None, version: 0, current: None }, *required)
        }
        KvOp::Incr { ns, key, delta, min, max, ttl_secs, required } => {
            let cur = v.get(ns, key);
            let n = match &cur {
                None => 0,
                Some(e) => match e.value.trim().parse::<i64>() {
                    Ok(n) => n,
                    Err(_) => return (not_applied(v, ns, key, "not_a_number"), *required),
                },
            };
            let Some(next) = n.checked_add(*delta) else { return (not_applied(v, ns, key, "overflow"), *required) };
            if min.is_some_and(|m| next < m) || max.is_some_and(|m| next > m) {
                return (not_applied(v, ns, key, "out_of_range"), *required);
            }
            let version = v.next_version(ns, key);
            let expires = match ttl_secs {
                Some(_) => expiry(now, *ttl_secs),
                None => cur.and_then(|e| e.expires),
            };
            v.set(ns, key, Some(KvEntry { value: next.to_string(), version, expires }));
            let row = KvRow { key: key.clone(), value: Some(next.to_string()), version, expires };
            (KvResult::Write { applied: true, reason: None, version, current: Some(row) }, *required)
        }
        KvOp::Check { ns, key, expect, required } => {
            if *expect != v.version(ns, key) {
                return (mismatch(v, ns, key, *expect), *required);
            }
            (KvResult::Write { applied: true, reason: None, version: *expect, current: v.row(ns, key) }, *required)
        }
    }
}

/// Where the expired-key sweep stopped: (namespace, key) last looked at.
pub type SweepCursor = Option<(String, String)>;

impl Planner {
    /// Deletes expired KV entries, looking at no more than `budget` keys from where the last
    /// call stopped, so expired keys give their memory back without any one tick scanning all
    /// keys. Deletes are planned effects like any other (I1). Returns how many were deleted.
    pub fn sweep_kv(&mut self, cursor: &mut SweepCursor, budget: usize) -> Result<usize, CoreError> {
        let now = self.now();
        let mut expired = Vec::new();
        let mut seen = 0;
        let (from_ns, from_key) = cursor.clone().unwrap_or_default();
        let mut last = None;
        'outer: for (ns, m) in self.state.kv.range(from_ns.clone()..) {
            let keys: Box<dyn Iterator<Item = (&String, &crate::state::KvEntry)>> = if *ns == from_ns {
                Box::new(m.range::<String, _>((std::ops::Bound::Excluded(&from_key), std::ops::Bound::Unbounded)))
            } else {
                Box::new(m.iter())
            };
            for (k, e) in keys {
                if seen == budget {
                    break 'outer;
                }
                seen += 1;
                last = Some((ns.clone(), k.clone()));
                if !e.live(now) {
                    expired.push((ns.clone(), k.clone()));
                }
            }
        }
        // A pass that ran out of keys starts over next time.
        *cursor = if seen == budget { last } else { None };
        let n = expired.len();
        for (ns, key) in expired {
            self.emit_pub(Effect::KvDel { ns, key })?;
        }
        Ok(n)
    }
}
