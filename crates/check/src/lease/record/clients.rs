//! One recording client: until the settle phase (then only pops of up to 100
//! and acks of whole leases, so what waits shrinks before the final drain),
//! a seeded random mix of pushes (now and then the
//! same message again, to exercise dedup), pops under a lease (queue mode and
//! a named group, any partition or a named one), acks (completed, failed,
//! retry, dlq), lease extends, transactions that ack a leased message and
//! push a new one, and acks on leases held past their time (which must be
//! refused, I4).
//!
//! Owns what one client holds (its leases, what it pushed) and the mapping of
//! each answer to `ok` / `failed` / `unknown`. Must never send a request
//! before its invocation line is written, never write `failed` unless the
//! broker certainly changed nothing (a 4xx, `success: false`, a rollback, a
//! latched node's refusal at its door; never any other 5xx), and never retry
//! a write by itself under a new transactionId.

use super::writer::{obj, End, Rec};
use super::{Ctx, GROUPS};
use crate::pipeline::Rng;
use baton_client::{Ack, Error, PopOptions, PushItem, TxnOutcome};
use serde_json::{json, Map, Value};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A lease this client holds, with what it delivered and is not yet settled.
struct Held {
    lease: String,
    queue: usize,
    partition_id: String,
    group: Option<&'static str>,
    msgs: Vec<(u64, String)>,
    /// When the broker lets it go at the latest, as far as we can tell here.
    expires: Instant,
}

/// A message pushed, kept to push the same one again (same partition and transactionId).
#[derive(Clone)]
struct Pushed {
    queue: usize,
    partition: String,
    txid: String,
}

/// A refusal's name for the history: the server's code, else the status.
fn refusal(e: &Error) -> String {
    e.code().map(str::to_string).or_else(|| e.status().map(|s| format!("http_{s}"))).unwrap_or_else(|| e.to_string())
}

/// How a latched node refuses a request at its door (crates/core/src/runner.rs, `failed()`):
/// the request was never planned. A latch also answers 503 `not durable: ...` to requests
/// already planned, and those may well be applied: their entry can be in the WAL file and
/// comes back at the restart (a push answered so was in the log after a SIGKILL and
/// restart; tests/check/check_history_faults.rs).
const LATCHED_REFUSAL: &str = "storage failed, refusing writes";

/// The error a door refusal of a latched node is recorded with.
pub const LATCHED: &str = "storage_failed";

/// A request that got no answer we can read is unknown; a refusal (4xx, or a latched
/// node's refusal at its door) changed nothing.
fn end_of_err(e: &Error) -> End {
    match e {
        Error::Api { status, .. } if *status < 500 => End::Failed(refusal(e)),
        Error::Api { status: 503, message, .. } if message.starts_with(LATCHED_REFUSAL) => End::Failed(LATCHED.into()),
        // Any other 5xx, transport, and a 2xx we cannot read: it may have been applied.
        _ => End::Unknown,
    }
}

struct Client {
    cx: Arc<Ctx>,
    me: u64,
    rng: Rng,
    held: Vec<Held>,
    pushed: Vec<Pushed>,
    n: u64,
    /// Requests in a row that got no answer (the broker is down or frozen).
    lost: u32,
    /// Settling: pops in a row that delivered nothing.
    empty: u32,
}

/// Settling: a client that found nothing this many pops in a row says it is idle.
const IDLE_AFTER: u32 = 20;
/// Settling: the batch of a pop.
const SETTLE_BATCH: u32 = 100;

pub async fn client(cx: Arc<Ctx>, me: u32, seed: u64) {
    let mut c = Client {
        cx,
        me: me as u64,
        rng: Rng::new(seed),
        held: Vec::new(),
        pushed: Vec::new(),
        n: 0,
        lost: 0,
        empty: 0,
    };
    while !c.cx.stop.load(SeqCst) {
        if c.cx.settling.load(SeqCst) {
            c.settle().await;
        } else {
            c.step().await;
        }
        if c.lost > 0 {
            // While the broker is down, refused connections come back at once: back off
            // (20 ms doubling to 320 ms) rather than fill the history with unknowns.
            tokio::time::sleep(Duration::from_millis(20 << c.lost.min(5))).await;
        }
    }
}

impl Client {
    fn rec(&self) -> &Rec {
        &self.cx.rec
    }

