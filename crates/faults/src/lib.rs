//! `libbaton_faults.so`: a test-only `LD_PRELOAD` shim that makes a spawned
//! `baton serve` see a failing or slow fsync, a full disk, or a shifted wall
//! clock, switched at run time by the history recorder (`baton check history
//! --nemesis clock,fsync,fsync-slow,disk-full`, crates/check/src/lease/record/).
//!
//! It owns the libc symbols the broker's durability and wall clock go
//! through: `fdatasync`, `fsync`, `syncfs`; `write`, `writev`, `pwrite`,
//! `pwrite64`, `pwritev`, `pwritev64`, `fallocate`, `fallocate64`,
//! `posix_fallocate`, `posix_fallocate64`; `clock_gettime`, `gettimeofday`,
//! `time`. Each forwards to the next definition (`dlsym(RTLD_NEXT)`, libc's)
//! unless a fault says otherwise:
//!
//! - `fsync fail`: the fsync family returns -1, errno EIO (nothing is synced);
//! - `fsync slow MS`: it sleeps MS ms, then syncs;
//! - `disk full`: a write or allocation on a regular file (not a socket, a
//!   pipe, or fds 0-2: the broker's log is the recorder's evidence) returns
//!   -1, errno ENOSPC;
//! - `clock MS` / `skew PPM`: CLOCK_REALTIME (and its coarse, alarm and TAI
//!   variants, `gettimeofday`, `time`) reads MS ms off, plus PPM millionths of
//!   the time since the skew began. CLOCK_MONOTONIC and the rest are untouched.
//!
//! - power loss (`BATON_FAULTS_POWER=<mirror>`, `BATON_FAULTS_POWER_ROOT=<data
//!   dir>`, [`power`]): every sync that succeeds also brings a mirror of what a
//!   disk would still hold up to date, and [`namespace`]'s `open`, `close`,
//!   `ftruncate`, `rename`, `unlink`, `mkdir`, `rmdir` (and their `*at`
//!   forms) log the directory changes; `baton_powercut::restore` rebuilds from it, after a
//!   SIGKILL, the directory a power cut would leave.
//!
//! Control: `BATON_FAULTS_CTL=<file>` names a file holding the current
//! commands (the language is [`ctl`]'s). It is checked at most every 10 ms
//! (by `stat`, re-read when it changed or every 200 ms) from inside whichever
//! intercepted call comes first, and `<file>.seen` is rewritten with the
//! generation it applied and how many calls each fault changed, so the
//! recorder knows the fault is in force and that it bit. Without the variable
//! the shim changes nothing: every call goes straight through.
//!
//! Test-only by construction: no crate links it and `baton` never loads it;
//! only a process started with `LD_PRELOAD` pointing at it (the recorder's
//! spawned broker, the fault tests) has these faults, and nothing a client
//! sends can reach them. Must never call an intercepted symbol from inside
//! itself (every real call goes through its `dlsym` pointer), allocate, or
//! panic: it runs inside the broker's own I/O and clock reads, on any thread.
//! (The power mirror allocates and uses std's files: only with its variables
//! set, and with its own calls sent straight to libc, `power::INSIDE`.)

mod ctl;

use libc::{c_int, c_void, clockid_t, iovec, off64_t, off_t, size_t, ssize_t, time_t, timespec, timeval};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::*};

const PATH_MAX: usize = 4096;
/// How often the control file is looked at, and re-read even if `stat` saw no change.
const CHECK_EVERY_NS: u64 = 10_000_000;
const REREAD_EVERY_NS: u64 = 200_000_000;

/// A buffer written by one thread at a time: `init` before [`ENABLED`] is set, then only
/// the holder of [`BUSY`].
struct Buf<const N: usize>(UnsafeCell<[u8; N]>);
// SAFETY: every access is serialised as the type's doc says.
unsafe impl<const N: usize> Sync for Buf<N> {}
impl<const N: usize> Buf<N> {
    const fn new() -> Self {
        Buf(UnsafeCell::new([0; N]))
    }
    fn ptr(&self) -> *mut u8 {
        self.0.get().cast()
    }
}

