//! The partition table, and the copy a checkpoint takes of it (D31, D32).
//!
//! Owns `State::parts`. Reads go through `Deref` to the map; changes through
//! [`Parts::get_mut`], [`Parts::values_mut`], [`Parts::insert`] and
//! [`Parts::remove`]. A checkpoint's copy ([`Parts::snapshot`]) is a pointer per
//! partition to its checkpointed fields (`Arc<PartMeta>`): a partition changed
//! while the copy is alive copies its own fields first (`Partition`'s
//! `DerefMut`), so the copy cannot see a later change, and its cost on the
//! planner is O(partitions) pointer copies (about a millisecond at 100,000), not
//! deep copies: re-copying the changed partitions paused the planner 48 ms for
//! 15,000 of them, 117 ms for 36,000. Must never hand out `&mut PartMeta` other
//! than through `DerefMut`.

use crate::model::PartId;
use crate::state::{PartMeta, Partition};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Debug, Default, Clone)]
pub struct Parts {
    map: HashMap<PartId, Partition>,
    /// Set only in a checkpoint's copy of the state ([`Parts::of_snapshot`]): what it
    /// serializes, in place of `map` (which is empty there).
    snapshot: Option<PartsSnapshot>,
}

/// A checkpoint's view of the table, in the map's order: serialized exactly as the map.
#[derive(Debug, Clone, Default)]
pub struct PartsSnapshot(Vec<(PartId, Arc<PartMeta>)>);

impl std::ops::Deref for Parts {
    type Target = HashMap<PartId, Partition>;
    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl Parts {
    pub fn get_mut(&mut self, id: &PartId) -> Option<&mut Partition> {
        self.map.get_mut(id)
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Partition> {
        self.map.values_mut()
    }

    pub fn insert(&mut self, id: PartId, p: Partition) -> Option<Partition> {
        self.map.insert(id, p)
    }

    pub fn remove(&mut self, id: &PartId) -> Option<Partition> {
        self.map.remove(id)
    }

    /// The table as of now, for a checkpoint: each partition's checkpointed fields, shared.
    pub fn snapshot(&self) -> PartsSnapshot {
        PartsSnapshot(self.map.iter().map(|(k, p)| (*k, p.meta())).collect())
    }

    /// The table of a checkpoint's copy of the state: serialized from `snap`, nothing else in it.
    pub fn of_snapshot(snap: PartsSnapshot) -> Parts {
        Parts { snapshot: Some(snap), ..Default::default() }
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
        Ok(Parts { map: HashMap::<PartId, Partition>::deserialize(d)?, snapshot: None })
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

    #[cfg(test)]
    fn get(&self, id: PartId) -> Option<&Arc<PartMeta>> {
        self.0.iter().find(|(k, _)| *k == id).map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(id: PartId, end: u64) -> Partition {
        let meta = PartMeta {
            id,
            queue: 1,
            name: format!("p{id}"),
            created: 0,
            start: 0,
            end,
            cursors: HashMap::new(),
            marks: Vec::new(),
            producers: HashMap::new(),
            txns: Default::default(),
        };
        Partition::new(meta, None)
    }

    #[test]
    fn a_snapshot_shares_until_a_change_and_serializes_as_the_table() {
        let mut parts = Parts::default();
        for id in 0..5 {
            parts.insert(id, part(id, 1));
        }
        let s1 = parts.snapshot();
        assert_eq!(bincode::serialize(&s1).unwrap(), bincode::serialize(&parts).unwrap());
        parts.get_mut(&2).unwrap().end = 7;
        parts.remove(&4);
        parts.insert(9, part(9, 3));
        let s2 = parts.snapshot();
        // The first snapshot is untouched by later changes; the second sees all of them.
        assert_eq!(s1.get(2).unwrap().end, 1);
        assert_eq!((s2.get(2).unwrap().end, s2.get(4).is_some(), s2.get(9).unwrap().end), (7, false, 3));
        assert!(Arc::ptr_eq(s1.get(0).unwrap(), s2.get(0).unwrap()), "an unchanged partition is shared, not copied");
        drop((s1, s2));
        // With no snapshot alive a change copies nothing.
        let before = Arc::as_ptr(&parts[&3].meta());
        parts.get_mut(&3).unwrap().end = 5;
        assert_eq!(Arc::as_ptr(&parts[&3].meta()), before);
        let back: HashMap<PartId, Partition> =
            bincode::deserialize(&bincode::serialize(&parts.snapshot()).unwrap()).unwrap();
        let mut ends: Vec<(PartId, u64)> = back.iter().map(|(k, p)| (*k, p.end)).collect();
        ends.sort();
        assert_eq!(ends, vec![(0, 1), (1, 1), (2, 7), (3, 5), (9, 3)]);
        // A snapshot alive across values_mut keeps the old fields.
        let s3 = parts.snapshot();
        for p in parts.values_mut() {
            p.start = 1;
        }
        assert!(s3.0.iter().all(|(_, p)| p.start == 0));
        assert!(parts.snapshot().0.iter().all(|(_, p)| p.start == 1));
        // A copy of the state made for a checkpoint serializes the snapshot.
        let copy = Parts::of_snapshot(parts.snapshot()).clone();
        assert_eq!(bincode::serialize(&copy).unwrap(), bincode::serialize(&parts.snapshot()).unwrap());
    }
}