    /// Write a completion, counting answers lost (or refused by a latched node) in a row.
    fn done(&mut self, id: u64, end: End) {
        let down = matches!(&end, End::Unknown) || matches!(&end, End::Failed(w) if w == LATCHED);
        self.lost = if down { self.lost + 1 } else { 0 };
        self.cx.rec.complete(id, self.me, end);
    }

    fn pick_partition(&mut self) -> String {
        self.rng.below(self.cx.partitions as u64).to_string()
    }

    async fn step(&mut self) {
        // A lease past its time: mostly let it go, sometimes ack it anyway (the
        // broker must refuse: I4). Either way it is no longer ours.
        let now = Instant::now();
        if let Some(i) = self.held.iter().position(|h| now > h.expires + Duration::from_millis(300)) {
            let h = self.held.swap_remove(i);
            let r = self.rng.below(100);
            if r < 35 {
                let n = h.msgs.len();
                let k = 1 + self.rng.below(n as u64) as usize;
                self.ack(h, k, Some("completed")).await;
            } else if r < 55 {
                // Must roll back (`rejected_ack`): neither its ack nor its push may show.
                self.txn(h).await;
            }
            return;
        }
        let r = self.rng.below(100);
        let has = !self.held.is_empty();
        match r {
            _ if r < 30 => self.push().await,
            _ if r < 55 && self.held.len() < 2 => self.pop().await,
            _ if r < 80 && has => {
                let h = self.take_held();
                let n = h.msgs.len();
                let k = 1 + self.rng.below(n as u64) as usize;
                self.ack(h, k, None).await
            }
            _ if r < 87 && has => self.extend().await,
            _ if has => {
                let h = self.take_held();
                self.txn(h).await
            }
            _ => self.pop().await,
        }
    }

    fn take_held(&mut self) -> Held {
        let i = self.rng.below(self.held.len() as u64) as usize;
        self.held.swap_remove(i)
    }

    async fn push(&mut self) {
        // Now and then the same message again: the answer must be `duplicate` and nothing stored.
        let again = !self.pushed.is_empty() && self.rng.below(100) < 12;
        let (queue, msgs): (usize, Vec<Pushed>) = if again {
            let p = self.pushed[self.rng.below(self.pushed.len() as u64) as usize].clone();
            (p.queue, vec![p])
        } else {
            let queue = self.rng.below(self.cx.queues.len() as u64) as usize;
            let k = 1 + self.rng.below(3);
            let mut v = Vec::new();
            for _ in 0..k {
                self.n += 1;
                let partition = self.pick_partition();
                v.push(Pushed { queue, partition, txid: format!("c{}-p{}", self.me, self.n) });
            }
            (queue, v)
        };
        let qname = self.cx.queues[queue].name.clone();
        let items: Vec<PushItem> = msgs
            .iter()
            .map(|m| PushItem::new(&qname, &m.partition, &m.txid, json!({"c": self.me, "txid": m.txid})))
            .collect();
        let listed: Vec<Value> = msgs.iter().map(|m| json!({"partition": m.partition, "txid": m.txid})).collect();
        let id = self.rec().invoke(self.me, "push", obj([("queue", qname.into()), ("messages", listed.into())]));
        let end = match self.cx.client.push(&items).await {
            Ok(res) => {
                let good = |s: &str| s == "queued" || s == "duplicate";
                if res.iter().all(|r| good(&r.status)) {
                    let st: Vec<Value> = res.iter().map(|r| r.status.clone().into()).collect();
                    End::Ok(obj([("statuses", st.into())]))
                } else if res.iter().all(|r| !good(&r.status)) {
                    End::Failed(res[0].code.clone().unwrap_or_else(|| res[0].status.clone()))
                } else {
                    // One entry, some items refused: the format has no per-item outcome, and
                    // `unknown` is the one answer that is never wrong.
                    End::Unknown
                }
            }
            Err(e) => end_of_err(&e),
        };
        self.done(id, end);
        if !again {
            self.pushed.extend(msgs);
            if self.pushed.len() > 64 {
                self.pushed.drain(..self.pushed.len() - 64);
            }
        }
    }

