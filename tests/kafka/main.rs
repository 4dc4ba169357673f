//! The Kafka door at the wire: the real `baton` binary spoken to with raw Kafka requests.
//!
//! One test binary per concern (D86): each file below was its own binary, and
//! linking 69 of them was a fifth of CI's time.

#[path = "../common/mod.rs"]
mod common;
#[path = "../kafka_util/mod.rs"]
mod kafka_util;

mod kafka_admin;
mod kafka_bounds;
mod kafka_compaction;
mod kafka_cross;
mod kafka_group_configs;
mod kafka_memory;
mod kafka_metrics;
mod kafka_produce;
mod kafka_protocol;
mod kafka_reserved;
mod kafka_sasl;
mod kafka_share;
mod kafka_share_v2;
mod kafka_transactions;
mod kafka_txn_power;
mod kafka_txn_width;
mod kafka_wide_produce;
