//! Issue 18: a power cut at every phase of a checkpoint loses nothing. For each
//! named phase (crates/core/src/failpoint.rs) the server is started with that
//! failpoint armed, pushed to (and popped and acked from) until a checkpoint
//! reaches the phase and the process aborts, as kill -9 would; then restarted:
//! every push that was answered is there once, every ack holds, retention's
//! deleted segments stay deleted, and `baton check data` on the stopped
//! directory finds no damage.

use crate::common;

use common::api::{client, Api};
use common::Server;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const PHASES: [&str; 9] = [
    "checkpoint.index_flushed",
    "checkpoint.taken",
    "checkpoint.files_synced",
    "checkpoint.tmp_written",
    "checkpoint.renamed",
    "checkpoint.dir_synced",
    "checkpoint.deleting",
    "checkpoint.written",
    "checkpoint.log_retired",
];

/// Pushes to "keep" (and big ones to "ret", whose retention deletes segments) until the
/// server dies; returns the transaction ids answered `queued`, those acked, and those whose
/// ack was sent but not answered (the crash: either outcome is right).
async fn load_until_death(api: &mut Api) -> (BTreeSet<String>, BTreeSet<String>, BTreeSet<String>) {
    let (mut queued, mut acked, mut unknown) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    let deadline = Instant::now() + Duration::from_secs(40);
    for round in 0u32.. {
        assert!(Instant::now() < deadline, "the failpoint was never reached");
        let items: Vec<Value> = (0..20)
            .map(|j| json!({"queue": "keep", "partition": format!("p{}", j % 3), "transactionId": format!("k{round}-{j}"), "payload": {"r": round}}))
            .chain((0..4).map(|j| json!({"queue": "ret", "partition": "0", "payload": "x".repeat(60_000 + j)})))
            .collect();
        let Ok(r) = api.c.post(api.s.url("/api/v1/push")).json(&json!({ "items": items })).send().await else { break };
        let Ok(v) = r.json::<Value>().await else { break };
        for it in v.as_array().into_iter().flatten() {
            if it["status"] == "queued" && it["queueName"] == "keep" {
                queued.insert(it["transactionId"].as_str().unwrap().to_string());
            }
        }
        if round % 3 == 0 {
            let Ok(r) = api.c.get(api.s.url("/api/v1/pop/queue/keep?wait=false&batch=5")).send().await else { break };
            if r.status() == 200 {
                let Ok(v) = r.json::<Value>().await else { break };
                for m in v["messages"].as_array().into_iter().flatten() {
                    unknown.insert(m["transactionId"].as_str().unwrap().to_string());
                    let body = json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"], "status": "completed"});
                    let Ok(r) = api.c.post(api.s.url("/api/v1/ack")).json(&body).send().await else { break };
                    let Ok(a) = r.json::<Value>().await else { break };
                    let t = m["transactionId"].as_str().unwrap().to_string();
                    unknown.remove(&t);
                    if a[0]["success"] == true {
                        acked.insert(t);
                    }
                }
            }
        }
        if !api.s.running() {
            break;
        }
    }
    (queued, acked, unknown)
}

// Three tests of three phases each, so the test threads run them side by side.
#[tokio::test]
async fn a_crash_at_the_first_checkpoint_phases_loses_nothing() {
    crash_at(&PHASES[..3]).await;
}

#[tokio::test]
async fn a_crash_at_the_middle_checkpoint_phases_loses_nothing() {
    crash_at(&PHASES[3..6]).await;
}

#[tokio::test]
async fn a_crash_at_the_last_checkpoint_phases_loses_nothing() {
    crash_at(&PHASES[6..]).await;
}

async fn crash_at(phases: &[&str]) {
    for &phase in phases {
        let s = Server::start_with_env(
            &["--checkpoint-interval-secs", "1", "--partition-segment-mb", "1"],
            &[("BATON_FAILPOINT", phase)],
        );
        let mut api = Api { s, c: client() };
        api.configure("ret", json!({"retentionSeconds": 1})).await;
        // A lease open at the crash holds its partition until it expires.
        api.configure("keep", json!({"leaseTime": 1})).await;
        let (queued, acked, unknown) = load_until_death(&mut api).await;
        assert!(unknown.len() <= 5, "{phase}: one pop's acks at most are in doubt");
        let st = api.s.wait_exit(Duration::from_secs(30)).unwrap_or_else(|| panic!("{phase}: the server never died"));
        assert!(!st.success(), "{phase}: aborted, not exited: {st:?}");
        assert!(api.s.log().contains(&format!("failpoint {phase}")), "{phase}: died elsewhere:\n{}", api.s.log());
        assert!(!queued.is_empty(), "{phase}: nothing was pushed before the crash");
        api.s.clear_envs();
        api.s.restart();
        api.c = client();
        // New leases long enough for a hundred acks one by one on a loaded machine (a lease
        // open at the crash keeps the 1 s it was given).
        api.configure("keep", json!({"leaseTime": 60})).await;
        // Every answered push is there once; every ack holds (I6).
        let mut seen = BTreeSet::new();
        for _ in 0..10_000 {
            // Long enough for a lease the crash left open (1 s) to run out, and no longer.
            let (st, v) = api.get("/api/v1/pop/queue/keep?wait=true&timeout=1500&batch=100").await;
            if st == 204 {
                break;
            }
            assert_eq!(st, 200, "{phase}: {v}");
            let msgs = v["messages"].as_array().unwrap().clone();
            for m in &msgs {
                let t = m["transactionId"].as_str().unwrap().to_string();
                assert!(!acked.contains(&t), "{phase}: acked {t} delivered again");
                assert!(seen.insert(t.clone()), "{phase}: {t} delivered twice");
            }
            api.ack_ok(&msgs).await;
        }
        let lost: Vec<_> = queued.difference(&acked).filter(|t| !seen.contains(*t) && !unknown.contains(*t)).collect();
        assert!(lost.is_empty(), "{phase}: {} answered pushes lost, e.g. {:?}", lost.len(), lost.first());
        // A duplicate of an answered push is still refused (the dedup window survived).
        let first = queued.iter().next().unwrap();
        let r = api.push("keep", "p0", &[(first.as_str(), json!("again"))]).await;
        assert_eq!(r[0]["status"], "duplicate", "{phase}: {r:?}");
        assert!(api.s.terminate().success());
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(["check", "data"])
            .arg(&api.s.dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{phase}: check data after the crash and restart:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}
