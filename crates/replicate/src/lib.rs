//! Replication: Baton's nodes agree on one log with Raft (openraft 0.9, D38), and that log is
//! Baton's own WAL (D39).
//!
//! This crate owns the Raft side of a node: the log storage over the WAL (`log_store`), the
//! durable vote, committed index and purge point (`meta`), the state machine's Raft
//! bookkeeping around Baton's apply (`machine`), the encoding of a Raft entry as a WAL frame
//! (`codec`) and the transport between nodes (`network`). It must never plan, apply or
//! interpret a Baton entry itself: a `Normal` entry carries a planner frame as opaque bytes,
//! and what a frame means belongs to `baton-core`, reached only through [`machine::Applier`].
//!
//! Index mapping: Raft numbers its log from 0 (the first membership entry), the WAL from 1,
//! so Raft entry `i` is WAL frame `i + 1`, everywhere in this crate and nowhere else.

// openraft's storage traits return its `StorageError` (224 bytes) by value; this crate's
// helpers return what those methods return rather than box and unbox it at every call.
#![allow(clippy::result_large_err)]

pub mod codec;
pub mod directory;
pub mod handover;
pub mod log_store;
pub mod machine;
pub mod meta;
pub mod network;
pub mod node;
pub mod runtime;

/// What a `Normal` entry carries: one planner frame, as the planner encoded it.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Frame(pub bytes::Bytes);

impl std::fmt::Debug for Frame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Frame({} bytes)", self.0.len())
    }
}

openraft::declare_raft_types!(
    /// Baton's Raft: node ids are numbers, a node is its Raft address, a snapshot streams
    /// through a file (bounded memory at both ends, D39).
    pub TypeConfig:
        D = Frame,
        R = (),
        NodeId = u64,
        Node = openraft::BasicNode,
        SnapshotData = tokio::fs::File,
        AsyncRuntime = crate::runtime::BatonRuntime,
);

pub type NodeId = u64;
pub type Entry = openraft::Entry<TypeConfig>;
pub type LogId = openraft::LogId<NodeId>;
pub type Vote = openraft::Vote<NodeId>;
pub type StorageError = openraft::StorageError<NodeId>;
pub type Raft = openraft::Raft<TypeConfig>;
pub type Membership = openraft::Membership<NodeId, openraft::BasicNode>;
pub type StoredMembership = openraft::StoredMembership<NodeId, openraft::BasicNode>;

/// Raft index `i` lives in WAL frame `i + 1` (module docs).
pub(crate) fn wal_index(raft_index: u64) -> u64 {
    raft_index + 1
}

pub(crate) fn raft_index(wal_index: u64) -> u64 {
    wal_index - 1
}

pub(crate) fn io_error(
    subject: openraft::ErrorSubject<NodeId>,
    verb: openraft::ErrorVerb,
    e: impl std::fmt::Display,
) -> StorageError {
    openraft::StorageIOError::new(subject, verb, openraft::AnyError::error(e.to_string())).into()
}
