//! Kafka group configs (KIP-848 / KIP-932: IncrementalAlterConfigs and DescribeConfigs on
//! a GROUP resource, D67): which names a group may set, what values they take, where they
//! are kept and what the share-group door reads from them.
//!
//! A group's configs are one row of Baton's KV in the reserved namespace [`NS`] (key: the
//! group id, value: a JSON object of the configs set), so they are durable, replicated and
//! in the checkpoint like any KV row, and a change is one compare-and-set: two admins
//! altering one group at once cannot lose either's change. The share door reads them
//! through a cache refreshed every [`REFRESH`].
//!
//! Must never store a name or value a Kafka broker would refuse (the change is refused
//! whole, before any write), nor let an HTTP client write the namespace (it is reserved).

use crate::Ctx;
use baton_core::kv::{KvOp, KvResult};
use baton_core::topic_config::ConfigOp;
use baton_core::Micros;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use baton_core::kv::KAFKA_GROUP_CONFIGS as NS;

/// How long the share door trusts a cached group config (a change made through this node is
/// seen at once; one made through another leader before a leader change, within this).
pub const REFRESH: Duration = Duration::from_secs(1);
/// Groups whose configs are cached; past it the cache starts over. With values of at most
/// [`MAX_VALUE`] bytes, seven configs and names of at most 1 KiB, about 80 MB at worst.
const MAX_CACHED: usize = 10_000;
/// Bytes of one config value (as a topic config's): every valid value is far shorter, but
/// `by_duration:PT000…1S` parses whatever its length, and would be stored and cached.
const MAX_VALUE: usize = 1024;
/// Tries of a compare-and-set that lost to a concurrent change.
const CAS_TRIES: usize = 32;

/// The group configs a client may set, with Kafka's defaults (`share.record.lock.duration.ms`
/// is `--kafka-share-record-lock-ms`). The `consumer.*` ones belong to KIP-848 groups, which
/// Baton does not serve: kept and described, not acted on; so is `share.isolation.level`
/// (a share fetch never serves an open or aborted transaction's records).
pub const GROUP_CONFIGS: &[&str] = &[
    "consumer.heartbeat.interval.ms",
    "consumer.session.timeout.ms",
    "share.auto.offset.reset",
    "share.heartbeat.interval.ms",
    "share.isolation.level",
    "share.record.lock.duration.ms",
    "share.session.timeout.ms",
];

/// Kafka's default of each config, as Baton runs it.
pub fn default_of(ctx: &Ctx, name: &str) -> String {
    match name {
        "share.auto.offset.reset" => "latest".into(),
        "share.isolation.level" => "read_uncommitted".into(),
        "share.record.lock.duration.ms" => ctx.cfg.share_record_lock.as_millis().to_string(),
        "share.session.timeout.ms" => ctx.shares.limits.session_timeout.as_millis().to_string(),
        "share.heartbeat.interval.ms" => ctx.shares.limits.heartbeat_interval.as_millis().to_string(),
        "consumer.session.timeout.ms" => "45000".into(),
        "consumer.heartbeat.interval.ms" => "5000".into(),
        _ => String::new(),
    }
}

/// Milliseconds a config of this name may take (Kafka's broker bounds, `group.share.min.*`
/// and `group.share.max.*`, widened to take Baton's own flags' values).
fn bounds(name: &str) -> (u64, u64) {
    match name {
        "share.record.lock.duration.ms" => (1_000, 3_600_000),
        "share.session.timeout.ms" | "consumer.session.timeout.ms" => (1_000, 1_800_000),
        _ => (1_000, 900_000),
    }
}

/// Why a config change is refused.
pub type Refusal = String;

/// Why a change did not happen: refused as asked, or the engine could not make it.
#[derive(Debug)]
pub enum AlterError {
    Invalid(Refusal),
    Core(baton_core::CoreError),
}

