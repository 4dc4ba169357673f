//! Crashes, restarts, power cuts and failing disks under the real binary.
//!
//! One test binary per concern (D86): each file below was its own binary, and
//! linking 69 of them was a fifth of CI's time.

#[path = "../common/mod.rs"]
mod common;

mod checkpoint_crash;
mod kill9;
mod power_after_crash;
mod recovery;
mod storage_failure;
