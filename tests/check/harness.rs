//! The test harness itself: a server's health must be its own. CI once saw a
//! test's server fail to bind a port another test's server had just taken,
//! while the health probe, answered by that other server, reported it ready.

use crate::common;
use common::Server;
use std::io::{Read, Write};
use std::net::TcpListener;

#[test]
fn a_health_answer_from_another_process_on_the_port_is_not_taken_as_ours() {
    let squatter = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = squatter.local_addr().unwrap().port();
    // Answers 200 to everything, as another baton's /health would.
    std::thread::spawn(move || {
        for mut c in squatter.incoming().flatten().take(10_000) {
            let mut buf = [0u8; 1024];
            let _ = c.read(&mut buf);
            let _ = c.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
        }
    });
    let s = Server::start_on(taken, &[]);
    assert_ne!(s.port, taken, "baton could not bind the taken port, so it must be serving on another");
    let mut t = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    write!(t, "GET /metrics/prometheus HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    t.read_to_string(&mut out).unwrap();
    assert!(out.contains("baton_"), "the port the harness reports is served by our baton: {out}");
}

/// A killed server's ports are kept for its restart (`common::PortHold`): while it is down the
/// kernel counts them as in use, so neither another bind(0) nor a client's ephemeral source
/// port can take them (before, either could, and the restart on the old port then failed),
/// and a client is refused as by any stopped server; the restart binds them, the Kafka port
/// given in the flags too, and once it is up they are let go.
///
/// "In use" is checked with a bind without SO_REUSEADDR: the kernel's search for a free port
/// (bind(0), connect) applies that same rule, ignoring SO_REUSEADDR. The HTTP port may also be
/// in use through TIME_WAIT (the server closed the health probe's connection first); the
/// Kafka port, never connected to before the first kill, is the one the check rests on.
#[test]
fn a_killed_servers_ports_are_kept_for_its_restart() {
    let kafka = common::free_port();
    let kafka_addr = format!("127.0.0.1:{kafka}");
    let mut s = Server::start_with(&["--kafka-addr", &kafka_addr]);
    for round in 0..2 {
        if round == 0 {
            s.kill9();
        } else {
            s.terminate();
        }
        for port in [s.port, kafka] {
            assert!(!bindable(port), "port {port} could be taken while baton was down");
            let refused = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap_err();
            assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused, "port {port} while baton is down");
        }
        s.restart();
        assert!(std::net::TcpStream::connect(("127.0.0.1", kafka)).is_ok(), "the Kafka listener is back on {kafka}");
    }
}

/// Whether a socket without SO_REUSEADDR can bind this loopback port now.
fn bindable(port: u16) -> bool {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    s.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], port)).into()).is_ok()
}

/// The same for the checker's broker (`baton check --spawn` kills and restarts one).
#[test]
fn the_checkers_killed_broker_keeps_its_ports_too() {
    let kafka = common::free_port();
    let kafka_addr = format!("127.0.0.1:{kafka}");
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_baton"));
    let mut b = baton_check::broker::Broker::start_with(Some(bin), &["--kafka-addr", &kafka_addr]).unwrap();
    b.kill9();
    for port in [b.port, kafka] {
        assert!(!bindable(port), "port {port} could be taken while the broker was down");
    }
    b.restart().unwrap();
    assert!(std::net::TcpStream::connect(("127.0.0.1", kafka)).is_ok(), "the Kafka listener is back on {kafka}");
}
