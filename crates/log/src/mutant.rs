//! Deliberate bugs, for checking the checkers (issue #13: "a broker built with
//! a deliberate bug must be caught"). Compiled only with the `mutants`
//! feature, into the `baton-mutant` binary that `scripts/test --full` builds
//! (`cargo build --release --features mutants --bin baton-mutant`); `baton`
//! itself has none of this code, so no flag, variable or client can reach it.
//!
//! `BATON_MUTANT=<name>` picks one, read once:
//!
//! - `skip-sync`: the WAL's fdatasync is skipped and reported done, so an
//!   "ok" is answered before the entry is durable (only a power cut shows it:
//!   a SIGKILL leaves the page cache);
//! - `ack-unfenced`: an ack is settled under the group's lease on the
//!   partition whatever lease it names and however long ago it ran out (I4
//!   unfenced, the bug of issue 12 item 8), and leases run out only when
//!   their partition is next popped (not on a timer), so a late ack finds one;
//! - `no-inherit`: a new cluster leader keeps the leases it inherits as they are
//!   instead of extending them by what was left of them from its own first entry
//!   (I5 and D41 off), so a leader whose clock runs ahead of its predecessor's
//!   lets them run out at once and leases the same messages again.

use std::sync::OnceLock;

/// Whether the mutant `name` is the one this process runs with.
pub fn is(name: &str) -> bool {
    static PICKED: OnceLock<Option<String>> = OnceLock::new();
    PICKED.get_or_init(|| std::env::var("BATON_MUTANT").ok()).as_deref() == Some(name)
}

/// The mutant in force, for the start-up warning.
pub fn picked() -> Option<String> {
    std::env::var("BATON_MUTANT").ok()
}
