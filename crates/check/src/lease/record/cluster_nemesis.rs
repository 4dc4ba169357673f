//! The nemesis of a three-member run (`--spawn --cluster`): faults aimed at whichever
//! member leads, in turn, each inside a `nemesis` window of the history. The clients' door
//! (`members::ENTRY`) never leads and is never faulted, so what the clients see is what a
//! client of a cluster sees when its leader fails.
//!
//! - `kill`: SIGKILL the leader and start it again on its directory; the window ends once a
//!   member leads (often the other one);
//! - `stop`: SIGSTOP the leader past the election timeout and the lease time, then SIGCONT:
//!   it wakes to a newer term, steps down and throws away what it planned (D40);
//! - `partition`: every Raft link of the leader cut (its HTTP stays reachable: the entry
//!   member's forwards still reach it) past the election timeout and the lease time, then
//!   healed;
//! - `clock` (through the fault shim): the member that does not lead is restarted as after a
//!   reboot with a wall clock `skew_ms` (8 s by default) ahead of every clock the log has
//!   seen (the `k`th time, `k` × `skew_ms` ahead of the true time: the clocks the run has
//!   seen only ever move forward), and once it has caught up the leader is killed. Members
//!   that follow their leader's clock (D72, the default) have taken the leader's by then, so
//!   the log passes to a leader on its predecessor's time; with `--member-clock-follow-ms 0`
//!   it passes to a leader `skew_ms` ahead, which must extend every lease it inherits (D41),
//!   and the member that leads after it is that much behind the log and must go on from the
//!   log's time (D46).
//!
//! Owns the members while the clients run. Must never hand them back with a link cut, a
//! member stopped or dead, or a clock off: a fault, once started, runs to its end, and a
//! member that cannot be started again ends the run with an error.

use super::nemesis::{quiet, Fault};
use super::writer::{obj, Rec};
use crate::members::{Members, ENTRY};
use crate::pipeline::Rng;
use serde_json::{Map, Value};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct ClusterNemesis {
    pub rec: Rec,
    pub faults: Vec<Fault>,
    /// Quiet time between two faults (jittered by up to half of it).
    pub interval: Duration,
    /// How long a `stop`, a `partition` and a `clock` last at least: past the lease time
    /// and the election timeout.
    pub hold: Duration,
    pub stop: Arc<AtomicBool>,
    pub seed: u64,
    /// How much further ahead each `clock` fault puts a member's wall clock (ms).
    pub skew_ms: i64,
}

/// How long a member restarted by `clock` is given to catch up before the leader is killed.
const CATCH_UP: Duration = Duration::from_millis(1000);
/// The longest an election may take before the run is called failed.
const ELECTION: Duration = Duration::from_secs(30);
/// How long a killed leader stays down at most, waiting for the other member to lead.
const DOWN_FOR: Duration = Duration::from_secs(3);

impl ClusterNemesis {
    /// Inject faults until told to stop; gives the members back (all serving, one leading,
    /// unless the error says otherwise), the faults done, and the error that ended it early.
    pub fn run(self, mut m: Members) -> (Members, Vec<String>, Option<String>) {
        let mut rng = Rng::new(self.seed ^ 0xc1u64);
        let mut done = Vec::new();
        let mut next = 0usize;
        let mut clocks = 0i64;
        loop {
            if !quiet(&self.stop, &mut rng, self.interval) {
                return (m, done, None);
            }
            let f = self.faults[next % self.faults.len()];
            next += 1;
            let t = Instant::now();
            let l = match m.wait_leader(ELECTION) {
                Ok(l) => l,
                Err(e) => return (m, done, Some(e)),
            };
            self.rec.nemesis(f.name(), "start");
            let r = match f {
                Fault::Kill => self.kill(&mut m, l),
                Fault::Stop => self.pause(&mut m, l),
                Fault::Partition => self.partition(&m, l),
                Fault::Clock => {
                    clocks += 1;
                    self.clock(&mut m, l, clocks)
                }
                other => Err(format!("{} is not a cluster fault", other.name())),
            };
            match r {
                Ok(mut details) => {
                    details.insert("leader_was".into(), (l as u64 + 1).into());
                    self.rec.nemesis_with(f.name(), "end", details);
                    done.push(format!("{}({:.1}s, member {})", f.name(), t.elapsed().as_secs_f64(), l + 1));
                }
                // No `end`: the window lasts to the end of the history, which is what happened.
                Err(e) => return (m, done, Some(format!("nemesis {}: {e}", f.name()))),
            }
        }
    }

