//! `--spawn --cluster`: three `baton serve --node-id` members of our own on loopback, each a
//! [`Broker`] (its own HTTP port, data directory, log and, when asked, the fault shim), with
//! every directed Raft link through a [`Proxy`] (`--raft-routes`) so a nemesis can cut a
//! member off. Member 3 never stands for election (`--raft-stand-for-election false`): it is
//! the clients' door, always up, forwarding to whoever leads (D42), so a fault aimed at the
//! leader never takes the clients' door with it.
//!
//! Owns the members' processes and the links. Must never leave a link cut or a member
//! stopped when it hands them back, and never name a leader that the entry member does not.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::broker::{free_port, Broker};
use crate::proxy::{Link, Proxy};

/// The member the clients talk to (an index into `brokers`): it never leads.
pub const ENTRY: usize = 2;

pub struct Members {
    pub brokers: Vec<Broker>,
    /// One proxy per directed Raft link, by (from, to) member index.
    links: BTreeMap<(usize, usize), Proxy>,
}

impl Members {
    /// Starts the three members, one after the other (a member answers /health before the
    /// cluster has formed), with `extra` serve flags each. Needs a tokio runtime for the
    /// proxies (`rt`), which must outlive the members.
    ///
    /// The Raft and Kafka ports are picked by bind(0) before any member binds them, so
    /// another starter on the machine can take one first; every member names every Raft
    /// port, so such a start is thrown away whole (dropping it stops what it started) and
    /// made again on fresh ports, at most three times.
    pub fn start(
        exe: Option<&Path>,
        shim: Option<&Path>,
        extra: &[&str],
        rt: &tokio::runtime::Handle,
    ) -> Result<Members, String> {
        let mut tries = 0;
        loop {
            match Self::start_once(exe, shim, extra, rt) {
                Err(e) if e.contains("Address already in use") && tries < 3 => tries += 1,
                r => return r,
            }
        }
    }

