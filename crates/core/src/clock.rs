//! The engine's clock. Entry timestamps (I5), lease expiry, delays, retention
//! and timers all run on it: the boot clock (`CLOCK_BOOTTIME`, which no one
//! sets and which counts suspend) plus an offset fixed at start. So a jump of
//! the system clock while the process runs neither expires a live lease
//! (forward) nor stretches new ones (back): a 60 s lease lasts 60 s of real
//! time (issue 12 item 14).
//!
//! Across a restart on the same boot the offset is the one the last run used
//! (`<data>/clock` holds the boot id and the offset), so a restart with the
//! system clock an hour off neither expires every inherited lease and dedup
//! window at once nor holds the leases it grants for an extra hour (both found
//! by `baton check history --nemesis clock-restart`, D33). After a reboot the
//! wall clock anchors it again, but never behind the last entry in the log.
//! What it gives up: a correction of the system clock shows in message
//! timestamps only after a reboot, or a start after deleting `<data>/clock`.
//!
//! A cluster member follows its leader's clock (D72): a follower that hears a leader whose
//! clock is further from its own than `--clock-follow-ms` takes the leader's, so state time
//! goes on from the last leader's clock at a failover whatever the wall clocks say.
//! Must never read the wall clock except to anchor.

use crate::model::Micros;
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering::SeqCst};
use std::time::{SystemTime, UNIX_EPOCH};

/// Engine time = boot-clock microseconds + this; unset until the first use or `start`.
static OFFSET: AtomicI64 = AtomicI64::new(i64::MIN);

const FILE: &str = "clock";

/// The data directory `start` anchored for, where a followed leader's clock is recorded.
static DIR: Mutex<Option<PathBuf>> = Mutex::new(None);

/// A follower takes its leader's clock once the two are further apart than this, in µs;
/// 0: never (D72). The default is `--clock-follow-ms`'s.
static FOLLOW_BEYOND: AtomicI64 = AtomicI64::new(1_000_000);

/// A saved offset further than this from the wall clock's is not a clock that drifted or
/// was set wrong but a damaged file: the wall clock anchors instead.
const MAX_DRIFT: i64 = 366 * 86_400 * 1_000_000;

#[derive(Debug, Clone, Copy)]
pub struct Clock {
    offset: i64,
}

impl Clock {
    /// A clock that reads `wall` microseconds since the epoch now.
    pub fn anchored_at(wall: Micros) -> Clock {
        Clock { offset: wall as i64 - boot_micros() }
    }

    pub fn now(&self) -> Micros {
        boot_micros().saturating_add(self.offset).max(0) as Micros
    }
}

fn boot_micros() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill in.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    assert_eq!(r, 0, "CLOCK_BOOTTIME is always there on Linux");
    ts.tv_sec * 1_000_000 + ts.tv_nsec / 1_000
}