    /// Whoever leads once the fault is over (the member hit may lead again: with the entry
    /// member unable to stand, the other may lack entries only the entry member and the one
    /// hit hold, and cannot be elected until that one is back).
    fn settled(&self, m: &Members, t: Instant) -> Result<Map<String, Value>, String> {
        let now = m.wait_leader(ELECTION)?;
        Ok(obj([("leader_after", (now as u64 + 1).into()), ("led_after_ms", (t.elapsed().as_millis() as u64).into())]))
    }

    /// After `l` went down: whether the other member came to lead within `within` (it
    /// cannot when its log lacks entries that only the entry member and `l` hold).
    fn other_leads(&self, m: &Members, l: usize, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if m.wait_leader(Duration::from_millis(200)).is_ok_and(|now| now != l) {
                return true;
            }
        }
        false
    }

    /// SIGKILLs the leader `l` once the other member holds at least what the entry member
    /// does (the link from `l` to the entry member is cut a moment first), so that the other
    /// can be elected: the entry member never stands, and a voter with a shorter log than
    /// its own never gets its vote.
    fn kill_leader(&self, m: &mut Members, l: usize) {
        self.leave_entry_behind(m, l);
        m.brokers[l].kill9();
        m.heal();
    }

    /// Cut the link from `l` to the entry member a moment before a fault hits `l`: what
    /// `l` commits meanwhile reaches the other member only, which then holds at least what
    /// the entry member does and gets its vote. The caller heals (or isolates) after.
    fn leave_entry_behind(&self, m: &Members, l: usize) {
        m.cut(l, ENTRY);
        std::thread::sleep(Duration::from_millis(50));
    }

    fn kill(&self, m: &mut Members, l: usize) -> Result<Map<String, Value>, String> {
        let t = Instant::now();
        self.kill_leader(m, l);
        // Down long enough for an election: a member started again at once leads again
        // before the other's election timeout runs out.
        let failed_over = self.other_leads(m, l, DOWN_FOR);
        m.brokers[l].restart()?;
        let mut d = self.settled(m, t)?;
        d.insert("failed_over".into(), failed_over.into());
        Ok(d)
    }

    fn pause(&self, m: &mut Members, l: usize) -> Result<Map<String, Value>, String> {
        let t = Instant::now();
        // As for a kill: the other member first catches up with the entry member, so that
        // it can be elected while `l` is stopped (else, under load, the entry member may
        // hold entries the other lacks and the window ends with `l` leading still: a fault
        // that tested nothing; a CI run saw both stops and partitions miss that way).
        self.leave_entry_behind(m, l);
        m.brokers[l].pause()?;
        m.heal();
        std::thread::sleep(self.hold);
        m.brokers[l].resume()?;
        self.settled(m, t)
    }

    fn partition(&self, m: &Members, l: usize) -> Result<Map<String, Value>, String> {
        let t = Instant::now();
        self.leave_entry_behind(m, l);
        m.isolate(l);
        std::thread::sleep(self.hold);
        m.heal();
        self.settled(m, t)
    }

    /// The `k`th clock fault: the member that does not lead is restarted as after a reboot
    /// with its wall clock `k` × `skew_ms` ahead (its `clock` file gone, so the wall clock
    /// anchors its engine, D33), which puts it `skew_ms` ahead of every clock the log has seen
    /// so far; once it has caught up, the leader is killed so that it leads.
    fn clock(&self, m: &mut Members, l: usize, k: i64) -> Result<Map<String, Value>, String> {
        let next = Members::other(l);
        let ahead = self.skew_ms.saturating_mul(k);
        m.brokers[next].kill9();
        let _ = std::fs::remove_file(m.brokers[next].data_dir().join("clock"));
        m.brokers[next].restart_under(&format!("clock {ahead}"))?;
        std::thread::sleep(CATCH_UP);
        let t = Instant::now();
        self.kill_leader(m, l);
        let led = self.other_leads(m, l, DOWN_FOR);
        m.brokers[l].restart()?;
        std::thread::sleep(self.hold.saturating_sub(t.elapsed()));
        let mut d = obj([
            ("offset_ms", ahead.into()),
            ("skewed_member", (next as u64 + 1).into()),
            ("skewed_member_led", led.into()),
            ("wall_clock_reads_shifted", m.brokers[next].faults_seen().clock_shifted.into()),
        ]);
        d.extend(self.settled(m, t)?);
        Ok(d)
    }
}
