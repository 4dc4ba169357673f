//! `baton check history --spawn` / `--addr`: the recorder through the real
//! binary against a real server. A CI-sized campaign under SIGKILL and SIGSTOP
//! must be judged OK with every kind of operation and fault in it; a recorded
//! history edited to show a broken broker (an ok push dropped from the final
//! log, a delivery after an ok ack) must be judged VIOLATION of that kind;
//! recording against a server the test started (`--addr`) works too.

use crate::common;

use common::cli::{baton, record_ok};

use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;

fn lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn write(p: &Path, v: &[Value]) {
    let s: Vec<String> = v.iter().map(Value::to_string).collect();
    std::fs::write(p, s.join("\n") + "\n").unwrap();
}

/// Operations by name and outcome (`ok`, `failed`, `unknown`, `open`).
fn outcomes(v: &[Value]) -> HashMap<(String, String), u64> {
    let mut f = HashMap::new();
    let mut out = HashMap::new();
    for l in v {
        match l["type"].as_str().unwrap() {
            "invoke" => {
                f.insert(l["id"].as_u64().unwrap(), l["f"].as_str().unwrap().to_string());
            }
            k @ ("ok" | "failed" | "unknown") => {
                let name = f.remove(&l["id"].as_u64().unwrap()).expect("a completion after its invocation");
                *out.entry((name, k.to_string())).or_default() += 1;
            }
            _ => {}
        }
    }
    for name in f.into_values() {
        *out.entry((name, "open".to_string())).or_default() += 1;
    }
    out
}

fn count(o: &HashMap<(String, String), u64>, f: &str, k: &str) -> u64 {
    o.get(&(f.to_string(), k.to_string())).copied().unwrap_or(0)
}

#[test]
fn a_campaign_under_kill_and_stop_is_judged_ok() {
    let dir = tempfile::tempdir().unwrap();
    let rec = record_ok(
        dir.path(),
        "campaign-failed",
        &[
            "--duration",
            "20",
            "--clients",
            "8",
            "--partitions",
            "3",
            "--lease-ms",
            "2000",
            "--nemesis",
            "kill,stop",
            "--nemesis-interval-ms",
            "1500",
            "--seed",
            "7",
        ],
    );
    let (out, keep) = (&rec.history, || rec.keep());
    assert!(rec.wall.as_secs() < 60, "the campaign took {:?}", rec.wall);

    let h = lines(out);
    let o = outcomes(&h);
    for (f, at_least) in [("push", 300), ("pop", 300), ("ack", 300), ("extend", 30), ("txn", 50)] {
        assert!(count(&o, f, "ok") >= at_least, "{f}: {:?} (keep {})", o, keep());
    }
    // Refusals and lost answers happen (stale acks refused, requests cut by the faults).
    assert!(count(&o, "ack", "failed") >= 5, "{o:?}");
    assert!(o.iter().filter(|((_, k), _)| k == "unknown").map(|(_, n)| n).sum::<u64>() >= 5, "{o:?}");
    let dup = h.iter().filter(|l| l["statuses"].as_array().is_some_and(|s| s.iter().any(|x| x == "duplicate")));
    assert!(dup.count() >= 10, "pushes of the same message again answered duplicate");
    let acks = |st: &str| h.iter().filter(|l| l["f"] == "ack" && l["acks"][0]["status"] == st).count();
    for st in ["completed", "failed", "retry", "dlq"] {
        assert!(acks(st) >= 10, "acks {st}: {}", acks(st));
    }
    let faults = |name: &str, phase: &str| {
        h.iter().filter(|l| l["type"] == "nemesis" && l["fault"] == name && l["phase"] == phase).count()
    };
    for name in ["kill", "stop"] {
        assert!(faults(name, "start") >= 2 && faults(name, "end") == faults(name, "start"), "{name} windows");
    }
    let kinds = |k: &str| h.iter().filter(|l| l["type"] == k).count();
    // 2 queues x 3 partitions, x 2 groups for waiting; one DLQ read per queue.
    assert!(kinds("final_log") >= 6 && kinds("final_waiting") >= 10 && kinds("final_dlq") == 2);
    assert!(h.iter().any(|l| l["type"] == "final_dlq" && l["entries"].as_array().is_some_and(|e| !e.is_empty())));
    eprintln!("campaign: {o:?} in {:?}", rec.wall);
}