static ENABLED: AtomicBool = AtomicBool::new(false);
/// NUL-terminated: the control file, its `.seen` report, and the report's temporary name.
static CTL: Buf<PATH_MAX> = Buf::new();
static SEEN: Buf<PATH_MAX> = Buf::new();
static SEEN_TMP: Buf<PATH_MAX> = Buf::new();
/// One checker at a time; it alone touches the buffers below and [`KEY`].
static BUSY: AtomicBool = AtomicBool::new(false);
static TEXT: Buf<4096> = Buf::new();
static REPORT: Buf<256> = Buf::new();
static LAST_CHECK: AtomicU64 = AtomicU64::new(0);
static LAST_READ: AtomicU64 = AtomicU64::new(0);
/// (inode, size, mtime s, mtime ns) of the control file when last read.
static KEY: [AtomicU64; 4] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];
static LAST_REPORT: [AtomicU64; 6] =
    [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

// The faults in force.
const FSYNC_OK: u64 = 0;
const FSYNC_FAIL: u64 = 1;
const FSYNC_SLOW: u64 = 2;
static FSYNC: AtomicU64 = AtomicU64::new(FSYNC_OK);
static FSYNC_MS: AtomicU64 = AtomicU64::new(0);
static DISK_FULL: AtomicBool = AtomicBool::new(false);
static OFFSET_NS: AtomicI64 = AtomicI64::new(0);
static SKEW_PPM: AtomicI64 = AtomicI64::new(0);
/// The real wall clock (ns) when the current skew began.
static SKEW_BASE_NS: AtomicI64 = AtomicI64::new(0);
static GEN: AtomicU64 = AtomicU64::new(0);
static BAD: AtomicU64 = AtomicU64::new(0);

// What the faults changed: the `.seen` report.
static FSYNC_FAILED: AtomicU64 = AtomicU64::new(0);
static FSYNC_SLOWED: AtomicU64 = AtomicU64::new(0);
static ENOSPC: AtomicU64 = AtomicU64::new(0);
static CLOCK_SHIFTED: AtomicU64 = AtomicU64::new(0);

/// The next definition of a symbol (libc's), looked up once.
macro_rules! real {
    ($name:literal, $ty:ty) => {{
        static SLOT: std::sync::atomic::AtomicPtr<libc::c_void> =
            std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
        let mut p = SLOT.load(std::sync::atomic::Ordering::Relaxed);
        if p.is_null() {
            // SAFETY: a NUL-terminated name; dlsym takes no lock an intercepted call holds.
            p = unsafe { libc::dlsym(libc::RTLD_NEXT, concat!($name, "\0").as_ptr().cast::<libc::c_char>()) };
            SLOT.store(p, std::sync::atomic::Ordering::Relaxed);
        }
        // SAFETY: the symbol's C type, as declared by libc.
        (!p.is_null()).then(|| unsafe { std::mem::transmute::<*mut libc::c_void, $ty>(p) })
    }};
}

mod namespace;
mod power;

type ClockGettime = unsafe extern "C" fn(clockid_t, *mut timespec) -> c_int;
type SyncFn = unsafe extern "C" fn(c_int) -> c_int;
type Pwrite64 = unsafe extern "C" fn(c_int, *const c_void, size_t, off64_t) -> ssize_t;

fn set_errno(e: c_int) {
    // SAFETY: the calling thread's errno.
    unsafe { *libc::__errno_location() = e };
}

/// -1 with `e`: a failed call, as libc reports one.
fn fail<T: From<i8>>(e: c_int) -> T {
    set_errno(e);
    T::from(-1)
}

fn real_clock(clk: clockid_t) -> Option<i64> {
    let f = real!("clock_gettime", ClockGettime)?;
    let mut ts = timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out pointer.
    (unsafe { f(clk, &mut ts) } == 0).then(|| ts.tv_sec * 1_000_000_000 + ts.tv_nsec)
}

/// Run by the loader before main: read the variable once (getenv is not safe to call
/// while another thread may setenv, and later there are threads).
extern "C" fn init() {
    power::init_from_env();
    // SAFETY: a NUL-terminated name; the result is NUL-terminated or null.
    let p = unsafe { libc::getenv(c"BATON_FAULTS_CTL".as_ptr()) };
    if p.is_null() {
        return;
    }
    // SAFETY: p is a C string.
    let len = unsafe { libc::strlen(p) };
    if len == 0 || len + 16 > PATH_MAX {
        return;
    }
    // SAFETY: p has len bytes; the buffers are ours alone until ENABLED is set.
    let path = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) };
    enable(path);
}

