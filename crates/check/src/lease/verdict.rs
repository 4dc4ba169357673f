//! What the lease-queue checker concludes: OK, VIOLATION (each with the few
//! history lines that prove it) or UNKNOWN (each with why the history cannot
//! decide), plus counts for the report.
//!
//! Owns the vocabulary (the violation kinds and the reasons for UNKNOWN), the
//! bounded keeping of examples, and both renderings (human, JSON). Must never
//! judge: every finding is made by the rules and only recorded here.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Lost,
    Phantom,
    RedeliveredAfterAck,
    DoubleLease,
    StaleAck,
    Order,
    TornTxn,
    RolledBackVisible,
    DedupStoredTwice,
    KafkaCommitBackwards,
    KafkaIdempotentDuplicate,
}

impl Kind {
    pub const ALL: &'static [Kind] = &[
        Kind::Lost,
        Kind::Phantom,
        Kind::RedeliveredAfterAck,
        Kind::DoubleLease,
        Kind::StaleAck,
        Kind::Order,
        Kind::TornTxn,
        Kind::RolledBackVisible,
        Kind::DedupStoredTwice,
        Kind::KafkaCommitBackwards,
        Kind::KafkaIdempotentDuplicate,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Lost => "lost",
            Kind::Phantom => "phantom",
            Kind::RedeliveredAfterAck => "redelivered_after_ack",
            Kind::DoubleLease => "double_lease",
            Kind::StaleAck => "stale_ack",
            Kind::Order => "order",
            Kind::TornTxn => "torn_txn",
            Kind::RolledBackVisible => "rolled_back_visible",
            Kind::DedupStoredTwice => "dedup_stored_twice",
            Kind::KafkaCommitBackwards => "kafka_commit_backwards",
            Kind::KafkaIdempotentDuplicate => "kafka_idempotent_duplicate",
        }
    }
}

/// Why a question stays open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// Writes answered ok to a partition whose log was not read at the end.
    NoFinalLog,
    /// A queue consumed or leased without a `queue` line: lease rules skipped there.
    QueueNotDeclared,
    /// An ack, extend or transaction names a lease no ok pop returned.
    UnknownLease,
    /// An ack names a message its lease did not deliver.
    AckNotInLease,
    /// A message is neither waiting nor settled by any operation, but the queue
    /// dead-letters on its own and its DLQ was not read: lost or dead-lettered.
    DlqNotRead,
}

impl Why {
    pub fn name(self) -> &'static str {
        match self {
            Why::NoFinalLog => "no_final_log",
            Why::QueueNotDeclared => "queue_not_declared",
            Why::UnknownLease => "unknown_lease",
            Why::AckNotInLease => "ack_not_in_lease",
            Why::DlqNotRead => "dlq_not_read",
        }
    }
}

/// One proven violation.
#[derive(Debug, Clone, Serialize)]
pub struct Violation {
    pub kind: Kind,
    /// `queue/partition` (or `topic/partition`).
    pub partition: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub txid: Option<String>,
    pub detail: String,
    /// The history lines that prove it (1-based, ascending).
    pub lines: Vec<u32>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Open {
    pub why: Why,
    pub detail: String,
    pub lines: Vec<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    Ok,
    Violation,
    Unknown,
}

impl Status {
    /// The CLI's exit code (docs/check.md).
    pub fn exit_code(self) -> i32 {
        match self {
            Status::Ok => 0,
            Status::Violation => 1,
            Status::Unknown => 2,
        }
    }
}

/// Examples kept per kind; the counts are always complete.
pub const KEEP: usize = 20;

#[derive(Debug, Clone, Default, Serialize)]
pub struct OpCount {
    pub ok: u64,
    pub failed: u64,
    pub unknown: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub status: Status,
    pub lines: u32,
    pub ops: BTreeMap<&'static str, OpCount>,
    /// Distinct messages in the final logs, and delivered (partition, group, offset) at least once.
    pub messages: u64,
    pub deliveries: u64,
    pub partitions: u64,
    pub faults: u64,
    pub violation_counts: BTreeMap<&'static str, u64>,
    pub violations: Vec<Violation>,
    pub unknown_counts: BTreeMap<&'static str, u64>,
    pub unknowns: Vec<Open>,
}

impl Default for Verdict {
    fn default() -> Self {
        Verdict {
            status: Status::Ok,
            lines: 0,
            ops: BTreeMap::new(),
            messages: 0,
            deliveries: 0,
            partitions: 0,
            faults: 0,
            violation_counts: BTreeMap::new(),
            violations: Vec::new(),
            unknown_counts: BTreeMap::new(),
            unknowns: Vec::new(),
        }
    }
}

impl Verdict {
    pub fn flag(&mut self, mut v: Violation) {
        let n = self.violation_counts.entry(v.kind.name()).or_insert(0);
        *n += 1;
        if *n as usize <= KEEP {
            v.lines.retain(|l| *l != 0);
            v.lines.sort_unstable();
            v.lines.dedup();
            self.violations.push(v);
        }
    }

