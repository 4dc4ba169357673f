//! Which partitions of a queue may hold something deliverable for a consumer
//! group (D30), so a pop that finds nothing costs O(1), not O(partitions).
//!
//! Owns a derived index, never the truth: every partition that could have a
//! deliverable message for the group is in its set (apply adds a partition on
//! every effect that can make it so: an append, a lease ended, a cursor
//! moved), and a pop drops the ones it finds with nothing for it. Must never
//! miss a partition: a wrong member costs one look, a missing one would hide
//! messages. Not in checkpoints or their copies: a group's set is built from
//! all the queue's partitions the first time it pops after a start.

use crate::model::{GroupId, Micros, PartId, QueueId};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};

/// One group's candidates in one queue, in the order pops try them (round robin).
#[derive(Debug, Default)]
pub struct Ready {
    members: HashSet<PartId>,
    /// Members in order, plus entries of removed ones (skipped when met).
    order: VecDeque<PartId>,
    /// Partitions the group holds a lease on, by expiry: a candidate again once due, so a
    /// pop expires the lease itself as it did when it looked at every partition.
    held: BinaryHeap<Reverse<(Micros, PartId)>>,
}

impl Ready {
    fn from_parts(parts: &[PartId]) -> Ready {
        Ready {
            members: parts.iter().copied().collect(),
            order: parts.iter().copied().collect(),
            held: BinaryHeap::new(),
        }
    }

    pub fn insert(&mut self, p: PartId) {
        if self.members.insert(p) {
            self.order.push_back(p);
            if self.order.len() > 2 * self.members.len() + 64 {
                self.compact();
            }
        }
    }

    pub fn remove(&mut self, p: PartId) {
        self.members.remove(&p);
    }

    /// Leased until `expires`: not a candidate until then.
    pub fn hold(&mut self, p: PartId, expires: Micros) {
        self.members.remove(&p);
        self.held.push(Reverse((expires, p)));
    }

    /// Partitions whose lease is due by `now` are candidates again.
    pub fn wake_due(&mut self, now: Micros) {
        while self.held.peek().is_some_and(|Reverse((t, _))| *t <= now) {
            let Reverse((_, p)) = self.held.pop().expect("peeked");
            self.insert(p);
        }
    }

    /// The next candidate, moved to the back of the order as it is handed out: a member
    /// is never out of the order, whatever the caller then does (returns early, fails).
    pub fn next_candidate(&mut self) -> Option<PartId> {
        for _ in 0..self.order.len() {
            let p = self.order.pop_front()?;
            if self.members.contains(&p) {
                self.order.push_back(p);
                return Some(p);
            }
        }
        None
    }

    /// Entries a full pass may look at.
    pub fn pass_len(&self) -> usize {
        self.order.len()
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    fn compact(&mut self) {
        let mut seen = HashSet::with_capacity(self.members.len());
        self.order.retain(|p| self.members.contains(p) && seen.insert(*p));
    }
}

#[derive(Debug, Default)]
pub struct ReadyIndex {
    by_queue: HashMap<QueueId, HashMap<GroupId, Ready>>,
}

/// A checkpoint's copy does not need it (it is derived), and copying it would cost the
/// planner O(partitions x groups).
impl Clone for ReadyIndex {
    fn clone(&self) -> Self {
        ReadyIndex::default()
    }
}

impl ReadyIndex {
    /// The group's candidates, made from `parts` (every partition of the queue) if untracked.
    pub fn get(&mut self, q: QueueId, g: GroupId, parts: &[PartId]) -> &mut Ready {
        self.by_queue.entry(q).or_default().entry(g).or_insert_with(|| Ready::from_parts(parts))
    }

    /// New messages in `p`: a candidate for every group tracked on the queue.
    pub fn appended(&mut self, q: QueueId, p: PartId) {
        if let Some(groups) = self.by_queue.get_mut(&q) {
            for r in groups.values_mut() {
                r.insert(p);
            }
        }
    }

    /// The group's lease on `p` ended, or its cursor moved: a candidate again.
    pub fn released(&mut self, q: QueueId, g: GroupId, p: PartId) {
        if let Some(r) = self.by_queue.get_mut(&q).and_then(|m| m.get_mut(&g)) {
            r.insert(p);
        }
    }

    /// The group holds a lease on `p` until `expires`: no other pop of the group may take
    /// it (FIFO) before then.
    pub fn leased(&mut self, q: QueueId, g: GroupId, p: PartId, expires: Micros) {
        if let Some(r) = self.by_queue.get_mut(&q).and_then(|m| m.get_mut(&g)) {
            r.hold(p, expires);
        }
    }

    /// `p` has nothing deliverable for the group now.
    pub fn exhausted(&mut self, q: QueueId, g: GroupId, p: PartId) {
        if let Some(r) = self.by_queue.get_mut(&q).and_then(|m| m.get_mut(&g)) {
            r.remove(p);
        }
    }

    pub fn forget_group(&mut self, g: GroupId) {
        for groups in self.by_queue.values_mut() {
            groups.remove(&g);
        }
    }

    pub fn forget_queue(&mut self, q: QueueId) {
        self.by_queue.remove(&q);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_come_round_in_order_and_removed_ones_are_skipped() {
        let mut idx = ReadyIndex::default();
        let r = idx.get(1, 7, &[10, 11, 12]);
        assert_eq!(r.next_candidate(), Some(10));
        r.remove(11);
        assert_eq!(
            (r.next_candidate(), r.next_candidate(), r.next_candidate()),
            (Some(12), Some(10), Some(12)),
            "round robin without 11"
        );
        r.remove(10);
        r.remove(12);
        assert_eq!(r.next_candidate(), None);
        idx.appended(1, 11);
        idx.released(1, 7, 12);
        idx.released(2, 7, 99);
        idx.leased(1, 7, 12, 500);
        let r = idx.get(1, 7, &[]);
        assert_eq!((r.next_candidate(), r.next_candidate()), (Some(11), Some(11)));
        assert_eq!(r.len(), 1);
        r.wake_due(499);
        assert_eq!(r.len(), 1, "the lease is not due yet");
        r.wake_due(500);
        assert_eq!(r.len(), 2, "a due lease makes its partition a candidate again");
    }

    #[test]
    fn the_order_stays_bounded_by_its_members() {
        let mut r = Ready::from_parts(&[1, 2]);
        for _ in 0..10_000 {
            r.remove(1);
            r.insert(1);
        }
        assert!(r.pass_len() <= 2 * r.len() + 65, "{}", r.pass_len());
        let mut seen = Vec::new();
        while let Some(p) = r.next_candidate() {
            seen.push(p);
            r.remove(p);
        }
        seen.sort();
        assert_eq!(seen, [1, 2]);
    }
}
