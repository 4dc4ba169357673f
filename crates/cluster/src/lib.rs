//! A cluster member (D40): Baton's engine on Raft. The leader's planner proposes its frames
//! through [`raft_log::RaftLog`]; every member applies committed frames through
//! [`applier::EngineApplier`]; [`member::Member`] follows leadership, promoting the engine
//! when this member leads and rebuilding it when a term it planned in is lost.
//!
//! Owns only the wiring between the two: what a frame means is `baton-core`'s, how it is
//! agreed on is `baton-replicate`'s. Must never let the engine plan while this member does
//! not lead, nor keep a state that planned what Raft may not commit.

pub mod applier;
pub mod member;
pub mod membership;
pub mod ops;
pub mod raft_log;
pub mod snapshot;
