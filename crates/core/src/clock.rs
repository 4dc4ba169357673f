//! The engine's clock: wall-clock time read once at start, advanced by the
//! monotonic clock from then on. Entry timestamps (I5), lease expiry, delays,
//! retention and timers all run on it, so a jump of the system clock while the
//! process runs neither expires a live lease (forward) nor stretches new ones
//! (back): a 60 s lease lasts 60 s of real time (issue 12 item 14). What it
//! gives up: a deliberate correction of the system clock shows in message
//! timestamps only after a restart; across a restart I5's `max(now, last + 1)`
//! keeps entry time from going back. Must never read the wall clock after the
//! anchor is taken.

use crate::model::Micros;
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Copy)]
pub struct Clock {
    anchor_wall: Micros,
    anchor: Instant,
}

impl Clock {
    /// Anchored now, at `wall` microseconds since the epoch.
    pub fn anchored_at(wall: Micros) -> Clock {
        Clock { anchor_wall: wall, anchor: Instant::now() }
    }

    pub fn now(&self) -> Micros {
        self.anchor_wall.saturating_add(self.anchor.elapsed().as_micros() as u64)
    }
}

fn system_micros() -> Micros {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// The process's clock, anchored at its first use.
pub fn now() -> Micros {
    static CLOCK: OnceLock<Clock> = OnceLock::new();
    CLOCK.get_or_init(|| Clock::anchored_at(system_micros())).now()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_advances_with_the_monotonic_clock_not_the_wall_clock() {
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
}
