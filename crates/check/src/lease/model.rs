//! A lease-queue history, read: every operation as one [`Op`] (its interval,
//! its outcome, its arguments and its result), the faults, and what the
//! recorder read at the end. Names (queues, partitions, groups, leases,
//! transactionIds, payload ids) are interned to `u32` so the rules compare
//! integers and a million messages cost tens of megabytes, not hundreds.
//!
//! Owns the reading and the meaning of each field (what is required, what a
//! missing completion means). Must never judge: a history the broker got
//! wrong reads fine; only a history that is not a history (a completion
//! without an invocation, a line that is not JSON, a missing required field)
//! is refused.

use super::event::{self, Item, Raw};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::BufRead;

/// Microseconds on the recorder's clock.
pub type Time = u64;
/// "Not before the end of the history": when an unknown operation may still take effect.
pub const INF: Time = u64::MAX;
/// An interned name.
pub type Sym = u32;
pub const NONE: Sym = u32::MAX;
pub type PartId = u32;

/// The name of queue mode's group.
pub const QUEUE_MODE: &str = "__QUEUE_MODE__";
pub const DEFAULT_PARTITION: &str = "Default";

/// FxHash: the keys here are small integers we made, so SipHash's protection
/// against chosen keys buys nothing and costs a third of the indexing time.
#[derive(Default, Clone, Copy)]
pub struct Fx(u64);

impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64)
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64)
    }
}

pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

#[derive(Debug, Default)]
pub struct Interner {
    map: HashMap<Box<str>, Sym>,
    names: Vec<Box<str>>,
}

