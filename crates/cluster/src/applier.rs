//! Raft's apply, into the engine: committed frames go to the planner in log order, where
//! they are applied as replay applies them (I1), or skipped when the state already holds
//! them (the leader planned them itself, or the checkpoint covers them).
//!
//! Must never drop a committed frame: a frame the engine cannot take is an error to
//! openraft, which stops this member.

use std::io::{Read, Write};

use baton_core::Engine;
use baton_replicate::machine::Applier;
use baton_replicate::Frame;

pub struct EngineApplier {
    pub engine: Engine,
}

impl Applier for EngineApplier {
    fn apply(&mut self, index: u64, frame: &Frame) -> Result<(), String> {
        self.engine.apply_committed(index, frame.0.clone()).map_err(|e| e.message)
    }

    fn snapshot(&mut self, _out: &mut dyn Write) -> Result<(), String> {
        Err("a member's state is not sent as a snapshot yet (D40): members catch up from the whole log".into())
    }

    fn restore(&mut self, _input: &mut dyn Read) -> Result<(), String> {
        Err("a member's state is not installed from a snapshot yet (D40)".into())
    }
}
