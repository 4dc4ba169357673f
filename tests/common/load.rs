//! Load and judgement for cluster fault tests: writers that push one message at a time to
//! whichever member answers, a drain that follows the leader, the verdict on what was
//! answered against what is there, and the replicas' files compared byte for byte.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{json, Value};

use super::cluster::{leader, partition_files, view, Cluster};

/// (payload id, when it was sent, answered 201 queued?) for every push a writer made.
pub type Outcomes = Arc<Mutex<Vec<(String, Instant, bool)>>>;

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(5)).build().unwrap()
}

/// One push of one message to whichever member `at` points at; moves `at` on a refusal.
pub async fn push_one(c: &reqwest::Client, urls: &[String], at: &mut usize, id: &str) -> bool {
    let body = json!({"items": [{"queue": "q", "payload": {"id": id}}]});
    let Ok(r) = c.post(format!("{}/api/v1/push", urls[*at])).json(&body).send().await else {
        *at = (*at + 1) % urls.len();
        return false;
    };
    let status = r.status().as_u16();
    let v: Value = r.json().await.unwrap_or(Value::Null);
    if status == 201 && v[0]["status"] == "queued" {
        return true;
    }
    if v["code"] == "not_leader" || status == 503 {
        *at = (*at + 1) % urls.len();
    }
    false
}

