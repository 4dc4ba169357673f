//! Kafka transactions in the state machine (D48): each transactional id's producer,
//! epoch and open transaction, and each partition's open and aborted transactions. Owns
//! what those effects do to the state; the planning is in `ktxn_plan`. Must never make a
//! record of an open or aborted transaction visible to a committed reader: the stable end
//! of a partition never passes the first offset of a transaction still open in it (I7).

use crate::entry::Effect;
use crate::model::*;
use crate::state::{ApplyError, State};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

/// The transaction-id hash a control record (a commit or abort marker) is stored with.
/// Hashes are keyed with the node's secret (D21), so no client can give a record of its
/// own this hash; one of Baton's own records has it with a chance of 2^-64.
pub const MARKER_TXID: u64 = u64::MAX;

/// Kafka's transaction.max.timeout.ms default: a longer transaction timeout is refused.
pub const MAX_TXN_TIMEOUT_MS: i32 = 900_000;

/// Kafka's transactional.id.expiration.ms default: an id idle this long is forgotten.
pub const TXN_ID_EXPIRATION: Micros = 7 * 24 * 3600 * 1_000_000;

/// One transactional id.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TxnId {
    pub producer: i64,
    pub epoch: i16,
    pub timeout_ms: i32,
    /// When the open transaction began (state time), None when there is none.
    pub open_since: Option<Micros>,
    pub parts: BTreeSet<PartId>,
    pub groups: BTreeSet<String>,
    /// Offsets committed inside the open transaction: group -> partition -> next offset,
    /// the latest of each (a map, so a commit naming many partitions costs O(n log n)).
    pub offsets: BTreeMap<String, BTreeMap<PartId, u64>>,
    /// How the last transaction ended (true: committed), and the producer and epoch that
    /// wrote it, for a retried EndTxn.
    pub last_end: Option<bool>,
    pub last_end_by: Option<(i64, i16)>,
    /// Last time the id was initialised or a transaction of it ended.
    pub last_used: Micros,
}

impl TxnId {
    /// Why adding `more` partitions would take the open transaction (or the one `more`
    /// begins) past `max` (D79); the one check both ways of adding (AddPartitionsToTxn,
    /// a KIP-890 produce) make.
    pub fn too_wide(&self, more: usize, max: usize) -> Option<String> {
        let width = if self.open_since.is_some() { self.parts.len() } else { 0 };
        (width + more > max).then(|| {
            format!(
                "the transaction would write to {} partitions; at most {max} (max transaction partitions)",
                width + more
            )
        })
    }
}

/// Every transactional id, and which one owns each transactional producer id.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct KafkaTxns {
    pub ids: BTreeMap<String, TxnId>,
    pub by_producer: HashMap<i64, String>,
}

/// A transaction writing to one partition.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct OpenTxn {
    pub first: u64,
    /// The `[base, end)` spans its batches took, merged when adjacent.
    pub ranges: Vec<(u64, u64)>,
}

/// One aborted transaction in a partition, as Fetch reports it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Aborted {
    pub producer: i64,
    pub first: u64,
    pub marker: u64,
}

/// A partition's transactions.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PartTxns {
    pub open: BTreeMap<i64, OpenTxn>,
    /// Ordered by marker offset; dropped by retention.
    pub aborted: VecDeque<Aborted>,
    /// Records of aborted transactions and messages deleted through the API (issue 16),
    /// `start -> end`, merged when adjacent: no consumer over HTTP is given them. Dropped
    /// by retention.
    pub hidden: BTreeMap<u64, u64>,
    /// The first control record written here: pops look for markers from here on.
    pub first_marker: Option<u64>,
}

impl PartTxns {
    /// The stable end as planned: the first offset of the oldest open transaction, or `end`.
    pub fn stable(&self, end: u64) -> u64 {
        self.open.values().map(|t| t.first).min().map_or(end, |f| f.min(end))
    }