fn system_micros() -> Micros {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// The process's clock: the one `start` set, else anchored on the wall clock at first use
/// (tools, and anything read before the engine starts).
pub fn now() -> Micros {
    let mut o = OFFSET.load(SeqCst);
    if o == i64::MIN {
        let fresh = Clock::anchored_at(system_micros()).offset;
        o = match OFFSET.compare_exchange(i64::MIN, fresh, SeqCst, SeqCst) {
            Ok(_) => fresh,
            Err(set) => set,
        };
    }
    boot_micros().saturating_add(o).max(0) as Micros
}

/// Anchor the engine's clock for the data directory `dir`, whose log's last entry is at
/// `last_ts` (see [`anchor`]). Called once, after recovery and before anything is planned.
pub fn start(dir: &Path, last_ts: Micros) -> Result<(), String> {
    OFFSET.store(anchor(dir, last_ts)?, SeqCst);
    *DIR.lock() = Some(dir.to_path_buf());
    Ok(())
}

/// Times this member took its leader's clock (`baton_clock_follows_total`).
static FOLLOWS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub fn follows() -> u64 {
    FOLLOWS.load(SeqCst)
}

pub fn follow_beyond_ms() -> u64 {
    FOLLOW_BEYOND.load(SeqCst) as u64 / 1000
}

/// `--clock-follow-ms`: how far a follower's clock may be from its leader's before it takes
/// the leader's; 0 turns following off (each member keeps the clock its start anchored).
pub fn follow_beyond(ms: u64) {
    FOLLOW_BEYOND.store(i64::try_from(ms.saturating_mul(1000)).unwrap_or(i64::MAX), SeqCst);
}

/// A follower accepted an append from its leader, whose clock reads `leader_now` (its time at
/// sending plus how long the append took here: a little behind the leader's, never ahead).
/// Takes the leader's clock when it is further from this member's than `--clock-follow-ms`
/// (D72), and says whether it did, so that the caller records it with [`save`] away from
/// the request. Only the first leader's anchor (the wall clock at its start) reaches state
/// time: every member after it goes on from its predecessor's clock. Without this a new
/// leader whose wall clock ran an hour ahead moved state time forward by the hour (dedup
/// windows ran out, delays passed, leases expired early; `tests/cluster/cluster_clock.rs`).
/// A reading further than `MAX_DRIFT` from this member's clock is not a clock but a damaged
/// or forged request: ignored.
pub fn heard_leader(leader_now: Micros) -> bool {
    now();
    let mine = OFFSET.load(SeqCst);
    let Some(theirs) = BEHIND.lock().heard(mine, leader_now, FOLLOW_BEYOND.load(SeqCst)) else { return false };
    OFFSET.store(theirs, SeqCst);
    FOLLOWS.fetch_add(1, SeqCst);
    tracing::warn!(
        moved_ms = (theirs - mine) / 1000,
        "this member's clock was apart from its leader's: it follows the leader's (D72)"
    );
    true
}

/// Readings of a leader's clock that put it behind this member's, in a row, before this member
/// moves its clock back to it (D74).
const BACK_AFTER: u32 = 3;

/// The readings behind this member's clock heard in a row since the last one that was not.
static BEHIND: Mutex<Behind> = Mutex::new(Behind { in_a_row: 0, least: i64::MIN });

/// What a follower has heard of a leader that seems behind it. A reading is the leader's time
/// at sending plus how long the append took here, so it is late by however long the append
/// waited before it was handled: it can put the leader behind when it is not, never ahead
/// when it is not. So a leader ahead is followed at once, and one behind only when
/// [`BACK_AFTER`] readings in a row agree, and then to the latest of them (D74). Taking one
/// late reading moved a loaded follower back and its next prompt heartbeat forward again, each
/// time with a file sync.
struct Behind {
    in_a_row: u32,
    /// The highest offset the readings in a row put the leader at (the least behind).
    least: i64,
}

impl Behind {
    fn heard(&mut self, mine: i64, leader_now: Micros, beyond: i64) -> Option<i64> {
        let Some(theirs) = followed(mine, leader_now, beyond) else {
            *self = Behind { in_a_row: 0, least: i64::MIN };
            return None;
        };
        if theirs > mine {
            *self = Behind { in_a_row: 0, least: i64::MIN };
            return Some(theirs);
        }
        self.in_a_row += 1;
        self.least = self.least.max(theirs);
        if self.in_a_row < BACK_AFTER {
            return None;
        }
        let back = self.least;
        *self = Behind { in_a_row: 0, least: i64::MIN };
        Some(back)
    }
}

/// The offset that makes this member's clock (at `mine`) read `leader_now`, when the two are
/// further apart than `beyond` µs (0: never) and not implausibly far.
fn followed(mine: i64, leader_now: Micros, beyond: i64) -> Option<i64> {
    let theirs = i64::try_from(leader_now).ok()?.saturating_sub(boot_micros());
    let apart = theirs.abs_diff(mine);
    (beyond > 0 && apart > beyond as u64 && apart <= MAX_DRIFT as u64).then_some(theirs)
}

/// Records the clock in force in `<data>/clock`, so that a restart on this boot goes on
/// from the leader's clock it followed rather than from its own wall clock.
pub fn save() {
    let Some(dir) = DIR.lock().clone() else { return };
    let Some(b) = boot_id() else { return };
    let path = dir.join(FILE);
    if let Err(e) = write(&dir, &path, &format!("{b} {}\n", OFFSET.load(SeqCst))) {
        tracing::warn!(error = %e, "could not record the followed clock in {}", path.display());
    }
}

/// A cluster member that starts to lead (D40) with its clock behind `last_ts`, the log's last
/// entry, written by a predecessor whose clock ran ahead: moves the offset forward so that
/// time goes on from `last_ts` at the boot clock's rate (recorded in `<dir>/clock` for the
/// next run), and says whether it moved. Without it the leader's time stood at `last_ts`
/// (I5: never behind the last entry) until its own clock caught up, and nothing driven by
/// time (lease expiry, timers, delays, retention) happened for as long as the clocks were
/// apart. Never moves the clock back.
pub fn not_behind(dir: &Path, last_ts: Micros) -> Result<bool, String> {
    now();
    let Some(floor) = raised(OFFSET.load(SeqCst), last_ts) else { return Ok(false) };
    OFFSET.fetch_max(floor, SeqCst);
    if let Some(b) = boot_id() {
        let path = dir.join(FILE);
        write(dir, &path, &format!("{b} {floor}\n")).map_err(|e| format!("write {}: {e}", path.display()))?;
    }
    Ok(true)
}

/// The offset that puts the clock just past `last_ts`, when `offset` leaves it behind.
fn raised(offset: i64, last_ts: Micros) -> Option<i64> {
    let floor = i64::try_from(last_ts).unwrap_or(i64::MAX).saturating_add(1).saturating_sub(boot_micros());
    (offset < floor).then_some(floor)
}

/// The offset for `dir`: the last run's on this boot, else the wall clock's; never behind
/// `last_ts` (I5). Recorded in `<dir>/clock` for the next run.
fn anchor(dir: &Path, last_ts: Micros) -> Result<i64, String> {
    let boot = boot_id();
    let path = dir.join(FILE);
    let saved = std::fs::read_to_string(&path).ok().and_then(|s| parse(&s));
    let wall = Clock::anchored_at(system_micros()).offset;
    let mut offset = match (&boot, saved) {
        (Some(b), Some((sb, o))) if *b == sb && o.abs_diff(wall) <= MAX_DRIFT as u64 => o,
        (Some(b), Some((sb, o))) if *b == sb => {
            tracing::warn!(offset = o, "{} names an offset over a year from the wall clock's: ignored", path.display());
            wall
        }
        _ => wall,
    };
    let floor = i64::try_from(last_ts).unwrap_or(i64::MAX).saturating_add(1).saturating_sub(boot_micros());
    offset = offset.max(floor);
    if let Some(b) = boot {
        write(dir, &path, &format!("{b} {offset}\n")).map_err(|e| format!("write {}: {e}", path.display()))?;
    }
    Ok(offset)
}

fn boot_id() -> Option<String> {
    let s = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(s.trim().to_string()).filter(|s| !s.is_empty() && !s.contains(' '))
}

fn parse(s: &str) -> Option<(String, i64)> {
    let (b, o) = s.trim().split_once(' ')?;
    Some((b.to_string(), o.parse().ok()?))
}

/// Replace the file whole (a torn one would read as no file: the wall clock anchors). One
/// writer at a time: a promotion and a follower's `save` share the temporary file.
fn write(dir: &Path, path: &Path, text: &str) -> std::io::Result<()> {
    static WRITING: Mutex<()> = Mutex::new(());
    let _one = WRITING.lock();
    let tmp = dir.join(format!("{FILE}.tmp"));
    {
        let mut f = std::fs::File::create(&tmp)?;
        std::io::Write::write_all(&mut f, text.as_bytes())?;
        f.sync_data()?;
    }
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_advances_with_the_boot_clock_not_the_wall_clock() {
        // An anchor an hour behind the system clock stays an hour behind: nothing the system
        // clock says later moves it.
        let hour = 3_600_000_000;
        let c = Clock::anchored_at(system_micros() - hour);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let lag = system_micros() as i64 - c.now() as i64;
        assert!((hour as i64 - 1_000_000..=hour as i64 + 1_000_000).contains(&lag), "lag {lag}");
        let a = c.now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let d = c.now() - a;
        assert!((20_000..1_000_000).contains(&d), "advanced {d} us in 20 ms");
        assert!(now() <= now(), "never goes back");
    }

    /// A damaged or hand-made `clock` file must not move time by years (or overflow it): an
    /// offset further than `MAX_DRIFT` from the wall clock's is ignored.
    #[test]
    fn an_implausible_saved_offset_is_ignored() {
        let d = tempfile::tempdir().unwrap();
        let wall = Clock::anchored_at(system_micros()).offset;
        for bad in [i64::MAX, i64::MIN + 1, wall + 50 * 365 * 86_400 * 1_000_000] {
            std::fs::write(d.path().join(FILE), format!("{} {bad}\n", boot_id().unwrap())).unwrap();
            let o = anchor(d.path(), 0).unwrap();
            let off = Clock { offset: o }.now() as i64 - system_micros() as i64;
            assert!(off.abs() < 1_000_000, "offset {bad}: {off} us from the wall clock");
        }
        // A log entry from the far future is a floor without overflowing.
        let o = anchor(d.path(), u64::MAX).unwrap();
        assert!(Clock { offset: o }.now() >= i64::MAX as u64 / 2);
    }

    #[test]
    fn a_clock_behind_the_log_moves_forward_and_never_back() {
        let minute = 60_000_000u64;
        let mine = Clock::anchored_at(system_micros());
        let ahead = mine.now() + minute;
        let moved = Clock { offset: raised(mine.offset, ahead).expect("a minute behind the log: moved") };
        let t = moved.now();
        assert!(t > ahead && t < ahead + minute / 2, "goes on from the last entry: {t} vs {ahead}");
        assert_eq!(raised(moved.offset, ahead - minute), None, "an older entry moves nothing");
        assert_eq!(raised(moved.offset, t - 1), None, "nor one it is already past");
    }

    #[test]
    fn a_follower_takes_a_leaders_clock_only_beyond_the_bound() {
        let hour = 3_600_000_000u64;
        let second = 1_000_000i64;
        let mine = Clock::anchored_at(system_micros());
        let at = |o: i64| Clock { offset: o }.now();
        // A leader two hours behind (or ahead): taken, to within the time of the call.
        for leader in [mine.now() - 2 * hour, mine.now() + 2 * hour] {
            let o = followed(mine.offset, leader, second).expect("two hours apart: followed");
            assert!(at(o).abs_diff(leader) < 500_000, "{} vs {leader}", at(o));
        }
        // Within the bound, or following off, or a reading no clock gives: kept.
        assert_eq!(followed(mine.offset, mine.now() + 900_000, second), None);
        assert_eq!(followed(mine.offset, mine.now() + hour, 0), None);
        assert_eq!(followed(mine.offset, mine.now() + 400 * 24 * hour, second), None);
        assert_eq!(followed(mine.offset, u64::MAX, second), None);
    }

    /// A loaded follower's late readings must not move its clock back and the next prompt one
    /// forward again (D74): back only when three readings in a row agree, and to the latest.
    #[test]
    fn a_leader_behind_is_followed_only_when_readings_agree() {
        let second = 1_000_000i64;
        let mine = Clock::anchored_at(system_micros());
        let mut b = Behind { in_a_row: 0, least: i64::MIN };
        // One reading late by 1.5 s, then a prompt one: nothing moves.
        assert_eq!(b.heard(mine.offset, mine.now() - 1_500_000, second), None);
        assert_eq!(b.heard(mine.offset, mine.now(), second), None);
        assert_eq!(b.heard(mine.offset, mine.now() - 1_500_000, second), None, "the prompt one broke the row");
        assert_eq!(b.heard(mine.offset, mine.now() - 1_500_000, second), None);
        // Three in a row, 3, 2 and 4 s behind: back to the latest (2 s behind).
        let mut b = Behind { in_a_row: 0, least: i64::MIN };
        let (base, now) = (mine.offset, mine.now());
        assert_eq!(b.heard(base, now - 3 * second as u64, second), None);
        assert_eq!(b.heard(base, now - 2 * second as u64, second), None);
        let back = b.heard(base, now - 4 * second as u64, second).expect("three in a row agree");
        let behind = mine.now() as i64 - Clock { offset: back }.now() as i64;
        assert!((2 * second - 500_000..=2 * second + 500_000).contains(&behind), "{behind} us behind");
        // A leader ahead is followed at once, and clears a row begun before it.
        let mut b = Behind { in_a_row: 2, least: base - 3 * second };
        let ahead = b.heard(base, mine.now() + 5 * second as u64, second).expect("ahead: at once");
        assert!(ahead > base);
        assert_eq!(b.in_a_row, 0);
    }

    #[test]
    fn a_restart_on_the_same_boot_continues_the_last_runs_clock_and_never_goes_behind_the_log() {
        let d = tempfile::tempdir().unwrap();
        let hour = 3_600_000_000i64;
        // The last run's clock was an hour ahead of the wall clock.
        let ahead = Clock::anchored_at(system_micros() + hour as u64).offset;
        std::fs::write(d.path().join(FILE), format!("{} {ahead}\n", boot_id().unwrap())).unwrap();
        let at = |o: i64| Clock { offset: o }.now() as i64;
        let o = anchor(d.path(), 0).unwrap();
        let lead = at(o) - system_micros() as i64;
        assert!((hour - 1_000_000..=hour + 1_000_000).contains(&lead), "lead {lead}");
        // Another boot's file anchors on the wall clock, and the log's last entry is a floor.
        std::fs::write(d.path().join(FILE), format!("another-boot {ahead}\n")).unwrap();
        let o = anchor(d.path(), 0).unwrap();
        assert!((at(o) - system_micros() as i64).abs() < 1_000_000);
        let last = system_micros() + 2 * hour as u64;
        let o = anchor(d.path(), last).unwrap();
        assert!(at(o) > last as i64, "never behind the last entry");
        let (b, saved) = parse(&std::fs::read_to_string(d.path().join(FILE)).unwrap()).unwrap();
        assert_eq!((b, saved), (boot_id().unwrap(), o));
    }
}
