//! Read-only views of the state for the resources API and for fetch. Runs on
//! the planner thread but only reads; message bytes are read later, off the
//! planner, through the returned spans. Fetch stops at the durable watermark:
//! a reader that does not write never sees what could still vanish.

use crate::command::*;
use crate::model::*;
use crate::plan::partition_depth;
use crate::state::{Queue, State};

/// Most partition views one [`Query::PartViews`] answers.
pub const VIEW_CHUNK: usize = 4096;

fn head(q: &Queue) -> QueueHead {
    QueueHead {
        name: q.name.clone(),
        options: q.options.clone(),
        parts: q.parts.clone(),
        dead_letters: q.dlq.len() as u64,
        created_at: q.created,
    }
}

/// Each partition's view with its depth as `group` sees it: what it has not settled, or the
/// whole partition for a group that has not started there.
fn part_views(state: &State, ids: &[PartId], group: &str) -> Vec<PartitionView> {
    let gid = state.group_ids.get(group).copied();
    ids.iter()
        .take(VIEW_CHUNK)
        .filter_map(|pid| {
            let p = state.parts.get(pid)?;
            Some(PartitionView {
                part: *pid,
                id: partition_uuid(*pid).to_string(),
                name: p.name.clone(),
                start: p.start,
                end: p.end,
                durable_end: p.durable_end(),
                stable_end: p.stable_end(),
                depth: partition_depth(state, *pid, gid),
                leased: gid.and_then(|g| p.cursors.get(&g)).is_some_and(|c| c.lease.is_some()),
            })
        })
        .collect()
}

