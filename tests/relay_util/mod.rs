//! The outbox relay tests' shared parts (tests/relay/relay.rs, tests/relay/relay_kafka.rs): a
//! private PostgreSQL (scripts/peers/postgres.sh), `baton relay` children killed on
//! drop, inserting events the way an application must (one aggregate's events under
//! its lock) and waiting for them to be delivered.
#![allow(dead_code)]

use crate::common::{free_port, Server};
use baton_client::kafka::{murmur2_partition, KafkaConn, SaslPlain};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const BUCKETS: &str = "64";

/// A private PostgreSQL in a temp dir the `postgres` user can reach, stopped on drop.
pub struct Pg {
    pub dir: tempfile::TempDir,
    pub port: u16,
    /// POSTGRES_OPTS of every start.
    pub opts: String,
}

impl Pg {
    pub fn start() -> Pg {
        Pg::start_with(|_| String::new())
    }

    /// A PostgreSQL started with more server settings (`POSTGRES_OPTS`), which `opts`
    /// writes given the directory (to place files there first).
    pub fn start_with(opts: impl FnOnce(&std::path::Path) -> String) -> Pg {
        let dir = tempfile::Builder::new().prefix("baton-relay-pg").tempdir_in("/tmp").expect("temp dir");
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let port = free_port();
        let opts = opts(dir.path());
        let pg = Pg { dir, port, opts };
        let st = pg.script("start");
        assert!(st.status.success(), "postgres.sh start: {}", String::from_utf8_lossy(&st.stderr));
        pg
    }

