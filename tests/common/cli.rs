//! Running `baton` as a command (no server of its own) and keeping its exit code and output.

use std::process::Command;

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// `baton <args>`, waited for.
pub fn baton(args: &[&str]) -> Out {
    let o = Command::new(env!("CARGO_BIN_EXE_baton")).args(args).output().expect("run baton");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// A recorded run judged OK: its JSON verdict, its wall time and where its history is.
pub struct Recorded {
    pub verdict: serde_json::Value,
    pub wall: std::time::Duration,
    pub history: std::path::PathBuf,
    tag: String,
}

impl Recorded {
    /// Copies the history out of the test's temp dir (which a failure deletes) and
    /// says where, for an assertion's message.
    pub fn keep(&self) -> String {
        let p = std::env::temp_dir().join(format!("baton-{}-{}.jsonl", self.tag, std::process::id()));
        let _ = std::fs::copy(&self.history, &p);
        p.display().to_string()
    }
}

/// `baton check history --spawn <args> --out <dir>/<tag>.jsonl --json`, which must
/// exit 0 with the verdict OK (else this panics with the output and keeps the history).
pub fn record_ok(dir: &std::path::Path, tag: &str, args: &[&str]) -> Recorded {
    let history = dir.join(format!("{tag}.jsonl"));
    let mut all = vec!["check", "history", "--spawn"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", history.to_str().unwrap(), "--json"]);
    let t = std::time::Instant::now();
    let r = baton(&all);
    let mut rec = Recorded { verdict: serde_json::Value::Null, wall: t.elapsed(), history, tag: tag.to_string() };
    assert_eq!(r.code, 0, "history kept at {}\n{}\n{}", rec.keep(), r.stdout, r.stderr);
    rec.verdict = serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", r.stdout));
    assert_eq!(rec.verdict["status"], "OK", "{}", r.stdout);
    rec
}
