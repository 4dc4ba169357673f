//! A pop across several queues in one planner step (a namespace or task pop, D57). Owns
//! only the walk over the names: each queue is popped exactly as a pop of that queue
//! would be (`Planner::pop`), so no rule of a queue pop is restated here. Must never look
//! at more names than the caller passed (the engine caps them at `MAX_POP_ANY`).

use crate::command::{ErrorKind, PopRequest, PopResult};
use crate::plan::{Planned, Planner};

impl Planner {
    /// The first of `queues` that gives the group something; a queue that does not exist
    /// (deleted since the caller listed it) is skipped, any other refusal ends the step.
    pub fn pop_any(&mut self, req: &PopRequest, queues: &[String]) -> Planned<Option<PopResult>> {
        let mut one = req.clone();
        for q in queues {
            one.queue.clone_from(q);
            match self.pop(&one) {
                Ok(Some(r)) => return Ok(Some(r)),
                Ok(None) => {}
                Err(e) if e.kind == ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }
}
