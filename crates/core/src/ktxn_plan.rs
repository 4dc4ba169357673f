//! Planning Kafka transactions (D48): InitProducerId with a transactional id,
//! AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn and the abort of a
//! transaction that outlived its timeout. Every request is checked whole before its first
//! effect (I2); an EndTxn — its markers, the offsets committed inside the transaction and
//! the end of the transaction — is one entry. The Kafka crate owns the protocol.

use crate::command::CoreError;
use crate::entry::Effect;
use crate::ktxn::{MARKER_TXID, MAX_TXN_TIMEOUT_MS, TXN_ID_EXPIRATION};
use crate::model::*;
use crate::plan::{Planned, Planner};
use crate::provision::{DIRS_SLACK, DIRS_WAIT_MAX};

/// Groups one transaction may commit offsets for.
pub const MAX_TXN_GROUPS: usize = 1000;

/// Why a transaction request is refused, in Kafka's terms (the Kafka crate maps each to
/// its error code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnError {
    InvalidTimeout,
    /// The transactional id has no producer (InitProducerId first).
    UnknownId,
    /// The producer id is not the transactional id's.
    ProducerIdMismatch,
    /// A newer epoch owns the id: this producer is a zombie.
    Fenced,
    InvalidState(String),
    UnknownPartition,
    TooMany(String),
}

