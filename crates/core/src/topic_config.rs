//! Kafka topic configs (issue 15 item 5): which names a topic may set, what values they
//! take, and how AlterConfigs / IncrementalAlterConfigs / CreateTopics change them. A
//! topic's configs are kept in the state beside its queue; `retention.ms` also sets the
//! queue's `retentionSeconds`, the one that Baton enforces. Must never store a name or a
//! value a Kafka broker would refuse: the change is refused whole, before any effect.

use crate::command::CoreError;
use crate::entry::Effect;
use crate::plan::{Planned, Planner};
use std::collections::BTreeMap;

/// The topic configs a client may set, with Kafka's defaults as Baton reports them.
/// `cleanup.policy` and `retention.ms` change what Baton does (D49), `segment.bytes` and
/// `segment.ms` when a segment closes (D70), and on a compacted topic
/// `min.compaction.lag.ms`, `delete.retention.ms` (D68), `min.cleanable.dirty.ratio` and
/// `max.compaction.lag.ms` (D70); the others are kept and described, as a tool that sets
/// them expects.
pub const TOPIC_CONFIGS: &[(&str, &str)] = &[
    ("cleanup.policy", "delete"),
    ("compression.type", "producer"),
    ("delete.retention.ms", "86400000"),
    ("file.delete.delay.ms", "60000"),
    ("flush.messages", "9223372036854775807"),
    ("flush.ms", "9223372036854775807"),
    ("index.interval.bytes", "4096"),
    ("max.compaction.lag.ms", "9223372036854775807"),
    ("max.message.bytes", "1048588"),
    ("message.timestamp.type", "CreateTime"),
    ("min.cleanable.dirty.ratio", "0.5"),
    ("min.compaction.lag.ms", "0"),
    ("min.insync.replicas", "1"),
    ("preallocate", "false"),
    ("retention.bytes", "-1"),
    ("retention.ms", "604800000"),
    ("segment.bytes", "1073741824"),
    ("segment.index.bytes", "10485760"),
    ("segment.jitter.ms", "0"),
    ("segment.ms", "604800000"),
    ("unclean.leader.election.enable", "false"),
];

/// Bytes of one topic's config names and values.
const MAX_CONFIG_VALUE: usize = 1024;

/// The smallest `segment.bytes`, as on Kafka 4 (which refuses less since KIP-1030): a
/// smaller one would make a file set of a few batches.
pub const MIN_SEGMENT_BYTES: u64 = 1 << 20;

/// The shortest age at which a segment closes (`segment.ms`, `max.compaction.lag.ms`): Kafka
/// takes 1 ms, Baton refuses less than a second, so that one config cannot make a file set
/// of every append (D70).
pub const MIN_ROLL_MS: i64 = 1000;

/// One change to one config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigOp {
    Set(String),
    /// Back to the default.
    Delete,
    /// List configs (`cleanup.policy`): add to, or take from, the list.
    Append(String),
    Subtract(String),
}

fn invalid(m: impl Into<String>) -> CoreError {
    CoreError::bad("invalid_config", m)
}

/// A whole number from `lo` to `hi`.
fn int_in(name: &str, value: &str, lo: i64, hi: i64) -> Result<(), CoreError> {
    match value.parse::<i64>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(()),
        _ if hi == i64::MAX => Err(invalid(format!("{name}: {value:?} is not a number of at least {lo}"))),
        _ => Err(invalid(format!("{name}: {value:?} is not a number from {lo} to {hi}"))),
    }
}

/// Checks one value of a known config.
pub fn check(name: &str, value: &str) -> Result<(), CoreError> {
    if value.len() > MAX_CONFIG_VALUE {
        return Err(invalid(format!("{name}: a value of {} bytes (at most {MAX_CONFIG_VALUE})", value.len())));
    }
    match name {
        "cleanup.policy" => {
            let ok = !value.is_empty() && value.split(',').all(|p| matches!(p.trim(), "delete" | "compact"));
            ok.then_some(()).ok_or_else(|| invalid(format!("cleanup.policy: {value:?} is not delete, compact or both")))
        }
        "compression.type" => matches!(value, "producer" | "uncompressed" | "gzip" | "snappy" | "lz4" | "zstd")
            .then_some(())
            .ok_or_else(|| invalid(format!("compression.type: {value:?}"))),
        "message.timestamp.type" => matches!(value, "CreateTime" | "LogAppendTime")
            .then_some(())
            .ok_or_else(|| invalid(format!("message.timestamp.type: {value:?}"))),
        "preallocate" | "unclean.leader.election.enable" => matches!(value, "true" | "false")
            .then_some(())
            .ok_or_else(|| invalid(format!("{name}: {value:?} is not true or false"))),
        "min.cleanable.dirty.ratio" => value
            .parse::<f64>()
            .ok()
            .filter(|r| (0.0..=1.0).contains(r))
            .map(|_| ())
            .ok_or_else(|| invalid(format!("{name}: {value:?} is not a ratio from 0 to 1"))),
        "segment.bytes" => int_in(name, value, MIN_SEGMENT_BYTES as i64, i64::from(i32::MAX)),
        "segment.ms" | "max.compaction.lag.ms" => int_in(name, value, MIN_ROLL_MS, i64::MAX),
        "retention.ms" | "retention.bytes" => int_in(name, value, -1, i64::MAX),
        _ => int_in(name, value, 0, i64::MAX),
    }
}

