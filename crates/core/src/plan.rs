//! The planner: checks a typed request against the state (which already holds
//! everything planned, durable or not), decides its effects, and applies them
//! at once so the next request sees them. Two pushes in flight never get the
//! same offset and two pops never lease the same message.
//!
//! Runs on one thread and must never do disk I/O, nor touch JSON: apply only
//! reserves the place of a batch (the appender writes it, D18) and takes a
//! ready-made segment file (D17; it makes one itself only when the pool is empty). Nothing here answers a client: answers wait for the
//! WAL (I3), see `engine`.
//!
//! I2, whole or nothing: every check a request needs runs against the state
//! before its first effect is emitted (`admit_push` is the one check of a
//! push, for the push path and the transaction path alike). A request that is
//! refused after it emitted anything, or an effect that apply refuses, marks
//! the plan broken: `finish` then hands back no entry but the reason, and the
//! runner latches (the state already holds the half that was applied, D1).

use crate::command::*;
use crate::entry::{Effect, Entry};
use crate::limits::Limits;
use crate::model::*;
use crate::state::{ApplyError, State};
use std::collections::{HashMap, HashSet};

pub struct Planner {
    pub state: State,
    pub(crate) ts: Micros,
    effects: Vec<Effect>,
    /// Queues that got new messages in the entries planned since the last take.
    /// Partitions appended to since the last frame, by queue (a queue with none: a lease was
    /// released there). The runner marks only these durable with the frame: looking at every
    /// partition of the queue cost each frame O(partitions) (issue 18).
    pub pushed_queues: HashMap<QueueId, HashSet<PartId>>,
    /// (time, queue): long polls of the queue should look again then (a delayed message comes due).
    pub wakeups: Vec<(Micros, QueueId)>,
    pub limits: Limits,
    /// Set when the request being planned was refused after it emitted an effect.
    broken: Option<String>,
    /// (group, queue) -> a partition of the queue where the group had a cursor (subscribe.rs).
    pub(crate) started: HashMap<(GroupId, QueueId), PartId>,
}

pub(crate) type Planned<T> = Result<T, CoreError>;

/// Spans of records no consumer is given (D48) that one pop settles at most.
const MAX_HIDDEN_PER_POP: usize = 1024;

fn apply_err(e: ApplyError) -> CoreError {
    CoreError::unavailable(e.0)
}

impl Planner {
    pub fn new(state: State) -> Planner {
        Self::with_limits(state, Limits::default())
    }

    pub fn with_limits(mut state: State, limits: Limits) -> Planner {
        // Counted once per load, then kept by apply: a follower's /metrics never recounts.
        state.kv_bytes();
        state.timer_bytes();
        Planner {
            state,
            ts: 0,
            effects: Vec::new(),
            pushed_queues: HashMap::new(),
            wakeups: Vec::new(),
            limits,
            broken: None,
            started: HashMap::new(),
        }
    }

    /// Start planning one request at wall-clock `now` (I5: time never goes back).
    pub fn begin(&mut self, now: Micros) {
        self.ts = now.max(self.state.last_ts + 1);
        self.effects.clear();
        self.broken = None;
    }

    pub fn now(&self) -> Micros {
        self.ts
    }

    /// Applies `e` at once (D1) and records it for the entry. Apply refuses only before it
    /// changes anything (a partition file it cannot open), so a refusal of the request's
    /// first effect is a clean refusal; after an earlier effect, the plan is broken.
    pub(crate) fn emit(&mut self, e: Effect) -> Result<(), CoreError> {
        if let Err(err) = self.state.apply_effect(self.ts, &e) {
            if !self.effects.is_empty() {
                self.broken.get_or_insert_with(|| format!("apply refused a planned effect: {}", err.0));
            }
            return Err(apply_err(err));
        }
        self.state.last_ts = self.ts;
        self.effects.push(e);
        Ok(())
    }

    /// The entry for the request just planned, if it changed anything; `Err` with the reason
    /// when the plan is broken (refused after an effect): that entry must never be logged.
    pub fn finish(&mut self) -> Result<Option<Entry>, String> {
        if let Some(reason) = self.broken.take() {
            self.effects.clear();
            return Err(reason);
        }
        if self.effects.is_empty() {
            return Ok(None);
        }
        Ok(Some(Entry { ts: self.ts, effects: std::mem::take(&mut self.effects) }))
    }

    /// Plans one request through `f`: a refusal after `f` emitted anything breaks the plan
    /// (I2), so a half-planned request can never be logged or answered as done.
    pub fn step<T>(&mut self, f: impl FnOnce(&mut Planner) -> Planned<T>) -> Planned<T> {
        let before = self.effects.len();
        let res = f(self);
        if let Err(e) = &res {
            self.refused_after(before, e);
        }
        res
    }

