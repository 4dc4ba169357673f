//! The rules about deliveries, per (partition, group), against the sequential
//! model of a lease queue: a pop leases the lowest unsettled offsets of one
//! partition while no other lease of the group lives there; `completed` and
//! `dlq` settle for good; a nack (`failed`, `retry`) or an expiry returns the
//! rest to pending; an expired or released lease fences (I4).
//!
//! - `redelivered_after_ack` (I6): delivered by a pop invoked after an ack of
//!   it was answered ok, or still waiting at the end;
//! - `double_lease`: a pop took effect while another lease of the group on the
//!   partition was certainly live;
//! - `stale_ack` (I4): an ack, extend or transaction answered ok on a lease
//!   certainly over by then;
//! - `order`: a batch out of offset order, or a pop that skipped an offset
//!   that was certainly unsettled when it took effect;
//! - `lost`: an offset neither waiting at the end nor settled by anything.
//!
//! Intervals: an op took effect somewhere in [invocation, completion]; an
//! unknown one anywhere after its invocation. Each rule flags only what holds
//! in every such placement. Must never judge the logs' contents (writes.rs).

use super::index::{Ix, Pg, Sure};
use super::model::*;
use super::verdict::{Kind, Verdict, Violation, Why};
use std::collections::HashSet;

pub fn check(h: &History, ix: &Ix, skew: Time, v: &mut Verdict) {
    let mut keys: Vec<(PartId, Sym)> = ix.pgs.keys().chain(h.waiting.keys()).copied().collect();
    keys.sort_unstable();
    keys.dedup();
    let empty = Pg::default();
    let mut undeclared = HashSet::new();
    for key in keys {
        let pg = ix.pgs.get(&key).unwrap_or(&empty);
        let lives = lives(h, ix, pg, skew, &mut undeclared, v);
        batches(h, key, pg, v);
        redelivered(h, key, pg, v);
        double_lease(h, key, pg, &lives, v);
        stale(h, ix, key, pg, &lives, v);
        skipped_and_lost(h, key, pg, v);
    }
}

fn at(h: &History, kind: Kind, (part, group): (PartId, Sym), offset: Option<u64>, detail: String) -> Violation {
    Violation {
        kind,
        partition: h.part_name(part),
        group: Some(h.name(group).to_owned()),
        offset,
        txid: None,
        detail,
        lines: Vec::new(),
    }
}

/// What the history proves about one lease's life.
struct Life {
    pop: u32,
    /// Certainly live on (grant answered, `sure_end`).
    sure_end: Time,
    /// Certainly over after `latest_end`.
    latest_end: Time,
    cfg_line: u32,
}

/// The lease length a pop asked for, or its queue's; `None` when neither is known.
fn lease_len(h: &History, pop: &Op) -> Option<(Time, Time, u32)> {
    let Call::Pop { queue, lease_us, .. } = &pop.call else { return None };
    let cfg = h.queues.get(queue);
    let len = lease_us.or(cfg.map(|c| c.lease_us))?;
    // An extend without `seconds` takes the queue's lease time, not the pop's.
    Some((len, cfg.map_or(len, |c| c.lease_us), cfg.map_or(0, |c| c.line)))
}

