//! A double-ended queue of per-message metadata in shared fixed-size chunks.
//!
//! Why: a checkpoint copies the state on the planner thread (the only
//! consistent moment, D11). Per-message arrays (transaction-id hashes, batch
//! metadata, the dedup order) grow with the number of stored messages, and
//! copying them whole stalled every request for 60–150 ms at 400k messages.
//! Here a copy clones one `Arc` per chunk; the planner's next push copies only
//! the shared tail chunk it writes to (copy on write), so a checkpoint costs
//! O(messages / CHUNK) on the planner instead of O(messages).
//!
//! Invariant kept by every method: every chunk but the last is full, and the
//! first chunk's first `head` elements are already popped. So logical index
//! `i` lives at `head + i` counted over full chunks.
//!
//! Serialized as a plain sequence: the same bytes as a `VecDeque` under
//! bincode, so the checkpoint format does not depend on the chunk size.

use serde::de::{SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

const CHUNK: usize = 1024;

#[derive(Clone)]
pub struct Chunked<T> {
    chunks: VecDeque<Arc<Vec<T>>>,
    head: usize,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked { chunks: VecDeque::new(), head: 0, len: 0 }
    }
}

impl<T: Clone> Chunked<T> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        if i >= self.len {
            return None;
        }
        let j = self.head + i;
        Some(&self.chunks[j / CHUNK][j % CHUNK])
    }

    pub fn front(&self) -> Option<&T> {
        self.get(0)
    }

    pub fn push_back(&mut self, x: T) {
        if self.chunks.back().is_none_or(|c| c.len() == CHUNK) {
            // A first chunk starts small: most partitions hold a few entries, and one
            // allocated whole cost each of them kilobytes (issue 18: bytes per idle partition).
            let cap = if self.chunks.is_empty() { 4 } else { CHUNK };
            self.chunks.push_back(Arc::new(Vec::with_capacity(cap)));
        }
        let tail = self.chunks.back_mut().expect("a tail chunk was just ensured");
        Arc::make_mut(tail).push(x);
        self.len += 1;
    }

    /// [`Self::push_back`] of each, one copy-on-write check per chunk instead of per element.
    pub fn extend(&mut self, xs: impl IntoIterator<Item = T>) {
        let mut it = xs.into_iter().peekable();
        while it.peek().is_some() {
            if self.chunks.back().is_none_or(|c| c.len() == CHUNK) {
                let cap = if self.chunks.is_empty() { 4 } else { CHUNK };
                self.chunks.push_back(Arc::new(Vec::with_capacity(cap)));
            }
            let tail = Arc::make_mut(self.chunks.back_mut().expect("a tail chunk was just ensured"));
            while tail.len() < CHUNK {
                let Some(x) = it.next() else { break };
                tail.push(x);
                self.len += 1;
            }
        }
    }

    pub fn pop_front(&mut self) -> Option<T> {
        let x = self.front()?.clone();
        self.head += 1;
        self.len -= 1;
        if self.len == 0 {
            self.chunks.clear();
            self.head = 0;
        } else if self.head == CHUNK {
            self.chunks.pop_front();
            self.head = 0;
        }
        Some(x)
    }

    /// Index of the first element for which `pred` is false, assuming the
    /// elements are partitioned (all `true` before all `false`), as
    /// `slice::partition_point`.
    pub fn partition_point(&self, mut pred: impl FnMut(&T) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.get(mid).expect("mid < len")) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + '_ {
        let head = self.head;
        self.chunks.iter().enumerate().flat_map(move |(k, c)| c[if k == 0 { head } else { 0 }..].iter())
    }
}

impl<T: Clone> Extend<T> for Chunked<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, it: I) {
        for x in it {
            self.push_back(x);
        }
    }
}

impl<T: Clone> std::ops::Index<usize> for Chunked<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        self.get(i).unwrap_or_else(|| panic!("index {i} out of range for Chunked of length {}", self.len))
    }
}

impl<T: Clone + fmt::Debug> fmt::Debug for Chunked<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Clone + PartialEq> PartialEq for Chunked<T> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl<T: Clone + Serialize> Serialize for Chunked<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.len))?;
        for x in self.iter() {
            seq.serialize_element(x)?;
        }
        seq.end()
    }
}

impl<'de, T: Clone + Deserialize<'de>> Deserialize<'de> for Chunked<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Clone + Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Chunked<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Chunked<T>, A::Error> {
                let mut c = Chunked::new();
                while let Some(x) = seq.next_element()? {
                    c.push_back(x);
                }
                Ok(c)
            }
        }
        d.deserialize_seq(V(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random pushes and pops against a VecDeque, across chunk boundaries,
    /// with copies taken in between that must not change.
    #[test]
    fn behaves_as_a_vecdeque_and_copies_do_not_move() {
        let mut c: Chunked<u64> = Chunked::new();
        let mut d: VecDeque<u64> = VecDeque::new();
        let mut copies: Vec<(Chunked<u64>, Vec<u64>)> = Vec::new();
        let mut x = 0x9e3779b97f4a7c15u64;
        for step in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x.is_multiple_of(3) {
                assert_eq!(c.pop_front(), d.pop_front());
            } else if x.is_multiple_of(5) {
                // A run across chunk boundaries (up to 1.5 chunks), as the dedup window adds.
                let run = (x % (CHUNK as u64 * 3 / 2)) as usize;
                c.extend((0..run).map(|k| step * 10_000 + k as u64));
                d.extend((0..run).map(|k| step * 10_000 + k as u64));
            } else {
                c.push_back(step);
                d.push_back(step);
            }
            if step.is_multiple_of(2_500) {
                copies.push((c.clone(), d.iter().copied().collect()));
            }
            assert_eq!(c.len(), d.len());
        }
        assert!(c.iter().copied().eq(d.iter().copied()));
        assert!(c.iter().rev().copied().eq(d.iter().rev().copied()));
        for i in [0, 1, CHUNK - 1, CHUNK, d.len().saturating_sub(1)] {
            assert_eq!(c.get(i), d.get(i));
        }
        assert_eq!(c.get(d.len()), None);
        for (copy, want) in copies {
            assert!(copy.iter().copied().eq(want.iter().copied()));
        }
    }

    #[test]
    fn partition_point_matches_the_slice_one() {
        let mut c = Chunked::new();
        for i in 0..3_000u64 {
            c.push_back(i * 2);
        }
        for _ in 0..1_500 {
            c.pop_front();
        }
        let v: Vec<u64> = c.iter().copied().collect();
        for probe in [0, 2_999, 3_000, 3_001, 4_500, 5_998, 6_000, 9_999] {
            assert_eq!(c.partition_point(|x| *x < probe), v.partition_point(|x| *x < probe), "probe {probe}");
        }
    }

    #[test]
    fn serializes_as_a_vecdeque_does() {
        let mut c = Chunked::new();
        let mut d = VecDeque::new();
        for i in 0..(CHUNK as u64 * 2 + 7) {
            c.push_back((i, i * 3));
            d.push_back((i, i * 3));
        }
        c.pop_front();
        d.pop_front();
        let cb = bincode::serialize(&c).unwrap();
        assert_eq!(cb, bincode::serialize(&d).unwrap());
        let back: Chunked<(u64, u64)> = bincode::deserialize(&cb).unwrap();
        assert_eq!(back, c);
    }
}
