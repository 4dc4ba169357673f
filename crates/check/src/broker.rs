//! `--spawn`: run a Baton of our own on a free loopback port with a fresh
//! data directory; SIGKILL it and restart it on the same port and directory,
//! or SIGSTOP and SIGCONT it (fault injection); stop it when done.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Broker {
    child: Option<Child>,
    bin: PathBuf,
    pub port: u16,
    pub url: String,
    data: PathBuf,
    log: PathBuf,
    dir: Option<tempfile::TempDir>,
    /// More `serve` flags, given again at every restart.
    args: Vec<String>,
    /// How many times it was killed with SIGKILL.
    pub kills: u32,
}

pub fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind an ephemeral port: {e}"))?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

impl Broker {
    /// Start `bin serve` (the running executable when `bin` is None) and wait for /health.
    pub fn start(bin: Option<&Path>) -> Result<Broker, String> {
        Self::start_with(bin, &[])
    }

    /// [`Broker::start`] with more `serve` flags (kept for every restart).
    pub fn start_with(bin: Option<&Path>, args: &[&str]) -> Result<Broker, String> {
        let bin = match bin {
            Some(b) => b.to_path_buf(),
            None => std::env::current_exe().map_err(|e| format!("current executable: {e}"))?,
        };
        let dir = tempfile::Builder::new().prefix("baton-check-").tempdir().map_err(|e| format!("temp dir: {e}"))?;
        let port = free_port()?;
        let mut b = Broker {
            child: None,
            bin,
            port,
            url: format!("http://127.0.0.1:{port}"),
            data: dir.path().join("data"),
            log: dir.path().join("server.log"),
            dir: Some(dir),
            args: args.iter().map(|a| a.to_string()).collect(),
            kills: 0,
        };
        b.spawn()?;
        Ok(b)
    }

    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    fn spawn(&mut self) -> Result<(), String> {
        let logf = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| format!("{}: {e}", self.log.display()))?;
        let child = Command::new(&self.bin)
            .arg("serve")
            .arg("--http-addr")
            .arg(format!("127.0.0.1:{}", self.port))
            .arg("--data-dir")
            .arg(&self.data)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(logf)
            .spawn()
            .map_err(|e| format!("start {} serve: {e}", self.bin.display()))?;
        self.child = Some(child);
        self.wait_healthy(Duration::from_secs(30))
    }

    /// Block until /health answers 200 (plain TCP + HTTP/1.0, no runtime needed).
    fn wait_healthy(&mut self, within: Duration) -> Result<(), String> {
        use std::io::{Read, Write};
        let deadline = Instant::now() + within;
        loop {
            if let Some(st) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                return Err(format!("baton exited during start-up with {st}; log tail:\n{}", self.log_tail(40)));
            }
            if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let mut buf = String::new();
                if s.write_all(b"GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n").is_ok()
                    && s.read_to_string(&mut buf).is_ok()
                    && buf.starts_with("HTTP/1.")
                    && buf.split_whitespace().nth(1) == Some("200")
                {
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "baton did not answer /health within {within:?}; log tail:\n{}",
                    self.log_tail(40)
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL (no shutdown, no final checkpoint) and reap.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            // std's Child::kill is SIGKILL on Unix.
            let _ = c.kill();
            let _ = c.wait();
            self.kills += 1;
        }
    }

    /// The running server's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// SIGSTOP: the process stays, holds its port and connections, answers nothing.
    pub fn pause(&mut self) -> Result<(), String> {
        self.signal(libc::SIGSTOP)
    }

    /// SIGCONT after [`Broker::pause`]; waits for /health.
    pub fn resume(&mut self) -> Result<(), String> {
        self.signal(libc::SIGCONT)?;
        self.wait_healthy(Duration::from_secs(30))
    }

    fn signal(&mut self, sig: libc::c_int) -> Result<(), String> {
        let pid = self.pid().ok_or("baton is not running")?;
        // SAFETY: kill(2) on our own child's pid, which is not reaped while `child` is held.
        if unsafe { libc::kill(pid as libc::pid_t, sig) } != 0 {
            return Err(format!("signal {sig} to {pid}: {}", std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Start again on the same port and data directory; waits for /health.
    pub fn restart(&mut self) -> Result<Duration, String> {
        let t = Instant::now();
        self.spawn()?;
        Ok(t.elapsed())
    }

    /// Fails if the server exited on its own.
    pub fn check_alive(&mut self) -> Result<(), String> {
        match self.child.as_mut().map(|c| c.try_wait()) {
            Some(Ok(Some(st))) => Err(format!("baton exited with {st}; log tail:\n{}", self.log_tail(40))),
            None => Err("baton is not running".into()),
            _ => Ok(()),
        }
    }

    pub fn log_tail(&self, lines: usize) -> String {
        let s = std::fs::read_to_string(&self.log).unwrap_or_default();
        let v: Vec<&str> = s.lines().collect();
        v[v.len().saturating_sub(lines)..].join("\n")
    }

    /// Keep the data directory and log after exit (for a post-mortem); returns where.
    pub fn keep(&mut self) -> Option<PathBuf> {
        self.dir.take().map(|d| d.keep())
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