    /// Marks the plan broken when effects were emitted since `before` by a part that was then
    /// refused with `e`.
    pub(crate) fn refused_after(&mut self, before: usize, e: &CoreError) {
        if self.effects.len() > before {
            self.broken.get_or_insert_with(|| format!("refused after planning part of it: {e}"));
        }
    }

    /// Effects emitted so far by the request being planned.
    pub(crate) fn emitted(&self) -> usize {
        self.effects.len()
    }

    /// Chooses the node's secret key for transaction-id hashes (D21) if none is chosen yet:
    /// the first entry a fresh node plans. Random from the OS (the std hasher's keys).
    pub fn ensure_hash_key(&mut self) -> Planned<()> {
        if self.state.hash_key != [0, 0] {
            return Ok(());
        }
        use std::hash::BuildHasher;
        let r = std::collections::hash_map::RandomState::new();
        let key = [r.hash_one(1u64), r.hash_one(2u64)];
        self.emit(Effect::HashKey { key })
    }

    pub(crate) fn emit_pub(&mut self, e: Effect) -> Result<(), CoreError> {
        self.emit(e)
    }

    pub(crate) fn ensure_group_pub(&mut self, name: &str) -> Planned<GroupId> {
        self.ensure_group(name, None)
    }

    pub(crate) fn ensure_queue(&mut self, name: &str) -> Planned<QueueId> {
        if let Some(id) = self.state.queue_ids.get(name) {
            return Ok(*id);
        }
        valid_name(name).map_err(|m| CoreError::bad("invalid_queue", format!("queue name: {m}")))?;
        self.emit(Effect::Configure { queue: name.to_string(), options: QueueOptions::default() })?;
        Ok(self.state.queue_ids[name])
    }

    pub(crate) fn ensure_partition(&mut self, queue: QueueId, name: &str) -> Planned<PartId> {
        if let Some(p) = self.state.queues.get(&queue).and_then(|q| q.part_by_name.get(name)) {
            return Ok(*p);
        }
        valid_name(name).map_err(|m| CoreError::bad("invalid_partition", format!("partition name: {m}")))?;
        self.emit(Effect::CreatePartition { queue, name: name.to_string() })?;
        Ok(self.state.queues[&queue].part_by_name[name])
    }

    fn ensure_group(&mut self, name: &str, from_ts: Option<Micros>) -> Planned<GroupId> {
        if let Some(g) = self.state.group_ids.get(name) {
            return Ok(*g);
        }
        valid_name(name).map_err(|m| CoreError::bad("invalid_group", format!("consumer group: {m}")))?;
        if self.state.groups.len() >= self.limits.max_groups {
            return Err(CoreError::new(
                ErrorKind::Overloaded,
                "too_many_groups",
                format!(
                    "{} consumer groups exist, the most allowed (max groups); delete one first",
                    self.limits.max_groups
                ),
            ));
        }
        let from_ts = if name == QUEUE_MODE { None } else { from_ts };
        self.emit(Effect::CreateGroup { name: name.to_string(), from_ts })?;
        Ok(self.state.group_ids[name])
    }

    pub fn configure(&mut self, queue: &str, options: QueueOptions) -> Planned<()> {
        valid_name(queue).map_err(|m| CoreError::bad("invalid_queue", format!("queue name: {m}")))?;
        if !self.state.queue_ids.contains_key(queue) {
            self.limits.admit_queues(self.state.queues.len(), 1)?;
        }
        self.emit(Effect::Configure { queue: queue.to_string(), options })
    }

