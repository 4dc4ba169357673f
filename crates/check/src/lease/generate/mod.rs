//! A correct lease queue, simulated, writing the history a recorder would:
//! the checker's own test bench (every history it writes must be judged
//! not-VIOLATION) and, with one [`Bug`] injected, its mutation test (each bug
//! must be judged VIOLATION). Also `baton check history --generate N`.
//!
//! The broker here follows Baton's semantics as crates/core plans and applies
//! them: a pop first expires a due lease (one failure charged per unsettled
//! message, dead-lettered past retryLimit), then leases the lowest unsettled
//! offsets; completions are settled before a nack, and a nack releases the
//! lease; an ack or transaction on a lease that is not live is refused; dedup
//! by transactionId inside the window; a restart (fault window) renews every
//! live lease for a full lease time (I5). Each operation takes effect at one
//! instant; its invocation and completion are drawn around it, and its answer
//! may be lost (then it took effect or not, at random).
//!
//! Must never read a history or judge one; it only writes.

use super::model::{Time, QUEUE_MODE};
use crate::pipeline::Rng;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
use std::fmt::Write as _;
use std::io::{self, Write};

mod kafka;

/// One way to break the broker; each must make the checker say VIOLATION.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bug {
    /// Some pushes are answered queued but never stored.
    DropPush,
    /// Some acks are answered ok but not applied: the message comes back.
    LostAck,
    /// An ack on a lease that ran out (but was not yet replaced) is accepted.
    UnfencedAck,
    /// A pop ignores the group's live lease on the partition.
    DoubleLease,
    /// A pop passes over the lowest pending message.
    SkipPending,
    /// A committed transaction stores only its first push.
    TornTxn,
    /// A transaction refused for its expired lease still stores its pushes.
    RolledBackVisible,
    /// A retried push is stored again inside the dedup window.
    DedupBroken,
    /// An idempotent producer's retry is stored again.
    KafkaDuplicate,
    /// An offset fetch returns the committed offset before the last commit.
    CommitBackwards,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub messages: u64,
    pub partitions: u32,
    pub groups: Vec<String>,
    pub consumers: u32,
    pub producers: u32,
    pub push_batch: u64,
    pub pop_batch: u64,
    pub lease_us: Time,
    pub retry_limit: u32,
    pub dedup_us: Time,
    /// An operation's invocation and completion are each up to this far from its instant.
    pub width_us: Time,
    /// Up to this much time between two instants.
    pub step_us: Time,
    /// Chance an answer is lost.
    pub unknown: f64,
    /// Chance an ack carries a nack (failed, retry) or a dlq.
    pub nack: f64,
    /// Chance a consumer holds its lease past its end before acking.
    pub late: f64,
    /// Beyond the lease's end, how far a late consumer waits (covers the checker's skew).
    pub late_margin_us: Time,
    /// Chance a queue-mode consumer settles by a transaction (ack + push to `out`).
    pub txn: f64,
    pub extend: f64,
    /// A consumer works on a batch for up to this long before settling it.
    pub hold_us: Time,
    pub crashes: u32,
    pub kafka: bool,
    pub bug: Option<Bug>,
    pub seed: u64,
    /// Entries per final_log line.
    pub chunk: usize,
}

impl Config {
    /// A small, fault-heavy run for the property tests.
    pub fn small(seed: u64) -> Config {
        Config {
            messages: 300,
            partitions: 3,
            groups: vec![QUEUE_MODE.into(), "audit".into()],
            consumers: 3,
            producers: 2,
            push_batch: 3,
            pop_batch: 4,
            lease_us: 200_000,
            retry_limit: 2,
            dedup_us: 3_600_000_000,
            width_us: 5_000,
            step_us: 2_000,
            unknown: 0.08,
            nack: 0.1,
            late: 0.08,
            late_margin_us: 30_000,
            txn: 0.3,
            extend: 0.05,
            hold_us: 60_000,
            crashes: 2,
            kafka: true,
            bug: None,
            seed,
            chunk: 50,
        }
    }

    /// The benchmark's input: many messages, few faults, one group.
    pub fn bench(messages: u64, seed: u64) -> Config {
        Config {
            messages,
            partitions: 16,
            groups: vec![QUEUE_MODE.into()],
            consumers: 16,
            producers: 8,
            push_batch: 10,
            pop_batch: 10,
            lease_us: 5_000_000,
            retry_limit: 3,
            dedup_us: 3_600_000_000,
            width_us: 2_000,
            step_us: 100,
            unknown: 0.002,
            nack: 0.01,
            late: 0.0005,
            late_margin_us: 500_000,
            txn: 0.1,
            extend: 0.01,
            hold_us: 2_000,
            crashes: 0,
            kafka: false,
            bug: None,
            seed,
            chunk: 1000,
        }
    }
}

