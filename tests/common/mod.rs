//! Shared harness for process-level tests: start the real `baton` binary on a
//! free loopback port with its own data directory, wait for health, kill it
//! (SIGKILL or SIGTERM) and restart it on the same port and directory.
#![allow(dead_code)]

use baton_check::broker::PortHold;
use std::net::TcpListener;
use std::path::PathBuf;
pub mod api;
pub mod cli;
pub mod cluster;
pub mod load;
pub mod pipeline;

use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A loopback port no other caller in this test process was given. The
/// kernel may hand a just-released ephemeral port to the next bind(0), so two
/// tests starting at once could otherwise pick the same one (CI saw a server's
/// health answered by another test's server while its own had failed to bind).
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..1000 {
        let p = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port").local_addr().unwrap().port();
        if !given.contains(&p) {
            given.push(p);
            return p;
        }
    }
    panic!("no loopback port left that this test process was not already given");
}

/// Start-up failed because an address was already taken by someone else.
fn lost_a_port_race(log: &str) -> bool {
    log.contains("Address already in use") || log.contains("os error 98")
}

pub struct Server {
    child: Option<Child>,
    pub port: u16,
    pub dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    args: Vec<String>,
    envs: Vec<(String, String)>,
    /// RLIMIT_NOFILE (soft and hard) the server is started under.
    pub nofile: Option<u64>,
    /// The HTTP port (and a Kafka port given in the flags) while the server is down.
    held: Vec<PortHold>,
}

impl Server {
    /// Start with default settings in a fresh temp dir.
    pub fn start() -> Server {
        Self::start_with(&[])
    }

    /// Start with extra `serve` flags in a fresh temp dir.
    pub fn start_with(args: &[&str]) -> Server {
        Self::launch(args, &[])
    }

    /// `baton serve` with these flags and environment in a fresh temp dir, healthy.
    fn launch(args: &[&str], envs: &[(&str, &str)]) -> Server {
        let mut s = Self::unstarted(free_port(), args, envs, None);
        s.spawn_first();
        s
    }

    /// A server on `port` in a fresh temp dir, not yet started.
    fn unstarted(port: u16, args: &[&str], envs: &[(&str, &str)], nofile: Option<u64>) -> Server {
        let tmp = tempfile::tempdir().expect("temp dir");
        Server {
            child: None,
            port,
            dir: tmp.path().join("data"),
            _tmp: Some(tmp),
            args: args.iter().map(|s| s.to_string()).collect(),
            envs: envs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            nofile,
            held: Vec::new(),
        }
    }

    /// Start on `port` if baton can bind it, else on a fresh one (`port` is
    /// then held by someone else, as when two tests raced for it).
    pub fn start_on(port: u16, args: &[&str]) -> Server {
        let mut s = Self::unstarted(port, args, &[], None);
        s.spawn_first();
        s
    }

    /// Start with extra flags under a limit of `nofile` open files (soft and hard).
    pub fn start_with_nofile(args: &[&str], nofile: u64) -> Server {
        let mut s = Self::unstarted(free_port(), args, &[], Some(nofile));
        s.spawn_first();
        s
    }

