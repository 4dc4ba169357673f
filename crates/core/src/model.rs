//! The vocabulary of the state machine: queue options, ids, statuses, and the
//! stable hash used for transaction ids. Owns no state and does no I/O.

use serde::{Deserialize, Serialize};

/// State-machine time in microseconds since the Unix epoch (I5: entry timestamps).
pub type Micros = u64;
pub type QueueId = u32;
pub type PartId = u32;
pub type GroupId = u32;
pub type LeaseId = u64;

/// The reserved group name for competing consumers (queue mode).
pub const QUEUE_MODE: &str = "__QUEUE_MODE__";
pub const DEFAULT_PARTITION: &str = "Default";
pub const MAX_NAME_LEN: usize = 200;

/// Options a queue is configured with; field names are Queen's.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct QueueOptions {
    /// Seconds a pop's lease lives unless the pop names its own.
    pub lease_time: u64,
    /// Failures (failed acks and expired leases) a message may take before it is dead-lettered.
    pub retry_limit: u32,
    pub dead_letter_queue: bool,
    pub dlq_after_max_retries: bool,
    /// 0 turns deduplication by client transaction id off.
    pub dedup_window_seconds: u64,
    /// 0 keeps messages forever; otherwise whole partition segments older than this are deleted.
    pub retention_seconds: u64,
    /// Seconds after its write before a message may be delivered.
    pub delayed_processing: u64,
    /// Most messages waiting in queue mode; 0 is unlimited.
    pub max_size: u64,
}

impl QueueOptions {
    /// Whether a message past `retryLimit` moves to the dead-letter queue on its own: only
    /// with both `deadLetterQueue` and `dlqAfterMaxRetries` (issue 12 item 8: a queue set
    /// `deadLetterQueue: false` kept dead-lettering). Without, it is delivered again.
    pub fn dead_letters_after_retries(&self) -> bool {
        self.dead_letter_queue && self.dlq_after_max_retries
    }
}

impl Default for QueueOptions {
    fn default() -> Self {
        QueueOptions {
            lease_time: 300,
            retry_limit: 3,
            dead_letter_queue: true,
            dlq_after_max_retries: true,
            dedup_window_seconds: 3600,
            retention_seconds: 0,
            delayed_processing: 0,
            max_size: 0,
        }
    }
}

/// How a consumer settles a message it was leased.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum AckStatus {
    /// Done: the cursor may move past it.
    Completed,
    /// Failed: charges the retry budget and redelivers.
    Failed,
    /// Redeliver without charge.
    Retry,
    /// Dead-letter it now.
    Dlq,
}

impl AckStatus {
    /// Queen's spellings, including its aliases for success.
    pub fn parse(s: &str) -> Option<AckStatus> {
        match s.to_ascii_lowercase().as_str() {
            "completed" | "success" | "acked" | "ok" | "complete" => Some(AckStatus::Completed),
            "failed" | "fail" | "error" | "nack" => Some(AckStatus::Failed),
            "retry" => Some(AckStatus::Retry),
            "dlq" | "dead_letter" | "deadletter" => Some(AckStatus::Dlq),
            _ => None,
        }
    }
}

/// A transaction id's key (D21): SipHash-1-3, 128 bits, under the node's secret
/// `State::hash_key`. Keyed, so a client cannot search for two ids that collide (an
/// unkeyed 64-bit FNV-1a pair was found in 75 s); 128 bits, so chance collisions are out of
/// reach too. Dedup compares all 128 bits; each stored offset keeps the low 64 (an ack by
/// transaction id only compares within one lease). Its values are in the log and in
/// checkpoints: the function must never change.
pub fn txid_key(key: [u64; 2], s: &str) -> TxKey {
    let (a, b) = siphasher::sip128::SipHasher13::new_with_keys(key[0], key[1]).hash(s.as_bytes()).as_u64();
    // 127 bits: the top bit of the second word marks, in `.txid` files, a key the dedup
    // window holds (D29).
    [a, b & !DEDUP_FLAG]
}

/// In a `.txid` record's second word: this message's transaction id is deduplicated.
pub const DEDUP_FLAG: u64 = 1 << 63;

/// A [`txid_key`]: two words rather than a u128, which serde's JSON and bincode forms of the
/// state both carry as they are.
pub type TxKey = [u64; 2];

/// A map keyed by [`TxKey`]: the key is already a keyed SipHash of the transaction id (the
/// node's secret key, so a client cannot aim ids at one bucket), so its first word is the
/// hash as it is. Hashing it again cost the planner a SipHash per lookup, insert and every
/// move of a resize (the dedup window: one lookup and one insert per pushed message).
pub type TxKeyMap<V> = std::collections::HashMap<TxKey, V, std::hash::BuildHasherDefault<TxKeyHasher>>;

/// The hasher of [`TxKeyMap`]: keeps the first eight bytes written (a `[u64; 2]` writes its
/// length, then its sixteen bytes) and ignores the rest.
#[derive(Default)]
pub struct TxKeyHasher {
    hash: u64,
    set: bool,
}

