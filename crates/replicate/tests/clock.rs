//! D72 on the wire: every append carries its sender's clock (`x-baton-clock`), and a member
//! hands to its engine only the clock of an append it accepted, that is its leader's in its
//! current term. A deposed sender's clock, or a garbled one, is never heard.

mod common;

use std::time::Duration;

use baton_replicate::network::Timekeeper;
use baton_replicate::{TypeConfig, Vote};
use bincode::Options;
use common::*;
use openraft::raft::AppendEntriesRequest;
use parking_lot::Mutex;

/// What every member's clock reads in this test (they share the process).
const CLOCK: u64 = 5_000_000_000_000;

static HEARD: Mutex<Vec<u64>> = Mutex::new(Vec::new());

fn now() -> u64 {
    CLOCK
}

fn heard(t: u64) -> bool {
    HEARD.lock().push(t);
    false
}

fn save() {}

async fn post_append(addr: std::net::SocketAddr, clock: &str, body: Vec<u8>) -> u16 {
    let r = reqwest::Client::new()
        .post(format!("http://{addr}/raft/append"))
        .header("x-baton-clock", clock)
        .body(body)
        .send()
        .await
        .unwrap();
    r.status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_hears_its_leaders_clock_and_no_one_elses() {
    let dir = tempfile::tempdir().unwrap();
    let (mut nodes, _) = start_three(dir.path(), |c| c.clock = Some(Timekeeper { now, heard, save })).await;
    let l = leader(&nodes).await;
    let last = write(nodes[l].as_ref().unwrap(), 0, 20).await;
    agree(&mut nodes, last).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    {
        let h = HEARD.lock();
        assert!(h.len() >= 4, "the followers heard the leader's heartbeats: {}", h.len());
        // The leader's reading plus the time the append took here: never less, never much more.
        assert!(h.iter().all(|t| (CLOCK..CLOCK + 5_000_000).contains(t)), "{h:?}");
    }
    let follower = nodes[(l + 1) % 3].as_ref().unwrap();
    let lm = nodes[l].as_ref().unwrap().raft.metrics().borrow().clone();
    // A deposed leader's append (an older term) is refused, and its clock not heard.
    let stale: AppendEntriesRequest<TypeConfig> = AppendEntriesRequest {
        vote: Vote::new_committed(lm.current_term - 1, lm.id),
        prev_log_id: None,
        entries: vec![],
        leader_commit: None,
    };
    let body = bincode::options().with_fixint_encoding().serialize(&stale).unwrap();
    for clock in ["7", "18446744073709551615", "abc", ""] {
        assert_eq!(post_append(follower.addr, clock, body.clone()).await, 200, "{clock}");
    }
    // A body that does not decode is refused before anything is heard.
    assert_eq!(post_append(follower.addr, "9", vec![1, 2, 3]).await, 400);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let h = HEARD.lock().clone();
    assert!(h.iter().all(|t| *t >= CLOCK && *t < CLOCK + 5_000_000), "a stale or garbled clock was heard: {h:?}");
    for n in nodes.iter_mut() {
        n.take().unwrap().shutdown().await;
    }
}
