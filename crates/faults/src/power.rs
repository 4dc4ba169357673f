//! Power loss, recorded: with `BATON_FAULTS_POWER=<mirror>` and
//! `BATON_FAULTS_POWER_ROOT=<data dir>`, the shim keeps beside the broker a
//! mirror of what a disk would still hold if the power failed now: each
//! file's content as of its last successful fdatasync / fsync / syncfs, and
//! the log of namespace changes (creates, renames, deletes, mkdir, rmdir)
//! with the directory syncs and syncfs between them. The recorder SIGKILLs
//! the broker at a random moment and rebuilds its directory from the mirror
//! (`baton_powercut::restore`): only what was synced survives.
//!
//! How it knows: every write, truncate and allocation on a regular file under
//! the root widens that inode's dirty range; a sync that succeeded copies the
//! range from the file into `data/<inode>.<generation>` (a new generation
//! each time a file is created, since inodes are reused), sets the length,
//! and only then returns to the broker. A sync of a directory, and syncfs,
//! append a sync point to `ops`. At start the mirror is the root as it is
//! (the last restore's result, durable by definition).
//!
//! Must never change what a call returns, see a file outside the root, or
//! track its own work: everything it does runs with [`INSIDE`] set, which
//! sends the calls it makes straight to libc.

use baton_powercut::escape;
use libc::{c_char, c_int};
use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::CStr;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{FileExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::*};
use std::sync::Mutex;

thread_local! {
    /// Set while this thread runs the shim's own code.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

pub(crate) fn inside() -> bool {
    INSIDE.with(Cell::get)
}

pub(crate) struct Inside;
impl Inside {
    /// `None` when already inside (or off): the caller then does nothing.
    pub(crate) fn enter() -> Option<Inside> {
        if !ON.load(Acquire) || inside() {
            return None;
        }
        INSIDE.with(|c| c.set(true));
        Some(Inside)
    }
}
impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE.with(|c| c.set(false));
    }
}

static ON: AtomicBool = AtomicBool::new(false);

/// Descriptors classified (lazily, on first use): [`UNKNOWN`] until then.
/// (Small in the unit tests, so one of them can write through a descriptor past it.)
const MAX_FD: usize = if cfg!(test) { 1 << 10 } else { 1 << 16 };
const UNKNOWN: u8 = 0;
const UNTRACKED: u8 = 1;
const FILE: u8 = 2;
const DIR: u8 = 3;
static KIND: [AtomicU8; MAX_FD] = [const { AtomicU8::new(UNKNOWN) }; MAX_FD];
static INO: [AtomicU64; MAX_FD] = [const { AtomicU64::new(0) }; MAX_FD];

struct State {
    root: PathBuf,
    mirror: PathBuf,
    ops: File,
    /// Per inode, the bytes written since its last sync: [lo, hi).
    dirty: HashMap<u64, (u64, u64)>,
    /// Per inode, the generation of the file that holds it now.
    gen: HashMap<u64, u64>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);
/// Held while a sync copies into the mirror: two copies of one file never interleave.
static COPY: Mutex<()> = Mutex::new(());

fn with<T>(f: impl FnOnce(&mut State) -> T) -> Option<T> {
    let mut g = STATE.lock().unwrap_or_else(|e| e.into_inner());
    g.as_mut().map(f)
}

/// From the loader's `init`: start when both variables are set.
pub(crate) fn init_from_env() {
    let (Some(mirror), Some(root)) =
        (std::env::var_os("BATON_FAULTS_POWER"), std::env::var_os("BATON_FAULTS_POWER_ROOT"))
    else {
        return;
    };
    let inherit = std::env::var_os("BATON_FAULTS_POWER_INHERIT").is_some_and(|v| v == "1");
    let r = if inherit {
        inherit_mirror(Path::new(&root), Path::new(&mirror))
    } else {
        enable(Path::new(&root), Path::new(&mirror))
    };
    if let Err(e) = r {
        // A broker that would run without the mirror it was asked for must not run at all:
        // its restore would be of nothing.
        let _ = writeln!(io::stderr(), "baton-faults: power mirror: {e}");
        std::process::exit(86);
    }
}