/// One transaction request.
#[derive(Debug, Clone)]
pub enum TxnOp {
    Init {
        tid: String,
        timeout_ms: i32,
        producer: i64,
        epoch: i16,
    },
    AddPartitions {
        tid: String,
        producer: i64,
        epoch: i16,
        parts: Vec<(String, String)>,
    },
    AddOffsets {
        tid: String,
        producer: i64,
        epoch: i16,
        group: String,
    },
    /// `implicit` (transactions v2, TxnOffsetCommit v5): the group joins the transaction
    /// here, without AddOffsetsToTxn.
    Offsets {
        tid: String,
        producer: i64,
        epoch: i16,
        group: String,
        offsets: Vec<(String, String, u64)>,
        implicit: bool,
    },
    /// `bump` (transactions v2, EndTxn v5): the end also moves the id to its next epoch,
    /// answered as `Producer`, which the client uses for its next transaction.
    End {
        tid: String,
        producer: i64,
        epoch: i16,
        commit: bool,
        bump: bool,
    },
    /// Abort every transaction past its timeout; forget ids idle past their expiration.
    Expire,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnReply {
    Producer {
        producer: i64,
        epoch: i16,
    },
    Done,
    /// How many transactions were aborted on timeout.
    Expired(usize),
}

impl Planner {
    pub fn kafka_txn(&mut self, op: TxnOp) -> Planned<Result<TxnReply, TxnError>> {
        match op {
            TxnOp::Init { tid, timeout_ms, producer, epoch } => self.txn_init(tid, timeout_ms, producer, epoch),
            TxnOp::AddPartitions { tid, producer, epoch, parts } => {
                if let Err(e) = self.owner(&tid, producer, epoch) {
                    return Ok(Err(e));
                }
                let mut ids = Vec::with_capacity(parts.len());
                for (topic, name) in &parts {
                    let Some(p) = self.state.partition(topic, name) else {
                        return Ok(Err(TxnError::UnknownPartition));
                    };
                    let t = &self.state.ktxn.ids[&tid];
                    if !t.parts.contains(&p.id) && p.txns.aborted.len() >= self.limits.max_aborted_txns {
                        return Ok(Err(TxnError::TooMany(format!(
                            "{topic}/{name} holds {} aborted transactions (max aborted transactions per partition) \
                             until retention drops them",
                            p.txns.aborted.len()
                        ))));
                    }
                    ids.push(p.id);
                }
                // A partition named twice (or already in the transaction) is added once.
                let t = &self.state.ktxn.ids[&tid];
                ids.sort_unstable();
                ids.dedup();
                ids.retain(|p| !t.parts.contains(p));
                if ids.is_empty() && t.open_since.is_some() {
                    return Ok(Ok(TxnReply::Done));
                }
                if let Some(why) = t.too_wide(ids.len(), self.limits.max_txn_partitions) {
                    return Ok(Err(TxnError::TooMany(why)));
                }
                self.emit_pub(Effect::KafkaTxnAdd { tid, parts: ids, groups: Vec::new() })?;
                Ok(Ok(TxnReply::Done))
            }
            TxnOp::AddOffsets { tid, producer, epoch, group } => {
                if let Err(e) = self.owner(&tid, producer, epoch) {
                    return Ok(Err(e));
                }
                if group.is_empty() || group == QUEUE_MODE || group.len() > MAX_NAME_LEN {
                    return Err(CoreError::bad(
                        "invalid_group",
                        format!("{group:?} is not a group a transaction may commit"),
                    ));
                }
                let t = &self.state.ktxn.ids[&tid];
                if !t.groups.contains(&group) && t.groups.len() >= MAX_TXN_GROUPS {
                    return Ok(Err(TxnError::TooMany(format!(
                        "a transaction commits for at most {MAX_TXN_GROUPS} groups"
                    ))));
                }
                self.emit_pub(Effect::KafkaTxnAdd { tid, parts: Vec::new(), groups: vec![group] })?;
                Ok(Ok(TxnReply::Done))
            }
            TxnOp::Offsets { tid, producer, epoch, group, offsets, implicit } => {
                if let Err(e) = self.owner(&tid, producer, epoch) {
                    return Ok(Err(e));
                }
                let t = &self.state.ktxn.ids[&tid];
                if implicit && !(t.open_since.is_some() && t.groups.contains(&group)) {
                    if group.is_empty() || group == QUEUE_MODE || group.len() > MAX_NAME_LEN {
                        return Err(CoreError::bad(
                            "invalid_group",
                            format!("{group:?} is not a group a transaction may commit"),
                        ));
                    }
                    if t.groups.len() >= MAX_TXN_GROUPS {
                        return Ok(Err(TxnError::TooMany(format!(
                            "a transaction commits for at most {MAX_TXN_GROUPS} groups"
                        ))));
                    }
                    // Checked before the group joins: every partition exists.
                    if offsets.iter().any(|(topic, name, _)| self.state.partition(topic, name).is_none()) {
                        return Ok(Err(TxnError::UnknownPartition));
                    }
                    self.emit_pub(Effect::KafkaTxnAdd {
                        tid: tid.clone(),
                        parts: Vec::new(),
                        groups: vec![group.clone()],
                    })?;
                }
                let t = &self.state.ktxn.ids[&tid];
                if t.open_since.is_none() || !t.groups.contains(&group) {
                    return Ok(Err(TxnError::InvalidState(format!(
                        "group {group} was not added to the transaction (AddOffsetsToTxn first)"
                    ))));
                }
                let mut v = Vec::with_capacity(offsets.len());
                for (topic, name, off) in offsets {
                    let Some(p) = self.state.partition(&topic, &name) else {
                        return Ok(Err(TxnError::UnknownPartition));
                    };
                    v.push((group.clone(), p.id, off));
                }
                self.emit_pub(Effect::KafkaTxnOffsets { tid, offsets: v })?;
                Ok(Ok(TxnReply::Done))
            }
            TxnOp::End { tid, producer, epoch, commit, bump } => {
                let Some(t) = self.state.ktxn.ids.get(&tid) else { return Ok(Err(TxnError::UnknownId)) };
                let answer = |t: &crate::ktxn::TxnId| {
                    if bump {
                        TxnReply::Producer { producer: t.producer, epoch: t.epoch }
                    } else {
                        TxnReply::Done
                    }
                };
                // A retried EndTxn whose first try ended it is answered as it was; under
                // v2 the first try moved the epoch on, so the retry names the one before.
                let retried = t.open_since.is_none()
                    && t.last_end == Some(commit)
                    && t.last_end_by == Some((producer, epoch))
                    && (t.producer, t.epoch) != (producer, epoch);
                if retried {
                    return Ok(Ok(answer(t)));
                }
                if let Err(e) = self.owner(&tid, producer, epoch) {
                    return Ok(Err(e));
                }
                let t = &self.state.ktxn.ids[&tid];
                if t.open_since.is_none() {
                    return Ok(match t.last_end {
                        Some(c) if c == commit && !bump => Ok(TxnReply::Done),
                        _ => Err(TxnError::InvalidState(format!(
                            "no transaction is open for {tid} to {}",
                            if commit { "commit" } else { "abort" }
                        ))),
                    });
                }
                if bump {
                    let (producer, epoch) = self.next_epoch(&tid);
                    let timeout_ms = t.timeout_ms;
                    self.rebirth(&tid, producer, epoch, timeout_ms, Some(commit))?;
                } else {
                    self.end_txn(&tid, commit, (producer, epoch))?;
                }
                Ok(Ok(answer(&self.state.ktxn.ids[&tid])))
            }
            TxnOp::Expire => self.txn_expire().map(Ok),
        }
    }

