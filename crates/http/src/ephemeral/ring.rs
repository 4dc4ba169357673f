//! One ephemeral queue in memory (D56): per partition a ring of messages, per (group,
//! partition) a cursor, the leases it handed out and what it must hand out again.
//!
//! Owns the delivery rules of an ephemeral queue: FIFO per partition, every group its own
//! cursor over the one ring (a group shares its work among its consumers, groups fan out),
//! a lease per delivery that expires into a redelivery with `attempts + 1`, and past
//! `retryLimit` a drop (counted; there is no DLQ). Must never grow past its bounds (a push
//! that does not fit is refused whole, or makes room by dropping the oldest under the
//! `drop-oldest` policy), never block (no I/O, no await: the caller holds one lock around
//! it), and never let an id from another incarnation of the process ack anything.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

/// A queue's declared bounds and delivery settings (the client's `configure` options).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Options {
    pub max_bytes: u64,
    pub max_length: u64,
    /// `reject` (a push that does not fit is refused, 429) or `drop-oldest`.
    pub policy: String,
    /// Messages older than this are dropped (0: never).
    pub ttl_seconds: u64,
    pub lease_seconds: u64,
    pub retry_limit: u32,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_bytes: 16 << 20,
            max_length: 100_000,
            policy: "reject".into(),
            ttl_seconds: 0,
            lease_seconds: 30,
            retry_limit: 3,
        }
    }
}

#[derive(Debug)]
struct Msg {
    payload: String,
    at_ms: u64,
}

#[derive(Debug, Default)]
struct Part {
    /// Sequence number of `msgs[0]`.
    base: u64,
    msgs: VecDeque<Msg>,
    bytes: u64,
}

impl Part {
    fn end(&self) -> u64 {
        self.base + self.msgs.len() as u64
    }
    fn get(&self, seq: u64) -> Option<&Msg> {
        seq.checked_sub(self.base).and_then(|i| self.msgs.get(i as usize))
    }
    fn pop_front(&mut self) {
        if let Some(m) = self.msgs.pop_front() {
            self.bytes -= m.payload.len() as u64;
            self.base += 1;
        }
    }
}

#[derive(Debug, Default)]
struct Cursor {
    next: u64,
    /// Leased: seq → (expiry ms, attempts so far).
    leased: BTreeMap<u64, (u64, u32)>,
    /// To hand out again before `next`: seq → attempts so far.
    redo: BTreeMap<u64, u32>,
}

/// A delivered message: its partition, sequence number, payload and attempts before this one.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivered {
    pub partition: String,
    pub seq: u64,
    pub payload: String,
    pub attempts: u32,
}

/// What an ack did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Outcome {
    Acked,
    Redelivered,
    /// Failed past the retry limit: gone (counted in `dropped`).
    Dropped,
    /// Not leased by this group (never was, already settled, or its lease expired).
    Unknown,
}

#[derive(Debug, Default)]
pub struct Ring {
    pub options: Options,
    parts: BTreeMap<String, Part>,
    cursors: HashMap<(String, String), Cursor>,
    groups: BTreeSet<String>,
    /// Messages dropped: expired by ttl, made room for by `drop-oldest`, or past the retry limit.
    pub dropped: u64,
}

/// Why a push was refused.
#[derive(Debug, PartialEq)]
pub enum Full {
    Length(u64),
    Bytes(u64),
}

impl Ring {
    pub fn new(options: Options) -> Ring {
        Ring { options, ..Ring::default() }
    }

    pub fn len(&self) -> u64 {
        self.parts.values().map(|p| p.msgs.len() as u64).sum()
    }
    pub fn bytes(&self) -> u64 {
        self.parts.values().map(|p| p.bytes).sum()
    }
    pub fn groups(&self) -> usize {
        self.groups.len()
    }
    pub fn partitions(&self) -> usize {
        self.parts.len()
    }
    pub fn has_partition(&self, name: &str) -> bool {
        self.parts.contains_key(name)
    }
    pub fn has_group(&self, name: &str) -> bool {
        self.groups.contains(name)
    }