    /// The settle phase's step: ack whole leases held, else pop a large batch.
    async fn settle(&mut self) {
        if !self.held.is_empty() {
            let h = self.take_held();
            let n = h.msgs.len();
            return self.ack(h, n, Some("completed")).await;
        }
        let before = self.held.len();
        self.pop_n(SETTLE_BATCH).await;
        if self.held.len() > before {
            // Found more after saying it was idle (a lease expired, a retry came due):
            // not idle any more, so the settle phase does not end on its word.
            if self.empty >= IDLE_AFTER {
                self.cx.idle.fetch_sub(1, SeqCst);
            }
            self.empty = 0;
        } else {
            self.empty += 1;
            if self.empty == IDLE_AFTER {
                self.cx.idle.fetch_add(1, SeqCst);
            }
        }
    }

    async fn pop(&mut self) {
        let batch = 1 + self.rng.below(5) as u32;
        self.pop_n(batch).await
    }

    async fn pop_n(&mut self, batch: u32) {
        let queue = self.rng.below(self.cx.queues.len() as u64) as usize;
        let group = GROUPS[self.rng.below(GROUPS.len() as u64) as usize];
        // A group holds at most one lease per partition: never ask for one we hold.
        let partition = (self.rng.below(100) < 30).then(|| self.pick_partition());
        let qname = self.cx.queues[queue].name.clone();
        let mut args = obj([
            ("queue", qname.clone().into()),
            ("consumer", format!("c{}", self.me).into()),
            ("batch", batch.into()),
        ]);
        if let Some(p) = &partition {
            args.insert("partition".into(), p.clone().into());
        }
        if let Some(g) = group {
            args.insert("group".into(), g.into());
        }
        let o = PopOptions {
            partition,
            batch: Some(batch),
            group: group.map(str::to_string),
            // From the group's first pop on, a named group reads the whole log (from 0).
            subscription_mode: group.map(|_| "all".to_string()),
            ..Default::default()
        };
        let id = self.rec().invoke(self.me, "pop", args);
        let sent = Instant::now();
        let end = match self.cx.client.pop_with(&qname, &o).await {
            Ok(None) => End::Ok(obj([("messages", json!([]))])),
            Ok(Some(p)) => {
                let msgs: Vec<(u64, String)> =
                    p.messages.iter().map(|m| (m.offset, m.transaction_id.clone())).collect();
                let shown: Vec<Value> = msgs.iter().map(|(o, t)| json!({"offset": o, "txid": t})).collect();
                match p.lease_id.clone() {
                    Some(lease) => {
                        self.held.push(Held {
                            lease: lease.clone(),
                            queue,
                            partition_id: p.partition_id.clone(),
                            group,
                            msgs,
                            // Counted from the request: the broker's lease started after it was sent.
                            expires: sent + Duration::from_millis(self.cx.lease_ms),
                        });
                        End::Ok(obj([
                            ("partition", p.partition.into()),
                            ("lease", lease.into()),
                            ("messages", shown.into()),
                        ]))
                    }
                    // Not an auto-ack pop: a delivery without a lease is not the API's.
                    None => End::Unknown,
                }
            }
            Err(e) => end_of_err(&e),
        };
        self.done(id, end);
    }

