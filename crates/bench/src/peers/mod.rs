//! Adapters for the systems people would pick instead of Baton, each behind
//! [`crate::target::Target`] (and PostgreSQL also behind
//! [`crate::pipeline::PipelineTarget`]). Each module says how it maps the
//! benchmark's queue and partitions onto its system and what its "ok" means.
//! The servers are started by `scripts/peers/<system>.sh start` on the
//! non-default ports given as each module's `DEFAULT_ADDR`.

pub mod nats;
pub mod postgres;
pub mod rabbitmq;
pub mod redis;
