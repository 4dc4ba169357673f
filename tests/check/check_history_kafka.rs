//! `baton check history --spawn` with Kafka clients (`--kafka-clients`),
//! through the real binary against a real server: the history must hold
//! every kind of Kafka operation answered ok (idempotent and plain produces,
//! fetches that returned records, commits, offset fetches) and be judged OK,
//! with and without SIGKILLs (the clients reconnect, and resend a lost
//! idempotent batch unchanged); and a recorded history edited to show a
//! broken Kafka door (a record stored twice, a record lost, an offset fetch
//! that returns an overwritten commit) must be judged VIOLATION of that kind,
//! which proves the recorded fields are the ones the checker reads.

use crate::common;

use common::cli::{baton, Out};

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

/// One operation: its invocation and its completion line (None: never completed).
struct Op {
    inv: Value,
    end: Option<Value>,
}

impl Op {
    fn f(&self) -> &str {
        self.inv["f"].as_str().unwrap()
    }
    fn outcome(&self) -> &str {
        self.end.as_ref().map_or("open", |e| e["type"].as_str().unwrap())
    }
    fn t(&self) -> u64 {
        self.inv["t"].as_u64().unwrap()
    }
    fn comp(&self) -> Option<u64> {
        self.end.as_ref().filter(|e| e["type"] != "unknown").map(|e| e["t"].as_u64().unwrap())
    }
}

/// The operations in invocation order.
fn ops(h: &[Value]) -> Vec<Op> {
    let mut out: Vec<Op> = Vec::new();
    let mut open: HashMap<u64, usize> = HashMap::new();
    for l in h {
        match l["type"].as_str().unwrap() {
            "invoke" => {
                open.insert(l["id"].as_u64().unwrap(), out.len());
                out.push(Op { inv: l.clone(), end: None });
            }
            "ok" | "failed" | "unknown" => {
                let i = open.remove(&l["id"].as_u64().unwrap()).expect("a completion after its invocation");
                out[i].end = Some(l.clone());
            }
            _ => {}
        }
    }
    out
}

fn count(ops: &[Op], pred: impl Fn(&Op) -> bool) -> usize {
    ops.iter().filter(|o| pred(o)).count()
}

/// Record a short history with Kafka clients (plus `extra` flags) into a temp dir.
fn record(name: &str, extra: &[&str]) -> (Out, Vec<Value>, tempfile::TempDir, std::time::Duration) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(format!("{name}.jsonl"));
    let mut args = vec!["check", "history", "--spawn", "--clients", "2", "--partitions", "2", "--lease-ms", "1000"];
    args.extend_from_slice(extra);
    let o = out.to_str().unwrap().to_string();
    args.extend_from_slice(&["--out", &o, "--json"]);
    let t = std::time::Instant::now();
    let r = baton(&args);
    let wall = t.elapsed();
    let h = if out.exists() { lines(&out) } else { Vec::new() };
    (r, h, dir, wall)
}

fn judge(dir: &Path, name: &str, h: &[Value]) -> (i32, Value) {
    let p = dir.join(format!("{name}.jsonl"));
    write(&p, h);
    let r = baton(&["check", "history", "--check", p.to_str().unwrap(), "--json"]);
    let v: Value = serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}\n{}", r.stdout, r.stderr));
    (r.code, v)
}

fn kinds(v: &Value) -> Vec<String> {
    v["violations"].as_array().unwrap().iter().map(|x| x["kind"].as_str().unwrap().to_string()).collect()
}

/// The Kafka operation mix every recorded history must show, answered ok.
fn assert_kafka_mix(o: &[Op], at_least: usize) {
    let ok = |f: &'static str| move |x: &Op| x.f() == f && x.outcome() == "ok";
    let idem = count(o, |x| ok("kafka_produce")(x) && x.inv["producer"].is_object());
    let plain = count(o, |x| ok("kafka_produce")(x) && x.inv.get("producer").is_none());
    let fetched =
        count(o, |x| ok("kafka_fetch")(x) && !x.end.as_ref().unwrap()["records"].as_array().unwrap().is_empty());
    let commits = count(o, ok("kafka_commit"));
    let offset_fetches = count(o, ok("kafka_offset_fetch"));
    let committed = count(o, |x| ok("kafka_offset_fetch")(x) && x.end.as_ref().unwrap()["offset"].as_i64() >= Some(0));
    let got = [idem, plain, fetched, commits, offset_fetches, committed];
    assert!(
        got.iter().all(|n| *n >= at_least),
        "idempotent, plain, fetched, commits, offset fetches, committed: {got:?}"
    );
}

