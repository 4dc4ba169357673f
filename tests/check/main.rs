//! The proof tools (history recorder and checker, exactly-once verifier, benchmarks) against the real binary.
//!
//! One test binary per concern (D86): each file below was its own binary, and
//! linking 69 of them was a fifth of CI's time.

#[path = "../common/mod.rs"]
mod common;

mod bench_quick;
mod bench_storage;
mod check_data;
mod check_history;
mod check_history_cluster;
mod check_history_faults;
mod check_history_kafka;
mod check_history_record;
mod check_pipeline;
mod harness;
