//! What one Fetch costs the server in CPU, for a request naming 10 partitions
//! against one naming 1,000 (issue #4). Starts the real `baton serve` on free
//! loopback ports with its own temp dir, creates a topic of 1,000 partitions
//! holding one small batch each, then sends sessionless Fetch v12 requests
//! (offset 0, so every partition answers at once with data) one at a time
//! over one connection and reads the server's CPU time from /proc before and
//! after. Prints CPU µs per request, the median of `--runs` runs per case.
//!
//! ```sh
//! cargo build --release --bins
//! cargo run --release -p baton-kafka --example fetch_cost
//! cargo run --release -p baton-kafka --example fetch_cost -- --callgrind   # instructions too
//! ```
//!
//! `--callgrind` runs the server under `valgrind --tool=callgrind` and counts
//! instructions per request with `callgrind_control` (zero before a case,
//! dump after): slow, but exact where the CPU clock is noisy.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TOPIC: &str = "cost";
const PARTITIONS: i32 = 1000;

struct Opts {
    bin: PathBuf,
    runs: usize,
    /// Wall time each run sends requests for (bounded by `max_requests` too).
    run_secs: f64,
    max_requests: u64,
    cases: Vec<i32>,
    callgrind: bool,
}

fn opts() -> Opts {
    let mut o = Opts {
        bin: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/release/baton")),
        runs: 5,
        run_secs: 2.0,
        max_requests: 1_000_000,
        cases: vec![10, 1000],
        callgrind: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--bin" => o.bin = PathBuf::from(val()),
            "--runs" => o.runs = val().parse().expect("--runs N"),
            "--run-secs" => o.run_secs = val().parse().expect("--run-secs S"),
            "--max-requests" => o.max_requests = val().parse().expect("--max-requests N"),
            "--cases" => o.cases = val().split(',').map(|s| s.parse().expect("--cases 10,1000")).collect(),
            "--callgrind" => o.callgrind = true,
            other => panic!("unknown argument {other}; see the module comment"),
        }
    }
    assert!(o.cases.iter().all(|c| (1..=PARTITIONS).contains(c)), "cases must be 1..={PARTITIONS}");
    o
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port").local_addr().unwrap().port()
}

