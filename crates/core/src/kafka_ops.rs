//! Planning for the Kafka front door: appending a client's record batch as
//! it came (offsets assigned, CRC checked), the idempotent producer's sequence
//! checks, topic creation and committed offsets. The Kafka crate owns the
//! protocol; this module owns what those requests do to the state.

use crate::command::*;
use crate::entry::Effect;
use crate::model::*;
use crate::plan::Planner;
use baton_wire::BatchHeader;
use std::collections::HashMap;

/// Kafka's own error codes for produce outcomes the state decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProduceOutcome {
    Appended {
        base_offset: u64,
    },
    /// A retry of a batch already stored: answer with its original offset.
    Duplicate {
        base_offset: u64,
    },
    OutOfOrderSequence,
    InvalidProducerEpoch,
    /// The batch names a producer id InitProducerId never gave out.
    UnknownProducerId(i64),
    CorruptMessage(String),
    UnknownTopicOrPartition,
    /// A transactional batch outside its producer's open transaction on this partition, or
    /// one whose producer is not the request's transactional id (D48).
    InvalidTxnState(String),
}

#[derive(Debug, Clone)]
pub struct ProduceRequest {
    pub topic: String,
    pub partition: String,
    /// Whole v2 batches whose record count the Kafka door has verified
    /// against the records present (compressed ones too: baton-kafka's
    /// records.rs). Planning does work per record, so it must never be
    /// handed a count that is only the client's claim.
    pub batches: Vec<Vec<u8>>,
    /// Create the topic's partition if missing (auto-create on).
    pub create: bool,
    /// Kafka's producer.id.expiration.ms, in µs: a producer that has not
    /// written to the partition for this long has its state dropped.
    pub producer_expiry: Micros,
    /// The request's transactional id, which every transactional batch's producer must own.
    pub txn_id: Option<String>,
    /// Transactions v2 (Produce v12, KIP-890): a transactional batch adds its partition to
    /// its producer's transaction (opening it) instead of needing AddPartitionsToTxn first.
    pub implicit_txn: bool,
}

/// Kafka's producer.id.expiration.ms default: one day.
pub const DEFAULT_PRODUCER_EXPIRY: Micros = 86_400_000_000;

impl ProduceRequest {
    /// A produce that stores nothing. Like every request that changes
    /// nothing, it is answered only once every frame planned before it is
    /// durable (D2), so a reader of the planned state (a Query) that sends
    /// one after its read and waits for it never shows what could still
    /// vanish. On a latched node it is refused, as every write is.
    pub fn barrier() -> ProduceRequest {
        ProduceRequest {
            topic: String::new(),
            partition: String::new(),
            batches: Vec::new(),
            create: false,
            producer_expiry: DEFAULT_PRODUCER_EXPIRY,
            txn_id: None,
            implicit_txn: false,
        }
    }
}

/// Producer fields of a v2 batch header.
fn producer_of(b: &[u8]) -> (i64, i16, i32) {
    let pid = i64::from_be_bytes(b[43..51].try_into().expect("header checked"));
    let epoch = i16::from_be_bytes(b[51..53].try_into().expect("header checked"));
    let seq = i32::from_be_bytes(b[53..57].try_into().expect("header checked"));
    (pid, epoch, seq)
}

/// `seq` moved on by `n`, as Kafka counts: after i32::MAX comes 0.
pub fn next_seq(seq: i32, n: u32) -> i32 {
    ((seq as i64 + n as i64) % (i32::MAX as i64 + 1)) as i32
}

