//! The judgment of a pipeline run: a pure function from what the clients saw
//! and what the logs hold at the end ([`History`]) to counts and violations
//! ([`Verdict`]). Kept free of I/O so it can be fed injected histories.
//!
//! What is checked (each a violation kind, see [`Verdict`]):
//! - every fed input id is in the output exactly once, or still waiting in the
//!   input (not settled) — `missing`, `duplicated`;
//! - order within a partition: output seq strictly increasing in offset order
//!   — `reordered`; output carries its input's partition, seq and value — `corrupted`;
//! - no rolled-back transaction left output: every output record names (in
//!   its payload) the transaction attempt that wrote it, and that attempt must
//!   not have been answered "rolled back" — `rolled_back_output`;
//! - all or nothing: an attempt whose output is present has all of it present,
//!   and an attempt answered "committed" has all of it — `torn`;
//! - the ack half of the same step: an input whose output was committed is not
//!   still waiting (`unacked_with_output`) and is never delivered again by a pop
//!   sent after that commit was answered (`redelivered`);
//! - fencing: an attempt sent after its lease had certainly expired (and with
//!   no broker restart in between) must not commit — `stale_commit`;
//! - the input log itself holds every fed id once, in order — `input_lost`,
//!   `input_duplicated`, `input_reordered`; nothing unknown in either log — `foreign`;
//! - readers: nothing delivered that is not in the final output (`phantom`),
//!   and everything in the output delivered at least once (`undelivered`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Answered `success: true`.
    Committed,
    /// Answered `success: false` with this reason (or refused with a 4xx: `http_<code>`).
    RolledBack(String),
    /// 503, connection lost or timed out: either.
    Unknown,
}

/// An input the feeder pushed and the broker confirmed (queued or duplicate).
#[derive(Debug, Clone)]
pub struct Fed {
    pub id: u64,
    pub partition: String,
    pub seq: u64,
}

/// One transaction attempt of a worker.
#[derive(Debug, Clone)]
pub struct Txn {
    /// Unique per attempt; written into every output payload as `txn`.
    pub tag: String,
    /// Input ids acked.
    pub inputs: Vec<u64>,
    /// Output ids pushed (transactionId `out-<id>`).
    pub outputs: Vec<u64>,
    /// Microseconds since the run started: request sent, answer (or error) received.
    pub started_us: u64,
    pub ended_us: u64,
    pub outcome: Outcome,
    /// Sent after its lease had certainly expired by the client's clock, with
    /// no broker restart since the pop (a restart legitimately renews leases, I5).
    pub stale_lease: bool,
}

/// One pop that returned messages to a worker.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// When the pop request was sent, microseconds since the run started.
    pub sent_us: u64,
    pub partition: String,
    pub ids: Vec<u64>,
}

/// One record read back with fetch, decoded from its payload.
#[derive(Debug, Clone)]
pub struct Rec {
    pub partition: String,
    pub offset: u64,
    pub id: Option<u64>,
    pub seq: Option<u64>,
    /// Output only: the `out` value (2 * id).
    pub out: Option<u64>,
    /// Output only: the attempt tag that wrote it.
    pub tag: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct History {
    pub fed: Vec<Fed>,
    /// Pushed but never confirmed (the feeder gave up at the deadline): may or may not exist.
    pub maybe_fed: Vec<u64>,
    pub txns: Vec<Txn>,
    pub deliveries: Vec<Delivery>,
    /// The whole input and output logs, any order (sorted here).
    pub input_log: Vec<Rec>,
    pub output_log: Vec<Rec>,
    /// Input ids still deliverable at the end; `None` when that could not be probed.
    pub waiting: Option<Vec<u64>>,
    /// Every id delivered to an output reader (repeats included); `None` = no readers.
    pub reader_seen: Option<Vec<u64>>,
}

/// The violation kinds, in the order they are printed.
pub const KINDS: &[&str] = &[
    "missing",
    "duplicated",
    "reordered",
    "corrupted",
    "rolled_back_output",
    "torn",
    "unacked_with_output",
    "redelivered",
    "stale_commit",
    "input_lost",
    "input_duplicated",
    "input_reordered",
    "foreign",
    "phantom",
    "undelivered",
];

const EXAMPLES: usize = 5;

#[derive(Debug, Clone, Default)]
pub struct Verdict {
    pub fed: u64,
    pub txns: u64,
    pub committed: u64,
    pub rolled_back: BTreeMap<String, u64>,
    pub unknown: u64,
    /// Unknown-outcome attempts whose output is in the log (they did commit).
    pub unknown_committed: u64,
    /// Input messages acked by committed (or unknown-but-present) attempts.
    pub committed_inputs: u64,
    pub output_records: u64,
    pub output_ids: u64,
    /// Fed ids not in the output but still waiting in the input.
    pub waiting: u64,
    pub waiting_probed: bool,
    pub deliveries: u64,
    pub delivered_messages: u64,
    pub reader_deliveries: u64,
    /// Count per violation kind (see [`KINDS`]).
    pub violations: BTreeMap<&'static str, u64>,
    /// Up to a few concrete examples per kind, as evidence.
    pub examples: BTreeMap<&'static str, Vec<String>>,
}

impl Verdict {
    fn flag(&mut self, kind: &'static str, example: impl FnOnce() -> String) {
        debug_assert!(KINDS.contains(&kind), "unknown kind {kind}");
        let n = self.violations.entry(kind).or_insert(0);
        *n += 1;
        let ex = self.examples.entry(kind).or_default();
        if ex.len() < EXAMPLES {
            ex.push(example());
        }
    }