/// `n` writers, each pushing until `stop` (at most 20,000 pushes), recording every outcome.
pub fn writers(
    cluster: &Cluster,
    stop: &Arc<AtomicBool>,
    out: &Outcomes,
    n: usize,
) -> Vec<tokio::task::JoinHandle<()>> {
    let urls: Arc<Vec<String>> = Arc::new(cluster.members.iter().map(|m| m.url("")).collect());
    (0..n)
        .map(|w| {
            let (urls, stop, out) = (Arc::clone(&urls), Arc::clone(stop), Arc::clone(out));
            tokio::spawn(async move {
                let c = client();
                let mut at = w % urls.len();
                for seq in 0..20_000 {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let id = format!("w{w}-{seq}");
                    let sent = Instant::now();
                    let ok = push_one(&c, &urls, &mut at, &id).await;
                    out.lock().push((id, sent, ok));
                    if !ok {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            })
        })
        .collect()
}

/// Stops the writers, then: they made progress, every 201 is there once (nothing else is),
/// and every member applied the same log into the same partition files (the members stop).
pub async fn finish_and_judge(
    c: &reqwest::Client,
    cluster: &mut Cluster,
    stop: &AtomicBool,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    out: &Outcomes,
) {
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    let outcomes = out.lock().clone();
    assert!(outcomes.iter().filter(|(_, _, ok)| *ok).count() > 100, "the writers made progress");
    let got = drain_following(c, cluster).await;
    judge(&outcomes, &got);
    wait_applied(c, cluster).await;
    same_files(cluster);
}

/// Everything in queue `q`, through pops with auto-ack from the leader, until it is empty.
pub async fn drain_following(c: &reqwest::Client, cluster: &Cluster) -> Vec<String> {
    let mut got = Vec::new();
    for _ in 0..1000 {
        let l = leader(c, cluster, Duration::from_secs(20)).await;
        match super::cluster::pop_ids(c, &cluster.members[l].url("")).await {
            Some(ids) => got.extend(ids),
            None => return got,
        }
    }
    panic!("the queue did not drain in 1000 pops");
}

/// Every 201 is there once; nothing is there twice; nothing is there that was not pushed.
pub fn judge(outcomes: &[(String, Instant, bool)], got: &[String]) {
    let mut seen = BTreeSet::new();
    for id in got {
        assert!(seen.insert(id.as_str()), "{id} delivered twice");
    }
    let pushed: BTreeMap<&str, bool> = outcomes.iter().map(|(id, _, ok)| (id.as_str(), *ok)).collect();
    for id in got {
        assert!(pushed.contains_key(id.as_str()), "{id} delivered but never pushed");
    }
    let lost: Vec<&&str> =
        pushed.iter().filter(|(_, ok)| **ok).map(|(id, _)| id).filter(|id| !seen.contains(**id)).collect();
    assert!(lost.is_empty(), "answered 201 but lost: {lost:?}");
}

/// Sets queue `q`'s lease time on member `i` (it forwards to the leader if it does not lead).
pub async fn lease_time(c: &reqwest::Client, cluster: &Cluster, i: usize, secs: u64) {
    let r = c
        .post(cluster.members[i].url("/api/v1/configure"))
        .json(&json!({"queue": "q", "options": {"leaseTime": secs}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

/// Waits until every running member applied the leader's whole log (at most 20 s).
pub async fn wait_applied(c: &reqwest::Client, cluster: &Cluster) {
    let l = leader(c, cluster, Duration::from_secs(20)).await;
    let last = view(c, &cluster.members[l]).await.unwrap()["lastLogIndex"].as_u64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    for (i, m) in cluster.members.iter().enumerate() {
        if !cluster.running(i) {
            continue;
        }
        while view(c, m).await.and_then(|v| v["lastApplied"].as_u64()).unwrap_or(0) < last {
            assert!(Instant::now() < deadline, "member {} did not apply through {last}", m.id);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Stops every member, then: the same partition files on each, byte for byte.
pub fn same_files(cluster: &mut Cluster) {
    cluster.stop_all();
    let files: Vec<_> = cluster.members.iter().map(|m| partition_files(&m.dir)).collect();
    assert!(!files[0].is_empty());
    if files.iter().any(|f| f != &files[0]) {
        keep(cluster);
    }
    for (i, f) in files.iter().enumerate().skip(1) {
        assert_eq!(
            f.keys().collect::<Vec<_>>(),
            files[0].keys().collect::<Vec<_>>(),
            "member {} has other files",
            i + 1
        );
        for (path, bytes) in f {
            assert!(bytes == &files[0][path], "member {}: {path} differs from member 1's", i + 1);
        }
    }
}

/// Copies the members' directories and logs to a kept place (named on stderr), for a
/// mismatch to be looked at after the test's temporary directory is gone.
fn keep(cluster: &Cluster) {
    let to = std::env::temp_dir().join(format!("baton-mismatch-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&to);
    for m in &cluster.members {
        let _ = std::process::Command::new("cp").arg("-a").arg(&m.dir).arg(to.join(format!("n{}", m.id))).status();
        let _ = std::fs::write(to.join(format!("n{}.log", m.id)), m.log());
    }
    eprintln!("the members' directories are kept in {}", to.display());
}

/// What the consumer did: ids whose ack was answered success (never to be delivered again),
/// and ids whose ack had no clear answer (a timeout, a 503 with the outcome unknown): those
/// may be consumed or not.
pub struct Consumed {
    pub acked: Vec<String>,
    pub unclear: BTreeSet<String>,
}

/// A consumer of queue `q` that pops (leased, not auto-acked) from one member after another
/// of `urls` and acks what it got, until `stop`. A pop or ack that fails moves it to the
/// next member; the lease then runs out.
pub fn consumer(urls: Vec<String>, stop: &Arc<AtomicBool>) -> tokio::task::JoinHandle<Consumed> {
    let stop = Arc::clone(stop);
    tokio::spawn(async move {
        let c = client();
        let (mut acked, mut unclear) = (Vec::new(), BTreeSet::new());
        let mut at = 0;
        // Bounded: 5,000 pops at most.
        for _ in 0..5_000 {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let pop = c.get(format!("{}/api/v1/pop/queue/q?batch=10&wait=false", urls[at])).send().await;
            let msgs = match pop {
                Ok(r) if r.status() == 200 => {
                    r.json::<Value>().await.ok().and_then(|v| v["messages"].as_array().cloned())
                }
                _ => None,
            };
            let Some(msgs) = msgs else {
                at = (at + 1) % urls.len();
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            for m in msgs {
                let body = json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                                  "leaseId": m["leaseId"], "status": "completed"});
                let r = c.post(format!("{}/api/v1/ack", urls[at])).json(&body).send().await;
                let id = m["data"]["id"].as_str().unwrap().to_string();
                // 200 answers each ack (success or a clean refusal, e.g. the lease ran out);
                // anything else leaves the ack's outcome open.
                let answer = match r {
                    Ok(r) if r.status() == 200 => r
                        .json::<Value>()
                        .await
                        .ok()
                        .filter(|v| v[0]["code"] != "outcome_unknown")
                        .map(|v| v[0]["success"] == true),
                    _ => None,
                };
                match answer {
                    Some(true) => acked.push(id),
                    Some(false) => {}
                    None => {
                        unclear.insert(id);
                        at = (at + 1) % urls.len();
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Consumed { acked, unclear }
    })
}

/// [`judge`] with a consumer's acks: no message whose ack was answered is delivered again
/// (`got` is what the final drain found), none was acked twice, and a message whose ack had
/// an open outcome may be absent. Ids in `besides` were pushed by the test itself, not by
/// the writers.
pub fn judge_consumed(outcomes: &[(String, Instant, bool)], got: &[String], consumed: &Consumed, besides: &[&str]) {
    let Consumed { acked, unclear } = consumed;
    let drained: BTreeSet<&str> = got.iter().map(String::as_str).collect();
    let again: Vec<&String> = acked.iter().filter(|id| drained.contains(id.as_str())).collect();
    assert!(again.is_empty(), "acked, then delivered again: {again:?}");
    let mut once = BTreeSet::new();
    assert!(acked.iter().all(|id| once.insert(id)), "a message acked twice");
    eprintln!("{} acked by the consumer, {} drained at the end", acked.len(), got.len());
    let present: BTreeSet<&str> = drained.iter().copied().chain(acked.iter().map(String::as_str)).collect();
    let excused: Vec<&String> = unclear.iter().filter(|id| !present.contains(id.as_str())).collect();
    eprintln!("{} acks with an open outcome, {} of their messages absent: {excused:?}", unclear.len(), excused.len());
    let writers_got: Vec<String> = got
        .iter()
        .chain(acked.iter())
        .chain(excused.iter().copied())
        .filter(|id| !besides.contains(&id.as_str()))
        .cloned()
        .collect();
    judge(outcomes, &writers_got);
}
