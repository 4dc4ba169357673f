//! Retrying a dead-lettered message (Queen's `admin.retry_message`, issue 16): every
//! consumer group that dead-lettered the message at an address gets it again, with a fresh
//! retry budget, and its dead letter leaves the DLQ, in one entry.
//!
//! A group's progress is a cursor (`next`, every offset below settled) plus the offsets
//! settled above it (`done`). A dead letter is settled, usually below `next`, so the retry
//! lowers `next` to the message and records every offset it passes over as settled: the
//! group's next pop of the partition starts at the retried message and then skips what
//! it had already finished, and acking it folds `done` back into `next`. That keeps the
//! checkpoint format (D66). Must never redeliver anything but the retried message, and
//! must never let one call grow a cursor's `done` past `Limits::max_retry_distance`.

use crate::command::{CoreError, ErrorKind};
use crate::entry::Effect;
use crate::model::{GroupId, PartId};
use crate::plan::{Planned, Planner};
use crate::state::State;

impl Planner {
    /// Give the message `txid` at `offset` of `part` (where a [`crate::Query::MessageScan`]
    /// found it; checked again here) back to every group that dead-lettered it. The groups'
    /// names, in the order of their dead letters.
    pub fn retry_message(&mut self, part: PartId, txid: &str, offset: u64) -> Planned<Vec<String>> {
        let p = self.message_at(part, txid, offset)?;
        if p.txns.hidden_end(offset).is_some() || offset < p.start {
            return Err(CoreError::not_found("message_not_found", format!("no message {txid:?} in that partition")));
        }
        let dlq = self.state.queues.get(&p.queue).map(|q| &q.dlq);
        let mut groups: Vec<GroupId> = Vec::new();
        for d in dlq.into_iter().flatten().filter(|d| d.part == part && d.offset == offset) {
            // A group forgotten on the partition since (deleted, its cursor dropped) starts
            // over there anyway: nothing of it to retry.
            if !groups.contains(&d.group) && p.cursors.contains_key(&d.group) {
                groups.push(d.group);
            }
        }
        if groups.is_empty() {
            return Err(CoreError::new(
                ErrorKind::Conflict,
                "not_dead_lettered",
                format!("no consumer group has message {txid:?} in its dead-letter queue"),
            ));
        }
        let max = self.limits.max_retry_distance;
        for g in &groups {
            let behind = p.cursors[g].next.saturating_sub(offset);
            if behind > max {
                return Err(CoreError::new(
                    ErrorKind::Conflict,
                    "retry_too_far_behind",
                    format!(
                        "consumer group {} is {behind} messages past {txid:?}; a retry may reach back at most {max} (--max-retry-distance)",
                        self.state.groups.get(g).map_or("?", |g| g.name.as_str())
                    ),
                ));
            }
        }
        let queue = p.queue;
        let names = groups.iter().map(|g| self.state.groups.get(g).map_or(String::new(), |g| g.name.clone())).collect();
        // A long poll of the group waiting on the queue gets the message (one woken, as
        // when a lease is released).
        self.pushed_queues.entry(queue).or_default();
        for group in groups {
            self.emit_pub(Effect::Redo { part, group, offset })?;
        }
        Ok(names)
    }
}