/// The server process; killed on drop so a panicking bench leaves nothing behind.
struct Server {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(o: &Opts, http: u16, kafka: u16) -> Server {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut c = if o.callgrind {
        let mut c = Command::new("valgrind");
        c.arg("--tool=callgrind")
            .arg(format!("--callgrind-out-file={}/callgrind.out.%p", dir.path().display()))
            .arg(&o.bin);
        c
    } else {
        Command::new(&o.bin)
    };
    c.arg("serve")
        .arg("--http-addr")
        .arg(format!("127.0.0.1:{http}"))
        .arg("--kafka-addr")
        .arg(format!("127.0.0.1:{kafka}"))
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--kafka-default-partitions")
        .arg(PARTITIONS.to_string())
        .env("BATON_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let child =
        c.spawn().unwrap_or_else(|e| panic!("spawn {}: {e} (build it: cargo build --release --bins)", o.bin.display()));
    let s = Server { child, _dir: dir };
    // The Kafka listener is bound before HTTP, so a healthy HTTP means both are up.
    let deadline = Instant::now() + Duration::from_secs(if o.callgrind { 300 } else { 30 });
    while Instant::now() < deadline {
        if let Ok(mut t) = TcpStream::connect(("127.0.0.1", http)) {
            let _ = t.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = t.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let mut buf = String::new();
            let _ = t.read_to_string(&mut buf);
            if buf.starts_with("HTTP/1.1 200") {
                return s;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("baton did not become healthy");
}

struct Conn {
    s: TcpStream,
    next: i32,
}

impl Conn {
    fn connect(port: u16) -> Conn {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect to Kafka");
        s.set_nodelay(true).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
        Conn { s, next: 1 }
    }

    fn frame(&mut self, api: ApiKey, version: i16, body: &impl Encodable) -> Bytes {
        let mut b = BytesMut::new();
        b.put_i32(0);
        RequestHeader::default()
            .with_request_api_key(api as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.next)
            .with_client_id(Some(StrBytes::from_static_str("fetch-cost")))
            .encode(&mut b, api.request_header_version(version))
            .unwrap();
        self.next += 1;
        body.encode(&mut b, version).unwrap();
        let len = (b.len() - 4) as i32;
        b[0..4].copy_from_slice(&len.to_be_bytes());
        b.freeze()
    }

    fn recv_raw(&mut self) -> Bytes {
        let mut len = [0u8; 4];
        self.s.read_exact(&mut len).expect("a response");
        let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
        self.s.read_exact(&mut buf).expect("a whole response");
        Bytes::from(buf)
    }

    fn call<T: Decodable>(&mut self, api: ApiKey, version: i16, body: &impl Encodable) -> T {
        let f = self.frame(api, version, body);
        self.s.write_all(&f).unwrap();
        let mut b = self.recv_raw();
        ResponseHeader::decode(&mut b, api.response_header_version(version)).unwrap();
        let r = T::decode(&mut b, version).unwrap();
        assert!(!b.has_remaining());
        r
    }
}

fn topic() -> TopicName {
    TopicName(StrBytes::from_static_str(TOPIC))
}

fn one_batch(i: i32) -> Bytes {
    let rec = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: 1_700_000_000_000,
        key: None,
        value: Some(Bytes::from(format!("value of partition {i:04}, padded to about a hundred bytes ........"))),
        headers: Default::default(),
    };
    let mut b = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut b,
        [rec].iter(),
        &RecordEncodeOptions { version: 2, compression: Compression::None },
    )
    .unwrap();
    b.freeze()
}

/// Topic of PARTITIONS partitions (auto-created at that size), one batch each.
fn fill(k: &mut Conn) {
    let md = MetadataRequest::default()
        .with_topics(Some(vec![metadata_request::MetadataRequestTopic::default().with_name(Some(topic()))]))
        .with_allow_auto_topic_creation(true);
    let r: MetadataResponse = k.call(ApiKey::Metadata, 9, &md);
    assert_eq!(r.topics[0].partitions.len(), PARTITIONS as usize, "topic auto-created with {PARTITIONS} partitions");
    let parts = (0..PARTITIONS)
        .map(|i| produce_request::PartitionProduceData::default().with_index(i).with_records(Some(one_batch(i))))
        .collect();
    let req = ProduceRequest::default().with_acks(-1).with_timeout_ms(30_000).with_topic_data(vec![
        produce_request::TopicProduceData::default().with_name(topic()).with_partition_data(parts),
    ]);
    let r: ProduceResponse = k.call(ApiKey::Produce, 9, &req);
    assert!(r.responses[0].partition_responses.iter().all(|p| p.error_code == 0), "produce failed");
}

fn fetch_req(n: i32) -> FetchRequest {
    let parts = (0..n)
        .map(|i| {
            fetch_request::FetchPartition::default()
                .with_partition(i)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)
        })
        .collect();
    // Sessionless (epoch -1): every request reads and answers all it names.
    FetchRequest::default()
        .with_replica_id((-1).into())
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(64 << 20)
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(vec![fetch_request::FetchTopic::default().with_topic(topic()).with_partitions(parts)])
}

/// utime + stime of the whole process, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc/<pid>/stat");
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn ticks_per_sec() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn callgrind(pid: u32, what: &str) {
    let st = Command::new("callgrind_control").arg(what).arg(pid.to_string()).stdout(Stdio::null()).status();
    assert!(st.is_ok_and(|s| s.success()), "callgrind_control {what} {pid} failed");
}

/// Sum of the `summary:`/`totals:` instruction counts in the dumps written since `seen`.
fn callgrind_instructions(dir: &std::path::Path, seen: &mut Vec<PathBuf>) -> u64 {
    let mut total = 0;
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().filter_map(|e| Some(e.ok()?.path())).collect();
    files.sort();
    for f in files {
        if seen.contains(&f) || !f.file_name().unwrap().to_string_lossy().starts_with("callgrind.out") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.starts_with("summary:") || l.starts_with("totals:")) {
            total += line.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        }
        seen.push(f);
    }
    total
}

fn main() {
    let o = opts();
    let (http, kport) = (free_port(), free_port());
    let server = start(&o, http, kport);
    let pid = server.child.id();
    let mut k = Conn::connect(kport);
    fill(&mut k);
    let hz = ticks_per_sec();
    println!("server pid {pid}, {hz} clock ticks/s, {} runs of {} s per case", o.runs, o.run_secs);
    let mut seen = Vec::new();
    if o.callgrind {
        // Dumps made so far (start-up) are not part of any case.
        callgrind(pid, "-d");
        std::thread::sleep(Duration::from_millis(500));
        callgrind_instructions(server._dir.path(), &mut seen);
    }
    let mut summary = Vec::new();
    for &n in &o.cases {
        let req = k.frame(ApiKey::Fetch, 12, &fetch_req(n));
        // Check the answer once: every named partition comes back with its batch.
        let check: FetchResponse = k.call(ApiKey::Fetch, 12, &fetch_req(n));
        let parts = &check.responses[0].partitions;
        assert_eq!(parts.len(), n as usize);
        assert!(parts.iter().all(|p| p.error_code == 0 && p.records.as_ref().is_some_and(|r| !r.is_empty())));
        let resp_len = {
            k.s.write_all(&req).unwrap();
            k.recv_raw().len()
        };
        // Warm up (allocator, caches), bounded.
        for _ in 0..20 {
            k.s.write_all(&req).unwrap();
            k.recv_raw();
        }
        let mut per_req = Vec::new();
        for run in 0..o.runs {
            if o.callgrind {
                callgrind(pid, "-z");
            }
            let c0 = cpu_ticks(pid);
            let t0 = Instant::now();
            let mut count = 0u64;
            while count < o.max_requests && t0.elapsed().as_secs_f64() < o.run_secs {
                k.s.write_all(&req).unwrap();
                k.recv_raw();
                count += 1;
            }
            let wall = t0.elapsed();
            let cpu = (cpu_ticks(pid) - c0) as f64 / hz;
            let us = cpu * 1e6 / count as f64;
            let mut line = format!(
                "{n:>5} partitions  run {run}: {count:>7} requests in {:.2} s wall, server CPU {:.3} s = {us:>8.1} µs/request",
                wall.as_secs_f64(),
                cpu
            );
            if o.callgrind {
                callgrind(pid, "-d");
                std::thread::sleep(Duration::from_millis(500));
                let ir = callgrind_instructions(server._dir.path(), &mut seen);
                line.push_str(&format!(", {} instructions/request", ir / count.max(1)));
                per_req.push(ir as f64 / count as f64);
            } else {
                per_req.push(us);
            }
            println!("{line}");
        }
        let m = median(per_req);
        summary.push((n, m, resp_len));
    }
    let unit = if o.callgrind { "instructions/request" } else { "CPU µs/request" };
    println!("\nmedian of {} runs ({unit}):", o.runs);
    for (n, m, len) in &summary {
        println!("  {n:>5} partitions: {m:>12.1}  ({:.2} per partition, response {len} bytes)", m / *n as f64);
    }
    // Linear means a fixed part plus the same cost per added partition: the
    // marginal cost between cases stays flat as the cases grow.
    for w in summary.windows(2) {
        let ((a, ma, _), (b, mb, _)) = (w[0], w[1]);
        println!(
            "  {a} -> {b} partitions: {:.1}x cost for {:.0}x partitions, {:.2} per added partition",
            mb / ma,
            b as f64 / a as f64,
            (mb - ma) / (b - a) as f64
        );
    }
}
