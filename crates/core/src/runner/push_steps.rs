//! A push planned in steps (D80): its item groups are planned until `Limits::push_step`
//! of planner time is spent, and the rest wait for a later step, after the requests that
//! queued behind the push. A partition's first write makes its directory and files on the
//! planner, so a push creating thousands of partitions used to hold every other request
//! back for seconds.
//!
//! Owns the steps' bookkeeping and the rule that a push is answered once, from the frame
//! of its last step (frames complete in order, so every earlier step is durable by then).
//! Must never plan a step on a state that threw away an earlier one: a rebuild (a lost
//! term) or a latch since the first step answers the push `outcome_unknown` instead,
//! because what was planned before may or may not be stored. Groups are independent (each
//! is stored or refused whole), so a push spanning several entries keeps every promise a
//! push in one entry made.

use std::sync::atomic::Ordering;

use tokio::sync::oneshot;

use super::{deferred, PlannerLoop};
use crate::command::{CoreError, PushGroup, PushResult, PushStatus};

/// The groups of a push its first steps did not reach, and what those steps answered.
pub(super) struct PushRest {
    groups: Vec<PushGroup>,
    done: Vec<PushResult>,
    reply: oneshot::Sender<Result<Vec<PushResult>, CoreError>>,
    /// The state's epoch at the first step (D40).
    epoch: u64,
}

impl PlannerLoop {
    /// One step of a push: the first one (`rest` empty) or a continuation.
    pub(super) fn push_step(&mut self, rest: PushRest) {
        let PushRest { groups, mut done, reply, epoch } = rest;
        let budget = self.p.limits.push_step;
        let (res, left) = self.p.push_step(groups, Some(budget));
        let n = res.iter().filter(|r| matches!(r.status, PushStatus::Queued { .. })).count();
        self.shared.counters.pushed.fetch_add(n as u64, Ordering::Relaxed);
        done.extend(res);
        if left.is_empty() {
            done.sort_by_key(|r| r.index);
            self.settle(deferred(reply, Ok(done)));
            return;
        }
        // This step's entry carries no answer: the last step's does, for all of them.
        self.settle(Box::new(|_| {}));
        self.shared.counters.push_continuations.fetch_add(1, Ordering::Relaxed);
        self.continued.push_back(PushRest { groups: left, done, reply, epoch });
    }

    /// A push as it arrives.
    pub(super) fn push_cmd(
        &mut self,
        groups: Vec<PushGroup>,
        reply: oneshot::Sender<Result<Vec<PushResult>, CoreError>>,
    ) {
        let epoch = self.shared.epoch.load(Ordering::Acquire);
        self.push_step(PushRest { groups, done: Vec::new(), reply, epoch });
    }

    /// The next step of the oldest push that has one, if its state is still the one its
    /// first step was planned on.
    pub(super) fn continue_push(&mut self) {
        let Some(rest) = self.continued.pop_front() else { return };
        let broken = if rest.epoch != self.shared.epoch.load(Ordering::Acquire)
            || !self.shared.writable.load(Ordering::Acquire)
        {
            Some("leadership changed between its steps".to_string())
        } else {
            self.failed().map(|e| e.message)
        };
        if let Some(why) = broken {
            let _ = rest.reply.send(Err(CoreError::outcome_unknown(format!(
                "a push planned in steps was interrupted ({why}): the groups of its earlier steps may be stored; \
                 retry it with the same transaction ids"
            ))));
            return;
        }
        self.p.begin(crate::engine::wall_micros());
        self.push_step(rest);
    }
}
