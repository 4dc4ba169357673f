//! A Kafka group's committed offset as a register: each `kafka_commit` writes
//! it, each `kafka_offset_fetch` reads it. `kafka_commit_backwards` is a read
//! that returned a value every write of which was certainly overwritten
//! before the read began: the offset the group sees went back to something
//! it had moved past (or to "none" after a commit).
//!
//! Committing a lower offset on purpose is a write like any other, so it
//! never counts as going backwards. Must never judge the records themselves
//! (writes.rs owns Kafka records).

use super::model::*;
use super::verdict::{Kind, Verdict, Violation};

#[derive(Clone, Copy)]
struct W {
    inv: Time,
    comp: Time,
    value: i64,
    op: u32,
}

/// Kafka's "no committed offset".
const NONE_COMMITTED: i64 = -1;

pub fn check(h: &History, v: &mut Verdict) {
    let mut commits: FxMap<(Sym, PartId), Vec<W>> = FxMap::default();
    let mut reads: FxMap<(Sym, PartId), Vec<u32>> = FxMap::default();
    for (i, op) in h.ops.iter().enumerate() {
        match &op.call {
            Call::KCommit { group, part, offset } if op.maybe() => commits
                .entry((*group, *part))
                .or_default()
                .push(W { inv: op.inv, comp: op.comp, value: *offset, op: i as u32 }),
            Call::KOffsetFetch { group, part, got: Some(_) } => {
                reads.entry((*group, *part)).or_default().push(i as u32)
            }
            _ => {}
        }
    }
    let mut keys: Vec<_> = reads.keys().copied().collect();
    keys.sort_unstable();
    for key in keys {
        let all = commits.remove(&key).unwrap_or_default();
        let mut ok: Vec<W> = all.iter().copied().filter(|w| h.ops[w.op as usize].outcome == Outcome::Ok).collect();
        ok.sort_unstable_by_key(|w| w.inv);
        // first_two[i]: among ok[i..], the write answered first, and the one answered
        // first among those holding another value: "the first overwrite by a value
        // other than v" is then one of the two.
        let mut first_two: Vec<(Option<W>, Option<W>)> = vec![(None, None); ok.len() + 1];
        for i in (0..ok.len()).rev() {
            let (b1, b2) = first_two[i + 1];
            let e = ok[i];
            first_two[i] = match b1 {
                None => (Some(e), None),
                Some(b) if e.comp < b.comp => (Some(e), if e.value != b.value { Some(b) } else { b2 }),
                Some(b) if e.value != b.value && b2.is_none_or(|x| e.comp < x.comp) => (b1, Some(e)),
                _ => (b1, b2),
            };
        }
        // `after`: the candidate write's completion; `None` for the initial "none",
        // which precedes every write.
        let overwriter = |after: Option<Time>, value: i64| -> Option<W> {
            let i = after.map_or(0, |after| ok.partition_point(|w| w.inv <= after));
            let (b1, b2) = first_two[i];
            match b1 {
                Some(b) if b.value != value => Some(b),
                _ => b2,
            }
        };
        for &r in &reads[&key] {
            let rop = &h.ops[r as usize];
            let Call::KOffsetFetch { got: Some(value), .. } = &rop.call else { continue };
            let mut candidates: Vec<Option<W>> =
                all.iter().filter(|w| w.value == *value && w.inv < rop.comp).map(|w| Some(*w)).collect();
            if *value == NONE_COMMITTED {
                candidates.push(None);
            }
            // The read returned one candidate's value: legal if some candidate may
            // have been the last write before it.
            let mut proof = None;
            let legal =
                candidates.iter().any(|c| match overwriter(c.map(|w| w.comp), *value).filter(|w| w.comp < rop.inv) {
                    Some(w) => {
                        proof = Some((*c, w));
                        false
                    }
                    None => true,
                });
            if legal {
                continue;
            }
            let mut lines = rop.lines();
            let what = match proof {
                Some((c, w)) => {
                    lines.extend(h.ops[w.op as usize].lines());
                    if let Some(c) = c {
                        lines.extend(h.ops[c.op as usize].lines());
                    }
                    format!("after the commit of {} was answered, a fetch returned {value}", w.value)
                }
                None => format!("a fetch returned {value}, which no commit wrote"),
            };
            v.flag(Violation {
                kind: Kind::KafkaCommitBackwards,
                partition: h.part_name(key.1),
                group: Some(h.name(key.0).to_owned()),
                offset: u64::try_from(*value).ok(),
                txid: None,
                detail: what,
                lines,
            });
        }
    }
}
