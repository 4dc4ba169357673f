//! `--spawn`: run a Baton of our own on a free loopback port with a fresh
//! data directory; SIGKILL it and restart it on the same port and directory,
//! or SIGSTOP and SIGCONT it (fault injection); stop it when done.
//!
//! With the fault shim (crates/faults, `libbaton_faults.so`) it is started
//! under `LD_PRELOAD` with `BATON_FAULTS_CTL` naming a control file in its
//! temp directory, and [`Broker::set_faults`] switches fsync, disk and clock
//! faults at run time. Every start clears that file first: a restarted
//! broker never inherits a fault. Must never put the shim into a process it
//! was not asked to (only `start_with_shim` does).

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
    /// The fault shim, when started with one.
    shim: Option<Shim>,
    /// Its ports while it is down (`PortHold`), let go once it is healthy again.
    held: Vec<PortHold>,
}

/// The preloaded fault shim of a broker: its library, control file and generation, and
/// with power loss on, the mirror of what its disk would keep.
struct Shim {
    lib: PathBuf,
    ctl: PathBuf,
    generation: u64,
    power: Option<PathBuf>,
    /// The data directory is what the disk holds (a first start, or just after a
    /// cut): the next process's mirror starts from it. Otherwise the last process
    /// was killed with its page cache intact, and the mirror goes on (D36).
    disk_is_dir: bool,
}

/// What the shim reports in `<ctl>.seen`: the generation in force and, per fault, how many
/// calls it changed since this process started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    pub generation: u64,
    pub bad: u64,
    pub fsync_failed: u64,
    pub fsync_slowed: u64,
    pub enospc: u64,
    pub clock_shifted: u64,
}

impl Seen {
    fn parse(text: &str) -> Seen {
        let mut s = Seen::default();
        for line in text.lines() {
            let mut w = line.split_whitespace();
            let (Some(k), Some(Ok(v))) = (w.next(), w.next().map(str::parse::<u64>)) else { continue };
            match k {
                "gen" => s.generation = v,
                "bad" => s.bad = v,
                "fsync_failed" => s.fsync_failed = v,
                "fsync_slowed" => s.fsync_slowed = v,
                "enospc" => s.enospc = v,
                "clock_shifted" => s.clock_shifted = v,
                _ => {}
            }
        }
        s
    }
}

/// Where `libbaton_faults.so` is for the `baton` at `bin`: beside it (`cargo build -p
/// baton-faults`) or in its `deps/` (`cargo test` builds it there); the newer of the two.
pub fn find_shim(bin: &Path) -> Result<PathBuf, String> {
    let dir = bin.parent().unwrap_or(Path::new("."));
    let beside = dir.join("libbaton_faults.so");
    [beside.clone(), dir.join("deps").join("libbaton_faults.so")]
        .into_iter()
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .max()
        .map(|(_, p)| p)
        .ok_or_else(|| {
            format!(
                "the fault shim {} is missing (the clock, fsync and disk-full faults load it into the broker): \
                 build it with `cargo build --release -p baton-faults`",
                beside.display()
            )
        })
}

pub fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind an ephemeral port: {e}"))?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

/// A port kept from everyone else while its server is down, between a kill and the restart
/// on the same port: a socket bound to it with SO_REUSEADDR that never listens. Another
/// process's bind(0) and a client's ephemeral source port both skip a port something has
/// bound, so nothing that looks for a free port can take it in between (the restart could
/// then only fail); a connection to it is still refused, as to a stopped server; and baton's
/// own listener (SO_REUSEADDR too, as tokio binds) may bind it beside the hold, so the
/// restart has no window either. What it cannot stop: a listener that binds this very port
/// number with SO_REUSEADDR, as the restart itself does; only someone told the number does.
pub struct PortHold(socket2::Socket);