/// `current` with `ops` applied, checked whole.
pub fn changed(
    current: &BTreeMap<String, String>,
    ops: &[(String, ConfigOp)],
) -> Result<BTreeMap<String, String>, CoreError> {
    let mut out = current.clone();
    for (name, op) in ops {
        let Some((_, default)) = TOPIC_CONFIGS.iter().find(|(n, _)| n == name) else {
            return Err(invalid(format!("{name:?} is not a topic config")));
        };
        let list = |out: &BTreeMap<String, String>| -> Vec<String> {
            let v = out.get(name).map(String::as_str).unwrap_or(default);
            v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
        };
        match op {
            ConfigOp::Set(v) => {
                out.insert(name.clone(), v.clone());
            }
            ConfigOp::Delete => {
                out.remove(name);
            }
            ConfigOp::Append(v) | ConfigOp::Subtract(v) if name != "cleanup.policy" => {
                let _ = v;
                return Err(invalid(format!("{name} is not a list: APPEND and SUBTRACT do not apply")));
            }
            ConfigOp::Append(v) => {
                let mut l = list(&out);
                for x in v.split(',').map(str::trim).filter(|x| !x.is_empty()) {
                    if !l.iter().any(|y| y == x) {
                        l.push(x.to_string());
                    }
                }
                out.insert(name.clone(), l.join(","));
            }
            ConfigOp::Subtract(v) => {
                let drop: Vec<&str> = v.split(',').map(str::trim).collect();
                let l: Vec<String> = list(&out).into_iter().filter(|x| !drop.contains(&x.as_str())).collect();
                out.insert(name.clone(), l.join(","));
            }
        }
    }
    for (name, v) in &out {
        check(name, v)?;
    }
    let ms = |n: &str| out.get(n).and_then(|v| v.parse::<i64>().ok());
    if let (Some(min), Some(max)) = (ms("min.compaction.lag.ms"), ms("max.compaction.lag.ms")) {
        if min > max {
            return Err(invalid(format!("min.compaction.lag.ms ({min}) is more than max.compaction.lag.ms ({max})")));
        }
    }
    Ok(out)
}

/// Whether `compact` is among a topic's `cleanup.policy` values.
pub fn compacts(configs: &BTreeMap<String, String>) -> bool {
    configs.get("cleanup.policy").is_some_and(|p| p.split(',').any(|x| x.trim() == "compact"))
}

/// When a partition of a topic with these configs closes its active segment (D70): at
/// (bytes, age in microseconds). Without `segment.bytes`, at `default_bytes` (the node's
/// `--partition-segment-mb`); by age at `segment.ms` (Kafka's 7 days unless set), and on a
/// compacted topic at `max.compaction.lag.ms` when that is sooner, so that a record waits
/// no longer than that for a pass.
pub fn roll_of(configs: Option<&BTreeMap<String, String>>, default_bytes: u64) -> (u64, crate::model::Micros) {
    let num = |n: &str| configs.and_then(|c| c.get(n)).and_then(|v| v.parse::<i64>().ok());
    let bytes = num("segment.bytes").map_or(default_bytes, |b| (b as u64).max(MIN_SEGMENT_BYTES));
    let mut ms = num("segment.ms").unwrap_or(604_800_000);
    if configs.is_some_and(compacts) {
        ms = ms.min(num("max.compaction.lag.ms").unwrap_or(i64::MAX));
    }
    (bytes, (ms.max(MIN_ROLL_MS) as u64).saturating_mul(1000))
}

/// `retentionSeconds` for a `retention.ms` (0 keeps forever; a part second rounds up).
fn retention_secs(ms: &str) -> u64 {
    match ms.parse::<i64>() {
        Ok(v) if v > 0 => (v as u64).div_ceil(1000),
        _ => 0,
    }
}

