//! The test harness itself: a server's health must be its own. CI once saw a
//! test's server fail to bind a port another test's server had just taken,
//! while the health probe, answered by that other server, reported it ready.

mod common;
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