impl PortHold {
    /// None if the port is already taken: the restart then reports that.
    pub fn new(port: u16) -> Option<PortHold> {
        use socket2::{Domain, Socket, Type};
        let s = Socket::new(Domain::IPV4, Type::STREAM, None).ok()?;
        s.set_reuse_address(true).ok()?;
        s.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], port)).into()).ok()?;
        Some(PortHold(s))
    }

    /// The port held.
    pub fn port(&self) -> Option<u16> {
        Some(self.0.local_addr().ok()?.as_socket()?.port())
    }

    /// Holds for the HTTP port and for the port of a `--kafka-addr` among `args` (either
    /// form, `--kafka-addr A` or `--kafka-addr=A`). Port 0 is left alone: the server takes
    /// whatever bind(0) gives it, and a hold on it would only keep some other port.
    pub fn server(http: u16, args: &[String]) -> Vec<PortHold> {
        let addr = args.iter().enumerate().find_map(|(i, a)| match a.strip_prefix("--kafka-addr") {
            Some("") => args.get(i + 1).map(String::as_str),
            Some(rest) => rest.strip_prefix('='),
            None => None,
        });
        let kafka = addr.and_then(|a| a.rsplit(':').next()?.parse::<u16>().ok());
        [Some(http), kafka].into_iter().flatten().filter(|p| *p != 0).filter_map(PortHold::new).collect()
    }
}

/// Whether process `pid` holds the socket listening on 127.0.0.1:`port`
/// (from /proc/net/tcp and /proc/<pid>/fd), so a health answer is known to
/// come from our child and not from another process that bound a port our
/// child failed to bind (two starters can be handed the same free port).
pub fn listens(pid: u32, port: u16) -> bool {
    let Ok(table) = std::fs::read_to_string("/proc/net/tcp") else { return false };
    let want = format!("0100007F:{port:04X}");
    let inodes: Vec<String> = table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 9 && f[1] == want && f[3] == "0A").then(|| format!("socket:[{}]", f[9]))
        })
        .collect();
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
    fds.filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .any(|l| inodes.iter().any(|i| l.as_os_str() == i.as_str()))
}

impl Broker {
    /// Start `bin serve` (the running executable when `bin` is None) and wait for /health.
    pub fn start(bin: Option<&Path>) -> Result<Broker, String> {
        Self::start_with(bin, &[])
    }

    /// [`Broker::start`] with more `serve` flags (kept for every restart).
    pub fn start_with(bin: Option<&Path>, args: &[&str]) -> Result<Broker, String> {
        Self::start_with_shim(bin, args, None)
    }

    /// The executable `start_with` runs: `bin`, or this one.
    pub fn exe(bin: Option<&Path>) -> Result<PathBuf, String> {
        match bin {
            Some(b) => Ok(b.to_path_buf()),
            None => std::env::current_exe().map_err(|e| format!("current executable: {e}")),
        }
    }

    /// [`Broker::start_with`], preloading the fault shim at `shim` when given (every restart too).
    pub fn start_with_shim(bin: Option<&Path>, args: &[&str], shim: Option<&Path>) -> Result<Broker, String> {
        Self::start_with_shim_power(bin, args, shim, false)
    }

    /// [`Broker::start_with_shim`]; with `power`, the shim also keeps the power mirror that
    /// [`Broker::power_cut`] restores from.
    pub fn start_with_shim_power(
        bin: Option<&Path>,
        args: &[&str],
        shim: Option<&Path>,
        power: bool,
    ) -> Result<Broker, String> {
        Self::start_under(bin, args, shim, power, "")
    }