    /// Checks that `producer` at `epoch` owns `tid` now.
    fn owner(&self, tid: &str, producer: i64, epoch: i16) -> Result<(), TxnError> {
        let t = self.state.ktxn.ids.get(tid).ok_or(TxnError::UnknownId)?;
        if t.producer != producer {
            return Err(TxnError::ProducerIdMismatch);
        }
        if t.epoch != epoch {
            return Err(TxnError::Fenced);
        }
        Ok(())
    }

    fn txn_init(
        &mut self,
        tid: String,
        timeout_ms: i32,
        producer: i64,
        epoch: i16,
    ) -> Planned<Result<TxnReply, TxnError>> {
        if !(1..=MAX_TXN_TIMEOUT_MS).contains(&timeout_ms) {
            return Ok(Err(TxnError::InvalidTimeout));
        }
        let (producer, epoch, open) = match self.state.ktxn.ids.get(&tid) {
            None => {
                if self.state.ktxn.ids.len() >= self.limits.max_kafka_txn_ids {
                    return Ok(Err(TxnError::TooMany(format!(
                        "{} transactional ids exist (max transactional ids)",
                        self.state.ktxn.ids.len()
                    ))));
                }
                (self.state.next_producer, 0, false)
            }
            Some(t) => {
                // KIP-360: a producer that names itself must still own the id.
                if producer >= 0 && (producer != t.producer || epoch != t.epoch) {
                    return Ok(Err(if producer != t.producer {
                        TxnError::ProducerIdMismatch
                    } else {
                        TxnError::Fenced
                    }));
                }
                let (p, e) = self.next_epoch(&tid);
                (p, e, t.open_since.is_some())
            }
        };
        self.rebirth(&tid, producer, epoch, timeout_ms, open.then_some(false))?;
        Ok(Ok(TxnReply::Producer { producer, epoch }))
    }

    /// The id's next (producer, epoch): the same producer at the next epoch, or a new
    /// producer once the epoch is spent.
    fn next_epoch(&self, tid: &str) -> (i64, i16) {
        let t = &self.state.ktxn.ids[tid];
        match t.epoch.checked_add(1).filter(|e| *e < i16::MAX) {
            Some(e) => (t.producer, e),
            None => (self.state.next_producer, 0),
        }
    }

    /// `tid` moves to `producer` at `epoch`, ending its open transaction if `end` says how
    /// (Some(true) commit, Some(false) abort). With the same producer the new epoch comes
    /// first, so the markers carry it and fence the old one; a new producer (the epoch was
    /// spent) comes after the end, whose markers must name the producer that wrote the
    /// records.
    fn rebirth(
        &mut self,
        tid: &str,
        producer: i64,
        epoch: i16,
        timeout_ms: i32,
        end: Option<bool>,
    ) -> Result<(), CoreError> {
        let same = self.state.ktxn.ids.get(tid).is_some_and(|t| t.producer == producer);
        let by = self.state.ktxn.ids.get(tid).map_or((producer, epoch), |t| (t.producer, t.epoch));
        let init = Effect::KafkaTxnInit { tid: tid.to_string(), producer, epoch, timeout_ms };
        if same || end.is_none() {
            self.emit_pub(init.clone())?;
        }
        if let Some(commit) = end {
            self.end_txn(tid, commit, by)?;
        }
        if !same && end.is_some() {
            self.emit_pub(init)?;
        }
        Ok(())
    }