#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = init;

/// Point the shim at a control file (`init`, or a test in this process).
fn enable(path: &[u8]) {
    let put = |b: &Buf<PATH_MAX>, suffix: &[u8]| {
        // SAFETY: lengths checked by the callers (path + 16 <= PATH_MAX); no reader yet.
        unsafe {
            std::ptr::copy_nonoverlapping(path.as_ptr(), b.ptr(), path.len());
            std::ptr::copy_nonoverlapping(suffix.as_ptr(), b.ptr().add(path.len()), suffix.len());
            *b.ptr().add(path.len() + suffix.len()) = 0;
        }
    };
    put(&CTL, b"");
    put(&SEEN, b".seen");
    put(&SEEN_TMP, b".seen.tmp");
    ENABLED.store(true, Release);
}

/// Called first by every intercepted function: look at the control file if 10 ms passed.
fn refresh() {
    if !ENABLED.load(Acquire) {
        return;
    }
    // The coarse monotonic clock: a vDSO read, and never shifted.
    let Some(now) = real_clock(libc::CLOCK_MONOTONIC_COARSE) else { return };
    let now = now as u64;
    let last = LAST_CHECK.load(Relaxed);
    if last != 0 && now.wrapping_sub(last) < CHECK_EVERY_NS {
        return;
    }
    if LAST_CHECK.compare_exchange(last, now, Relaxed, Relaxed).is_err() || BUSY.swap(true, Acquire) {
        return;
    }
    check(now);
    report();
    BUSY.store(false, Release);
}

/// Re-read the control file if it changed (or 200 ms passed) and put its faults in force.
fn check(now: u64) {
    // SAFETY: zeroed is a valid stat; CTL is NUL-terminated.
    let mut st: libc::stat64 = unsafe { std::mem::zeroed() };
    let exists = unsafe { libc::stat64(CTL.ptr().cast(), &mut st) } == 0;
    let key = if exists { [st.st_ino, st.st_size as u64, st.st_mtime as u64, st.st_mtime_nsec as u64] } else { [0; 4] };
    let same = KEY.iter().zip(key).all(|(k, v)| k.load(Relaxed) == v);
    if same && now.wrapping_sub(LAST_READ.load(Relaxed)) < REREAD_EVERY_NS {
        return;
    }
    for (k, v) in KEY.iter().zip(key) {
        k.store(v, Relaxed);
    }
    LAST_READ.store(now, Relaxed);
    let n = if exists { read_ctl() } else { 0 };
    // SAFETY: TEXT is ours (BUSY) and holds n bytes.
    let f = ctl::parse(unsafe { std::slice::from_raw_parts(TEXT.ptr(), n) });
    set(&f);
}

/// The control file into TEXT (at most its size); the bytes read.
fn read_ctl() -> usize {
    // SAFETY: CTL is NUL-terminated; TEXT is ours (BUSY); read stays within it.
    unsafe {
        let fd = libc::open(CTL.ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return 0;
        }
        let mut n = 0usize;
        while n < 4096 {
            let r = libc::read(fd, TEXT.ptr().add(n).cast(), 4096 - n);
            if r > 0 {
                n += r as usize;
            } else if r == 0 || *libc::__errno_location() != libc::EINTR {
                break;
            }
        }
        libc::close(fd);
        n
    }
}