    /// [`Broker::start_with_shim_power`] with these shim faults in force from the first
    /// process's first instruction (a clock that is off from the directory's first start;
    /// restarts are under no fault).
    pub fn start_under(
        bin: Option<&Path>,
        args: &[&str],
        shim: Option<&Path>,
        power: bool,
        faults: &str,
    ) -> Result<Broker, String> {
        if !faults.is_empty() && shim.is_none() {
            return Err("faults from the start need the fault shim".into());
        }
        if power && shim.is_none() {
            return Err("power loss needs the fault shim".into());
        }
        let bin = Self::exe(bin)?;
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
            shim: None,
            held: Vec::new(),
        };
        if let Some(lib) = shim {
            let lib = lib.canonicalize().map_err(|e| format!("{}: {e}", lib.display()))?;
            let power = power.then(|| b.log.with_file_name("power"));
            b.shim =
                Some(Shim { lib, ctl: b.log.with_file_name("faults.ctl"), generation: 0, power, disk_is_dir: true });
        }
        // A port handed out by bind(0) can be taken by another starter before
        // baton binds it; the first start then moves to a fresh one.
        for _ in 0..4 {
            match b.spawn(faults) {
                Err(e) if e.contains("Address already in use") && e.contains(&format!(":{}", b.port)) => {
                    let _ = std::fs::remove_file(&b.log);
                    b.port = free_port()?;
                    b.url = format!("http://127.0.0.1:{}", b.port);
                }
                r => return r.map(|()| b),
            }
        }
        b.spawn(faults)?;
        Ok(b)
    }

    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// Start `serve`; with the shim, under exactly `faults` (usually none).
    fn spawn(&mut self, faults: &str) -> Result<(), String> {
        let logf = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| format!("{}: {e}", self.log.display()))?;
        let mut cmd = Command::new(&self.bin);
        if let Some(sh) = &mut self.shim {
            // A fresh process starts with no fault (unless asked), whatever the last one was under.
            sh.generation += 1;
            write_ctl(&sh.ctl, &format!("gen {}\n{faults}\n", sh.generation))?;
            let _ = std::fs::remove_file(seen_path(&sh.ctl));
            cmd.env("LD_PRELOAD", &sh.lib).env("BATON_FAULTS_CTL", &sh.ctl);
            if let Some(mirror) = &sh.power {
                cmd.env("BATON_FAULTS_POWER", mirror).env("BATON_FAULTS_POWER_ROOT", &self.data);
                if !std::mem::replace(&mut sh.disk_is_dir, false) {
                    cmd.env("BATON_FAULTS_POWER_INHERIT", "1");
                }
            }
        }
        let child = cmd
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
        self.wait_healthy(Duration::from_secs(30))?;
        self.held.clear();
        Ok(())
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
                    && self.pid().is_some_and(|pid| listens(pid, self.port))
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
            self.held = PortHold::server(self.port, &self.args);
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
        self.spawn("")?;
        Ok(t.elapsed())
    }

    /// [`Broker::restart`] with these shim faults in force from the process's first
    /// instruction (a clock that is off when the node starts).
    pub fn restart_under(&mut self, faults: &str) -> Result<Duration, String> {
        if self.shim.is_none() {
            return Err("the broker was started without the fault shim".into());
        }
        let t = Instant::now();
        self.spawn(faults)?;
        Ok(t.elapsed())
    }

    /// After [`Broker::kill9`]: replace the data directory with what a power cut at that
    /// moment would have left (baton_powercut's model; `tear`: with some of the unsynced
    /// bytes too), drawn from `seed`. The directory as it was at the kill is kept beside it
    /// (`dead`) until the next cut.
    pub fn power_cut(&mut self, seed: u64, tear: bool) -> Result<baton_powercut::Report, String> {
        if self.child.is_some() {
            return Err("a power cut needs the broker killed first".into());
        }
        let mirror =
            self.shim.as_ref().and_then(|s| s.power.clone()).ok_or("the broker runs without the power mirror")?;
        let dead = self.log.with_file_name("dead");
        match std::fs::remove_dir_all(&dead) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(format!("{}: {e}", dead.display())),
            _ => {}
        }
        std::fs::rename(&self.data, &dead)
            .map_err(|e| format!("{} -> {}: {e}", self.data.display(), dead.display()))?;
        let report = baton_powercut::restore(&mirror, &dead, &self.data, seed, tear)
            .map_err(|e| format!("restore after a power cut (mirror {}): {e}", mirror.display()))?;
        if let Some(sh) = &mut self.shim {
            sh.disk_is_dir = true;
        }
        Ok(report)
    }

    /// After [`Broker::kill9`], before [`Broker::power_cut`]: `points` more power cuts
    /// of this moment (seeds from `seed`, every second one torn), each restored aside and
    /// judged as start-up would judge it (`check data`: no damage) and held to
    /// `durable`, the log entry the broker said was on disk before the kill: every
    /// restore must keep at least that far. The first failure is the error.
    pub fn power_points(&mut self, points: u64, seed: u64, durable: u64) -> Result<u64, String> {
        let mirror =
            self.shim.as_ref().and_then(|s| s.power.clone()).ok_or("the broker runs without the power mirror")?;
        let out = self.log.with_file_name("point");
        for j in 0..points {
            let (s, tear) = (seed ^ (j + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15), j % 2 == 1);
            match std::fs::remove_dir_all(&out) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(format!("{}: {e}", out.display())),
                _ => {}
            }
            baton_powercut::restore(&mirror, &self.data, &out, s, tear)
                .map_err(|e| format!("power point {j}: restore (mirror {}): {e}", mirror.display()))?;
            let r = crate::data::check(&out).map_err(|e| format!("power point {j}: check data: {e}"))?;
            let what = format!("power point {j} (seed {s}, tear {tear}, kept in {})", out.display());
            if r.damaged() > 0 {
                let found: Vec<String> = r.findings.iter().map(|f| format!("{}: {}", f.file, f.what)).collect();
                return Err(format!("{what}: start-up would refuse: {}", found.join("; ")));
            }
            if r.last_index < durable {
                return Err(format!(
                    "{what}: the disk keeps the log up to entry {} but the broker had said entries up to \
                     {durable} were on disk: answered writes lost",
                    r.last_index
                ));
            }
        }
        let _ = std::fs::remove_dir_all(&out);
        Ok(points)
    }

    /// The broker's `baton_wal_durable_index` (None when it does not answer /metrics).
    pub fn durable_index(&self) -> Option<u64> {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        s.write_all(b"GET /metrics/prometheus HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
        let mut buf = String::new();
        s.read_to_string(&mut buf).ok()?;
        buf.lines().find_map(|l| l.strip_prefix("baton_wal_durable_index ")?.trim().parse().ok())
    }

    /// Put these shim commands in force (`fsync fail`, `disk full`, `clock -3600000`...;
    /// empty: none) and wait until the broker's shim reports them applied.
    pub fn set_faults(&mut self, commands: &str) -> Result<(), String> {
        let sh = self.shim.as_mut().ok_or("the broker was started without the fault shim")?;
        sh.generation += 1;
        let generation = sh.generation;
        write_ctl(&sh.ctl, &format!("gen {generation}\n{commands}\n"))?;
        // The shim looks at the file from inside the broker's next intercepted call (its
        // timers read the clock all the time), at most every 10 ms.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let seen = self.faults_seen();
            if seen.generation == generation {
                if seen.bad > 0 {
                    return Err(format!("the fault shim did not understand {commands:?}"));
                }
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!("the broker's fault shim did not take {commands:?} within 5 s (it saw {seen:?})"));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// What the shim of the running process reports (all zero before its first report).
    pub fn faults_seen(&self) -> Seen {
        self.shim
            .as_ref()
            .and_then(|sh| std::fs::read_to_string(seen_path(&sh.ctl)).ok())
            .map(|t| Seen::parse(&t))
            .unwrap_or_default()
    }

    /// GET /health: its status and body, or None when nothing answered within 2 s.
    pub fn health(&self) -> Option<(u16, String)> {
        self.get("/health")
    }

    /// GET `path` (plain TCP + HTTP/1.0, no runtime needed): its status and body, or None
    /// when nothing answered within 2 s.
    pub fn get(&self, path: &str) -> Option<(u16, String)> {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        s.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes()).ok()?;
        let mut buf = String::new();
        s.read_to_string(&mut buf).ok()?;
        let status = buf.split_whitespace().nth(1)?.parse().ok()?;
        let body = buf.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_string();
        Some((status, body))
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

fn seen_path(ctl: &Path) -> PathBuf {
    let mut s = ctl.as_os_str().to_owned();
    s.push(".seen");
    PathBuf::from(s)
}

/// Replace the control file at once (a rename): the shim never reads half of one.
fn write_ctl(ctl: &Path, text: &str) -> Result<(), String> {
    let tmp = ctl.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, ctl).map_err(|e| format!("{}: {e}", ctl.display()))
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shims_report_is_read_whatever_is_in_it() {
        let s = Seen::parse("gen 7\nbad 0\nfsync_failed 3\nfsync_slowed 0\nenospc 12\nclock_shifted 99\n");
        assert_eq!(s, Seen { generation: 7, fsync_failed: 3, enospc: 12, clock_shifted: 99, ..Seen::default() });
        assert_eq!(Seen::parse(""), Seen::default());
        assert_eq!(Seen::parse("gen\ngen x\nnew_counter 5\n\u{0}"), Seen::default());
    }

    #[test]
    fn a_servers_holds_are_its_http_port_and_the_kafka_port_in_its_flags() {
        let ports = |args: &[&str], http: u16| -> Vec<u16> {
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            PortHold::server(http, &args).iter().filter_map(PortHold::port).collect()
        };
        let (http, kafka) = (free_port().unwrap(), free_port().unwrap());
        let k = format!("127.0.0.1:{kafka}");
        assert_eq!(ports(&["--kafka-addr", &k], http), [http, kafka]);
        assert_eq!(ports(&["--lease-ms", "5", &format!("--kafka-addr={k}")], http), [http, kafka]);
        assert_eq!(ports(&["--kafka-addr", "127.0.0.1:0"], http), [http], "port 0 is not held");
        assert_eq!(ports(&["--kafka-addr"], http), [http], "a flag without its value");
        assert_eq!(ports(&[], http), [http]);
    }
}
