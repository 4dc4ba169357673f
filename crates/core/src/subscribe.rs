//! Where a consumer group starts reading a queue it has not read before (issue 16 item 1).
//!
//! Owns one rule: a pop's subscription mode (`subscriptionMode=new`, `subscriptionFrom`)
//! applies per (group, queue), from that group's first pop on that queue, as Queen keeps a
//! subscription per queue. The group's own `from_ts` is what its first pop anywhere asked
//! for, so without this a group that already read queue A and then first pops queue B with
//! `new` was given B's whole backlog (or, made with `new` on A, skipped B's history when it
//! asked for all of it). The first pop of a group on a queue gives the group a cursor on
//! every partition of it (one `Seek` each, in the pop's entry), where that pop's mode says:
//! the cursors are the record that the group started there, so a later pop's mode changes
//! nothing, even when the first one found nothing to deliver. Must never move a cursor
//! that exists.

use crate::entry::Effect;
use crate::model::{GroupId, Micros, QueueId};
use crate::plan::{Planned, Planner};

impl Planner {
    /// Start `group` on queue `q` where this pop's `from_ts` says, unless it has started there.
    pub(crate) fn start_group_on_queue(&mut self, q: QueueId, group: GroupId, from_ts: Option<Micros>) -> Planned<()> {
        // A partition where the group was last seen with a cursor: one lookup, not a scan of
        // the queue, on every pop.
        if let Some(p) = self.started.get(&(group, q)) {
            if self.state.parts.get(p).is_some_and(|p| p.cursors.contains_key(&group)) {
                return Ok(());
            }
        }
        let parts = self.state.queues.get(&q).map(|q| q.parts.clone()).unwrap_or_default();
        let has = |p: &crate::model::PartId| self.state.parts.get(p).is_some_and(|p| p.cursors.contains_key(&group));
        if let Some(p) = parts.iter().find(|p| has(p)) {
            self.started.insert((group, q), *p);
            return Ok(());
        }
        for part in parts {
            let Some(p) = self.state.parts.get(&part) else { continue };
            let offset = from_ts.map_or(p.start, |t| p.offset_at_ts(t)).max(p.start);
            self.emit_pub(Effect::Seek { part, group, offset })?;
            self.started.insert((group, q), part);
        }
        Ok(())
    }
}