impl Planner {
    /// Change a topic's configs; with `replace`, every config not named goes back to its
    /// default (AlterConfigs), else only the named ones change (IncrementalAlterConfigs).
    pub fn topic_configs(
        &mut self,
        topic: &str,
        ops: &[(String, ConfigOp)],
        replace: bool,
        validate_only: bool,
    ) -> Planned<()> {
        let q = self
            .state
            .queue(topic)
            .ok_or_else(|| CoreError::not_found("queue_not_found", format!("topic {topic} does not exist")))?;
        let id = q.id;
        let empty = BTreeMap::new();
        let current = if replace { &empty } else { self.state.topic_configs.get(&id).unwrap_or(&empty) };
        let next = changed(current, ops)?;
        // Retention follows the Kafka configs only where a change names them (or clears
        // them): a queue's own retentionSeconds, set over HTTP, is not undone by an
        // unrelated config. A topic that only compacts deletes nothing by age.
        let had = self.state.topic_configs.get(&id);
        let named = |n: &str| ops.iter().any(|(o, _)| o == n) || (replace && had.is_some_and(|h| h.contains_key(n)));
        let mut options = q.options.clone();
        if named("retention.ms") || named("cleanup.policy") {
            let deletes = next.get("cleanup.policy").is_none_or(|p| p.split(',').any(|x| x.trim() == "delete"));
            options.retention_seconds = match next.get("retention.ms") {
                Some(v) if deletes => retention_secs(v),
                _ => 0,
            };
        }
        if validate_only {
            return Ok(());
        }
        if options != q.options {
            self.emit_pub(Effect::Configure { queue: topic.to_string(), options })?;
        }
        self.emit_pub(Effect::TopicConfigs { queue: id, configs: next })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(n: &str, v: &str) -> (String, ConfigOp) {
        (n.to_string(), ConfigOp::Set(v.to_string()))
    }

    #[test]
    fn names_and_values_are_checked_whole() {
        let none = BTreeMap::new();
        assert!(changed(&none, &[set("cleanup.policy", "compact")]).is_ok());
        assert!(changed(&none, &[set("cleanup.policy", "compact,delete")]).is_ok());
        assert!(changed(&none, &[set("cleanup.policy", "shred")]).is_err());
        assert!(changed(&none, &[set("retention.ms", "-2")]).is_err());
        assert!(changed(&none, &[set("segment.bytes", "x")]).is_err());
        assert!(changed(&none, &[set("no.such", "1")]).is_err());
        assert!(changed(&none, &[set("retention.ms", &"9".repeat(2000))]).is_err());
        assert!(changed(&none, &[("segment.ms".into(), ConfigOp::Append("1".into()))]).is_err());
        // D70: the bounds that keep one config from making a file set per append.
        assert!(changed(&none, &[set("segment.bytes", "1048575")]).is_err());
        assert!(changed(&none, &[set("segment.bytes", "1048576")]).is_ok());
        assert!(changed(&none, &[set("segment.bytes", "2147483648")]).is_err());
        assert!(changed(&none, &[set("segment.ms", "999")]).is_err());
        assert!(changed(&none, &[set("max.compaction.lag.ms", "999")]).is_err());
        assert!(changed(&none, &[set("min.cleanable.dirty.ratio", "1.5")]).is_err());
        let lags = [set("min.compaction.lag.ms", "5000"), set("max.compaction.lag.ms", "4000")];
        assert!(changed(&none, &lags).is_err(), "min lag past max lag");
        assert!(changed(&none, &lags[..1]).is_ok());
    }

    #[test]
    fn segments_close_by_size_and_age() {
        let c = |kv: &[(&str, &str)]| kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        assert_eq!(roll_of(None, 5 << 20), (5 << 20, 604_800_000_000));
        let m: BTreeMap<_, _> = c(&[("segment.bytes", "2097152"), ("segment.ms", "60000")]);
        assert_eq!(roll_of(Some(&m), 5 << 20), (2 << 20, 60_000_000));
        // max.compaction.lag.ms closes a compacted topic's segment sooner, and only there.
        let m: BTreeMap<_, _> = c(&[("max.compaction.lag.ms", "3000")]);
        assert_eq!(roll_of(Some(&m), 1 << 20).1, 604_800_000_000);
        let m: BTreeMap<_, _> = c(&[("max.compaction.lag.ms", "3000"), ("cleanup.policy", "compact")]);
        assert_eq!(roll_of(Some(&m), 1 << 20).1, 3_000_000);
    }

    #[test]
    fn list_ops_edit_cleanup_policy() {
        let none = BTreeMap::new();
        let c = changed(&none, &[("cleanup.policy".into(), ConfigOp::Append("compact".into()))]).unwrap();
        assert_eq!(c["cleanup.policy"], "delete,compact");
        let c = changed(&c, &[("cleanup.policy".into(), ConfigOp::Subtract("delete".into()))]).unwrap();
        assert_eq!(c["cleanup.policy"], "compact");
        assert!(changed(&c, &[("cleanup.policy".into(), ConfigOp::Subtract("compact".into()))]).is_err(), "empty");
        let c = changed(&c, &[("cleanup.policy".into(), ConfigOp::Delete)]).unwrap();
        assert!(c.is_empty());
    }

    #[test]
    fn retention_rounds_up_to_seconds() {
        assert_eq!(retention_secs("-1"), 0);
        assert_eq!(retention_secs("1"), 1);
        assert_eq!(retention_secs("60000"), 60);
    }
}
