//! The control file's language, and nothing else: text in, [`Faults`] out.
//!
//! One command a line; the file says the whole current state, read from the
//! top with everything off, so a later line overrides an earlier one and
//! `clear` turns off what came before it:
//!
//! ```text
//! fsync fail          # fdatasync / fsync / syncfs return -1, errno EIO
//! fsync slow 300      # they sleep 300 ms first, then run
//! fsync ok            # neither
//! disk full           # writes to regular files return -1, errno ENOSPC
//! clock 3600000       # CLOCK_REALTIME reads +1 h (negative: back)
//! skew 500            # and runs 500 ppm fast (negative: slow)
//! clear               # all of it off
//! gen 17              # the generation, echoed in the `.seen` report
//! ```
//!
//! `#` starts a comment. A line that is not one of these is counted in
//! [`Faults::bad`] and changes nothing. Must never allocate or panic, whatever
//! the bytes: it runs inside the broker's own calls (an fsync, a clock read).

/// What the fsync family does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fsync {
    #[default]
    Ok,
    Fail,
    /// Sleep this many ms, then sync.
    Slow(u64),
}

/// The faults a control file asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Faults {
    pub fsync: Fsync,
    pub disk_full: bool,
    /// Added to the wall clock.
    pub clock_offset_ms: i64,
    /// The wall clock's extra rate, parts per million of the time since the skew began.
    pub skew_ppm: i64,
    /// The writer's generation number (`gen N`): the report echoes it, so the
    /// writer knows when these faults are in force.
    pub generation: u64,
    /// Lines that were not understood (and changed nothing).
    pub bad: u32,
}

/// Bounds that keep every later sum in range: ±10 years, 1 minute, ±100 %.
const MAX_OFFSET_MS: i64 = 10 * 366 * 86_400_000;
const MAX_SLOW_MS: u64 = 60_000;
const MAX_PPM: i64 = 1_000_000;

fn int(tok: &[u8]) -> Option<i64> {
    let (neg, digits) = match tok.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, tok),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(d - b'0');
    }
    Some(if neg { -v } else { v })
}

/// Up to 4 whitespace-separated words of a line (more words: the line is bad).
fn words(line: &[u8]) -> Option<([&[u8]; 4], usize)> {
    let mut out: [&[u8]; 4] = [&[]; 4];
    let mut n = 0;
    for w in line.split(|b| b.is_ascii_whitespace()).filter(|w| !w.is_empty()) {
        if n == out.len() {
            return None;
        }
        out[n] = w;
        n += 1;
    }
    Some((out, n))
}

/// Apply one line to `f`; false if it is not a command.
fn apply(f: &mut Faults, line: &[u8]) -> bool {
    let Some((w, n)) = words(line) else { return false };
    match &w[..n] {
        [] => true,
        [b"clear"] => {
            *f = Faults { bad: f.bad, generation: f.generation, ..Faults::default() };
            true
        }
        [b"gen", g] => match int(g) {
            Some(g) if g >= 0 => {
                f.generation = g as u64;
                true
            }
            _ => false,
        },
        [b"fsync", b"fail"] => {
            f.fsync = Fsync::Fail;
            true
        }
        [b"fsync", b"ok"] => {
            f.fsync = Fsync::Ok;
            true
        }
        [b"fsync", b"slow", ms] => match int(ms) {
            Some(ms) if (0..=MAX_SLOW_MS as i64).contains(&ms) => {
                f.fsync = Fsync::Slow(ms as u64);
                true
            }
            _ => false,
        },
        [b"disk", b"full"] => {
            f.disk_full = true;
            true
        }
        [b"disk", b"ok"] => {
            f.disk_full = false;
            true
        }
        [b"clock", ms] => match int(ms) {
            Some(ms) if (-MAX_OFFSET_MS..=MAX_OFFSET_MS).contains(&ms) => {
                f.clock_offset_ms = ms;
                true
            }
            _ => false,
        },
        [b"skew", ppm] => match int(ppm) {
            Some(p) if (-MAX_PPM..=MAX_PPM).contains(&p) => {
                f.skew_ppm = p;
                true
            }
            _ => false,
        },
        _ => false,
    }
}

/// The faults `text` asks for (everything off, then each line in turn).
pub fn parse(text: &[u8]) -> Faults {
    let mut f = Faults::default();
    for raw in text.split(|&b| b == b'\n') {
        let line = match raw.iter().position(|&b| b == b'#') {
            Some(i) => &raw[..i],
            None => raw,
        };
        if !apply(&mut f, line) {
            f.bad = f.bad.saturating_add(1);
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_or_missing_file_is_no_fault() {
        assert_eq!(parse(b""), Faults::default());
        assert_eq!(parse(b"\n\n  \n# nothing\n"), Faults::default());
    }

    #[test]
    fn each_command() {
        assert_eq!(parse(b"fsync fail\n").fsync, Fsync::Fail);
        assert_eq!(parse(b"fsync slow 300").fsync, Fsync::Slow(300));
        assert_eq!(parse(b"fsync fail\nfsync ok\n").fsync, Fsync::Ok);
        assert!(parse(b"disk full").disk_full);
        assert!(!parse(b"disk full\ndisk ok").disk_full);
        assert_eq!(parse(b"clock 3600000").clock_offset_ms, 3_600_000);
        assert_eq!(parse(b"clock -3600000").clock_offset_ms, -3_600_000);
        assert_eq!(parse(b"clock +5").clock_offset_ms, 5);
        assert_eq!(parse(b"skew -250").skew_ppm, -250);
    }

    #[test]
    fn lines_combine_and_clear_resets_what_came_before() {
        let f = parse(b"# gen 7\nfsync slow 20\r\n  disk full  \nclock -1000 # back a second\nskew 10\n");
        let want = Faults {
            fsync: Fsync::Slow(20),
            disk_full: true,
            clock_offset_ms: -1000,
            skew_ppm: 10,
            ..Faults::default()
        };
        assert_eq!(f, want);
        let f = parse(b"gen 4\nfsync fail\ndisk full\nclock 9\nclear\nskew 3\n");
        assert_eq!(f, Faults { skew_ppm: 3, generation: 4, ..Faults::default() });
    }

    #[test]
    fn what_is_not_a_command_changes_nothing_and_is_counted() {
        for bad in [
            &b"fsync"[..],
            b"fsync slow",
            b"fsync slow -1",
            b"fsync slow 60001",
            b"fsync slow 1x",
            b"fsync fail now please",
            b"clock",
            b"clock 1.5",
            b"clock 99999999999999999999999",
            b"clock --5",
            b"clock -",
            b"skew 1000001",
            b"disk",
            b"DISK FULL",
            b"\xff\xfe\x00",
            b"gen -1",
            b"gen",
        ] {
            let f = parse(bad);
            assert_eq!(f, Faults { bad: 1, ..Faults::default() }, "{:?}", String::from_utf8_lossy(bad));
        }
        let f = parse(b"fsync fail\nnonsense\nclock 5\n");
        assert_eq!(f, Faults { fsync: Fsync::Fail, clock_offset_ms: 5, bad: 1, ..Faults::default() });
    }

    #[test]
    fn the_bounds_are_accepted() {
        assert_eq!(parse(b"clock -316224000000").clock_offset_ms, -MAX_OFFSET_MS);
        assert_eq!(parse(b"fsync slow 60000").fsync, Fsync::Slow(60_000));
        assert_eq!(parse(b"skew -1000000").skew_ppm, -MAX_PPM);
    }
}