#[derive(Debug, Default)]
pub struct Stats {
    pub lines: u64,
    pub messages: u64,
    /// Times the injected bug actually fired.
    pub bug_fired: u64,
}

#[derive(Debug, Clone)]
struct SLease {
    id: u64,
    offsets: Vec<u64>,
    settled: Vec<bool>,
    expires: Time,
}

#[derive(Debug, Clone, Default)]
struct Cur {
    next: u64,
    done: BTreeSet<u64>,
    attempts: HashMap<u64, u32>,
    lease: Option<SLease>,
}

impl Cur {
    fn settle(&mut self, o: u64) {
        self.attempts.remove(&o);
        if o == self.next {
            self.next += 1;
            while self.done.remove(&self.next) {
                self.next += 1;
            }
        } else if o > self.next {
            self.done.insert(o);
        }
    }
}

#[derive(Debug, Default)]
struct SPart {
    log: Vec<String>,
    dedup: HashMap<String, Time>,
    curs: Vec<Cur>,
}

#[derive(Debug, Clone)]
struct Held {
    lease: u64,
    part: usize,
    group: usize,
    msgs: Vec<(u64, String)>,
    hold_until: Time,
}

#[derive(Debug, Default, Clone)]
struct Proc {
    free: Time,
    held: Option<Held>,
    retry: Option<(usize, Vec<String>)>,
    kretry: Option<(usize, i32, Vec<String>)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Out {
    Ok,
    Failed,
    Unknown,
}

struct Sim<'a, W: Write> {
    c: &'a Config,
    r: Rng,
    now: Time,
    ids: u64,
    seq: u64,
    heap: BinaryHeap<Reverse<(Time, u64, String)>>,
    w: &'a mut W,
    stats: Stats,
    q: Vec<SPart>,
    out: Vec<SPart>,
    dlq: Vec<(usize, usize, u64)>,
    next_lease: u64,
    procs: Vec<Proc>,
    /// Transaction ids minted, and messages stored in `q` (the run pushes until `messages` are).
    pushed: u64,
    stored: u64,
    k: Vec<Vec<String>>,
    kseq: Vec<i32>,
    kcommitted: Vec<(i64, i64)>,
    /// The idempotent producer's next sequence per partition: the client's and the broker's.
    kclient: Vec<i32>,
    kn: u64,
    crashes: Vec<(Time, Time)>,
}

const Q: &str = "q";
const OUT: &str = "out";
const TOPIC: &str = "k";
const KGROUP: &str = "kg";
const KPID: i64 = 7;

/// Simulate per `c`, writing the history to `w`.
pub fn run<W: Write>(c: &Config, w: &mut W) -> io::Result<Stats> {
    let groups = c.groups.len();
    let part = || SPart { curs: vec![Cur::default(); groups], ..Default::default() };
    let np = (c.producers + c.consumers * groups as u32 + 2) as usize;
    let mut sim = Sim {
        c,
        r: Rng::new(c.seed),
        now: 1_000_000,
        ids: 0,
        seq: 0,
        heap: BinaryHeap::new(),
        w,
        stats: Stats::default(),
        q: (0..c.partitions).map(|_| part()).collect(),
        out: (0..c.partitions).map(|_| part()).collect(),
        dlq: Vec::new(),
        next_lease: 1,
        procs: vec![Proc::default(); np],
        pushed: 0,
        stored: 0,
        k: vec![Vec::new(); 2],
        kseq: vec![0; 2],
        kcommitted: vec![(-1, -1); 2],
        kclient: vec![0; 2],
        kn: 0,
        crashes: Vec::new(),
    };
    sim.go()?;
    Ok(sim.stats)
}