impl Planner {
    pub fn create_topic(&mut self, topic: &str, partitions: u32) -> Result<bool, CoreError> {
        valid_name(topic).map_err(|m| CoreError::bad("invalid_topic", m))?;
        let existed = self.state.queue_ids.contains_key(topic);
        // Bounded before anything is planned: at least `partitions - have` are new, and that
        // lower bound keeps the exact count below from walking a hostile count (a produce to
        // partition 4,000,000,000 asks for that many).
        let have = self.state.queue(topic).map_or(0, |q| q.parts.len());
        let total = self.state.parts.len();
        self.limits.admit_queues(self.state.queues.len(), usize::from(!existed))?;
        self.limits.admit_partitions(total, (partitions as usize).saturating_sub(have))?;
        let missing = match self.state.queue(topic) {
            Some(q) => (0..partitions).filter(|i| !q.part_by_name.contains_key(&i.to_string())).count(),
            None => partitions as usize,
        };
        self.limits.admit_partitions(total, missing)?;
        if !existed {
            self.emit_pub(Effect::Configure { queue: topic.to_string(), options: QueueOptions::default() })?;
        }
        let q = self.state.queue_ids[topic];
        let have = self.state.queues[&q].parts.len() as u32;
        for i in 0..partitions {
            if !self.state.queues[&q].part_by_name.contains_key(&i.to_string()) {
                self.emit_pub(Effect::CreatePartition { queue: q, name: i.to_string() })?;
            }
        }
        Ok(!existed || have < partitions)
    }

    pub fn produce(&mut self, r: ProduceRequest) -> Result<ProduceOutcome, CoreError> {
        let mut parsed = Vec::with_capacity(r.batches.len());
        for b in &r.batches {
            match BatchHeader::parse(b) {
                Ok(h) if h.length == b.len() && h.record_count > 0 => parsed.push(h),
                Ok(_) => return Ok(ProduceOutcome::CorruptMessage("batch length or record count is wrong".into())),
                Err(e) => return Ok(ProduceOutcome::CorruptMessage(e.to_string())),
            }
        }
        let Some(part) = self.state.partition(&r.topic, &r.partition).map(|p| p.id) else {
            if !r.create {
                return Ok(ProduceOutcome::UnknownTopicOrPartition);
            }
            let n = r
                .partition
                .parse::<u32>()
                .map_err(|_| CoreError::bad("invalid_partition", "Kafka partitions are numbers"))?;
            self.create_topic(&r.topic, n.saturating_add(1))?;
            return self.produce(r);
        };
        // Every batch is decided before any effect is emitted: a partition's
        // batches in one ProduceRequest are stored all or none, so a batch
        // refused late must not leave the ones before it behind.
        let mut planned: HashMap<i64, (i16, i32)> = HashMap::new();
        // The transactional id whose transaction this partition joins here (v2).
        let mut joins: Option<String> = None;
        let mut seqs = Vec::with_capacity(parsed.len());
        for (b, h) in r.batches.iter().zip(&parsed) {
            let (pid, epoch, seq) = producer_of(b);
            let count = h.record_count;
            if pid < 0 || seq < 0 {
                seqs.push(None);
                continue;
            }
            if pid >= self.state.next_producer {
                return Ok(ProduceOutcome::UnknownProducerId(pid));
            }
            match self.txn_batch_refused(b, pid, epoch, part, r.txn_id.as_deref(), r.implicit_txn) {
                Err(refused) => return Ok(refused),
                Ok(join) => joins = joins.or(join),
            }
            let last_seq = next_seq(seq, count - 1);
            let p = &self.state.parts[&part];
            match (planned.get(&pid), p.producers.get(&pid)) {
                // A later batch of a producer this request already moved.
                (Some(&(e, last)), _) => {
                    if epoch < e {
                        return Ok(ProduceOutcome::InvalidProducerEpoch);
                    }
                    if seq != if epoch == e { next_seq(last, 1) } else { 0 } {
                        return Ok(ProduceOutcome::OutOfOrderSequence);
                    }
                }
                (None, Some(st)) => {
                    if epoch < st.epoch {
                        return Ok(ProduceOutcome::InvalidProducerEpoch);
                    }
                    if epoch == st.epoch {
                        // A retry: Kafka answers the whole append as the duplicate.
                        if let Some((_, _, off)) = st.recent.iter().find(|(f, l, _)| *f == seq && *l == last_seq) {
                            return Ok(ProduceOutcome::Duplicate { base_offset: *off });
                        }
                        let expected = st.recent.back().map(|(_, l, _)| next_seq(*l, 1)).unwrap_or(0);
                        if seq != expected {
                            return Ok(ProduceOutcome::OutOfOrderSequence);
                        }
                    } else if seq != 0 {
                        return Ok(ProduceOutcome::OutOfOrderSequence);
                    }
                }
                (None, None) => {}
            }
            planned.insert(pid, (epoch, last_seq));
            seqs.push(Some((pid, epoch, seq, last_seq)));
        }
        // Before anything is emitted: see `State::prepare_append`.
        self.state.prepare_append(part, self.now())?;
        let entering = planned.keys().any(|pid| !self.state.parts[&part].producers.contains_key(pid));
        if let Some(tid) = joins {
            self.emit_pub(Effect::KafkaTxnAdd { tid, parts: vec![part], groups: Vec::new() })?;
        }
        let mut first_base = None;
        for ((mut b, h), seq) in r.batches.into_iter().zip(parsed).zip(seqs) {
            let count = h.record_count;
            let p = &self.state.parts[&part];
            let base = p.end;
            baton_wire::set_base_offset(&mut b, base);
            let name = p.name.clone();
            let txids = (0..count as u64).map(|i| self.state.txid_hash(&format!("{name}-{}", base + i))).collect();
            let txn = baton_wire::is_transactional(&b);
            self.emit_pub(Effect::Append { part, count, txids, dedup: Vec::new(), batch: b.into() })?;
            if let Some((producer, epoch, first_seq, last_seq)) = seq {
                self.emit_pub(Effect::ProducerSeq { part, producer, epoch, first_seq, last_seq, base_offset: base })?;
                if txn {
                    let end = base + count as u64;
                    self.emit_pub(Effect::KafkaTxnWrite { part, producer, base, end })?;
                }
            }
            self.pushed_queues.entry(self.state.parts[&part].queue).or_default().insert(part);
            first_base.get_or_insert(base);
        }
        // Producer state is swept when a producer enters the partition, the
        // only time the map grows, so it holds at most the producers that
        // wrote in the last `producer_expiry`; the cost is paid by growth.
        if entering {
            self.expire_producers(part, &planned, r.producer_expiry)?;
        }
        Ok(ProduceOutcome::Appended { base_offset: first_base.unwrap_or(0) })
    }