    pub fn count(&self, kind: &str) -> u64 {
        self.violations.get(kind).copied().unwrap_or(0)
    }

    pub fn total_violations(&self) -> u64 {
        self.violations.values().sum()
    }

    pub fn ok(&self) -> bool {
        self.total_violations() == 0
    }

    /// `name  value` lines (the end-to-end test reads them).
    pub fn render(&self) -> String {
        let mut s = String::new();
        let mut line = |k: &str, v: String| {
            let _ = writeln!(s, "{k:<22}{v}");
        };
        line("fed", self.fed.to_string());
        line("transactions", self.txns.to_string());
        line("committed txns", self.committed.to_string());
        let rb: u64 = self.rolled_back.values().sum();
        let reasons: Vec<String> = self.rolled_back.iter().map(|(r, n)| format!("{r} {n}")).collect();
        line("rolled back", if reasons.is_empty() { "0".into() } else { format!("{rb} ({})", reasons.join(", ")) });
        line("unknown outcomes", format!("{} ({} of them committed)", self.unknown, self.unknown_committed));
        line("committed inputs", self.committed_inputs.to_string());
        line("worker deliveries", format!("{} pops, {} messages", self.deliveries, self.delivered_messages));
        line("output", format!("{} records, {} ids", self.output_records, self.output_ids));
        line(
            "waiting",
            if self.waiting_probed { self.waiting.to_string() } else { format!("{} (not probed)", self.waiting) },
        );
        line("reader deliveries", self.reader_deliveries.to_string());
        for k in KINDS {
            line(k, self.count(k).to_string());
        }
        for (k, ex) in &self.examples {
            for e in ex {
                let _ = writeln!(s, "  {k}: {e}");
            }
        }
        s
    }
}

fn by_partition(log: &[Rec]) -> BTreeMap<&str, Vec<&Rec>> {
    let mut m: BTreeMap<&str, Vec<&Rec>> = BTreeMap::new();
    for r in log {
        m.entry(r.partition.as_str()).or_default().push(r);
    }
    for v in m.values_mut() {
        v.sort_by_key(|r| r.offset);
    }
    m
}

/// Judge a history.
pub fn check(h: &History) -> Verdict {
    let mut v = Verdict {
        fed: h.fed.len() as u64,
        txns: h.txns.len() as u64,
        deliveries: h.deliveries.len() as u64,
        delivered_messages: h.deliveries.iter().map(|d| d.ids.len() as u64).sum(),
        ..Default::default()
    };
    let fed: HashMap<u64, &Fed> = h.fed.iter().map(|f| (f.id, f)).collect();
    let maybe: HashSet<u64> = h.maybe_fed.iter().copied().collect();
    let known = |id: u64| fed.contains_key(&id) || maybe.contains(&id);

    // The input log: every fed id once, per-partition order as fed.
    let mut in_count: HashMap<u64, u64> = HashMap::new();
    for (p, recs) in by_partition(&h.input_log) {
        let mut last: Option<u64> = None;
        for r in recs {
            let Some(id) = r.id.filter(|id| known(*id)) else {
                v.flag("foreign", || format!("input {p}@{}: not an input this run fed", r.offset));
                continue;
            };
            *in_count.entry(id).or_insert(0) += 1;
            if let (Some(l), Some(s)) = (last, r.seq) {
                if s <= l {
                    v.flag("input_reordered", || format!("input {p}@{}: seq {s} after seq {l}", r.offset));
                }
            }
            last = r.seq.or(last);
        }
    }
    for f in &h.fed {
        match in_count.get(&f.id).copied().unwrap_or(0) {
            0 => v.flag("input_lost", || {
                format!(
                    "id {} (partition {}, seq {}) was confirmed but is not in the input log",
                    f.id, f.partition, f.seq
                )
            }),
            1 => {}
            n => v.flag("input_duplicated", || format!("id {} is {n} times in the input log", f.id)),
        }
    }

    // Attempts by tag; ids that only rolled-back attempts ever pushed.
    let by_tag: HashMap<&str, &Txn> = h.txns.iter().map(|t| (t.tag.as_str(), t)).collect();
    let mut pushed_by_live: HashSet<u64> = HashSet::new();
    let mut pushed_by_rolled_back: HashSet<u64> = HashSet::new();
    for t in &h.txns {
        match &t.outcome {
            Outcome::Committed => v.committed += 1,
            Outcome::Unknown => v.unknown += 1,
            Outcome::RolledBack(r) => *v.rolled_back.entry(r.clone()).or_insert(0) += 1,
        }
        let set = match t.outcome {
            Outcome::RolledBack(_) => &mut pushed_by_rolled_back,
            _ => &mut pushed_by_live,
        };
        set.extend(t.outputs.iter().copied());
    }

    // The output log.
    let mut out_count: HashMap<u64, u64> = HashMap::new();
    let mut present: HashMap<&str, HashSet<u64>> = HashMap::new();
    for (p, recs) in by_partition(&h.output_log) {
        let mut last: Option<u64> = None;
        for r in recs {
            v.output_records += 1;
            let Some(id) = r.id.filter(|id| known(*id)) else {
                v.flag("foreign", || format!("output {p}@{}: not the output of an input this run fed", r.offset));
                continue;
            };
            *out_count.entry(id).or_insert(0) += 1;
            if let Some(f) = fed.get(&id) {
                if f.partition != p || r.seq != Some(f.seq) || r.out != Some(id * 2) {
                    v.flag("corrupted", || {
                        format!(
                            "output {p}@{}: id {id} seq {:?} out {:?}, but its input was partition {} seq {}",
                            r.offset, r.seq, r.out, f.partition, f.seq
                        )
                    });
                }
            }
            match (last, r.seq) {
                (Some(l), Some(s)) if s <= l => {
                    v.flag("reordered", || format!("output {p}@{}: id {id} seq {s} after seq {l}", r.offset));
                }
                _ => {}
            }
            last = r.seq.or(last);
            match r.tag.as_deref().and_then(|t| by_tag.get(t)) {
                Some(t) => match &t.outcome {
                    Outcome::RolledBack(reason) => v.flag("rolled_back_output", || {
                        format!(
                            "output {p}@{}: id {id} written by attempt {} that was rolled back ({reason})",
                            r.offset, t.tag
                        )
                    }),
                    _ => {
                        present.entry(t.tag.as_str()).or_default().insert(id);
                    }
                },
                None if pushed_by_rolled_back.contains(&id) && !pushed_by_live.contains(&id) => v
                    .flag("rolled_back_output", || {
                        format!("output {p}@{}: id {id} was only ever pushed by rolled-back attempts", r.offset)
                    }),
                None => v.flag("foreign", || {
                    format!("output {p}@{}: id {id} names no attempt of this run ({:?})", r.offset, r.tag)
                }),
            }
        }
    }
    v.output_ids = out_count.len() as u64;
    for (id, n) in &out_count {
        if *n > 1 {
            v.flag("duplicated", || format!("id {id} is {n} times in the output"));
        }
    }

    // All or nothing, and when each input was settled at the latest.
    let mut settled_by: HashMap<u64, (u64, &str)> = HashMap::new();
    for t in &h.txns {
        let got = present.get(t.tag.as_str()).map_or(0, |s| s.len());
        let took_effect = match t.outcome {
            Outcome::Committed => {
                if got != t.outputs.len() {
                    v.flag("torn", || {
                        format!(
                            "attempt {} was answered committed but {got} of its {} outputs are in the log",
                            t.tag,
                            t.outputs.len()
                        )
                    });
                }
                true
            }
            Outcome::Unknown if got > 0 => {
                v.unknown_committed += 1;
                if got != t.outputs.len() {
                    v.flag("torn", || {
                        format!("attempt {} (outcome unknown) left {got} of its {} outputs", t.tag, t.outputs.len())
                    });
                }
                true
            }
            _ => false,
        };
        if t.stale_lease && t.outcome == Outcome::Committed {
            v.flag("stale_commit", || {
                format!(
                    "attempt {} committed although it was sent after its lease expired (inputs {:?})",
                    t.tag, t.inputs
                )
            });
        }
        if took_effect {
            v.committed_inputs += t.inputs.len() as u64;
            for id in &t.inputs {
                let e = settled_by.entry(*id).or_insert((t.ended_us, t.tag.as_str()));
                if t.ended_us < e.0 {
                    *e = (t.ended_us, t.tag.as_str());
                }
            }
        }
    }
    for d in &h.deliveries {
        for id in &d.ids {
            if let Some((at, tag)) = settled_by.get(id) {
                if d.sent_us > *at {
                    v.flag("redelivered", || {
                        format!(
                            "id {id} delivered again by a pop sent at {} us, after attempt {tag} that acked it was answered at {at} us",
                            d.sent_us
                        )
                    });
                }
            }
        }
    }

    // Every fed id: output once, or still waiting.
    let waiting: HashSet<u64> = h.waiting.iter().flatten().copied().collect();
    v.waiting_probed = h.waiting.is_some();
    for f in &h.fed {
        let out = out_count.contains_key(&f.id);
        let wait = waiting.contains(&f.id);
        if wait && out {
            v.flag("unacked_with_output", || {
                format!("id {} is in the output yet its input is still waiting (not acked)", f.id)
            });
        } else if wait {
            v.waiting += 1;
        } else if !out {
            v.flag("missing", || {
                format!(
                    "id {} (partition {}, seq {}) is neither in the output nor waiting in the input",
                    f.id, f.partition, f.seq
                )
            });
        }
    }

    if let Some(seen) = &h.reader_seen {
        v.reader_deliveries = seen.len() as u64;
        let distinct: HashSet<u64> = seen.iter().copied().collect();
        let mut phantoms: Vec<u64> = distinct.iter().filter(|id| !out_count.contains_key(id)).copied().collect();
        phantoms.sort_unstable();
        for id in phantoms {
            v.flag("phantom", || format!("a reader got id {id}, which is not in the final output"));
        }
        let mut never: Vec<u64> = out_count.keys().filter(|id| !distinct.contains(id)).copied().collect();
        never.sort_unstable();
        for id in never {
            v.flag("undelivered", || format!("id {id} is in the output but no reader got it"));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = 2;
    const N: u64 = 40;
    const BATCH: usize = 5;

    fn out_rec(p: &str, offset: u64, id: u64, seq: u64, tag: &str) -> Rec {
        Rec { partition: p.into(), offset, id: Some(id), seq: Some(seq), out: Some(id * 2), tag: Some(tag.into()) }
    }

    /// N ids over P partitions, each partition processed in batches of BATCH,
    /// every attempt committed, readers got everything once.
    fn clean() -> History {
        let mut h = History::default();
        let mut clock = 0u64;
        for p in 0..P {
            let pn = p.to_string();
            let ids: Vec<u64> = (0..N).filter(|i| i % P == p).collect();
            for (k, id) in ids.iter().enumerate() {
                h.fed.push(Fed { id: *id, partition: pn.clone(), seq: k as u64 });
                h.input_log.push(Rec {
                    partition: pn.clone(),
                    offset: k as u64,
                    id: Some(*id),
                    seq: Some(k as u64),
                    out: None,
                    tag: None,
                });
            }
            for (b, chunk) in ids.chunks(BATCH).enumerate() {
                let tag = format!("p{p}b{b}");
                clock += 10;
                h.deliveries.push(Delivery { sent_us: clock, partition: pn.clone(), ids: chunk.to_vec() });
                h.txns.push(Txn {
                    tag: tag.clone(),
                    inputs: chunk.to_vec(),
                    outputs: chunk.to_vec(),
                    started_us: clock + 1,
                    ended_us: clock + 2,
                    outcome: Outcome::Committed,
                    stale_lease: false,
                });
                for id in chunk {
                    let seq = id / P;
                    let off = h.output_log.iter().filter(|r| r.partition == pn).count() as u64;
                    h.output_log.push(out_rec(&pn, off, *id, seq, &tag));
                }
            }
        }
        h.waiting = Some(vec![]);
        h.reader_seen = Some((0..N).collect());
        h
    }

    fn rec_of(h: &mut History, id: u64) -> &mut Rec {
        h.output_log.iter_mut().find(|r| r.id == Some(id)).unwrap()
    }

    #[test]
    fn a_clean_history_passes() {
        let v = check(&clean());
        assert!(v.ok(), "{}", v.render());
        assert_eq!(v.fed, N);
        assert_eq!(v.output_ids, N);
        assert_eq!(v.committed, N / BATCH as u64);
        assert_eq!(v.committed_inputs, N);
    }

    #[test]
    fn unprocessed_but_waiting_is_not_a_loss() {
        let mut h = clean();
        // The last batch of partition 1 never committed: its inputs still wait.
        let last = h.txns.pop().unwrap();
        h.output_log.retain(|r| !last.outputs.contains(&r.id.unwrap()));
        h.reader_seen = Some((0..N).filter(|i| !last.outputs.contains(i)).collect());
        h.waiting = Some(last.inputs.clone());
        let v = check(&h);
        assert!(v.ok(), "{}", v.render());
        assert_eq!(v.waiting, BATCH as u64);
    }

    #[test]
    fn an_injected_loss_is_detected() {
        let mut h = clean();
        // Same as above, but the inputs are not waiting either: settled without output.
        let last = h.txns.pop().unwrap();
        h.output_log.retain(|r| !last.outputs.contains(&r.id.unwrap()));
        h.reader_seen = Some((0..N).filter(|i| !last.outputs.contains(i)).collect());
        h.waiting = Some(last.inputs[1..].to_vec());
        let v = check(&h);
        assert!(!v.ok());
        assert_eq!(v.count("missing"), 1, "{}", v.render());
        assert!(v.examples["missing"][0].contains(&format!("id {} ", last.inputs[0])));
    }

    #[test]
    fn a_lost_record_of_a_committed_attempt_is_missing_and_torn() {
        let mut h = clean();
        h.output_log.retain(|r| r.id != Some(7));
        let v = check(&h);
        assert_eq!(v.count("missing"), 1, "{}", v.render());
        assert_eq!(v.count("torn"), 1);
        assert_eq!(v.count("undelivered"), 0);
        assert_eq!(v.count("phantom"), 1, "the reader got 7, which is no longer in the output");
    }

    #[test]
    fn an_injected_duplicate_is_detected() {
        let mut h = clean();
        // id 4 (partition 0) written again at the end of partition 0 by an attempt that "committed".
        let end = h.output_log.iter().filter(|r| r.partition == "0").count() as u64;
        h.txns.push(Txn {
            tag: "again".into(),
            inputs: vec![],
            outputs: vec![4],
            started_us: 1000,
            ended_us: 1001,
            outcome: Outcome::Committed,
            stale_lease: false,
        });
        h.output_log.push(out_rec("0", end, 4, 2, "again"));
        let v = check(&h);
        assert!(!v.ok());
        assert_eq!(v.count("duplicated"), 1, "{}", v.render());
        assert!(v.examples["duplicated"][0].contains("id 4 is 2 times"));
    }

    #[test]
    fn an_injected_reorder_is_detected() {
        let mut h = clean();
        // Partition 1 offsets 3 and 4 swapped: seq 4 is written before seq 3.
        let (a, b) = (2 * 3 + 1, 2 * 4 + 1);
        let oa = rec_of(&mut h, a).offset;
        let ob = rec_of(&mut h, b).offset;
        rec_of(&mut h, a).offset = ob;
        rec_of(&mut h, b).offset = oa;
        let v = check(&h);
        assert!(!v.ok());
        assert_eq!(v.count("reordered"), 1, "{}", v.render());
        assert_eq!(v.count("duplicated") + v.count("missing"), 0);
    }

    #[test]
    fn output_of_a_rolled_back_attempt_is_detected() {
        let mut h = clean();
        // An earlier attempt for id 6 was rolled back, yet the record in the log is its write.
        h.txns.push(Txn {
            tag: "rb".into(),
            inputs: vec![6],
            outputs: vec![6],
            started_us: 0,
            ended_us: 1,
            outcome: Outcome::RolledBack("rejected_ack".into()),
            stale_lease: false,
        });
        rec_of(&mut h, 6).tag = Some("rb".into());
        let v = check(&h);
        assert!(!v.ok());
        assert_eq!(v.count("rolled_back_output"), 1, "{}", v.render());
        assert!(v.examples["rolled_back_output"][0].contains("rolled back (rejected_ack)"));
    }

    #[test]
    fn output_only_a_rolled_back_attempt_pushed_is_detected_without_a_tag() {
        let mut h = clean();
        // id 39 was never committed (its batch rolled back) but its output is there, untagged.
        let last = h.txns.last_mut().unwrap();
        assert!(last.outputs.contains(&39));
        last.outcome = Outcome::RolledBack("duplicate".into());
        for r in h.output_log.iter_mut().filter(|r| r.partition == "1") {
            if r.tag.as_deref() == Some("p1b3") {
                r.tag = None;
            }
        }
        let v = check(&h);
        assert!(v.count("rolled_back_output") >= 1, "{}", v.render());
    }

    #[test]
    fn a_rolled_back_attempt_followed_by_a_commit_is_fine() {
        let mut h = clean();
        h.txns.insert(
            0,
            Txn {
                tag: "first-try".into(),
                inputs: vec![0, 2],
                outputs: vec![0, 2],
                started_us: 0,
                ended_us: 1,
                outcome: Outcome::RolledBack("rejected_ack".into()),
                stale_lease: false,
            },
        );
        let v = check(&h);
        assert!(v.ok(), "{}", v.render());
        assert_eq!(v.rolled_back["rejected_ack"], 1);
    }

    #[test]
    fn an_unknown_outcome_is_judged_by_the_log() {
        let mut h = clean();
        h.txns[0].outcome = Outcome::Unknown;
        let v = check(&h);
        assert!(v.ok(), "{}", v.render());
        assert_eq!(v.unknown_committed, 1);
        // Half of an unknown attempt's output is torn.
        let first = h.txns[0].outputs[0];
        h.output_log.retain(|r| r.id != Some(first));
        h.waiting = Some(vec![first]);
        let v = check(&h);
        assert_eq!(v.count("torn"), 1, "{}", v.render());
        assert_eq!(v.count("missing"), 0);
    }

    #[test]
    fn redelivery_after_a_commit_is_detected() {
        let mut h = clean();
        let t = h.txns[1].clone();
        h.deliveries.push(Delivery { sent_us: t.ended_us + 5, partition: "0".into(), ids: t.inputs.clone() });
        let v = check(&h);
        assert_eq!(v.count("redelivered"), t.inputs.len() as u64, "{}", v.render());
        // A pop sent before the answer came back is not evidence.
        h.deliveries.last_mut().unwrap().sent_us = t.ended_us - 1;
        assert!(check(&h).ok());
    }

    #[test]
    fn output_with_its_input_still_waiting_is_detected() {
        let mut h = clean();
        h.waiting = Some(vec![3]);
        let v = check(&h);
        assert_eq!(v.count("unacked_with_output"), 1, "{}", v.render());
    }

    #[test]
    fn a_commit_on_an_expired_lease_is_detected() {
        let mut h = clean();
        h.txns[2].stale_lease = true;
        assert_eq!(check(&h).count("stale_commit"), 1);
        h.txns[2].outcome = Outcome::RolledBack("rejected_ack".into());
        // Its output is then a rolled-back attempt's output.
        assert_eq!(check(&h).count("stale_commit"), 0);
    }

    #[test]
    fn input_log_anomalies_are_detected() {
        let mut h = clean();
        let r = h.input_log[0].clone();
        h.input_log.push(Rec { offset: 100, ..r });
        h.input_log.retain(|r| r.id != Some(5));
        let v = check(&h);
        assert_eq!(v.count("input_duplicated"), 1, "{}", v.render());
        assert_eq!(v.count("input_reordered"), 1);
        assert_eq!(v.count("input_lost"), 1);
    }

    #[test]
    fn readers_must_see_exactly_the_output() {
        let mut h = clean();
        h.reader_seen = Some((1..N).chain([N + 1]).collect());
        let v = check(&h);
        assert_eq!(v.count("undelivered"), 1, "{}", v.render());
        assert_eq!(v.count("phantom"), 1);
        // Redelivery to a reader is allowed (its ack may be lost in a crash).
        h.reader_seen = Some((0..N).chain(0..3).collect());
        assert!(check(&h).ok());
    }

    #[test]
    fn corrupted_and_foreign_output_are_detected() {
        let mut h = clean();
        rec_of(&mut h, 8).out = Some(17);
        h.output_log.push(Rec { partition: "9".into(), offset: 0, id: None, seq: None, out: None, tag: None });
        let v = check(&h);
        assert_eq!(v.count("corrupted"), 1, "{}", v.render());
        assert_eq!(v.count("foreign"), 1);
    }
}