pub fn run(state: &State, q: Query) -> QueryResult {
    match q {
        Query::QueueHeads(None) => {
            let mut v: Vec<QueueHead> = state.queues.values().map(head).collect();
            v.sort_by(|a, b| a.name.cmp(&b.name));
            QueryResult::QueueHeads(v)
        }
        Query::QueueHeads(Some(name)) => QueryResult::QueueHeads(state.queue(&name).map(head).into_iter().collect()),
        Query::PartViews { ids, group } => {
            QueryResult::PartViews(part_views(state, &ids, group.as_deref().unwrap_or(QUEUE_MODE)))
        }
        Query::Sizes => {
            // Counted when the planner was made (Planner::with_limits); recounted only if not.
            let kv_bytes = state.held.kv.unwrap_or_else(|| state.count_kv_bytes());
            let timer_bytes = state.held.timers.unwrap_or_else(|| state.count_timer_bytes());
            let ids = &state.ktxn.ids;
            QueryResult::Sizes {
                kafka_txn_ids: ids.len(),
                kafka_txns_open: ids.values().filter(|t| t.open_since.is_some()).count(),
                kafka_aborted_max: state.parts.values().map(|p| p.txns.aborted.len()).max().unwrap_or(0),
                queues: state.queues.len(),
                partitions: state.parts.len(),
                groups: state.groups.len(),
                kv_bytes,
                timer_bytes,
            }
        }
        Query::Groups => {
            let mut out = Vec::new();
            for p in state.parts.values() {
                let qname = state.queues.get(&p.queue).map(|q| q.name.clone()).unwrap_or_default();
                for (gid, c) in &p.cursors {
                    let Some(g) = state.groups.get(gid) else { continue };
                    let offset = c.next.max(p.start);
                    out.push(GroupView {
                        name: g.name.clone(),
                        queue: qname.clone(),
                        partition: p.name.clone(),
                        offset,
                        end: p.end,
                        lag: p.end.saturating_sub(offset).saturating_sub(c.done.len() as u64),
                        leased: c.lease.is_some(),
                    });
                }
            }
            out.sort_by(|a, b| (&a.name, &a.queue, &a.partition).cmp(&(&b.name, &b.queue, &b.partition)));
            QueryResult::Groups(out)
        }
        Query::Dlq { queue, limit } => {
            let mut out = Vec::new();
            for q in state.queues.values() {
                if queue.as_ref().is_some_and(|n| *n != q.name) {
                    continue;
                }
                for d in q.dlq.iter().rev().take(limit.saturating_sub(out.len())) {
                    let p = state.parts.get(&d.part);
                    out.push(DlqView {
                        queue: q.name.clone(),
                        partition: p.map(|p| p.name.clone()).unwrap_or_default(),
                        part: d.part,
                        offset: d.offset,
                        group: state.groups.get(&d.group).map(|g| g.name.clone()).unwrap_or_default(),
                        error: d.error.clone(),
                        ts: d.ts,
                        span: p.and_then(|p| p.spans_for(&[d.offset]).pop()),
                    });
                }
            }
            QueryResult::Dlq(out)
        }
        Query::OffsetForTime { topic, partition, ts_ms } => {
            QueryResult::Offset(match state.partition(&topic, &partition) {
                None => Err(CoreError::not_found("partition_not_found", format!("{topic}/{partition} does not exist"))),
                Some(p) => {
                    let o = p.offset_at_ts((ts_ms.max(0) as u64) * 1000);
                    Ok((o < p.durable_end()).then_some(o))
                }
            })
        }
        Query::GroupOffsets { group, topic } => {
            let mut out = Vec::new();
            if let (Some(g), Some(q)) = (state.group_ids.get(&group), state.queue(&topic)) {
                for pid in &q.parts {
                    let p = &state.parts[pid];
                    if let Some(c) = p.cursors.get(g) {
                        out.push((p.name.clone(), c.next.max(p.start)));
                    }
                }
            }
            QueryResult::GroupOffsets(out)
        }
        Query::Timers { queue, key, after, limit } => {
            let mut rows = Vec::new();
            if let Some(m) = state.timers.get(&queue) {
                let it: Box<dyn Iterator<Item = (&String, &crate::state::Timer)>> = match (&key, &after) {
                    (Some(k), _) => Box::new(m.get_key_value(k).into_iter()),
                    (None, Some(a)) => {
                        Box::new(m.range::<String, _>((std::ops::Bound::Excluded(a), std::ops::Bound::Unbounded)))
                    }
                    (None, None) => Box::new(m.iter()),
                };
                for (k, t) in it.take(limit) {
                    rows.push((k.clone(), t.fire_at, t.payload.clone(), t.partition.clone(), t.txn.clone()));
                }
            }
            QueryResult::Timers(rows)
        }
        Query::TopicConfigs(topic) => QueryResult::TopicConfigs(
            state.queue(&topic).map(|q| state.topic_configs.get(&q.id).cloned().unwrap_or_default()),
        ),
        Query::KafkaTxns(ids) => {
            let view = |(tid, t): (&String, &crate::ktxn::TxnId)| TxnView {
                tid: tid.clone(),
                producer: t.producer,
                epoch: t.epoch,
                timeout_ms: t.timeout_ms,
                state: match (t.open_since, t.last_end) {
                    (Some(_), _) => "Ongoing",
                    (None, Some(true)) => "CompleteCommit",
                    (None, Some(false)) => "CompleteAbort",
                    (None, None) => "Empty",
                },
                start_ms: t.open_since.map_or(-1, |s| (s / 1000) as i64),
                parts: t
                    .parts
                    .iter()
                    .filter_map(|p| state.parts.get(p))
                    .filter_map(|p| Some((state.queues.get(&p.queue)?.name.clone(), p.name.clone())))
                    .collect(),
            };
            let all = &state.ktxn.ids;
            QueryResult::KafkaTxns(match ids {
                Some(ids) => ids.iter().filter_map(|i| all.get_key_value(i)).map(view).collect(),
                None => all.iter().map(view).collect(),
            })
        }
        Query::ChangedPartitions { queue, since, after, limit } => QueryResult::Changed(state.queue(&queue).map(|q| {
            let mut parts = Vec::new();
            let mut next = None;
            // Entries are strictly later than the last one applied (I5).
            let safe_time = state.last_ts + 1;
            // A queue's partitions are in creation order, which is id order: the page starts
            // by a binary search, and examines at most CHANGED_SCAN of them whatever it
            // finds, so a queue of a million quiet partitions costs the planner a bounded
            // step per query; a page cut by the scan answers `next` all the same.
            let from = after.map_or(0, |a| q.parts.partition_point(|id| *id <= a));
            for (scanned, id) in q.parts[from..].iter().copied().enumerate() {
                if scanned == CHANGED_SCAN {
                    next = Some(q.parts[from + scanned - 1]);
                    break;
                }
                let Some(p) = state.parts.get(&id) else { continue };
                let Some(w) = p.last_write().filter(|w| since.is_none_or(|s| *w >= s)) else { continue };
                if parts.len() == limit {
                    next = parts.last().map(|c: &ChangedPart| c.id);
                    break;
                }
                parts.push(ChangedPart {
                    id,
                    name: p.name.clone(),
                    start: p.start,
                    durable_end: p.durable_end(),
                    last_write: w,
                });
            }
            ChangedPage { parts, next, safe_time }
        })),
        Query::LeasePrefix { lease, txid } => {
            QueryResult::LeasePrefix(state.leases.get(&lease).and_then(|(part, group)| {
                let p = state.parts.get(part)?;
                let l = p.cursors.get(group)?.lease.as_ref().filter(|l| l.id == lease)?;
                let pos = p.lease_position_of(l, state.txid_hash(&txid))?;
                Some((*part, (0..=pos).filter(|i| !l.settled[*i]).map(|i| l.offsets[i]).collect()))
            }))
        }
        Query::MessageScan { part, txid } => QueryResult::MessageScan(
            state.parts.get(&part).and_then(|p| Some((p.txid_scan(MESSAGE_SCAN)?, state.txid_hash(&txid)))),
        ),
        Query::Message { part, txid, offset } => QueryResult::Message(state.parts.get(&part).and_then(|p| {
            let h = state.txid_hash(&txid);
            if offset >= p.durable_end() || !p.is_message_with(offset, h) || p.txns.hidden_end(offset).is_some() {
                return None;
            }
            let q = state.queues.get(&p.queue)?;
            let mut groups: Vec<MessageGroup> = p
                .cursors
                .iter()
                .filter_map(|(g, c)| {
                    let lease = c.lease.as_ref().filter(|l| l.position(offset).is_some());
                    Some(MessageGroup {
                        name: state.groups.get(g)?.name.clone(),
                        consumed: offset < c.next || c.done.contains(&offset),
                        leased: lease.is_some(),
                        lease_expires: lease.map(|l| l.expires),
                        retry_count: c.attempts.get(&offset).copied().unwrap_or(0),
                    })
                })
                .collect();
            groups.sort_by(|a, b| a.name.cmp(&b.name));
            Some((q.name.clone(), p.name.clone(), p.spans_for(&[offset]).pop(), groups))
        })),
    }
}

