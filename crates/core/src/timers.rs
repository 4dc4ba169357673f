//! Timers: (queue, timerKey) -> fire time and payload. Setting, moving and
//! cancelling are entries; firing is ONE entry that deletes the timer and
//! pushes its payload, so a timer fires exactly once, and after a restart
//! late rather than never or twice.

use crate::command::{CoreError, PushGroup, PushRecord, PushStatus};
use crate::entry::Effect;
use crate::held;
use crate::limits::Limits;
use crate::model::{valid_name, Micros, DEFAULT_PARTITION};
use crate::plan::Planner;

#[derive(Debug, Clone, PartialEq)]
pub enum TimerOp {
    /// Set the timer, replacing one with the same key.
    Schedule {
        queue: String,
        key: String,
        payload: String,
        delay_ms: u64,
        partition: Option<String>,
        /// Transaction id of the message the timer becomes.
        txn: String,
    },
    /// Move an existing timer; absent if there is none.
    Reschedule {
        queue: String,
        key: String,
        payload: Option<String>,
        delay_ms: u64,
    },
    Cancel {
        queue: String,
        key: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct TimerResult {
    pub status: &'static str,
    pub queue: String,
    pub key: String,
    pub fire_at: Option<Micros>,
}

/// Most timers fired in one entry; the rest wait for the next tick.
pub const FIRE_BATCH: usize = 1000;

pub fn validate(ops: &[TimerOp]) -> Result<(), CoreError> {
    for op in ops {
        let (q, k) = match op {
            TimerOp::Schedule { queue, key, partition, .. } => {
                if let Some(p) = partition {
                    valid_name(p).map_err(|m| CoreError::bad("invalid_partition", m))?;
                }
                (queue, key)
            }
            TimerOp::Reschedule { queue, key, .. } | TimerOp::Cancel { queue, key } => (queue, key),
        };
        valid_name(q).map_err(|m| CoreError::bad("invalid_queue", m))?;
        if let TimerOp::Schedule { delay_ms, .. } | TimerOp::Reschedule { delay_ms, .. } = op {
            if *delay_ms > crate::limits::MAX_DELAY_MS {
                return Err(CoreError::bad(
                    "invalid_delay",
                    format!("delayMs is at most {} (ten years)", crate::limits::MAX_DELAY_MS),
                ));
            }
        }
        if k.is_empty() || k.len() > 1024 {
            return Err(CoreError::bad("invalid_timer_key", "timerKey must be 1 to 1024 bytes"));
        }
    }
    Ok(())
}

impl Planner {
    /// Refuses `ops` when the timers they leave would pass `max_timer_bytes`: judged before
    /// anything is planned (a transaction asks before its first effect).
    pub(crate) fn admit_timers(&mut self, ops: &[TimerOp]) -> Result<(), CoreError> {
        // Per timer touched: its size and its payload's, as the ops before left them.
        type Sizes<'a> = Vec<((&'a str, &'a str), Option<(u64, u64)>)>;
        let mut after: Sizes = Vec::new();
        let mut grow: i64 = 0;
        for op in ops {
            let (TimerOp::Schedule { queue, key, .. }
            | TimerOp::Reschedule { queue, key, .. }
            | TimerOp::Cancel { queue, key }) = op;
            let name = (queue.as_str(), key.as_str());
            let at = after.iter().position(|(n, _)| *n == name);
            let now = match at {
                Some(i) => after[i].1,
                None => self
                    .state
                    .timers
                    .get(queue)
                    .and_then(|m| m.get(key))
                    .map(|t| (held::timer_size(queue, key, t), t.payload.len() as u64)),
            };
            let next = match op {
                TimerOp::Schedule { payload, partition, txn, .. } => {
                    let part = partition.as_deref().unwrap_or(DEFAULT_PARTITION);
                    Some((
                        (queue.len() + key.len() + payload.len() + part.len() + txn.len()) as u64,
                        payload.len() as u64,
                    ))
                }
                // Moves only a timer that exists; a new payload replaces the old one.
                TimerOp::Reschedule { payload: Some(p), .. } => {
                    now.map(|(size, old)| (size - old + p.len() as u64, p.len() as u64))
                }
                TimerOp::Reschedule { payload: None, .. } => now,
                TimerOp::Cancel { .. } => None,
            };
            grow += next.map_or(0, |n| n.0) as i64 - now.map_or(0, |n| n.0) as i64;
            match at {
                Some(i) => after[i].1 = next,
                None => after.push((name, next)),
            }
        }
        let have = self.state.timer_bytes();
        Limits::admit_held("timers", "timers_full", "max timers MB", have, grow, self.limits.max_timer_bytes)
    }

    pub fn timers(&mut self, ops: &[TimerOp]) -> Result<Vec<TimerResult>, CoreError> {
        self.admit_timers(ops)?;
        let now = self.now();
        let mut out = Vec::with_capacity(ops.len());
        for op in ops {
            let r = match op {
                TimerOp::Schedule { queue, key, payload, delay_ms, partition, txn } => {
                    let existed = self.state.timers.get(queue).is_some_and(|m| m.contains_key(key));
                    let fire_at = now.saturating_add(delay_ms.saturating_mul(1000));
                    let partition = partition.clone().unwrap_or_else(|| DEFAULT_PARTITION.to_string());
                    self.emit_pub(Effect::TimerSet {
                        queue: queue.clone(),
                        key: key.clone(),
                        fire_at,
                        payload: payload.clone(),
                        partition,
                        txn: txn.clone(),
                    })?;
                    TimerResult {
                        status: if existed { "rescheduled" } else { "scheduled" },
                        queue: queue.clone(),
                        key: key.clone(),
                        fire_at: Some(fire_at),
                    }
                }
                TimerOp::Reschedule { queue, key, payload, delay_ms } => {
                    match self.state.timers.get(queue).and_then(|m| m.get(key)).cloned() {
                        None => TimerResult { status: "absent", queue: queue.clone(), key: key.clone(), fire_at: None },
                        Some(t) => {
                            let fire_at = now.saturating_add(delay_ms.saturating_mul(1000));
                            let payload = payload.clone().unwrap_or(t.payload);
                            self.emit_pub(Effect::TimerSet {
                                queue: queue.clone(),
                                key: key.clone(),
                                fire_at,
                                payload,
                                partition: t.partition,
                                txn: t.txn,
                            })?;
                            TimerResult {
                                status: "rescheduled",
                                queue: queue.clone(),
                                key: key.clone(),
                                fire_at: Some(fire_at),
                            }
                        }
                    }
                }
                TimerOp::Cancel { queue, key } => {
                    if self.state.timers.get(queue).is_some_and(|m| m.contains_key(key)) {
                        self.emit_pub(Effect::TimerDel { queue: queue.clone(), key: key.clone() })?;
                        TimerResult { status: "cancelled", queue: queue.clone(), key: key.clone(), fire_at: None }
                    } else {
                        TimerResult { status: "absent", queue: queue.clone(), key: key.clone(), fire_at: None }
                    }
                }
            };
            out.push(r);
        }
        Ok(out)
    }

    /// Fire due timers (up to FIRE_BATCH): each one's delete and push are one entry. Stops
    /// once a tick has spent `push_step` of planner time, after at least one (D81): a timer's
    /// push may make a new partition's files on the planner, 0.15-2.5 ms each here, so 1,000
    /// of them held every other request back. The rest fire in the next ticks.
    pub fn fire_timers(&mut self) -> Result<usize, CoreError> {
        let now = self.now();
        let started = std::time::Instant::now();
        let due: Vec<(Micros, String, String)> =
            self.state.timer_due.iter().take_while(|(t, _, _)| *t <= now).take(FIRE_BATCH).cloned().collect();
        let mut fired = 0;
        for (_, queue, key) in &due {
            if fired > 0 && started.elapsed() >= self.limits.push_step {
                break;
            }
            fired += 1;
            let Some(t) = self.state.timers.get(queue).and_then(|m| m.get(key)).cloned() else { continue };
            let txid = t.txn.clone();
            let rec = baton_wire::NewRecord {
                key: Some(key.as_bytes()),
                value: t.payload.as_bytes(),
                txid: Some(&txid),
                trace: None,
            };
            let batch = baton_wire::encode_batch(&[rec], (now / 1000) as i64)
                .map_err(|e| CoreError::bad("bad_payload", e.to_string()))?;
            let g = PushGroup {
                queue: queue.clone(),
                partition: t.partition.clone(),
                indexes: vec![0],
                records: vec![PushRecord {
                    txid,
                    client_txid: false,
                    value: t.payload.clone().into_bytes().into(),
                    trace: None,
                }],
                batch,
            };
            match self.push(vec![g]).pop().map(|r| r.status) {
                Some(PushStatus::Failed(e)) => {
                    // Kept, and tried again next tick: late, never lost.
                    tracing::debug!(queue = %queue, key = %key, error = %e, "a due timer could not push yet");
                }
                _ => self.emit_pub(Effect::TimerDel { queue: queue.clone(), key: key.clone() })?,
            }
        }
        Ok(fired)
    }
}
