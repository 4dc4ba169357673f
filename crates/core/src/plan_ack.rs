//! The planner's acks: settling messages under the lease they were delivered with.
//!
//! A nack (`failed` or `retry`) ends the whole lease: FIFO means redelivery restarts at
//! the first message given back. D85: the later nacks of the same call that name that
//! lease are still charged (a `failed` counts one delivery each), not refused because the
//! first one ended it; a Kafka share consumer that released three records of one
//! acquisition must see each come back with its delivery count moved on.
//!
//! Must never settle under a lease other than the one named (I4), nor charge a message
//! twice in one call, nor charge one that was not unsettled in the lease when it ended.

use crate::command::*;
use crate::entry::Effect;
use crate::model::*;
use crate::partition::Lease;
use crate::plan::{Planned, Planner};
use std::collections::HashMap;

/// A lease a nack of this call ended, as it was just before: (partition, group, lease).
type Ended = HashMap<LeaseId, (PartId, GroupId, Lease)>;

impl Planner {
    /// Settle messages. I4: an ack naming a lease that is not live changes nothing.
    pub fn ack(&mut self, group: Option<&str>, items: &[AckItem]) -> Vec<Planned<()>> {
        let group_name = group.unwrap_or(QUEUE_MODE);
        let Some(&gid) = self.state.group_ids.get(group_name) else {
            let e = CoreError::not_found("group_not_found", format!("consumer group {group_name} has no leases"));
            return items.iter().map(|_| Err(e.clone())).collect();
        };
        // Settle successes before nacks: a nack releases the lease, and the
        // successes of the same batch must not be refused because of it.
        let mut out: Vec<Planned<()>> = vec![Ok(()); items.len()];
        let nack = |s: AckStatus| matches!(s, AckStatus::Failed | AckStatus::Retry);
        for it in items.iter().enumerate().filter(|(_, it)| !nack(it.status)) {
            out[it.0] = self.ack_one(gid, it.1);
        }
        let mut ended: Ended = HashMap::new();
        for (i, it) in items.iter().enumerate().filter(|(_, it)| nack(it.status)) {
            out[i] = match it.lease.filter(|l| ended.contains_key(l)) {
                Some(l) => self.charge_ended(&mut ended, l, it),
                None => {
                    let before = self.live_lease(gid, it);
                    let r = self.ack_one(gid, it);
                    if let (Ok(()), Some(mut lease)) = (&r, before) {
                        // The nack that ended it settled its own message: not charged again.
                        if let Some(pos) = self.position_in(it, &lease) {
                            lease.settled[pos] = true;
                        }
                        ended.insert(lease.id, (it.part, gid, lease));
                    }
                    r
                }
            };
        }
        out
    }

    /// The lease `it` names if it is the group's live one on its partition, copied: O(its
    /// messages), once per lease per call (a second nack naming it finds it in `ended`).
    fn live_lease(&self, group: GroupId, it: &AckItem) -> Option<Lease> {
        let l = self.state.parts.get(&it.part)?.cursors.get(&group)?.lease.as_ref()?;
        (Some(l.id) == it.lease).then(|| l.clone())
    }

    fn position_in(&self, it: &AckItem, lease: &Lease) -> Option<usize> {
        match (it.offset, &it.txid) {
            (Some(o), _) => lease.position(o),
            (None, Some(t)) => {
                let h = self.state.txid_hash(t);
                self.state.parts.get(&it.part)?.lease_position_of(lease, h)
            }
            (None, None) => None,
        }
    }