/// Checks one value of a known config.
pub fn check(name: &str, value: &str) -> Result<(), Refusal> {
    if value.len() > MAX_VALUE {
        return Err(format!("{name}: a value of {} bytes (at most {MAX_VALUE})", value.len()));
    }
    match name {
        "share.auto.offset.reset" => match value {
            "latest" | "earliest" => Ok(()),
            v => match v.strip_prefix("by_duration:") {
                Some(d) if iso_duration(d).is_some() => Ok(()),
                _ => Err(format!("{name}: {value:?} is not latest, earliest or by_duration:<ISO-8601 duration>")),
            },
        },
        "share.isolation.level" => matches!(value, "read_committed" | "read_uncommitted")
            .then_some(())
            .ok_or_else(|| format!("{name}: {value:?} is not read_committed or read_uncommitted")),
        _ => {
            let (lo, hi) = bounds(name);
            match value.parse::<u64>() {
                Ok(v) if (lo..=hi).contains(&v) => Ok(()),
                _ => Err(format!("{name}: {value:?} is not a number of milliseconds from {lo} to {hi}")),
            }
        }
    }
}

/// An ISO-8601 duration as Java's `Duration.parse` takes it (`PnDTnHnMn.nS`, no sign).
pub fn iso_duration(s: &str) -> Option<Duration> {
    let rest = s.strip_prefix('P').or_else(|| s.strip_prefix('p'))?;
    let (days, time) = match rest.split_once(['T', 't']) {
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    let mut secs = 0f64;
    let mut any = false;
    if !days.is_empty() {
        let n = days.strip_suffix(['D', 'd'])?;
        secs += n.parse::<u32>().ok()? as f64 * 86_400.0;
        any = true;
    }
    if let Some(mut t) = time {
        if t.is_empty() {
            return None;
        }
        for (unit, scale) in [('H', 3600.0), ('M', 60.0), ('S', 1.0)] {
            let at = t.find([unit, unit.to_ascii_lowercase()]);
            if let Some(i) = at {
                let n = &t[..i];
                if n.is_empty() || n.starts_with(['+', '-']) || (unit != 'S' && n.contains('.')) {
                    return None;
                }
                secs += n.parse::<f64>().ok().filter(|v| v.is_finite())? * scale;
                t = &t[i + 1..];
                any = true;
            }
        }
        if !t.is_empty() {
            return None;
        }
    }
    (any && secs <= 10.0 * 365.0 * 86_400.0).then(|| Duration::from_secs_f64(secs))
}

/// `current` with `ops` applied, checked whole.
pub fn changed(
    current: &BTreeMap<String, String>,
    ops: &[(String, ConfigOp)],
) -> Result<BTreeMap<String, String>, Refusal> {
    let mut out = current.clone();
    for (name, op) in ops {
        if !GROUP_CONFIGS.contains(&name.as_str()) {
            return Err(format!("{name:?} is not a group config"));
        }
        match op {
            ConfigOp::Set(v) => {
                check(name, v)?;
                out.insert(name.clone(), v.clone());
            }
            ConfigOp::Delete => {
                out.remove(name);
            }
            ConfigOp::Append(_) | ConfigOp::Subtract(_) => {
                return Err(format!("{name} is not a list: APPEND and SUBTRACT do not apply"))
            }
        }
    }
    Ok(out)
}

/// What the share door acts on, for one group.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShareSettings {
    pub lock: Duration,
    pub session_timeout: Duration,
    pub heartbeat_interval: Duration,
    pub reset: Reset,
}

/// `share.auto.offset.reset`: where the group starts on a topic it has not read before.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reset {
    Latest,
    Earliest,
    /// Records written this long before the group's first fetch of the topic, and after.
    ByDuration(Duration),
}

impl Reset {
    /// The pop's `from_ts` (Baton starts a group on a queue at its first pop there).
    pub fn start_ts(self) -> Option<Micros> {
        match self {
            // The first record written at or after the end of time: the partition's end.
            Reset::Latest => Some(Micros::MAX),
            Reset::Earliest => None,
            Reset::ByDuration(d) => {
                Some(baton_core::wall_micros().saturating_sub(d.as_micros().min(u64::MAX as u128) as u64))
            }
        }
    }
}

fn ms(v: Option<&String>, default: Duration) -> Duration {
    v.and_then(|v| v.parse::<u64>().ok()).map_or(default, Duration::from_millis)
}

