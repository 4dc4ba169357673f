//! The rules about what was written: every write answered ok is in the final
//! log (`lost`); everything in a log or delivered was written by an operation
//! that may have taken effect (`phantom`, `rolled_back_visible`); a
//! transaction is all or nothing (`torn_txn`); a deduplicated transactionId
//! is stored once (`dedup_stored_twice`); an idempotent Kafka producer's
//! record is stored once (`kafka_idempotent_duplicate`).
//!
//! Each rule flags only what no linearization allows: an unknown operation
//! may have written (or not), at any time after its invocation; a failed one
//! wrote nothing. Must never judge deliveries against leases (leases.rs).

use super::index::{possible, Ix};
use super::model::*;
use super::verdict::{Kind, Verdict, Violation, Why};

pub fn check(h: &History, ix: &Ix, skew: Time, v: &mut Verdict) {
    lost(h, ix, v);
    unexplained_entries(h, ix, v);
    deliveries(h, ix, v);
    torn(h, ix, v);
    dedup(h, ix, skew, v);
    kafka_duplicates(h, ix, v);
}

fn at(h: &History, kind: Kind, part: PartId, detail: String, lines: Vec<u32>) -> Violation {
    Violation { kind, partition: h.part_name(part), group: None, offset: None, txid: None, detail, lines }
}

/// A write answered ok (queued, duplicate, a committed transaction's push, an
/// acknowledged Kafka record) must be in its partition's final log.
fn lost(h: &History, ix: &Ix, v: &mut Verdict) {
    let mut unread: FxMap<PartId, (u64, u32)> = FxMap::default();
    for op in h.ops.iter().filter(|o| o.outcome == Outcome::Ok) {
        for (k, w, _) in super::index::writes(op) {
            if let Call::Push { statuses, .. } = &op.call {
                debug_assert!(statuses[k as usize] != PushStatus::Unanswered);
            }
            let Some(_) = h.logs.get(&w.part) else {
                let e = unread.entry(w.part).or_insert((0, op.comp_line));
                e.0 += 1;
                continue;
            };
            let present = if w.txid != NONE {
                ix.log_txid.count((w.part, w.txid)) > 0
            } else {
                ix.log_payload.count((w.part, w.payload)) > 0
            };
            if !present {
                let what = if w.txid != NONE { "transactionId" } else { "record" };
                let mut x = at(
                    h,
                    Kind::Lost,
                    w.part,
                    format!("{} answered ok, but its {what} is not in the final log", op.call.name()),
                    op.lines(),
                );
                x.txid = Some(h.name(if w.txid != NONE { w.txid } else { w.payload }).to_owned());
                v.flag(x);
            }
        }
    }
    let mut unread: Vec<_> = unread.into_iter().collect();
    unread.sort_unstable();
    for (part, (n, line)) in unread {
        v.open(
            Why::NoFinalLog,
            || format!("{n} write(s) answered ok to {}, whose final log was not read", h.part_name(part)),
            &[line],
        );
    }
}

/// Every log entry was written by an operation that may have taken effect.
fn unexplained_entries(h: &History, ix: &Ix, v: &mut Verdict) {
    let mut parts: Vec<_> = h.logs.iter().collect();
    parts.sort_unstable_by_key(|(p, _)| **p);
    for (part, log) in parts {
        for (k, e) in log.entries.iter().enumerate() {
            if e.line == 0 {
                continue;
            }
            let by_txid = e.txid != NONE && !ix.possible_writers(h, *part, e.txid).is_empty();
            let by_payload = e.payload != NONE && !ix.possible_kafka_writers(h, *part, e.payload).is_empty();
            if by_txid || by_payload {
                continue;
            }
            // Nothing that may have happened wrote it: say which refused operation did.
            let refused: Vec<u32> = ix
                .by_txid
                .get((*part, e.txid))
                .chain(ix.by_payload.get((*part, e.payload)))
                .map(|(op, _)| op)
                .collect();
            let rolled_back = refused.iter().find(|op| matches!(h.ops[**op as usize].call, Call::Txn { .. }));
            let (kind, detail, mut lines) = match (rolled_back, refused.first()) {
                (Some(t), _) => (
                    Kind::RolledBackVisible,
                    "in the final log, written only by a transaction answered rolled back".to_owned(),
                    h.ops[*t as usize].lines(),
                ),
                (None, Some(op)) => (
                    Kind::Phantom,
                    format!("in the final log, written only by a {} that was refused", h.ops[*op as usize].call.name()),
                    h.ops[*op as usize].lines(),
                ),
                (None, None) => (Kind::Phantom, "in the final log, but no operation wrote it".to_owned(), vec![]),
            };
            lines.push(e.line);
            let mut x = at(h, kind, *part, detail, lines);
            x.offset = Some(log.first + k as u64);
            x.txid = Some(h.name(if e.txid != NONE { e.txid } else { e.payload }).to_owned());
            v.flag(x);
        }
    }
}

