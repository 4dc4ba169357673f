//! Three Raft members on loopback, each with its own directory, WAL and listener, talking
//! real HTTP: they agree entry for entry, survive the loss of their leader, and bring a member
//! that was away back by log or by snapshot.

mod common;

use std::net::SocketAddr;

use baton_replicate::node::{Node, NodeConfig};
use baton_replicate::NodeId;
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_members_agree_and_survive_the_loss_of_their_leader() {
    let dir = tempfile::tempdir().unwrap();
    let (mut nodes, members) = start_three(dir.path(), |_| {}).await;
    let l = leader(&nodes).await;
    let last = write(nodes[l].as_ref().unwrap(), 0, 300).await;
    agree(&mut nodes, last).await;
    assert_eq!(frames(nodes[0].as_ref().unwrap()).len(), 300);

    // The leader goes; the two left elect one of themselves and go on.
    let old = nodes[l].take().unwrap();
    let old_id = old.raft.metrics().borrow().id;
    old.shutdown().await;
    let l2 = leader(&nodes).await;
    assert_ne!(l2, l);
    let last = write(nodes[l2].as_ref().unwrap(), 300, 100).await;
    agree(&mut nodes, last).await;

    // The old leader comes back on its own directory and address and catches up by log.
    let addr: SocketAddr = members[&old_id].parse().unwrap();
    nodes[l] = Some(Node::start(cfg(old_id, dir.path(), addr), Recorder::default()).await.unwrap());
    agree(&mut nodes, last).await;
    let back = frames(nodes[l].as_ref().unwrap());
    assert_eq!(back.len(), 400, "every frame applied once on the member that came back");
    for n in nodes.into_iter().flatten() {
        n.shutdown().await;
    }
}

/// A member whose disk was lost is removed, and comes back empty as a learner: the leader
/// has purged what it missed, so it gets a snapshot and then the log, and votes again.
/// (A voter that is down does not hold the leader's purge back: a send to it fails within
/// a heartbeat, which lets the purge through; tests/cluster/cluster_snapshot.rs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_with_a_wiped_disk_comes_back_through_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let tune = |c: &mut NodeConfig| {
        c.snapshot_every = Some(50);
        c.keep_behind_snapshot = 0;
    };
    let (mut nodes, members) = start_three(dir.path(), tune).await;
    let l = leader(&nodes).await;
    let away = (l + 1) % 3;
    let last = write(nodes[l].as_ref().unwrap(), 0, 10).await;
    agree(&mut nodes, last).await;
    let away_node = nodes[away].take().unwrap();
    let away_id = away_node.raft.metrics().borrow().id;
    away_node.shutdown().await;
    std::fs::remove_dir_all(dir.path().join(format!("n{away_id}"))).unwrap();

    let lead = nodes[l].as_ref().unwrap().raft.clone();
    let rest: std::collections::BTreeSet<NodeId> = members.keys().copied().filter(|i| *i != away_id).collect();
    lead.change_membership(rest, false).await.unwrap();
    let last = write(nodes[l].as_ref().unwrap(), 10, 400).await;
    agree(&mut nodes, last).await;
    let applied = lead.metrics().borrow().last_applied;
    // A trigger while the policy's own snapshot (every 50 entries) is being built is
    // dropped by openraft (CI, 2026-12-04: it stopped at the automatic one): ask again.
    let mut built = false;
    for _ in 0..10 {
        lead.trigger().snapshot().await.unwrap();
        let wait = lead.wait(Some(std::time::Duration::from_secs(2)));
        if wait.snapshot(applied.unwrap(), "snapshot built").await.is_ok() {
            built = true;
            break;
        }
    }
    assert!(built, "no snapshot at {applied:?} after ten triggers: {:?}", lead.metrics().borrow());
    lead.trigger().purge_log(applied.unwrap().index).await.unwrap();
    lead.wait(Some(WAIT)).purged(applied, "purged").await.unwrap();

    let mut c = cfg(away_id, dir.path(), members[&away_id].parse().unwrap());
    tune(&mut c);
    nodes[away] = Some(Node::start(c, Recorder::default()).await.unwrap());
    lead.add_learner(away_id, openraft::BasicNode::new(&members[&away_id]), true).await.unwrap();
    lead.change_membership(members.keys().copied().collect::<std::collections::BTreeSet<_>>(), false).await.unwrap();
    let last = write(nodes[l].as_ref().unwrap(), 410, 5).await;
    agree(&mut nodes, last).await;
    let back = nodes[away].as_ref().unwrap();
    assert!(back.raft.metrics().borrow().snapshot.is_some(), "the member came back through a snapshot");
    assert!(std::fs::read_dir(dir.path().join(format!("n{away_id}/snapshots")))
        .unwrap()
        .flatten()
        .any(|e| { e.file_name().to_str().is_some_and(|n| n.starts_with("snap-")) }));
    assert_eq!(frames(back), frames(nodes[l].as_ref().unwrap()));
    assert_eq!(frames(back).len(), 415);
    assert_eq!(nodes[away].as_ref().unwrap().voters().len(), 3);
    for n in nodes.into_iter().flatten() {
        n.shutdown().await;
    }
}

/// What a hostile or broken peer sends to the Raft port is refused with a clear status and
/// changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_raft_port_refuses_garbage_and_oversized_bodies() {
    let dir = tempfile::tempdir().unwrap();
    let (mut nodes, _) = start_three(dir.path(), |c| c.max_rpc_bytes = 1 << 20).await;
    let l = leader(&nodes).await;
    let last = write(nodes[l].as_ref().unwrap(), 0, 20).await;
    agree(&mut nodes, last).await;
    let target = nodes[(l + 1) % 3].as_ref().unwrap();
    let before = target.raft.metrics().borrow().last_log_index;
    let http = reqwest::Client::new();
    for path in ["/raft/append", "/raft/vote", "/raft/snapshot"] {
        let url = format!("http://{}{path}", target.addr);
        let r = http.post(&url).body(vec![0xffu8; 64]).send().await.unwrap();
        assert_eq!(r.status(), 400, "{path}: garbage");
        assert!(r.text().await.unwrap().contains("does not decode"));
        assert_eq!(declared_oversize(target.addr, path).await, "413", "{path}: over max_rpc_bytes");
    }
    assert_eq!(target.raft.metrics().borrow().last_log_index, before);
    let last = write(nodes[l].as_ref().unwrap(), 20, 5).await;
    agree(&mut nodes, last).await;
    for n in nodes.into_iter().flatten() {
        n.shutdown().await;
    }
}

/// Declares a body over `max_rpc_bytes` and sends none of it: the answer must come from the
/// declared length alone, before anything is read or buffered. (Sending the 2 MiB itself races
/// the early answer: the server may close while the client still writes.)
async fn declared_oversize(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!("POST {path} HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n", 2u64 << 20);
    s.write_all(head.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 512];
    let n = tokio::time::timeout(std::time::Duration::from_secs(5), s.read(&mut buf))
        .await
        .expect("no answer to a declared oversized body within 5 s")
        .unwrap();
    let line = String::from_utf8_lossy(&buf[..n]).to_string();
    line.split_whitespace().nth(1).unwrap_or_default().to_string()
}
