//! The nemesis: faults injected into a broker we spawned, in turn, each
//! inside a `nemesis` window of the history.
//!
//! - `kill`: SIGKILL (no shutdown, no final checkpoint), then `serve` again on
//!   the same port and data directory; the window ends when /health answers.
//! - `stop`: SIGSTOP for longer than the lease time (leases run out while the
//!   node is frozen, requests pile up on its sockets), then SIGCONT; the
//!   window ends when /health answers.
//!
//! Through the fault shim (crates/faults, preloaded into the broker):
//!
//! - `clock`: the broker's wall clock jumps 1 h forward, the next time back
//!   (alternating), for longer than the lease time, then reads true again
//!   (leases run on the monotonic clock, D23: nothing may change);
//! - `fsync`: fdatasync / fsync / syncfs fail (EIO) for a second: the node
//!   must latch (503, /health `storage_failed`) and answer nothing ok it did
//!   not sync; then SIGKILL and a restart without the fault, as `kill`;
//! - `fsync-slow`: every sync takes 300 ms longer for longer than the lease
//!   time, then the fault is cleared;
//! - `disk-full`: writes to regular files fail (ENOSPC) for a second, then the
//!   fault is cleared; a node that latched on it (or exited) is restarted;
//! - `power`: SIGKILL, then the data directory replaced by what a power cut
//!   would leave (the shim's mirror: only what was fdatasync'd and
//!   directory-synced; every second cut also keeps some unsynced sectors, a
//!   torn write), then a restart on it: nothing answered may be lost, and the
//!   start-up must not call the disk corrupt;
//! - `clock-restart` (not in `clock`: it finds a known problem, see
//!   docs/check.md): SIGKILL, then a restart whose wall clock is 1 h ahead from
//!   its first instruction, for longer than the lease time, then SIGKILL and a
//!   restart with the true clock.
//!
//! The `end` line of each window says what the fault did (the shim's counts
//! of the calls it changed, whether /health said the node latched, whether it
//! was restarted): fields the checker ignores, kept for the report and tests.
//!
//! Owns the broker process while the clients run. Must never leave it
//! stopped, dead or under a fault: a fault, once started, always runs to its
//! end, even when asked to stop, and a restart that fails ends the run with
//! an error. Runs on its own thread: the restart blocks until the server is healthy.

use super::writer::{obj, Rec};
use crate::broker::Broker;
use crate::pipeline::Rng;
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    Kill,
    Stop,
    Clock,
    Fsync,
    FsyncSlow,
    DiskFull,
    ClockRestart,
    Power,
    /// `--cluster` only: the leader's Raft links cut, then healed.
    Partition,
}

const ALL: [Fault; 9] = [
    Fault::Kill,
    Fault::Stop,
    Fault::Clock,
    Fault::Fsync,
    Fault::FsyncSlow,
    Fault::DiskFull,
    Fault::ClockRestart,
    Fault::Power,
    Fault::Partition,
];

impl Fault {
    pub fn name(self) -> &'static str {
        match self {
            Fault::Kill => "kill",
            Fault::Stop => "stop",
            Fault::Clock => "clock",
            Fault::Fsync => "fsync",
            Fault::FsyncSlow => "fsync-slow",
            Fault::DiskFull => "disk-full",
            Fault::ClockRestart => "clock-restart",
            Fault::Power => "power",
            Fault::Partition => "partition",
        }
    }

    /// Injected through the fault shim, which the broker must then be started with.
    pub fn needs_shim(self) -> bool {
        !matches!(self, Fault::Kill | Fault::Stop | Fault::Partition)
    }

    /// What a three-member run (`--cluster`, `cluster_nemesis`) injects; everything else is
    /// a single node's.
    pub fn in_cluster(self) -> bool {
        matches!(self, Fault::Kill | Fault::Stop | Fault::Clock | Fault::Partition)
    }
}

