//! Three-member clusters on loopback: replication, failover, and both doors on a cluster.
//!
//! One test binary per concern (D86): each file below was its own binary, and
//! linking 69 of them was a fifth of CI's time.

#[path = "../common/mod.rs"]
mod common;
#[path = "../kafka_util/mod.rs"]
mod kafka_util;

mod cluster_clients;
mod cluster_clock;
mod cluster_failover;
mod cluster_forward_partition;
mod cluster_handover;
mod cluster_kafka_share;
mod cluster_kafka_txn;
mod cluster_leader_sync;
mod cluster_membership;
mod cluster_partition;
mod cluster_pipeline;
mod cluster_push_steps;
mod cluster_rebuild_stop;
mod cluster_snapshot;
