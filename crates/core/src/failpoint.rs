//! Named points where a test may stop the process as a power cut would: with
//! `BATON_FAILPOINT=<name>` in its environment, the server aborts (no
//! unwinding, no flush, no final checkpoint: what kill -9 leaves) the first
//! time it reaches that point. Used by tests/storage/checkpoint_crash.rs to crash a
//! checkpoint at each of its phases. `BATON_FAILPOINT_PAUSE=<name>:<ms>` makes
//! a point sleep instead (tests/cluster/cluster_rebuild_stop.rs widens a rebuild).
//!
//! Must never change what the code does when the variable is unset, which is
//! always outside tests: the name is read once.

use std::sync::OnceLock;

static ARMED: OnceLock<Option<String>> = OnceLock::new();

/// Abort here if `BATON_FAILPOINT` names this point.
pub fn hit(name: &str) {
    let armed = ARMED.get_or_init(|| std::env::var("BATON_FAILPOINT").ok().filter(|s| !s.is_empty()));
    if armed.as_deref() == Some(name) {
        eprintln!("baton: failpoint {name}: aborting");
        std::process::abort();
    }
}

static PAUSED: OnceLock<Option<(String, u64)>> = OnceLock::new();

/// Sleep here if `BATON_FAILPOINT_PAUSE` is `<this name>:<milliseconds>`: a test widens a
/// window (a rebuild under way) to act inside it deterministically. At most 60 s.
pub fn pause(name: &str) {
    let armed = PAUSED.get_or_init(|| {
        let v = std::env::var("BATON_FAILPOINT_PAUSE").ok()?;
        let (n, ms) = v.rsplit_once(':')?;
        Some((n.to_string(), ms.parse::<u64>().ok()?.min(60_000)))
    });
    if let Some((n, ms)) = armed {
        if n == name {
            eprintln!("baton: failpoint {name}: pausing {ms} ms");
            std::thread::sleep(std::time::Duration::from_millis(*ms));
        }
    }
}