fn set(f: &ctl::Faults) {
    let (mode, ms) = match f.fsync {
        ctl::Fsync::Ok => (FSYNC_OK, 0),
        ctl::Fsync::Fail => (FSYNC_FAIL, 0),
        ctl::Fsync::Slow(ms) => (FSYNC_SLOW, ms),
    };
    FSYNC_MS.store(ms, Relaxed);
    FSYNC.store(mode, Relaxed);
    DISK_FULL.store(f.disk_full, Relaxed);
    OFFSET_NS.store(f.clock_offset_ms * 1_000_000, Relaxed);
    if SKEW_PPM.load(Relaxed) != f.skew_ppm {
        // A new rate counts from now: the clock does not leap when the skew is set.
        SKEW_BASE_NS.store(real_clock(libc::CLOCK_REALTIME).unwrap_or(0), Relaxed);
        SKEW_PPM.store(f.skew_ppm, Relaxed);
    }
    BAD.store(f.bad as u64, Relaxed);
    // Last: a reader that sees the generation sees the faults it names.
    GEN.store(f.generation, Release);
}

/// Rewrite `<ctl>.seen` (atomically: a temp file renamed) when something in it changed.
fn report() {
    let now = [
        GEN.load(Acquire),
        BAD.load(Relaxed),
        FSYNC_FAILED.load(Relaxed),
        FSYNC_SLOWED.load(Relaxed),
        ENOSPC.load(Relaxed),
        CLOCK_SHIFTED.load(Relaxed),
    ];
    if LAST_REPORT.iter().zip(now).all(|(k, v)| k.load(Relaxed) == v) {
        return;
    }
    const NAMES: [&[u8]; 6] = [b"gen ", b"bad ", b"fsync_failed ", b"fsync_slowed ", b"enospc ", b"clock_shifted "];
    // SAFETY: REPORT is ours (BUSY); every write is bounded by its length.
    let out = unsafe { std::slice::from_raw_parts_mut(REPORT.ptr(), 256) };
    let mut n = 0;
    for (name, v) in NAMES.iter().zip(now) {
        n = put(out, n, name);
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        let mut v = v;
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        n = put(out, n, &digits[i..]);
        n = put(out, n, b"\n");
    }
    let Some(pwrite) = real!("pwrite64", Pwrite64) else { return };
    // SAFETY: NUL-terminated paths; out holds n bytes.
    let ok = unsafe {
        let fd =
            libc::open(SEEN_TMP.ptr().cast(), libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC, 0o644);
        if fd < 0 {
            return;
        }
        let w = pwrite(fd, out.as_ptr().cast(), n, 0);
        libc::close(fd);
        w == n as ssize_t && libc::rename(SEEN_TMP.ptr().cast(), SEEN.ptr().cast()) == 0
    };
    if ok {
        for (k, v) in LAST_REPORT.iter().zip(now) {
            k.store(v, Relaxed);
        }
    }
}

fn put(out: &mut [u8], n: usize, s: &[u8]) -> usize {
    let k = s.len().min(out.len() - n);
    out[n..n + k].copy_from_slice(&s[..k]);
    n + k
}

/// `Some(result)` when a fault answers the fsync-family call instead of libc.
fn sync_fault() -> Option<c_int> {
    if power::inside() {
        return None;
    }
    refresh();
    match FSYNC.load(Relaxed) {
        FSYNC_FAIL => {
            FSYNC_FAILED.fetch_add(1, Relaxed);
            Some(fail(libc::EIO))
        }
        FSYNC_SLOW => {
            let ms = FSYNC_MS.load(Relaxed);
            let mut want = timespec { tv_sec: (ms / 1000) as time_t, tv_nsec: ((ms % 1000) * 1_000_000) as i64 };
            let mut left = timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: valid pointers; nanosleep is not intercepted. EINTR: sleep the rest.
            while unsafe { libc::nanosleep(&want, &mut left) } != 0
                && unsafe { *libc::__errno_location() } == libc::EINTR
            {
                want = left;
            }
            FSYNC_SLOWED.fetch_add(1, Relaxed);
            None
        }
        _ => None,
    }
}

macro_rules! sync_symbol {
    ($name:ident, $lit:literal, $then:expr) => {
        /// Interposed: see the crate's doc.
        ///
        /// # Safety
        /// As libc's.
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int) -> c_int {
            if let Some(r) = sync_fault() {
                return r;
            }
            let r = match real!($lit, SyncFn) {
                Some(f) => f(fd),
                None => fail(libc::ENOSYS),
            };
            // Only a sync that succeeded made anything durable.
            if r == 0 {
                $then(fd);
            }
            r
        }
    };
}