fn lives(
    h: &History,
    ix: &Ix,
    pg: &Pg,
    skew: Time,
    undeclared: &mut HashSet<Sym>,
    v: &mut Verdict,
) -> FxMap<u32, Life> {
    let mut out = FxMap::default();
    for &p in &pg.pops {
        let a = &h.ops[p as usize];
        let Call::Pop { got: Some(g), auto_ack: false, queue, .. } = &a.call else { continue };
        if g.lease == NONE {
            continue;
        }
        let Some((len, ext_len, cfg_line)) = lease_len(h, a) else {
            if undeclared.insert(*queue) {
                v.open(
                    Why::QueueNotDeclared,
                    || format!("queue {} has no `queue` line: its lease rules are not checked", h.name(*queue)),
                    &a.lines(),
                );
            }
            continue;
        };
        let named = ix.named.get(&g.lease).map(Vec::as_slice).unwrap_or_default();
        let mut release = INF;
        let mut latest = a.comp.saturating_add(len);
        // An extend SETS the end to (its instant + secs): it may shorten the lease
        // as well as lengthen it (crates/core `Planner::extend`). The end is the one
        // set by the last extend to take effect, or the pop's when none did.
        let extends: Vec<(&Op, Time)> = named
            .iter()
            .map(|&k| &h.ops[k as usize])
            .filter(|k| k.maybe())
            .filter_map(|k| match &k.call {
                Call::Extend { secs, .. } => Some((k, secs.map_or(ext_len, |s| s.saturating_mul(1_000_000)))),
                _ => None,
            })
            .collect();
        for &k in named {
            let k = &h.ops[k as usize];
            if k.maybe() && !matches!(k.call, Call::Extend { .. }) {
                // Any ack may release the lease (all settled, or a nack).
                release = release.min(k.inv);
            }
        }
        // The pop's own end counts unless an extend certainly took effect; an extend
        // counts unless an ok extend certainly came after it (then it is not the last).
        let last_ok_inv = extends.iter().filter(|(k, _)| k.outcome == Outcome::Ok).map(|(k, _)| k.inv).max();
        let mut proven = if last_ok_inv.is_some() { INF } else { a.inv.saturating_add(len) };
        for (k, secs) in &extends {
            // One that may have happened may have set it as late as (its completion + secs).
            latest = latest.max(k.comp.saturating_add(*secs));
            if last_ok_inv.is_none_or(|t| k.comp == INF || k.comp >= t) {
                proven = proven.min(k.inv.saturating_add(*secs));
            }
        }
        let mut latest = latest.saturating_add(skew);
        // I5: a node that restarts treats every lease it inherits as live for what was
        // left of it, at most a full lease time, from its own start. Every declared fault may be such a restart, unless
        // it says it was not (a SIGSTOP, a clock jump: the node's lease clock ran on, D23/D33).
        let mut faults: Vec<&Fault> = h.faults.iter().filter(|f| f.may_restart).collect();
        faults.sort_by_key(|f| f.start);
        for f in faults {
            if f.start < latest {
                latest = latest.max(f.end.saturating_add(len).saturating_add(skew));
            }
        }
        out.insert(
            p,
            Life { pop: p, sure_end: release.min(proven.saturating_sub(skew)), latest_end: latest, cfg_line },
        );
    }
    out
}

/// One pop's batch comes in offset order.
fn batches(h: &History, key: (PartId, Sym), pg: &Pg, v: &mut Verdict) {
    for &p in &pg.pops {
        let op = &h.ops[p as usize];
        let Call::Pop { got: Some(g), .. } = &op.call else { continue };
        if let Some(w) = g.msgs.windows(2).find(|w| w[1].0 <= w[0].0) {
            let mut x = at(
                h,
                Kind::Order,
                key,
                Some(w[1].0),
                format!("one pop delivered offset {} after offset {}", w[1].0, w[0].0),
            );
            x.lines = op.lines();
            v.flag(x);
        }
    }
}

/// I6: once an ack (or a committed transaction) of an offset was answered ok,
/// no pop invoked later delivers it again and it is not waiting at the end.
fn redelivered(h: &History, key: (PartId, Sym), pg: &Pg, v: &mut Verdict) {
    let kind = |how: Sure| if how == Sure::Visible { Kind::TornTxn } else { Kind::RedeliveredAfterAck };
    let why = |how: Sure, op: &Op| match how {
        Sure::Visible => "a transaction whose pushes are in the log (outcome unknown) acked it".to_owned(),
        Sure::Answered => format!("its {} was answered ok", op.call.name()),
    };
    let mut seen = HashSet::new();
    for &p in &pg.pops {
        let b = &h.ops[p as usize];
        let Call::Pop { got: Some(g), .. } = &b.call else { continue };
        for (o, t) in &g.msgs {
            let Some(s) = pg.settle.get(o).filter(|s| s.sure < b.inv) else { continue };
            if s.sure_op == p || !seen.insert(*o) {
                continue;
            }
            let ack = &h.ops[s.sure_op as usize];
            let mut x =
                at(h, kind(s.sure_how), key, Some(*o), format!("delivered again after {}", why(s.sure_how, ack)));
            x.txid = Some(h.name(*t).to_owned());
            x.lines = ack.lines();
            x.lines.push(h.ops[s.sure_pop as usize].comp_line);
            x.lines.extend(b.lines());
            v.flag(x);
        }
    }
    let Some(w) = h.waiting.get(&key) else { return };
    for (o, line) in &w.offsets {
        let Some(s) = pg.settle.get(o).filter(|s| s.sure_op != u32::MAX) else { continue };
        let ack = &h.ops[s.sure_op as usize];
        let mut x =
            at(h, kind(s.sure_how), key, Some(*o), format!("still waiting at the end after {}", why(s.sure_how, ack)));
        x.lines = ack.lines();
        x.lines.push(*line);
        v.flag(x);
    }
}