    pub fn open(&mut self, why: Why, detail: impl FnOnce() -> String, lines: &[u32]) {
        let n = self.unknown_counts.entry(why.name()).or_insert(0);
        *n += 1;
        if *n as usize <= KEEP {
            let mut lines: Vec<u32> = lines.iter().copied().filter(|l| *l != 0).collect();
            lines.sort_unstable();
            lines.dedup();
            self.unknowns.push(Open { why, detail: detail(), lines });
        }
    }

    pub fn count(&self, k: Kind) -> u64 {
        self.violation_counts.get(k.name()).copied().unwrap_or(0)
    }

    pub fn unknown(&self, w: Why) -> u64 {
        self.unknown_counts.get(w.name()).copied().unwrap_or(0)
    }

    pub fn total_violations(&self) -> u64 {
        self.violation_counts.values().sum()
    }

    /// Set the status from what was found: any violation wins, then any open question.
    pub fn conclude(&mut self) {
        self.violations.sort_by(|a, b| (a.kind, &a.lines).cmp(&(b.kind, &b.lines)));
        self.status = if self.total_violations() > 0 {
            Status::Violation
        } else if !self.unknown_counts.is_empty() {
            Status::Unknown
        } else {
            Status::Ok
        };
    }

    /// The human report; `excerpt(line)` gives a line's text (the CLI reads them back).
    pub fn render(&self, excerpt: &dyn Fn(u32) -> Option<String>) -> String {
        let mut s = String::new();
        let status = match self.status {
            Status::Ok => "OK",
            Status::Violation => "VIOLATION",
            Status::Unknown => "UNKNOWN",
        };
        let _ = writeln!(s, "verdict                     {status}");
        let _ = writeln!(s, "history lines               {}", self.lines);
        for (name, c) in &self.ops {
            let _ = writeln!(s, "{name:<28}{} ok, {} failed, {} unknown", c.ok, c.failed, c.unknown);
        }
        let _ = writeln!(s, "partitions                  {}", self.partitions);
        let _ = writeln!(s, "messages                    {} in the final logs", self.messages);
        let _ = writeln!(s, "deliveries                  {} (partition, group, offset) delivered", self.deliveries);
        let _ = writeln!(s, "fault windows               {}", self.faults);
        for k in Kind::ALL {
            let _ = writeln!(s, "{:<28}{}", k.name(), self.count(*k));
        }
        for (why, n) in &self.unknown_counts {
            let _ = writeln!(s, "unknown: {why:<19}{n}");
        }
        let quote = |lines: &[u32], s: &mut String| {
            for l in lines {
                let text = excerpt(*l).unwrap_or_default();
                let text = match text.char_indices().nth(300) {
                    Some((cut, _)) => format!("{}...", &text[..cut]),
                    None => text,
                };
                let _ = writeln!(s, "    {l:>8}: {text}");
            }
        };
        for v in &self.violations {
            let at = format!(
                "{}{}{}{}",
                v.partition,
                v.group.as_ref().map(|g| format!(" group {g}")).unwrap_or_default(),
                v.offset.map(|o| format!(" offset {o}")).unwrap_or_default(),
                v.txid.as_ref().map(|t| format!(" txid {t}")).unwrap_or_default()
            );
            let _ = writeln!(s, "\n{} at {at}: {}", v.kind.name().to_uppercase(), v.detail);
            quote(&v.lines, &mut s);
        }
        for u in &self.unknowns {
            let _ = writeln!(s, "\nUNKNOWN {}: {}", u.why.name(), u.detail);
            quote(&u.lines, &mut s);
        }
        s
    }
}
