//! Damage seen in stored bytes while serving (a batch whose CRC fails when a
//! reader takes it from a partition file). Damage is never served (the read
//! fails), and it must not stay silent either: the first one is kept with its
//! reason, every one is counted, and the node's health says so until an
//! operator restarts it (issue 12 item 17). Process-wide, because the readers
//! that find it run on connection tasks, not on the planner. Owns only the
//! record of what was seen; it never changes stored data or the state.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

static COUNT: AtomicU64 = AtomicU64::new(0);
static FIRST: Mutex<Option<String>> = Mutex::new(None);

/// A reader found stored bytes that fail their checksum.
pub fn report(what: &str) {
    COUNT.fetch_add(1, Ordering::Relaxed);
    let mut first = FIRST.lock().unwrap_or_else(|e| e.into_inner());
    if first.is_none() {
        tracing::error!(%what, "damaged stored data found while reading; the node reports it until restarted");
        *first = Some(what.to_string());
    }
}

/// How many damaged reads there were, and the first one's reason.
pub fn seen() -> Option<(u64, String)> {
    let first = FIRST.lock().unwrap_or_else(|e| e.into_inner()).clone()?;
    Some((COUNT.load(Ordering::Relaxed), first))
}

pub fn count() -> u64 {
    COUNT.load(Ordering::Relaxed)
}