/// What a pop or a fetch delivered is what the final log holds at that offset,
/// and was written by an operation that may have taken effect.
fn deliveries(h: &History, ix: &Ix, v: &mut Verdict) {
    for op in &h.ops {
        let (part, msgs, kafka): (PartId, Vec<(u64, Sym)>, bool) = match &op.call {
            Call::Pop { got: Some(g), .. } => (g.part, g.msgs.clone(), false),
            Call::KFetch { part, records } if op.outcome == Outcome::Ok => (*part, records.clone(), true),
            _ => continue,
        };
        let log = h.logs.get(&part);
        for (o, id) in msgs {
            let entry = log.and_then(|l| l.at(o));
            let stored = entry.map(|e| if kafka { e.payload } else { e.txid });
            let wrong = match (log, stored) {
                (Some(l), None) => o >= l.end(),
                (Some(_), Some(s)) => s != NONE && id != NONE && s != id,
                (None, _) => false,
            };
            let written = if kafka {
                !ix.possible_kafka_writers(h, part, id).is_empty()
            } else {
                // A Kafka record popped over HTTP carries a txid the broker minted: the
                // log entry it matches is then explained by its payload's producer.
                !ix.possible_writers(h, part, id).is_empty()
                    || entry.is_some_and(|e| !wrong && !possible(h, ix, part, e).is_empty())
            };
            if !wrong && (written || id == NONE) {
                continue;
            }
            let detail = if wrong {
                match stored {
                    Some(s) => format!("delivered as {}, but the final log holds {} there", h.name(id), h.name(s)),
                    None => "delivered an offset past the end of the final log".to_owned(),
                }
            } else {
                "delivered a message no operation that may have taken effect wrote".to_owned()
            };
            let mut lines = op.lines();
            lines.extend(entry.map(|e| e.line));
            let mut x = at(h, Kind::Phantom, part, detail, lines);
            x.offset = Some(o);
            x.txid = Some(h.name(id).to_owned());
            v.flag(x);
        }
    }
}

/// I2: a transaction's pushes are all in the log or none is. A push counts as
/// "its" only when no other operation may have written that transactionId.
fn torn(h: &History, ix: &Ix, v: &mut Verdict) {
    for (i, op) in h.ops.iter().enumerate() {
        let Call::Txn { pushes, .. } = &op.call else { continue };
        if !op.maybe() || pushes.len() < 2 {
            continue;
        }
        let mut mine = None;
        let mut absent = None;
        for w in pushes {
            let Some(log) = h.logs.get(&w.part) else { continue };
            let offsets: Vec<u64> = ix.log_txid.get((w.part, w.txid)).collect();
            if offsets.is_empty() {
                absent = absent.or(Some(w));
            } else if ix.possible_writers(h, w.part, w.txid).iter().all(|(o, _)| *o == i as u32) {
                mine = mine.or(log.at(offsets[0]).map(|e| (w, e.line)));
            }
        }
        if let (Some((w, line)), Some(gone)) = (mine, absent) {
            let mut lines = op.lines();
            lines.push(line);
            let mut x = at(
                h,
                Kind::TornTxn,
                gone.part,
                format!(
                    "transaction ({}) pushed {} which is in the final log, and {} which is not",
                    outcome(op),
                    h.name(w.txid),
                    h.name(gone.txid)
                ),
                lines,
            );
            x.txid = Some(h.name(gone.txid).to_owned());
            v.flag(x);
        }
    }
}

pub fn outcome(op: &Op) -> &'static str {
    match op.outcome {
        Outcome::Ok => "answered ok",
        Outcome::Failed => "answered failed",
        Outcome::Unknown => "outcome unknown",
    }
}

/// Bounds on when each offset of a partition was stored: not before the earliest
/// invocation of anything that may have written it or anything below it (offsets
/// are assigned in log order), and not after the earliest answer that shows it
/// or anything above it stored (a delivery, or the only possible writer's ok).
struct StoreTimes {
    first: u64,
    lo: Vec<Time>,
    hi: Vec<Time>,
}

