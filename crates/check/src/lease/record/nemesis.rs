//! The nemesis: faults injected into a broker we spawned, in turn, each
//! inside a `nemesis` window of the history.
//!
//! - `kill`: SIGKILL (no shutdown, no final checkpoint), then `serve` again on
//!   the same port and data directory; the window ends when /health answers.
//! - `stop`: SIGSTOP for longer than the lease time (leases run out while the
//!   node is frozen, requests pile up on its sockets), then SIGCONT; the
//!   window ends when /health answers.
//!
//! Owns the broker process while the clients run. Must never leave it
//! stopped or dead: a fault, once started, always runs to its end, even when
//! asked to stop, and a restart that fails ends the run with an error.
//! Runs on its own thread: the restart blocks until the server is healthy.

use super::writer::Rec;
use crate::broker::Broker;
use crate::pipeline::Rng;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    Kill,
    Stop,
}

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::Kill => "kill",
            Fault::Stop => "stop",
        }
    }
}

/// `--nemesis kill,stop`: the faults, in the order they are taken in turn.
pub fn parse(names: &[String]) -> Result<Vec<Fault>, String> {
    names
        .iter()
        .filter(|n| !n.is_empty())
        .map(|n| match n.as_str() {
            "kill" => Ok(Fault::Kill),
            "stop" => Ok(Fault::Stop),
            "clock" | "fsync" | "disk-full" | "power" => Err(format!("nemesis {n:?} is not implemented yet")),
            other => Err(format!("unknown nemesis {other:?} (kill, stop)")),
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
}

impl Nemesis {
    /// Inject faults until told to stop; gives the broker back (serving unless
    /// the error says otherwise), the faults done, and the error that ended it early.
    pub fn run(self, mut b: Broker) -> (Broker, Vec<String>, Option<String>) {
        let mut rng = Rng::new(self.seed ^ 0x4e3e);
        let mut done = Vec::new();
        let mut next = 0usize;
        loop {
            let jitter = rng.below(self.interval.as_millis() as u64 / 2 + 1);
            let until = Instant::now() + self.interval + Duration::from_millis(jitter);
            while Instant::now() < until {
                if self.stop.load(SeqCst) {
                    return (b, done, None);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if self.stop.load(SeqCst) {
                return (b, done, None);
            }
            let f = self.faults[next % self.faults.len()];
            next += 1;
            let t = Instant::now();
            self.rec.nemesis(f.name(), "start");
            let r = match f {
                Fault::Kill => {
                    b.kill9();
                    b.restart().map(|_| ())
                }
                Fault::Stop => b.pause().and_then(|()| {
                    // Not cut short by the stop flag: a frozen broker must be continued.
                    std::thread::sleep(self.stop_for);
                    b.resume()
                }),
            };
            if let Err(e) = r {
                // No `end`: the window lasts to the end of the history, which is what happened.
                return (b, done, Some(format!("nemesis {}: {e}", f.name())));
            }
            self.rec.nemesis(f.name(), "end");
            done.push(format!("{}({:.1}s)", f.name(), t.elapsed().as_secs_f64()));
        }
    }
}
