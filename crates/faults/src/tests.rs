//! The shim in this very process: the test harness links the interposed
//! symbols, so std's own fsync, write and clock calls go through them.
//! One test, in order: the faults are process-wide.

use super::*;
use std::io::Write as _;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Write through the raw syscall: the shim's `disk full` must not stop the test's own control writes.
fn raw_write_file(path: &Path, bytes: &[u8]) {
    use std::os::unix::ffi::OsStrExt as _;
    let mut c = path.as_os_str().as_bytes().to_vec();
    c.push(0);
    // SAFETY: a NUL-terminated path, a buffer of bytes.len() bytes.
    unsafe {
        let fd = libc::open(c.as_ptr().cast(), libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o644);
        assert!(fd >= 0);
        assert_eq!(libc::syscall(libc::SYS_write, fd, bytes.as_ptr(), bytes.len()), bytes.len() as i64);
        libc::close(fd);
    }
}

fn say(ctl: &Path, gen: u64, text: &str) {
    let tmp = ctl.with_extension("tmp");
    raw_write_file(&tmp, format!("gen {gen}\n{text}\n").as_bytes());
    std::fs::rename(&tmp, ctl).unwrap();
    // Wait for the report of this generation: from then on it is in force.
    let seen = PathBuf::from(format!("{}.seen", ctl.display()));
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let _ = SystemTime::now(); // an intercepted call: the shim looks at the file
        if std::fs::read_to_string(&seen).is_ok_and(|s| s.lines().next() == Some(&format!("gen {gen}"))) {
            return;
        }
        assert!(Instant::now() < until, "the shim never reported generation {gen}");
        std::thread::sleep(Duration::from_millis(3));
    }
}

fn counter(ctl: &Path, name: &str) -> u64 {
    let _ = SystemTime::now();
    std::thread::sleep(Duration::from_millis(15));
    let _ = SystemTime::now();
    let s = std::fs::read_to_string(format!("{}.seen", ctl.display())).unwrap();
    s.lines().find_map(|l| l.strip_prefix(name)?.trim().parse().ok()).unwrap()
}

fn real_wall() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: the raw syscall, past the shim.
    unsafe { libc::syscall(libc::SYS_clock_gettime, libc::CLOCK_REALTIME, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn wall() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap()
}

fn diff_s(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() - b.as_secs_f64()
}

#[test]
fn each_fault_bites_where_it_should_and_clears() {
    let _serial = crate::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("baton-faults-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ctl = dir.join("ctl");
    // Not enabled yet: everything goes straight through.
    let mut f = std::fs::File::create(dir.join("data")).unwrap();
    f.write_all(b"hello").unwrap();
    f.sync_data().unwrap();
    assert!(diff_s(wall(), real_wall()).abs() < 1.0);

    let mut path = ctl.as_os_str().as_encoded_bytes().to_vec();
    path.truncate(PATH_MAX - 16);
    enable(&path);
    say(&ctl, 1, "");
    f.sync_data().unwrap();

    say(&ctl, 2, "fsync fail");
    assert_eq!(f.sync_data().unwrap_err().raw_os_error(), Some(libc::EIO));
    assert_eq!(f.sync_all().unwrap_err().raw_os_error(), Some(libc::EIO));
    // SAFETY: an open descriptor.
    assert_eq!(unsafe { libc::syncfs(f.as_raw_fd()) }, -1);
    assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EIO));
    // Writes are not the fsync fault's.
    f.write_all(b" world").unwrap();
    assert!(counter(&ctl, "fsync_failed") >= 3);

    say(&ctl, 3, "fsync slow 80");
    let t = Instant::now();
    f.sync_data().unwrap();
    assert!(t.elapsed() >= Duration::from_millis(80), "{:?}", t.elapsed());
    assert!(counter(&ctl, "fsync_slowed") >= 1);

    say(&ctl, 4, "disk full");
    assert_eq!(f.write(b"x").unwrap_err().raw_os_error(), Some(libc::ENOSPC));
    assert_eq!(f.write_at(b"x", 0).unwrap_err().raw_os_error(), Some(libc::ENOSPC));
    let bufs = [std::io::IoSlice::new(b"a"), std::io::IoSlice::new(b"b")];
    assert_eq!(f.write_vectored(&bufs).unwrap_err().raw_os_error(), Some(libc::ENOSPC));
    // SAFETY: an open descriptor.
    assert_eq!(unsafe { libc::posix_fallocate(f.as_raw_fd(), 0, 1 << 20) }, libc::ENOSPC);
    f.sync_data().unwrap();
    // A pipe is not the disk.
    let mut p = [0; 2];
    // SAFETY: a two-int array; then a one-byte write and read on it.
    unsafe {
        assert_eq!(libc::pipe(p.as_mut_ptr()), 0);
        assert_eq!(write(p[1], b"y".as_ptr().cast(), 1), 1);
        libc::close(p[0]);
        libc::close(p[1]);
    }
    assert!(counter(&ctl, "enospc") >= 4);

    say(&ctl, 5, "clock 3600000");
    let mono = Instant::now();
    assert!((diff_s(wall(), real_wall()) - 3600.0).abs() < 1.0);
    // SAFETY: a valid out pointer.
    let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
    assert_eq!(unsafe { gettimeofday(&mut tv, std::ptr::null_mut()) }, 0);
    assert!((tv.tv_sec as f64 - real_wall().as_secs_f64() - 3600.0).abs() < 2.0);
    // SAFETY: null is allowed.
    assert!((unsafe { time(std::ptr::null_mut()) } as f64 - real_wall().as_secs_f64() - 3600.0).abs() < 2.0);
    say(&ctl, 6, "clock -3600000");
    assert!((diff_s(wall(), real_wall()) + 3600.0).abs() < 1.0);
    // The monotonic clock never moved.
    assert!(mono.elapsed() < Duration::from_secs(5));
    assert!(counter(&ctl, "clock_shifted") >= 2);

    say(&ctl, 7, "skew 1000000");
    let (w0, r0) = (wall(), real_wall());
    std::thread::sleep(Duration::from_millis(200));
    let (w1, r1) = (wall(), real_wall());
    let ran = diff_s(w1, w0) / diff_s(r1, r0);
    assert!((1.8..2.2).contains(&ran), "a 100 % fast clock ran at {ran}");

    // Cleared, and then the file gone: everything straight through again.
    say(&ctl, 8, "fsync fail\ndisk full\nclock 5000\nclear");
    f.write_all(b"!").unwrap();
    f.sync_data().unwrap();
    assert!(diff_s(wall(), real_wall()).abs() < 1.0);
    say(&ctl, 9, "disk full");
    std::fs::remove_file(&ctl).unwrap();
    std::thread::sleep(Duration::from_millis(30));
    let _ = SystemTime::now();
    f.write_all(b"!").unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

use std::os::unix::io::AsRawFd as _;