/// Mirror `root` into `mirror` (emptied first) and track from now on.
pub(crate) fn enable(root: &Path, mirror: &Path) -> io::Result<()> {
    INSIDE.with(|c| c.set(true));
    let r = (|| {
        fs::create_dir_all(root)?;
        let root = root.canonicalize()?;
        match fs::remove_dir_all(mirror) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        fs::create_dir_all(mirror.join("data"))?;
        let ops = OpenOptions::new().create(true).append(true).open(mirror.join("ops"))?;
        let mut st = State { root, mirror: mirror.to_path_buf(), ops, dirty: HashMap::new(), gen: HashMap::new() };
        let root = st.root.clone();
        snapshot(&mut st, &root, "")?;
        st.log("syncfs");
        *STATE.lock().unwrap_or_else(|e| e.into_inner()) = Some(st);
        for k in &KIND {
            k.store(UNKNOWN, Relaxed);
        }
        ON.store(true, Release);
        Ok(())
    })();
    INSIDE.with(|c| c.set(false));
    r
}

/// After a crash that was not a power cut (SIGKILL): the disk still holds only
/// what the mirror says, and the files hold what the dead process left in the
/// page cache. So the mirror and its ops log go on, and every file under `root`
/// is wholly dirty: a sync by this process makes it durable as the kernel would
/// (the dead one's unsynced bytes with it), and no sync leaves it as it was.
pub(crate) fn inherit_mirror(root: &Path, mirror: &Path) -> io::Result<()> {
    if !mirror.join("ops").is_file() {
        return enable(root, mirror);
    }
    INSIDE.with(|c| c.set(true));
    let r = (|| {
        let root = root.canonicalize()?;
        let mut ops = OpenOptions::new().append(true).open(mirror.join("ops"))?;
        // The dead process may have been killed inside a line: end it, so restore
        // skips it alone rather than merging it with this process's first.
        let len = ops.metadata()?.len();
        if len > 0 {
            let mut last = [0u8; 1];
            File::open(mirror.join("ops"))?.read_exact_at(&mut last, len - 1)?;
            if last[0] != b'\n' {
                ops.write_all(b"\n")?;
            }
        }
        let mut gen: HashMap<u64, u64> = HashMap::new();
        for e in fs::read_dir(mirror.join("data"))? {
            let name = e?.file_name().to_string_lossy().into_owned();
            if let Some((ino, g)) = name.split_once('.').and_then(|(i, g)| Some((i.parse().ok()?, g.parse().ok()?))) {
                let cur = gen.entry(ino).or_insert(g);
                *cur = (*cur).max(g);
            }
        }
        let mut files = Vec::new();
        walk(&root, &mut files);
        let mut dirty = HashMap::new();
        for (ino, path) in files {
            dirty.insert(ino, (0, fs::symlink_metadata(&path)?.len()));
        }
        *STATE.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(State { root, mirror: mirror.to_path_buf(), ops, dirty, gen });
        for k in &KIND {
            k.store(UNKNOWN, Relaxed);
        }
        ON.store(true, Release);
        Ok(())
    })();
    INSIDE.with(|c| c.set(false));
    r
}

