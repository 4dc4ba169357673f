//! The Kafka adapters against a real Baton Kafka listener: the release
//! binary (`BATON_BIN`, else `target/release/baton`; `scripts/test` builds it
//! first) started on free loopback ports with its own data directory.

use super::e2e;
use super::txn::KafkaPipeline;
use super::{Flavor, KafkaTarget};
use crate::pipeline::PipelineTarget;
use crate::spawn::free_port;
use crate::target::{Msg, Target};
use bytes::Bytes;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Server {
    child: Child,
    kafka: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn baton_bin() -> PathBuf {
    let p = std::env::var_os("BATON_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/release/baton"));
    assert!(p.exists(), "{} does not exist: run `cargo build --release --bins` first", p.display());
    p
}

fn start() -> Server {
    let dir = tempfile::Builder::new().prefix("baton-kafka-live-").tempdir().unwrap();
    let (kp, hp) = (free_port().unwrap(), free_port().unwrap());
    let kafka = format!("127.0.0.1:{kp}");
    let child = Command::new(baton_bin())
        .args(["serve", "--kafka-addr", &kafka, "--http-addr", &format!("127.0.0.1:{hp}"), "--data-dir"])
        .arg(dir.path().join("data"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start baton serve");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(&kafka).is_err() {
        assert!(Instant::now() < deadline, "baton's Kafka listener did not open {kafka} in 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    Server { child, kafka, _dir: dir }
}

fn msgs(prefix: &str, n: u32, partitions: u32) -> Vec<Vec<Msg>> {
    (0..n)
        .map(|i| Msg { partition: i % partitions, txid: format!("{prefix}-{i}"), payload: Bytes::from_static(b"xyz") })
        .collect::<Vec<_>>()
        .chunks(10)
        .map(|c| c.to_vec())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_consume_commit_e2e_and_the_transactional_pipeline_on_baton() {
    let s = start();

    // Produce 100 over 2 partitions; consume them all back exactly once.
    let t = KafkaTarget::new(Flavor::BatonKafka, &s.kafka, 1, 500, 2).unwrap();
    t.setup("live", 2).await.unwrap();
    let mut sent = BTreeSet::new();
    for b in msgs("m", 100, 2) {
        sent.extend(b.iter().map(|m| m.txid.clone()));
        t.produce(b).await.unwrap();
    }
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while got.len() < 100 && Instant::now() < deadline {
        let d = t.consume(30).await.unwrap();
        got.extend(d.iter().map(|d| d.txid.clone()));
        t.ack(d).await.unwrap();
    }
    let distinct: BTreeSet<String> = got.iter().cloned().collect();
    assert_eq!(got.len(), 100, "received {} of 100", got.len());
    assert_eq!(distinct, sent);

    // The acks were offset commits: a new member of the group (the old ones
    // closed first, or the group would wait for them to rejoin) starts after them.
    drop(t);
    let again = KafkaTarget::new(Flavor::BatonKafka, &s.kafka, 1, 1500, 1).unwrap();
    again.setup("live", 2).await.unwrap();
    let left = again.consume(100).await.unwrap();
    assert!(left.is_empty(), "committed messages delivered again: {:?}", left.len());
    drop(again);

    // End to end: everything produced is received once.
    let t = Arc::new(KafkaTarget::new(Flavor::BatonKafka, &s.kafka, 1, 500, 2).unwrap());
    t.setup("live-e2e", 2).await.unwrap();
    let m = e2e::run(
        t,
        4,
        2,
        64,
        2,
        200,
        Duration::from_secs(1),
        Duration::from_secs(2),
        Duration::from_secs(10),
        50,
        false,
    )
    .await;
    assert_eq!(m.errors, 0, "{:?}", m.first_error);
    assert_eq!((m.offered, m.produced, m.received, m.duplicates), (200, 200, 200, 0));

    // The exactly-once pipeline over Kafka transactions (D48): every input consumed once,
    // one output each, nothing left.
    let p = KafkaPipeline::new(Flavor::BatonKafka, &s.kafka, 1, 1).unwrap();
    p.setup("live-txn", 2).await.unwrap();
    let mut fed = BTreeSet::new();
    for b in msgs("t", 40, 2) {
        fed.extend(b.iter().map(|m| m.txid.clone()));
        p.feed(b).await.unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut done = 0;
    while done < 40 {
        assert!(Instant::now() < deadline, "the pipeline took {done} of 40 inputs in 60 s");
        done += p.step(10).await.unwrap();
    }
    let outs: Vec<String> = p.outputs().await.unwrap().into_iter().map(|o| o.txid).collect();
    assert_eq!(outs.len(), 40, "one output per input, no duplicate");
    assert_eq!(outs.into_iter().collect::<BTreeSet<_>>(), fed);
    assert!(p.remaining_inputs().await.unwrap().is_empty());
}
