//! `--spawn` and `--quick`: run a Baton of our own on a free loopback port
//! with a fresh data directory, and stop it when done.

use crate::target::{BenchError, Result};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub struct Spawned {
    child: Child,
    pub url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

pub fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| BenchError(format!("bind an ephemeral port: {e}")))?;
    Ok(l.local_addr().map_err(|e| BenchError(e.to_string()))?.port())
}

impl Spawned {
    /// Start `bin serve` (the running executable when `bin` is None).
    pub fn start(bin: Option<&Path>) -> Result<Spawned> {
        let bin = match bin {
            Some(b) => b.to_path_buf(),
            None => std::env::current_exe().map_err(|e| BenchError(format!("current executable: {e}")))?,
        };
        let dir = tempfile::Builder::new()
            .prefix("baton-bench-")
            .tempdir()
            .map_err(|e| BenchError(format!("temp dir: {e}")))?;
        let port = free_port()?;
        let log = dir.path().join("server.log");
        let logf = std::fs::File::create(&log).map_err(|e| BenchError(format!("{}: {e}", log.display())))?;
        let child = Command::new(&bin)
            .arg("serve")
            .arg("--http-addr")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(logf)
            .spawn()
            .map_err(|e| BenchError(format!("start {} serve: {e}", bin.display())))?;
        Ok(Spawned { child, url: format!("http://127.0.0.1:{port}"), log, _dir: dir })
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

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