/// A short recording without faults, judged OK; the history is returned to be edited.
fn short_recording(dir: &Path) -> Vec<Value> {
    let out = dir.join("short.jsonl");
    let r = baton(&[
        "check",
        "history",
        "--spawn",
        "--duration",
        "3",
        "--clients",
        "4",
        "--partitions",
        "2",
        "--lease-ms",
        "1000",
        "--seed",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    lines(&out)
}

#[test]
fn a_history_edited_to_show_a_broken_broker_is_a_violation_of_that_kind() {
    let dir = tempfile::tempdir().unwrap();
    let h = short_recording(dir.path());

    // 1. A push answered `queued` whose message the final log no longer holds: lost.
    let queued: std::collections::HashSet<u64> = h
        .iter()
        .filter(|l| l["type"] == "ok" && l["statuses"].as_array().is_some_and(|s| s.iter().all(|x| x == "queued")))
        .map(|l| l["id"].as_u64().unwrap())
        .collect();
    let victim = h
        .iter()
        .find(|l| l["f"] == "push" && queued.contains(&l["id"].as_u64().unwrap()))
        .map(|l| (l["queue"].clone(), l["messages"][0]["partition"].clone(), l["messages"][0]["txid"].clone()))
        .expect("a push answered queued");
    let mut dropped = 0;
    let lost: Vec<Value> = h
        .iter()
        .cloned()
        .map(|mut l| {
            if l["type"] == "final_log" && l["queue"] == victim.0 && l["partition"] == victim.1 {
                let e = l["entries"].as_array_mut().unwrap();
                let n = e.len();
                e.retain(|x| x["txid"] != victim.2);
                dropped += n - e.len();
            }
            l
        })
        .collect();
    assert_eq!(dropped, 1, "{victim:?}");
    let p = dir.path().join("lost.jsonl");
    write(&p, &lost);
    let r = baton(&["check", "history", "--check", p.to_str().unwrap(), "--json"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let v: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert!(v["violation_counts"]["lost"].as_u64().unwrap() >= 1, "{}", r.stdout);
    let txid = victim.2.as_str().unwrap();
    assert!(v["violations"].as_array().unwrap().iter().any(|x| x["kind"] == "lost" && x["txid"] == txid));

    // 2. A message delivered again by a pop invoked after its `completed` ack was answered ok.
    let by_id: HashMap<u64, &Value> =
        h.iter().filter(|l| l["type"] == "invoke").map(|l| (l["id"].as_u64().unwrap(), l)).collect();
    let pops: HashMap<&str, (&Value, &Value)> = h
        .iter()
        .filter(|l| l["type"] == "ok" && l["lease"].is_string())
        .map(|l| (l["lease"].as_str().unwrap(), (by_id[&l["id"].as_u64().unwrap()], l)))
        .collect();
    let (ack_ok, inv) = h
        .iter()
        .filter(|l| l["type"] == "ok")
        .filter_map(|l| by_id.get(&l["id"].as_u64().unwrap()).map(|i| (l, *i)))
        .find(|(_, i)| i["f"] == "ack" && i["acks"][0]["status"] == "completed")
        .expect("an ack completed answered ok");
    let lease = inv["lease"].as_str().unwrap();
    let txid = inv["acks"][0]["txid"].clone();
    let (pop_inv, pop_ok) = pops[lease];
    let msg = pop_ok["messages"].as_array().unwrap().iter().find(|m| m["txid"] == txid).unwrap().clone();
    let t = ack_ok["t"].as_u64().unwrap() + 1000;
    let mut again = h.clone();
    let mut invoke = json!({"type": "invoke", "id": 999_999_999u64, "t": t, "process": 99, "f": "pop",
        "queue": pop_inv["queue"], "consumer": "mutant", "batch": 1});
    if pop_inv["group"].is_string() {
        invoke["group"] = pop_inv["group"].clone();
    }
    again.push(invoke);
    again.push(json!({"type": "ok", "id": 999_999_999u64, "t": t + 500, "process": 99,
        "partition": pop_ok["partition"], "lease": "mutant-lease", "messages": [msg]}));
    let p = dir.path().join("again.jsonl");
    write(&p, &again);
    let r = baton(&["check", "history", "--check", p.to_str().unwrap(), "--json"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let v: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert!(
        v["violations"].as_array().unwrap().iter().any(|x| x["kind"] == "redelivered_after_ack" && x["txid"] == txid),
        "{}",
        r.stdout
    );

    // The unedited history is OK.
    let p = dir.path().join("same.jsonl");
    write(&p, &h);
    assert_eq!(baton(&["check", "history", "--check", p.to_str().unwrap()]).code, 0);
}

#[test]
fn recording_against_a_running_server_with_addr() {
    let s = common::Server::start_with(&["--kafka-addr", "127.0.0.1:0"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("addr.jsonl");
    let url = format!("http://127.0.0.1:{}", s.port);
    let r = baton(&[
        "check",
        "history",
        "--addr",
        &url,
        "--duration",
        "3",
        "--clients",
        "3",
        "--lease-ms",
        "1000",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.starts_with("verdict                     OK"), "{}", r.stdout);
    let o = outcomes(&lines(&out));
    assert!(count(&o, "push", "ok") >= 20 && count(&o, "pop", "ok") >= 20, "{o:?}");
    // No faults against a server we did not start.
    assert!(!lines(&out).iter().any(|l| l["type"] == "nemesis"));
    // --nemesis needs --spawn.
    let r = baton(&["check", "history", "--addr", &url, "--nemesis", "kill"]);
    assert_ne!(r.code, 0);
}
