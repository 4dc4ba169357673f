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