impl ShareSettings {
    fn of(ctx: &Ctx, m: &BTreeMap<String, String>) -> ShareSettings {
        let reset = match m.get("share.auto.offset.reset").map(String::as_str) {
            Some("earliest") => Reset::Earliest,
            Some(v) => match v.strip_prefix("by_duration:").and_then(iso_duration) {
                Some(d) => Reset::ByDuration(d),
                None => Reset::Latest,
            },
            None => Reset::Latest,
        };
        ShareSettings {
            lock: ms(m.get("share.record.lock.duration.ms"), ctx.cfg.share_record_lock),
            session_timeout: ms(m.get("share.session.timeout.ms"), ctx.shares.limits.session_timeout),
            heartbeat_interval: ms(m.get("share.heartbeat.interval.ms"), ctx.shares.limits.heartbeat_interval),
            reset,
        }
    }
}

/// One group's configs as set, and when they were read.
type Cached = (Instant, Arc<BTreeMap<String, String>>);

/// The configs read recently, per group.
#[derive(Default)]
pub struct GroupConfigCache(Mutex<HashMap<String, Cached>>);

impl GroupConfigCache {
    fn put(&self, group: &str, m: BTreeMap<String, String>) {
        let mut c = self.0.lock();
        if c.len() >= MAX_CACHED {
            c.clear();
        }
        c.insert(group.to_string(), (Instant::now(), Arc::new(m)));
    }

    /// The group was deleted, and its configs with it.
    pub fn forget(&self, group: &str) {
        self.0.lock().remove(group);
    }
}

/// The stored row: its configs and version (0: none stored).
async fn read(ctx: &Ctx, group: &str) -> Result<(BTreeMap<String, String>, u64), baton_core::CoreError> {
    let got = ctx.engine.kv(vec![KvOp::Get { ns: NS.into(), key: group.into() }]).await?;
    Ok(match got.ok().and_then(|mut r| r.pop()) {
        Some(KvResult::Found(Some(row))) => {
            let m = row.value.as_deref().map(parse).unwrap_or_default();
            (m, row.version)
        }
        _ => (BTreeMap::new(), 0),
    })
}

/// A stored value; one that does not parse (it cannot: only [`alter`] writes) is no configs.
fn parse(v: &str) -> BTreeMap<String, String> {
    serde_json::from_str(v).unwrap_or_default()
}

/// A group's configs as set (the defaults are not listed).
pub async fn configs(ctx: &Ctx, group: &str) -> Result<Arc<BTreeMap<String, String>>, baton_core::CoreError> {
    if group.is_empty() || group.len() > baton_core::kv::MAX_KEY_LEN {
        // No such group can have configs (nor be joined): the defaults, without a read.
        return Ok(Arc::default());
    }
    let cached = ctx.group_configs.0.lock().get(group).filter(|(at, _)| at.elapsed() < REFRESH).map(|(_, m)| m.clone());
    if let Some(m) = cached {
        return Ok(m);
    }
    let (m, _) = read(ctx, group).await?;
    ctx.group_configs.put(group, m.clone());
    Ok(Arc::new(m))
}

/// What the share door acts on for `group` (the defaults when the configs cannot be read).
pub async fn share_settings(ctx: &Ctx, group: &str) -> ShareSettings {
    match configs(ctx, group).await {
        Ok(m) => ShareSettings::of(ctx, &m),
        Err(e) => {
            tracing::warn!(%group, error = %e, "kafka: reading a group's configs failed; its defaults apply");
            ShareSettings::of(ctx, &BTreeMap::new())
        }
    }
}