    /// Lease the next deliverable messages of one partition to a group, FIFO.
    pub fn pop(&mut self, req: &PopRequest) -> Planned<Option<PopResult>> {
        let q =
            *self.state.queue_ids.get(&req.queue).ok_or_else(|| {
                CoreError::not_found("queue_not_found", format!("queue {} does not exist", req.queue))
            })?;
        let group_name = req.group.clone().unwrap_or_else(|| QUEUE_MODE.to_string());
        let named = match &req.partition {
            Some(name) => match self.state.queues[&q].part_by_name.get(name) {
                Some(p) => Some(*p),
                None => return Ok(None),
            },
            None if self.state.queues[&q].parts.is_empty() => return Ok(None),
            None => None,
        };
        let group = self.ensure_group(&group_name, req.from_ts)?;
        if group_name != QUEUE_MODE {
            self.start_group_on_queue(q, group, req.from_ts)?;
        }
        let opts = self.state.queues[&q].options.clone();
        let lease_us = req.lease_secs.unwrap_or(opts.lease_time).max(1).saturating_mul(1_000_000);
        let delay_us = opts.delayed_processing.saturating_mul(1_000_000);
        let now = self.ts;
        // D30: a pop of the queue looks only at the group's candidates, round robin (so one
        // busy partition cannot starve the rest), and drops those it finds with nothing.
        let pass = match named {
            Some(_) => 1,
            None => {
                let r = self.state.ready.get(q, group, &self.state.queues[&q].parts);
                r.wake_due(now);
                r.pass_len()
            }
        };
        for _ in 0..pass {
            let part = match named {
                Some(p) => p,
                // Tracked since just above: `get` does not build it again.
                None => match self.state.ready.get(q, group, &[]).next_candidate() {
                    Some(p) => p,
                    None => break,
                },
            };
            self.expire_if_due(part, group, &opts)?;
            let mut delayed = false;
            let offsets = {
                let p = &self.state.parts[&part];
                let from_ts = self.state.groups[&group].from_ts;
                let (next, cursor) = match p.cursors.get(&group) {
                    Some(c) if c.lease.is_some() => {
                        // Held by the group (FIFO): a candidate again when the lease ends.
                        let expires = c.lease.as_ref().map_or(now, |l| l.expires);
                        self.state.ready.leased(q, group, part, expires);
                        continue;
                    }
                    Some(c) => (c.next.max(p.start), Some(c)),
                    None => (from_ts.map(|t| p.offset_at_ts(t)).unwrap_or(p.start).max(p.start), None),
                };
                let mut v = Vec::new();
                let mut hidden = Vec::new();
                let mut o = next;
                // I7: records of a transaction still open are not delivered, nor anything after.
                let stable = p.planned_stable();
                // The stored batches the answer will read, bounded by `max_pop_bytes`: a pop
                // of a huge batch count over large messages must not build a huge answer.
                // The first message always goes, so a message larger than the bound is still
                // delivered.
                let mut bytes = 0u64;
                let mut last_batch = None;
                while o < stable && v.len() < req.batch as usize {
                    if cursor.is_some_and(|c| c.done.contains(&o)) {
                        o += 1;
                        continue;
                    }
                    // Control records and aborted records are no one's (D48). Passed only
                    // at the front, where settling them moves the cursor, and a bounded
                    // number of spans per pop.
                    if let Some(end) = p.txns.hidden_end(o).or_else(|| p.is_marker(o).then_some(o + 1)) {
                        if !v.is_empty() || hidden.len() >= MAX_HIDDEN_PER_POP {
                            break;
                        }
                        match hidden.last_mut() {
                            Some((_, e)) if *e == o => *e = end,
                            _ => hidden.push((o, end)),
                        }
                        o = end;
                        continue;
                    }
                    if let Some(ready) =
                        p.ts_of(o).map(|t| t.saturating_add(delay_us)).filter(|r| delay_us > 0 && *r > now)
                    {
                        self.wakeups.push((ready, q));
                        delayed = true;
                        break;
                    }
                    if last_batch.is_none_or(|r: crate::index::BatchRec| o >= r.end()) {
                        let rec = p.find(o).map(|f| f.rec);
                        let len = rec.map_or(0, |r| r.len as u64);
                        if !req.conflate && !v.is_empty() && bytes + len > self.limits.max_pop_bytes {
                            break;
                        }
                        bytes += len;
                        last_batch = rec;
                    }
                    v.push(o);
                    o += 1;
                }
                (v, hidden)
            };
            let (offsets, hidden) = offsets;
            let passed = !hidden.is_empty();
            if passed {
                self.emit(Effect::SettleHidden { part, group, ranges: hidden })?;
            }
            if offsets.is_empty() {
                // After passing hidden records the next pop looks again: the bound on
                // spans per pop may have stopped this one short of what is deliverable.
                if !delayed && !passed {
                    self.state.ready.exhausted(q, group, part);
                }
                continue;
            }
            let lease = self.state.next_lease;
            let expires = now.saturating_add(lease_us);
            self.emit(Effect::Lease { part, group, lease, offsets: offsets.clone(), expires, auto_ack: req.auto_ack })?;
            let shown = if req.conflate { &offsets[offsets.len() - 1..] } else { &offsets[..] };
            for &offset in &offsets[..offsets.len() - shown.len()] {
                self.emit(Effect::Ack { part, group, lease, offset, status: AckStatus::Completed, error: None })?;
            }
            let p = &self.state.parts[&part];
            let c = &p.cursors[&group];
            let messages = shown.iter().map(|o| (*o, c.attempts.get(o).copied().unwrap_or(0) + 1)).collect();
            return Ok(Some(PopResult {
                queue: req.queue.clone(),
                part,
                partition: p.name.clone(),
                group: group_name,
                lease: (!req.auto_ack).then_some(lease),
                lease_expires: expires,
                messages,
                spans: p.spans_for(shown),
            }));
        }
        Ok(None)
    }

