//! The lookups the rules share, built once from a [`History`]: which pop
//! granted each lease, which operations name it, who may have written each
//! (partition, transactionId) and each Kafka payload, where each is in the
//! final logs, whether each transaction certainly took effect, and per
//! (partition, group) the pops and the evidence that settled each offset.
//!
//! Owns attribution (an ack item to the offset it settles, a log entry to the
//! operations that may have written it). Must never flag a violation: where
//! attribution fails it opens an UNKNOWN and moves on.

use super::model::*;
use super::verdict::{Verdict, Why};

/// A multimap as one sorted vector: compact for a million keys, and a lookup is
/// a binary search instead of one heap allocation per key.
#[derive(Debug, Default)]
pub struct Multi<K: Ord + Copy, V: Copy>(Vec<(K, V)>);

impl<K: Ord + Copy, V: Copy + Ord> Multi<K, V> {
    pub fn from(mut v: Vec<(K, V)>) -> Multi<K, V> {
        v.sort_unstable();
        Multi(v)
    }
    pub fn get(&self, k: K) -> impl Iterator<Item = V> + '_ {
        let lo = self.0.partition_point(|(x, _)| *x < k);
        self.0[lo..].iter().take_while(move |(x, _)| *x == k).map(|(_, v)| *v)
    }
    pub fn count(&self, k: K) -> usize {
        self.get(k).count()
    }
    /// Each key once with all its values.
    pub fn groups(&self) -> impl Iterator<Item = (K, &[(K, V)])> + '_ {
        self.0.chunk_by(|a, b| a.0 == b.0).map(|c| (c[0].0, c))
    }
}

/// How an operation that certainly settled a message is known to have taken effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sure {
    /// Answered ok.
    Answered,
    /// A transaction not answered ok, but some of its pushes are in the log and
    /// only it could have written them (I2: then all of it took effect).
    Visible,
}

/// What settled one offset for one group, as far as the history shows.
#[derive(Debug, Clone, Copy)]
pub struct Settle {
    /// Earliest invocation of an operation that may have settled it (completed or dlq).
    pub maybe: Time,
    pub maybe_op: u32,
    /// Earliest completion of an operation that certainly settled it; [`INF`] with
    /// `sure_op` set when one certainly did but its time is unbounded (a
    /// transaction known applied only because its pushes are in the log).
    pub sure: Time,
    pub sure_op: u32,
    pub sure_how: Sure,
    /// The pop whose lease the settling ack named (for the excerpt).
    pub sure_pop: u32,
}

impl Default for Settle {
    fn default() -> Self {
        Settle {
            maybe: INF,
            maybe_op: u32::MAX,
            sure: INF,
            sure_op: u32::MAX,
            sure_how: Sure::Answered,
            sure_pop: u32::MAX,
        }
    }
}

#[derive(Debug, Default)]
pub struct Pg {
    /// Ok pops that delivered something, in invocation order.
    pub pops: Vec<u32>,
    pub settle: FxMap<u64, Settle>,
    pub min_delivered: Option<u64>,
}

/// A write item: (op index, item index in the op).
pub type ItemRef = (u32, u32);

pub struct Ix {
    pub lease_pop: FxMap<Sym, u32>,
    /// Ack, extend and transaction ops naming each lease.
    pub named: FxMap<Sym, Vec<u32>>,
    pub by_txid: Multi<(PartId, Sym), ItemRef>,
    pub by_payload: Multi<(PartId, Sym), ItemRef>,
    pub log_txid: Multi<(PartId, Sym), u64>,
    pub log_payload: Multi<(PartId, Sym), u64>,
    /// Transactions that certainly took effect.
    pub txn_sure: FxMap<u32, Sure>,
    pub pgs: FxMap<(PartId, Sym), Pg>,
    /// Ok pops and Kafka fetches that returned records, per partition.
    pub readers: FxMap<PartId, Vec<u32>>,
}

/// The write items of an op: (item index, the write, may it have stored the message).
pub fn writes(op: &Op) -> Vec<(u32, Write, bool)> {
    match &op.call {
        Call::Push { items, statuses } => items
            .iter()
            .zip(statuses)
            .enumerate()
            .map(|(i, (w, s))| (i as u32, *w, op.maybe() && *s != PushStatus::Duplicate))
            .collect(),
        Call::Txn { pushes, .. } => pushes.iter().enumerate().map(|(i, w)| (i as u32, *w, op.maybe())).collect(),
        Call::KProduce { part, records, .. } => records
            .iter()
            .enumerate()
            .map(|(i, p)| (i as u32, Write { part: *part, txid: NONE, payload: *p }, op.maybe()))
            .collect(),
        _ => Vec::new(),
    }
}