    /// D85: a nack naming a lease an earlier nack of this call ended. A `failed` is charged
    /// (or dead-lettered past `retryLimit`) as if the lease were still live; a `retry` has
    /// nothing left to do. Same refusals as a live lease for a message not in it or settled.
    fn charge_ended(&mut self, ended: &mut Ended, lease: LeaseId, it: &AckItem) -> Planned<()> {
        let (part, group, l) = &ended[&lease];
        let (part, group) = (*part, *group);
        if part != it.part {
            return Err(CoreError::new(
                ErrorKind::Conflict,
                "lease_not_live",
                "the lease named is expired, released or not this partition's",
            ));
        }
        let pos = self.position_in(it, l).ok_or_else(|| {
            CoreError::new(ErrorKind::Conflict, "not_leased", "that message is not in the group's live lease")
        })?;
        if l.settled[pos] {
            return Err(CoreError::new(
                ErrorKind::Conflict,
                "already_acked",
                "that message was already acknowledged under this lease",
            ));
        }
        let offset = l.offsets[pos];
        if let Some((_, _, l)) = ended.get_mut(&lease) {
            l.settled[pos] = true;
        }
        if it.status == AckStatus::Retry {
            return Ok(());
        }
        let p = &self.state.parts[&part];
        let retry_limit = self.state.queues[&p.queue].options.retry_limit;
        let dead = self.state.queues[&p.queue].options.dead_letters_after_retries();
        let attempts = p.cursors.get(&group).and_then(|c| c.attempts.get(&offset)).copied().unwrap_or(0);
        let status = if attempts + 1 > retry_limit && dead { AckStatus::Dlq } else { AckStatus::Failed };
        self.emit(Effect::Ack { part, group, lease, offset, status, error: it.error.clone() })
    }

    fn ack_one(&mut self, group: GroupId, it: &AckItem) -> Planned<()> {
        let now = self.ts;
        let p = self
            .state
            .parts
            .get(&it.part)
            .ok_or_else(|| CoreError::not_found("partition_not_found", "no partition with that partitionId"))?;
        let opts = self.state.queues[&p.queue].options.clone();
        let lease = p.cursors.get(&group).and_then(|c| c.lease.as_ref()).ok_or_else(|| {
            CoreError::new(ErrorKind::Conflict, "lease_not_live", "no live lease for this group on the partition")
        })?;
        // I4: the ack names its lease. One without would settle under whatever lease the
        // group holds now, a later consumer's included (issue 12 item 8).
        let Some(named) = it.lease else {
            return Err(CoreError::new(
                ErrorKind::Conflict,
                "lease_required",
                "an ack names the leaseId its message was delivered with",
            ));
        };
        #[cfg(feature = "mutants")]
        let (named, now) = if baton_log::mutant::is("ack-unfenced") { (lease.id, 0) } else { (named, now) };
        if named != lease.id || lease.expires <= now {
            return Err(CoreError::new(
                ErrorKind::Conflict,
                "lease_not_live",
                "the lease named is expired, released or not this partition's",
            ));
        }
        let pos = match (it.offset, &it.txid) {
            (Some(o), _) => lease.position(o),
            (None, Some(t)) => {
                let h = self.state.txid_hash(t);
                p.lease_position_of(lease, h)
            }
            (None, None) => return Err(CoreError::bad("missing_field", "an ack names a transactionId or an offset")),
        }
        .ok_or_else(|| {
            CoreError::new(ErrorKind::Conflict, "not_leased", "that message is not in the group's live lease")
        })?;
        if lease.settled[pos] {
            return Err(CoreError::new(
                ErrorKind::Conflict,
                "already_acked",
                "that message was already acknowledged under this lease",
            ));
        }
        let offset = lease.offsets[pos];
        let lease_id = lease.id;
        let attempts = p.cursors[&group].attempts.get(&offset).copied().unwrap_or(0);
        let status = match it.status {
            AckStatus::Failed if attempts + 1 > opts.retry_limit && opts.dead_letters_after_retries() => AckStatus::Dlq,
            s => s,
        };
        self.emit(Effect::Ack { part: it.part, group, lease: lease_id, offset, status, error: it.error.clone() })?;
        // A released lease opens the partition to the group's other consumers: wake their long polls.
        let p = &self.state.parts[&it.part];
        if p.cursors.get(&group).is_none_or(|c| c.lease.is_none()) {
            self.pushed_queues.entry(p.queue).or_default();
        }
        Ok(())
    }
}