/// Stop tracking (a test's end).
#[cfg(test)]
pub(crate) fn disable() {
    ON.store(false, Release);
    *STATE.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// Everything under `dir` as it is now: durable.
fn snapshot(st: &mut State, dir: &Path, rel: &str) -> io::Result<()> {
    let mut ents: Vec<_> = fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    ents.sort_by_key(|e| e.file_name());
    for e in ents {
        let name = e.file_name().to_string_lossy().into_owned();
        let r = if rel.is_empty() { name } else { format!("{rel}/{name}") };
        let md = fs::symlink_metadata(e.path())?;
        if md.is_dir() {
            st.log(&format!("mkdir\t{}", escape(&r)));
            snapshot(st, &e.path(), &r)?;
        } else if md.is_file() {
            st.gen.insert(md.ino(), 0);
            fs::copy(e.path(), st.mirror.join("data").join(format!("{}.0", md.ino())))?;
            st.log(&format!("link\t{}.0\t{}", md.ino(), escape(&r)));
        }
    }
    Ok(())
}

impl State {
    fn log(&mut self, line: &str) {
        // One write per line: a kill leaves at most the last one cut short, which restore skips.
        let _ = self.ops.write_all(format!("{line}\n").as_bytes());
    }

    fn rel(&self, abs: &Path) -> Option<String> {
        let r = abs.strip_prefix(&self.root).ok()?;
        let s = r.to_str()?;
        (!s.is_empty()).then(|| s.to_string())
    }

    fn key(&mut self, ino: u64) -> String {
        let g = *self.gen.entry(ino).or_insert(1);
        format!("{ino}.{g}")
    }

    /// A file just created at inode `ino`: a new generation, empty until synced.
    fn created(&mut self, ino: u64) -> String {
        let g = self.gen.get(&ino).map_or(1, |g| g + 1);
        self.gen.insert(ino, g);
        self.dirty.remove(&ino);
        let key = format!("{ino}.{g}");
        let _ = File::create(self.mirror.join("data").join(&key));
        key
    }

    fn widen(&mut self, ino: u64, lo: u64, hi: u64) {
        if hi > lo {
            let e = self.dirty.entry(ino).or_insert((lo, hi));
            *e = (e.0.min(lo), e.1.max(hi));
        }
    }
}

fn fd_path(fd: c_int) -> Option<PathBuf> {
    fs::read_link(format!("/proc/self/fd/{fd}")).ok()
}

fn fstat(fd: c_int) -> Option<libc::stat64> {
    // SAFETY: zeroed is a valid stat64; fstat64 is not intercepted.
    let mut st: libc::stat64 = unsafe { std::mem::zeroed() };
    (unsafe { libc::fstat64(fd, &mut st) } == 0).then_some(st)
}

/// What `fd` is to the mirror and its inode (classified now if not yet). Descriptors past
/// the table are classified at every call: slower, never untracked.
fn kind(fd: c_int) -> (u8, u64) {
    if fd < 0 {
        return (UNTRACKED, 0);
    }
    let Some(slot) = KIND.get(fd as usize) else { return classify(fd) };
    let k = slot.load(Acquire);
    if k != UNKNOWN {
        return (k, INO[fd as usize].load(Acquire));
    }
    let (k, ino) = classify(fd);
    INO[fd as usize].store(ino, Release);
    slot.store(k, Release);
    (k, ino)
}

fn classify(fd: c_int) -> (u8, u64) {
    let Some(st) = fstat(fd) else { return (UNTRACKED, 0) };
    let fmt = st.st_mode & libc::S_IFMT;
    if fmt != libc::S_IFREG && fmt != libc::S_IFDIR {
        return (UNTRACKED, 0);
    }
    let Some(p) = fd_path(fd) else { return (UNTRACKED, 0) };
    let root = with(|s| s.root.clone());
    match root {
        Some(root) if p.starts_with(&root) => (if fmt == libc::S_IFREG { FILE } else { DIR }, st.st_ino),
        _ => (UNTRACKED, 0),
    }
}

/// After a write of `n` bytes at `off` (None: at the file position, now past it).
pub(crate) fn wrote(fd: c_int, off: Option<i64>, n: isize) {
    if n <= 0 {
        return;
    }
    let Some(_g) = Inside::enter() else { return };
    let (FILE, ino) = kind(fd) else { return };
    let end = match off {
        Some(o) => o as u64 + n as u64,
        // SAFETY: lseek64 on an open descriptor; not intercepted.
        None => match unsafe { libc::lseek64(fd, 0, libc::SEEK_CUR) } {
            p if p >= n as i64 => p as u64,
            _ => return,
        },
    };
    with(|s| s.widen(ino, end - n as u64, end));
}

/// Before a size change (truncate, allocate, punch) of `[lo, hi)`: the span becomes dirty.
pub(crate) fn resized(fd: c_int, lo: i64, hi: i64) {
    let Some(_g) = Inside::enter() else { return };
    let (FILE, ino) = kind(fd) else { return };
    with(|s| s.widen(ino, lo.max(0) as u64, hi.max(0) as u64));
}

/// `ftruncate(fd, len)` is about to run.
pub(crate) fn truncating(fd: c_int, len: i64) {
    if !ON.load(Acquire) || inside() {
        return;
    }
    let size = fstat(fd).map_or(0, |st| st.st_size);
    resized(fd, len.min(size), len.max(size));
}

/// After `fd` was closed: the number may be reused by anything.
pub(crate) fn closed(fd: c_int) {
    if fd >= 0 && (fd as usize) < MAX_FD {
        KIND[fd as usize].store(UNKNOWN, Release);
    }
}

/// After a sync of `fd` succeeded: its file's dirty bytes are durable, or (a directory) its entries.
pub(crate) fn synced(fd: c_int) {
    let Some(_g) = Inside::enter() else { return };
    match kind(fd) {
        (FILE, ino) => {
            copy(ino, &format!("/proc/self/fd/{fd}"));
        }
        (DIR, _) => {
            let Some(p) = fd_path(fd) else { return };
            with(|s| {
                let rel = s.rel(&p).unwrap_or_default();
                s.log(&format!("syncdir\t{}", escape(&rel)));
            });
        }
        _ => {}
    }
}

/// After a syncfs succeeded: every file's dirty bytes and every namespace change are durable.
pub(crate) fn synced_all() {
    let Some(_g) = Inside::enter() else { return };
    let Some(root) = with(|s| s.root.clone()) else { return };
    let mut files = Vec::new();
    walk(&root, &mut files);
    for (ino, path) in files {
        if with(|s| s.dirty.contains_key(&ino)).unwrap_or(false) {
            copy(ino, &path.to_string_lossy());
        }
    }
    with(|s| s.log("syncfs"));
}

fn walk(dir: &Path, out: &mut Vec<(u64, PathBuf)>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let Ok(md) = fs::symlink_metadata(e.path()) else { continue };
        if md.is_dir() {
            walk(&e.path(), out);
        } else if md.is_file() {
            out.push((md.ino(), e.path()));
        }
    }
}