    /// Ends `tid`'s open transaction: a control record in each of its partitions, its
    /// offsets committed (on commit), then the end, all in the entry being planned.
    /// `by` is the producer and epoch the client wrote it with, for a retried EndTxn.
    fn end_txn(&mut self, tid: &str, commit: bool, by: (i64, i16)) -> Result<(), CoreError> {
        let t = self.state.ktxn.ids[tid].clone();
        // Checked before the first effect: every partition still exists.
        let parts: Vec<PartId> = t.parts.iter().copied().filter(|p| self.state.parts.contains_key(p)).collect();
        for part in &parts {
            self.state.prepare_append(*part, self.now())?;
        }
        let ts_ms = (self.now() / 1000) as i64;
        for part in parts {
            let base = self.state.parts[&part].end;
            let mut batch = baton_wire::control_batch(t.producer, t.epoch, commit, ts_ms);
            baton_wire::set_base_offset(&mut batch, base);
            self.emit_pub(Effect::Append {
                part,
                count: 1,
                txids: vec![MARKER_TXID],
                dedup: Vec::new(),
                batch: batch.into(),
            })?;
            self.emit_pub(Effect::KafkaTxnMark { part, producer: t.producer, epoch: t.epoch, commit, marker: base })?;
            self.pushed_queues.entry(self.state.parts[&part].queue).or_default().insert(part);
        }
        if commit {
            for (group, offsets) in &t.offsets {
                let gid = self.ensure_group_pub(group)?;
                for (part, offset) in offsets {
                    if self.state.parts.contains_key(part) {
                        self.emit_pub(Effect::Commit { part: *part, group: gid, offset: *offset })?;
                    }
                }
            }
        }
        self.emit_pub(Effect::KafkaTxnEnd { tid: tid.to_string(), commit, by })
    }

    fn txn_expire(&mut self) -> Planned<TxnReply> {
        let now = self.now();
        // A transaction whose abort would make more new partitions' directories than are
        // ready waits for them (D81, as an EndTxn does in runner/txn_wait.rs), up to
        // DIRS_WAIT_MAX past its timeout; then it is aborted even so.
        let prov = self.state.storage.provisioner.as_deref();
        let due: Vec<(String, i16)> = self
            .state
            .ktxn
            .ids
            .iter()
            .filter_map(|(k, t)| Some((k, t, t.open_since?.saturating_add(t.timeout_ms.max(0) as u64 * 1000))))
            .filter(|(k, _, due_at)| {
                *due_at <= now
                    && !(now.saturating_sub(*due_at) < DIRS_WAIT_MAX.as_micros() as u64
                        && prov.is_some_and(|p| p.short_of(self.state.txn_new_directories(k), DIRS_SLACK)))
            })
            .map(|(k, t, _)| (k.clone(), t.epoch))
            .collect();
        let idle: Vec<String> = self
            .state
            .ktxn
            .ids
            .iter()
            .filter(|(_, t)| t.open_since.is_none() && t.last_used.saturating_add(TXN_ID_EXPIRATION) <= now)
            .map(|(k, _)| k.clone())
            .collect();
        let n = due.len();
        for (tid, epoch) in due {
            let t = &self.state.ktxn.ids[&tid];
            // As Kafka does, the abort bumps the epoch: the producer that let its
            // transaction time out is fenced and must initialise again.
            let (producer, epoch) = match epoch.checked_add(1).filter(|e| *e < i16::MAX) {
                Some(e) => (t.producer, e),
                None => (self.state.next_producer, 0),
            };
            let timeout_ms = t.timeout_ms;
            self.rebirth(&tid, producer, epoch, timeout_ms, Some(false))?;
        }
        for tid in idle {
            self.emit_pub(Effect::KafkaTxnForget { tid })?;
        }
        Ok(TxnReply::Expired(n))
    }
}
