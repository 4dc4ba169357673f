//! Each peer adapter against its real server, started by its own
//! `scripts/peers/<system>.sh` in a temp dir on free ports (so the scripts'
//! start/status/stop are exercised too): produce over several partitions,
//! consume and ack everything exactly once, then nothing is left; PostgreSQL
//! also runs the pipeline workload and its verifier.
//!
//! Ignored by default: they need the Debian packages (`scripts/peers/<system>.sh
//! install`). Run: `cargo test --release -p baton-bench --test peers -- --ignored`.

use baton_bench::peers::{nats::Nats, postgres::Postgres, rabbitmq::Rabbit, redis::RedisStreams};
use baton_bench::pipeline::{self, PipelineParams};
use baton_bench::spawn::free_port;
use baton_bench::target::{Msg, Target};
use bytes::Bytes;
use std::collections::HashSet;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// A server started by its peer script; stopped (and checked stopped) on drop.
struct Peer {
    script: PathBuf,
    dir: tempfile::TempDir,
    env: Vec<(String, String)>,
}

impl Peer {
    fn start(system: &str, env: &[(&str, String)]) -> Peer {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../scripts/peers/{system}.sh"));
        let dir = tempfile::Builder::new().prefix(&format!("bench-peer-{system}-")).tempdir().unwrap();
        // postgres and rabbitmq run as their own system users: they must reach the dir.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let p = Peer { script, dir, env: env.iter().map(|(k, v)| (k.to_string(), v.clone())).collect() };
        let out = p.run("start");
        assert!(out.status.success(), "{system}.sh start failed:\n{}", String::from_utf8_lossy(&out.stderr));
        let st = p.run("status");
        assert!(st.status.success(), "{system}.sh status after start: {}", String::from_utf8_lossy(&st.stdout));
        p
    }

    fn run(&self, cmd: &str) -> std::process::Output {
        Command::new("bash")
            .arg(&self.script)
            .arg(cmd)
            .env("PEERS_DIR", self.dir.path())
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .output()
            .unwrap()
    }

    fn stop(&self) {
        let out = self.run("stop");
        assert!(out.status.success(), "stop failed: {}", String::from_utf8_lossy(&out.stderr));
        assert!(!self.run("status").status.success(), "status still says running after stop");
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.run("stop");
    }
}

/// 3 partitions × 4 batches × 5 messages; every one consumed and acked once; then none left.
async fn round_trip<T: Target>(t: Arc<T>, queue: &str) {
    t.setup(queue, 3).await.unwrap();
    let payload = Bytes::from_static(b"0123456789abcdef");
    let mut sent = HashSet::new();
    for b in 0..4 {
        for p in 0..3u32 {
            let batch: Vec<Msg> = (0..5)
                .map(|i| Msg { partition: p, txid: format!("{queue}-{p}-{b}-{i}"), payload: payload.clone() })
                .collect();
            sent.extend(batch.iter().map(|m| m.txid.clone()));
            t.produce(batch).await.unwrap();
        }
    }
    let mut got = HashSet::new();
    for _ in 0..200 {
        if got.len() == sent.len() {
            break;
        }
        let d = t.consume(7).await.unwrap();
        assert!(d.len() <= 7, "consume(7) returned {}", d.len());
        for x in &d {
            assert!(got.insert(x.txid.clone()), "{} delivered twice", x.txid);
        }
        t.ack(d).await.unwrap();
    }
    assert_eq!(got, sent, "consumed set differs from produced set");
    // Everything was acked: nothing comes back.
    let again = t.consume(10).await.unwrap();
    assert!(
        again.is_empty(),
        "acked messages delivered again: {:?}",
        again.iter().map(|d| &d.txid).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (scripts/peers/redis.sh install)"]
async fn redis_streams_round_trip() {
    let port = free_port().unwrap();
    let peer = Peer::start("redis", &[("REDIS_PORT", port.to_string())]);
    let t = RedisStreams::connect(&format!("redis://127.0.0.1:{port}/"), 4, 300).await.unwrap();
    round_trip(Arc::new(t), "rt").await;
    peer.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nats-server (scripts/peers/nats.sh install)"]
async fn nats_jetstream_round_trip() {
    let (port, mport) = (free_port().unwrap(), free_port().unwrap());
    let peer = Peer::start("nats", &[("NATS_PORT", port.to_string()), ("NATS_MONITOR_PORT", mport.to_string())]);
    let t = Nats::connect(&format!("nats://127.0.0.1:{port}"), 300).await.unwrap();
    round_trip(Arc::new(t), "rt").await;
    peer.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs rabbitmq-server (scripts/peers/rabbitmq.sh install)"]
async fn rabbitmq_quorum_round_trip() {
    let (port, dist) = (free_port().unwrap(), free_port().unwrap());
    let peer = Peer::start(
        "rabbitmq",
        &[
            ("RABBITMQ_PORT", port.to_string()),
            ("RABBITMQ_DIST_PORT", dist.to_string()),
            ("RABBITMQ_NODE", format!("bench-test-{port}@localhost")),
        ],
    );
    let t = Rabbit::connect(&format!("amqp://guest:guest@127.0.0.1:{port}/%2f"), 4, 300).await.unwrap();
    round_trip(Arc::new(t), "rt").await;
    peer.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs postgresql (scripts/peers/postgres.sh install)"]
async fn postgres_queue_round_trip_and_pipeline() {
    let port = free_port().unwrap();
    let peer = Peer::start("postgres", &[("POSTGRES_PORT", port.to_string())]);
    let addr = format!("host=127.0.0.1 port={port} user=postgres dbname=postgres");
    let t = Arc::new(Postgres::connect(&addr, 4, 300).await.unwrap());
    round_trip(t.clone(), "rt").await;

    let pp = PipelineParams {
        name: "pipetest".into(),
        partitions: 3,
        count: 600,
        feed_batch: 25,
        size: 32,
        workers: 3,
        batch: 10,
        duration: Duration::from_secs(60),
        idle: Duration::from_secs(5),
        progress: false,
        rate: None,
        warmup: Duration::ZERO,
    };
    let m = pipeline::run(t, &pp).await.unwrap();
    assert_eq!(m.errors, 0, "{:?}", m.first_error);
    assert_eq!((m.fed, m.msgs), (600, 600));
    let v = m.verdict.expect("read-back worked");
    assert!(v.exactly_once(), "{}", v.summary());
    assert_eq!(v.order(), Some(true), "{}", v.summary());
    assert_eq!((v.outputs, v.remaining), (600, 0));
    peer.stop();
}
