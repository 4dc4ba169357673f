//! The partition table, and the copy a checkpoint takes of it (D31).
//!
//! Owns `State::parts`. Every way to change a partition goes through here
//! ([`Parts::get_mut`], [`Parts::values_mut`], [`Parts::insert`],
//! [`Parts::remove`]) and lists it as changed; reads go through `Deref` to the
//! map and cannot change anything. A checkpoint's copy
//! ([`Parts::snapshot`]) re-copies only the partitions changed since the last
//! one and shares the rest (`Arc`), so its cost on the planner is
//! O(changed partitions + a table of pointers), not O(partitions) deep copies:
//! the deep copy of 100,000 partitions paused the planner 300–400 ms every
//! checkpoint. Must never let a change bypass the list: a partition changed
//! but not re-copied would be checkpointed as it was.

use crate::model::PartId;
use crate::state::Partition;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

#[derive(Debug, Default)]
pub struct Parts {
    map: HashMap<PartId, Partition>,
    /// Changed (or added, or removed) since the last snapshot.
    changed: HashSet<PartId>,
    /// The copy each partition had at the last snapshot.
    copies: HashMap<PartId, Arc<Partition>>,
    /// Set only in a checkpoint's copy of the state ([`Parts::of_snapshot`]): what it
    /// serializes, in place of `map` (which is empty there).
    snapshot: Option<PartsSnapshot>,
}

/// A checkpoint's view of the table: serialized exactly as the map it copies.
#[derive(Debug, Clone, Default)]
pub struct PartsSnapshot(HashMap<PartId, Arc<Partition>>);

impl std::ops::Deref for Parts {
    type Target = HashMap<PartId, Partition>;
    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl Parts {
    pub fn get_mut(&mut self, id: &PartId) -> Option<&mut Partition> {
        let p = self.map.get_mut(id)?;
        self.changed.insert(*id);
        Some(p)
    }

    /// Every partition, each listed as changed (rare: a group deleted, recovery).
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Partition> {
        self.changed.extend(self.map.keys().copied());
        self.map.values_mut()
    }

    pub fn insert(&mut self, id: PartId, p: Partition) -> Option<Partition> {
        self.changed.insert(id);
        self.map.insert(id, p)
    }

    pub fn remove(&mut self, id: &PartId) -> Option<Partition> {
        self.changed.insert(*id);
        self.map.remove(id)
    }

    /// The table as of now, for a checkpoint: fresh copies of the partitions changed since
    /// the last call, shared copies of the others.
    pub fn snapshot(&mut self) -> PartsSnapshot {
        for id in self.changed.drain() {
            match self.map.get(&id) {
                Some(p) => self.copies.insert(id, Arc::new(p.clone())),
                None => self.copies.remove(&id),
            };
        }
        PartsSnapshot(self.copies.clone())
    }

    /// The table of a checkpoint's copy of the state: serialized from `snap`, nothing else in it.
    pub fn of_snapshot(snap: PartsSnapshot) -> Parts {
        Parts { snapshot: Some(snap), ..Default::default() }
    }
}

/// A deep copy (tests and tools compare states); checkpoints use [`Parts::snapshot`].
impl Clone for Parts {
    fn clone(&self) -> Self {
        Parts {
            map: self.map.clone(),
            changed: self.map.keys().copied().collect(),
            copies: HashMap::new(),
            snapshot: self.snapshot.clone(),
        }
    }
}

impl<'a> IntoIterator for &'a Parts {
    type Item = (&'a PartId, &'a Partition);
    type IntoIter = std::collections::hash_map::Iter<'a, PartId, Partition>;
    fn into_iter(self) -> Self::IntoIter {
        self.map.iter()
    }
}

impl Serialize for Parts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.snapshot {
            Some(snap) => snap.serialize(s),
            None => self.map.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Parts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = HashMap::<PartId, Partition>::deserialize(d)?;
        let changed = map.keys().copied().collect();
        Ok(Parts { map, changed, copies: HashMap::new(), snapshot: None })
    }
}

impl Serialize for PartsSnapshot {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, &**v)))
    }
}

impl PartsSnapshot {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(id: PartId, end: u64) -> Partition {
        Partition {
            id,
            queue: 1,
            name: format!("p{id}"),
            created: 0,
            start: 0,
            end,
            cursors: HashMap::new(),
            dedup: HashMap::new(),
            dedup_order: crate::chunked::Chunked::new(),
            marks: Vec::new(),
            producers: HashMap::new(),
            files: None,
            durable: Default::default(),
        }
    }

    #[test]
    fn a_snapshot_copies_what_changed_and_serializes_as_the_table() {
        let mut parts = Parts::default();
        for id in 0..5 {
            parts.insert(id, part(id, 1));
        }
        let s1 = parts.snapshot();
        assert_eq!(bincode::serialize(&s1).unwrap().len(), bincode::serialize(&parts).unwrap().len());
        parts.get_mut(&2).unwrap().end = 7;
        parts.remove(&4);
        parts.insert(9, part(9, 3));
        let s2 = parts.snapshot();
        // The first snapshot is untouched by later changes; the second sees all of them.
        assert_eq!(s1.0[&2].end, 1);
        assert_eq!((s2.0[&2].end, s2.0.contains_key(&4), s2.0[&9].end), (7, false, 3));
        assert!(Arc::ptr_eq(&s1.0[&0], &s2.0[&0]), "an unchanged partition is shared, not copied");
        let back: HashMap<PartId, Partition> = bincode::deserialize(&bincode::serialize(&s2).unwrap()).unwrap();
        let mut ends: Vec<(PartId, u64)> = back.iter().map(|(k, p)| (*k, p.end)).collect();
        ends.sort();
        assert_eq!(ends, vec![(0, 1), (1, 1), (2, 7), (3, 1), (9, 3)]);
        // Reads cannot change anything; values_mut lists every partition.
        for p in parts.values_mut() {
            p.start = 1;
        }
        assert!(parts.snapshot().0.values().all(|p| p.start == 1));
        // A copy of the state made for a checkpoint serializes the snapshot.
        let copy = Parts::of_snapshot(parts.snapshot()).clone();
        assert_eq!(bincode::serialize(&copy).unwrap(), bincode::serialize(&parts.snapshot()).unwrap());
    }
}
