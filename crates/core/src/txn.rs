//! Transactions: acks under leases plus pushes, judged whole and written as
//! ONE entry (I2). Every check runs before the first effect is emitted, so a
//! rollback changes nothing; a lease that is not live fails the whole
//! transaction (I4). The pushes are judged by the push path's own check
//! (`Planner::admit_push`: names, maxSize net of this transaction's acks,
//! entry size) and the KV and timer operations by their endpoints' own
//! validation. Anything refused after the first effect is a broken plan,
//! which the runner never logs (see `plan`).

use crate::command::*;
use crate::kv::{KvOp, KvResult};
use crate::model::*;
use crate::plan::Planner;
use crate::timers::{TimerOp, TimerResult};
use std::collections::HashSet;

#[derive(Debug, Clone)]
pub struct TxnAck {
    /// Position in the flat results (every pushed item and every ack, in request order).
    pub index: usize,
    pub group: Option<String>,
    pub item: AckItem,
}

#[derive(Debug, Clone, Default)]
pub struct TxnRequest {
    pub acks: Vec<TxnAck>,
    /// `indexes` of each group are flat result positions.
    pub pushes: Vec<PushGroup>,
    pub required_leases: Vec<LeaseId>,
    /// KV ops; their results follow the flat operation results.
    pub kv: Vec<KvOp>,
    /// Timer ops; their results follow the KV results.
    pub timers: Vec<TimerOp>,
    pub flat_len: usize,
}

#[derive(Debug, Clone)]
pub enum TxnItem {
    Acked,
    Pushed { part: PartId, offset: u64, txid: String },
    Kv(KvResult),
    Timer(TimerResult),
}

#[derive(Debug, Clone)]
pub enum TxnOutcome {
    Committed(Vec<TxnItem>),
    RolledBack { reason: &'static str, failed_index: Option<usize>, message: String, kv: Option<KvResult> },
}

fn rollback(reason: &'static str, failed_index: Option<usize>, message: impl Into<String>) -> TxnOutcome {
    TxnOutcome::RolledBack { reason, failed_index, message: message.into(), kv: None }
}

impl Planner {
    pub fn transaction(&mut self, t: TxnRequest) -> Result<TxnOutcome, CoreError> {
        crate::kv::validate(&t.kv)?;
        crate::timers::validate(&t.timers)?;
        // First, and O(1): a wider transaction is refused before any planner time goes to it.
        self.limits.admit_txn_width(t.pushes.len())?;
        if let Some(r) = self.check_txn(&t) {
            return Ok(r);
        }
        // Before the first effect (the KV writes below): past the bound, nothing is planned.
        self.admit_timers(&t.timers)?;
        // KV preconditions are judged first: a lost one must leave no ack or push behind.
        let kv_results = match self.kv(&t.kv)? {
            Ok(r) => r,
            Err(rb) => {
                return Ok(TxnOutcome::RolledBack {
                    reason: "kv_precondition",
                    failed_index: Some(t.flat_len + rb.index),
                    message: "a required KV precondition did not hold".into(),
                    kv: Some(rb.result),
                });
            }
        };
        let mut items: Vec<Option<TxnItem>> = vec![None; t.flat_len];
        for a in &t.acks {
            let group = a.group.as_deref().unwrap_or(QUEUE_MODE);
            let out = self.ack(Some(group), std::slice::from_ref(&a.item)).pop().expect("one result per item");
            // Checked above against the same state; a failure now is a broken planner.
            out.map_err(|e| CoreError::unavailable(format!("transaction ack failed after its check: {e}")))?;
            items[a.index] = Some(TxnItem::Acked);
        }
        for r in self.push(t.pushes) {
            match r.status {
                PushStatus::Queued { part, offset } => {
                    items[r.index] = Some(TxnItem::Pushed { part, offset, txid: r.txid });
                }
                PushStatus::Duplicate { .. } | PushStatus::Failed(_) => {
                    return Err(CoreError::unavailable("transaction push failed after its check"));
                }
            }
        }
        let timer_results = self.timers(&t.timers)?;
        let mut out: Vec<TxnItem> = items.into_iter().map(|i| i.unwrap_or(TxnItem::Acked)).collect();
        out.extend(kv_results.into_iter().map(TxnItem::Kv));
        out.extend(timer_results.into_iter().map(TxnItem::Timer));
        Ok(TxnOutcome::Committed(out))
    }