/// A pop that took effect while another lease of the group on the partition was
/// certainly live: granted (answered) before the pop was invoked, and neither
/// run out, released nor possibly released before the pop was answered.
fn double_lease(h: &History, key: (PartId, Sym), pg: &Pg, lives: &FxMap<u32, Life>, v: &mut Verdict) {
    let mut grants: Vec<(Time, Time, u32)> =
        lives.values().map(|l| (h.ops[l.pop as usize].comp, l.sure_end, l.pop)).collect();
    grants.sort_unstable();
    // best[i]: the grant among the first i+1 whose certain life reaches furthest.
    let mut best: Vec<(Time, u32)> = Vec::with_capacity(grants.len());
    for g in &grants {
        let prev = best.last().copied().unwrap_or((0, u32::MAX));
        best.push(if g.1 > prev.0 { (g.1, g.2) } else { prev });
    }
    for &p in &pg.pops {
        let b = &h.ops[p as usize];
        let i = grants.partition_point(|g| g.0 < b.inv);
        let Some(&(end, ai)) = i.checked_sub(1).map(|i| &best[i]) else { continue };
        if end <= b.comp {
            continue;
        }
        let a = &h.ops[ai as usize];
        let mut x = at(
            h,
            Kind::DoubleLease,
            key,
            None,
            format!(
                "a pop (process {}) was granted the partition while the lease granted to process {} {} us earlier was certainly live",
                b.process,
                a.process,
                b.inv - a.comp
            ),
        );
        x.lines = a.lines();
        x.lines.extend(b.lines());
        x.lines.push(lives[&ai].cfg_line);
        v.flag(x);
    }
}

/// I4: an operation answered ok on a lease that was certainly over when it was
/// invoked: past the latest time it can have run out (extends and restarts
/// counted), or after another pop of the group was granted the partition.
fn stale(h: &History, ix: &Ix, key: (PartId, Sym), pg: &Pg, lives: &FxMap<u32, Life>, v: &mut Verdict) {
    let mut pops: Vec<(Time, Time, u32)> =
        pg.pops.iter().map(|&p| (h.ops[p as usize].inv, h.ops[p as usize].comp, p)).collect();
    pops.sort_unstable();
    // first_after[i]: among pops[i..], the one answered first.
    let mut first_after = vec![(INF, u32::MAX); pops.len() + 1];
    for i in (0..pops.len()).rev() {
        first_after[i] = if pops[i].1 < first_after[i + 1].0 { (pops[i].1, pops[i].2) } else { first_after[i + 1] };
    }
    let mut lives: Vec<&Life> = lives.values().collect();
    lives.sort_unstable_by_key(|l| l.pop);
    for l in lives {
        let a = &h.ops[l.pop as usize];
        let Call::Pop { got: Some(g), .. } = &a.call else { continue };
        let i = pops.partition_point(|p| p.0 <= a.comp);
        let (next_grant, b) = first_after[i];
        for &k in ix.named.get(&g.lease).into_iter().flatten() {
            let k = &h.ops[k as usize];
            if k.outcome != Outcome::Ok {
                continue;
            }
            let (detail, mut lines) = if k.inv > l.latest_end {
                (
                    format!(
                        "{} answered ok on a lease granted {} ms before it was sent, past its latest end",
                        k.call.name(),
                        (k.inv - a.comp) / 1000
                    ),
                    vec![l.cfg_line],
                )
            } else if next_grant < k.inv {
                (
                    format!("{} answered ok on a lease after another pop was granted the partition", k.call.name()),
                    h.ops[b as usize].lines(),
                )
            } else {
                continue;
            };
            lines.extend(a.lines());
            lines.extend(k.lines());
            let mut x = at(h, Kind::StaleAck, key, None, detail);
            x.lines = lines;
            v.flag(x);
        }
    }
}

/// Max over a range, with where: a segment tree, so each pop's range costs log n.
struct MaxTree {
    n: usize,
    t: Vec<(Time, u32)>,
}

impl MaxTree {
    fn new(vals: &[Time]) -> MaxTree {
        let n = vals.len().max(1);
        let mut t = vec![(0, 0); 2 * n];
        for (i, x) in vals.iter().enumerate() {
            t[n + i] = (*x, i as u32);
        }
        for i in (1..n).rev() {
            t[i] = t[2 * i].max(t[2 * i + 1]);
        }
        MaxTree { n, t }
    }
    /// Max of [l, r); (0, 0) when empty.
    fn max(&self, l: usize, r: usize) -> (Time, u32) {
        let (mut l, mut r) = (l + self.n, r + self.n);
        let mut m = (0, 0);
        while l < r {
            if l & 1 == 1 {
                m = m.max(self.t[l]);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                m = m.max(self.t[r]);
            }
            l /= 2;
            r /= 2;
        }
        m
    }
}

