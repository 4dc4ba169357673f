//! Three real `baton serve --node-id` processes on loopback, each with its own directory,
//! HTTP, Kafka and Raft ports: start, find the leader, SIGKILL, SIGSTOP and SIGCONT a member,
//! start it again on the same directory and ports.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::free_port;
use baton_check::broker::PortHold;

pub struct Member {
    pub id: u64,
    pub http: u16,
    pub kafka: u16,
    pub raft: u16,
    pub dir: PathBuf,
    child: Option<Child>,
    /// Flags and environment of this member only (a skewed clock, its own timeouts).
    args: Vec<String>,
    envs: Vec<(String, String)>,
    /// Its ports while it is down (`PortHold`): a restart finds them free.
    held: Vec<PortHold>,
}

pub struct Cluster {
    pub members: Vec<Member>,
    peers: String,
    extra: Vec<String>,
    _tmp: tempfile::TempDir,
}

impl Member {
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.http)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.with_extension("log")).unwrap_or_default()
    }

    pub fn signal(&self, sig: i32) {
        if let Some(pid) = self.pid() {
            // SAFETY: signals only a child this test spawned.
            unsafe { libc::kill(pid as i32, sig) };
        }
    }
}

impl Cluster {
    /// Three members, started and healthy, with `extra` serve flags each.
    pub fn start(extra: &[&str]) -> Cluster {
        Self::start_each(extra, |_| (Vec::new(), Vec::new()))
    }

    /// [`Cluster::start`] with each member's own flags and environment, by id.
    pub fn start_each(extra: &[&str], each: impl Fn(u64) -> (Vec<String>, Vec<(String, String)>)) -> Cluster {
        Self::start_on(extra, [free_port(), free_port(), free_port()], each)
    }

    /// [`Cluster::start_each`] on these Raft ports (members 1, 2, 3), for a test that puts
    /// something in front of them before the members start (a proxy per link).
    pub fn start_on(
        extra: &[&str],
        raft: [u16; 3],
        each: impl Fn(u64) -> (Vec<String>, Vec<(String, String)>),
    ) -> Cluster {
        Self::start_ports(extra, raft, [free_port(), free_port(), free_port()], each)
    }

    /// [`Cluster::start_on`] with the HTTP ports chosen too, for a test that puts something
    /// in front of a member's HTTP listener (the forwarding hop).
    pub fn start_ports(
        extra: &[&str],
        raft: [u16; 3],
        http: [u16; 3],
        each: impl Fn(u64) -> (Vec<String>, Vec<(String, String)>),
    ) -> Cluster {
        let tmp = tempfile::tempdir().expect("temp dir");
        let members: Vec<Member> = (1..=3)
            .map(|id| Member {
                id,
                http: http[id as usize - 1],
                kafka: free_port(),
                raft: raft[id as usize - 1],
                dir: tmp.path().join(format!("n{id}")),
                child: None,
                args: each(id).0,
                envs: each(id).1,
                held: Vec::new(),
            })
            .collect();
        let peers = members.iter().map(|m| format!("{}=127.0.0.1:{}", m.id, m.raft)).collect::<Vec<_>>().join(",");
        let mut c = Cluster { members, peers, extra: extra.iter().map(|s| s.to_string()).collect(), _tmp: tmp };
        for i in 0..3 {
            c.spawn(i);
        }
        for i in 0..3 {
            c.wait_healthy(i);
        }
        c
    }

