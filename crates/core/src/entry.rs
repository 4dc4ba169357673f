//! Log entries: the effects the planner decided, which every replica applies
//! in order. An entry carries everything apply needs (offsets, lease ids,
//! times), so apply never consults a clock or a random source (I1). One entry
//! is one request and the unit of atomicity (I2).

use crate::model::{AckStatus, GroupId, LeaseId, Micros, PartId, QueueId, QueueOptions};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    /// State-machine time of this entry (I5).
    pub ts: Micros,
    pub effects: Vec<Effect>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub enum Effect {
    /// Create a queue or replace its options.
    Configure {
        queue: String,
        options: QueueOptions,
    },
    CreatePartition {
        queue: QueueId,
        name: String,
    },
    /// Group names are interned: every cursor names its group by id.
    CreateGroup {
        name: String,
        from_ts: Option<Micros>,
    },
    /// Append a RecordBatch v2 (base offset already patched) at the partition end.
    Append {
        part: PartId,
        count: u32,
        txids: Vec<u64>,
        /// Full keys (D21) of the client transaction ids to deduplicate.
        dedup: Vec<crate::model::TxKey>,
        batch: Bytes,
    },
    /// Lease these offsets to a group until `expires`. `auto_ack` settles them at once.
    Lease {
        part: PartId,
        group: GroupId,
        lease: LeaseId,
        offsets: Vec<u64>,
        expires: Micros,
        auto_ack: bool,
    },
    /// The group's lease ran out: every unsettled offset in it is charged one failure.
    ExpireLease {
        part: PartId,
        group: GroupId,
        lease: LeaseId,
    },
    Ack {
        part: PartId,
        group: GroupId,
        lease: LeaseId,
        offset: u64,
        status: AckStatus,
        error: Option<String>,
    },
    ExtendLease {
        part: PartId,
        group: GroupId,
        lease: LeaseId,
        expires: Micros,
    },
    /// Move a cursor (seek); settles nothing else and drops any lease.
    Seek {
        part: PartId,
        group: GroupId,
        offset: u64,
    },
    DeleteGroup {
        group: GroupId,
    },
    /// Retention: drop every offset below `start`, deleting whole segment files.
    Trim {
        part: PartId,
        start: u64,
    },
    DeleteQueue {
        queue: QueueId,
    },
    /// Write a KV entry with the version the planner computed.
    KvSet {
        ns: String,
        key: String,
        value: String,
        version: u64,
        expires: Option<Micros>,
    },
    KvDel {
        ns: String,
        key: String,
    },
    /// Set (or move) a timer; firing is a TimerDel plus the Append it causes, in one entry.
    TimerSet {
        queue: String,
        key: String,
        fire_at: Micros,
        payload: String,
        partition: String,
        txn: String,
    },
    TimerDel {
        queue: String,
        key: String,
    },
    /// A Kafka producer id for InitProducerId.
    AllocProducer {
        id: i64,
    },
    /// An idempotent producer's batch was appended: remember its sequence range.
    ProducerSeq {
        part: PartId,
        producer: i64,
        epoch: i16,
        first_seq: i32,
        last_seq: i32,
        base_offset: u64,
    },
    /// Set a group's committed position (Kafka OffsetCommit); drops its lease.
    Commit {
        part: PartId,
        group: GroupId,
        offset: u64,
    },
    /// The node's secret key for transaction-id hashes (D21), set once.
    HashKey {
        key: [u64; 2],
    },
    /// Idle idempotent producers' state dropped from a partition (Kafka's
    /// producer.id.expiration.ms). Planned, so replay drops the same ones (I1).
    ExpireProducers {
        part: PartId,
        producers: Vec<i64>,
    },
    /// A Kafka transactional id gets (or keeps) its producer at a new epoch (D48):
    /// InitProducerId, or the fencing bump of a transaction aborted on timeout.
    KafkaTxnInit {
        tid: String,
        producer: i64,
        epoch: i16,
        timeout_ms: i32,
    },
    /// Partitions and groups join the transactional id's open transaction (opening it).
    KafkaTxnAdd {
        tid: String,
        parts: Vec<PartId>,
        groups: Vec<String>,
    },
    /// Offsets committed inside the open transaction: applied to the groups only by
    /// its commit (TxnOffsetCommit).
    KafkaTxnOffsets {
        tid: String,
        offsets: Vec<(String, PartId, u64)>,
    },
    /// A transactional batch was appended at `[base, end)`: the partition's stable
    /// end stays at or below the transaction's first offset until it ends.
    KafkaTxnWrite {
        part: PartId,
        producer: i64,
        base: u64,
        end: u64,
    },
    /// The control batch ending `producer`'s transaction in this partition is at `marker`.
    KafkaTxnMark {
        part: PartId,
        producer: i64,
        epoch: i16,
        commit: bool,
        marker: u64,
    },
    /// The transactional id's open transaction is over (after its marks and commits).
    KafkaTxnEnd {
        tid: String,
        commit: bool,
        /// The producer and epoch that wrote the transaction (a retried EndTxn names them).
        by: (i64, i16),
    },
    /// An idle transactional id is forgotten (Kafka's transactional.id.expiration.ms).
    KafkaTxnForget {
        tid: String,
    },
    /// A Kafka topic's configs, whole (issue 15: AlterConfigs, CreateTopics).
    TopicConfigs {
        queue: QueueId,
        configs: std::collections::BTreeMap<String, String>,
    },
    /// A group's committed position on a partition is forgotten (Kafka OffsetDelete): the
    /// group reads it again from where a new group starts.
    DropCursor {
        part: PartId,
        group: GroupId,
    },
    /// Offsets no consumer is given (control records, aborted transactions' records):
    /// settled for the group as a pop passes them, so its cursor moves past them.
    SettleHidden {
        part: PartId,
        group: GroupId,
        ranges: Vec<(u64, u64)>,
    },
    /// A message deleted through the API (Queen's `delete_message`, issue 16): from now on
    /// no consumer over HTTP is given it, as an aborted transaction's records (D48). The
    /// bytes stay in the log and the segment (Kafka readers still see them).
    HideRecord {
        part: PartId,
        offset: u64,
    },
    /// A dead-lettered message is given back to the group (Queen's `retry_message`, issue
    /// 16, D66): its cursor goes back to it, what it passes over counts as settled, the
    /// message's charged failures are forgotten and its dead letter leaves the DLQ.
    Redo {
        part: PartId,
        group: GroupId,
        offset: u64,
    },
}

