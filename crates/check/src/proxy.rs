//! A TCP proxy for one directed link between two cluster members, that a test can cut, slow
//! or make flaky while traffic flows: the network faults of issue 14 without root or
//! namespaces, on loopback only.
//!
//! Owns its listener and every connection through it. Cut closes the connections it carries
//! and closes each new one at once (the dialer sees the peer as unreachable); Delay holds each
//! chunk for a while before forwarding it; Flaky closes a connection at a chunk with a given
//! chance (a TCP stream cannot lose bytes and stay a stream, so a lost message is a lost
//! connection). Must never forward bytes out of order, or keep running after it is dropped.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Link {
    Open,
    Cut,
    Delay(Duration),
    /// Each chunk closes its connection with this chance (0.0..=1.0).
    Flaky(f64),
}

pub struct Proxy {
    pub addr: SocketAddr,
    mode: watch::Sender<Link>,
    accept: JoinHandle<()>,
    /// Chunks forwarded, both ways, for tests that want to see traffic moved.
    pub chunks: Arc<AtomicU64>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Proxy> {
        Self::start_on("127.0.0.1:0".parse().expect("a loopback address"), upstream).await
    }

    /// Listens on `listen` and forwards to `upstream`: a test that dropped a proxy (so that
    /// connecting to it is refused) brings the link back at the same address.
    pub async fn start_on(listen: SocketAddr, upstream: SocketAddr) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let (mode, watch_rx) = watch::channel(Link::Open);
        let chunks = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&chunks);
        let accept = tokio::spawn(async move {
            let seed = AtomicU64::new(addr.port() as u64 | 1);
            while let Ok((down, _)) = listener.accept().await {
                let link = *watch_rx.borrow();
                if link == Link::Cut {
                    drop(down);
                    continue;
                }
                let rx = watch_rx.clone();
                let counted = Arc::clone(&counted);
                let seed = seed.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
                tokio::spawn(async move {
                    let Ok(up) = TcpStream::connect(upstream).await else { return };
                    let _ = down.set_nodelay(true);
                    let _ = up.set_nodelay(true);
                    let (dr, dw) = down.into_split();
                    let (ur, uw) = up.into_split();
                    let a = pump(dr, uw, rx.clone(), Arc::clone(&counted), seed);
                    let b = pump(ur, dw, rx, counted, seed.rotate_left(17));
                    // Either direction ending (or being cut) ends the connection.
                    tokio::select! {
                        _ = a => {}
                        _ = b => {}
                    }
                });
            }
        });
        Ok(Proxy { addr, mode, accept, chunks })
    }

    pub fn set(&self, link: Link) {
        let _ = self.mode.send(link);
    }

    pub fn link(&self) -> Link {
        *self.mode.borrow()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        let _ = self.mode.send(Link::Cut);
    }
}

/// xorshift64: a chance per chunk, repeatable from the seed.
fn next(state: &mut u64) -> f64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut mode: watch::Receiver<Link>,
    chunks: Arc<AtomicU64>,
    mut seed: u64,
) {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = tokio::select! {
            r = from.read(&mut buf) => match r {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
            changed = mode.changed() => {
                if changed.is_err() || *mode.borrow() == Link::Cut {
                    return;
                }
                continue;
            }
        };
        let link = *mode.borrow();
        match link {
            Link::Cut => return,
            Link::Delay(d) => tokio::time::sleep(d).await,
            Link::Flaky(p) if next(&mut seed) < p => return,
            _ => {}
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
        chunks.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn echo() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                tokio::spawn(async move {
                    let mut b = [0u8; 1024];
                    while let Ok(n) = s.read(&mut b).await {
                        if n == 0 || s.write_all(&b[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        addr
    }

    async fn round_trip(addr: SocketAddr, msg: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut s = TcpStream::connect(addr).await?;
        s.write_all(msg).await?;
        let mut got = vec![0u8; msg.len()];
        tokio::time::timeout(Duration::from_secs(2), s.read_exact(&mut got))
            .await
            .map_err(|_| std::io::Error::other("timed out"))??;
        Ok(got)
    }

    #[tokio::test]
    async fn open_forwards_cut_refuses_and_closes_delay_holds() {
        let p = Proxy::start(echo().await).await.unwrap();
        assert_eq!(round_trip(p.addr, b"hello").await.unwrap(), b"hello");
        // A connection open across the cut is closed by it.
        let mut held = TcpStream::connect(p.addr).await.unwrap();
        held.write_all(b"x").await.unwrap();
        let mut one = [0u8; 1];
        held.read_exact(&mut one).await.unwrap();
        p.set(Link::Cut);
        let mut rest = [0u8; 1];
        let r = tokio::time::timeout(Duration::from_secs(2), held.read(&mut rest)).await.unwrap();
        assert!(matches!(r, Ok(0) | Err(_)), "the held connection is closed by the cut");
        assert!(round_trip(p.addr, b"again").await.is_err(), "a new connection through a cut fails");
        p.set(Link::Delay(Duration::from_millis(150)));
        let t = std::time::Instant::now();
        assert_eq!(round_trip(p.addr, b"slow").await.unwrap(), b"slow");
        assert!(t.elapsed() >= Duration::from_millis(300), "held both ways: {:?}", t.elapsed());
        p.set(Link::Flaky(1.0));
        assert!(round_trip(p.addr, b"lost").await.is_err());
        p.set(Link::Open);
        assert_eq!(round_trip(p.addr, b"healed").await.unwrap(), b"healed");
    }
}