    /// The end of the aborted span holding `offset`, if one does.
    pub fn hidden_end(&self, offset: u64) -> Option<u64> {
        self.hidden.range(..=offset).next_back().filter(|(_, e)| **e > offset).map(|(_, e)| *e)
    }

    /// Aborted transactions a committed read of `[from, to)` must be told about.
    pub fn aborted_in(&self, from: u64, to: u64) -> Vec<(i64, u64)> {
        let at = self.aborted.partition_point(|a| a.marker < from);
        self.aborted.range(at..).filter(|a| a.first < to).map(|a| (a.producer, a.first)).collect()
    }

    pub(crate) fn hide(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let (mut s, mut e) = (start, end);
        if let Some((&ps, &pe)) = self.hidden.range(..=s).next_back() {
            if pe >= s {
                s = ps;
                e = e.max(pe);
            }
        }
        let covered: Vec<u64> = self.hidden.range(s..=e).map(|(k, _)| *k).collect();
        for k in covered {
            if let Some(v) = self.hidden.remove(&k) {
                e = e.max(v);
            }
        }
        self.hidden.insert(s, e);
    }

    /// Retention moved the partition's start: forget what lies wholly below it.
    pub fn trim(&mut self, start: u64) {
        while self.aborted.front().is_some_and(|a| a.marker < start) {
            self.aborted.pop_front();
        }
        self.hidden.retain(|_, e| *e > start);
    }
}