/// `--nemesis kill,stop,clock,...`: the faults, in the order they are taken in turn.
pub fn parse(names: &[String]) -> Result<Vec<Fault>, String> {
    names
        .iter()
        .filter(|n| !n.is_empty())
        .map(|n| match ALL.iter().find(|f| f.name() == n.as_str()) {
            Some(f) => Ok(*f),
            None => {
                let known: Vec<&str> = ALL.iter().map(|f| f.name()).collect();
                Err(format!("unknown nemesis {n:?} ({})", known.join(", ")))
            }
        })
        .collect()
}

pub struct Nemesis {
    pub rec: Rec,
    pub faults: Vec<Fault>,
    /// Quiet time between two faults (jittered by up to half of it).
    pub interval: Duration,
    /// How long a `stop` freezes the broker: longer than the lease time.
    pub stop_for: Duration,
    pub stop: Arc<AtomicBool>,
    pub seed: u64,
    /// Whether every second power cut tears (keeps some unsynced sectors).
    pub tear: bool,
    /// More cuts judged aside at every power cut (`--power-points`).
    pub points: u64,
}

/// How long `fsync` and `disk-full` fail: enough for the clients' writes to hit it.
const FAIL_FOR: Duration = Duration::from_secs(1);
/// The `clock` jump.
const JUMP_MS: i64 = 3_600_000;
/// The extra time of every sync under `fsync-slow`.
const SLOW_MS: u64 = 300;

impl Nemesis {
    /// Inject faults until told to stop; gives the broker back (serving unless
    /// the error says otherwise), the faults done, and the error that ended it early.
    pub fn run(self, mut b: Broker) -> (Broker, Vec<String>, Option<String>) {
        let mut rng = Rng::new(self.seed ^ 0x4e3e);
        let mut done = Vec::new();
        let mut next = 0usize;
        let mut jumps = 0u64;
        let mut cuts = 0u64;
        loop {
            if !quiet(&self.stop, &mut rng, self.interval) {
                return (b, done, None);
            }
            let f = self.faults[next % self.faults.len()];
            next += 1;
            let t = Instant::now();
            self.rec.nemesis(f.name(), "start");
            let r = match f {
                Fault::Kill => {
                    b.kill9();
                    b.restart().map(|_| Map::new())
                }
                Fault::Stop => b.pause().and_then(|()| {
                    // Not cut short by the stop flag: a frozen broker must be continued.
                    std::thread::sleep(self.stop_for);
                    b.resume().map(|()| obj([("restarted", false.into())]))
                }),
                Fault::Clock => {
                    let ms = if jumps.is_multiple_of(2) { JUMP_MS } else { -JUMP_MS };
                    jumps += 1;
                    self.clock(&mut b, ms)
                }
                Fault::Fsync => self.fsync_fail(&mut b),
                Fault::FsyncSlow => self.fsync_slow(&mut b),
                Fault::DiskFull => self.disk_full(&mut b),
                Fault::ClockRestart => self.clock_restart(&mut b),
                Fault::Power => {
                    let tear = self.tear && cuts % 2 == 1;
                    cuts += 1;
                    self.power(&mut b, rng.next_u64(), tear)
                }
                Fault::Partition => Err("partition needs --cluster (a single node has no links to cut)".to_string()),
            };
            match r {
                Ok(details) => {
                    let said = summary(&details);
                    self.rec.nemesis_with(f.name(), "end", details);
                    done.push(format!("{}({:.1}s{said})", f.name(), t.elapsed().as_secs_f64()));
                }
                Err(e) => {
                    // No `end`: the window lasts to the end of the history, which is what happened.
                    return (b, done, Some(format!("nemesis {}: {e}", f.name())));
                }
            }
        }
    }

    /// The wall clock `ms` off for longer than a lease, then true again.
    fn clock(&self, b: &mut Broker, ms: i64) -> Result<Map<String, Value>, String> {
        b.set_faults(&format!("clock {ms}"))?;
        let before = b.faults_seen().clock_shifted;
        std::thread::sleep(self.stop_for);
        let health = b.health();
        let shifted = b.faults_seen().clock_shifted.saturating_sub(before);
        let mut d = obj([("offset_ms", ms.into()), ("wall_clock_reads_shifted", shifted.into())]);
        put_health(&mut d, "health", &health);
        // A broker that latched or died under a clock jump is a finding: say so, serve again.
        self.clear_and_recover(b, &mut d)?;
        Ok(d)
    }