    /// Settle every expired lease of a queue now (not at the next pop), so
    /// retries are charged and dead letters appear when the lease runs out.
    pub fn expire_leases(&mut self, queue: QueueId) -> Planned<()> {
        let Some(q) = self.state.queues.get(&queue) else { return Ok(()) };
        let opts = q.options.clone();
        let now = self.ts;
        let due: Vec<(PartId, GroupId)> = q
            .parts
            .iter()
            .flat_map(|pid| {
                self.state.parts[pid]
                    .cursors
                    .iter()
                    .filter(|(_, c)| c.lease.as_ref().is_some_and(|l| l.expires <= now))
                    .map(move |(g, _)| (*pid, *g))
            })
            .collect();
        for (part, group) in due {
            self.expire_if_due(part, group, &opts)?;
        }
        Ok(())
    }

    /// Settle the expired leases of one partition (every group's), as [`Planner::expire_leases`]
    /// does for a whole queue.
    pub fn expire_partition_leases(&mut self, part: PartId) -> Planned<()> {
        let Some(p) = self.state.parts.get(&part) else { return Ok(()) };
        let Some(opts) = self.state.queues.get(&p.queue).map(|q| q.options.clone()) else { return Ok(()) };
        let now = self.ts;
        let due: Vec<GroupId> = p
            .cursors
            .iter()
            .filter(|(_, c)| c.lease.as_ref().is_some_and(|l| l.expires <= now))
            .map(|(g, _)| *g)
            .collect();
        for group in due {
            self.expire_if_due(part, group, &opts)?;
        }
        Ok(())
    }

    /// An expired lease is settled as one failure per unsettled message before
    /// anyone else may lease the partition; past the retry limit, dead-letter.
    fn expire_if_due(&mut self, part: PartId, group: GroupId, opts: &QueueOptions) -> Planned<()> {
        let Some(l) = self.state.parts[&part].cursors.get(&group).and_then(|c| c.lease.as_ref()) else {
            return Ok(());
        };
        if l.expires > self.ts {
            return Ok(());
        }
        let lease = l.id;
        let unsettled: Vec<u64> = l.offsets.iter().zip(&l.settled).filter(|(_, s)| !**s).map(|(o, _)| *o).collect();
        self.emit(Effect::ExpireLease { part, group, lease })?;
        for o in unsettled {
            let attempts = self.state.parts[&part].cursors[&group].attempts.get(&o).copied().unwrap_or(0);
            if attempts > opts.retry_limit && opts.dead_letters_after_retries() {
                self.emit(Effect::Ack {
                    part,
                    group,
                    lease,
                    offset: o,
                    status: AckStatus::Dlq,
                    error: Some("lease expired past retryLimit".into()),
                })?;
            }
        }
        Ok(())
    }

    pub fn extend(&mut self, lease: LeaseId, secs: Option<u64>) -> Planned<Micros> {
        let (part, group) =
            *self.state.leases.get(&lease).ok_or_else(|| CoreError::not_found("lease_not_found", "no such lease"))?;
        let p = &self.state.parts[&part];
        let l = p.cursors[&group].lease.as_ref().filter(|l| l.id == lease && l.expires > self.ts);
        if l.is_none() {
            return Err(CoreError::new(ErrorKind::Conflict, "lease_not_live", "the lease has expired or was released"));
        }
        let secs = secs.unwrap_or(self.state.queues[&p.queue].options.lease_time).max(1);
        let expires = self.ts.saturating_add(secs.saturating_mul(1_000_000));
        self.emit(Effect::ExtendLease { part, group, lease, expires })?;
        Ok(expires)
    }