    /// Why a batch may not be written as its transaction stands (D48), if it may not. A
    /// transactional batch needs its producer's transaction open on this partition at the
    /// id's current epoch; a transactional producer writes no other kind of batch. Under
    /// transactions v2 (`implicit`) the batch itself adds the partition: `Ok(Some(tid))`
    /// names the id whose transaction the partition joins.
    fn txn_batch_refused(
        &self,
        b: &[u8],
        pid: i64,
        epoch: i16,
        part: PartId,
        txn_id: Option<&str>,
        implicit: bool,
    ) -> Result<Option<String>, ProduceOutcome> {
        let owner = self.state.ktxn.by_producer.get(&pid);
        if !baton_wire::is_transactional(b) {
            return match owner {
                Some(t) => Err(ProduceOutcome::InvalidTxnState(format!(
                    "producer {pid} is transactional id {t}'s: its batches must be transactional"
                ))),
                None => Ok(None),
            };
        }
        let Some(tid) = owner else {
            return Err(ProduceOutcome::InvalidTxnState(format!("producer {pid} has no transactional id")));
        };
        if txn_id != Some(tid.as_str()) {
            return Err(ProduceOutcome::InvalidTxnState(format!("producer {pid} is transactional id {tid}'s")));
        }
        let t = &self.state.ktxn.ids[tid];
        if epoch != t.epoch {
            return Err(ProduceOutcome::InvalidProducerEpoch);
        }
        if t.open_since.is_some() && t.parts.contains(&part) {
            return Ok(None);
        }
        if !implicit {
            return Err(ProduceOutcome::InvalidTxnState(format!(
                "the partition was not added to {tid}'s transaction (AddPartitionsToTxn first)"
            )));
        }
        if let Some(why) = t.too_wide(1, self.limits.max_txn_partitions) {
            return Err(ProduceOutcome::InvalidTxnState(why));
        }
        let held = self.state.parts[&part].txns.aborted.len();
        if held >= self.limits.max_aborted_txns {
            return Err(ProduceOutcome::InvalidTxnState(format!(
                "the partition holds {held} aborted transactions (max aborted transactions per partition) until retention \
                 drops them"
            )));
        }
        Ok(Some(tid.clone()))
    }

