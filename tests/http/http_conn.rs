//! The HTTP listener through the real binary, with raw TCP clients (issue
//! #12 items 17 and 11, HTTP part): what hyper refuses by itself (a request it
//! cannot parse, too many headers), a URL with bad percent-encoding and a body
//! over the limit all answer the JSON `{error, code}` shape; the 413 is read by
//! a client that sends its whole body first; idle connections are closed, a
//! long poll is not idle; connections over the cap are answered 503.
//! Settings are given as `BATON_*` environment variables.

use crate::common;

use common::Server;
use serde_json::Value;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn connect(s: &Server) -> TcpStream {
    let t = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
    t.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    t.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
    t
}

/// One response: status, lower-cased head, body (by content-length).
fn read_response(t: &mut TcpStream) -> (u16, String, Vec<u8>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = t.read(&mut chunk).expect("read a response head");
        assert!(n > 0, "connection closed before a response head; got {:?}", String::from_utf8_lossy(&buf));
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
    let status: u16 = head[9..12].parse().expect("status code");
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().expect("content-length"))
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = t.read(&mut chunk).expect("read a response body");
        assert!(n > 0, "connection closed inside a body");
        buf.extend_from_slice(&chunk[..n]);
    }
    (status, head, buf[head_end..head_end + len].to_vec())
}

fn exchange(s: &Server, request: &[u8]) -> (u16, String, Vec<u8>) {
    let mut t = connect(s);
    t.write_all(request).expect("send");
    read_response(&mut t)
}

#[track_caller]
fn assert_json_error(got: &(u16, String, Vec<u8>), status: u16, code: &str) {
    let (st, head, body) = got;
    let text = String::from_utf8_lossy(body);
    assert_eq!(*st, status, "{head}{text}");
    assert!(head.contains("content-type: application/json"), "{head}{text}");
    let v: Value = serde_json::from_slice(body).unwrap_or_else(|e| panic!("not JSON ({e}): {head}{text}"));
    assert_eq!(v["code"], code, "{v}");
    assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
}