    fn start_once(
        exe: Option<&Path>,
        shim: Option<&Path>,
        extra: &[&str],
        rt: &tokio::runtime::Handle,
    ) -> Result<Members, String> {
        let raft: Vec<u16> = (0..3).map(|_| free_port()).collect::<Result<_, _>>()?;
        let kafka: Vec<u16> = (0..3).map(|_| free_port()).collect::<Result<_, _>>()?;
        let peers: Vec<String> = raft.iter().enumerate().map(|(i, p)| format!("{}=127.0.0.1:{p}", i + 1)).collect();
        let peers = peers.join(",");
        let mut links = BTreeMap::new();
        for from in 0..3 {
            for to in (0..3).filter(|t| *t != from) {
                let upstream = format!("127.0.0.1:{}", raft[to]).parse().map_err(|e| format!("{e}"))?;
                let p = rt.block_on(Proxy::start(upstream)).map_err(|e| format!("a Raft link proxy: {e}"))?;
                links.insert((from, to), p);
            }
        }
        let mut brokers = Vec::new();
        for (i, kafka) in kafka.iter().enumerate() {
            let routes: Vec<String> =
                links.iter().filter(|((f, _), _)| *f == i).map(|((_, t), p)| format!("{}={}", t + 1, p.addr)).collect();
            let mut args: Vec<String> = vec![
                "--node-id".into(),
                (i + 1).to_string(),
                "--peers".into(),
                peers.clone(),
                "--kafka-addr".into(),
                format!("127.0.0.1:{kafka}"),
                "--raft-routes".into(),
                routes.join(","),
            ];
            if i == ENTRY {
                args.extend(["--raft-stand-for-election".into(), "false".into()]);
            }
            args.extend(extra.iter().map(|s| s.to_string()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            brokers.push(Broker::start_with_shim(exe, &args, shim)?);
        }
        let m = Members { brokers, links };
        m.wait_leader(Duration::from_secs(30))?;
        Ok(m)
    }

    /// The clients' door.
    pub fn entry_url(&self) -> String {
        self.brokers[ENTRY].url.clone()
    }

    /// The index of the member the entry member names as leader, once it names one that is
    /// not itself, knows its HTTP address, and the leader says it leads (within `within`).
    pub fn wait_leader(&self, within: Duration) -> Result<usize, String> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(l) = self.leader() {
                return Ok(l);
            }
            if Instant::now() > deadline {
                let tails: Vec<String> = self.brokers.iter().map(|b| b.log_tail(15)).collect();
                return Err(format!("no leader within {within:?}; the members' logs:\n{}", tails.join("\n-----\n")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The leader as the entry member sees it, once it knows where to forward to.
    fn leader(&self) -> Option<usize> {
        let v = view(&self.brokers[ENTRY])?;
        let id = v.get("leader")?.as_u64()?;
        let members = v.get("members")?.as_array()?;
        members.iter().find(|m| m["id"].as_u64() == Some(id)).filter(|m| m["http"].is_string())?;
        let l = (id as usize).checked_sub(1).filter(|l| *l < 3 && *l != ENTRY)?;
        view(&self.brokers[l]).filter(|v| v["leading"] == true).map(|_| l)
    }

    /// The member that can lead and is not `l`.
    pub fn other(l: usize) -> usize {
        (0..3).find(|i| *i != l && *i != ENTRY).expect("three members")
    }

    /// Cuts every Raft link to and from member `i`.
    pub fn isolate(&self, i: usize) {
        for ((f, t), p) in &self.links {
            if *f == i || *t == i {
                p.set(Link::Cut);
            }
        }
    }

    /// Cuts the one Raft link from member `from` to member `to`.
    pub fn cut(&self, from: usize, to: usize) {
        if let Some(p) = self.links.get(&(from, to)) {
            p.set(Link::Cut);
        }
    }

    pub fn heal(&self) {
        for p in self.links.values() {
            p.set(Link::Open);
        }
    }

    /// Fails if a member exited on its own.
    pub fn check_alive(&mut self) -> Result<(), String> {
        for (i, b) in self.brokers.iter_mut().enumerate() {
            b.check_alive().map_err(|e| format!("member {}: {e}", i + 1))?;
        }
        Ok(())
    }

    /// Waits until every member applied the leader's whole log (at most `within`), then
    /// compares their partition files byte for byte: the replicas of one committed log.
    pub fn same_files(&self, within: Duration) -> Result<usize, String> {
        let deadline = Instant::now() + within;
        loop {
            let l = self.wait_leader(within)?;
            let last = view(&self.brokers[l]).and_then(|v| v["lastLogIndex"].as_u64());
            let applied: Vec<Option<u64>> =
                self.brokers.iter().map(|b| view(b).and_then(|v| v["lastApplied"].as_u64())).collect();
            if last.is_some() && applied.iter().all(|a| *a >= last) {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "the members did not apply the leader's log ({last:?}) within {within:?}: {applied:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // The appender writes a frame's records before the frame is applied; give the last
        // frame's writes the moment they take.
        std::thread::sleep(Duration::from_millis(200));
        let roots: Vec<std::path::PathBuf> = self.brokers.iter().map(|b| b.data_dir().join("partitions")).collect();
        let names: Vec<Vec<String>> = roots.iter().map(|r| segment_files(r)).collect();
        for (i, n) in names.iter().enumerate().skip(1) {
            if *n != names[0] {
                return Err(format!("member {} has other partition files than member 1", i + 1));
            }
        }
        for name in &names[0] {
            for (i, root) in roots.iter().enumerate().skip(1) {
                if !same_bytes(&roots[0].join(name), &root.join(name))? {
                    return Err(format!("member {}: {name} differs from member 1's", i + 1));
                }
            }
        }
        Ok(names[0].len())
    }

    /// Keeps every member's directory and log after exit; where.
    pub fn keep(&mut self) -> Vec<std::path::PathBuf> {
        self.brokers.iter_mut().filter_map(|b| b.keep()).collect()
    }
}

/// GET /cluster on a member, as JSON.
fn view(b: &Broker) -> Option<serde_json::Value> {
    let (status, body) = b.get("/cluster")?;
    (status == 200).then(|| serde_json::from_str(&body).ok()).flatten()
}

/// The segment files under a member's `partitions/` (not the spare pool), as relative
/// paths in order.
fn segment_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for part in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let name = part.file_name().to_string_lossy().to_string();
        if name.starts_with('.') {
            continue;
        }
        for f in std::fs::read_dir(part.path()).into_iter().flatten().flatten() {
            let fname = f.file_name().to_string_lossy().to_string();
            if fname.ends_with(".seg") {
                out.push(format!("{name}/{fname}"));
            }
        }
    }
    out.sort();
    out
}

/// Whether two files hold the same bytes, read a MiB at a time (a long campaign's
/// partition files are far larger than what should be held in memory at once).
fn same_bytes(a: &Path, b: &Path) -> Result<bool, String> {
    let open = |p: &Path| std::fs::File::open(p).map_err(|e| format!("{}: {e}", p.display()));
    let (mut fa, mut fb) = (open(a)?, open(b)?);
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let na = read_full(&mut fa, &mut ba).map_err(|e| format!("{}: {e}", a.display()))?;
        let nb = read_full(&mut fb, &mut bb).map_err(|e| format!("{}: {e}", b.display()))?;
        if na != nb || ba[..na] != bb[..nb] {
            return Ok(false);
        }
        if na == 0 {
            return Ok(true);
        }
    }
}

/// Fills `buf` unless the file ends first; how much it read.
fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::io::Read;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_compared_to_the_last_byte_a_mib_at_a_time() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        let mut bytes = vec![7u8; (1 << 20) + 5];
        std::fs::write(&a, &bytes).unwrap();
        std::fs::write(&b, &bytes).unwrap();
        assert!(same_bytes(&a, &b).unwrap());
        *bytes.last_mut().unwrap() = 8;
        std::fs::write(&b, &bytes).unwrap();
        assert!(!same_bytes(&a, &b).unwrap(), "the last byte, past the first MiB, differs");
        bytes.pop();
        std::fs::write(&b, &bytes).unwrap();
        assert!(!same_bytes(&a, &b).unwrap(), "a prefix is not the same file");
        assert!(same_bytes(&a, &d.path().join("missing")).is_err());
    }
}