/// Applies [`Effect::Redo`]: the group is given `offset` again and its dead letter of it
/// leaves the DLQ.
pub(crate) fn apply(state: &mut State, part: PartId, group: GroupId, offset: u64) {
    let Some(p) = state.parts.get_mut(&part) else { return };
    let queue = p.queue;
    if let Some(c) = p.cursors.get_mut(&group) {
        if offset < c.next {
            c.done.extend(offset + 1..c.next);
            c.next = offset;
        } else {
            c.done.remove(&offset);
        }
        c.attempts.remove(&offset);
    }
    if let Some(q) = state.queues.get_mut(&queue) {
        q.dlq.retain(|d| !(d.part == part && d.offset == offset && d.group == group));
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{AckStatus, QueueOptions};
    use crate::plan_tests::{storage, Fixture, S};
    use crate::state::State;

    fn offsets(r: &crate::command::PopResult) -> Vec<u64> {
        r.messages.iter().map(|m| m.0).collect()
    }

    /// The retried message comes back to the group that dead-lettered it, once, with a
    /// fresh budget; nothing it had finished comes back with it; another group that
    /// finished the message is untouched; replay rebuilds the same state.
    #[test]
    fn a_retried_dead_letter_is_delivered_again_and_only_it() {
        let mut f = Fixture::new();
        f.configure(S, "q", QueueOptions { retry_limit: 1, ..Default::default() });
        f.push(2 * S, "q", "p", &["a", "b", "c", "d"]);
        let part = f.p.state.partition("q", "p").unwrap().id;
        let r = f.pop(3 * S, "q", Some("g"), 4).unwrap();
        assert_eq!(offsets(&r), [0, 1, 2, 3]);
        f.ack(3 * S, &r, 0, AckStatus::Completed).unwrap();
        f.ack(3 * S, &r, 1, AckStatus::Dlq).unwrap();
        f.ack(3 * S, &r, 2, AckStatus::Completed).unwrap();
        f.ack(3 * S, &r, 3, AckStatus::Completed).unwrap();
        let other = f.pop(3 * S, "q", Some("h"), 4).unwrap();
        for o in 0..4 {
            f.ack(3 * S, &other, o, AckStatus::Completed).unwrap();
        }
        f.push(4 * S, "q", "p", &["e"]);
        assert_eq!(f.p.state.queues.values().next().unwrap().dlq.len(), 1);

        f.at(5 * S);
        assert_eq!(f.p.retry_message(part, "b", 1).unwrap(), ["g"]);
        f.done();
        assert!(f.p.state.queues.values().next().unwrap().dlq.is_empty(), "the dead letter left the DLQ");
        let again = f.pop(6 * S, "q", Some("g"), 10).unwrap();
        assert_eq!(offsets(&again), [1, 4], "the retried message, then what is new; 2 and 3 stay finished");
        assert_eq!(again.messages[0].1, 1, "a fresh budget: first attempt");
        f.ack(6 * S, &again, 1, AckStatus::Completed).unwrap();
        f.ack(6 * S, &again, 4, AckStatus::Completed).unwrap();
        assert!(f.pop(7 * S, "q", Some("g"), 10).is_none(), "nothing delivered twice");
        assert!(f.pop(7 * S, "q", Some("h"), 10).unwrap().messages.len() == 1, "h gets only e");
        let c = &f.p.state.parts[&part].cursors[&f.p.state.group_ids["g"]];
        assert_eq!((c.next, c.done.len()), (5, 0), "acking it folded the passed-over offsets back");

        let live = serde_json::to_value(&f.p.state).unwrap();
        let mut replayed = State::new(storage(&f._dir.path().join("replay")));
        for e in &f.log {
            replayed.apply(e).unwrap();
        }
        replayed.applied_index = f.p.state.applied_index;
        assert_eq!(serde_json::to_value(&replayed).unwrap(), live, "replay diverged");
    }

    /// What cannot be retried is refused with its code and changes nothing: a message no
    /// group dead-lettered, a wrong offset or id, a retry reaching too far back.
    #[test]
    fn a_retry_that_cannot_be_done_changes_nothing() {
        let mut f = Fixture::new();
        f.configure(S, "q", QueueOptions { retry_limit: 1, ..Default::default() });
        let names: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        f.push(2 * S, "q", "p", &refs);
        let part = f.p.state.partition("q", "p").unwrap().id;
        let r = f.pop(3 * S, "q", Some("g"), 20).unwrap();
        f.ack(3 * S, &r, 0, AckStatus::Dlq).unwrap();
        for o in 1..20 {
            f.ack(3 * S, &r, o, AckStatus::Completed).unwrap();
        }
        let before = serde_json::to_value(&f.p.state).unwrap();
        f.p.limits.max_retry_distance = 10;
        for (txid, offset, code) in [
            ("m1", 1, "not_dead_lettered"),
            ("m0", 1, "message_not_found"),
            ("zz", 0, "message_not_found"),
            ("m0", 99, "message_not_found"),
            ("m0", 0, "retry_too_far_behind"),
        ] {
            f.at(4 * S);
            let e = f.p.retry_message(part, txid, offset).unwrap_err();
            assert_eq!(e.code, code, "{txid}@{offset}");
            f.done();
        }
        assert_eq!(serde_json::to_value(&f.p.state).unwrap(), before, "a refusal changed the state");
        f.p.limits.max_retry_distance = 20;
        f.at(5 * S);
        assert_eq!(f.p.retry_message(part, "m0", 0).unwrap(), ["g"]);
        f.done();
        f.at(5 * S);
        assert_eq!(f.p.retry_message(part, "m0", 0).unwrap_err().code, "not_dead_lettered", "twice is refused");
        f.done();
    }
}