impl Interner {
    pub fn get(&mut self, s: &str) -> Sym {
        if let Some(&k) = self.map.get(s) {
            return k;
        }
        let k = self.names.len() as Sym;
        self.names.push(s.into());
        self.map.insert(s.into(), k);
        k
    }
    pub fn name(&self, k: Sym) -> &str {
        if k == NONE {
            "-"
        } else {
            &self.names[k as usize]
        }
    }
    pub fn find(&self, s: &str) -> Option<Sym> {
        self.map.get(s).copied()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// The broker answered a refusal: the operation changed nothing.
    Failed,
    /// Either: it may take effect at any time after its invocation.
    Unknown,
}

/// The broker's own ack statuses (the history names them `completed`, `failed`, `retry`, `dlq`).
pub use baton_core::model::AckStatus;

/// Settles the message for good (no redelivery) when it takes effect.
pub fn settles(s: AckStatus) -> bool {
    matches!(s, AckStatus::Completed | AckStatus::Dlq)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushStatus {
    Queued,
    Duplicate,
    /// Not answered ok: written or not as the log says.
    Unanswered,
}

/// One message written (a push item, a transaction's push, a Kafka record).
#[derive(Debug, Clone, Copy)]
pub struct Write {
    pub part: PartId,
    pub txid: Sym,
    pub payload: Sym,
}

#[derive(Debug, Clone, Copy)]
pub struct AckItem {
    pub lease: Sym,
    pub txid: Sym,
    pub offset: Option<u64>,
    pub status: AckStatus,
}

/// What an ok pop delivered.
#[derive(Debug, Clone)]
pub struct Got {
    pub part: PartId,
    pub lease: Sym,
    /// (offset, transactionId) in the order delivered.
    pub msgs: Vec<(u64, Sym)>,
}

#[derive(Debug, Clone)]
pub enum Call {
    Push {
        items: Vec<Write>,
        statuses: Vec<PushStatus>,
    },
    /// `want`: the partition asked for, [`NONE`] for any.
    Pop {
        queue: Sym,
        want: Sym,
        group: Sym,
        auto_ack: bool,
        lease_us: Option<Time>,
        got: Option<Got>,
    },
    Ack {
        items: Vec<AckItem>,
    },
    Extend {
        lease: Sym,
        secs: Option<u64>,
    },
    Txn {
        acks: Vec<AckItem>,
        pushes: Vec<Write>,
    },
    KProduce {
        part: PartId,
        producer: Option<event::Producer>,
        records: Vec<Sym>,
    },
    KFetch {
        part: PartId,
        records: Vec<(u64, Sym)>,
    },
    KCommit {
        group: Sym,
        part: PartId,
        offset: i64,
    },
    KOffsetFetch {
        group: Sym,
        part: PartId,
        got: Option<i64>,
    },
}

impl Call {
    pub fn name(&self) -> &'static str {
        match self {
            Call::Push { .. } => "push",
            Call::Pop { .. } => "pop",
            Call::Ack { .. } => "ack",
            Call::Extend { .. } => "extend",
            Call::Txn { .. } => "txn",
            Call::KProduce { .. } => "kafka_produce",
            Call::KFetch { .. } => "kafka_fetch",
            Call::KCommit { .. } => "kafka_commit",
            Call::KOffsetFetch { .. } => "kafka_offset_fetch",
        }
    }
}

pub const OP_NAMES: &[&str] =
    &["push", "pop", "ack", "extend", "txn", "kafka_produce", "kafka_fetch", "kafka_commit", "kafka_offset_fetch"];

#[derive(Debug, Clone)]
pub struct Op {
    pub id: u64,
    pub process: u64,
    /// Took effect (if at all) in `[inv, comp]`; `comp` is [`INF`] unless answered.
    pub inv: Time,
    pub comp: Time,
    pub outcome: Outcome,
    /// 1-based line numbers; `comp_line` 0 = no completion line.
    pub inv_line: u32,
    pub comp_line: u32,
    pub call: Call,
}

impl Op {
    /// May have taken effect (ok or unknown).
    pub fn maybe(&self) -> bool {
        self.outcome != Outcome::Failed
    }
    /// Lines that show this op: its invocation and, if any, its completion.
    pub fn lines(&self) -> Vec<u32> {
        if self.comp_line == 0 {
            vec![self.inv_line]
        } else {
            vec![self.inv_line, self.comp_line]
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct QueueCfg {
    pub lease_us: Time,
    pub retry_limit: u32,
    /// Past retryLimit the broker dead-letters on its own (deadLetterQueue && dlqAfterMaxRetries).
    pub dead_letters: bool,
    /// 0 = no deduplication.
    pub dedup_us: Time,
    pub line: u32,
}

#[derive(Debug, Clone)]
pub struct Part {
    pub queue: Sym,
    pub name: Sym,
}

/// A declared fault window; `end` is [`INF`] when the history ends inside it.
#[derive(Debug, Clone, Copy)]
pub struct Fault {
    pub name: Sym,
    pub start: Time,
    pub end: Time,
    pub start_line: u32,
    /// Unless its end says `"restarted": false`: the node may have restarted inside it.
    pub may_restart: bool,
}

#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub txid: Sym,
    pub payload: Sym,
    /// 0 = a hole: no entry was recorded at this offset.
    pub line: u32,
}

/// A partition's whole log as read at the end, indexed by `offset - first`.
#[derive(Debug, Clone, Default)]
pub struct FinalLog {
    pub first: u64,
    pub entries: Vec<Entry>,
}

impl FinalLog {
    pub fn end(&self) -> u64 {
        self.first + self.entries.len() as u64
    }
    pub fn at(&self, offset: u64) -> Option<&Entry> {
        let i = offset.checked_sub(self.first)?;
        self.entries.get(i as usize).filter(|e| e.line != 0)
    }
}

#[derive(Debug, Clone, Default)]
pub struct Waiting {
    pub from: Option<u64>,
    /// (offset, the line that listed it).
    pub offsets: Vec<(u64, u32)>,
    pub lines: Vec<u32>,
}

#[derive(Debug, Clone, Copy)]
pub struct DlqEntry {
    pub part: PartId,
    pub group: Sym,
    pub offset: u64,
    pub line: u32,
}

#[derive(Debug, Default)]
pub struct History {
    pub syms: Interner,
    pub parts: Vec<Part>,
    part_ids: HashMap<(Sym, Sym), PartId>,
    pub queues: FxMap<Sym, QueueCfg>,
    pub ops: Vec<Op>,
    pub faults: Vec<Fault>,
    pub logs: FxMap<PartId, FinalLog>,
    pub waiting: FxMap<(PartId, Sym), Waiting>,
    /// Queues whose DLQ was read at the end (possibly empty).
    pub dlq: FxMap<Sym, Vec<DlqEntry>>,
    pub lines: u32,
    pub queue_mode: Sym,
    open: HashMap<u64, usize>,
    open_faults: HashMap<Sym, usize>,
}

fn need<T>(v: Option<T>, what: &str) -> Result<T, String> {
    v.ok_or_else(|| format!("missing field `{what}`"))
}

/// Read a history line by line; `Err` names the first line that is not part of a history.
pub fn read(r: impl BufRead) -> Result<History, String> {
    let mut h = History::new();
    let mut line = String::new();
    let mut r = r;
    loop {
        line.clear();
        let n = r.read_line(&mut line).map_err(|e| format!("line {}: {e}", h.lines + 1))?;
        if n == 0 {
            break;
        }
        h.lines += 1;
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        let no = h.lines;
        h.add(text).map_err(|e| format!("line {no}: {e}"))?;
    }
    h.finish();
    Ok(h)
}

pub fn parse_str(s: &str) -> Result<History, String> {
    read(s.as_bytes())
}

impl History {
    fn new() -> History {
        let mut h = History::default();
        h.queue_mode = h.syms.get(QUEUE_MODE);
        h
    }

    pub fn name(&self, k: Sym) -> &str {
        self.syms.name(k)
    }

    pub fn part_name(&self, p: PartId) -> String {
        let part = &self.parts[p as usize];
        format!("{}/{}", self.name(part.queue), self.name(part.name))
    }

    pub fn part_of(&mut self, queue: &str, partition: &str) -> PartId {
        let q = self.syms.get(queue);
        let n = self.syms.get(partition);
        if let Some(&p) = self.part_ids.get(&(q, n)) {
            return p;
        }
        let p = self.parts.len() as PartId;
        self.parts.push(Part { queue: q, name: n });
        self.part_ids.insert((q, n), p);
        p
    }

    fn sym(&mut self, s: &Option<std::borrow::Cow<str>>) -> Sym {
        match s {
            Some(s) => self.syms.get(s),
            None => NONE,
        }
    }

    fn write_of(&mut self, queue: &str, it: &Item) -> Result<Write, String> {
        let queue = it.queue.as_deref().unwrap_or(queue);
        let part = self.part_of(queue, it.partition.as_deref().unwrap_or(DEFAULT_PARTITION));
        Ok(Write { part, txid: self.sym(&it.txid), payload: self.sym(&it.payload) })
    }

    fn ack_of(&mut self, lease: Option<&str>, it: &Item) -> Result<AckItem, String> {
        let lease = self.syms.get(need(it.lease.as_deref().or(lease), "lease")?);
        let status = match need(it.status.as_deref(), "status")? {
            "completed" => AckStatus::Completed,
            "failed" => AckStatus::Failed,
            "retry" => AckStatus::Retry,
            "dlq" => AckStatus::Dlq,
            s => return Err(format!("ack status {s:?} is not completed, failed, retry or dlq")),
        };
        if it.txid.is_none() && it.offset.is_none() {
            return Err("an ack names its message by txid or offset".into());
        }
        Ok(AckItem { lease, txid: self.sym(&it.txid), offset: it.offset, status })
    }

    fn kafka_part(&mut self, r: &Raw) -> Result<PartId, String> {
        let topic = need(r.topic.as_deref(), "topic")?.to_owned();
        Ok(self.part_of(&topic, need(r.partition.as_deref(), "partition")?))
    }

    fn add(&mut self, text: &str) -> Result<(), String> {
        let r = event::parse(text)?;
        let line = self.lines;
        match r.kind.as_ref() {
            "invoke" => self.invoke(&r, line),
            "ok" | "failed" | "unknown" => self.complete(&r, line),
            "queue" => {
                let q = self.syms.get(need(r.queue.as_deref(), "queue")?);
                let cfg = QueueCfg {
                    lease_us: need(r.lease_ms, "lease_ms")?.saturating_mul(1000),
                    retry_limit: r.retry_limit.unwrap_or(3),
                    dead_letters: r.dead_letters.unwrap_or(true),
                    dedup_us: r.dedup_window_ms.unwrap_or(0).saturating_mul(1000),
                    line,
                };
                self.queues.insert(q, cfg);
                Ok(())
            }
            "nemesis" => {
                let name = self.syms.get(need(r.fault.as_deref(), "fault")?);
                let t = need(r.t, "t")?;
                match need(r.phase.as_deref(), "phase")? {
                    "start" => {
                        self.open_faults.insert(name, self.faults.len());
                        self.faults.push(Fault { name, start: t, end: INF, start_line: line, may_restart: true });
                    }
                    "end" => match self.open_faults.remove(&name) {
                        Some(i) => {
                            self.faults[i].end = t;
                            self.faults[i].may_restart = r.restarted != Some(false);
                        }
                        None => return Err("a fault ends that never started".into()),
                    },
                    p => return Err(format!("nemesis phase {p:?} is not start or end")),
                }
                Ok(())
            }
            "final_log" => {
                let part = self.part_of(need(r.queue.as_deref(), "queue")?, need(r.partition.as_deref(), "partition")?);
                let mut entries = r.entries.unwrap_or_default();
                let first = r.first;
                let log = self.logs.entry(part).or_default();
                if let Some(f) = first {
                    log.first = f;
                }
                let mut got = Vec::with_capacity(entries.len());
                for e in entries.drain(..) {
                    got.push((need(e.offset, "offset")?, e.txid, e.payload));
                }
                for (offset, txid, payload) in got {
                    let e = Entry { txid: self.sym(&txid), payload: self.sym(&payload), line };
                    let log = self.logs.get_mut(&part).expect("inserted above");
                    let i = offset.checked_sub(log.first).ok_or("an entry below `first`")? as usize;
                    if i > log.entries.len() + 100_000_000 {
                        return Err(format!("offset {offset} is far past the rest of the log"));
                    }
                    if log.entries.len() <= i {
                        log.entries.resize(i + 1, Entry { txid: NONE, payload: NONE, line: 0 });
                    }
                    if log.entries[i].line != 0 {
                        return Err(format!("offset {offset} is listed twice"));
                    }
                    log.entries[i] = e;
                }
                Ok(())
            }
            "final_waiting" => {
                let part = self.part_of(need(r.queue.as_deref(), "queue")?, need(r.partition.as_deref(), "partition")?);
                let group = self.syms.get(r.group.as_deref().unwrap_or(QUEUE_MODE));
                let w = self.waiting.entry((part, group)).or_default();
                w.from = r.from.or(w.from);
                w.offsets.extend(r.offsets.unwrap_or_default().into_iter().map(|o| (o, line)));
                w.lines.push(line);
                Ok(())
            }
            "final_dlq" => {
                let queue = need(r.queue.as_deref(), "queue")?.to_owned();
                let mut list = Vec::new();
                for e in r.entries.unwrap_or_default() {
                    let part = self.part_of(&queue, need(e.partition.as_deref(), "partition")?);
                    let group = self.syms.get(e.group.as_deref().unwrap_or(QUEUE_MODE));
                    list.push(DlqEntry { part, group, offset: need(e.offset, "offset")?, line });
                }
                let q = self.syms.get(&queue);
                self.dlq.entry(q).or_default().extend(list);
                Ok(())
            }
            "" => Err("missing field `type`".into()),
            k => Err(format!("unknown line type {k:?}")),
        }
    }

    fn invoke(&mut self, r: &Raw, line: u32) -> Result<(), String> {
        let id = need(r.id, "id")?;
        let f = need(r.f.as_deref(), "f")?;
        let call = match f {
            "push" => {
                let queue = need(r.queue.as_deref(), "queue")?;
                let mut items = Vec::new();
                for it in need(r.messages.as_ref(), "messages")? {
                    items.push(self.write_of(queue, it)?);
                }
                Call::Push { statuses: vec![PushStatus::Unanswered; items.len()], items }
            }
            "pop" => {
                let queue = self.syms.get(need(r.queue.as_deref(), "queue")?);
                let group = r.group.as_deref().map_or(self.queue_mode, |g| self.syms.get(g));
                let lease_us = r.lease_seconds.map(|s| s.saturating_mul(1_000_000));
                let want = self.sym(&r.partition);
                Call::Pop { queue, want, group, auto_ack: r.auto_ack.unwrap_or(false), lease_us, got: None }
            }
            "ack" => {
                let lease = r.lease.as_deref();
                let mut items = Vec::new();
                for it in need(r.acks.as_ref(), "acks")? {
                    items.push(self.ack_of(lease, it)?);
                }
                Call::Ack { items }
            }
            "extend" => Call::Extend { lease: self.syms.get(need(r.lease.as_deref(), "lease")?), secs: r.seconds },
            "txn" => {
                let mut acks = Vec::new();
                for it in r.acks.iter().flatten() {
                    acks.push(self.ack_of(None, it)?);
                }
                let mut pushes = Vec::new();
                for it in r.pushes.iter().flatten() {
                    let queue = need(it.queue.as_deref(), "queue")?;
                    pushes.push(self.write_of(queue, it)?);
                }
                Call::Txn { acks, pushes }
            }
            "kafka_produce" => {
                let part = self.kafka_part(r)?;
                let mut records = Vec::new();
                for it in need(r.records.as_ref(), "records")? {
                    records.push(self.syms.get(need(it.payload.as_deref(), "payload")?));
                }
                Call::KProduce { part, producer: r.producer, records }
            }
            "kafka_fetch" => Call::KFetch { part: self.kafka_part(r)?, records: Vec::new() },
            "kafka_commit" => {
                let group = self.syms.get(need(r.group.as_deref(), "group")?);
                Call::KCommit { group, part: self.kafka_part(r)?, offset: need(r.offset, "offset")? }
            }
            "kafka_offset_fetch" => {
                let group = self.syms.get(need(r.group.as_deref(), "group")?);
                Call::KOffsetFetch { group, part: self.kafka_part(r)?, got: None }
            }
            f => return Err(format!("unknown operation {f:?}")),
        };
        if self.open.insert(id, self.ops.len()).is_some() {
            return Err(format!("operation {id} is invoked while it is still open"));
        }
        self.ops.push(Op {
            id,
            process: r.process.unwrap_or(0),
            inv: need(r.t, "t")?,
            comp: INF,
            outcome: Outcome::Unknown,
            inv_line: line,
            comp_line: 0,
            call,
        });
        Ok(())
    }

    fn complete(&mut self, r: &Raw, line: u32) -> Result<(), String> {
        let id = need(r.id, "id")?;
        let i = self.open.remove(&id).ok_or_else(|| format!("operation {id} completes but is not open"))?;
        let t = need(r.t, "t")?;
        if t < self.ops[i].inv {
            return Err(format!("operation {id} completes before its invocation"));
        }
        let outcome = match r.kind.as_ref() {
            "ok" => Outcome::Ok,
            "failed" => Outcome::Failed,
            _ => Outcome::Unknown,
        };
        self.ops[i].comp_line = line;
        self.ops[i].outcome = outcome;
        // An unknown may still land later (a request in flight): only an answer bounds it.
        self.ops[i].comp = if outcome == Outcome::Unknown { INF } else { t };
        if outcome != Outcome::Ok {
            return Ok(());
        }
        let mut call = std::mem::replace(&mut self.ops[i].call, Call::Extend { lease: NONE, secs: None });
        match &mut call {
            Call::Push { items, statuses } => {
                let given = r.statuses.as_ref();
                for (k, s) in statuses.iter_mut().enumerate() {
                    *s = match given.and_then(|g| g.get(k)).map(|s| s.as_ref()) {
                        None | Some("queued") => PushStatus::Queued,
                        Some("duplicate") => PushStatus::Duplicate,
                        Some(s) => return Err(format!("push status {s:?} is not queued or duplicate")),
                    };
                }
                if given.is_some_and(|g| g.len() != items.len()) {
                    return Err("a push answers one status per message".into());
                }
            }
            Call::Pop { queue, want, got, .. } => {
                let msgs = r.messages.as_deref().unwrap_or_default();
                if !msgs.is_empty() {
                    let queue = self.syms.name(*queue).to_owned();
                    let asked = (*want != NONE).then(|| self.syms.name(*want).to_owned());
                    let name = need(r.partition.as_deref().map(str::to_owned).or(asked), "partition")?;
                    let part = self.part_of(&queue, &name);
                    let lease = self.sym(&r.lease);
                    let mut v = Vec::with_capacity(msgs.len());
                    for m in msgs {
                        v.push((need(m.offset, "offset")?, self.sym(&m.txid)));
                    }
                    *got = Some(Got { part, lease, msgs: v });
                }
            }
            Call::KFetch { records, .. } => {
                for it in r.records.iter().flatten() {
                    records.push((need(it.offset, "offset")?, self.sym(&it.payload)));
                }
            }
            Call::KOffsetFetch { got, .. } => *got = Some(need(r.offset, "offset")?),
            _ => {}
        }
        self.ops[i].call = call;
        Ok(())
    }

    /// Invocations never completed are unknown: they may have taken effect.
    fn finish(&mut self) {
        self.open.clear();
        self.open_faults.clear();
    }
}