    /// I5 across terms (D41): a new leader gives every lease it inherits what was left of it
    /// when the last term wrote its last entry, counted from its own first plan, so a lease
    /// a consumer holds never ends early because this leader's clock runs ahead of the last
    /// one's, and never later than its own length after the election (D49: a share
    /// consumer's 30 s lock is not stretched to the queue's 300 s `leaseTime`). A lease is
    /// inherited live when it outlasts the last term's time (the last entry applied),
    /// whatever this leader's clock says: judged by that clock, one that ran ahead by more
    /// than what was left of a lease would see it over already (CI, 2026-12-02). Both ends of
    /// what is left are the last term's times, so the skew between the leaders' clocks never
    /// enters. The extensions are one entry. Returns how many were extended.
    pub fn inherit_leases(&mut self) -> Planned<usize> {
        #[cfg(feature = "mutants")]
        if baton_log::mutant::is("no-inherit") {
            return Ok(0);
        }
        let mut extend = Vec::new();
        let last_term = self.state.last_ts;
        for (part, p) in &self.state.parts {
            for (group, c) in &p.cursors {
                let Some(l) = c.lease.as_ref().filter(|l| l.expires > last_term) else { continue };
                let until = self.ts.saturating_add(l.expires - last_term);
                if l.expires < until {
                    extend.push(Effect::ExtendLease { part: *part, group: *group, lease: l.id, expires: until });
                }
            }
        }
        // Applied in a fixed order, so the entry is the same whatever the maps' order was.
        extend.sort_by_key(|e| match e {
            Effect::ExtendLease { part, group, .. } => (*part, *group),
            _ => unreachable!("only lease extensions are collected"),
        });
        let n = extend.len();
        for e in extend {
            self.emit(e)?;
        }
        Ok(n)
    }

    /// Move a group's cursor on every partition of a queue (or one) to an offset or time.
    pub fn seek(
        &mut self,
        group: &str,
        queue: &str,
        partition: Option<&str>,
        to_ts: Option<Micros>,
        to_end: bool,
    ) -> Planned<u32> {
        let q = *self
            .state
            .queue_ids
            .get(queue)
            .ok_or_else(|| CoreError::not_found("queue_not_found", format!("queue {queue} does not exist")))?;
        let gid = self.ensure_group(group, None)?;
        let parts: Vec<PartId> = self.state.queues[&q]
            .parts
            .iter()
            .copied()
            .filter(|p| partition.is_none_or(|n| self.state.parts[p].name == n))
            .collect();
        for part in &parts {
            let p = &self.state.parts[part];
            let offset = if to_end { p.end } else { to_ts.map(|t| p.offset_at_ts(t)).unwrap_or(p.start) };
            self.emit(Effect::Seek { part: *part, group: gid, offset })?;
        }
        Ok(parts.len() as u32)
    }

    pub fn delete_group(&mut self, group: &str) -> Planned<()> {
        let gid =
            *self.state.group_ids.get(group).ok_or_else(|| {
                CoreError::not_found("group_not_found", format!("consumer group {group} does not exist"))
            })?;
        self.emit(Effect::DeleteGroup { group: gid })?;
        // A deleted group leaves nothing behind: its Kafka group configs (D67) go in the
        // same entry, so a new group of the name starts from the defaults.
        let ns = crate::kv::KAFKA_GROUP_CONFIGS;
        if self.state.kv.get(ns).is_some_and(|m| m.contains_key(group)) {
            self.emit(Effect::KvDel { ns: ns.to_string(), key: group.to_string() })?;
        }
        Ok(())
    }

    pub fn delete_queue(&mut self, queue: &str) -> Planned<()> {
        let q = *self
            .state
            .queue_ids
            .get(queue)
            .ok_or_else(|| CoreError::not_found("queue_not_found", format!("queue {queue} does not exist")))?;
        self.emit(Effect::DeleteQueue { queue: q })
    }

    /// Retention: drop whole stored batches older than the queue's retention.
    pub fn retention(&mut self) -> Planned<()> {
        let now = self.ts;
        let mut trims = Vec::new();
        for q in self.state.queues.values() {
            if q.options.retention_seconds == 0 {
                continue;
            }
            let cutoff = now.saturating_sub(q.options.retention_seconds.saturating_mul(1_000_000));
            for pid in &q.parts {
                let p = &self.state.parts[pid];
                let start = p.offset_at_ts(cutoff);
                if start > p.start {
                    trims.push((*pid, start));
                }
            }
        }
        for (part, start) in trims {
            self.emit(Effect::Trim { part, start })?;
        }
        Ok(())
    }
}

/// Messages waiting in queue mode across a queue's partitions.
pub fn queue_depth(state: &State, q: QueueId) -> u64 {
    let gid = state.group_ids.get(QUEUE_MODE);
    state.queues[&q].parts.iter().map(|pid| partition_depth(state, *pid, gid.copied())).sum()
}

pub fn partition_depth(state: &State, part: PartId, group: Option<GroupId>) -> u64 {
    let p = &state.parts[&part];
    match group.and_then(|g| p.cursors.get(&g)) {
        Some(c) => p.end.saturating_sub(c.next.max(p.start)).saturating_sub(c.done.len() as u64),
        None => p.end - p.start,
    }
}
