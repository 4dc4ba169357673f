//! Kafka produces that would make new partition files, spread over planner passes (D80).
//! A Kafka Produce is one planner command per partition, queued in order, so a Produce
//! naming thousands of fresh partitions made every request behind it wait for all their
//! files. Within one pass of the planner loop, produces that make a new segment may take
//! `Limits::push_step` of planner time; past it, the next ones wait for later passes (at
//! least one a pass), and everything else goes first.
//!
//! Waiting produces count against `max_queued_requests` like the planner's queue they
//! left: past it a produce is refused `overloaded`, as a full queue refuses it.
//!
//! Owns the waiting produces and the rule that keeps Kafka's order: a produce to a
//! partition that has one waiting waits too, behind it, whatever it would cost, so a
//! producer's pipelined batches are planned in the order they came (its sequence numbers
//! stay in order). Must never plan a waiting produce twice or drop one: each is planned,
//! or refused as a new one would be (not leading, storage failed), exactly once.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::{deferred, PlannerLoop};
use crate::command::CoreError;
use crate::engine::Cmd;
use crate::kafka_ops::{ProduceOutcome, ProduceRequest};

type ProduceReply = oneshot::Sender<Result<ProduceOutcome, CoreError>>;

/// Produces waiting for a later pass, in arrival order, and how many wait per partition.
#[derive(Default)]
pub(super) struct Waiting {
    queue: std::collections::VecDeque<(ProduceRequest, ProduceReply)>,
    per_part: HashMap<String, usize>,
    /// Planner time this pass spent on produces that made a new segment.
    spent: Duration,
}

fn key(r: &ProduceRequest) -> String {
    format!("{}\u{0}{}", r.topic, r.partition)
}

impl Waiting {
    pub(super) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// A new pass of the planner loop: its budget starts full.
    pub(super) fn new_pass(&mut self) {
        self.spent = Duration::ZERO;
    }

    fn behind_one(&self, r: &ProduceRequest) -> bool {
        !self.per_part.is_empty() && self.per_part.contains_key(&key(r))
    }

    fn wait(&mut self, r: ProduceRequest, reply: ProduceReply) {
        *self.per_part.entry(key(&r)).or_default() += 1;
        self.queue.push_back((r, reply));
    }

    fn next(&mut self) -> Option<(ProduceRequest, ProduceReply)> {
        let (r, reply) = self.queue.pop_front()?;
        let k = key(&r);
        if let Some(n) = self.per_part.get_mut(&k) {
            *n -= 1;
            if *n == 0 {
                self.per_part.remove(&k);
            }
        }
        Some((r, reply))
    }
}

impl PlannerLoop {
    /// A Kafka produce as it arrives (the planner's clock already begun for it).
    pub(super) fn produce_cmd(&mut self, r: ProduceRequest, reply: ProduceReply) {
        let behind = self.waiting.behind_one(&r);
        let new_segment = behind || self.p.state.needs_new_segment(&r.topic, &r.partition, self.p.now());
        if behind || (new_segment && self.waiting.spent >= self.p.limits.push_step) {
            // Waiting produces left the planner's queue but are still queued work: bounded
            // as it is, refused as a full queue refuses.
            if self.waiting.queue.len() >= self.cfg.max_queued_requests {
                let _ = reply.send(Err(self.overloaded(
                    "too many produces are waiting to make new partition files (max queued requests); retry shortly",
                )));
                return;
            }
            self.shared.counters.produces_deferred.fetch_add(1, Ordering::Relaxed);
            self.waiting.wait(r, reply);
            return;
        }
        self.produce_now(r, reply, new_segment);
    }

    fn produce_now(&mut self, r: ProduceRequest, reply: ProduceReply, new_segment: bool) {
        let started = new_segment.then(Instant::now);
        let res = self.p.step(|p| p.produce(r));
        self.settle(deferred(reply, res));
        if let Some(t) = started {
            self.waiting.spent += t.elapsed();
        }
    }

    /// Plans waiting produces, oldest first, while this pass's budget lasts (at least one);
    /// every one of them when `all` (shutting down).
    pub(super) fn run_waiting_produces(&mut self, all: bool) {
        let mut ran = false;
        while !self.waiting.is_empty() {
            if ran && !all && self.waiting.spent >= self.p.limits.push_step {
                return;
            }
            let Some((r, reply)) = self.waiting.next() else { return };
            ran = true;
            if let Some(Cmd::Produce(r, reply)) = self.recheck(Cmd::Produce(r, reply)) {
                let new_segment = self.p.state.needs_new_segment(&r.topic, &r.partition, self.p.now());
                self.produce_now(r, reply, new_segment);
            }
        }
    }
}