/// A pop leases the lowest unsettled offsets: every offset it passed over
/// (below its last, not in its batch, not below the group's start) must have
/// been possibly settled when it took effect. And at the end every offset of
/// the log from the group's start is waiting or possibly settled.
fn skipped_and_lost(h: &History, key: (PartId, Sym), pg: &Pg, v: &mut Verdict) {
    let (part, group) = key;
    let Some(log) = h.logs.get(&part) else { return };
    let waiting = h.waiting.get(&key);
    let from =
        waiting.and_then(|w| w.from).or(pg.min_delivered).or(waiting.and_then(|w| w.offsets.iter().map(|o| o.0).min()));
    let Some(from) = from.map(|f| f.max(log.first)) else { return };
    let end = log.end();
    if from >= end {
        return;
    }
    let queue = h.parts[part as usize].queue;
    let dead = h.queues.get(&queue).is_none_or(|c| c.dead_letters);
    let dlq: Option<HashSet<u64>> =
        h.dlq.get(&queue).map(|d| d.iter().filter(|e| e.part == part && e.group == group).map(|e| e.offset).collect());
    let n = (end - from) as usize;
    // strict: what acks show; loose: also what may have been dead-lettered on its own.
    let strict: Vec<Time> = (from..end).map(|o| pg.settle.get(&o).map_or(INF, |s| s.maybe)).collect();
    let loose: Vec<Time> = match (&dlq, dead) {
        (Some(d), _) => (from..end).zip(&strict).map(|(o, s)| if d.contains(&o) { 0 } else { *s }).collect(),
        (None, true) => vec![0; n],
        (None, false) => strict.clone(),
    };
    let undecided = dlq.is_none() && dead;
    let loose_t = MaxTree::new(&loose);
    let strict_t = undecided.then(|| MaxTree::new(&strict));
    for &p in &pg.pops {
        let b = &h.ops[p as usize];
        let Call::Pop { got: Some(g), .. } = &b.call else { continue };
        if g.msgs.windows(2).any(|w| w[1].0 <= w[0].0) {
            continue;
        }
        let mut ranges = vec![(from, g.msgs[0].0)];
        ranges.extend(g.msgs.windows(2).map(|w| (w[0].0 + 1, w[1].0)));
        for (lo, hi) in ranges {
            let (lo, hi) = (lo.max(from), hi.min(end));
            if lo >= hi {
                continue;
            }
            let (lo_i, hi_i) = ((lo - from) as usize, (hi - from) as usize);
            let (t, i) = loose_t.max(lo_i, hi_i);
            if t > b.comp {
                let o = from + i as u64;
                let mut x = at(
                    h,
                    Kind::Order,
                    key,
                    Some(o),
                    format!(
                        "a pop delivered offsets {}..={} while offset {o} was certainly unsettled{}",
                        g.msgs[0].0,
                        g.msgs[g.msgs.len() - 1].0,
                        if t == INF { " (nothing ever settled it)" } else { "" }
                    ),
                );
                x.lines = b.lines();
                x.lines.extend(log.at(o).map(|e| e.line));
                v.flag(x);
                break;
            }
            if let Some(st) = &strict_t {
                if st.max(lo_i, hi_i).0 > b.comp {
                    v.open(
                        Why::DlqNotRead,
                        || {
                            format!(
                                "{}: a pop passed over an offset only the unread DLQ can explain",
                                h.part_name(part)
                            )
                        },
                        &b.lines(),
                    );
                    break;
                }
            }
        }
    }
    let Some(w) = waiting else { return };
    let waits: HashSet<u64> = w.offsets.iter().map(|o| o.0).collect();
    for (k, o) in (from..end).enumerate() {
        if waits.contains(&o) {
            continue;
        }
        if loose[k] == INF {
            let mut x = at(
                h,
                Kind::Lost,
                key,
                Some(o),
                "in the log, not waiting at the end, and no operation settled it".to_owned(),
            );
            x.txid = log.at(o).map(|e| h.name(e.txid).to_owned());
            x.lines = log.at(o).map(|e| vec![e.line]).unwrap_or_default();
            x.lines.extend(w.lines.first());
            v.flag(x);
        } else if undecided && strict[k] == INF {
            v.open(
                Why::DlqNotRead,
                || {
                    format!(
                        "{} offset {o}: neither waiting nor settled, unless dead-lettered (DLQ not read)",
                        h.part_name(part)
                    )
                },
                &w.lines[..1],
            );
        }
    }
}