    pub fn script(&self, cmd: &str) -> std::process::Output {
        Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/peers/postgres.sh"))
            .arg(cmd)
            .env("PEERS_DIR", self.dir.path())
            .env("POSTGRES_PORT", self.port.to_string())
            .env("POSTGRES_OPTS", &self.opts)
            .output()
            .expect("run postgres.sh")
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    pub async fn client(&self) -> tokio_postgres::Client {
        let (c, conn) = tokio_postgres::connect(&self.url(), tokio_postgres::NoTls).await.expect("connect to postgres");
        tokio::spawn(conn);
        c
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        let _ = self.script("stop");
    }
}

/// A `baton relay run` child, killed on drop.
pub struct Relay {
    pub child: Option<Child>,
    pub metrics: u16,
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Relay {
    pub fn start(pg: &Pg, baton: &Server, id: &str, extra: &[&str]) -> Relay {
        Relay::start_to(pg, &["--to", &baton.url("")], id, extra)
    }

    /// Publish to the Baton at `url` (a cluster member, say).
    pub fn start_url(pg: &Pg, url: &str, id: &str, extra: &[&str]) -> Relay {
        Relay::start_to(pg, &["--to", url], id, extra)
    }

    /// Kafka mode: publish into the Kafka listener at `kafka` (host:port).
    pub fn start_kafka(pg: &Pg, kafka: &str, id: &str, extra: &[&str]) -> Relay {
        Relay::start_to(pg, &["--to-kafka", kafka], id, extra)
    }

    fn start_to(pg: &Pg, to: &[&str], id: &str, extra: &[&str]) -> Relay {
        Relay::start_pg(&pg.url(), to, id, extra)
    }

    /// A relay reaching PostgreSQL by `pg_url` (TLS settings in it, say).
    pub fn start_pg(pg_url: &str, to: &[&str], id: &str, extra: &[&str]) -> Relay {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("relay.log");
        let metrics = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(["relay", "run", "--pg", pg_url, "--relay-id", id])
            .args(to)
            .args(["--buckets", BUCKETS, "--poll-ms", "100"])
            .args(["--metrics-addr", &format!("127.0.0.1:{metrics}")])
            .args(if extra.contains(&"--lease-secs") { &[][..] } else { &["--lease-secs", "2"][..] })
            .args(extra)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("spawn baton relay run");
        Relay { child: Some(child), metrics, log, _dir: dir }
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().expect("running").id() as i32
    }

    pub fn signal(&self, sig: i32) {
        unsafe { libc::kill(self.pid(), sig) };
    }

    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Wait until this relay holds `n` buckets.
    pub async fn wait_buckets(&self, n: u32) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while self.metric("baton_relay_buckets_owned").await != n as f64 {
            assert!(Instant::now() < deadline, "relay never held {n} buckets; log:\n{}", self.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A relay started again under its id holds all `n` buckets well within its `lease`
    /// (a third of it): it took its own back instead of waiting them out (D64).
    pub async fn takes_its_buckets_back(&self, n: u32, lease: Duration) {
        let restarted = Instant::now();
        while self.metric("baton_relay_buckets_owned").await < n as f64 {
            assert!(
                restarted.elapsed() < lease / 3,
                "the restarted relay waits for its own {lease:?} leases:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Wait until this relay delivered something (at most `within`).
    pub async fn wait_delivered_some(&self, within: Duration) {
        let deadline = Instant::now() + within;
        while self.metric("baton_relay_delivered_total").await < 1.0 {
            assert!(Instant::now() < deadline, "nothing delivered:\n{}", self.log());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub async fn metric(&self, name: &str) -> f64 {
        // The relay may still be starting (init, connections) when first asked.
        let deadline = Instant::now() + Duration::from_secs(10);
        let t = loop {
            match reqwest::get(format!("http://127.0.0.1:{}/metrics", self.metrics)).await {
                Ok(r) => break r.text().await.unwrap(),
                Err(e) if Instant::now() > deadline => panic!("relay metrics: {e}; log:\n{}", self.log()),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        };
        prom_value(&t, name).unwrap_or_else(|| panic!("no {name} in {t}"))
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if let Some(c) = &self.child {
            unsafe { libc::kill(c.id() as i32, libc::SIGCONT) };
        }
        self.kill9();
    }
}

pub fn relay_cli(pg: &Pg, args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["relay"])
        .args(args)
        .args(["--pg", &pg.url()])
        .output()
        .unwrap();
    assert!(o.status.success(), "baton relay {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn init(pg: &Pg) {
    let out = relay_cli(pg, &["init", "--buckets", BUCKETS]);
    assert!(out.contains("\"buckets\":64"), "{out}");
}

/// Insert `n` events of one aggregate, each in its own transaction under the aggregate's lock.
pub async fn insert(c: &tokio_postgres::Client, agg: &str, n: usize, pause: Duration) {
    for i in 0..n {
        c.batch_execute("BEGIN").await.unwrap();
        c.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&agg]).await.unwrap();
        c.execute(
            "INSERT INTO baton_outbox (aggregate_type, aggregate_id, event_type, payload) \
             VALUES ('order', $1, 'step', jsonb_build_object('i', $2::int))",
            &[&agg, &(i as i32)],
        )
        .await
        .unwrap();
        c.batch_execute("COMMIT").await.unwrap();
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }
}

/// `aggs` aggregates × `n` events, each aggregate from its own connection, all at once.
pub async fn insert_all(pg: &Pg, aggs: usize, n: usize, pause: Duration) {
    let mut tasks = Vec::new();
    for a in 0..aggs {
        let c = pg.client().await;
        tasks.push(tokio::spawn(async move { insert(&c, &format!("agg-{a}"), n, pause).await }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

pub async fn wait_delivered(pg: &tokio_postgres::Client, expect: i64, within: Duration, logs: &dyn Fn() -> String) {
    let deadline = Instant::now() + within;
    loop {
        let r = pg
            .query_one("SELECT count(*) FILTER (WHERE status = 'delivered'), count(*) FROM baton_outbox", &[])
            .await
            .unwrap();
        let (d, all): (i64, i64) = (r.get(0), r.get(1));
        if d == expect && all == expect {
            return;
        }
        assert!(Instant::now() < deadline, "{d} of {all} delivered (expected {expect}); relay logs:\n{}", logs());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Events inserted into 20 aggregates while `a` is paused past its lease (SIGSTOP) until
/// `b` owns every bucket, then resumed (SIGCONT) after `resume_ms`, up to ten times, until
/// `a` counts a fenced publish; then the inserts stop. Answers how many were inserted.
/// Shared by the Baton and the Kafka mode's fencing tests: only what fences differs (a
/// lease guard or a newer producer epoch), not the scenario.
pub async fn pause_until_fenced(pg: &Pg, a: &Relay, b: &Relay, within: Duration, resume_ms: u64) -> i64 {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let inserting = {
        let (url, stop) = (pg.url(), stop.clone());
        tokio::spawn(async move {
            let (c, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(conn);
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                insert(&c, &format!("agg-{}", n % 20), 1, Duration::from_millis(2)).await;
                n += 1;
            }
            n
        })
    };
    let deadline = Instant::now() + within;
    while a.metric("baton_relay_buckets_owned").await == 0.0 || b.metric("baton_relay_buckets_owned").await == 0.0 {
        assert!(Instant::now() < deadline, "buckets never spread:\n{}\n{}", a.log(), b.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A stop between rounds (the renewal then sees the loss first and nothing is
    // published) is still possible: up to ten tries.
    let mut fenced = 0.0;
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        a.signal(libc::SIGSTOP);
        let deadline = Instant::now() + within;
        while b.metric("baton_relay_buckets_owned").await < 64.0 {
            assert!(Instant::now() < deadline, "rb never took ra's buckets:\n{}", b.log());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_millis(resume_ms)).await;
        a.signal(libc::SIGCONT);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        fenced = a.metric("baton_relay_fenced_total").await;
        if fenced > 0.0 {
            break;
        }
    }
    assert!(fenced > 0.0, "ra was never fenced:\n{}", a.log());
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    inserting.await.unwrap()
}

/// A poison event (an 8,000-byte payload the broker refuses) first in aggregate `bad`,
/// 8 more behind it, and 10 events in each of 5 other aggregates: waits until the 50
/// good ones are delivered, the poison is parked after 3 attempts (its last error naming
/// `error`) and its followers still wait. Answers the client for the test's own checks.
pub async fn poison_parks(pg: &Pg, relay: &Relay, within: Duration, error: &str) -> tokio_postgres::Client {
    let c = pg.client().await;
    let big = "x".repeat(8000);
    c.execute(
        "INSERT INTO baton_outbox (aggregate_type, aggregate_id, event_type, payload) VALUES \
         ('order', 'bad', 'huge', jsonb_build_object('blob', $1::text))",
        &[&big],
    )
    .await
    .unwrap();
    insert(&c, "bad", 8, Duration::ZERO).await;
    insert_all(pg, 5, 10, Duration::ZERO).await;
    let deadline = Instant::now() + within;
    loop {
        let r = c
            .query_one(
                "SELECT count(*) FILTER (WHERE status = 'delivered' AND aggregate_id <> 'bad'), \
                 count(*) FILTER (WHERE status = 'parked' AND id = 1), count(*) FILTER (WHERE id BETWEEN 2 AND 9 AND status = 'pending') \
                 FROM baton_outbox",
                &[],
            )
            .await
            .unwrap();
        if (r.get::<_, i64>(0), r.get::<_, i64>(1), r.get::<_, i64>(2)) == (50, 1, 8) {
            break;
        }
        assert!(Instant::now() < deadline, "not parked/delivered as expected; log:\n{}", relay.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let row = c.query_one("SELECT attempts, last_error FROM baton_outbox WHERE id = 1", &[]).await.unwrap();
    assert_eq!(row.get::<_, i32>(0), 3);
    assert!(row.get::<_, String>(1).contains(error), "{}", row.get::<_, String>(1));
    assert_eq!(relay.metric("baton_relay_parked_total").await, 1.0);
    c
}

/// Every aggregate's partition in the Baton at `url` holds exactly its outbox ids, in id
/// order, once each.
pub async fn check_in_baton(pg: &tokio_postgres::Client, url: &str) {
    let c = baton_client::Client::new(url, 1).unwrap();
    let rows = pg.query("SELECT aggregate_id, id FROM baton_outbox ORDER BY id", &[]).await.unwrap();
    let mut want: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for r in rows {
        want.entry(r.get(0)).or_default().push(format!("outbox-{}", r.get::<_, i64>(1)));
    }
    for (agg, ids) in &want {
        let got: Vec<String> = c
            .fetch_all("outbox-order", agg, 0)
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.transaction_id.unwrap_or_default())
            .collect();
        assert_eq!(&got, ids, "partition {agg}: Baton holds (left) vs the outbox (right)");
    }
}

/// In a task: `rounds` rounds of one event for each of 20 aggregates (`agg-0`..`agg-19`,
/// each under its lock), from a connection of its own, pausing `pause` after each round.
pub fn insert_rounds(pg: &Pg, rounds: usize, pause: Duration) -> tokio::task::JoinHandle<i64> {
    insert_rounds_until(pg, rounds, pause, Default::default())
}

/// Up to `rounds` rounds of 20 events (one per aggregate), `pause` apart, stopping early
/// once `stop` is set (checked between rounds); answers how many were inserted.
pub fn insert_rounds_until(
    pg: &Pg,
    rounds: usize,
    pause: Duration,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<i64> {
    let url = pg.url();
    tokio::spawn(async move {
        let (c, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn);
        let mut n = 0i64;
        for _ in 0..rounds {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            for g in 0..20 {
                insert(&c, &format!("agg-{g}"), 1, Duration::ZERO).await;
            }
            n += 20;
            tokio::time::sleep(pause).await;
        }
        n
    })
}

/// Rounds of 20 events (one per aggregate, `pause` apart) inserted while `a`, started with
/// `--test-commit-hold-ms`, delivers; once it has delivered, `a` is killed -9 inside a hold
/// announced after that (a transaction committed and not yet marked), and the inserts stop.
/// Answers how many were inserted. Inserting until the kill keeps new holds coming: with a
/// fixed number of rounds, a slow machine could commit the last of them before the wait for
/// a hold began, and the kill found nothing to settle (CI saw it against Apache Kafka).
pub async fn kill9_inside_a_hold(pg: &Pg, a: &mut Relay, pause: Duration) -> i64 {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Bounded: 600 rounds is a minute at 100 ms, far past the holds' 1.5 s.
    let inserting = insert_rounds_until(pg, 600, pause, stop.clone());
    a.wait_delivered_some(Duration::from_secs(60)).await;
    let holds = |a: &Relay| a.log().matches("test hold: committed").count();
    let seen = holds(a);
    let deadline = Instant::now() + Duration::from_secs(30);
    while holds(a) == seen {
        assert!(Instant::now() < deadline, "no new test hold in 30 s while inserting:\n{}", a.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    a.kill9();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    inserting.await.unwrap()
}

/// The value of `name` (a metric without labels) in Prometheus text.
pub fn prom_value(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')).and_then(|v| v.parse().ok()))
}

/// The relay's default --kafka-partitions.
pub const PARTITIONS: i32 = 8;
/// Bounds of a test read of one partition.
pub const READ_PASSES: usize = 10_000;

/// How long a read waits for a partition's open transactions to end (last stable offset
/// below the high watermark): past the relay's 60 s transaction timeout, after which the
/// coordinator aborts on its own, so only a transaction that never ends fails the read.
pub const LSO_WAIT: Duration = Duration::from_secs(75);

/// Every committed record of `topic` (partitions 0..`partitions`), read_committed:
/// (partition, key, outbox-id header, value). `addr` is `host:port`, or
/// `user:password@host:port` for a listener that demands SASL/PLAIN.
///
/// A partition is read up to its high watermark, not to the first last stable offset
/// seen: Apache Kafka answers EndTxn once PrepareCommit is written and writes the
/// markers after, so right after a relay marks rows delivered the last transaction can
/// still hold the LSO back (CI saw 14 of an aggregate's 15 events missing). While the
/// LSO is below the high watermark the read waits, at most [`LSO_WAIT`].
pub async fn read_topic(addr: &str, topic: &str, partitions: i32) -> Vec<(i32, String, i64, Value)> {
    let (sasl, addr) = match addr.rsplit_once('@') {
        Some((cred, a)) => {
            let (user, password) = cred.split_once(':').expect("user:password@host:port");
            (Some(SaslPlain { user: user.into(), password: password.into() }), a)
        }
        None => (None, addr),
    };
    let mut k = KafkaConn::connect_with(addr, Duration::from_secs(10), sasl.as_ref()).await.expect("connect to kafka");
    let mut out = Vec::new();
    for p in 0..partitions {
        let mut offset = 0;
        let waiting_since = Instant::now();
        for pass in 0..READ_PASSES {
            let f = match k.fetch_committed(topic, p, offset, 0, 1 << 20).await {
                Ok(f) => f,
                // A topic not created yet holds nothing.
                Err(e) if e.code() == Some(3) => break,
                Err(e) => panic!("fetch {topic}[{p}] at {offset}: {e}"),
            };
            for r in &f.records {
                let key = String::from_utf8_lossy(r.key.as_deref().unwrap_or_default()).into_owned();
                let id = r
                    .headers
                    .iter()
                    .find(|(h, _)| h == "outbox-id")
                    .and_then(|(_, v)| v.as_ref())
                    .map(|v| String::from_utf8_lossy(v).parse::<i64>().unwrap())
                    .unwrap_or(-1);
                let v: Value = serde_json::from_slice(r.value.as_deref().unwrap_or(b"null")).unwrap();
                out.push((p, key, id, v));
            }
            let open = f.last_stable_offset < f.high_watermark;
            if f.next_offset >= f.last_stable_offset && open {
                assert!(
                    waiting_since.elapsed() < LSO_WAIT,
                    "{topic}[{p}]: a transaction still open after {LSO_WAIT:?} (last stable offset {} < high watermark {})",
                    f.last_stable_offset,
                    f.high_watermark
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
                offset = f.next_offset.max(offset);
                continue;
            }
            if f.next_offset >= f.last_stable_offset || f.next_offset <= offset {
                break;
            }
            offset = f.next_offset;
            assert!(pass + 1 < READ_PASSES, "{topic}[{p}] never ended");
        }
    }
    out
}

/// Exactly once, in id order per aggregate, in the aggregate's murmur2 partition, for a
/// read_committed consumer of `topic` at `addr` (see [`read_topic`]); the value is the row's JSON.
pub async fn check_topic(pg: &tokio_postgres::Client, addr: &str, topic: &str) {
    let rows = pg.query("SELECT aggregate_id, id FROM baton_outbox ORDER BY id", &[]).await.unwrap();
    let mut want: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for r in rows {
        want.entry(r.get(0)).or_default().push(r.get(1));
    }
    let mut got: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for (p, key, id, v) in read_topic(addr, topic, PARTITIONS).await {
        assert_eq!(p, murmur2_partition(key.as_bytes(), PARTITIONS), "{key} in partition {p}");
        assert_eq!(v["id"], id, "the value is the row's JSON");
        assert_eq!(v["aggregateId"], key.as_str());
        got.entry(key).or_default().push(id);
    }
    let total: usize = got.values().map(Vec::len).sum();
    let want_total: usize = want.values().map(Vec::len).sum();
    for (agg, ids) in &want {
        assert_eq!(got.get(agg), Some(ids), "aggregate {agg}: Kafka holds (left) vs the outbox (right)");
    }
    assert_eq!(total, want_total, "records past the outbox's (duplicates or strangers)");
}