    fn spawn(&mut self, i: usize) {
        let m = &self.members[i];
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(m.dir.with_extension("log"))
            .expect("open member log");
        let child = Command::new(env!("CARGO_BIN_EXE_baton"))
            .arg("serve")
            .args(["--node-id", &m.id.to_string(), "--peers", &self.peers])
            .args(["--http-addr", &format!("127.0.0.1:{}", m.http)])
            .args(["--kafka-addr", &format!("127.0.0.1:{}", m.kafka)])
            .arg("--data-dir")
            .arg(&m.dir)
            .args(&self.extra)
            .args(&m.args)
            .envs(m.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn baton");
        self.members[i].child = Some(child);
    }

    fn wait_healthy(&mut self, i: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(Ok(Some(st))) = self.members[i].child.as_mut().map(|c| c.try_wait()) {
                panic!("member {} exited with {st}:\n{}", i + 1, self.members[i].log());
            }
            let up = std::net::TcpStream::connect(("127.0.0.1", self.members[i].http)).is_ok()
                && self.members[i].pid().is_some_and(|pid| baton_check::broker::listens(pid, self.members[i].http));
            if up {
                self.members[i].held.clear();
                return;
            }
            assert!(
                Instant::now() < deadline,
                "member {} not listening within 30 s:\n{}",
                i + 1,
                self.members[i].log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL member `i` (index into `members`) and reap it; its ports are held until it is
    /// up again.
    pub fn kill(&mut self, i: usize) {
        let m = &mut self.members[i];
        if let Some(mut c) = m.child.take() {
            let _ = c.kill();
            let _ = c.wait();
            m.held = [m.http, m.kafka, m.raft].into_iter().filter_map(PortHold::new).collect();
        }
    }

    /// Start member `i` again on its directory and ports.
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        self.spawn(i);
        self.wait_healthy(i);
    }

    /// SIGSTOP member `i`, and wait until the kernel shows it stopped: a thread already on
    /// a CPU runs on until its next return to user mode, long enough to answer a request.
    pub fn pause(&self, i: usize) {
        self.members[i].signal(libc::SIGSTOP);
        let Some(pid) = self.members[i].pid() else { return };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // The state follows the parenthesised command name.
            if stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('T')) {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("member {} did not stop within 5 s of SIGSTOP", i + 1);
    }

    pub fn resume(&self, i: usize) {
        self.members[i].signal(libc::SIGCONT);
    }

    /// SIGTERM every member and wait for each to exit (checkpointing on the way).
    pub fn stop_all(&mut self) {
        for m in &self.members {
            m.signal(libc::SIGCONT);
            m.signal(libc::SIGTERM);
        }
        for m in &mut self.members {
            if let Some(mut c) = m.child.take() {
                let deadline = Instant::now() + Duration::from_secs(30);
                while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    /// SIGTERM member `i` and wait (at most 60 s) for it to exit; how long that took.
    pub fn terminate(&mut self, i: usize) -> Duration {
        let t0 = Instant::now();
        self.members[i].signal(libc::SIGTERM);
        if let Some(mut c) = self.members[i].child.take() {
            while c.try_wait().ok().flatten().is_none() && t0.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        t0.elapsed()
    }

    /// Starts a member that is not in the membership (`id`, its own directory and ports;
    /// `--peers` names the others and it), and waits until it listens. It joins once the
    /// leader adds it (D44). Returns its index.
    pub fn start_new(&mut self, id: u64) -> usize {
        let m = Member {
            id,
            http: free_port(),
            kafka: free_port(),
            raft: free_port(),
            dir: self._tmp.path().join(format!("n{id}")),
            child: None,
            args: Vec::new(),
            envs: Vec::new(),
            held: Vec::new(),
        };
        self.peers = format!("{},{id}=127.0.0.1:{}", self.peers, m.raft);
        self.members.push(m);
        let i = self.members.len() - 1;
        self.spawn(i);
        self.wait_healthy(i);
        i
    }

    pub fn running(&self, i: usize) -> bool {
        self.members[i].child.is_some()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.resume(i);
            self.kill(i);
        }
    }
}

/// `GET /cluster` of one member, or `None` when it does not answer within a second.
pub async fn view(c: &reqwest::Client, m: &Member) -> Option<Value> {
    let r = c.get(m.url("/cluster")).timeout(Duration::from_secs(1)).send().await.ok()?;
    r.json().await.ok()
}

/// The index of the member whose engine leads, among the running ones, within `within`.
pub async fn leader(c: &reqwest::Client, cluster: &Cluster, within: Duration) -> usize {
    let deadline = Instant::now() + within;
    loop {
        for (i, m) in cluster.members.iter().enumerate() {
            if !cluster.running(i) {
                continue;
            }
            if view(c, m).await.is_some_and(|v| v["leading"] == true) {
                return i;
            }
        }
        if Instant::now() > deadline {
            let tails: Vec<String> = cluster
                .members
                .iter()
                .map(|m| {
                    let log = m.log();
                    let lines: Vec<&str> = log.lines().rev().take(25).collect();
                    format!("member {}:\n{}", m.id, lines.into_iter().rev().collect::<Vec<_>>().join("\n"))
                })
                .collect();
            panic!("no member leads within {within:?}; the members' last log lines:\n{}", tails.join("\n"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until every running member knows the leader's addresses (its `raft/about`).
pub async fn wait_known(c: &reqwest::Client, cluster: &Cluster, l: usize) {
    let want = cluster.members[l].id;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut all = true;
        for (i, m) in cluster.members.iter().enumerate() {
            if !cluster.running(i) || i == l {
                continue;
            }
            let v = view(c, m).await.unwrap_or(Value::Null);
            let known = v["members"].as_array().into_iter().flatten().any(|x| x["id"] == want && x["http"].is_string());
            all &= v["leader"] == want && known;
        }
        if all {
            return;
        }
        assert!(Instant::now() < deadline, "the members did not learn the leader's addresses within 10 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The fault shim (crates/faults), built next to the binary by `scripts/test`.
impl Cluster {
    /// Three members, `extra` on each: member `fast` elects first (its election timeout
    /// 150-200 ms), and the members in `skewed` read the wall clock `ms` ahead through the
    /// fault shim (its control files in `ctl`).
    pub fn start_skewed(extra: &[&str], ctl: &std::path::Path, fast: u64, skewed: &[u64], ms: i64) -> Cluster {
        let lib = shim();
        Cluster::start_each(extra, |id| {
            let args = if id == fast {
                vec!["--raft-election-min-ms", "150", "--raft-election-max-ms", "200"]
            } else {
                vec![]
            };
            let mut envs = Vec::new();
            if skewed.contains(&id) {
                let file = ctl.join(format!("n{id}.ctl"));
                std::fs::write(&file, format!("clock {ms}\n")).unwrap();
                envs.push(("LD_PRELOAD".to_string(), lib.display().to_string()));
                envs.push(("BATON_FAULTS_CTL".to_string(), file.display().to_string()));
            }
            (args.iter().map(|s| s.to_string()).collect(), envs)
        })
    }
}

pub fn shim() -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_BIN_EXE_baton")).parent().unwrap().to_path_buf();
    [dir.join("libbaton_faults.so"), dir.join("deps").join("libbaton_faults.so")]
        .into_iter()
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .max()
        .map(|(_, p)| p)
        .unwrap_or_else(|| panic!("no libbaton_faults.so in {}: cargo build --release -p baton-faults", dir.display()))
}

/// Every file under `partitions/` of each member, by relative path, with its bytes.
pub fn partition_files(dir: &std::path::Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let root = dir.join("partitions");
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            // The provisioner's spares (D17, D81): each member makes its own.
            if p.file_name().is_some_and(|n| n == ".spare" || n == ".spare-parts") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.strip_prefix(&root).unwrap().display().to_string(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Pushes `n` requests of 20 messages over four partitions, through `url` (any member: it
/// forwards); every one must be answered queued.
pub async fn push(c: &reqwest::Client, url: &str, tag: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for r in 0..n {
        let items: Vec<Value> = (0..20)
            .map(|k| {
                let id = format!("{tag}-{r}-{k}");
                ids.push(id.clone());
                json!({"queue": "q", "partition": format!("p{}", k % 4), "payload": {"id": id, "pad": "x".repeat(200)}})
            })
            .collect();
        let (status, v) = until_planned(|| c.post(format!("{url}/api/v1/push")).json(&json!({"items": &items}))).await;
        assert_eq!(status, 201, "{v}");
        assert!(v.as_array().unwrap().iter().all(|x| x["status"] == "queued"), "{v}");
    }
    ids
}

/// Sends the request again while it is refused before anything was planned (503
/// `not_leader` or `leader_unreachable`: no leader yet, or it just changed, as after a
/// restart of the whole cluster), at most 50 times 100 ms apart; any other answer is
/// returned as it is, for the caller to judge.
pub async fn until_planned(req: impl Fn() -> reqwest::RequestBuilder) -> (u16, Value) {
    let mut tries = 0;
    loop {
        let resp = req().send().await.unwrap();
        let status = resp.status().as_u16();
        // A body that is not JSON (a proxy's page, a truncated answer) is kept as text, so
        // the caller's assertion shows it instead of a parse panic here.
        let text = resp.text().await.unwrap_or_default();
        let v: Value =
            if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
        let refused = status == 503 && ["not_leader", "leader_unreachable"].contains(&v["code"].as_str().unwrap_or(""));
        if !refused || tries == 50 {
            return (status, v);
        }
        tries += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub async fn field(c: &reqwest::Client, cluster: &Cluster, i: usize, name: &str) -> u64 {
    view(c, &cluster.members[i]).await.and_then(|v| v[name].as_u64()).unwrap_or(0)
}

/// Waits until every running member's `name` (from `GET /cluster`) is at least `at_least`.
pub async fn wait_all(c: &reqwest::Client, cluster: &Cluster, name: &str, at_least: u64, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let mut all = true;
        for i in 0..cluster.members.len() {
            if cluster.running(i) {
                all &= field(c, cluster, i, name).await >= at_least;
            }
        }
        if all {
            return;
        }
        if Instant::now() > deadline {
            for m in &cluster.members {
                let _ = std::fs::create_dir_all("/tmp/snaplogs");
                let _ = std::fs::write(format!("/tmp/snaplogs/n{}.log", m.id), m.log());
            }
            let logs: Vec<String> = cluster.members.iter().map(|m| tail(&m.log())).collect();
            panic!("{what} within 40 s; the members' logs:\n{}", logs.join("\n-----\n"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn tail(log: &str) -> String {
    log.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n")
}

/// One auto-acked pop of up to 5,000 from queue `q` at `url`: the ids, or `None` once empty.
pub async fn pop_ids(c: &reqwest::Client, url: &str) -> Option<Vec<String>> {
    let (status, v) =
        until_planned(|| c.get(format!("{url}/api/v1/pop/queue/q?batch=5000&wait=false&autoAck=true"))).await;
    if status == 204 {
        return None;
    }
    assert_eq!(status, 200, "pop at {url}: {v}");
    Some(v["messages"].as_array().unwrap().iter().map(|m| m["data"]["id"].as_str().unwrap().to_string()).collect())
}

/// Everything in queue `q`, through pops with auto-ack at `url`, until it is empty.
pub async fn drain(c: &reqwest::Client, url: &str) -> Vec<String> {
    let mut got = Vec::new();
    for _ in 0..1000 {
        match pop_ids(c, url).await {
            Some(ids) => got.extend(ids),
            None => return got,
        }
    }
    panic!("the queue did not drain in 1000 pops");
}
