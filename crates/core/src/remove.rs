//! Deleting through the admin API (issue 16): one message (Queen's `admin.delete_message`),
//! and a consumer group's place on one queue (`admin.delete_consumer_group_for_queue`).
//!
//! Baton's log and segments are append-only: a deleted message is hidden, not erased. It
//! joins the partition's hidden spans (D48), which no consumer over HTTP is given and which
//! pops settle as they pass, so every group, also one that starts later, skips it, and the
//! message lookup answers 404. Kafka readers still read it (a Kafka log has no per-record
//! delete either). Must never hide what is not a message of the partition (a control
//! record, an offset not yet assigned), and deleting twice changes nothing.

use crate::command::CoreError;
use crate::entry::Effect;
use crate::model::PartId;
use crate::plan::{Planned, Planner};

impl Planner {
    /// Hide the message `txid` at `offset` of partition `part` (where a
    /// [`crate::Query::MessageScan`] found it, off the planner); its offset. The offset is
    /// checked again here, so a forged or stale one hides nothing.
    /// Forget `group`'s cursors (and leases) on every partition of `queue`, as Kafka's
    /// OffsetDelete forgets one: its next pop there starts where its subscription mode
    /// says, as a group new to the queue (crate::subscribe); its place on other queues
    /// stays. The number of partitions it had a cursor on.
    pub fn delete_group_on_queue(&mut self, group: &str, queue: &str) -> Planned<u32> {
        let g =
            *self.state.group_ids.get(group).ok_or_else(|| {
                CoreError::not_found("group_not_found", format!("consumer group {group} does not exist"))
            })?;
        let q = self
            .state
            .queue(queue)
            .ok_or_else(|| CoreError::not_found("queue_not_found", format!("queue {queue} does not exist")))?;
        let parts: Vec<PartId> = q
            .parts
            .iter()
            .copied()
            .filter(|p| self.state.parts.get(p).is_some_and(|p| p.cursors.contains_key(&g)))
            .collect();
        for part in &parts {
            self.emit_pub(Effect::DropCursor { part: *part, group: g })?;
        }
        Ok(parts.len() as u32)
    }

    /// The partition `part` if `offset` holds its message `txid` (where a
    /// [`crate::Query::MessageScan`] found it: checked again, so a forged or stale offset
    /// names nothing): `partition_not_found` or `message_not_found` otherwise.
    pub(crate) fn message_at(
        &self,
        part: PartId,
        txid: &str,
        offset: u64,
    ) -> Result<&crate::state::Partition, CoreError> {
        let h = self.state.txid_hash(txid);
        let p =
            self.state.parts.get(&part).ok_or_else(|| {
                CoreError::not_found("partition_not_found", format!("partition {part} does not exist"))
            })?;
        if !p.is_message_with(offset, h) {
            return Err(CoreError::not_found("message_not_found", format!("no message {txid:?} in that partition")));
        }
        Ok(p)
    }

    pub fn delete_message(&mut self, part: PartId, txid: &str, offset: u64) -> Planned<u64> {
        let p = self.message_at(part, txid, offset)?;
        if p.txns.hidden_end(offset).is_none() {
            self.emit_pub(Effect::HideRecord { part, offset })?;
        }
        Ok(offset)
    }
}

#[cfg(test)]
mod tests {
    use crate::plan_tests::{Fixture, S};

    /// The planner checks the offset a scan found: a stale or forged one (another
    /// message's, past the end) hides nothing; the right one hides once.
    #[test]
    fn a_wrong_offset_hides_nothing() {
        let mut f = Fixture::new();
        f.push(S, "q", "p", &["a", "b", "c"]);
        let part = f.p.state.partition("q", "p").unwrap().id;
        let scan = f.p.state.parts[&part].txid_scan(1 << 20).unwrap();
        assert_eq!(scan.find(f.p.state.txid_hash("b")).unwrap(), Some(1), "found off the planner");
        for (txid, offset) in [("b", 0), ("b", 2), ("b", 3), ("zz", 1)] {
            f.at(2 * S);
            let e = f.p.delete_message(part, txid, offset).unwrap_err();
            assert_eq!(e.code, "message_not_found", "{txid}@{offset}");
            f.done();
        }
        assert!(f.p.state.parts[&part].txns.hidden_end(1).is_none(), "nothing hidden");
        f.at(3 * S);
        assert_eq!(f.p.delete_message(part, "b", 1).unwrap(), 1);
        f.done();
        assert!(f.p.state.parts[&part].txns.hidden_end(1).is_some());
        assert!(f.p.state.parts[&part].txns.hidden_end(0).is_none());
    }
}