/// Copy inode `ino`'s dirty range from `path` (which opens it) into the mirror.
fn copy(ino: u64, path: &str) {
    let _c = COPY.lock().unwrap_or_else(|e| e.into_inner());
    let Some((range, key, data)) = with(|s| {
        let range = s.dirty.remove(&ino);
        let key = s.key(ino);
        (range, key.clone(), s.mirror.join("data").join(key))
    }) else {
        return;
    };
    let _ = key;
    let r = (|| -> io::Result<()> {
        let src = File::open(path)?;
        let size = src.metadata()?.len();
        let dst = OpenOptions::new().create(true).write(true).truncate(false).open(&data)?;
        if let Some((lo, hi)) = range {
            let mut buf = vec![0u8; 1 << 20];
            let mut at = lo;
            let end = hi.min(size);
            while at < end {
                let n = ((end - at) as usize).min(buf.len());
                let got = src.read_at(&mut buf[..n], at)?;
                if got == 0 {
                    break;
                }
                dst.write_all_at(&buf[..got], at)?;
                at += got as u64;
            }
        }
        dst.set_len(size)
    })();
    if let Err(e) = r {
        let _ = writeln!(io::stderr(), "baton-faults: power mirror copy of {path}: {e}");
    }
}

/// Resolve a path argument (relative to `dirfd`) to its place under the root, if it is there:
/// the directory part canonical, the last component as given.
fn resolve(dirfd: c_int, path: *const c_char) -> Option<String> {
    if path.is_null() {
        return None;
    }
    // SAFETY: the caller's NUL-terminated path.
    let p = Path::new(std::ffi::OsStr::from_bytes(unsafe { CStr::from_ptr(path) }.to_bytes()));
    let full = if p.is_absolute() {
        p.to_path_buf()
    } else if dirfd == libc::AT_FDCWD {
        std::env::current_dir().ok()?.join(p)
    } else {
        fd_path(dirfd)?.join(p)
    };
    let name = full.file_name()?;
    let dir = full.parent()?.canonicalize().ok()?;
    with(|s| s.rel(&dir.join(name))).flatten()
}

