//! Network faults between three members, every link through a proxy that the test cuts, slows
//! and makes flaky while writers on every member keep proposing: an isolated leader commits
//! nothing, the majority goes on, and after healing every acknowledged write is in every
//! replica exactly once, in the same order, and nothing else is.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_check::proxy::Link;
use baton_replicate::{Frame, NodeId};
use common::*;
use parking_lot::Mutex;

/// What the writers saw: (frame, when it was proposed, on which member, acknowledged?).
type Outcomes = Arc<Mutex<Vec<(String, Instant, NodeId, bool)>>>;

fn writers(
    nodes: &[Option<baton_replicate::node::Node<Recorder>>],
    stop: &Arc<AtomicBool>,
    out: &Outcomes,
) -> Vec<tokio::task::JoinHandle<()>> {
    nodes
        .iter()
        .flatten()
        .map(|n| {
            let raft = n.raft.clone();
            let id = n.raft.metrics().borrow().id;
            let (stop, out) = (Arc::clone(stop), Arc::clone(out));
            tokio::spawn(async move {
                // Bounded: at most 100,000 proposals per writer, however long the test runs.
                for seq in 0..100_000u64 {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let frame = format!("w{id}-{seq}");
                    let at = Instant::now();
                    let r = tokio::time::timeout(
                        Duration::from_millis(1500),
                        raft.client_write(Frame(frame.clone().into())),
                    )
                    .await;
                    let ok = matches!(r, Ok(Ok(_)));
                    let refused = matches!(&r, Ok(Err(e)) if e.forward_to_leader().is_some());
                    if !refused {
                        out.lock().push((frame, at, id, ok));
                    }
                    if !ok {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            })
        })
        .collect()
}

fn leader_id(nodes: &[Option<baton_replicate::node::Node<Recorder>>]) -> Option<NodeId> {
    nodes.iter().flatten().find_map(|n| {
        let m = n.raft.metrics().borrow().clone();
        (m.state.is_leader() && m.current_leader == Some(m.id)).then_some(m.id)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_heal_and_flap_without_losing_an_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let (mut nodes, _members, links) = start_three_proxied(dir.path(), |_| {}).await;
    leader(&nodes).await;
    let stop = Arc::new(AtomicBool::new(false));
    let out: Outcomes = Arc::default();
    let tasks = writers(&nodes, &stop, &out);
    tokio::time::sleep(Duration::from_millis(500)).await;

    // 1. The leader alone on one side: the other two elect one of themselves, and nothing
    //    proposed on the isolated one after the cut is acknowledged.
    let old = leader_id(&nodes).expect("a leader");
    partition(&links, &[old]);
    let cut_at = Instant::now();
    let deadline = Instant::now() + WAIT;
    let new = loop {
        if let Some(l) = nodes.iter().flatten().filter(|n| n.raft.metrics().borrow().id != old).find_map(|n| {
            let m = n.raft.metrics().borrow().clone();
            (m.state.is_leader()).then_some(m.id)
        }) {
            break l;
        }
        assert!(Instant::now() < deadline, "the majority elected no leader");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_ne!(new, old);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let heal_at = Instant::now();
    heal(&links);
    let acked_on_isolated: Vec<_> = out
        .lock()
        .iter()
        .filter(|(_, at, id, ok)| *ok && *id == old && *at > cut_at + Duration::from_millis(100) && *at < heal_at)
        .map(|(f, ..)| f.clone())
        .collect();
    assert!(acked_on_isolated.is_empty(), "an isolated leader acknowledged {acked_on_isolated:?}");
    tokio::time::sleep(Duration::from_millis(700)).await;

    // 2. Two against one, each member in the minority once.
    for minority in [1, 2, 3] {
        partition(&links, &[minority]);
        tokio::time::sleep(Duration::from_millis(1200)).await;
        heal(&links);
        tokio::time::sleep(Duration::from_millis(600)).await;
    }

    // 3. Flapping: random links cut and opened, seeded, 20 rounds of 150 ms.
    let mut seed = 0x5eed_u64;
    let keys: Vec<_> = links.keys().copied().collect();
    for _ in 0..20 {
        for k in &keys {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            links[k].set(if seed.is_multiple_of(3) { Link::Cut } else { Link::Open });
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    // 4. Slow and flaky links, then healed.
    for p in links.values() {
        p.set(Link::Delay(Duration::from_millis(30)));
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    for p in links.values() {
        p.set(Link::Flaky(0.05));
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    heal(&links);

    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    // A last write through whoever leads now commits everything before it in every replica.
    let l = leader(&nodes).await;
    let last = write(nodes[l].as_ref().unwrap(), 1_000_000, 1).await;
    agree(&mut nodes, last).await;

    let applied: Vec<String> =
        frames(nodes[0].as_ref().unwrap()).into_iter().map(|(_, f)| String::from_utf8(f).unwrap()).collect();
    let mut seen = BTreeSet::new();
    for f in &applied {
        assert!(seen.insert(f.clone()), "frame {f} applied twice");
    }
    let outcomes = out.lock().clone();
    let proposed: BTreeMap<&str, bool> = outcomes.iter().map(|(f, _, _, ok)| (f.as_str(), *ok)).collect();
    for f in &applied {
        assert!(proposed.contains_key(f.as_str()) || f.starts_with("frame-"), "applied {f}, which no one proposed");
    }
    let acked: Vec<&str> = proposed.iter().filter(|(_, ok)| **ok).map(|(f, _)| *f).collect();
    let lost: Vec<&&str> = acked.iter().filter(|f| !seen.contains(**f)).collect();
    assert!(lost.is_empty(), "acknowledged but not in the replicas: {lost:?}");
    assert!(acked.len() > 50, "the test made progress: {} acknowledged", acked.len());
    // The isolated leader's own uncommitted entries were replaced when it rejoined: the
    // conflicting-tail path of the log store ran, and the replicas still agree.
    let truncated: u64 = nodes.iter().flatten().map(|n| n.log.stats().truncated_entries.load(Ordering::Relaxed)).sum();
    assert!(truncated > 0, "no member ever truncated a conflicting tail: the faults did not bite");
    let unknown = proposed.values().filter(|ok| !**ok).count();
    eprintln!("{} acknowledged, {unknown} unknown, {} applied, {truncated} truncated", acked.len(), applied.len());
    for n in nodes.into_iter().flatten() {
        n.shutdown().await;
    }
}
