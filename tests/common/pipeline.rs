//! What `baton check pipeline` prints, read back: the report's counts, and the one judgement
//! every pipeline test makes of it (exactly once, nothing lost, nothing phantom).

use std::time::Duration;

pub struct Run {
    pub ok: bool,
    pub stdout: String,
    pub took: Duration,
}

/// The first number on the report line named `name`.
pub fn count(out: &str, name: &str) -> u64 {
    out.lines()
        .find_map(|l| {
            let rest = l.strip_prefix(name)?;
            rest.starts_with(' ').then(|| rest.split_whitespace().next())?
        })
        .unwrap_or_else(|| panic!("no line {name:?} in:\n{out}"))
        .parse()
        .unwrap_or_else(|e| panic!("line {name:?}: {e}\n{out}"))
}

/// The verifier's own list of violation kinds, each a report line that must read 0.
pub use baton_check::history::KINDS as VIOLATIONS;

pub fn assert_exactly_once(r: &Run, messages: u64) {
    let out = &r.stdout;
    assert!(r.ok, "the verifier failed:\n{out}");
    assert!(out.contains("result: OK, no violation"), "{out}");
    assert!(out.contains("finished              yes"), "{out}");
    for v in VIOLATIONS {
        assert_eq!(count(out, v), 0, "{v}:\n{out}");
    }
    assert_eq!(count(out, "fed"), messages, "{out}");
    // Every id once in the output.
    let line = out.lines().find(|l| l.starts_with("output ")).unwrap();
    assert!(line.contains(&format!("{messages} records, {messages} ids")), "{line}");
    assert_eq!(count(out, "waiting"), 0, "{out}");
    assert_eq!(count(out, "committed inputs"), messages, "{out}");
    // At most 10 per transaction: committed as answered, plus those whose
    // answer was lost but whose output is in the log.
    let unknown = out.lines().find(|l| l.starts_with("unknown outcomes ")).unwrap();
    let unknown_committed: u64 = unknown.split('(').nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    assert!(count(out, "committed txns") + unknown_committed >= messages / 10, "{out}");
    assert!(count(out, "reader deliveries") >= messages, "{out}");
    assert!(out.contains("committed txns/s"), "{out}");
    assert!(out.contains("commit latency        p50"), "{out}");
}