    /// Drops every message, lease and cursor; keeps the options. Answers how many were dropped.
    pub fn reset(&mut self) -> u64 {
        let n = self.len();
        self.parts.clear();
        self.cursors.clear();
        self.groups.clear();
        n
    }

    /// Appends `payloads` to `partition`, all or none. `extra` is how many more bytes the
    /// process-wide budget allows (checked by the caller, refused here as `Bytes`).
    pub fn push(&mut self, partition: &str, payloads: Vec<String>, now_ms: u64, extra: u64) -> Result<u64, Full> {
        let add_len = payloads.len() as u64;
        let add_bytes: u64 = payloads.iter().map(|p| p.len() as u64).sum();
        if add_len > self.options.max_length {
            return Err(Full::Length(self.options.max_length));
        }
        if add_bytes > self.options.max_bytes.min(extra) {
            return Err(Full::Bytes(self.options.max_bytes.min(extra)));
        }
        let fits = |r: &Ring| r.len() + add_len <= r.options.max_length && r.bytes() + add_bytes <= r.options.max_bytes;
        if !fits(self) {
            if self.options.policy != "drop-oldest" {
                return Err(if self.len() + add_len > self.options.max_length {
                    Full::Length(self.options.max_length)
                } else {
                    Full::Bytes(self.options.max_bytes)
                });
            }
            // Feed semantics: the oldest messages of this partition first, then of the others.
            let names: Vec<String> = std::iter::once(partition.to_string())
                .chain(self.parts.keys().filter(|k| k.as_str() != partition).cloned())
                .collect();
            for name in names {
                while !fits(self) {
                    let Some(p) = self.parts.get_mut(&name).filter(|p| !p.msgs.is_empty()) else { break };
                    p.pop_front();
                    self.dropped += 1;
                }
            }
            self.forget_below(None);
        }
        let p = self.parts.entry(partition.to_string()).or_default();
        for payload in payloads {
            p.bytes += payload.len() as u64;
            p.msgs.push_back(Msg { payload, at_ms: now_ms });
        }
        Ok(add_len)
    }

    /// Up to `batch` messages for `group`: expired leases first become redeliveries (or
    /// drops), then redeliveries in order, then new messages; from `partition` only, or from
    /// the partitions in name order. `lease_ms` None commits at delivery (no lease).
    pub fn pop(
        &mut self,
        group: &str,
        partition: Option<&str>,
        batch: usize,
        now_ms: u64,
        commit_on_delivery: bool,
    ) -> Vec<Delivered> {
        self.expire(now_ms);
        self.groups.insert(group.to_string());
        let names: Vec<String> = match partition {
            Some(p) => vec![p.to_string()],
            None => self.parts.keys().cloned().collect(),
        };
        let lease_until = now_ms + self.options.lease_seconds.max(1) * 1000;
        let mut out = Vec::new();
        for name in names {
            let Some(part) = self.parts.get(&name) else { continue };
            let c = self.cursors.entry((group.to_string(), name.clone())).or_default();
            c.next = c.next.max(part.base);
            let mut due: Vec<(u64, u32)> = Vec::new();
            while out.len() + due.len() < batch {
                let Some(d) = c.redo.pop_first() else { break };
                due.push(d);
            }
            while out.len() + due.len() < batch && c.next < part.end() {
                due.push((c.next, 0));
                c.next += 1;
            }
            for (seq, attempts) in due {
                if let Some(m) = part.get(seq) {
                    out.push(Delivered { partition: name.clone(), seq, payload: m.payload.clone(), attempts });
                    if !commit_on_delivery {
                        c.leased.insert(seq, (lease_until, attempts));
                    }
                }
            }
            if out.len() >= batch {
                break;
            }
        }
        let touched: std::collections::BTreeSet<String> = out.iter().map(|d| d.partition.clone()).collect();
        for name in &touched {
            self.forget_below(Some(name));
        }
        out
    }