impl<W: Write> Sim<'_, W> {
    fn line(&mut self, t: Time, s: String) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, s)));
    }

    fn flush(&mut self, upto: Time) -> io::Result<()> {
        while self.heap.peek().is_some_and(|Reverse((t, _, _))| *t < upto) {
            let Reverse((_, _, s)) = self.heap.pop().expect("peeked");
            self.w.write_all(s.as_bytes())?;
            self.w.write_all(b"\n")?;
            self.stats.lines += 1;
        }
        Ok(())
    }

    fn chance(&mut self, p: f64) -> bool {
        self.r.f64() < p
    }

    fn bug(&mut self, b: Bug, p: f64) -> bool {
        let fire = self.c.bug == Some(b) && self.chance(p);
        self.stats.bug_fired += fire as u64;
        fire
    }

    /// Write one op's lines. Whether its answer is lost is drawn first: an answered
    /// op took effect (or was refused); a lost one took effect or not, at random.
    /// `decide(self, happens)` applies the effect at `self.now` if `happens` and
    /// returns (refused, the ok completion's fields). Answers that would arrive
    /// inside a fault window are lost.
    fn op(&mut self, p: usize, f: &str, args: String, decide: impl FnOnce(&mut Self, bool) -> (bool, String)) -> Out {
        let w = self.c.width_us;
        let lin = self.now;
        let inv = lin.saturating_sub(self.r.below(w + 1)).max(self.procs[p].free + 1).min(lin);
        let comp = lin + self.r.below(w + 1);
        self.ids += 1;
        let id = self.ids;
        self.line(inv, format!(r#"{{"type":"invoke","id":{id},"t":{inv},"process":{p},"f":"{f}"{args}}}"#));
        let in_crash = self.crashes.iter().any(|(s, e)| comp >= *s && comp < *e);
        let lost = in_crash || self.chance(self.c.unknown);
        let happens = !lost || self.chance(0.5);
        let (refused, result) = decide(self, happens);
        let out = if lost {
            Out::Unknown
        } else if refused {
            Out::Failed
        } else {
            Out::Ok
        };
        match out {
            Out::Ok => self.line(comp, format!(r#"{{"type":"ok","id":{id},"t":{comp},"process":{p}{result}}}"#)),
            Out::Failed => {
                self.line(comp, format!(r#"{{"type":"failed","id":{id},"t":{comp},"process":{p},"error":"refused"}}"#))
            }
            // A third of lost answers leave no completion line at all.
            Out::Unknown if self.chance(0.66) => {
                self.line(comp, format!(r#"{{"type":"unknown","id":{id},"t":{comp},"process":{p}}}"#))
            }
            Out::Unknown => {}
        }
        self.procs[p].free = comp;
        out
    }

    fn go(&mut self) -> io::Result<()> {
        let c = self.c;
        for q in [Q, OUT] {
            let s = format!(
                r#"{{"type":"queue","queue":"{q}","lease_ms":{},"retry_limit":{},"dead_letters":true,"dedup_window_ms":{}}}"#,
                c.lease_us / 1000,
                c.retry_limit,
                c.dedup_us / 1000
            );
            self.line(0, s);
        }
        let mut steps: u64 = 0;
        let max_steps = c.messages * 40 + 10_000;
        while steps < max_steps {
            steps += 1;
            self.now += 1 + self.r.below(c.step_us);
            let due = (self.crashes.len() as u64 + 1) * c.messages / (c.crashes as u64 + 1);
            if self.crashes.len() < c.crashes as usize && self.stored >= due {
                self.crash();
            }
            let done = self.stored >= c.messages;
            if done && self.drained() {
                break;
            }
            let role = self.r.below(10);
            if role < 3 && !done {
                let p = self.r.below(c.producers as u64) as usize;
                self.push(p);
            } else if role < 9 || !c.kafka {
                let k = self.r.below((c.consumers as usize * c.groups.len()) as u64) as usize;
                self.consume(c.producers as usize + k, k % c.groups.len());
            } else {
                let p = self.procs.len() - 2 + self.r.below(2) as usize;
                self.kafka(p);
            }
            if steps.is_multiple_of(256) {
                let upto = self.now.saturating_sub(c.width_us + 1);
                self.flush(upto)?;
            }
        }
        self.flush(INF_T)?;
        self.finals()
    }

    fn drained(&self) -> bool {
        self.q.iter().all(|p| p.curs.iter().all(|c| c.next >= p.log.len() as u64 && c.lease.is_none()))
    }

    /// A fault window: the broker is down for a while, answers arriving then are lost,
    /// and on restart every lease live at the crash is renewed for a full lease time (I5).
    fn crash(&mut self) {
        let start = self.now;
        let end = start + self.c.lease_us / 2;
        self.crashes.push((start, end));
        self.line(start, format!(r#"{{"type":"nemesis","t":{start},"fault":"kill","phase":"start"}}"#));
        self.line(end, format!(r#"{{"type":"nemesis","t":{end},"fault":"kill","phase":"end"}}"#));
        self.now = end;
        let renew = end + self.c.lease_us;
        for p in self.q.iter_mut().chain(self.out.iter_mut()) {
            for c in &mut p.curs {
                if let Some(l) = c.lease.as_mut().filter(|l| l.expires > start) {
                    l.expires = l.expires.max(renew);
                }
            }
        }
        for p in &mut self.procs {
            p.free = p.free.max(end);
        }
    }

    fn push(&mut self, p: usize) {
        if self.procs[p].free >= self.now {
            return;
        }
        let (part, txids) = match self.procs[p].retry.take() {
            Some(r) => r,
            None => {
                let part = self.r.below(self.c.partitions as u64) as usize;
                let n = (1 + self.r.below(self.c.push_batch)).min(self.c.messages.saturating_sub(self.stored).max(1));
                let txids = (0..n).map(|i| format!("m-{}", self.pushed + i)).collect();
                self.pushed += n;
                (part, txids)
            }
        };
        let mut args = format!(r#","queue":"{Q}","messages":["#);
        for (i, t) in txids.iter().enumerate() {
            let _ = write!(args, r#"{}{{"partition":"{part}","txid":"{t}"}}"#, if i > 0 { "," } else { "" });
        }
        args.push(']');
        let now = self.now;
        let retried = txids.clone();
        let out = self.op(p, "push", args, |s, happens| {
            let mut statuses = Vec::new();
            for t in &txids {
                let dup = s.q[part].dedup.get(t).is_some_and(|w| now < w + s.c.dedup_us);
                if dup && !s.bug(Bug::DedupBroken, 1.0) {
                    statuses.push("duplicate");
                    continue;
                }
                statuses.push("queued");
                if !happens || s.bug(Bug::DropPush, 0.05) {
                    continue;
                }
                s.q[part].log.push(t.clone());
                s.q[part].dedup.insert(t.clone(), now);
                s.stored += 1;
            }
            let list: Vec<String> = statuses.iter().map(|s| format!("\"{s}\"")).collect();
            (false, format!(r#","statuses":[{}]"#, list.join(",")))
        });
        if out == Out::Unknown && self.chance(0.7) {
            self.procs[p].retry = Some((part, retried));
        }
    }

    fn expire_if_due(&mut self, part: usize, g: usize) {
        let now = self.now;
        let cur = &mut self.q[part].curs[g];
        let Some(l) = cur.lease.as_ref().filter(|l| l.expires <= now) else { return };
        let l = l.clone();
        cur.lease = None;
        for (o, s) in l.offsets.iter().zip(&l.settled) {
            if !s {
                let a = cur.attempts.entry(*o).or_insert(0);
                *a += 1;
                if *a > self.c.retry_limit {
                    cur.settle(*o);
                    self.dlq.push((part, g, *o));
                }
            }
        }
    }

    fn consume(&mut self, p: usize, g: usize) {
        if self.procs[p].free >= self.now {
            return;
        }
        match self.procs[p].held.clone() {
            None => self.pop(p, g),
            Some(h) if self.now < h.hold_until => {}
            Some(h) if g == 0 && self.chance(self.c.txn) => self.txn(p, h),
            Some(h) if self.chance(self.c.extend) => self.extend(p, h),
            Some(h) => self.ack(p, h),
        }
    }

    fn pop(&mut self, p: usize, g: usize) {
        let any = self.chance(0.5);
        let start = self.r.below(self.c.partitions as u64) as usize;
        let batch = 1 + self.r.below(self.c.pop_batch);
        let group = &self.c.groups[g];
        let mut args = format!(r#","queue":"{Q}","group":"{group}","consumer":"c{p}","batch":{batch}"#);
        if !any {
            let _ = write!(args, r#","partition":"{start}""#);
        }
        let lease_us = self.c.lease_us;
        let mut got: Option<Held> = None;
        let out = self.op(p, "pop", args, |s, happens| {
            let tries = if any { s.c.partitions as usize } else { 1 };
            for k in 0..tries {
                let part = (start + k) % s.c.partitions as usize;
                s.expire_if_due(part, g);
                if s.q[part].curs[g].lease.is_some() && !s.bug(Bug::DoubleLease, 0.5) {
                    continue;
                }
                let sp = &s.q[part];
                let cur = &sp.curs[g];
                let mut offsets = Vec::new();
                let mut o = cur.next;
                while o < sp.log.len() as u64 && (offsets.len() as u64) < batch {
                    if !cur.done.contains(&o) {
                        offsets.push(o);
                    }
                    o += 1;
                }
                if offsets.len() > 1 && s.bug(Bug::SkipPending, 0.3) {
                    offsets.remove(0);
                }
                let sp = &s.q[part];
                if offsets.is_empty() {
                    continue;
                }
                if !happens {
                    return (false, String::new());
                }
                let id = s.next_lease;
                s.next_lease += 1;
                let msgs: Vec<(u64, String)> = offsets.iter().map(|o| (*o, sp.log[*o as usize].clone())).collect();
                let l = SLease { id, settled: vec![false; offsets.len()], offsets, expires: s.now + lease_us };
                s.q[part].curs[g].lease = Some(l);
                let mut r = format!(r#","partition":"{part}","lease":"L{id}","messages":["#);
                for (i, (o, t)) in msgs.iter().enumerate() {
                    let _ = write!(r, r#"{}{{"offset":{o},"txid":"{t}"}}"#, if i > 0 { "," } else { "" });
                }
                r.push(']');
                got = Some(Held { lease: id, part, group: g, msgs, hold_until: 0 });
                return (false, r);
            }
            (false, r#","messages":[]"#.to_owned())
        });
        // A client that never saw the answer never saw the lease: it runs out.
        let Some(mut h) = got.filter(|_| out == Out::Ok) else { return };
        h.hold_until = if self.chance(self.c.late) {
            self.now + lease_us + 2 * self.c.width_us + self.c.late_margin_us + self.r.below(lease_us / 4)
        } else {
            self.now + self.r.below(self.c.hold_us)
        };
        self.procs[p].held = Some(h);
    }

    /// Whether `h`'s lease is live now (and, with UnfencedAck, also merely expired).
    fn live(&mut self, h: &Held) -> bool {
        let now = self.now;
        match &self.q[h.part].curs[h.group].lease {
            Some(l) if l.id == h.lease && l.expires > now => true,
            Some(l) if l.id == h.lease => self.bug(Bug::UnfencedAck, 1.0),
            _ => false,
        }
    }

    fn ack(&mut self, p: usize, h: Held) {
        self.procs[p].held = None;
        let mut items: Vec<(u64, String, &str)> = h.msgs.iter().map(|(o, t)| (*o, t.clone(), "completed")).collect();
        if self.chance(self.c.nack) {
            let i = self.r.below(items.len() as u64) as usize;
            items[i].2 = ["failed", "retry", "dlq"][self.r.below(3) as usize];
        }
        let mut args = format!(r#","lease":"L{}","acks":["#, h.lease);
        for (i, (_, t, st)) in items.iter().enumerate() {
            let _ = write!(args, r#"{}{{"txid":"{t}","status":"{st}"}}"#, if i > 0 { "," } else { "" });
        }
        args.push(']');
        self.op(p, "ack", args, |s, happens| {
            if !s.live(&h) {
                return (true, String::new());
            }
            if !happens || s.bug(Bug::LostAck, 0.3) {
                return (false, String::new());
            }
            s.apply_acks(&h, &items);
            (false, String::new())
        });
    }

    /// Completions (and dlq) first, then the nack, which releases the lease (Baton's order).
    fn apply_acks(&mut self, h: &Held, items: &[(u64, String, &str)]) {
        let limit = self.c.retry_limit;
        let cur = &mut self.q[h.part].curs[h.group];
        let mut release = false;
        for pass in [false, true] {
            for (o, _, st) in items {
                let nack = matches!(*st, "failed" | "retry");
                if nack != pass {
                    continue;
                }
                if let Some(l) = cur.lease.as_mut() {
                    if let Some(i) = l.offsets.iter().position(|x| x == o) {
                        l.settled[i] = true;
                    }
                }
                match *st {
                    "completed" => cur.settle(*o),
                    "dlq" => {
                        cur.settle(*o);
                        self.dlq.push((h.part, h.group, *o));
                    }
                    "failed" => {
                        let a = cur.attempts.get(o).copied().unwrap_or(0) + 1;
                        if a > limit {
                            cur.settle(*o);
                            self.dlq.push((h.part, h.group, *o));
                        } else {
                            cur.attempts.insert(*o, a);
                        }
                        release = true;
                    }
                    _ => release = true,
                }
            }
        }
        if release || cur.lease.as_ref().is_some_and(|l| l.settled.iter().all(|s| *s)) {
            cur.lease = None;
        }
    }

    fn extend(&mut self, p: usize, h: Held) {
        let args = format!(r#","lease":"L{}""#, h.lease);
        let lease_us = self.c.lease_us;
        self.op(p, "extend", args, |s, happens| {
            let now = s.now;
            match s.q[h.part].curs[h.group].lease.as_mut() {
                Some(l) if l.id == h.lease && l.expires > now => {
                    if happens {
                        l.expires = now + lease_us;
                    }
                    (false, String::new())
                }
                _ => (true, String::new()),
            }
        });
    }

    fn txn(&mut self, p: usize, h: Held) {
        self.procs[p].held = None;
        let mut args = r#","acks":["#.to_owned();
        for (i, (_, t)) in h.msgs.iter().enumerate() {
            let _ = write!(
                args,
                r#"{}{{"lease":"L{}","txid":"{t}","status":"completed"}}"#,
                if i > 0 { "," } else { "" },
                h.lease
            );
        }
        let outs: Vec<String> = (0..=h.msgs.len()).map(|i| format!("o-{}-{i}", h.lease)).collect();
        args.push_str(r#"],"pushes":["#);
        for (i, t) in outs.iter().enumerate() {
            let _ = write!(
                args,
                r#"{}{{"queue":"{OUT}","partition":"{}","txid":"{t}"}}"#,
                if i > 0 { "," } else { "" },
                h.part
            );
        }
        args.push(']');
        let items: Vec<(u64, String, &str)> = h.msgs.iter().map(|(o, t)| (*o, t.clone(), "completed")).collect();
        self.op(p, "txn", args, |s, happens| {
            if !s.live(&h) {
                if s.bug(Bug::RolledBackVisible, 1.0) {
                    s.out[h.part].log.extend(outs.iter().cloned());
                }
                return (true, String::new());
            }
            if !happens {
                return (false, String::new());
            }
            s.apply_acks(&h, &items);
            let keep = if s.bug(Bug::TornTxn, 0.5) { 1 } else { outs.len() };
            s.out[h.part].log.extend(outs[..keep].iter().cloned());
            (false, String::new())
        });
    }

    fn finals(&mut self) -> io::Result<()> {
        let mut out = String::new();
        let chunk = self.c.chunk.max(1);
        let log = |out: &mut String, queue: &str, part: String, entries: &[String], field: &str| {
            if entries.is_empty() {
                let _ = writeln!(out, r#"{{"type":"final_log","queue":"{queue}","partition":"{part}","entries":[]}}"#);
            }
            for (c, ch) in entries.chunks(chunk).enumerate() {
                let _ = write!(out, r#"{{"type":"final_log","queue":"{queue}","partition":"{part}","entries":["#);
                for (i, t) in ch.iter().enumerate() {
                    let o = c * chunk + i;
                    let _ = write!(out, r#"{}{{"offset":{o},"{field}":"{t}"}}"#, if i > 0 { "," } else { "" });
                }
                out.push_str("]}\n");
            }
        };
        for (i, p) in self.q.iter().enumerate() {
            log(&mut out, Q, i.to_string(), &p.log, "txid");
        }
        for (i, p) in self.out.iter().enumerate() {
            log(&mut out, OUT, i.to_string(), &p.log, "txid");
        }
        if self.c.kafka {
            for (i, p) in self.k.iter().enumerate() {
                log(&mut out, TOPIC, i.to_string(), p, "payload");
            }
        }
        for (i, p) in self.q.iter().enumerate() {
            for (g, cur) in p.curs.iter().enumerate() {
                let waiting: Vec<String> =
                    (cur.next..p.log.len() as u64).filter(|o| !cur.done.contains(o)).map(|o| o.to_string()).collect();
                let _ = writeln!(
                    out,
                    r#"{{"type":"final_waiting","queue":"{Q}","partition":"{i}","group":"{}","from":0,"offsets":[{}]}}"#,
                    self.c.groups[g],
                    waiting.join(",")
                );
            }
        }
        let _ = write!(out, r#"{{"type":"final_dlq","queue":"{Q}","entries":["#);
        for (i, (p, g, o)) in self.dlq.iter().enumerate() {
            let _ = write!(
                out,
                r#"{}{{"partition":"{p}","group":"{}","offset":{o}}}"#,
                if i > 0 { "," } else { "" },
                self.c.groups[*g]
            );
        }
        out.push_str("]}\n");
        self.stats.lines += out.lines().count() as u64;
        self.stats.messages = self.q.iter().map(|p| p.log.len() as u64).sum();
        self.w.write_all(out.as_bytes())
    }
}

const INF_T: Time = Time::MAX;