/// Applies the Kafka transaction effects; any other effect is left alone.
pub fn apply(state: &mut State, ts: Micros, e: &Effect) -> Result<(), ApplyError> {
    match e {
        Effect::KafkaTxnInit { tid, producer, epoch, timeout_ms } => {
            state.next_producer = state.next_producer.max(producer + 1);
            let t = state
                .ktxn
                .ids
                .entry(tid.clone())
                .or_insert_with(|| TxnId { producer: *producer, ..Default::default() });
            // The id's old producer id (its epochs spent) is no longer its.
            if t.producer != *producer && state.ktxn.by_producer.get(&t.producer) == Some(tid) {
                state.ktxn.by_producer.remove(&t.producer);
            }
            t.producer = *producer;
            t.epoch = *epoch;
            t.timeout_ms = *timeout_ms;
            t.last_used = ts;
            state.ktxn.by_producer.insert(*producer, tid.clone());
        }
        Effect::KafkaTxnAdd { tid, parts, groups } => {
            let t = state.ktxn.ids.get_mut(tid).ok_or_else(|| ApplyError(format!("unknown transactional id {tid}")))?;
            t.open_since.get_or_insert(ts);
            t.parts.extend(parts.iter().copied());
            t.groups.extend(groups.iter().cloned());
        }
        Effect::KafkaTxnOffsets { tid, offsets } => {
            let t = state.ktxn.ids.get_mut(tid).ok_or_else(|| ApplyError(format!("unknown transactional id {tid}")))?;
            for (g, p, o) in offsets {
                t.offsets.entry(g.clone()).or_default().insert(*p, *o);
            }
        }
        Effect::KafkaTxnWrite { part, producer, base, end } => {
            if let Some(p) = state.parts.get_mut(part) {
                let o = p.txns.open.entry(*producer).or_insert_with(|| OpenTxn { first: *base, ranges: Vec::new() });
                match o.ranges.last_mut() {
                    Some(last) if last.1 == *base => last.1 = *end,
                    _ => o.ranges.push((*base, *end)),
                }
            }
        }
        Effect::KafkaTxnMark { part, producer, epoch, commit, marker } => {
            if let Some(p) = state.parts.get_mut(part) {
                let txns = &mut p.txns;
                if let Some(o) = txns.open.remove(producer) {
                    if !commit {
                        for (s, e) in &o.ranges {
                            txns.hide(*s, *e);
                        }
                        txns.aborted.push_back(Aborted { producer: *producer, first: o.first, marker: *marker });
                    }
                }
                txns.first_marker.get_or_insert(*marker);
                // The marker carries the epoch that ended the transaction: a zombie's
                // retry at an older epoch is refused here too, as Kafka's markers do.
                let st = p.producers.entry(*producer).or_default();
                if st.epoch < *epoch {
                    st.epoch = *epoch;
                    st.recent.clear();
                }
            }
        }
        Effect::KafkaTxnEnd { tid, commit, by } => {
            if let Some(t) = state.ktxn.ids.get_mut(tid) {
                t.open_since = None;
                t.parts.clear();
                t.groups.clear();
                t.offsets.clear();
                t.last_end = Some(*commit);
                t.last_end_by = Some(*by);
                t.last_used = ts;
            }
        }
        Effect::KafkaTxnForget { tid } => {
            if let Some(t) = state.ktxn.ids.remove(tid) {
                state.ktxn.by_producer.remove(&t.producer);
            }
        }
        Effect::HideRecord { part, offset } => {
            if let Some(p) = state.parts.get_mut(part) {
                p.txns.hide(*offset, offset.saturating_add(1));
            }
        }
        Effect::SettleHidden { part, group, ranges } => {
            let from_ts = state.groups.get(group).and_then(|g| g.from_ts);
            if let Some(p) = state.parts.get_mut(part) {
                // A cursor made here starts where a lease would have started it.
                let init = from_ts.map_or(p.start, |t| p.offset_at_ts(t));
                let c = p
                    .cursors
                    .entry(*group)
                    .or_insert_with(|| crate::partition::Cursor { next: init, ..Default::default() });
                for (s, e) in ranges {
                    if *s <= c.next {
                        c.next = c.next.max(*e);
                        c.done = c.done.split_off(&c.next);
                        c.attempts.retain(|o, _| *o >= c.next);
                        while c.done.remove(&c.next) {
                            c.next += 1;
                        }
                    } else {
                        for o in *s..*e {
                            c.done.insert(o);
                        }
                    }
                }
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_spans_merge_and_answer_lookups() {
        let mut t = PartTxns::default();
        t.hide(10, 20);
        t.hide(30, 40);
        t.hide(20, 25);
        assert_eq!(t.hidden.iter().map(|(a, b)| (*a, *b)).collect::<Vec<_>>(), vec![(10, 25), (30, 40)]);
        t.hide(5, 35);
        assert_eq!(t.hidden.iter().map(|(a, b)| (*a, *b)).collect::<Vec<_>>(), vec![(5, 40)]);
        assert_eq!(t.hidden_end(4), None);
        assert_eq!(t.hidden_end(5), Some(40));
        assert_eq!(t.hidden_end(39), Some(40));
        assert_eq!(t.hidden_end(40), None);
        t.trim(41);
        assert!(t.hidden.is_empty());
    }

    #[test]
    fn stable_end_stops_at_the_oldest_open_transaction() {
        let mut t = PartTxns::default();
        assert_eq!(t.stable(50), 50);
        t.open.insert(7, OpenTxn { first: 30, ranges: vec![(30, 31)] });
        t.open.insert(8, OpenTxn { first: 12, ranges: vec![(12, 13)] });
        assert_eq!(t.stable(50), 12);
    }

    #[test]
    fn aborted_list_covers_reads_that_overlap() {
        let mut t = PartTxns::default();
        t.aborted.push_back(Aborted { producer: 1, first: 0, marker: 5 });
        t.aborted.push_back(Aborted { producer: 2, first: 10, marker: 20 });
        assert_eq!(t.aborted_in(0, 100), vec![(1, 0), (2, 10)]);
        assert_eq!(t.aborted_in(6, 100), vec![(2, 10)]);
        assert_eq!(t.aborted_in(0, 10), vec![(1, 0)]);
        assert_eq!(t.aborted_in(21, 100), Vec::<(i64, u64)>::new());
    }
}
