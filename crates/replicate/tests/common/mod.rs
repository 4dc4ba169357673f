//! What the cluster tests share: a recording applier, three members on loopback (each with
//! its own directory and listener, optionally every link through a proxy), and the checks
//! that replicas agree.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use baton_check::proxy::{Link, Proxy};
use baton_replicate::node::{Node, NodeConfig};
use baton_replicate::{Frame, NodeId};
use openraft::storage::RaftLogReader;

pub use baton_replicate::machine::Recorder;

pub const WAIT: Duration = Duration::from_secs(20);

pub fn cfg(id: NodeId, dir: &Path, listen: SocketAddr) -> NodeConfig {
    let mut c = NodeConfig::new(id, dir.join(format!("n{id}")), listen);
    c.log.wal.segment_bytes = 64 << 10;
    c.log.wal.preallocate = false;
    c
}

/// Three members started on free loopback ports, not yet a cluster; their Raft addresses.
async fn start_nodes(
    dir: &Path,
    tune: impl Fn(&mut NodeConfig),
) -> (Vec<Option<Node<Recorder>>>, BTreeMap<NodeId, String>) {
    let mut nodes = Vec::new();
    for id in 1..=3 {
        let mut c = cfg(id, dir, "127.0.0.1:0".parse().unwrap());
        tune(&mut c);
        nodes.push(Some(Node::start(c, Recorder::default()).await.unwrap()));
    }
    let members: BTreeMap<NodeId, String> =
        nodes.iter().flatten().map(|n| (n.raft.metrics().borrow().id, n.addr.to_string())).collect();
    (nodes, members)
}

pub async fn start_three(
    dir: &Path,
    tune: impl Fn(&mut NodeConfig),
) -> (Vec<Option<Node<Recorder>>>, BTreeMap<NodeId, String>) {
    let (nodes, members) = start_nodes(dir, tune).await;
    nodes[0].as_ref().unwrap().initialize(&members).await.unwrap();
    (nodes, members)
}

pub async fn leader(nodes: &[Option<Node<Recorder>>]) -> usize {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        for (i, n) in nodes.iter().enumerate() {
            if let Some(n) = n {
                let m = n.raft.metrics().borrow().clone();
                if m.current_leader == Some(m.id) && m.state.is_leader() {
                    return i;
                }
            }
        }
        assert!(tokio::time::Instant::now() < deadline, "no leader within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub async fn write(node: &Node<Recorder>, from: u64, n: u64) -> u64 {
    let mut last = 0;
    let mut pending = Vec::new();
    for i in from..from + n {
        let raft = node.raft.clone();
        pending.push(tokio::spawn(async move { raft.client_write(Frame(format!("frame-{i}").into())).await }));
    }
    for p in pending {
        let r = p.await.unwrap().expect("an entry written through the leader commits");
        last = last.max(r.log_id.index);
    }
    last
}

pub async fn caught_up(node: &Node<Recorder>, index: u64) {
    node.raft
        .wait(Some(WAIT))
        .applied_index_at_least(Some(index), "catch up")
        .await
        .unwrap_or_else(|e| panic!("node did not apply through {index}: {e}"));
}

pub fn frames(node: &Node<Recorder>) -> Vec<(u64, Vec<u8>)> {
    node.machine.with_applier(|r| r.0.clone())
}

/// Every member holds the same entries (terms and bytes) at the indexes they all still hold,
/// each holds a gapless log up to `upto`, and all applied the same frames in the same order.
pub async fn agree(nodes: &mut [Option<Node<Recorder>>], upto: u64) {
    type Replica = (BTreeMap<u64, baton_replicate::Entry>, Vec<(u64, Vec<u8>)>);
    let mut want: Option<Replica> = None;
    for n in nodes.iter_mut().flatten() {
        caught_up(n, upto).await;
        let mut log = n.log.clone();
        let entries = log.try_get_log_entries(0..=upto).await.unwrap();
        let idx: Vec<u64> = entries.iter().map(|e| e.log_id.index).collect();
        assert!(idx.windows(2).all(|w| w[1] == w[0] + 1), "the log has a hole: {idx:?}");
        let entries: BTreeMap<u64, _> = entries.into_iter().map(|e| (e.log_id.index, e)).collect();
        let applied: Vec<_> = frames(n).into_iter().filter(|(i, _)| *i <= upto).collect();
        match &want {
            None => want = Some((entries, applied)),
            Some((e, a)) => {
                assert_eq!(&applied, a, "applied frames differ");
                for (i, x) in &entries {
                    if let Some(y) = e.get(i) {
                        assert_eq!(x, y, "entry {i} differs");
                    }
                }
            }
        }
    }
}

/// Three members whose every directed link runs through its own proxy: `links[&(a, b)]`
/// carries what `a` sends `b`.
pub async fn start_three_proxied(
    dir: &Path,
    tune: impl Fn(&mut NodeConfig),
) -> (Vec<Option<Node<Recorder>>>, BTreeMap<NodeId, String>, BTreeMap<(NodeId, NodeId), Proxy>) {
    let (nodes, members) = start_nodes(dir, tune).await;
    let mut links = BTreeMap::new();
    for (i, from) in nodes.iter().flatten().enumerate() {
        for (j, to) in members.iter() {
            let me = i as NodeId + 1;
            if me == *j {
                continue;
            }
            let p = Proxy::start(to.parse().unwrap()).await.unwrap();
            from.route(*j, p.addr.to_string());
            links.insert((me, *j), p);
        }
    }
    nodes[0].as_ref().unwrap().initialize(&members).await.unwrap();
    (nodes, members, links)
}

/// Cuts every link between `side` and the rest, both ways; opens every other link.
pub fn partition(links: &BTreeMap<(NodeId, NodeId), Proxy>, side: &[NodeId]) {
    for ((a, b), p) in links {
        let across = side.contains(a) != side.contains(b);
        p.set(if across { Link::Cut } else { Link::Open });
    }
}

pub fn heal(links: &BTreeMap<(NodeId, NodeId), Proxy>) {
    for p in links.values() {
        p.set(Link::Open);
    }
}
