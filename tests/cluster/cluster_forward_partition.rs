//! Issue 14, the forwarding hop cut (D42): three `baton serve` members each advertise their
//! HTTP address as a proxy in front of their listener (`--http-advertised-addr`), so every
//! request a follower forwards to the leader crosses a link the test can refuse, cut or make
//! flaky, while Raft is left alone. Writers push only to the followers (every push is
//! forwarded), and a consumer pops and acks only through them.
//!
//! What a failed hop answers is held to the log: a push answered `leader_unreachable`
//! ("nothing reached the leader, retry anywhere") is nowhere; one answered 201 is there
//! exactly once; one answered `outcome_unknown` (or not answered) may be there, at most once;
//! no message whose ack was answered is delivered again; the members' files end the same.
//! The pushes carry no transaction id, so a hop that sent a request twice would show as a
//! message there twice.

use crate::common;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_check::proxy::{Link, Proxy};
use common::cluster::{leader, Cluster};
use common::free_port;
use common::load::{client, consumer, drain_following, judge_consumed, lease_time, same_files, wait_applied};
use parking_lot::Mutex;
use serde_json::{json, Value};

#[derive(Clone, Copy, PartialEq, Debug)]
enum Answer {
    Queued,
    /// 503 `leader_unreachable`: the member says nothing reached the leader.
    Unreachable,
    /// Anything else: 503 `outcome_unknown`, no answer, a dropped connection.
    Open,
}

type Answers = Arc<Mutex<Vec<(String, Answer, &'static str)>>>;

/// The phase the test is in, for the record of what each answer came under.
type Phase = Arc<Mutex<&'static str>>;

async fn push_via(c: &reqwest::Client, url: &str, id: &str) -> Answer {
    let body = json!({"items": [{"queue": "q", "payload": {"id": id}}]});
    let Ok(r) = c.post(format!("{url}/api/v1/push")).json(&body).send().await else { return Answer::Open };
    let status = r.status().as_u16();
    let v: Value = r.json().await.unwrap_or(Value::Null);
    match (status, v[0]["status"].as_str(), v["code"].as_str()) {
        (201, Some("queued"), _) => Answer::Queued,
        (503, _, Some("leader_unreachable")) => Answer::Unreachable,
        _ => Answer::Open,
    }
}

/// `n` writers pushing one message at a time to the followers in turn, until `stop` (at most
/// 20,000 pushes each).
fn writers(
    urls: Vec<String>,
    stop: &Arc<AtomicBool>,
    out: &Answers,
    phase: &Phase,
    n: usize,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..n)
        .map(|w| {
            let (urls, stop, out, phase) = (urls.clone(), Arc::clone(stop), Arc::clone(out), Arc::clone(phase));
            tokio::spawn(async move {
                let c = client();
                for seq in 0..20_000usize {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let id = format!("w{w}-{seq}");
                    let now = *phase.lock();
                    let a = push_via(&c, &urls[(w + seq) % urls.len()], &id).await;
                    out.lock().push((id, a, now));
                    if a != Answer::Queued {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            })
        })
        .collect()
}

/// A follower's forwarding counter from its /metrics.
async fn counter(c: &reqwest::Client, url: &str, name: &str) -> u64 {
    let text = c.get(format!("{url}/metrics/prometheus")).send().await.unwrap().text().await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse::<f64>().ok()))
        .unwrap_or_else(|| panic!("{name} not in /metrics")) as u64
}

