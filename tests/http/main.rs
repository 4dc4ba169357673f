//! The HTTP door and the single node's promises: the real `baton` binary, one server per test.
//!
//! One test binary per concern (D86): each file below was its own binary, and
//! linking 69 of them was a fifth of CI's time.

#[path = "../common/mod.rs"]
mod common;
#[path = "../kafka_util/mod.rs"]
mod kafka_util;

mod cli;
mod core_holes;
mod count_limits;
mod http_bad_input;
mod http_conn;
mod http_groups;
mod http_hostile;
mod http_leases;
mod http_limits;
mod http_memory;
mod http_messages;
mod http_poison;
mod http_semantics;
mod http_transactions;
mod many_partitions;
mod push_steps;
mod queen_bounds;
mod smoke;
mod streams_routes;
mod timers_restart;
