//! SASL/PLAIN on the Kafka listener, against the real `baton` binary started
//! with `--kafka-sasl-users`: kcat with the right password produces and
//! consumes, with a wrong one (or none) it fails; at the wire, a request
//! before authentication closes the connection, another mechanism is
//! refused with the enabled list, a wrong password is answered and then
//! closed, handshake v0's bare tokens work, and without the flag the SASL
//! APIs answer ILLEGAL_SASL_STATE and change nothing.

use crate::common;
use crate::kafka_util;

use bytes::{BufMut, BytesMut};
use common::Server;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::Compression;
use kafka_util::*;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ILLEGAL_SASL_STATE: i16 = 34;
const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
const SASL_AUTHENTICATION_FAILED: i16 = 58;

/// A server requiring SASL with two users; the temp dir holds the users file.
fn start() -> (Server, u16, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("users");
    std::fs::write(&users, "# test accounts\nalice:s3cret\nbob:with:colons\n").unwrap();
    let path = users.to_str().unwrap().to_string();
    let (s, port) = Server::start_kafka(&["--kafka-sasl-users", &path]);
    (s, port, dir)
}

/// Run kcat (bounded by `timeout`), returning (success, stdout, stderr).
fn kcat(args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut c = Command::new("timeout")
        .arg("30")
        .arg("kcat")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kcat is installed (Debian: apt-get install -y kcat; .ci/run installs it)");
    c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = c.wait_with_output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

fn sasl_args(port: u16, user: &str, password: &str) -> Vec<String> {
    [
        "-b".to_string(),
        format!("127.0.0.1:{port}"),
        "-X".into(),
        "security.protocol=SASL_PLAINTEXT".into(),
        "-X".into(),
        "sasl.mechanisms=PLAIN".into(),
        "-X".into(),
        format!("sasl.username={user}"),
        "-X".into(),
        format!("sasl.password={password}"),
    ]
    .to_vec()
}

fn metrics(s: &Server) -> String {
    let mut t = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    t.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    t.write_all(b"GET /metrics/prometheus HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut body = String::new();
    t.read_to_string(&mut body).unwrap();
    body
}

fn metric(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{series} not in /metrics"))
}

fn handshake(k: &mut Kafka, version: i16, mechanism: &'static str) -> SaslHandshakeResponse {
    let req = SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism));
    k.call(ApiKey::SaslHandshake, version, &req)
}

fn authenticate(k: &mut Kafka, token: &'static [u8]) -> SaslAuthenticateResponse {
    let req = SaslAuthenticateRequest::default().with_auth_bytes(bytes::Bytes::from_static(token));
    k.call(ApiKey::SaslAuthenticate, 2, &req)
}