    /// Judge the whole transaction against the current state without changing it.
    fn check_txn(&self, t: &TxnRequest) -> Option<TxnOutcome> {
        let st = &self.state;
        let now = self.now();
        let mut settled = HashSet::new();
        for a in &t.acks {
            let group = a.group.as_deref().unwrap_or(QUEUE_MODE);
            let reject = |m: &str| Some(rollback("rejected_ack", Some(a.index), m));
            let Some(gid) = st.group_ids.get(group) else {
                return reject("the consumer group has no leases");
            };
            let Some(p) = st.parts.get(&a.item.part) else {
                return reject("no partition with that partitionId");
            };
            let Some(l) = p.cursors.get(gid).and_then(|c| c.lease.as_ref()) else {
                return reject("no live lease for this group on the partition");
            };
            if a.item.lease.is_none() {
                return reject("an ack names the leaseId its message was delivered with");
            }
            if l.expires <= now || a.item.lease.is_some_and(|x| x != l.id) {
                return reject("the lease named is expired, released or not this partition's");
            }
            let pos = match (a.item.offset, &a.item.txid) {
                (Some(o), _) => l.position(o),
                (None, Some(tx)) => {
                    let h = st.txid_hash(tx);
                    p.lease_position_of(l, h)
                }
                (None, None) => None,
            };
            let Some(pos) = pos else {
                return reject("that message is not in the group's live lease");
            };
            if l.settled[pos] || !settled.insert((a.item.part, *gid, l.offsets[pos])) {
                return reject("that message was already acknowledged");
            }
            if matches!(a.item.status, AckStatus::Failed | AckStatus::Retry) {
                return Some(rollback("bad_request", Some(a.index), "a transaction acks with completed or dlq"));
            }
        }
        for l in &t.required_leases {
            let live = st
                .leases
                .get(l)
                .and_then(|(p, g)| st.parts.get(p)?.cursors.get(g)?.lease.as_ref())
                .is_some_and(|x| x.id == *l && x.expires > now);
            if !live {
                return Some(rollback("rejected_ack", None, format!("required lease {} is not live", lease_uuid(*l))));
            }
        }
        // The push path's own check, for the pushes together: each queue's depth as it will be
        // when they are applied, after this transaction's acks settled what they settle there.
        let total: usize = t.pushes.iter().map(|g| g.batch.len() + 16 * g.records.len()).sum();
        // A transaction names few queues: a list, not a map (no allocation per transaction
        // for the common one-queue case beyond the list's first push).
        let mut planned: Vec<(&str, i64)> = Vec::new();
        fn add<'a>(planned: &mut Vec<(&'a str, i64)>, q: &'a str, n: i64) {
            match planned.iter_mut().find(|(name, _)| *name == q) {
                Some((_, v)) => *v += n,
                None => planned.push((q, n)),
            }
        }
        for a in &t.acks {
            if a.group.as_deref().unwrap_or(QUEUE_MODE) == QUEUE_MODE {
                if let Some(q) = st.parts.get(&a.item.part).and_then(|p| st.queues.get(&p.queue)) {
                    add(&mut planned, q.name.as_str(), -1);
                }
            }
        }
        for g in &t.pushes {
            let pending = planned.iter().find(|(name, _)| *name == g.queue).map_or(0, |(_, v)| *v);
            if let Err(e) = self.admit_push(g, g.records.len() as u64, pending, total) {
                let reason = match e.code {
                    "invalid_queue" | "invalid_partition" => "bad_request",
                    code => code,
                };
                return Some(rollback(reason, g.indexes.first().copied(), e.message));
            }
            add(&mut planned, g.queue.as_str(), g.records.len() as i64);
        }
        if let Err(e) = self.admit_new(t.pushes.iter().map(|g| (g.queue.as_str(), g.partition.as_str()))) {
            return Some(rollback(e.code, t.pushes.first().and_then(|g| g.indexes.first().copied()), e.message));
        }
        let mut seen = HashSet::new();
        for g in &t.pushes {
            let window = st
                .queue(&g.queue)
                .map(|q| q.options.dedup_window_seconds)
                .unwrap_or(QueueOptions::default().dedup_window_seconds);
            let part = st.partition(&g.queue, &g.partition);
            for (i, r) in g.indexes.iter().zip(&g.records) {
                if !r.client_txid || window == 0 {
                    continue;
                }
                let h = st.txid_key(&r.txid);
                let stored = part.is_some_and(|p| p.dedup.get(&h).is_some_and(|exp| *exp > now));
                if stored || !seen.insert((g.queue.as_str(), g.partition.as_str(), h)) {
                    return Some(rollback(
                        "duplicate",
                        Some(*i),
                        format!("transactionId {} was already pushed", r.txid),
                    ));
                }
            }
        }
        None
    }
}