sync_symbol!(fdatasync, "fdatasync", power::synced);
sync_symbol!(fsync, "fsync", power::synced);
sync_symbol!(syncfs, "syncfs", |_| power::synced_all());

/// True when a write of `len` bytes to `fd` must fail for the full disk (and counts it).
fn disk_full(fd: c_int, len: usize) -> bool {
    if power::inside() {
        return false;
    }
    refresh();
    if !DISK_FULL.load(Relaxed) || fd <= 2 || len == 0 {
        return false;
    }
    // SAFETY: zeroed is a valid stat; fstat64 is not intercepted.
    let mut st: libc::stat64 = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat64(fd, &mut st) } != 0 || st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return false;
    }
    ENOSPC.fetch_add(1, Relaxed);
    true
}

fn iov_len(iov: *const iovec, cnt: c_int) -> usize {
    if iov.is_null() || cnt <= 0 {
        return 0;
    }
    // SAFETY: the caller's iovec array of cnt entries, as libc requires.
    unsafe { std::slice::from_raw_parts(iov, cnt as usize) }.iter().map(|v| v.iov_len).fold(0, usize::saturating_add)
}

macro_rules! write_symbol {
    ($name:ident, $lit:literal, ($($arg:ident: $ty:ty),*), $len:expr, $off:expr) => {
        /// Interposed: see the crate's doc.
        ///
        /// # Safety
        /// As libc's.
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, $($arg: $ty),*) -> ssize_t {
            if disk_full(fd, $len) {
                return fail(libc::ENOSPC);
            }
            let r = match real!($lit, unsafe extern "C" fn(c_int, $($ty),*) -> ssize_t) {
                Some(f) => f(fd, $($arg),*),
                None => fail(libc::ENOSYS),
            };
            power::wrote(fd, $off, r);
            r
        }
    };
}

write_symbol!(write, "write", (buf: *const c_void, n: size_t), n, None);
write_symbol!(pwrite, "pwrite", (buf: *const c_void, n: size_t, off: off_t), n, Some(off));
write_symbol!(pwrite64, "pwrite64", (buf: *const c_void, n: size_t, off: off64_t), n, Some(off));
write_symbol!(writev, "writev", (iov: *const iovec, cnt: c_int), iov_len(iov, cnt), None);
write_symbol!(pwritev, "pwritev", (iov: *const iovec, cnt: c_int, off: off_t), iov_len(iov, cnt), Some(off));
write_symbol!(pwritev64, "pwritev64", (iov: *const iovec, cnt: c_int, off: off64_t), iov_len(iov, cnt), Some(off));

/// A hole punch frees space: a full disk still allows it.
fn allocates(mode: c_int) -> bool {
    mode & libc::FALLOC_FL_PUNCH_HOLE == 0
}

/// Interposed: see the crate's doc.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn fallocate(fd: c_int, mode: c_int, off: off_t, len: off_t) -> c_int {
    power::resized(fd, off, off.saturating_add(len));
    if allocates(mode) && disk_full(fd, len.max(0) as usize) {
        return fail(libc::ENOSPC);
    }
    match real!("fallocate", unsafe extern "C" fn(c_int, c_int, off_t, off_t) -> c_int) {
        Some(f) => f(fd, mode, off, len),
        None => fail(libc::ENOSYS),
    }
}

/// Interposed: see the crate's doc.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn fallocate64(fd: c_int, mode: c_int, off: off64_t, len: off64_t) -> c_int {
    power::resized(fd, off, off.saturating_add(len));
    if allocates(mode) && disk_full(fd, len.max(0) as usize) {
        return fail(libc::ENOSPC);
    }
    match real!("fallocate64", unsafe extern "C" fn(c_int, c_int, off64_t, off64_t) -> c_int) {
        Some(f) => f(fd, mode, off, len),
        None => fail(libc::ENOSYS),
    }
}