impl Ix {
    pub fn build(h: &History, v: &mut Verdict) -> Ix {
        let mut lease_pop = FxMap::default();
        let mut named: FxMap<Sym, Vec<u32>> = FxMap::default();
        let mut by_txid = Vec::new();
        let mut by_payload = Vec::new();
        let mut readers: FxMap<PartId, Vec<u32>> = FxMap::default();
        for (i, op) in h.ops.iter().enumerate() {
            let i = i as u32;
            for (k, w, _) in writes(op) {
                if w.txid != NONE {
                    by_txid.push(((w.part, w.txid), (i, k)));
                } else {
                    by_payload.push(((w.part, w.payload), (i, k)));
                }
            }
            match &op.call {
                Call::Pop { got: Some(g), auto_ack, .. } => {
                    if !auto_ack && g.lease != NONE && lease_pop.insert(g.lease, i).is_some() {
                        v.open(
                            Why::UnknownLease,
                            || format!("lease {} was returned by two pops", h.name(g.lease)),
                            &op.lines(),
                        );
                    }
                    readers.entry(g.part).or_default().push(i);
                }
                Call::KFetch { part, records } if op.outcome == Outcome::Ok && !records.is_empty() => {
                    readers.entry(*part).or_default().push(i)
                }
                Call::Ack { items } => {
                    let mut leases: Vec<Sym> = items.iter().map(|a| a.lease).collect();
                    leases.dedup();
                    for l in leases {
                        named.entry(l).or_default().push(i);
                    }
                }
                Call::Txn { acks, .. } => {
                    let mut leases: Vec<Sym> = acks.iter().map(|a| a.lease).collect();
                    leases.sort_unstable();
                    leases.dedup();
                    for l in leases {
                        named.entry(l).or_default().push(i);
                    }
                }
                Call::Extend { lease, .. } => named.entry(*lease).or_default().push(i),
                _ => {}
            }
        }
        let mut log_txid = Vec::new();
        let mut log_payload = Vec::new();
        for (part, log) in &h.logs {
            for (k, e) in log.entries.iter().enumerate() {
                let o = log.first + k as u64;
                if e.line != 0 && e.txid != NONE {
                    log_txid.push(((*part, e.txid), o));
                }
                if e.line != 0 && e.payload != NONE {
                    log_payload.push(((*part, e.payload), o));
                }
            }
        }
        let mut ix = Ix {
            lease_pop,
            named,
            by_txid: Multi::from(by_txid),
            by_payload: Multi::from(by_payload),
            log_txid: Multi::from(log_txid),
            log_payload: Multi::from(log_payload),
            txn_sure: FxMap::default(),
            pgs: FxMap::default(),
            readers,
        };
        ix.txns(h);
        ix.settles(h, v);
        ix
    }

    /// The items that may have stored (part, txid): ok-and-queued or unknown.
    pub fn possible_writers(&self, h: &History, part: PartId, txid: Sym) -> Vec<ItemRef> {
        self.by_txid.get((part, txid)).filter(|(op, k)| may_store(h, *op, *k)).collect()
    }

    pub fn possible_kafka_writers(&self, h: &History, part: PartId, payload: Sym) -> Vec<ItemRef> {
        self.by_payload.get((part, payload)).filter(|(op, k)| may_store(h, *op, *k)).collect()
    }

    /// A transaction took effect for certain when answered ok, or when one of its
    /// pushes is in the log and no other operation could have written it.
    fn txns(&mut self, h: &History) {
        for (i, op) in h.ops.iter().enumerate() {
            let Call::Txn { pushes, .. } = &op.call else { continue };
            let sure = match op.outcome {
                Outcome::Ok => Some(Sure::Answered),
                Outcome::Failed => None,
                Outcome::Unknown => pushes
                    .iter()
                    .any(|w| {
                        self.log_txid.count((w.part, w.txid)) > 0
                            && self.possible_writers(h, w.part, w.txid).iter().all(|(o, _)| *o == i as u32)
                    })
                    .then_some(Sure::Visible),
            };
            if let Some(s) = sure {
                self.txn_sure.insert(i as u32, s);
            }
        }
    }

