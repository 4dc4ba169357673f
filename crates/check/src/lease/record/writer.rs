//! The history file's one writer, and the handle every recording task holds.
//!
//! Owns the output file, the recorder's clock and the operation ids. Lines
//! reach the file through one channel, read by one thread, so two tasks'
//! lines are never interleaved and each task's lines keep their order (an
//! invocation is always before its completion). Must never stamp a line with
//! any clock but [`Rec::now_us`], and never write a completion before the
//! request it completes was answered (or given up on).

use serde_json::{Map, Value};
use std::io::{BufWriter, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::time::Instant;

/// What the writer saw; the counts are the test's and the report's.
#[derive(Debug, Default, Clone)]
pub struct Written {
    pub lines: u64,
}

#[derive(Clone)]
pub struct Rec {
    tx: mpsc::Sender<String>,
    t0: Instant,
    next_id: Arc<AtomicU64>,
}

/// How an operation ended, as the history says it.
pub enum End {
    Ok(Map<String, Value>),
    /// The broker refused: certainly changed nothing.
    Failed(String),
    /// Lost answer, timeout, 5xx: either.
    Unknown,
}

impl Rec {
    /// Start the writer thread on `path`; join the handle after every `Rec` is dropped.
    pub fn create(path: &Path) -> Result<(Rec, std::thread::JoinHandle<Result<Written, String>>), String> {
        let f = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let (tx, rx) = mpsc::channel::<String>();
        let shown = path.display().to_string();
        let h = std::thread::spawn(move || {
            let mut w = BufWriter::with_capacity(1 << 20, f);
            let mut n = Written::default();
            // Ends when every sender is gone: nothing can be written after that.
            for line in rx {
                w.write_all(line.as_bytes()).and_then(|_| w.write_all(b"\n")).map_err(|e| format!("{shown}: {e}"))?;
                n.lines += 1;
            }
            w.flush().map_err(|e| format!("{shown}: {e}"))?;
            Ok(n)
        });
        Ok((Rec { tx, t0: Instant::now(), next_id: Arc::new(AtomicU64::new(1)) }, h))
    }

    /// Microseconds since the recording started: the one clock of the history.
    pub fn now_us(&self) -> u64 {
        self.t0.elapsed().as_micros() as u64
    }

    pub fn line(&self, v: Value) {
        // The writer only stops when every sender is dropped, so this cannot fail while we hold one.
        let _ = self.tx.send(v.to_string());
    }

    /// Write an operation's invocation (stamped now) and return its id.
    pub fn invoke(&self, process: u64, f: &str, args: Map<String, Value>) -> u64 {
        let id = self.next_id.fetch_add(1, SeqCst);
        let mut m = Map::new();
        m.insert("type".into(), "invoke".into());
        m.insert("id".into(), id.into());
        m.insert("t".into(), self.now_us().into());
        m.insert("process".into(), process.into());
        m.insert("f".into(), f.into());
        m.extend(args);
        self.line(Value::Object(m));
        id
    }

    /// Write an operation's completion (stamped now).
    pub fn complete(&self, id: u64, process: u64, end: End) {
        let mut m = Map::new();
        let (kind, extra) = match end {
            End::Ok(r) => ("ok", r),
            End::Failed(e) => ("failed", Map::from_iter([("error".to_string(), Value::from(e))])),
            End::Unknown => ("unknown", Map::new()),
        };
        m.insert("type".into(), kind.into());
        m.insert("id".into(), id.into());
        m.insert("t".into(), self.now_us().into());
        m.insert("process".into(), process.into());
        m.extend(extra);
        self.line(Value::Object(m));
    }

    /// A fault window's edge.
    pub fn nemesis(&self, fault: &str, phase: &str) {
        self.nemesis_with(fault, phase, Map::new());
    }

    /// A fault window's edge with what the fault did (fields the checker ignores).
    pub fn nemesis_with(&self, fault: &str, phase: &str, details: Map<String, Value>) {
        let mut m = obj([
            ("type", "nemesis".into()),
            ("t", self.now_us().into()),
            ("fault", fault.into()),
            ("phase", phase.into()),
        ]);
        m.extend(details);
        self.line(Value::Object(m));
    }
}

/// Build a JSON object from pairs (the fields of an invocation or a result).
pub fn obj<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}