/// A proxy at `at` again, once the old one's listener is gone (at most 5 s).
async fn reopen(at: SocketAddr, upstream: SocketAddr) -> Proxy {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match Proxy::start_on(at, upstream).await {
            Ok(p) => return p,
            Err(e) => assert!(Instant::now() < deadline, "could not listen on {at} again: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_forwarding_hop_answers_unreachable_only_for_what_never_reached_the_leader() {
    let raft = [free_port(), free_port(), free_port()];
    let http = [free_port(), free_port(), free_port()];
    let upstream = |i: usize| -> SocketAddr { format!("127.0.0.1:{}", http[i]).parse().unwrap() };
    let mut proxies: Vec<Option<Proxy>> = Vec::new();
    for i in 0..3 {
        proxies.push(Some(Proxy::start(upstream(i)).await.unwrap()));
    }
    let advertised: Vec<SocketAddr> = proxies.iter().map(|p| p.as_ref().unwrap().addr).collect();
    let flags = ["--raft-commit-timeout-ms", "2000", "--checkpoint-interval-secs", "1"];
    let mut cluster = tokio::task::block_in_place(|| {
        Cluster::start_ports(&flags, raft, http, |id| {
            (vec!["--http-advertised-addr".into(), advertised[id as usize - 1].to_string()], Vec::new())
        })
    });
    let c = client();
    let l = leader(&c, &cluster, Duration::from_secs(20)).await;
    lease_time(&c, &cluster, l, 2).await;
    let followers: Vec<String> = (0..3).filter(|i| *i != l).map(|i| cluster.members[i].url("")).collect();
    // The followers learn the leader's advertised address from /raft/about; wait until a
    // push through each is answered.
    for (i, f) in followers.iter().enumerate() {
        let deadline = Instant::now() + Duration::from_secs(20);
        while push_via(&c, f, ["warm-0", "warm-1"][i]).await != Answer::Queued {
            assert!(Instant::now() < deadline, "{f} forwarded no push within 20 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    let stop = Arc::new(AtomicBool::new(false));
    let out: Answers = Arc::default();
    let phase: Phase = Arc::new(Mutex::new("steady"));
    let tasks = writers(followers.clone(), &stop, &out, &phase, 4);
    let acks = consumer(followers.clone(), &stop);
    tokio::time::sleep(Duration::from_millis(1000)).await;

    // 1. Refused: the leader's proxy is gone, so connecting to it is refused.
    *phase.lock() = "refused";
    drop(proxies[l].take());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    proxies[l] = Some(reopen(advertised[l], upstream(l)).await);
    *phase.lock() = "steady";
    tokio::time::sleep(Duration::from_millis(500)).await;

    // 2. Cut: connections are taken and closed at once, those in flight included (the hop
    // cannot tell whether a request got through).
    *phase.lock() = "cut";
    proxies[l].as_ref().unwrap().set(Link::Cut);
    tokio::time::sleep(Duration::from_millis(1000)).await;

    // 3. Flaky: each chunk, either way, closes its connection with a chance of one in five,
    // so some requests reach the leader and their answers do not come back.
    *phase.lock() = "flaky";
    proxies[l].as_ref().unwrap().set(Link::Flaky(0.2));
    tokio::time::sleep(Duration::from_millis(3000)).await;
    proxies[l].as_ref().unwrap().set(Link::Open);
    *phase.lock() = "healed";
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    let consumed = acks.await.unwrap();

    let answers = out.lock().clone();
    let count = |a: Answer, ph: Option<&str>| {
        answers.iter().filter(|(_, x, p)| *x == a && ph.is_none_or(|ph| *p == ph)).count()
    };
    eprintln!(
        "{} pushes: {} queued, {} unreachable ({} while refused), {} open ({} while cut, {} while flaky)",
        answers.len(),
        count(Answer::Queued, None),
        count(Answer::Unreachable, None),
        count(Answer::Unreachable, Some("refused")),
        count(Answer::Open, None),
        count(Answer::Open, Some("cut")),
        count(Answer::Open, Some("flaky")),
    );
    // Every fault was met, so the verdict below is about each kind of answer.
    assert!(count(Answer::Unreachable, Some("refused")) > 0, "no push was answered unreachable while refused");
    assert!(count(Answer::Open, Some("cut")) > 0, "no push was left open while the hop was cut");
    assert!(count(Answer::Queued, Some("flaky")) > 0, "no push got through the flaky hop");
    assert!(count(Answer::Queued, Some("healed")) > 0, "no push got through after the heal");
    assert!(
        counter(&c, &followers[0], "baton_http_forward_unreachable_total").await
            + counter(&c, &followers[1], "baton_http_forward_unreachable_total").await
            > 0
    );
    assert!(consumed.acked.len() > 20, "the consumer made progress through the followers");

    // Pops whose answers were lost hold their partition for a lease time.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let got = drain_following(&c, &cluster).await;
    let present: BTreeSet<&str> =
        got.iter().map(String::as_str).chain(consumed.acked.iter().map(String::as_str)).collect();
    let unreachable_but_there: Vec<&str> = answers
        .iter()
        .filter(|(id, a, _)| *a == Answer::Unreachable && present.contains(id.as_str()))
        .map(|(id, _, _)| id.as_str())
        .collect();
    assert!(
        unreachable_but_there.is_empty(),
        "answered leader_unreachable (nothing sent) and yet written: {unreachable_but_there:?}"
    );
    let outcomes: Vec<(String, Instant, bool)> =
        answers.iter().map(|(id, a, _)| (id.clone(), Instant::now(), *a == Answer::Queued)).collect();
    judge_consumed(&outcomes, &got, &consumed, &["warm-0", "warm-1"]);
    wait_applied(&c, &cluster).await;
    same_files(&mut cluster);
}
