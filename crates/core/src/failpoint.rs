//! Named points where a test may stop the process as a power cut would: with
//! `BATON_FAILPOINT=<name>` in its environment, the server aborts (no
//! unwinding, no flush, no final checkpoint: what kill -9 leaves) the first
//! time it reaches that point. Used by tests/checkpoint_crash.rs to crash a
//! checkpoint at each of its phases.
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
