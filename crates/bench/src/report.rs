//! Results: one row per measurement, printed as a markdown table and
//! appended as JSON lines.

use crate::hist::Percentiles;
use serde::Serialize;
use std::io::Write;
use std::path::Path;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Params {
    pub workers: usize,
    pub size: usize,
    pub batch: u64,
    pub partitions: u32,
    pub queue: String,
    /// Offered rate (open loop only), msg/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offered_rate: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_secs: Option<f64>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    pub workload: String,
    pub system: String,
    pub params: Params,
    pub msgs: u64,
    pub secs: f64,
    /// Messages per second.
    pub rate: f64,
    pub requests: u64,
    pub errors: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
    /// Open loop only: offered messages, requests sent late, and whether the step held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offered: Option<u64>,
    /// Open loop only: messages answered after the step's end + drain (not delivered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_late: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub behind: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<bool>,
    /// Open loop only: p99 of service time (from the actual send), µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_p99_us: Option<u64>,
    /// What the system's "ok" means (fsync or not, replicated or not): every row carries it.
    pub ack_meaning: String,
    /// Pipeline only: transaction rate and the verifier's findings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<PipelineCheck>,
    /// Pipeline only: latency of the commit request alone, for systems whose
    /// step is two requests (take, then commit) and that time it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<crate::hist::Percentiles>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

/// What a pipeline row adds: committed transactions per second and the verifier's findings.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PipelineCheck {
    pub transactions: u64,
    pub transactions_per_sec: f64,
    pub fed: u64,
    /// Inputs not consumed when the run stopped.
    pub remaining: u64,
    /// Every fed message exactly once in the outputs or the remaining inputs, and nothing else.
    pub exactly_once: bool,
    /// FIFO per partition held; None when the system does not promise it.
    pub order: Option<bool>,
    pub out_of_order_pairs: u64,
    /// The verifier's one-line account.
    pub summary: String,
}

impl Row {
    /// A row with no measurement yet: the fields every workload sets, the rest zero or None.
    pub fn new(workload: &str, system: &str, ack_meaning: &str, params: Params) -> Row {
        Row {
            workload: workload.into(),
            system: system.into(),
            params,
            msgs: 0,
            secs: 0.0,
            rate: 0.0,
            requests: 0,
            errors: 0,
            p50_us: 0,
            p99_us: 0,
            p999_us: 0,
            max_us: 0,
            offered: None,
            answered_late: None,
            behind: None,
            held: None,
            service_p99_us: None,
            ack_meaning: ack_meaning.into(),
            pipeline: None,
            commit: None,
            label: None,
            first_error: None,
        }
    }

    pub fn set_latency(&mut self, p: Percentiles) {
        self.p50_us = p.p50_us;
        self.p99_us = p.p99_us;
        self.p999_us = p.p999_us;
        self.max_us = p.max_us;
    }
}

fn ms(us: u64) -> String {
    format!("{:.2}", us as f64 / 1000.0)
}

/// The markdown table of `rows`, with the ack meanings listed below it.
pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::new();
    s.push_str("| workload | system | workers | size B | batch | parts | offered msg/s | msgs | secs | msg/s | p50 ms | p99 ms | p99.9 ms | max ms | errors | held |\n");
    s.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for r in rows {
        let p = &r.params;
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {:.0} | {} | {} | {} | {} | {} | {} |\n",
            r.workload,
            r.system,
            p.workers,
            p.size,
            p.batch,
            p.partitions,
            p.offered_rate.map_or("-".into(), |x| x.to_string()),
            r.msgs,
            r.secs,
            r.rate,
            ms(r.p50_us),
            ms(r.p99_us),
            ms(r.p999_us),
            ms(r.max_us),
            r.errors,
            r.held.map_or("-", |h| if h { "yes" } else { "no" }),
        ));
    }
    let mut meanings: Vec<(&str, &str)> = Vec::new();
    for r in rows {
        let m = (r.system.as_str(), r.ack_meaning.as_str());
        if !meanings.contains(&m) {
            meanings.push(m);
        }
    }
    for (sys, m) in meanings {
        s.push_str(&format!("\n{sys}: \"ok\" means {m}.\n"));
    }
    for r in rows {
        if let Some(c) = &r.pipeline {
            s.push_str(&format!(
                "\n{} ({}): {} transactions, {:.0} tx/s; {}\n",
                r.workload, r.system, c.transactions, c.transactions_per_sec, c.summary
            ));
        }
    }
    for r in rows.iter().filter(|r| r.first_error.is_some()) {
        s.push_str(&format!("\n{} first error: {}\n", r.workload, r.first_error.as_deref().unwrap_or_default()));
    }
    s
}

/// Append one JSON line per row.
pub fn append_json(path: &Path, rows: &[Row]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    let mut buf = Vec::new();
    for r in rows {
        serde_json::to_writer(&mut buf, r).map_err(std::io::Error::other)?;
        buf.push(b'\n');
    }
    f.write_all(&buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> Row {
        Row {
            workload: "produce".into(),
            system: "baton".into(),
            params: Params {
                workers: 2,
                size: 256,
                batch: 1,
                partitions: 1,
                queue: "q".into(),
                offered_rate: None,
                count: Some(10),
                duration_secs: None,
            },
            msgs: 10,
            secs: 0.5,
            rate: 20.0,
            requests: 10,
            errors: 0,
            p50_us: 1500,
            p99_us: 2000,
            p999_us: 2500,
            max_us: 2500,
            offered: None,
            answered_late: None,
            behind: None,
            held: None,
            service_p99_us: None,
            ack_meaning: "durable".into(),
            pipeline: None,
            commit: None,
            label: None,
            first_error: None,
        }
    }

    #[test]
    fn table_and_json() {
        let t = markdown(&[row()]);
        assert!(t.contains("| produce | baton | 2 | 256 | 1 | 1 | - | 10 | 0.50 | 20 | 1.50 | 2.00 | 2.50 |"), "{t}");
        assert!(t.contains("baton: \"ok\" means durable."));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.jsonl");
        append_json(&p, &[row()]).unwrap();
        append_json(&p, &[row()]).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().count(), 2);
        let v: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(v["workload"], "produce");
        assert_eq!(v["p99_us"], 2000);
        assert_eq!(v["params"]["count"], 10);
        assert_eq!(v["ack_meaning"], "durable");
        assert!(v.get("held").is_none());
        assert!(v.get("pipeline").is_none());
    }

    #[test]
    fn pipeline_rows_carry_the_check() {
        let mut r = Row::new("pipeline", "postgres", "fsync per commit", row().params);
        r.pipeline = Some(PipelineCheck {
            transactions: 10,
            transactions_per_sec: 5.0,
            fed: 100,
            remaining: 0,
            exactly_once: true,
            order: None,
            out_of_order_pairs: 2,
            summary: "exactly-once ok".into(),
        });
        let t = markdown(&[row(), r.clone()]);
        assert!(t.contains("postgres: \"ok\" means fsync per commit."), "{t}");
        assert!(t.contains("baton: \"ok\" means durable."), "{t}");
        assert!(t.contains("pipeline (postgres): 10 transactions, 5 tx/s; exactly-once ok"), "{t}");
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["system"], "postgres");
        assert_eq!(v["ack_meaning"], "fsync per commit");
        assert_eq!(v["pipeline"]["exactly_once"], true);
        assert!(v["pipeline"]["order"].is_null());
    }
}
