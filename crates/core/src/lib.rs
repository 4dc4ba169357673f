//! Baton's state machine and the engine around it: the model, the planner,
//! apply, checkpoints and recovery. Knows nothing of HTTP or Kafka; the front
//! doors hand it typed commands (see `command`).

pub mod appender;
pub mod checkpoint;
pub mod chunked;
pub mod clock;
pub mod command;
pub mod compact;
pub mod damage;
pub mod dirlock;
pub mod engine;
pub mod entry;
pub mod failpoint;
pub mod files;
pub mod held;
pub mod index;
pub mod inspect;
pub mod install;
pub mod kafka_ops;
pub mod ktxn;
pub mod ktxn_plan;
pub mod kv;
pub mod limits;
pub mod model;
pub mod options;
pub mod partition;
pub mod parts;
pub mod plan;
mod plan_ack;
mod plan_push;
mod pop_any;
pub mod provision;
pub mod query;
pub mod ready;
mod redo;
mod remove;
pub mod request_memory;
mod runner;
pub mod state;
pub mod store;
mod subscribe;
pub mod timers;
pub mod topic_config;
pub mod txn;

pub use command::*;
pub use engine::{wall_micros, Engine, EngineConfig};
pub use model::*;
pub use options::OptionsPatch;
pub use txn::{TxnAck, TxnItem, TxnOutcome, TxnRequest};
#[cfg(test)]
mod ktxn_tests;
#[cfg(test)]
mod kv_tests;
#[cfg(test)]
mod plan_ack_tests;
#[cfg(test)]
mod plan_i5_tests;
#[cfg(test)]
mod plan_props;
#[cfg(test)]
mod plan_step_tests;
#[cfg(test)]
mod plan_tests;