impl std::hash::Hasher for TxKeyHasher {
    fn finish(&self) -> u64 {
        self.hash
    }

    fn write(&mut self, bytes: &[u8]) {
        if !self.set && bytes.len() >= 8 {
            self.hash = u64::from_ne_bytes(bytes[..8].try_into().expect("eight bytes"));
            self.set = true;
        }
    }

    fn write_usize(&mut self, _len: usize) {}
}

/// The first word of [`txid_key`]: what each stored offset keeps.
pub fn txid_hash(key: [u64; 2], s: &str) -> u64 {
    txid_key(key, s)[0]
}

const LEASE_TAG: u64 = 0x4241_544f_4e4c_0000;
const PART_TAG: u64 = 0x4241_544f_4e50_0000;
const MSG_TAG: u64 = 0x4241_544d_0000_0000;

/// Lease ids travel as UUIDs so Queen clients can hold them; the tag lets us
/// reject garbage without a lookup.
pub fn lease_uuid(id: LeaseId) -> uuid::Uuid {
    uuid::Uuid::from_u64_pair(LEASE_TAG, id)
}

pub fn parse_lease_uuid(s: &str) -> Option<LeaseId> {
    let u = uuid::Uuid::parse_str(s).ok()?;
    let (hi, lo) = u.as_u64_pair();
    (hi == LEASE_TAG).then_some(lo)
}

pub fn partition_uuid(id: PartId) -> uuid::Uuid {
    uuid::Uuid::from_u64_pair(PART_TAG, id as u64)
}

pub fn parse_partition_uuid(s: &str) -> Option<PartId> {
    let u = uuid::Uuid::parse_str(s).ok()?;
    let (hi, lo) = u.as_u64_pair();
    (hi == PART_TAG && lo <= u32::MAX as u64).then_some(lo as PartId)
}

pub fn message_uuid(part: PartId, offset: u64) -> uuid::Uuid {
    uuid::Uuid::from_u64_pair(MSG_TAG | part as u64, offset)
}

pub fn parse_message_uuid(s: &str) -> Option<(PartId, u64)> {
    let u = uuid::Uuid::parse_str(s).ok()?;
    let (hi, lo) = u.as_u64_pair();
    (hi >> 32 == MSG_TAG >> 32).then_some(((hi & 0xffff_ffff) as PartId, lo))
}

/// Queue and partition names: printable, bounded, no path separators.
pub fn valid_name(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("name is empty".into());
    }
    if s.len() > MAX_NAME_LEN {
        return Err(format!("name longer than {MAX_NAME_LEN} bytes"));
    }
    if s.chars().any(|c| c.is_control() || c == '/' || c == '\\') {
        return Err("name contains a control character or a slash".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_reject_foreign_uuids() {
        assert_eq!(parse_lease_uuid(&lease_uuid(77).to_string()), Some(77));
        assert_eq!(parse_partition_uuid(&partition_uuid(5).to_string()), Some(5));
        assert_eq!(parse_message_uuid(&message_uuid(9, 123).to_string()), Some((9, 123)));
        assert_eq!(parse_lease_uuid(&partition_uuid(5).to_string()), None);
        assert_eq!(parse_lease_uuid("not-a-uuid"), None);
        assert_eq!(parse_partition_uuid("00000000-0000-0000-0000-000000000000"), None);
    }

    #[test]
    fn txid_keys_depend_on_the_node_key_and_separate_a_known_fnv_collision() {
        let k = [1, 2];
        assert_eq!(txid_key(k, "a"), txid_key(k, "a"));
        assert_ne!(txid_key(k, "a"), txid_key([1, 3], "a"));
        // Regression (issue 12 item 15): these collide under the FNV-1a 64 used before.
        assert_ne!(txid_key(k, "BfQRRUtxLxD"), txid_key(k, "WaxExq-iA0I"));
        assert_eq!(txid_hash(k, "ab"), txid_key(k, "ab")[0]);
    }

    /// The dedup map's hasher passes the key's first word through: a hasher that kept a
    /// constant would put every id in one bucket chain.
    #[test]
    fn a_txkey_map_hashes_by_the_keys_first_word() {
        use std::hash::BuildHasher;
        let b = std::hash::BuildHasherDefault::<TxKeyHasher>::default();
        assert_eq!(b.hash_one([7u64, 9]), 7);
        assert_eq!(b.hash_one(txid_key([1, 2], "x")), txid_hash([1, 2], "x"));
        let mut m = TxKeyMap::default();
        for i in 0..1000u64 {
            m.insert(txid_key([1, 2], &i.to_string()), i);
        }
        assert!((0..1000u64).all(|i| m[&txid_key([1, 2], &i.to_string())] == i));
    }

    #[test]
    fn names_are_checked() {
        assert!(valid_name("orders").is_ok());
        assert!(valid_name("").is_err());
        assert!(valid_name("a/b").is_err());
        assert!(valid_name(&"x".repeat(MAX_NAME_LEN + 1)).is_err());
    }
}