#[test]
fn kcat_authenticates_with_the_right_password_only() {
    let (s, port, _users) = start();
    let good: Vec<String> = sasl_args(port, "alice", "s3cret");
    let good: Vec<&str> = good.iter().map(|s| s.as_str()).collect();
    let (ok, _, err) = kcat(&[&good[..], &["-P", "-t", "secured"]].concat(), "one\ntwo\n");
    assert!(ok, "produce with the right password: {err}");
    let (ok, out, err) = kcat(&[&good[..], &["-C", "-t", "secured", "-o", "beginning", "-e", "-q"]].concat(), "");
    assert!(ok, "consume with the right password: {err}");
    assert_eq!(out.lines().collect::<Vec<_>>(), vec!["one", "two"]);
    // A password holding colons (the users file splits at the first one).
    let bob: Vec<String> = sasl_args(port, "bob", "with:colons");
    let bob: Vec<&str> = bob.iter().map(|s| s.as_str()).collect();
    let (ok, out, err) = kcat(&[&bob[..], &["-L", "-t", "secured", "-m", "10"]].concat(), "");
    assert!(ok && out.contains("secured"), "bob lists the topic: {err}");

    let bad: Vec<String> = sasl_args(port, "alice", "wrong");
    let bad: Vec<&str> = bad.iter().map(|s| s.as_str()).collect();
    let (ok, _, err) = kcat(&[&bad[..], &["-L", "-m", "3"]].concat(), "");
    assert!(!ok, "a wrong password must fail");
    assert!(err.contains("Invalid username or password"), "kcat shows the server's message: {err}");
    let (ok, _, _) = kcat(&["-b", &format!("127.0.0.1:{port}"), "-L", "-m", "3"], "");
    assert!(!ok, "no SASL at all must fail");

    let m = metrics(&s);
    assert!(metric(&m, "baton_kafka_sasl_authentications_total{result=\"success\"}") >= 3.0);
    assert!(metric(&m, "baton_kafka_sasl_authentications_total{result=\"failure\"}") >= 1.0);
    assert!(metric(&m, "baton_kafka_connections_closed_total{reason=\"sasl_failed\"}") >= 1.0);
    assert!(metric(&m, "baton_kafka_connections_closed_total{reason=\"unauthenticated\"}") >= 1.0);
    assert!(s.log().contains("kafka: SASL failed, closing connection"));
    assert!(!s.log().contains("s3cret"), "passwords never reach the log");
}

#[test]
fn metadata_before_authentication_closes_the_connection() {
    let (s, port, _users) = start();
    let mut k = Kafka::connect(port);
    // ApiVersions is allowed first, and lists the SASL APIs.
    let v: ApiVersionsResponse = k.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
    let range =
        |key: ApiKey| v.api_keys.iter().find(|a| a.api_key == key as i16).map(|a| (a.min_version, a.max_version));
    assert_eq!(range(ApiKey::SaslHandshake), Some((0, 1)));
    assert_eq!(range(ApiKey::SaslAuthenticate), Some((0, 2)));
    let md = MetadataRequest::default().with_topics(None).with_allow_auto_topic_creation(false);
    k.send(ApiKey::Metadata, 9, &md);
    assert!(k.recv_raw().is_none(), "no answer: the connection is closed");
    // Same after a handshake but before SaslAuthenticate.
    let mut k = Kafka::connect(port);
    assert_eq!(handshake(&mut k, 1, "PLAIN").error_code, 0);
    k.send(ApiKey::Metadata, 9, &md);
    assert!(k.recv_raw().is_none());
    let log = s.log();
    assert!(log.contains("kafka: request before SASL authentication, closing connection"), "{log}");
    assert!(log.contains("Metadata v9 before SASL authentication"), "{log}");
    let m = metrics(&s);
    assert_eq!(metric(&m, "baton_kafka_connections_closed_total{reason=\"unauthenticated\"}"), 2.0);
}

