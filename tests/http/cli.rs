//! The `baton push|pop|ack|queues|groups|tail` subcommands, run as the real
//! binary against a real server: what they print, what they leave settled on
//! the server, and how a refusal comes out (exit status 1, the server's code
//! and message on stderr).

use crate::common;

use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    /// stdout's JSON lines.
    fn lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
            .collect()
    }
}

fn baton(s: &common::Server, args: &[&str]) -> Run {
    baton_at(&s.url(""), args)
}

/// Run `baton ARGS` with `BATON_URL=url`; a run past 60 s is killed and fails
/// the test (a `tail` that never stops must not hang the suite).
fn baton_at(url: &str, args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(args)
        .env("BATON_URL", url)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("run baton");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("baton {args:?} did not finish in 60 s; stdout:\n{}", std::fs::read_to_string(&out).unwrap());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: std::fs::read_to_string(&out).unwrap(),
        stderr: std::fs::read_to_string(&err).unwrap(),
    }
}

fn ok(r: Run) -> Run {
    assert_eq!(r.code, 0, "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    r
}

#[test]
fn push_then_pop_with_ack_prints_the_messages_and_settles_them() {
    let s = common::Server::start();
    let r = ok(baton(&s, &["push", "orders", "--partition", "p1", "--txid", "a", r#"{"n":1}"#]));
    let pushed = r.lines();
    assert_eq!(pushed.len(), 1);
    assert_eq!(pushed[0]["status"], "queued", "{}", r.stdout);
    assert_eq!(pushed[0]["transactionId"], "a");
    ok(baton(&s, &["push", "orders", "--partition", "p1", "--txid", "b", r#""two""#]));
    // The same transaction id again is a duplicate, not a second message.
    let r = ok(baton(&s, &["push", "orders", "--partition", "p1", "--txid", "a", r#"{"n":1}"#]));
    assert_eq!(r.lines()[0]["status"], "duplicate");

    let r = ok(baton(&s, &["pop", "orders", "--batch", "10", "--ack"]));
    let msgs = r.lines();
    assert_eq!(msgs.len(), 2, "{}", r.stdout);
    assert_eq!(msgs[0]["transactionId"], "a");
    assert_eq!(msgs[0]["data"], serde_json::json!({"n": 1}));
    assert_eq!(msgs[1]["transactionId"], "b");
    assert_eq!(msgs[1]["data"], "two");
    assert_eq!(msgs[0]["partition"], "p1");

    // Acked: nothing is left to deliver, and the queue view says so.
    let r = ok(baton(&s, &["pop", "orders", "--batch", "10"]));
    assert_eq!(r.stdout, "", "acked messages came back");
    let r = ok(baton(&s, &["queues"]));
    let qs = r.lines();
    let q = qs.iter().find(|q| q["name"] == "orders").unwrap_or_else(|| panic!("no orders in {}", r.stdout));
    assert_eq!(q["depth"], 0, "{q}");
}

#[test]
fn pop_without_ack_leaves_the_lease_and_a_lease_ack_settles_it() {
    let s = common::Server::start();
    ok(baton(&s, &["push", "jobs", "--txid", "j1", "1"]));
    let r = ok(baton(&s, &["pop", "jobs"]));
    let m = &r.lines()[0];
    let (pid, lease) = (m["partitionId"].as_str().unwrap(), m["leaseId"].as_str().unwrap());
    // Leased: a second consumer gets nothing.
    assert_eq!(ok(baton(&s, &["pop", "jobs"])).stdout, "");
    let r = ok(baton(&s, &["ack", "--partition-id", pid, "--lease-id", lease, "--txid", "j1"]));
    assert_eq!(r.lines()[0]["success"], true, "{}", r.stdout);
    let r = ok(baton(&s, &["queues"]));
    assert_eq!(r.lines()[0]["depth"], 0, "{}", r.stdout);
}

#[test]
fn push_file_pushes_every_line_in_order_and_tail_count_reads_and_acks_them() {
    let s = common::Server::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.jsonl");
    let mut text: String = (0..250).map(|i| format!("{{\"i\":{i}}}\n")).collect();
    text.push('\n'); // a blank line is skipped, not an error
    std::fs::write(&file, text).unwrap();
    let r = ok(baton(&s, &["push", "feed", "--partition", "p", "--file", file.to_str().unwrap(), "--batch", "100"]));
    assert!(r.stderr.contains("250 pushed"), "{}", r.stderr);

    // --count stops there, in order, acking as it goes.
    let r = ok(baton(&s, &["tail", "feed", "--count", "120", "--batch", "50"]));
    let got: Vec<i64> = r.lines().iter().map(|m| m["data"]["i"].as_i64().unwrap()).collect();
    assert_eq!(got, (0..120).collect::<Vec<_>>());
    let r = ok(baton(&s, &["tail", "feed", "--count", "130"]));
    let got: Vec<i64> = r.lines().iter().map(|m| m["data"]["i"].as_i64().unwrap()).collect();
    assert_eq!(got, (120..250).collect::<Vec<_>>());
    assert_eq!(ok(baton(&s, &["pop", "feed"])).stdout, "", "tail acked what it printed");
}

#[test]
fn tail_in_a_group_acks_in_that_group_only() {
    let s = common::Server::start();
    for t in ["x", "y", "z"] {
        ok(baton(&s, &["push", "events", "--txid", t, r#""e""#]));
    }
    let r = ok(baton(&s, &["tail", "events", "--group", "audit", "--count", "3"]));
    let ids: Vec<String> = r.lines().iter().map(|m| m["transactionId"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids, ["x", "y", "z"]);
    let r = ok(baton(&s, &["groups"]));
    let audit = r
        .lines()
        .into_iter()
        .find(|g| g["name"] == "audit")
        .unwrap_or_else(|| panic!("no audit group in {}", r.stdout));
    assert_eq!(audit["totalLag"], 0, "{audit}");
    // Queue mode has its own position: the messages are all still there for it.
    let r = ok(baton(&s, &["pop", "events", "--batch", "10"]));
    assert_eq!(r.lines().len(), 3, "{}", r.stdout);
}

#[test]
fn a_refused_call_exits_1_with_the_servers_code_and_message() {
    let s = common::Server::start();
    let r = baton(&s, &["ack", "--partition-id", "not-an-id", "--txid", "a"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.stdout, "");
    assert!(r.stderr.contains("invalid_partition_id") && r.stderr.contains("HTTP 400"), "{}", r.stderr);
    assert!(r.stderr.contains("not-an-id"), "the server's message: {}", r.stderr);

    // Refused inside a 200: an ack under a lease that is not the live one.
    ok(baton(&s, &["push", "q", "--txid", "m", "1"]));
    let m = ok(baton(&s, &["pop", "q"])).lines().remove(0);
    let lease = m["leaseId"].as_str().unwrap();
    let other = format!("{}{}", &lease[..lease.len() - 1], if lease.ends_with('0') { '1' } else { '0' });
    let r =
        baton(&s, &["ack", "--partition-id", m["partitionId"].as_str().unwrap(), "--lease-id", &other, "--txid", "m"]);
    assert_eq!(r.code, 1, "stdout {} stderr {}", r.stdout, r.stderr);
    assert!(r.stderr.contains("lease_not_live"), "{}", r.stderr);

    // A payload the server will not store.
    let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
    let r = baton(&s, &["push", "q", &deep]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("bad_payload"), "{}", r.stderr);

    // Refused here, before anything is sent: not JSON.
    let r = baton(&s, &["push", "q", "not json"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("invalid_json"), "{}", r.stderr);
}

#[test]
fn a_file_line_over_the_bound_is_refused_and_nothing_of_its_batch_is_pushed() {
    let s = common::Server::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.jsonl");
    std::fs::write(&file, format!("1\n\"{}\"\n", "x".repeat(2000))).unwrap();
    let r = baton(&s, &["push", "b", "--file", file.to_str().unwrap(), "--max-line-bytes", "1000"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("line_too_long") && r.stderr.contains("line 2"), "{}", r.stderr);
    assert_eq!(ok(baton(&s, &["queues"])).stdout, "", "the batch holding line 1 was never sent");
}

#[test]
fn no_server_is_a_transport_error_with_exit_1() {
    let port = common::free_port();
    let r = baton_at(&format!("http://127.0.0.1:{port}"), &["queues"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("transport"), "{}", r.stderr);
}

#[test]
fn tail_follows_until_ctrl_c_and_exits_0() {
    let s = common::Server::start();
    let mut child = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["tail", "live"])
        .env("BATON_URL", s.url(""))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run baton tail");
    // SIGINT before tail has installed its handler would kill it by the default action.
    let status = format!("/proc/{}/status", child.id());
    let deadline = Instant::now() + Duration::from_secs(10);
    let handles_sigint = || {
        std::fs::read_to_string(&status)
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .is_some_and(|m| u64::from_str_radix(m.trim(), 16).unwrap_or(0) & (1 << (libc::SIGINT - 1)) != 0)
    };
    while !handles_sigint() {
        assert!(Instant::now() < deadline, "tail never installed its Ctrl-C handler");
        std::thread::sleep(Duration::from_millis(10));
    }
    ok(baton(&s, &["push", "live", "--txid", "l1", r#""hello""#]));
    // It prints what arrives while it follows.
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    let m: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(m["data"], "hello");
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let st = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("tail did not stop on SIGINT");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(st.code(), Some(0), "{st}");
    assert_eq!(ok(baton(&s, &["pop", "live"])).stdout, "", "tail acked what it printed");
}
