//! Planning a push (the HTTP push, binary or JSON, and the pushes of a transaction share
//! `admit_push`): deduplication by transaction id within the queue's window and within the
//! request, the one admission check of a group (I2: before its first effect), and the
//! append of its pre-encoded batch at the partition's next offset. Must never emit part of
//! a group: a group is refused whole, and a duplicate stores nothing.

use crate::command::*;
use crate::entry::Effect;
use crate::model::*;
use crate::plan::{queue_depth, Planner};
use std::collections::HashSet;

impl Planner {
    pub fn push(&mut self, groups: Vec<PushGroup>) -> Vec<PushResult> {
        let (mut out, rest) = self.push_step(groups, None);
        debug_assert!(rest.is_empty());
        out.sort_by_key(|r| r.index);
        out
    }

    /// Plans groups in order until `budget` of planner time is spent (at least one group),
    /// and answers the groups it did not reach (D80). Groups are independent: each is
    /// stored or refused whole, so a push may span several entries; its results are
    /// unsorted here (the caller sorts them once the last step is planned).
    pub fn push_step(
        &mut self,
        groups: Vec<PushGroup>,
        budget: Option<std::time::Duration>,
    ) -> (Vec<PushResult>, Vec<PushGroup>) {
        let start = std::time::Instant::now();
        let mut out = Vec::new();
        let mut groups = groups.into_iter();
        for g in groups.by_ref() {
            let before = self.emitted();
            let results = self.push_group(g);
            // A group is refused whole, before its first effect (admit_push); anything else
            // is a half-planned group and breaks the plan.
            if let Some(PushStatus::Failed(e)) = results.first().map(|r| &r.status) {
                let e = e.clone();
                self.refused_after(before, &e);
            }
            out.extend(results);
            if budget.is_some_and(|b| start.elapsed() >= b) {
                break;
            }
        }
        (out, groups.collect())
    }

    /// Every check a push group must pass, against the state, before anything is emitted:
    /// names, the queue's `maxSize` and the entry's size. `kept` is how many of its records
    /// will be stored; `pending` how many this same request already plans into the queue
    /// (net of what it settles there), for a transaction whose parts are checked together.
    pub(crate) fn admit_push(&self, g: &PushGroup, kept: u64, pending: i64, bytes: usize) -> Result<(), CoreError> {
        valid_name(&g.queue).map_err(|m| CoreError::bad("invalid_queue", format!("queue name: {m}")))?;
        valid_name(&g.partition).map_err(|m| CoreError::bad("invalid_partition", format!("partition name: {m}")))?;
        if bytes > self.limits.max_entry_bytes {
            return Err(self.limits.entry_too_large(bytes));
        }
        self.admit_new([(g.queue.as_str(), g.partition.as_str())])?;
        let Some(q) = self.state.queue_ids.get(&g.queue) else {
            return Ok(()); // a new queue has the default options: no maxSize
        };
        let max = self.state.queues[q].options.max_size;
        if max > 0 {
            let depth = (queue_depth(&self.state, *q) as i64).saturating_add(pending).max(0) as u64;
            if depth.saturating_add(kept) > max {
                return Err(CoreError::new(
                    ErrorKind::Conflict,
                    "queue_full",
                    format!("queue {} is at maxSize {max}", g.queue),
                ));
            }
        }
        Ok(())
    }