#[test]
fn kafka_operations_are_recorded_and_judged_ok() {
    let (r, h, _dir, wall) = record("plain", &["--duration", "4", "--kafka-clients", "2"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let v: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["status"], "OK", "{}", r.stdout);
    assert!(wall.as_secs() < 40, "took {wall:?}");
    let o = ops(&h);
    assert_kafka_mix(&o, 50);
    // Two Kafka clients, process ids after the two HTTP clients and the drain.
    let procs: std::collections::BTreeSet<u64> =
        o.iter().filter(|x| x.f().starts_with("kafka_")).map(|x| x.inv["process"].as_u64().unwrap()).collect();
    assert_eq!(procs.into_iter().collect::<Vec<_>>(), vec![3, 4]);
    // Every record answered ok is in the topic's final log, read with its payload: the
    // checker's `lost` rule has something to hold it to.
    let topic = o.iter().find(|x| x.f() == "kafka_produce").unwrap().inv["topic"].as_str().unwrap().to_string();
    let logged: std::collections::HashSet<&str> = h
        .iter()
        .filter(|l| l["type"] == "final_log" && l["queue"] == topic.as_str())
        .flat_map(|l| l["entries"].as_array().unwrap())
        .map(|e| e["payload"].as_str().unwrap())
        .collect();
    let produced: Vec<&str> = o
        .iter()
        .filter(|x| x.f() == "kafka_produce" && x.outcome() == "ok")
        .flat_map(|x| x.inv["records"].as_array().unwrap())
        .map(|r| r["payload"].as_str().unwrap())
        .collect();
    assert!(produced.len() >= 100 && produced.iter().all(|p| logged.contains(p)), "{} produced", produced.len());
}

#[test]
fn kafka_clients_reconnect_across_kills_and_resend_a_lost_idempotent_batch_unchanged() {
    let (r, h, _dir, wall) = record(
        "kill",
        &[
            "--duration",
            "7",
            "--kafka-clients",
            "2",
            "--nemesis",
            "kill",
            "--nemesis-interval-ms",
            "700",
            "--seed",
            "3",
        ],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(wall.as_secs() < 50, "took {wall:?}");
    let at = |phase: &str| -> Vec<u64> {
        h.iter().filter(|l| l["type"] == "nemesis" && l["phase"] == phase).map(|l| l["t"].as_u64().unwrap()).collect()
    };
    let (starts, ends) = (at("start"), at("end"));
    assert!(ends.len() >= 3, "{} kills", ends.len());
    let o = ops(&h);
    assert_kafka_mix(&o, 20);
    // Between one restart and the next kill, the Kafka clients were producing again.
    for (end, next) in ends.iter().zip(&starts[1..]) {
        let between = count(&o, |x| {
            x.f() == "kafka_produce" && x.outcome() == "ok" && x.t() > *end && x.comp().is_some_and(|c| c < *next)
        });
        assert!(between >= 5, "{between} ok produces between the restart at {end} and the kill at {next}");
    }
    // A request cut by a kill is unknown, never failed; an unknown idempotent batch is
    // the client's next request, unchanged (same producer, sequence and records).
    let kafka: Vec<&Op> = o.iter().filter(|x| x.f().starts_with("kafka_")).collect();
    let unknown = kafka.iter().filter(|x| x.outcome() == "unknown").count();
    assert!(unknown >= 1, "no Kafka request was in flight at any kill");
    let refused = kafka.iter().filter(|x| x.outcome() == "failed" && matches!(x.f(), "kafka_produce" | "kafka_commit"));
    assert_eq!(refused.count(), 0, "a kill refuses nothing: only a refusal is failed");
    let mut resent = 0;
    for (i, x) in kafka.iter().enumerate() {
        if x.f() != "kafka_produce" || x.outcome() != "unknown" || !x.inv["producer"].is_object() {
            continue;
        }
        let me = &x.inv["process"];
        let Some(next) = kafka[i + 1..].iter().find(|y| y.inv["process"] == *me) else { continue };
        assert_eq!(next.f(), "kafka_produce", "{}", next.inv);
        for k in ["producer", "records", "partition", "topic"] {
            assert_eq!(next.inv[k], x.inv[k], "{k}: {} then {}", x.inv, next.inv);
        }
        resent += 1;
    }
    assert!(resent >= 1, "no idempotent produce was resent after a lost answer");
}

#[test]
fn kafka_clients_zero_records_no_kafka_operation() {
    let (r, h, _dir, _) = record("none", &["--duration", "2", "--kafka-clients", "0"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let o = ops(&h);
    assert!(count(&o, |x| x.f() == "push") >= 10);
    assert_eq!(count(&o, |x| x.f().starts_with("kafka_")), 0);
}

#[test]
fn a_recorded_kafka_history_edited_to_show_a_broken_door_is_a_violation() {
    let (r, h, dir, _) = record("edit", &["--duration", "3", "--kafka-clients", "2", "--seed", "11"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let o = ops(&h);
    let topic = o.iter().find(|x| x.f() == "kafka_produce").unwrap().inv["topic"].as_str().unwrap().to_string();
    let is_log = |l: &Value| l["type"] == "final_log" && l["queue"] == topic.as_str();

    // (1) A record of an idempotent produce answered ok stored twice: appended again at
    // the end of its partition's log.
    let idem = o
        .iter()
        .find(|x| x.f() == "kafka_produce" && x.outcome() == "ok" && x.inv["producer"].is_object())
        .expect("an idempotent produce answered ok");
    let payload = idem.inv["records"][0]["payload"].clone();
    let part = idem.inv["partition"].as_u64().unwrap().to_string();
    let end = h
        .iter()
        .filter(|l| is_log(l) && l["partition"] == part.as_str())
        .flat_map(|l| l["entries"].as_array().unwrap())
        .map(|e| e["offset"].as_u64().unwrap() + 1)
        .max()
        .unwrap();
    let mut twice = h.clone();
    twice.push(json!({"type": "final_log", "queue": topic, "partition": part, "entries": [{"offset": end, "payload": payload}]}));
    let (code, v) = judge(dir.path(), "twice", &twice);
    assert_eq!(code, 1, "{v}");
    assert!(
        v["violations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["kind"] == "kafka_idempotent_duplicate" && x["txid"] == payload),
        "{:?}",
        kinds(&v)
    );

    // (2) The same record gone from the final log: lost.
    let mut gone = h.clone();
    for l in gone.iter_mut().filter(|l| is_log(l)) {
        l["entries"].as_array_mut().unwrap().retain(|e| e["payload"] != payload);
    }
    let (code, v) = judge(dir.path(), "gone", &gone);
    assert_eq!(code, 1, "{v}");
    assert!(
        v["violations"].as_array().unwrap().iter().any(|x| x["kind"] == "lost" && x["txid"] == payload),
        "{:?}",
        kinds(&v)
    );

    // (3) An offset fetch that returns a commit certainly overwritten before it was
    // invoked: every commit of that value was answered ok, and after it another value's
    // commit was invoked and answered, all before the fetch.
    let key = |x: &Op| (x.inv["group"].clone(), x.inv["partition"].clone());
    let commits: Vec<&Op> = o.iter().filter(|x| x.f() == "kafka_commit" && x.outcome() != "failed").collect();
    let mut edit = None;
    'fetches: for (i, f) in o.iter().enumerate() {
        if f.f() != "kafka_offset_fetch" || f.outcome() != "ok" {
            continue;
        }
        let mine: Vec<&Op> = commits.iter().copied().filter(|c| key(c) == key(f)).collect();
        for c in &mine {
            let v = c.inv["offset"].as_i64().unwrap();
            if v == f.end.as_ref().unwrap()["offset"].as_i64().unwrap() {
                continue;
            }
            let overwritten = |w: &&Op| {
                w.comp().is_some_and(|wc| {
                    mine.iter().any(|x| {
                        x.inv["offset"].as_i64() != Some(v)
                            && x.outcome() == "ok"
                            && x.t() > wc
                            && x.comp().is_some_and(|xc| xc < f.t())
                    })
                })
            };
            let same: Vec<&Op> = mine
                .iter()
                .copied()
                .filter(|w| w.inv["offset"].as_i64() == Some(v) && w.t() < f.comp().unwrap())
                .collect();
            if !same.is_empty() && same.iter().all(overwritten) {
                edit = Some((i, v));
                break 'fetches;
            }
        }
    }
    let (i, stale) = edit.expect("an offset fetch after a commit was overwritten");
    let id = o[i].inv["id"].clone();
    let mut back = h.clone();
    let l = back.iter_mut().find(|l| l["type"] == "ok" && l["id"] == id).unwrap();
    l["offset"] = json!(stale);
    let (code, v) = judge(dir.path(), "back", &back);
    assert_eq!(code, 1, "{v}");
    assert!(
        v["violations"].as_array().unwrap().iter().any(|x| x["kind"] == "kafka_commit_backwards"),
        "{:?}",
        kinds(&v)
    );

    // (4) A fetch that delivered another record than the log holds at that offset: phantom.
    let f = o
        .iter()
        .find(|x| {
            x.f() == "kafka_fetch"
                && x.outcome() == "ok"
                && !x.end.as_ref().unwrap()["records"].as_array().unwrap().is_empty()
        })
        .unwrap();
    let id = f.inv["id"].clone();
    let mut wrong = h.clone();
    let l = wrong.iter_mut().find(|l| l["type"] == "ok" && l["id"] == id).unwrap();
    l["records"][0]["payload"] = json!("never-produced");
    let (code, v) = judge(dir.path(), "wrong", &wrong);
    assert_eq!(code, 1, "{v}");
    assert!(kinds(&v).iter().any(|k| k == "phantom"), "{:?}", kinds(&v));

    // The unedited history is OK.
    let (code, v) = judge(dir.path(), "same", &h);
    assert_eq!(code, 0, "{v}");
}
