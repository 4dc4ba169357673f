//! What the state holds in memory for clients beyond their messages: the bytes of KV
//! entries and of pending timers, bounded by `max_kv_bytes` and `max_timer_bytes`. Both live
//! in memory and in every checkpoint, so without a bound one client's writes could take all
//! of either. Owns the counts only: derived from the state (never in a checkpoint), counted
//! once on first use after a load and kept up to date by apply. The checks live in the
//! planner (kv.rs, timers.rs), before the first effect of a request.

use crate::state::{KvEntry, Timer};

/// A KV entry's size as the bound counts it: what the client chose (namespace, key, value).
pub fn kv_size(ns: &str, key: &str, e: &KvEntry) -> u64 {
    (ns.len() + key.len() + e.value.len()) as u64
}

/// A timer's size: its queue, key, payload, partition and transaction id.
pub fn timer_size(queue: &str, key: &str, t: &Timer) -> u64 {
    (queue.len() + key.len() + t.payload.len() + t.partition.len() + t.txn.len()) as u64
}

/// The counts, `None` until first asked for (a state just decoded has not counted yet).
#[derive(Debug, Clone, Default)]
pub struct Held {
    pub(crate) kv: Option<u64>,
    pub(crate) timers: Option<u64>,
}

pub(crate) fn moved(count: &mut Option<u64>, old: u64, new: u64) {
    if let Some(c) = count {
        *c = c.saturating_sub(old).saturating_add(new);
    }
}
