//! A leader hands over to a caught-up voter (D45): the voter it names leads in the next term,
//! well inside a follower's lease; `/raft/elect` from anyone but the leader, or for a log
//! the voter lacks, changes nothing.

mod common;

use std::time::Duration;

use baton_replicate::handover::{ElectRequest, ReleaseRequest};
use bincode::Options;
use common::*;

fn term(n: &baton_replicate::node::Node<Recorder>) -> u64 {
    n.raft.metrics().borrow().current_term
}

async fn post_elect(addr: std::net::SocketAddr, body: Vec<u8>) -> (u16, String) {
    let r = reqwest::Client::new().post(format!("http://{addr}/raft/elect")).body(body).send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn post_release(addr: std::net::SocketAddr, req: &ReleaseRequest) -> (u16, String) {
    let body = bincode::options().with_fixint_encoding().serialize(req).unwrap();
    let r = reqwest::Client::new().post(format!("http://{addr}/raft/release")).body(body).send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

fn encoded(req: &ElectRequest) -> Vec<u8> {
    bincode::options().with_fixint_encoding().serialize(req).unwrap()
}

/// Three members that agree on 20 entries: the leader (`l`, its metrics `lm`), a follower
/// (`f`, id `fid`) and the third member's id (`other`).
struct Settled {
    nodes: Vec<Option<baton_replicate::node::Node<Recorder>>>,
    l: usize,
    lm: openraft::RaftMetrics<u64, openraft::BasicNode>,
    f: usize,
    fid: u64,
    other: u64,
}

async fn settled(dir: &std::path::Path) -> Settled {
    // Long election timeouts, as in the hand-over test: these tests assert that nothing is
    // elected for a second, and with the default 400–800 ms a member that missed heartbeats
    // on a loaded machine stood by timeout, and won once a follower had let its lease go
    // (CI, and 1 run in 6 here beside two busy loops: term 2, led by the release's target).
    let (mut nodes, _) = start_three(dir, |c| c.election = (Duration::from_secs(3), Duration::from_secs(4))).await;
    let l = leader(&nodes).await;
    let last = write(nodes[l].as_ref().unwrap(), 0, 20).await;
    agree(&mut nodes, last).await;
    let lm = nodes[l].as_ref().unwrap().raft.metrics().borrow().clone();
    let f = (l + 1) % 3;
    let fid = nodes[f].as_ref().unwrap().raft.metrics().borrow().id;
    let other = (1..=3).find(|i| *i != lm.id && *i != fid).unwrap();
    Settled { nodes, l, lm, f, fid, other }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_hands_over_inside_a_lease_and_writes_go_on() {
    let dir = tempfile::tempdir().unwrap();
    // Long timeouts: an election by timeout could not happen inside the time asserted.
    let (mut nodes, _) =
        start_three(dir.path(), |c| c.election = (Duration::from_secs(3), Duration::from_secs(4))).await;
    for round in 0..3u64 {
        let l = leader(&nodes).await;
        let last = write(nodes[l].as_ref().unwrap(), round * 100, 50).await;
        agree(&mut nodes, last).await;
        let before = term(nodes[l].as_ref().unwrap());
        // Its own lease (4 s from its election) may still run: that wait is not the hand-over's.
        let new = nodes[l].as_ref().unwrap().hand_over(Duration::from_secs(10)).await.unwrap();
        let m = nodes[l].as_ref().unwrap().raft.metrics().borrow().clone();
        assert_ne!(new, m.id, "round {round}");
        assert_eq!(m.current_leader, Some(new), "round {round}: the old leader follows the new one");
        let n = nodes.iter().position(|x| x.as_ref().is_some_and(|x| x.raft.metrics().borrow().id == new)).unwrap();
        assert_eq!(term(nodes[n].as_ref().unwrap()), before + 1, "round {round}: elected in the very next term");
        let last = write(nodes[n].as_ref().unwrap(), round * 100 + 50, 10).await;
        agree(&mut nodes, last).await;
    }
    for n in nodes.iter_mut() {
        n.take().unwrap().shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_requests_not_from_the_leader_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let Settled { mut nodes, l, lm, f, other, .. } = settled(dir.path()).await;
    let follower = nodes[f].as_ref().unwrap();
    let t = lm.current_term;
    let cases = [
        (ElectRequest { leader: other, term: t, last_index: lm.last_log_index }, 409, "is not this member's leader"),
        (
            ElectRequest { leader: lm.id, term: t + 1, last_index: lm.last_log_index },
            409,
            "is not this member's leader",
        ),
        (ElectRequest { leader: lm.id, term: t, last_index: lm.last_log_index.map(|i| i + 5) }, 409, "log ends at"),
    ];
    for (req, status, says) in cases {
        let (st, text) = post_elect(follower.addr, encoded(&req)).await;
        assert_eq!((st, text.contains(says)), (status, true), "{req:?}: {st} {text}");
    }
    let (st, text) = post_elect(
        nodes[l].as_ref().unwrap().addr,
        encoded(&ElectRequest { leader: lm.id, term: t, last_index: lm.last_log_index }),
    )
    .await;
    assert_eq!((st, text.as_str()), (409, "this member leads"));
    for garbage in [vec![], vec![1, 2, 3], vec![0xff; 200]] {
        assert_eq!(post_elect(follower.addr, garbage).await.0, 400);
    }
    // Nothing stood: the term and the leader are what they were, a second later (an elect wrongly taken stands at once).
    tokio::time::sleep(Duration::from_millis(1000)).await;
    for n in nodes.iter().flatten() {
        let m = n.raft.metrics().borrow().clone();
        assert_eq!((m.current_term, m.current_leader), (t, Some(lm.id)));
    }
    for n in nodes.iter_mut() {
        n.take().unwrap().shutdown().await;
    }
}

/// `/raft/release` (D73) lets a follower's lease go only on the word of its leader in its
/// current term: anything else is refused and lets nothing go. The voter to be asked to
/// stand keeps its lease; another voter lets it go, and still follows the leader, which
/// goes on leading (a release alone elects nobody).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_requests_not_from_the_leader_let_nothing_go() {
    let dir = tempfile::tempdir().unwrap();
    let Settled { mut nodes, l, lm, f, fid, other } = settled(dir.path()).await;
    let follower = nodes[f].as_ref().unwrap();
    let t = lm.current_term;
    let before = follower.leases_let_go();
    for req in [
        ReleaseRequest { leader: other, term: t, target: other },
        ReleaseRequest { leader: lm.id, term: t + 1, target: other },
        ReleaseRequest { leader: lm.id, term: t - 1, target: other },
    ] {
        let (st, text) = post_release(follower.addr, &req).await;
        assert_eq!((st, text.contains("is not this member's leader")), (409, true), "{req:?}: {st} {text}");
    }
    let to_leader = ReleaseRequest { leader: lm.id, term: t, target: other };
    assert_eq!(post_release(nodes[l].as_ref().unwrap().addr, &to_leader).await.0, 409, "the leader itself");
    for garbage in [vec![], vec![1, 2, 3], vec![0xff; 200]] {
        let r = reqwest::Client::new().post(format!("http://{}/raft/release", follower.addr)).body(garbage);
        assert_eq!(r.send().await.unwrap().status().as_u16(), 400);
    }
    let (st, text) = post_release(follower.addr, &ReleaseRequest { leader: lm.id, term: t, target: fid }).await;
    assert_eq!((st, text.as_str()), (200, "this member will be asked to stand"));
    assert_eq!(follower.leases_let_go(), before, "no lease let go");
    let (st, text) = post_release(follower.addr, &to_leader).await;
    assert_eq!((st, text.as_str()), (200, "lease let go"));
    assert_eq!(follower.leases_let_go(), before + 1);
    // The leader's appends go on, so it still leads, a second later, in the same term (a release that stood would do so at once).
    tokio::time::sleep(Duration::from_millis(1000)).await;
    for n in nodes.iter().flatten() {
        let m = n.raft.metrics().borrow().clone();
        assert_eq!((m.current_term, m.current_leader), (t, Some(lm.id)));
    }
    for n in nodes.iter_mut() {
        n.take().unwrap().shutdown().await;
    }
}

/// A release repeated before the leader is heard again moves nothing (D74): each one moved
/// the follower's Raft clock another lease forward and started another task. Heartbeats two
/// seconds apart, so a hundred releases in a row see at most one of them in between.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_release_lets_the_lease_go_once() {
    let dir = tempfile::tempdir().unwrap();
    let (mut nodes, _) = start_three(dir.path(), |c| {
        c.heartbeat = Duration::from_secs(2);
        c.election = (Duration::from_secs(4), Duration::from_secs(5));
    })
    .await;
    let l = leader(&nodes).await;
    let last = write(nodes[l].as_ref().unwrap(), 0, 5).await;
    agree(&mut nodes, last).await;
    let lm = nodes[l].as_ref().unwrap().raft.metrics().borrow().clone();
    let f = (l + 1) % 3;
    let follower = nodes[f].as_ref().unwrap();
    let fid = follower.raft.metrics().borrow().id;
    let target = (1..=3).find(|i| *i != lm.id && *i != fid).unwrap();
    let req = ReleaseRequest { leader: lm.id, term: lm.current_term, target };
    let before = follower.leases_let_go();
    let mut again = 0;
    for _ in 0..100 {
        let (st, text) = post_release(follower.addr, &req).await;
        assert_eq!(st, 200, "{text}");
        again += usize::from(text == "lease already let go");
    }
    let let_go = follower.leases_let_go() - before;
    assert!((1..=2).contains(&let_go), "100 releases let {let_go} leases go");
    assert_eq!(again as u64, 100 - let_go, "every other release was answered as a repeat");
    // The leader still leads in the same term once its next heartbeats arrive.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for n in nodes.iter().flatten() {
        let m = n.raft.metrics().borrow().clone();
        assert_eq!((m.current_term, m.current_leader), (lm.current_term, Some(lm.id)));
    }
    for n in nodes.iter_mut() {
        n.take().unwrap().shutdown().await;
    }
}