#[test]
fn rejections_below_the_routes_answer_json() {
    let s = Server::start();
    assert_json_error(&exchange(&s, b"GARBAGE\r\n\r\n"), 400, "bad_request");
    assert_json_error(&exchange(&s, b"GET /a b c HTTP/1.1\r\nHost: x\r\n\r\n"), 400, "bad_request");
    let mut many = b"GET /health HTTP/1.1\r\nHost: x\r\n".to_vec();
    for i in 0..150 {
        many.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    assert_json_error(&exchange(&s, &many), 431, "headers_too_large");
    for path in ["/api/v1/resources/queues/%FF", "/api/v1/resources/queues/%ZZ", "/api/v1/resources/queues/a%2"] {
        let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assert_json_error(&exchange(&s, req.as_bytes()), 400, "invalid_url");
    }
    let req = b"GET /api/v1/timers/q?limit=zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_json_error(&exchange(&s, req), 400, "invalid_query");
    // A well-encoded name still works.
    let req = b"GET /api/v1/resources/queues/a%20b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_json_error(&exchange(&s, req), 404, "queue_not_found");
    // Each refusal is counted by its code.
    let (_, _, body) = exchange(&s, b"GET /metrics/prometheus HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let text = String::from_utf8_lossy(&body);
    for line in [
        "baton_http_errors_total{status=\"400\",code=\"bad_request\"} 2",
        "baton_http_errors_total{status=\"431\",code=\"headers_too_large\"} 1",
        "baton_http_errors_total{status=\"400\",code=\"invalid_url\"} 3",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in /metrics");
    }
}

#[test]
fn a_body_over_the_limit_is_read_and_answered_413() {
    let s = Server::start_with(&["--max-body-bytes", "1024"]);
    let mut t = connect(&s);
    let total = 16 << 20;
    let head = format!(
        "POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {total}\r\n\r\n"
    );
    t.write_all(head.as_bytes()).unwrap();
    // As Python's http.client does: the whole body first, then the answer.
    let chunk = vec![b' '; 64 << 10];
    let mut sent = 0;
    while sent < total {
        if let Err(e) = t.write_all(&chunk) {
            panic!("sending the body failed after {sent} bytes ({e}): the server closed without draining it");
        }
        sent += chunk.len();
    }
    assert_json_error(&read_response(&mut t), 413, "body_too_large");
}

/// True when the server closed `t` (EOF or reset) before `limit`.
fn closed_by_server(t: &mut TcpStream, limit: Duration) -> bool {
    t.set_read_timeout(Some(limit)).unwrap();
    let mut b = [0u8; 1024];
    loop {
        match t.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn idle_connections_are_closed_and_a_long_poll_is_not_idle() {
    let s = Server::start_env(&[("BATON_HTTP_IDLE_TIMEOUT_SECS", "1")]);
    // Never sends a byte.
    let mut silent = connect(&s);
    // One request, then idle on a kept-alive connection.
    let mut kept = connect(&s);
    kept.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut kept).0, 200);
    // A long poll of 3 s: three idle timeouts with no byte on the wire.
    let mut poll = connect(&s);
    poll.write_all(b"GET /api/v1/pop/queue/nothing?wait=true&timeout=3000 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let started = Instant::now();
    assert_eq!(read_response(&mut poll).0, 204, "the long poll is answered, not cut");
    assert!(started.elapsed() >= Duration::from_millis(2500), "it waited its timeout");
    assert!(closed_by_server(&mut silent, Duration::from_secs(15)), "a silent connection is closed");
    assert!(closed_by_server(&mut kept, Duration::from_secs(15)), "an idle kept-alive connection is closed");
    assert!(closed_by_server(&mut poll, Duration::from_secs(15)), "idle again after its answer");
}

#[test]
fn connections_over_the_cap_are_answered_503() {
    let s = Server::start_env(&[("BATON_HTTP_MAX_CONNECTIONS", "4")]);
    // Connections just closed (start-up's health checks, each metrics read)
    // count until the server has seen their end: retry a refused one.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut open: Vec<TcpStream> = Vec::new();
    while open.len() < 4 {
        let mut t = connect(&s);
        t.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        match read_response(&mut t).0 {
            200 => open.push(t),
            503 => {
                assert!(Instant::now() < deadline, "refused with {} open", open.len());
                std::thread::sleep(Duration::from_millis(20));
            }
            other => panic!("status {other}"),
        }
    }
    let got = exchange(&s, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_json_error(&got, 503, "too_many_connections");
    // The four still work; one closed makes room again.
    for t in &mut open {
        t.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(read_response(t).0, 200);
    }
    open.pop();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = exchange(&s, b"GET /metrics/prometheus HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        if got.0 == 200 {
            let text = String::from_utf8_lossy(&got.2).to_string();
            assert!(text.contains("baton_http_connections_open 4"), "three kept and this one");
            let refused = text
                .lines()
                .find_map(|l| l.strip_prefix("baton_http_connections_refused_total "))
                .and_then(|v| v.trim().parse::<u64>().ok());
            assert!(refused.is_some_and(|r| r >= 1), "the refusal is counted");
            break;
        }
        assert_eq!(got.0, 503, "refused until the closed one is noticed");
        assert!(Instant::now() < deadline, "a closed connection never made room");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Lower the running server's descriptor limit to what it uses now plus `spare`.
fn limit_fds(s: &Server, spare: u64) {
    // The provisioner opens its pool of spare files in the background after start (D17):
    // count once that has settled, or it takes the spare descriptors after the limit is set.
    let count = || std::fs::read_dir(format!("/proc/{}/fd", s.pid())).expect("the server's fds").count() as u64;
    let mut used = count();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = count();
        if now == used || Instant::now() > deadline {
            break;
        }
        used = now;
    }
    let lim = libc::rlimit { rlim_cur: used + spare, rlim_max: used + spare };
    let rc = unsafe { libc::prlimit(s.pid() as libc::pid_t, libc::RLIMIT_NOFILE, &lim, std::ptr::null_mut()) };
    assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
}

#[test]
fn running_out_of_descriptors_does_not_end_the_listener() {
    let s = Server::start();
    limit_fds(&s, 8);
    // More connections than descriptors: the first few are taken, the rest
    // wait in the backlog while accept fails with EMFILE.
    let mut conns: Vec<TcpStream> = (0..40).map(|_| connect(&s)).collect();
    for t in &mut conns {
        t.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    }
    // Each answered connection closes and frees its descriptor for the next.
    for (i, mut t) in conns.drain(..).enumerate() {
        let (st, _, body) = read_response(&mut t);
        assert_eq!(st, 200, "connection {i}: {}", String::from_utf8_lossy(&body));
    }
    let (st, _, body) = exchange(&s, b"GET /metrics/prometheus HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(st, 200);
    let text = String::from_utf8_lossy(&body).to_string();
    let errors: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("baton_http_accept_errors_total "))
        .and_then(|v| v.trim().parse().ok())
        .expect("baton_http_accept_errors_total in /metrics");
    assert!(errors >= 1, "the failed accepts are counted");
    assert!(s.log().contains("HTTP accept failed"), "and logged");
}