fn lstat_ino(rel: &str) -> Option<(u64, bool)> {
    let root = with(|s| s.root.clone())?;
    let md = fs::symlink_metadata(root.join(rel)).ok()?;
    Some((md.ino(), md.is_dir()))
}

/// What an `open` must know before it runs: the file's place, whether it existed, its size.
pub(crate) struct Opening {
    rel: String,
    existed: Option<u64>,
    trunc: bool,
}

pub(crate) fn opening(dirfd: c_int, path: *const c_char, flags: c_int) -> Option<Opening> {
    if flags & (libc::O_CREAT | libc::O_TRUNC) == 0 {
        return None;
    }
    let _g = Inside::enter()?;
    let rel = resolve(dirfd, path)?;
    let root = with(|s| s.root.clone())?;
    let existed = fs::symlink_metadata(root.join(&rel)).ok().map(|m| m.len());
    Some(Opening { rel, existed, trunc: flags & libc::O_TRUNC != 0 })
}

pub(crate) fn opened(o: Option<Opening>, fd: c_int) {
    let Some(o) = o else { return };
    if fd < 0 {
        return;
    }
    let Some(_g) = Inside::enter() else { return };
    let (FILE, ino) = kind(fd) else { return };
    with(|s| match o.existed {
        None => {
            let key = s.created(ino);
            s.log(&format!("link\t{key}\t{}", escape(&o.rel)));
        }
        Some(size) if o.trunc => s.widen(ino, 0, size),
        Some(_) => {}
    });
}

/// A namespace change about to run: its places under the root, resolved before it.
pub(crate) struct Changing {
    from: Option<String>,
    to: Option<String>,
}

pub(crate) fn changing(dirfd: c_int, path: *const c_char, dirfd2: c_int, path2: *const c_char) -> Option<Changing> {
    let _g = Inside::enter()?;
    let from = resolve(dirfd, path);
    let to = if path2.is_null() { None } else { resolve(dirfd2, path2) };
    (from.is_some() || to.is_some()).then_some(Changing { from, to })
}

pub(crate) enum Change {
    Rename,
    Unlink,
    Mkdir,
    Rmdir,
}

/// After a namespace change succeeded.
pub(crate) fn changed(c: Option<Changing>, what: Change) {
    let Some(c) = c else { return };
    let Some(_g) = Inside::enter() else { return };
    match (what, c.from, c.to) {
        (Change::Rename, from, Some(to)) => {
            let Some((ino, is_dir)) = lstat_ino(&to) else { return };
            with(|s| {
                let key = if is_dir { "dir".to_string() } else { s.key(ino) };
                match from {
                    Some(from) => s.log(&format!("rename\t{key}\t{}\t{}", escape(&from), escape(&to))),
                    None => s.log(&format!("link\t{key}\t{}", escape(&to))),
                }
            });
        }
        (Change::Rename, Some(from), None) | (Change::Unlink, Some(from), _) => {
            with(|s| s.log(&format!("unlink\t{}", escape(&from))));
        }
        (Change::Mkdir, Some(p), _) => {
            with(|s| s.log(&format!("mkdir\t{}", escape(&p))));
        }
        (Change::Rmdir, Some(p), _) => {
            with(|s| s.log(&format!("rmdir\t{}", escape(&p))));
        }
        _ => {}
    }
}
