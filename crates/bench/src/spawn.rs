//! `--spawn`, `--quick` and `baton bench storage`: run a Baton of our own on a
//! free loopback port, with a fresh data directory (or one the caller names),
//! and stop it when done: by SIGTERM, by SIGKILL, or on drop.
//!
//! Owns the server process and its log. Must never leave the process running
//! past its [`Spawned`] (drop kills it) nor delete a data directory it was given.

use crate::target::{BenchError, Result};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub struct Spawned {
    child: Child,
    pub url: String,
    log: PathBuf,
    data: PathBuf,
    /// Holds the log (and the data directory unless one was given).
    _dir: tempfile::TempDir,
}

pub fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| BenchError(format!("bind an ephemeral port: {e}")))?;
    Ok(l.local_addr().map_err(|e| BenchError(e.to_string()))?.port())
}

/// The binary to start: `bin`, or the running executable.
pub fn exe(bin: Option<&Path>) -> Result<PathBuf> {
    match bin {
        Some(b) => Ok(b.to_path_buf()),
        None => std::env::current_exe().map_err(|e| BenchError(format!("current executable: {e}"))),
    }
}

impl Spawned {
    /// Start `bin serve` (the running executable when `bin` is None) in a temp dir.
    pub fn start(bin: Option<&Path>) -> Result<Spawned> {
        Self::start_with(bin, None, &[])
    }

    /// Start `bin serve` on a free port with `data` as its data directory (a temp
    /// one when None, deleted on drop; a given one is kept) and `extra` arguments.
    pub fn start_with(bin: Option<&Path>, data: Option<&Path>, extra: &[String]) -> Result<Spawned> {
        let bin = exe(bin)?;
        let dir = tempfile::Builder::new()
            .prefix("baton-bench-")
            .tempdir()
            .map_err(|e| BenchError(format!("temp dir: {e}")))?;
        let data = data.map_or_else(|| dir.path().join("data"), Path::to_path_buf);
        let port = free_port()?;
        let log = dir.path().join("server.log");
        let logf = std::fs::File::create(&log).map_err(|e| BenchError(format!("{}: {e}", log.display())))?;
        let child = Command::new(&bin)
            .arg("serve")
            .arg("--http-addr")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data-dir")
            .arg(&data)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(logf)
            .spawn()
            .map_err(|e| BenchError(format!("start {} serve: {e}", bin.display())))?;
        Ok(Spawned { child, url: format!("http://127.0.0.1:{port}"), log, data, _dir: dir })
    }

    /// Fails if the server has already exited (e.g. it could not bind).
    pub fn check_alive(&mut self) -> Result<()> {
        match self.child.try_wait() {
            Ok(Some(st)) => Err(BenchError(format!("spawned baton exited with {st}; log:\n{}", self.log()))),
            _ => Ok(()),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last `n` bytes of the log (at a character boundary), for an error message.
    pub fn log_tail(&self, n: usize) -> String {
        let l = self.log();
        let mut from = l.len().saturating_sub(n);
        while !l.is_char_boundary(from) {
            from += 1;
        }
        l[from..].to_string()
    }

    /// SIGTERM, then wait up to `within` for the exit (a clean shutdown checkpoints
    /// first); past it SIGKILL and an error. Returns the exit status and the time it took.
    pub fn terminate(&mut self, within: Duration) -> Result<(ExitStatus, Duration)> {
        let t0 = Instant::now();
        if let Ok(Some(st)) = self.child.try_wait() {
            return Err(BenchError(format!("baton had already exited with {st}; log:\n{}", self.log_tail(4000))));
        }
        let pid = libc::pid_t::try_from(self.child.id()).map_err(|_| BenchError("pid out of range".into()))?;
        // SAFETY: kill(2) with our own child's pid (not yet reaped, so not reused) and a valid signal.
        if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
            return Err(BenchError(format!("SIGTERM {pid}: {}", std::io::Error::last_os_error())));
        }
        loop {
            match self.child.try_wait() {
                Ok(Some(st)) => return Ok((st, t0.elapsed())),
                Ok(None) if t0.elapsed() >= within => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(BenchError(format!("baton did not exit within {within:?} of SIGTERM; killed")));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => return Err(BenchError(format!("wait for baton: {e}"))),
            }
        }
    }

    /// SIGKILL (kill -9) and reap: the data directory is as a crash leaves it.
    pub fn kill9(&mut self) -> Result<Duration> {
        let t0 = Instant::now();
        if let Ok(Some(st)) = self.child.try_wait() {
            return Err(BenchError(format!("baton had already exited with {st}; log:\n{}", self.log_tail(4000))));
        }
        self.child.kill().map_err(|e| BenchError(format!("SIGKILL: {e}")))?;
        self.child.wait().map_err(|e| BenchError(format!("wait for baton: {e}")))?;
        Ok(t0.elapsed())
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