#[test]
fn mechanisms_wrong_passwords_and_success_at_the_wire() {
    let (_s, port, _users) = start();
    // Another mechanism: the enabled list comes back, then the connection closes.
    let mut k = Kafka::connect(port);
    let r = handshake(&mut k, 1, "SCRAM-SHA-512");
    assert_eq!(r.error_code, UNSUPPORTED_SASL_MECHANISM);
    assert_eq!(r.mechanisms.iter().map(|m| m.to_string()).collect::<Vec<_>>(), vec!["PLAIN"]);
    assert!(k.closed());
    // A wrong password is answered with a message, then closed.
    let mut k = Kafka::connect(port);
    assert_eq!(handshake(&mut k, 1, "PLAIN").mechanisms.len(), 1);
    let r = authenticate(&mut k, b"\0alice\0s3cre");
    assert_eq!(r.error_code, SASL_AUTHENTICATION_FAILED);
    assert!(r.error_message.unwrap().contains("Invalid username or password"));
    assert!(k.closed());
    // An unknown user too.
    let mut k = Kafka::connect(port);
    handshake(&mut k, 1, "PLAIN");
    assert_eq!(authenticate(&mut k, b"\0mallory\0s3cret").error_code, SASL_AUTHENTICATION_FAILED);
    assert!(k.closed());
    // SaslAuthenticate without a handshake: ILLEGAL_SASL_STATE, closed.
    let mut k = Kafka::connect(port);
    assert_eq!(authenticate(&mut k, b"\0alice\0s3cret").error_code, ILLEGAL_SASL_STATE);
    assert!(k.closed());
    // The right password: then everything works on this connection.
    let mut k = Kafka::connect(port);
    handshake(&mut k, 1, "PLAIN");
    let r = authenticate(&mut k, b"\0alice\0s3cret");
    assert_eq!((r.error_code, r.error_message), (0, None));
    assert_eq!(k.metadata(&["wire"]).topics[0].error_code, 0);
    assert_eq!(k.produce("wire", 0, batch(&[b"x"], Compression::None, None), -1).error_code, 0);
    assert_eq!(k.fetch("wire", 0, 0, 0).high_watermark, 1);
    // Another handshake once in: ILLEGAL_SASL_STATE, and the connection stays.
    assert_eq!(handshake(&mut k, 1, "PLAIN").error_code, ILLEGAL_SASL_STATE);
    assert_eq!(k.metadata(&["wire"]).topics[0].error_code, 0);
}

/// Handshake v0: the PLAIN token follows as a bare size-prefixed frame, and
/// the (empty) challenge comes back the same way.
#[test]
fn handshake_v0_bare_tokens() {
    let (_s, port, _users) = start();
    let bare = |token: &[u8]| {
        let mut b = BytesMut::new();
        b.put_i32(token.len() as i32);
        b.put_slice(token);
        b
    };
    let mut k = Kafka::connect(port);
    assert_eq!(handshake(&mut k, 0, "PLAIN").error_code, 0);
    k.send_raw(&bare(b"\0bob\0with:colons"));
    assert_eq!(k.recv_raw().expect("an empty challenge frame").len(), 0);
    assert_eq!(k.metadata(&["v0"]).topics[0].error_code, 0);
    let mut k = Kafka::connect(port);
    handshake(&mut k, 0, "PLAIN");
    k.send_raw(&bare(b"\0bob\0nope"));
    assert!(k.recv_raw().is_none(), "a v0 client gets no answer to a wrong token: closed");
}

#[test]
fn without_users_nothing_changes_and_sasl_requests_are_illegal() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    assert_eq!(k.metadata(&["open"]).topics[0].error_code, 0, "no authentication needed");
    let r = handshake(&mut k, 1, "PLAIN");
    assert_eq!((r.error_code, r.mechanisms.len()), (ILLEGAL_SASL_STATE, 0));
    let r = authenticate(&mut k, b"\0alice\0s3cret");
    assert_eq!(r.error_code, ILLEGAL_SASL_STATE);
    assert!(r.error_message.unwrap().contains("not enabled"));
    assert_eq!(k.metadata(&["open"]).topics[0].error_code, 0, "the connection stays open");
}

#[test]
fn a_bad_users_file_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("users");
    std::fs::write(&users, "alice:s3cret\nno-colon-here\n").unwrap();
    for (file, want) in [(users.clone(), "line 2: expected user:password"), (dir.path().join("missing"), "missing")] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_baton"))
            .arg("serve")
            .arg("--http-addr")
            .arg(format!("127.0.0.1:{}", common::free_port()))
            .arg("--kafka-addr")
            .arg(format!("127.0.0.1:{}", common::free_port()))
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .arg("--kafka-sasl-users")
            .arg(&file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(st) = c.try_wait().unwrap() {
                break st;
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                panic!("baton started with a bad users file");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        c.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert!(!status.success());
        assert!(err.contains(want), "{err}");
        assert!(!err.contains("s3cret"), "the file's text is never echoed: {err}");
    }
}