    /// A restart whose wall clock is 1 h ahead from its start, then one with the true clock.
    fn clock_restart(&self, b: &mut Broker) -> Result<Map<String, Value>, String> {
        b.kill9();
        b.restart_under(&format!("clock {JUMP_MS}"))?;
        std::thread::sleep(self.stop_for);
        let shifted = b.faults_seen().clock_shifted;
        let health = b.health();
        b.kill9();
        b.restart()?;
        let mut d = obj([("offset_ms", JUMP_MS.into()), ("wall_clock_reads_shifted", shifted.into())]);
        put_health(&mut d, "health", &health);
        d.insert("restarted".into(), true.into());
        Ok(d)
    }

    /// The power fails now: SIGKILL, the data directory replaced by what the disk would
    /// keep (only what was synced; with `tear`, some unsynced sectors too), and a restart on
    /// it, which must neither lose an answered write nor call the disk corrupt.
    fn power(&self, b: &mut Broker, seed: u64, tear: bool) -> Result<Map<String, Value>, String> {
        // Read before the kill: every entry at or below it is on disk, so every cut keeps it.
        // Asked-for points are never skipped quietly: no gauge is an error.
        let durable = match self.points {
            0 => None,
            _ => Some(b.durable_index().ok_or("--power-points: /metrics gave no baton_wal_durable_index")?),
        };
        b.kill9();
        let judged = match durable {
            Some(d) => b.power_points(self.points, seed, d)?,
            None => 0,
        };
        let r = b.power_cut(seed, tear)?;
        b.restart()?;
        Ok(obj([
            ("points_judged_aside", judged.into()),
            ("durable_index", durable.unwrap_or(0).into()),
            ("seed", seed.into()),
            ("tear", tear.into()),
            ("ops", r.ops.into()),
            ("ops_durable", r.durable.into()),
            ("ops_kept", r.kept.into()),
            ("ops_dropped", r.dropped.into()),
            ("files", r.files.into()),
            ("unsynced_bytes_dropped", r.unsynced_dropped.into()),
            ("unsynced_bytes_kept", r.unsynced_kept.into()),
            ("restarted", true.into()),
        ]))
    }

    /// Every sync fails for a second; the node must latch. Then SIGKILL and a clean restart.
    fn fsync_fail(&self, b: &mut Broker) -> Result<Map<String, Value>, String> {
        b.set_faults("fsync fail")?;
        let (latched, health) = self.watch(b, FAIL_FOR);
        let failed = b.faults_seen().fsync_failed;
        let mut d = obj([("fsync_failed", failed.into()), ("latched", latched.is_some().into())]);
        if let Some(t) = latched {
            d.insert("latched_t".into(), t.into());
        }
        put_health(&mut d, "health", &health);
        // The restart clears the fault before the process starts (Broker::spawn).
        d.insert("killed_t".into(), self.rec.now_us().into());
        b.kill9();
        b.restart()?;
        d.insert("restarted".into(), true.into());
        Ok(d)
    }

    /// Every sync 300 ms slower for longer than a lease, then cleared.
    fn fsync_slow(&self, b: &mut Broker) -> Result<Map<String, Value>, String> {
        b.set_faults(&format!("fsync slow {SLOW_MS}"))?;
        let (latched, health) = self.watch(b, self.stop_for);
        let slowed = b.faults_seen().fsync_slowed;
        let mut d = obj([("slow_ms", SLOW_MS.into()), ("fsync_slowed", slowed.into())]);
        d.insert("latched".into(), latched.is_some().into());
        put_health(&mut d, "health", &health);
        self.clear_and_recover(b, &mut d)?;
        Ok(d)
    }