/// A lookup of one message by transaction id reads at most this many of the
/// partition's newest hashes (64 MiB of `.txid`), off the planner, so it cannot
/// scan a partition of any size; older messages are found by offset.
pub const MESSAGE_SCAN: u64 = 4 << 20;
/// Most partitions one [`Query::ChangedPartitions`] examines on the planner.
pub const CHANGED_SCAN: usize = 4096;

pub fn fetch(state: &State, reqs: Vec<FetchRequest>) -> Vec<FetchResult> {
    reqs.into_iter()
        .map(|r| {
            let mut res = FetchResult {
                queue: r.queue.clone(),
                partition: r.partition.clone(),
                high_watermark: 0,
                log_start: 0,
                spans: Vec::new(),
                from_offset: r.offset,
                error: None,
                last_stable: 0,
                aborted: Vec::new(),
                hidden: Vec::new(),
            };
            let Some(p) = state.partition(&r.queue, &r.partition) else {
                res.error = Some(CoreError::not_found(
                    "partition_not_found",
                    format!("{}/{} does not exist", r.queue, r.partition),
                ));
                return res;
            };
            let hw = p.durable_end();
            res.high_watermark = hw;
            res.log_start = p.start;
            res.last_stable = p.stable_end();
            // I7: a committed read stops at the last stable offset.
            let limit = if r.committed { res.last_stable } else { hw };
            if r.offset < p.start || r.offset > hw {
                res.error = Some(CoreError::bad(
                    "offset_out_of_range",
                    format!("offset {} is outside [{}, {}]", r.offset, p.start, hw),
                ));
                return res;
            }
            let Some(files) = &p.files else { return res };
            let mut at = p.find(r.offset);
            let mut bytes = 0u64;
            let mut read_to = r.offset;
            while let Some(f) = at {
                let b = f.rec;
                if b.base >= limit || (bytes > 0 && bytes + b.len as u64 > r.max_bytes) {
                    break;
                }
                bytes += b.len as u64;
                // A transaction marker is a batch of one record (D48).
                if r.committed && b.end() == b.base + 1 && p.is_marker(b.base) {
                    res.hidden.push((b.base, b.end()));
                }
                match files.span(f.seg, &b) {
                    Ok(s) => res.spans.push(s),
                    Err(e) => {
                        tracing::warn!(part = p.id, error = %e, "could not open a partition segment for a fetch");
                        break;
                    }
                }
                at = files.next(&f).unwrap_or_else(|e| {
                    tracing::warn!(part = p.id, error = %e, "could not read a partition index for a fetch");
                    None
                });
                read_to = b.end();
            }
            if r.committed {
                res.aborted = p.txns.aborted_in(r.offset, read_to);
                let at = p.txns.hidden.range(..=r.offset).next_back().map_or(r.offset, |(s, _)| *s);
                res.hidden
                    .extend(p.txns.hidden.range(at..read_to).map(|(s, e)| (*s, *e)).filter(|(_, e)| *e > r.offset));
                res.hidden.sort_unstable();
            }
            res
        })
        .collect()
}