    fn status(&mut self, h: &Held) -> &'static str {
        let r = self.rng.below(100);
        match r {
            _ if r < 64 => "completed",
            _ if r < 76 => "failed",
            _ if r < 88 => "retry",
            _ if self.cx.queues[h.queue].dead_letters => "dlq",
            _ => "completed",
        }
    }

    /// Ack `k` of the lease's messages (with `status`, else a random one each) in one
    /// batch request, recorded as one operation per message: the broker answers per item.
    async fn ack(&mut self, mut h: Held, k: usize, status: Option<&'static str>) {
        let mut picked = Vec::new();
        for _ in 0..k.min(h.msgs.len()) {
            let i = self.rng.below(h.msgs.len() as u64) as usize;
            let st = status.unwrap_or_else(|| self.status(&h));
            picked.push((h.msgs.swap_remove(i), st));
        }
        let acks: Vec<Ack> = picked
            .iter()
            .map(|((_, txid), st)| Ack {
                transaction_id: txid.clone(),
                partition_id: h.partition_id.clone(),
                lease_id: Some(h.lease.clone()),
                status: st.to_string(),
                error: (*st != "completed").then(|| "recorded".to_string()),
                consumer_group: h.group.map(str::to_string),
            })
            .collect();
        let ids: Vec<u64> = picked
            .iter()
            .map(|((_, txid), st)| {
                let a = json!([{"txid": txid, "status": st}]);
                self.rec().invoke(self.me, "ack", obj([("lease", h.lease.clone().into()), ("acks", a)]))
            })
            .collect();
        let mut keep = true;
        match self.cx.client.ack_batch(&acks).await {
            Ok(res) => {
                for ((id, r), (_, st)) in ids.iter().zip(&res).zip(&picked) {
                    if r.success {
                        self.done(*id, End::Ok(Map::new()));
                        // A nack releases the whole lease.
                        keep &= *st == "completed" || *st == "dlq";
                    } else {
                        let why = r.code.clone().or_else(|| r.error.clone()).unwrap_or_else(|| "refused".into());
                        self.done(*id, End::Failed(why));
                        keep = false;
                    }
                }
            }
            Err(e) => {
                let end = end_of_err(&e);
                for id in ids {
                    let e = match &end {
                        End::Failed(w) => End::Failed(w.clone()),
                        _ => End::Unknown,
                    };
                    self.done(id, e);
                }
                keep = false;
            }
        }
        if keep && !h.msgs.is_empty() {
            self.held.push(h);
        }
    }

    async fn extend(&mut self) {
        let i = self.rng.below(self.held.len() as u64) as usize;
        let lease_s = self.cx.lease_ms / 1000;
        // At most the lease time: the end of the run waits one lease time for every lease to end.
        let secs = (self.rng.below(2) == 0).then(|| 1 + self.rng.below(lease_s));
        let lease = self.held[i].lease.clone();
        let mut args = obj([("lease", lease.clone().into())]);
        if let Some(s) = secs {
            args.insert("seconds".into(), s.into());
        }
        let id = self.rec().invoke(self.me, "extend", args);
        let sent = Instant::now();
        let (end, live) = match self.cx.client.extend_lease(&lease, secs).await {
            Ok(x) if x.success => (End::Ok(Map::new()), true),
            Ok(_) => (End::Failed("not_extended".into()), false),
            Err(e) => (end_of_err(&e), false),
        };
        self.done(id, end);
        if live {
            let by = Duration::from_secs(secs.unwrap_or(lease_s));
            // The new end counts from the broker's instant, which was after we sent.
            self.held[i].expires = sent + by;
        } else {
            self.held.swap_remove(i);
        }
    }

    /// Ack some of the lease's messages and push one new message, as one transaction.
    async fn txn(&mut self, mut h: Held) {
        let k = 1 + self.rng.below(h.msgs.len() as u64) as usize;
        let acked: Vec<(u64, String)> = h.msgs.drain(..k).collect();
        self.n += 1;
        let queue = self.rng.below(self.cx.queues.len() as u64) as usize;
        let qname = self.cx.queues[queue].name.clone();
        let partition = self.pick_partition();
        let txid = format!("c{}-t{}", self.me, self.n);
        let acks: Vec<Ack> = acked
            .iter()
            .map(|(_, t)| Ack {
                transaction_id: t.clone(),
                partition_id: h.partition_id.clone(),
                lease_id: Some(h.lease.clone()),
                status: "completed".into(),
                error: None,
                consumer_group: h.group.map(str::to_string),
            })
            .collect();
        let push = PushItem::new(&qname, &partition, &txid, json!({"c": self.me, "txid": txid}));
        let shown: Vec<Value> =
            acked.iter().map(|(_, t)| json!({"lease": h.lease, "txid": t, "status": "completed"})).collect();
        let args =
            obj([("acks", shown.into()), ("pushes", json!([{"queue": qname, "partition": partition, "txid": txid}]))]);
        let id = self.rec().invoke(self.me, "txn", args);
        let out = self.cx.client.transaction(&acks, &[push], std::slice::from_ref(&h.lease)).await;
        let (end, keep) = match out {
            TxnOutcome::Committed { .. } => (End::Ok(Map::new()), true),
            TxnOutcome::RolledBack { reason, .. } => (End::Failed(reason), false),
            TxnOutcome::Refused { code, .. } => (End::Failed(format!("http_{code}")), false),
            TxnOutcome::Unknown(_) => (End::Unknown, false),
        };
        self.done(id, end);
        if keep && !h.msgs.is_empty() {
            self.held.push(h);
        }
    }
}
