//! D80 on a cluster: a leader planning a wide push in steps is stopped between them, the
//! others elect a new leader, and the old one wakes to find its term gone. It must never
//! answer the push 201 unless every group it claims is committed, and it must never plan
//! the rest on the state it rebuilt. The same push sent again to the new leader, with the
//! same transaction ids, leaves every partition with exactly one message.

use crate::common;

use std::time::{Duration, Instant};

use common::api::wide_push;
use common::cluster::{leader, Cluster};
use serde_json::{json, Value};

const WIDE: usize = 3_000;

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(120)).build().unwrap()
}

async fn continuations(c: &reqwest::Client, url: String) -> f64 {
    let Ok(r) = c.get(url).timeout(Duration::from_secs(2)).send().await else { return 0.0 };
    let text = r.text().await.unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("baton_planner_push_continuations_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_loses_its_term_between_the_steps_of_a_push_never_answers_it_ok() {
    let cluster = Cluster::start(&["--push-step-ms", "2"]);
    let c = client();
    let old = leader(&c, &cluster, Duration::from_secs(20)).await;
    let url = cluster.members[old].url("/api/v1/push");
    let wide = tokio::spawn(async move {
        match client().post(url).json(&wide_push("wide", WIDE)).send().await {
            Ok(r) => {
                let status = r.status().as_u16();
                (status, r.json::<Value>().await.unwrap_or(Value::Null))
            }
            Err(e) => (0, json!(e.to_string())),
        }
    });
    let metrics = cluster.members[old].url("/metrics/prometheus");
    let deadline = Instant::now() + Duration::from_secs(30);
    while continuations(&c, metrics.clone()).await == 0.0 {
        assert!(Instant::now() < deadline, "the old leader planned the wide push in one step");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cluster.pause(old);
    let new = leader(&c, &cluster, Duration::from_secs(20)).await;
    assert_ne!(new, old);
    cluster.resume(old);
    let (status, body) = wide.await.unwrap();
    let claimed_all = status == 201;
    if claimed_all {
        let r = body.as_array().expect("one result per item");
        assert!(r.len() == WIDE && r.iter().all(|x| x["status"] == "queued"), "{body}");
    } else {
        assert!(
            status == 0 || ["outcome_unknown", "not_leader"].contains(&body["code"].as_str().unwrap_or("")),
            "the interrupted push answered {status} {body}"
        );
    }
    // The same push to the new leader: what the old one stored is recognised, the rest stored.
    let again = cluster.members[new].url("/api/v1/push");
    let (st, v) = common::cluster::until_planned(|| c.post(&again).json(&wide_push("wide", WIDE))).await;
    assert_eq!(st, 201, "{v}");
    let r = v.as_array().expect("one result per item");
    let dup = r.iter().filter(|x| x["status"] == "duplicate").count();
    let queued = r.iter().filter(|x| x["status"] == "queued").count();
    assert_eq!(dup + queued, WIDE, "{:?}", &r[..3]);
    if claimed_all {
        assert_eq!(dup, WIDE, "the old leader answered 201 for groups the cluster does not hold");
    }
    let depth = cluster.members[new].url("/api/v1/resources/queues/wide/depth?limit=1");
    let d: Value = c.get(depth).send().await.unwrap().json().await.unwrap();
    assert_eq!(
        (d["pending"].as_u64(), d["partitionsPending"].as_u64()),
        (Some(WIDE as u64), Some(WIDE as u64)),
        "every partition exactly once: {d}"
    );
    eprintln!("old leader answered {status}; the retry found {dup} stored and stored {queued}");
}