/// Interposed: see the crate's doc. Returns the error number, as POSIX says.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn posix_fallocate(fd: c_int, off: off_t, len: off_t) -> c_int {
    power::resized(fd, off, off.saturating_add(len));
    if disk_full(fd, len.max(0) as usize) {
        return libc::ENOSPC;
    }
    match real!("posix_fallocate", unsafe extern "C" fn(c_int, off_t, off_t) -> c_int) {
        Some(f) => f(fd, off, len),
        None => libc::ENOSYS,
    }
}

/// Interposed: see the crate's doc. Returns the error number, as POSIX says.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn posix_fallocate64(fd: c_int, off: off64_t, len: off64_t) -> c_int {
    power::resized(fd, off, off.saturating_add(len));
    if disk_full(fd, len.max(0) as usize) {
        return libc::ENOSPC;
    }
    match real!("posix_fallocate64", unsafe extern "C" fn(c_int, off64_t, off64_t) -> c_int) {
        Some(f) => f(fd, off, len),
        None => libc::ENOSYS,
    }
}

/// The shift of a wall-clock reading `ns` (real), 0 when no clock fault is on.
fn shift_ns(ns: i64) -> i64 {
    let off = OFFSET_NS.load(Relaxed);
    let ppm = SKEW_PPM.load(Relaxed);
    if off == 0 && ppm == 0 {
        return 0;
    }
    CLOCK_SHIFTED.fetch_add(1, Relaxed);
    let since = i128::from(ns) - i128::from(SKEW_BASE_NS.load(Relaxed));
    // Bounded by ctl: |off| <= 10 years, |ppm| <= 1e6, so this fits in i64 for any real time.
    (i128::from(off) + since * i128::from(ppm) / 1_000_000) as i64
}

fn is_wall(clk: clockid_t) -> bool {
    matches!(clk, libc::CLOCK_REALTIME | libc::CLOCK_REALTIME_COARSE | libc::CLOCK_REALTIME_ALARM | libc::CLOCK_TAI)
}

/// Interposed: see the crate's doc.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn clock_gettime(clk: clockid_t, tp: *mut timespec) -> c_int {
    refresh();
    let Some(f) = real!("clock_gettime", ClockGettime) else { return fail(libc::ENOSYS) };
    let r = f(clk, tp);
    if r == 0 && !tp.is_null() && is_wall(clk) {
        let ns = (*tp).tv_sec.saturating_mul(1_000_000_000).saturating_add((*tp).tv_nsec);
        let d = shift_ns(ns);
        if d != 0 {
            let t = ns.saturating_add(d);
            (*tp).tv_sec = t.div_euclid(1_000_000_000);
            (*tp).tv_nsec = t.rem_euclid(1_000_000_000);
        }
    }
    r
}

/// Interposed: see the crate's doc.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn gettimeofday(tv: *mut timeval, tz: *mut c_void) -> c_int {
    refresh();
    let Some(f) = real!("gettimeofday", unsafe extern "C" fn(*mut timeval, *mut c_void) -> c_int) else {
        return fail(libc::ENOSYS);
    };
    let r = f(tv, tz);
    if r == 0 && !tv.is_null() {
        let us = (*tv).tv_sec.saturating_mul(1_000_000).saturating_add((*tv).tv_usec);
        let d = shift_ns(us.saturating_mul(1000)) / 1000;
        if d != 0 {
            let t = us.saturating_add(d);
            (*tv).tv_sec = t.div_euclid(1_000_000);
            (*tv).tv_usec = t.rem_euclid(1_000_000);
        }
    }
    r
}

/// Interposed: see the crate's doc.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn time(out: *mut time_t) -> time_t {
    refresh();
    let Some(f) = real!("time", unsafe extern "C" fn(*mut time_t) -> time_t) else { return fail(libc::ENOSYS) };
    let s = f(std::ptr::null_mut());
    let t = if s == -1 { s } else { s.saturating_add(shift_ns(s.saturating_mul(1_000_000_000)) / 1_000_000_000) };
    if !out.is_null() {
        *out = t;
    }
    t
}

#[cfg(test)]
mod power_tests;
#[cfg(test)]
mod tests;
/// The shim's state is the process's: its tests take turns.
#[cfg(test)]
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