    /// Writes to files fail (ENOSPC) for a second, then cleared; a latched node is restarted.
    fn disk_full(&self, b: &mut Broker) -> Result<Map<String, Value>, String> {
        b.set_faults("disk full")?;
        let (latched, health) = self.watch(b, FAIL_FOR);
        let enospc = b.faults_seen().enospc;
        let mut d = obj([("enospc", enospc.into()), ("latched", latched.is_some().into())]);
        if let Some(t) = latched {
            d.insert("latched_t".into(), t.into());
        }
        put_health(&mut d, "health", &health);
        self.clear_and_recover(b, &mut d)?;
        Ok(d)
    }

    /// Poll /health for `dur`: when it first said 503 (history µs), and the last answer
    /// (the 503's, once there is one).
    fn watch(&self, b: &Broker, dur: Duration) -> (Option<u64>, Option<(u16, String)>) {
        let until = Instant::now() + dur;
        let mut latched = None;
        let mut last = None;
        while Instant::now() < until {
            let h = b.health();
            if latched.is_none() {
                if matches!(h, Some((503, _))) {
                    latched = Some(self.rec.now_us());
                }
                last = h;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        (latched, last)
    }

    /// Clear the shim's faults; then if that failed, the broker exited or /health is not
    /// 200, restart it (as `kill` does, which clears them too) and say so in `d`.
    fn clear_and_recover(&self, b: &mut Broker, d: &mut Map<String, Value>) -> Result<(), String> {
        let cleared = b.set_faults("");
        if let Err(e) = &cleared {
            d.insert("clear_failed".into(), e.clone().into());
        }
        let exited = b.check_alive().err();
        let after = if exited.is_none() { b.health() } else { None };
        put_health(d, "health_after", &after);
        if cleared.is_ok() && exited.is_none() && matches!(after, Some((200, _))) {
            d.insert("restarted".into(), false.into());
            return Ok(());
        }
        if let Some(e) = exited {
            d.insert("exited".into(), e.lines().next().unwrap_or("").into());
        }
        d.insert("killed_t".into(), self.rec.now_us().into());
        b.kill9();
        b.restart()?;
        d.insert("restarted".into(), true.into());
        Ok(())
    }
}

/// The quiet time before the next fault: `interval` plus up to half of it (seeded); false
/// when told to stop meanwhile.
pub(super) fn quiet(stop: &AtomicBool, rng: &mut Rng, interval: Duration) -> bool {
    let jitter = rng.below(interval.as_millis() as u64 / 2 + 1);
    let until = Instant::now() + interval + Duration::from_millis(jitter);
    while Instant::now() < until {
        if stop.load(SeqCst) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !stop.load(SeqCst)
}

fn put_health(d: &mut Map<String, Value>, key: &str, h: &Option<(u16, String)>) {
    let v = match h {
        Some((st, body)) => Value::from(format!("{st} {}", body.trim())),
        None => Value::from("no answer"),
    };
    d.insert(key.into(), v);
}

/// ", latched, restarted" for the run's one-line list of faults.
fn summary(d: &Map<String, Value>) -> String {
    let mut s = String::new();
    if let Some(n) = d.get("points_judged_aside").and_then(Value::as_u64).filter(|n| *n > 0) {
        s.push_str(&format!(", {n} more cuts judged"));
    }
    for k in ["latched", "restarted", "exited"] {
        if d.get(k).is_some_and(|v| v.as_bool() != Some(false)) {
            s.push_str(", ");
            s.push_str(k);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_parses_by_its_name() {
        let names: Vec<String> = ALL.iter().map(|f| f.name().to_string()).collect();
        assert_eq!(parse(&names).unwrap(), ALL.to_vec());
        assert_eq!(parse(&["".into(), "kill".into()]).unwrap(), vec![Fault::Kill]);
        let e = parse(&["fsnyc".into()]).unwrap_err();
        assert!(e.contains("unknown nemesis") && e.contains("disk-full"), "{e}");
        assert!(ALL.iter().filter(|f| f.needs_shim()).count() == 6);
        assert!(ALL.iter().filter(|f| f.in_cluster()).count() == 4);
    }
}