    /// Settles `seq` of `partition` for `group`: `completed`, or `failed`/`retry` (handed out
    /// again with one more attempt, or dropped past the retry limit).
    pub fn ack(&mut self, group: &str, partition: &str, seq: u64, completed: bool) -> Outcome {
        let Some(c) = self.cursors.get_mut(&(group.to_string(), partition.to_string())) else {
            return Outcome::Unknown;
        };
        let Some((_, attempts)) = c.leased.remove(&seq) else { return Outcome::Unknown };
        let out = if completed {
            Outcome::Acked
        } else if attempts + 1 > self.options.retry_limit {
            self.dropped += 1;
            Outcome::Dropped
        } else {
            c.redo.insert(seq, attempts + 1);
            Outcome::Redelivered
        };
        self.forget_below(Some(partition));
        out
    }

    /// Leases past their time become redeliveries (or drops); messages past the ttl go.
    fn expire(&mut self, now_ms: u64) {
        let limit = self.options.retry_limit;
        for c in self.cursors.values_mut() {
            let due: Vec<(u64, u32)> =
                c.leased.iter().filter(|(_, (until, _))| *until <= now_ms).map(|(s, (_, a))| (*s, *a)).collect();
            for (seq, attempts) in due {
                c.leased.remove(&seq);
                if attempts + 1 > limit {
                    self.dropped += 1;
                } else {
                    c.redo.insert(seq, attempts + 1);
                }
            }
        }
        if self.options.ttl_seconds > 0 {
            let oldest = now_ms.saturating_sub(self.options.ttl_seconds * 1000);
            for p in self.parts.values_mut() {
                while p.msgs.front().is_some_and(|m| m.at_ms < oldest) {
                    p.pop_front();
                    self.dropped += 1;
                }
            }
        }
    }

    /// Drops the messages every group has settled, and cursor state about messages that are
    /// gone. A partition nobody has read keeps its messages (within the bounds) for the
    /// first group to come.
    /// `only`: the one partition a pop or an ack touched (each pass costs its groups, not
    /// every partition's).
    fn forget_below(&mut self, only: Option<&str>) {
        for (name, p) in self.parts.iter_mut().filter(|(n, _)| only.is_none_or(|o| o == n.as_str())) {
            let low = self
                .groups
                .iter()
                .map(|g| match self.cursors.get(&(g.clone(), name.clone())) {
                    Some(c) => {
                        let l = c.leased.keys().next().copied().unwrap_or(u64::MAX);
                        let r = c.redo.keys().next().copied().unwrap_or(u64::MAX);
                        c.next.max(p.base).min(l).min(r)
                    }
                    None => p.base,
                })
                .min();
            if let Some(low) = low {
                while p.base < low && !p.msgs.is_empty() {
                    p.pop_front();
                }
            }
        }
        for ((_, name), c) in self.cursors.iter_mut().filter(|((_, n), _)| only.is_none_or(|o| o == n.as_str())) {
            let base = self.parts.get(name).map_or(u64::MAX, |p| p.base);
            c.leased.retain(|s, _| *s >= base);
            c.redo.retain(|s, _| *s >= base);
        }
    }