    /// Drop the state of the partition's producers idle for `expiry`: their
    /// last batch was written that long ago, or is no longer stored. Those
    /// of the request being planned are kept.
    fn expire_producers(
        &mut self,
        part: PartId,
        keep: &HashMap<i64, (i16, i32)>,
        expiry: Micros,
    ) -> Result<(), CoreError> {
        let now = self.now();
        let p = &self.state.parts[&part];
        let idle: Vec<i64> = p
            .producers
            .iter()
            .filter(|(id, st)| {
                let last = st.recent.back().and_then(|(_, _, off)| p.ts_of(*off));
                !keep.contains_key(id) && last.is_none_or(|t| t.saturating_add(expiry) <= now)
            })
            .map(|(id, _)| *id)
            .collect();
        if !idle.is_empty() {
            self.emit_pub(Effect::ExpireProducers { part, producers: idle })?;
        }
        Ok(())
    }

    pub fn init_producer(&mut self) -> Result<i64, CoreError> {
        let id = self.state.next_producer;
        self.emit_pub(Effect::AllocProducer { id })?;
        Ok(id)
    }

    /// Kafka DeleteRecords: every offset of `partition` below `offset` (the high
    /// watermark when `None`) is dropped, as retention drops them; answers the new log start.
    pub fn delete_records(&mut self, topic: &str, partition: &str, offset: Option<u64>) -> Result<u64, CoreError> {
        let p = self.state.partition(topic, partition).ok_or_else(|| {
            CoreError::not_found("partition_not_found", format!("{topic}/{partition} does not exist"))
        })?;
        let to = offset.unwrap_or(p.end);
        if to > p.end {
            return Err(CoreError::bad(
                "offset_out_of_range",
                format!("offset {to} is past the end of {topic}/{partition} ({})", p.end),
            ));
        }
        let (part, start) = (p.id, p.start);
        if to > start {
            self.emit_pub(Effect::Trim { part, start: to })?;
        }
        Ok(to.max(start))
    }

    /// Kafka OffsetDelete: the group forgets its position on each named partition.
    pub fn delete_offsets(&mut self, group: &str, topic: &str, partitions: &[String]) -> Vec<Result<(), CoreError>> {
        let gid = self.state.group_ids.get(group).copied();
        partitions
            .iter()
            .map(|name| {
                let part = self.state.partition(topic, name).map(|p| p.id).ok_or_else(|| {
                    CoreError::not_found("partition_not_found", format!("{topic}/{name} does not exist"))
                })?;
                match gid {
                    Some(g) if self.state.parts[&part].cursors.contains_key(&g) => {
                        self.emit_pub(Effect::DropCursor { part, group: g })
                    }
                    _ => Ok(()),
                }
            })
            .collect()
    }

    /// Kafka OffsetCommit: the group's next offset per partition of a topic.
    pub fn commit_offsets(
        &mut self,
        group: &str,
        topic: &str,
        offsets: &[(String, u64)],
    ) -> Vec<Result<(), CoreError>> {
        let gid = match self.ensure_group_pub(group) {
            Ok(g) => g,
            Err(e) => return offsets.iter().map(|_| Err(e.clone())).collect(),
        };
        offsets
            .iter()
            .map(|(name, off)| {
                let part = self.state.partition(topic, name).map(|p| p.id).ok_or_else(|| {
                    CoreError::not_found("partition_not_found", format!("{topic}/{name} does not exist"))
                })?;
                self.emit_pub(Effect::Commit { part, group: gid, offset: *off })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::next_seq;

    #[test]
    fn sequences_wrap_to_zero_after_i32_max() {
        assert_eq!(next_seq(0, 4), 4);
        assert_eq!(next_seq(i32::MAX, 1), 0);
        assert_eq!(next_seq(i32::MAX - 1, 3), 1);
        assert_eq!(next_seq(i32::MAX, 0), i32::MAX);
    }
}
