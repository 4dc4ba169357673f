//! The bytes of one Raft entry inside one WAL frame (the frame adds its index and CRC32C).
//!
//! Layout (little-endian): version u8 (= 1), term u64, leader node id u64, kind u8 (0 blank,
//! 1 normal, 2 membership), then the body: a normal entry's planner frame as it is, a
//! membership as bincode. The WAL frame's index is the Raft index plus one (crate docs).
//! Owns only the layout. Must never panic or allocate past the payload on any input: a frame
//! that passed its checksum can still be one a newer or a hostile writer made.

use bincode::Options;
use bytes::Bytes;
use openraft::{CommittedLeaderId, EntryPayload};

use crate::{raft_index, Entry, Frame, LogId, Membership};

const VERSION: u8 = 1;
const HEADER: usize = 1 + 8 + 8 + 1;
const BLANK: u8 = 0;
const NORMAL: u8 = 1;
const MEMBERSHIP: u8 = 2;

/// A membership names a few nodes and their addresses; anything near this is not one.
const MAX_MEMBERSHIP_BYTES: u64 = 1 << 20;

fn membership_codec() -> impl Options {
    bincode::options().with_limit(MAX_MEMBERSHIP_BYTES).with_fixint_encoding()
}

/// Appends the entry's payload bytes (everything but its index) to `buf`.
pub fn encode(entry: &Entry, buf: &mut Vec<u8>) {
    buf.push(VERSION);
    buf.extend_from_slice(&entry.log_id.leader_id.term.to_le_bytes());
    buf.extend_from_slice(&entry.log_id.leader_id.node_id.to_le_bytes());
    match &entry.payload {
        EntryPayload::Blank => buf.push(BLANK),
        EntryPayload::Normal(Frame(bytes)) => {
            buf.push(NORMAL);
            buf.extend_from_slice(bytes);
        }
        EntryPayload::Membership(m) => {
            buf.push(MEMBERSHIP);
            // A membership always serializes: plain structs of numbers, sets and strings.
            membership_codec().serialize_into(&mut *buf, m).expect("a membership serializes");
        }
    }
}

/// The size `encode` will produce, without producing it.
pub fn encoded_len(entry: &Entry) -> usize {
    HEADER
        + match &entry.payload {
            EntryPayload::Blank => 0,
            EntryPayload::Normal(Frame(bytes)) => bytes.len(),
            EntryPayload::Membership(m) => membership_codec().serialized_size(m).unwrap_or(0) as usize,
        }
}

/// The entry the WAL frame with index `wal_index` holds.
pub fn decode(wal_index: u64, payload: &[u8]) -> Result<Entry, String> {
    if wal_index == 0 {
        return Err("WAL frame 0 does not exist: the log numbers frames from 1".into());
    }
    let Some((head, body)) = payload.split_at_checked(HEADER) else {
        return Err(format!("raft entry of {} bytes is shorter than its {HEADER}-byte header", payload.len()));
    };
    if head[0] != VERSION {
        return Err(format!("raft entry version {} is not {VERSION}: written by another Baton?", head[0]));
    }
    let term = u64::from_le_bytes(head[1..9].try_into().expect("8 bytes"));
    let node = u64::from_le_bytes(head[9..17].try_into().expect("8 bytes"));
    let log_id = LogId::new(CommittedLeaderId::new(term, node), raft_index(wal_index));
    let payload = match head[17] {
        BLANK if body.is_empty() => EntryPayload::Blank,
        BLANK => return Err(format!("blank raft entry carries {} bytes", body.len())),
        NORMAL => EntryPayload::Normal(Frame(Bytes::copy_from_slice(body))),
        MEMBERSHIP => EntryPayload::Membership(
            membership_codec()
                .deserialize::<Membership>(body)
                .map_err(|e| format!("membership entry does not decode: {e}"))?,
        ),
        kind => return Err(format!("raft entry kind {kind} is unknown")),
    };
    Ok(Entry { log_id, payload })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    fn entry(term: u64, node: u64, index: u64, payload: EntryPayload<crate::TypeConfig>) -> Entry {
        Entry { log_id: LogId::new(CommittedLeaderId::new(term, node), index), payload }
    }

    #[test]
    fn every_kind_round_trips_and_encoded_len_is_exact() {
        let nodes: BTreeMap<u64, openraft::BasicNode> =
            (1..=3).map(|i| (i, openraft::BasicNode::new(format!("127.0.0.1:710{i}")))).collect();
        let m = Membership::new(vec![BTreeSet::from([1, 2, 3])], nodes);
        for e in [
            entry(0, 0, 0, EntryPayload::Blank),
            entry(7, 3, 41, EntryPayload::Normal(Frame(Bytes::from_static(b"planner frame")))),
            entry(7, 3, 42, EntryPayload::Normal(Frame(Bytes::new()))),
            entry(u64::MAX, u64::MAX, 43, EntryPayload::Membership(m)),
        ] {
            let mut buf = vec![9, 9];
            encode(&e, &mut buf);
            assert_eq!(buf.len() - 2, encoded_len(&e));
            assert_eq!(decode(e.log_id.index + 1, &buf[2..]).unwrap(), e);
        }
    }

    /// Every truncation and every single-byte change of a valid entry decodes to an error
    /// or to some entry, never a panic; the header's fields are checked.
    #[test]
    fn hostile_payloads_are_refused_without_panic() {
        let mut buf = Vec::new();
        let m = Membership::new(vec![BTreeSet::from([1, 2])], None);
        encode(&entry(3, 1, 9, EntryPayload::Membership(m)), &mut buf);
        for cut in 0..buf.len() {
            assert!(decode(10, &buf[..cut]).is_err(), "cut at {cut}");
        }
        for at in 0..buf.len() {
            for bit in 0..8 {
                let mut b = buf.clone();
                b[at] ^= 1 << bit;
                let _ = decode(10, &b);
            }
        }
        let mut blank = Vec::new();
        encode(&entry(1, 1, 1, EntryPayload::Blank), &mut blank);
        blank.push(0);
        assert!(decode(2, &blank).unwrap_err().contains("blank raft entry carries 1 bytes"));
        blank.pop();
        blank[0] = 2;
        assert!(decode(2, &blank).unwrap_err().contains("version 2"));
        blank[0] = 1;
        blank[17] = 9;
        assert!(decode(2, &blank).unwrap_err().contains("kind 9"));
        assert!(decode(0, &buf).is_err());
        // A membership body claiming a vast set is refused by the limit, not allocated.
        let mut huge = buf[..HEADER].to_vec();
        huge.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode(10, &huge).is_err());
    }
}