    /// The (pop, offset) an ack item settles, or `None` (an UNKNOWN is opened).
    pub fn resolve(&self, h: &History, a: &AckItem, op: &Op, v: &mut Verdict) -> Option<(u32, u64)> {
        let Some(&pop) = self.lease_pop.get(&a.lease) else {
            v.open(
                Why::UnknownLease,
                || format!("{} names lease {}, which no ok pop returned", op.call.name(), h.name(a.lease)),
                &op.lines(),
            );
            return None;
        };
        let Call::Pop { got: Some(g), .. } = &h.ops[pop as usize].call else { unreachable!("lease_pop holds ok pops") };
        let found = g.msgs.iter().find(|(o, t)| a.offset.map_or(*t == a.txid, |x| x == *o));
        match found {
            Some((o, _)) => Some((pop, *o)),
            None => {
                v.open(
                    Why::AckNotInLease,
                    || format!("{} names a message lease {} did not deliver", op.call.name(), h.name(a.lease)),
                    &[op.inv_line, h.ops[pop as usize].comp_line],
                );
                None
            }
        }
    }

    fn settles(&mut self, h: &History, v: &mut Verdict) {
        for (i, op) in h.ops.iter().enumerate() {
            let i = i as u32;
            match &op.call {
                Call::Pop { got: Some(g), group, auto_ack, .. } => {
                    let pg = self.pgs.entry((g.part, *group)).or_default();
                    pg.pops.push(i);
                    for (o, _) in &g.msgs {
                        pg.min_delivered = Some(pg.min_delivered.map_or(*o, |m| m.min(*o)));
                        if *auto_ack {
                            // An auto-ack pop settles what it delivers, as it delivers it.
                            note(pg.settle.entry(*o).or_default(), op, i, Some(Sure::Answered), i);
                        }
                    }
                }
                Call::Ack { items } => {
                    let sure = (op.outcome == Outcome::Ok).then_some(Sure::Answered);
                    self.settle_items(h, items, op, i, sure, v);
                }
                Call::Txn { acks, .. } => {
                    let sure = self.txn_sure.get(&i).copied();
                    self.settle_items(h, acks, op, i, sure, v);
                }
                _ => {}
            }
        }
    }

    fn settle_items(&mut self, h: &History, items: &[AckItem], op: &Op, i: u32, sure: Option<Sure>, v: &mut Verdict) {
        if !op.maybe() {
            return;
        }
        for a in items {
            let Some((pop, o)) = self.resolve(h, a, op, v) else { continue };
            if !settles(a.status) {
                continue;
            }
            let (part, group) = pop_key(h, pop);
            let s = self.pgs.entry((part, group)).or_default().settle.entry(o).or_default();
            note(s, op, i, sure, pop);
        }
    }
}

fn note(s: &mut Settle, op: &Op, i: u32, sure: Option<Sure>, pop: u32) {
    if op.inv < s.maybe {
        s.maybe = op.inv;
        s.maybe_op = i;
    }
    if let Some(how) = sure {
        if op.comp < s.sure || s.sure_op == u32::MAX {
            s.sure = op.comp;
            s.sure_op = i;
            s.sure_how = how;
            s.sure_pop = pop;
        }
    }
}

/// (partition, group) of an ok pop.
pub fn pop_key(h: &History, pop: u32) -> (PartId, Sym) {
    match &h.ops[pop as usize].call {
        Call::Pop { got: Some(g), group, .. } => (g.part, *group),
        _ => unreachable!("an ok pop with messages"),
    }
}

fn may_store(h: &History, op: u32, k: u32) -> bool {
    let op = &h.ops[op as usize];
    match &op.call {
        Call::Push { statuses, .. } => op.maybe() && statuses[k as usize] != PushStatus::Duplicate,
        _ => op.maybe(),
    }
}

/// The items that may have stored a log entry, by its transactionId or its Kafka payload.
pub fn possible(h: &History, ix: &Ix, part: PartId, e: &Entry) -> Vec<ItemRef> {
    let mut w = if e.txid != NONE { ix.possible_writers(h, part, e.txid) } else { Vec::new() };
    if e.payload != NONE {
        w.extend(ix.possible_kafka_writers(h, part, e.payload));
    }
    w
}