impl StoreTimes {
    fn of(h: &History, ix: &Ix, part: PartId, log: &FinalLog) -> StoreTimes {
        let n = log.entries.len();
        let mut lo = vec![0; n];
        let mut hi = vec![INF; n];
        for (k, e) in log.entries.iter().enumerate() {
            if e.line == 0 {
                continue;
            }
            let w = possible(h, ix, part, e);
            lo[k] = w.iter().map(|(op, _)| h.ops[*op as usize].inv).min().unwrap_or(0);
            if let [(op, _)] = w.as_slice() {
                hi[k] = h.ops[*op as usize].comp;
            }
        }
        for op in ix.readers.get(&part).into_iter().flatten() {
            let op = &h.ops[*op as usize];
            let offsets: Vec<u64> = match &op.call {
                Call::Pop { got: Some(g), .. } => g.msgs.iter().map(|m| m.0).collect(),
                Call::KFetch { records, .. } => records.iter().map(|r| r.0).collect(),
                _ => continue,
            };
            for o in offsets {
                if let Some(k) = o.checked_sub(log.first).filter(|k| (*k as usize) < n) {
                    hi[k as usize] = hi[k as usize].min(op.comp);
                }
            }
        }
        for k in 1..n {
            lo[k] = lo[k].max(lo[k - 1]);
        }
        for k in (0..n.saturating_sub(1)).rev() {
            hi[k] = hi[k].min(hi[k + 1]);
        }
        StoreTimes { first: log.first, lo, hi }
    }
}

/// A transactionId stored more often than it may have been written, or twice
/// by stores certainly closer together than the queue's dedup window.
fn dedup(h: &History, ix: &Ix, skew: Time, v: &mut Verdict) {
    let mut times: FxMap<PartId, StoreTimes> = FxMap::default();
    for ((part, txid), entries) in ix.log_txid.groups() {
        if entries.len() < 2 {
            continue;
        }
        let log = &h.logs[&part];
        let writers = ix.possible_writers(h, part, txid);
        let offsets: Vec<u64> = entries.iter().map(|e| e.1).collect();
        let mut lines: Vec<u32> = offsets.iter().filter_map(|o| log.at(*o)).map(|e| e.line).collect();
        for (op, _) in &writers {
            lines.extend(h.ops[*op as usize].lines());
        }
        let detail = if writers.len() < offsets.len() {
            format!("stored {} times by {} write(s) that may have taken effect", offsets.len(), writers.len())
        } else {
            let window = h.queues.get(&h.parts[part as usize].queue).map_or(0, |q| q.dedup_us);
            if window == 0 {
                continue;
            }
            let t = times.entry(part).or_insert_with(|| StoreTimes::of(h, ix, part, log));
            let (a, b) = ((offsets[0] - t.first) as usize, (offsets[offsets.len() - 1] - t.first) as usize);
            let apart = t.hi[b].saturating_sub(t.lo[a]);
            if t.hi[b] == INF || apart.saturating_add(skew) >= window {
                continue;
            }
            format!(
                "stored {} times, the stores at most {} ms apart, inside the dedup window of {} ms",
                offsets.len(),
                apart / 1000,
                window / 1000
            )
        };
        let mut x = at(h, Kind::DedupStoredTwice, part, detail, lines);
        x.offset = Some(offsets[1]);
        x.txid = Some(h.name(txid).to_owned());
        v.flag(x);
    }
}

/// A Kafka record stored twice when every produce that carried it was the same
/// idempotent (producer id, epoch, sequence): the broker had to drop the retry.
fn kafka_duplicates(h: &History, ix: &Ix, v: &mut Verdict) {
    for ((part, payload), entries) in ix.log_payload.groups() {
        if entries.len() < 2 {
            continue;
        }
        let writers = ix.possible_kafka_writers(h, part, payload);
        let ids: Vec<Option<(i64, i32, i64)>> = writers
            .iter()
            .map(|(op, k)| match &h.ops[*op as usize].call {
                Call::KProduce { producer: Some(p), .. } => Some((p.id, p.epoch, p.seq as i64 + *k as i64)),
                _ => None,
            })
            .collect();
        let Some(Some(first)) = ids.first().copied() else { continue };
        if ids.iter().any(|i| *i != Some(first)) {
            continue;
        }
        let log = &h.logs[&part];
        let mut lines: Vec<u32> = entries.iter().filter_map(|e| log.at(e.1)).map(|e| e.line).collect();
        for (op, _) in &writers {
            lines.extend(h.ops[*op as usize].lines());
        }
        let mut x = at(
            h,
            Kind::KafkaIdempotentDuplicate,
            part,
            format!(
                "stored {} times, always produced as producer {} epoch {} sequence {}",
                entries.len(),
                first.0,
                first.1,
                first.2
            ),
            lines,
        );
        x.offset = Some(entries[1].1);
        x.txid = Some(h.name(payload).to_owned());
        v.flag(x);
    }
}