    /// Refuses pushes to these (queue, partition) names when the queues and partitions they
    /// would create pass `max_queues` or `max_partitions`: checked before the first effect,
    /// so a refusal plans nothing.
    pub(crate) fn admit_new<'a>(&self, names: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<(), CoreError> {
        // Sets, not lists: a transaction may name very many partitions.
        let (mut queues, mut parts): (HashSet<&str>, HashSet<(&str, &str)>) = (HashSet::new(), HashSet::new());
        for (q, p) in names {
            match self.state.queue_ids.get(q) {
                Some(id) if self.state.queues[id].part_by_name.contains_key(p) => continue,
                Some(_) => {}
                None => {
                    queues.insert(q);
                }
            }
            parts.insert((q, p));
        }
        self.limits.admit_queues(self.state.queues.len(), queues.len())?;
        self.limits.admit_partitions(self.state.parts.len(), parts.len())
    }

    fn push_group(&mut self, mut g: PushGroup) -> Vec<PushResult> {
        let fail = |g: &PushGroup, e: CoreError| {
            let queue: std::sync::Arc<str> = g.queue.as_str().into();
            g.indexes
                .iter()
                .zip(&g.records)
                .map(|(i, r)| PushResult {
                    index: *i,
                    txid: r.txid.clone(),
                    queue: queue.clone(),
                    status: PushStatus::Failed(e.clone()),
                })
                .collect::<Vec<_>>()
        };
        let window = self
            .state
            .queue(&g.queue)
            .map(|q| q.options.dedup_window_seconds)
            .unwrap_or(QueueOptions::default().dedup_window_seconds);
        let now = self.now();
        let existing = self.state.partition(&g.queue, &g.partition);
        // Dedup: within the window, and within this very request.
        let mut seen = crate::model::TxKeyMap::<()>::default();
        seen.reserve(g.records.len());
        let mut keep = Vec::with_capacity(g.records.len());
        let keys: Vec<TxKey> = g.records.iter().map(|r| self.state.txid_key(&r.txid)).collect();
        for (r, h) in g.records.iter().zip(&keys) {
            let dup = r.client_txid
                && window > 0
                && (existing.is_some_and(|p| p.dedup.get(h).is_some_and(|exp| *exp > now))
                    || seen.insert(*h, ()).is_some());
            keep.push(!dup);
        }
        let kept = keep.iter().filter(|k| **k).count() as u64;
        if let Err(e) = self.admit_push(&g, kept, 0, g.batch.len() + 16 * g.records.len()) {
            return fail(&g, e);
        }
        let mut batch = if kept == 0 {
            Vec::new()
        } else if kept as usize == g.records.len() {
            std::mem::take(&mut g.batch)
        } else {
            // Rare: some items were duplicates, so the pre-encoded batch is rebuilt without them.
            let recs: Vec<_> = g
                .records
                .iter()
                .zip(&keep)
                .filter(|(_, k)| **k)
                .map(|(r, _)| baton_wire::NewRecord {
                    key: None,
                    value: &r.value,
                    txid: Some(&r.txid),
                    trace: r.trace.as_deref(),
                })
                .collect();
            match baton_wire::encode_batch(&recs, (now / 1000) as i64) {
                Ok(b) => b,
                Err(e) => return fail(&g, CoreError::bad("bad_payload", e.to_string())),
            }
        };
        let q = match self.ensure_queue(&g.queue) {
            Ok(q) => q,
            Err(e) => return fail(&g, e),
        };
        let part = match self.ensure_partition(q, &g.partition) {
            Ok(p) => p,
            Err(e) => return fail(&g, e),
        };
        // Before the append is emitted: a file that cannot be opened refuses this group
        // (the partition, if just created, stays, empty), never a half-applied plan.
        if let Err(e) = self.state.prepare_append(part, self.now()) {
            return fail(&g, e);
        }
        let p = &self.state.parts[&part];
        let base = p.end;
        let mut results = Vec::with_capacity(g.records.len());
        let mut txids = Vec::new();
        let mut dedup = Vec::new();
        let mut next = base;
        let queue: std::sync::Arc<str> = g.queue.as_str().into();
        // The ids move into the answers: the records are not read again.
        for (((i, r), k), h) in g.indexes.iter().zip(g.records.iter_mut()).zip(&keep).zip(keys) {
            let status = if *k {
                txids.push(h[0]);
                if r.client_txid && window > 0 {
                    dedup.push(h);
                }
                next += 1;
                PushStatus::Queued { part, offset: next - 1 }
            } else {
                PushStatus::Duplicate { part }
            };
            results.push(PushResult { index: *i, txid: std::mem::take(&mut r.txid), queue: queue.clone(), status });
        }
        if kept == 0 {
            return results;
        }
        baton_wire::set_base_offset(&mut batch, base);
        if let Err(e) = self.emit(Effect::Append { part, count: kept as u32, txids, dedup, batch: batch.into() }) {
            // The ids are in `results` now.
            for r in &mut results {
                r.status = PushStatus::Failed(e.clone());
            }
            return results;
        }
        self.pushed_queues.entry(q).or_default().insert(part);
        results
    }
}
