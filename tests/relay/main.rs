//! The PostgreSQL outbox relay against a private PostgreSQL and the real binary.
//!
//! One test binary per concern (D86): each file below was its own binary, and
//! linking 69 of them was a fifth of CI's time.

#[path = "../common/mod.rs"]
mod common;
#[path = "../relay_util/mod.rs"]
mod relay_util;

mod relay;
mod relay_cluster;
mod relay_kafka;
mod relay_load;
mod relay_tls;
