//! The relay's TLS to PostgreSQL: with `sslmode=require` in --pg every connection of the
//! relay (reads and marks, LISTEN, gauges) is TLS, verified against --pg-ca-file; a
//! certificate it cannot verify, a server without TLS, or a CA file without TLS asked for
//! stops it at start with the reason, and nothing falls back to plain text. A real
//! PostgreSQL with `ssl=on` and a certificate made here by the openssl command.

use crate::common;
use crate::relay_util;
use common::Server;
use relay_util::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// A CA and a server certificate for 127.0.0.1 signed by it, in `dir`, the key readable by
/// PostgreSQL's user only (as the server demands). Answers the CA's path.
fn certificates(dir: &Path) -> String {
    let run = |args: &[&str]| {
        let o = Command::new("openssl").args(args).current_dir(dir).output().expect("the openssl command");
        assert!(o.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=baton test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
    ]);
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "san.ext",
        "-out",
        "server.pem",
    ]);
    // The key belongs to PostgreSQL's user, which its install makes (a no-op when there).
    let o = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/peers/postgres.sh"))
        .arg("install")
        .output()
        .unwrap();
    assert!(o.status.success(), "postgres.sh install: {}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new("chown").args(["postgres:", "server.key", "server.pem"]).current_dir(dir).output().unwrap();
    assert!(o.status.success(), "chown: {}", String::from_utf8_lossy(&o.stderr));
    std::fs::set_permissions(dir.join("server.key"), std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    dir.join("ca.pem").to_string_lossy().into_owned()
}

fn pg_with_tls() -> (Pg, String) {
    let mut ca = String::new();
    let pg = Pg::start_with(|dir| {
        ca = certificates(dir);
        format!(
            "-c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
            dir.join("server.pem").display(),
            dir.join("server.key").display()
        )
    });
    (pg, ca)
}

/// `baton relay <args>`: exit status and stderr.
fn relay(args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_baton")).arg("relay").args(args).output().unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn every_relay_connection_is_tls_when_required() {
    let (pg, ca) = pg_with_tls();
    let url = format!("{}?sslmode=require&application_name=baton-relay-tls", pg.url());
    let (code, err) = relay(&["init", "--pg", &url, "--pg-ca-file", &ca, "--buckets", BUCKETS]);
    assert_eq!(code, Some(0), "{err}");
    let baton = Server::start();
    let relay = Relay::start_pg(&url, &["--to", &baton.url("")], "r1", &["--pg-ca-file", &ca]);
    rt().block_on(async {
        insert_all(&pg, 10, 20, Duration::ZERO).await;
        let c = pg.client().await;
        wait_delivered(&c, 200, Duration::from_secs(30), &|| relay.log()).await;
        check_in_baton(&c, &baton.url("")).await;
        // The relay's connections (its main one, LISTEN, the gauges), each TLS, none plain.
        let r = c
            .query_one(
                "SELECT count(*) FILTER (WHERE s.ssl), count(*) FILTER (WHERE NOT s.ssl) \
                 FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'baton-relay-tls'",
                &[],
            )
            .await
            .unwrap();
        let (tls, plain): (i64, i64) = (r.get(0), r.get(1));
        assert!(tls >= 3 && plain == 0, "relay connections: {tls} TLS, {plain} plain");
    });
}

#[test]
fn tls_that_cannot_be_had_or_verified_stops_the_relay_at_start() {
    let (pg, ca) = pg_with_tls();
    let tls = format!("{}?sslmode=require", pg.url());
    // The server's certificate is signed by a CA the system does not know.
    let (code, err) = relay(&["init", "--pg", &tls]);
    assert_ne!(code, Some(0));
    assert!(err.contains("certificate") && err.contains("--pg-ca-file"), "{err}");
    // A CA file without TLS asked for is a mistake, said before connecting.
    let (code, err) = relay(&["init", "--pg", &pg.url(), "--pg-ca-file", &ca]);
    assert_ne!(code, Some(0));
    assert!(err.contains("sslmode=require"), "{err}");
    // A CA file that holds no certificate.
    let empty = pg.dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let (code, err) = relay(&["init", "--pg", &tls, "--pg-ca-file", &empty.to_string_lossy()]);
    assert_ne!(code, Some(0));
    assert!(err.contains("no PEM certificate"), "{err}");
    // A server without TLS: required means required, no plain fallback.
    let plain = Pg::start();
    let (code, err) = relay(&["init", "--pg", &format!("{}?sslmode=require", plain.url()), "--pg-ca-file", &ca]);
    assert_ne!(code, Some(0));
    assert!(err.to_lowercase().contains("tls"), "{err}");
}