/// Change a group's configs: checked whole, then one compare-and-set of its row, tried
/// again when a concurrent change won. With `replace` (AlterConfigs) every config not
/// named goes back to its default; else (IncrementalAlterConfigs) only the named change.
pub async fn alter(
    ctx: &Ctx,
    group: &str,
    ops: &[(String, ConfigOp)],
    replace: bool,
    validate_only: bool,
) -> Result<(), AlterError> {
    if group.is_empty() || group.len() > baton_core::kv::MAX_KEY_LEN {
        return Err(AlterError::Invalid(format!("a group id of 1 to {} bytes", baton_core::kv::MAX_KEY_LEN)));
    }
    for _ in 0..CAS_TRIES {
        let (current, version) = read(ctx, group).await.map_err(AlterError::Core)?;
        let empty = BTreeMap::new();
        let next = changed(if replace { &empty } else { &current }, ops).map_err(AlterError::Invalid)?;
        if validate_only || next == current {
            return Ok(());
        }
        let op = if next.is_empty() {
            KvOp::Delete { ns: NS.into(), key: group.into(), expect: Some(version), required: true }
        } else {
            let value = serde_json::to_string(&next).expect("a map of strings serializes");
            KvOp::Put { ns: NS.into(), key: group.into(), value, ttl_secs: None, expect: Some(version), required: true }
        };
        match ctx.engine.kv(vec![op]).await.map_err(AlterError::Core)? {
            Ok(_) => {
                ctx.group_configs.put(group, next);
                return Ok(());
            }
            Err(_lost) => continue,
        }
    }
    Err(AlterError::Core(baton_core::CoreError::unavailable(format!(
        "{group}: its configs changed under {CAS_TRIES} tries in a row; try again"
    ))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_durations_parse_as_java_does_and_garbage_does_not() {
        assert_eq!(iso_duration("PT1H"), Some(Duration::from_secs(3600)));
        assert_eq!(iso_duration("P1DT2M"), Some(Duration::from_secs(86_400 + 120)));
        assert_eq!(iso_duration("PT0.5S"), Some(Duration::from_millis(500)));
        assert_eq!(iso_duration("PT10M30S"), Some(Duration::from_secs(630)));
        for bad in ["", "P", "PT", "1H", "PT1", "PT-1H", "PT1.5H", "P1H", "PTS", "PT1HX", "P99999999D"] {
            assert_eq!(iso_duration(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn values_are_checked_and_changes_are_whole() {
        assert!(check("share.auto.offset.reset", "earliest").is_ok());
        assert!(check("share.auto.offset.reset", "by_duration:PT5M").is_ok());
        assert!(check("share.auto.offset.reset", "by_duration:5m").is_err());
        assert!(check("share.auto.offset.reset", "none").is_err());
        assert!(check("share.record.lock.duration.ms", "15000").is_ok());
        assert!(check("share.record.lock.duration.ms", "10").is_err());
        assert!(check("share.record.lock.duration.ms", "-1").is_err());
        assert!(check("share.isolation.level", "read_committed").is_ok());
        let padded = format!("by_duration:PT{}1S", "0".repeat(MAX_VALUE));
        assert!(iso_duration(&padded["by_duration:".len()..]).is_some(), "it parses, so only the length refuses it");
        assert!(check("share.auto.offset.reset", &padded).unwrap_err().contains("at most"));
        let set = |n: &str, v: &str| (n.to_string(), ConfigOp::Set(v.to_string()));
        let now = changed(&BTreeMap::new(), &[set("share.auto.offset.reset", "earliest")]).unwrap();
        assert_eq!(now["share.auto.offset.reset"], "earliest");
        // One bad op refuses the whole change.
        let bad = [set("share.session.timeout.ms", "50000"), set("retention.ms", "1")];
        assert!(changed(&now, &bad).unwrap_err().contains("retention.ms"));
        let gone = changed(&now, &[("share.auto.offset.reset".into(), ConfigOp::Delete)]).unwrap();
        assert!(gone.is_empty());
        let append = [("share.auto.offset.reset".to_string(), ConfigOp::Append("x".into()))];
        assert!(changed(&now, &append).is_err());
    }

    #[test]
    fn the_cache_holds_at_most_max_cached_groups() {
        let c = GroupConfigCache::default();
        for i in 0..MAX_CACHED + 5 {
            c.put(&format!("g{i}"), BTreeMap::new());
            assert!(c.0.lock().len() <= MAX_CACHED);
        }
        assert!(c.0.lock().contains_key(&format!("g{}", MAX_CACHED + 4)), "the newest is kept");
    }
}