    /// Per group: how many messages of the ring it has not settled, and how many it holds leased.
    pub fn group_depths(&self) -> Vec<(String, u64, u64)> {
        self.groups
            .iter()
            .map(|g| {
                let (mut pending, mut leased) = (0, 0);
                for (name, p) in &self.parts {
                    match self.cursors.get(&(g.clone(), name.clone())) {
                        Some(c) => {
                            pending += p.end().saturating_sub(c.next.max(p.base)) + c.redo.len() as u64;
                            leased += c.leased.len() as u64;
                        }
                        None => pending += p.msgs.len() as u64,
                    }
                }
                (g.clone(), pending, leased)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(policy: &str, max_length: u64) -> Ring {
        Ring::new(Options { policy: policy.into(), max_length, retry_limit: 1, ..Options::default() })
    }
    fn payloads(r: &[Delivered]) -> Vec<&str> {
        r.iter().map(|d| d.payload.as_str()).collect()
    }
    fn strs(n: std::ops::Range<u32>) -> Vec<String> {
        n.map(|i| i.to_string()).collect()
    }

    #[test]
    fn groups_fan_out_and_share_within() {
        let mut r = ring("reject", 100);
        r.push("p", strs(0..4), 0, u64::MAX).unwrap();
        assert_eq!(payloads(&r.pop("a", None, 2, 0, false)), ["0", "1"]);
        assert_eq!(payloads(&r.pop("a", None, 10, 0, false)), ["2", "3"], "a second consumer of a: the rest");
        assert_eq!(payloads(&r.pop("b", None, 10, 0, false)), ["0", "1", "2", "3"], "b has its own cursor");
        for s in 0..4 {
            assert_eq!(r.ack("a", "p", s, true), Outcome::Acked);
        }
        assert_eq!(r.ack("a", "p", 0, true), Outcome::Unknown, "settled twice");
        assert_eq!(r.len(), 4, "b holds them still");
        for s in 0..4 {
            r.ack("b", "p", s, true);
        }
        assert_eq!(r.len(), 0, "settled by every group: gone");
    }

    #[test]
    fn a_failed_or_expired_message_comes_back_then_is_dropped() {
        let mut r = ring("reject", 100);
        r.push("p", strs(0..2), 0, u64::MAX).unwrap();
        let got = r.pop("g", None, 1, 0, false);
        assert_eq!((got[0].seq, got[0].attempts), (0, 0));
        assert_eq!(r.ack("g", "p", 0, false), Outcome::Redelivered);
        let again = r.pop("g", None, 1, 0, false);
        assert_eq!((again[0].seq, again[0].attempts), (0, 1), "before newer messages, one attempt more");
        // Its lease expires: past the retry limit (1) it is dropped, and 1 is next.
        let later = 31_000;
        let next = r.pop("g", None, 5, later, false);
        assert_eq!(payloads(&next), ["1"]);
        assert_eq!(r.dropped, 1);
    }

    #[test]
    fn bounds_reject_or_drop_the_oldest() {
        let mut r = ring("reject", 3);
        r.push("p", strs(0..3), 0, u64::MAX).unwrap();
        assert_eq!(r.push("p", strs(3..4), 0, u64::MAX), Err(Full::Length(3)));
        assert_eq!(r.len(), 3, "a refused push adds nothing");
        assert_eq!(r.push("p", strs(0..1), 0, 0), Err(Full::Bytes(0)), "the process budget");
        let mut d = ring("drop-oldest", 3);
        d.push("p", strs(0..3), 0, u64::MAX).unwrap();
        d.push("p", strs(3..5), 0, u64::MAX).unwrap();
        assert_eq!(payloads(&d.pop("g", None, 10, 0, true)), ["2", "3", "4"]);
        assert_eq!(d.dropped, 2);
    }

    #[test]
    fn ttl_and_commit_on_delivery() {
        let mut r = Ring::new(Options { ttl_seconds: 1, ..Options::default() });
        r.push("p", strs(0..2), 0, u64::MAX).unwrap();
        r.push("p", strs(2..3), 1500, u64::MAX).unwrap();
        assert_eq!(payloads(&r.pop("g", None, 10, 1500, true)), ["2"], "the two older than a second are gone");
        assert_eq!(r.ack("g", "p", 2, true), Outcome::Unknown, "committed at delivery: nothing leased");
        assert_eq!(r.len(), 0);
    }
}