    /// `baton serve` on this server's port and directory, stderr to `log`.
    fn command(&self, log: std::fs::File) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_baton"));
        c.arg("serve")
            .arg("--http-addr")
            .arg(format!("127.0.0.1:{}", self.port))
            .arg("--data-dir")
            .arg(&self.dir)
            .args(&self.args)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        if let Some(n) = self.nofile {
            use std::os::unix::process::CommandExt;
            // SAFETY: setrlimit is async-signal-safe; it only limits this child.
            unsafe {
                c.pre_exec(move || {
                    let lim = libc::rlimit { rlim_cur: n, rlim_max: n };
                    libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
                    Ok(())
                });
            }
        }
        c
    }

    fn spawn(&mut self) {
        if let Err(e) = self.try_spawn() {
            panic!("{e}");
        }
    }

    /// The first start: when the HTTP port was taken between `free_port` and
    /// the bind, take another one (a few times) rather than fail the test.
    fn spawn_first(&mut self) {
        for _ in 0..5 {
            match self.try_spawn() {
                Ok(()) => return,
                // A Kafka port it was given and could not bind is not fixed by another HTTP
                // port; the default 9092 being busy is only a warning (baton runs without
                // Kafka) and must not turn an HTTP port race into a failure.
                Err(e) if lost_a_port_race(&e) && !e.contains("bind Kafka listener") => {
                    let _ = std::fs::remove_file(self.dir.with_extension("log"));
                    self.port = free_port();
                }
                Err(e) => panic!("{e}"),
            }
        }
        panic!("five fresh ports were all taken before baton could bind them");
    }

    fn try_spawn(&mut self) -> Result<(), String> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.with_extension("log"))
            .expect("open server log");
        let child = self.command(log).spawn().expect("spawn baton");
        self.child = Some(child);
        let up = self.wait_healthy();
        if up.is_ok() {
            self.held.clear();
        }
        up
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.with_extension("log")).unwrap_or_default()
    }

    fn wait_healthy(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let addr = format!("127.0.0.1:{}", self.port);
        while Instant::now() < deadline {
            if let Some(st) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                self.child = None;
                return Err(format!("baton exited during start-up with {st}; log:\n{}", self.log()));
            }
            if let Ok(mut s) = std::net::TcpStream::connect(&addr) {
                use std::io::{Read, Write};
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let _ = s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
                let mut buf = String::new();
                let _ = s.read_to_string(&mut buf);
                if buf.starts_with("HTTP/1.1 200") && baton_check::broker::listens(self.pid(), self.port) {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!("baton did not become healthy in 30 s; log:\n{}", self.log()))
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.port, path)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// One series of `/metrics/prometheus` (0 when absent), from a blocking test.
    pub fn metric(&self, series: &str) -> f64 {
        use std::io::{Read, Write};
        let mut t = std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("connect for /metrics");
        t.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        t.write_all(b"GET /metrics/prometheus HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut text = String::new();
        t.read_to_string(&mut text).expect("/metrics answered");
        text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok()).unwrap_or(0.0)
    }

    /// `series` once `ok` holds for it, or its value when `within` has passed.
    pub fn metric_when(&self, series: &str, ok: impl Fn(f64) -> bool, within: Duration) -> f64 {
        let deadline = Instant::now() + within;
        loop {
            let v = self.metric(series);
            if ok(v) || Instant::now() >= deadline {
                return v;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL: no chance to flush or checkpoint.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
            self.hold_ports();
        }
    }

    /// Keep this server's ports while it is down (`PortHold`); released once it is healthy again.
    fn hold_ports(&mut self) {
        self.held = PortHold::server(self.port, &self.args);
    }

    /// SIGTERM and wait for the exit status (bounded).
    pub fn terminate(&mut self) -> ExitStatus {
        let mut c = self.child.take().expect("running");
        unsafe {
            libc::kill(c.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(st) = c.try_wait().expect("wait") {
                self.hold_ports();
                return st;
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                panic!("baton did not exit within 30 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Start again on the same port and data directory.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "stop the server before restarting it");
        self.spawn();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

// ---- Crash-safety helpers (appended for tests/storage/kill9.rs and tests/storage/recovery.rs). ----

impl Server {
    /// `<data>/wal`: the write-ahead log's segment files.
    pub fn wal_dir(&self) -> PathBuf {
        self.dir.join("wal")
    }

    /// The WAL segment files (`wal-<20 digits>.log`), oldest first.
    pub fn wal_segments(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.wal_dir())
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                            n.len() == 28
                                && n.starts_with("wal-")
                                && n.ends_with(".log")
                                && n[4..24].bytes().all(|b| b.is_ascii_digit())
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Start again on the same port and directory when start-up is expected to FAIL:
    /// waits up to `timeout` for the process to exit and returns its status. If it is
    /// still running then, it is killed and this panics with the log.
    pub fn restart_expect_exit(&mut self, timeout: Duration) -> ExitStatus {
        assert!(self.child.is_none(), "stop the server before restarting it");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.with_extension("log"))
            .expect("open server log");
        let mut c = self.command(log).spawn().expect("spawn baton");
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(st) = c.try_wait().expect("wait") {
                return st;
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                let _ = c.wait();
                panic!(
                    "baton was expected to refuse to start but was still running after {timeout:?}; log:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

// ---- Kafka helpers (appended for tests/kafka_*.rs). ----

impl Server {
    /// Start with the Kafka listener on a free port of its own (plus `extra`
    /// flags); returns the server and that port. The listener is bound before
    /// HTTP, so it is ready when `start_with` returns.
    pub fn start_kafka(extra: &[&str]) -> (Server, u16) {
        for _ in 0..5 {
            let kport = free_port();
            let addr = format!("127.0.0.1:{kport}");
            let mut args = vec!["--kafka-addr", addr.as_str(), "--kafka-initial-rebalance-delay-ms", "0"];
            args.extend_from_slice(extra);
            let mut s = Self::unstarted(free_port(), &args, &[], None);
            match s.try_spawn() {
                Ok(()) => return (s, kport),
                Err(e) if lost_a_port_race(&e) => continue,
                Err(e) => panic!("{e}"),
            }
        }
        panic!("five fresh port pairs were all taken before baton could bind them");
    }
}

impl Server {
    /// Add `serve` flags for the next (re)start.
    pub fn add_args(&mut self, args: &[&str]) {
        self.args.extend(args.iter().map(|s| s.to_string()));
    }
}

// ---- Environment helpers (appended for tests/http/http_limits.rs). ----

impl Server {
    /// Start with `BATON_*` settings given as environment variables, as a
    /// deployment would; a binary that does not know one starts anyway.
    pub fn start_env(envs: &[(&str, &str)]) -> Server {
        Self::launch(&[], envs)
    }
}

// ---- Helpers for tests that run the binary on a small tmpfs (tests/storage/storage_failure.rs,
// tests/kafka/kafka_produce.rs). ----

/// A mount point, lazily unmounted when dropped.
pub struct Mount(pub PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Killed when dropped, so a failing assertion cannot leave a server running.
pub struct Baton(pub Child);

impl Drop for Baton {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

// ---- Crash-at-a-point helpers (tests/storage/checkpoint_crash.rs). ----

impl Server {
    /// Start with extra flags and environment in a fresh temp dir, healthy.
    pub fn start_with_env(args: &[&str], envs: &[(&str, &str)]) -> Server {
        Self::launch(args, envs)
    }

    /// Forget the environment given at start, for the next restart.
    pub fn clear_envs(&mut self) {
        self.envs.clear();
    }

    /// Wait up to `timeout` for the running process to exit on its own.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            let c = self.child.as_mut()?;
            if let Some(st) = c.try_wait().expect("wait") {
                self.child = None;
                return Some(st);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn running(&mut self) -> bool {
        self.child.as_mut().is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }
}

/// A server whose request memory (D87) is 64 MiB (56 for large requests: three
/// 15 MB requests fit, a fourth waits) with a 3 s read deadline, for the tests that
/// trickle requests at it.
pub const SMALL_REQUEST_BUDGET: [&str; 6] =
    ["--max-request-memory-mb", "64", "--kafka-max-frame-bytes", "16000000", "--request-read-timeout-secs", "3"];

/// Resident memory of a process, bytes (`VmRSS`).
pub fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc status");
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS in /proc status");
    kb << 10
}

/// A hostile client (D87): opens a connection to `port`, sends `head`, then up to `body`
/// bytes of zeros, and stops where the server stops reading (a send blocked for 300 ms),
/// never sending the last byte. The socket stays open for the caller to watch.
pub fn trickle(port: u16, head: &[u8], body: usize) -> std::net::TcpStream {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_write_timeout(Some(Duration::from_millis(300))).unwrap();
    s.write_all(head).expect("send the head");
    let chunk = vec![0u8; 1 << 20];
    let mut left = body - 1;
    while left > 0 {
        let n = left.min(chunk.len());
        match s.write(&chunk[..n]) {
            Ok(k) => left -= k,
            Err(_) => break,
        }
    }
    s
}

/// True once the server has closed `s` (EOF or reset) within `within`.
/// Asserts that each of `conns` ends within `within` (of the call), naming `what` they are.
pub fn all_closed_within(conns: Vec<std::net::TcpStream>, within: Duration, what: &str) {
    for (i, mut c) in conns.into_iter().enumerate() {
        assert!(closed_within(&mut c, within), "{what} connection {i} still open");
    }
}

pub fn closed_within(s: &mut std::net::TcpStream, within: Duration) -> bool {
    use std::io::Read;
    s.set_read_timeout(Some(within)).unwrap();
    let mut b = [0u8; 4096];
    let deadline = Instant::now() + within;
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            // An answer (the HTTP 408) is read past; the close follows it.
            Ok(_) if Instant::now() < deadline => continue,
            Ok(_) => return false,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return false
            }
            Err(_) => return true,
        }
    }
}