impl Entry {
    /// About how many bytes the entry takes in a frame: what bounds a planner batch (the
    /// frame cap). Counts the variable parts; every effect gets a fixed allowance on top.
    pub fn approx_bytes(&self) -> usize {
        self.effects
            .iter()
            .map(|e| {
                64 + match e {
                    Effect::Append { txids, dedup, batch, .. } => batch.len() + 8 * txids.len() + 16 * dedup.len(),
                    Effect::Lease { offsets, .. } => 8 * offsets.len(),
                    Effect::Ack { error, .. } => error.as_ref().map_or(0, |e| e.len()),
                    Effect::KvSet { ns, key, value, .. } => ns.len() + key.len() + value.len(),
                    Effect::TimerSet { queue, key, payload, partition, txn, .. } => {
                        queue.len() + key.len() + payload.len() + partition.len() + txn.len()
                    }
                    Effect::Configure { queue, .. } => queue.len(),
                    Effect::CreatePartition { name, .. } | Effect::CreateGroup { name, .. } => name.len(),
                    Effect::ExpireProducers { producers, .. } => 8 * producers.len(),
                    Effect::KafkaTxnInit { tid, .. }
                    | Effect::KafkaTxnEnd { tid, .. }
                    | Effect::KafkaTxnForget { tid } => tid.len(),
                    Effect::KafkaTxnAdd { tid, parts, groups } => {
                        tid.len() + 4 * parts.len() + groups.iter().map(|g| g.len() + 8).sum::<usize>()
                    }
                    Effect::KafkaTxnOffsets { tid, offsets } => {
                        tid.len() + offsets.iter().map(|(g, _, _)| g.len() + 20).sum::<usize>()
                    }
                    Effect::SettleHidden { ranges, .. } => 16 * ranges.len(),
                    Effect::TopicConfigs { configs, .. } => configs.iter().map(|(k, v)| k.len() + v.len() + 16).sum(),
                    _ => 0,
                }
            })
            .sum()
    }
}

pub fn encode_entries(entries: &[Entry], buf: &mut Vec<u8>) {
    bincode::serialize_into(buf, entries).expect("entries serialize into a Vec");
}

pub fn decode_entries(buf: &[u8]) -> Result<Vec<Entry>, String> {
    bincode::deserialize(buf).map_err(|e| e.to_string())
}
