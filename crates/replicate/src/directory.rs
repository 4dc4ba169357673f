//! What members say about themselves (D42): each serves `GET /raft/about` on its Raft port,
//! a small map of the addresses its clients use (`http`, `kafka`), and each keeps a copy of
//! every other member's, refreshed in the background.
//!
//! Owns the copies and their refresh. The membership knows only Raft addresses; a member
//! that forwards an HTTP request to the leader, or names the leader's Kafka listener in a
//! Metadata answer, reads the leader's entry here. Must never block a caller on the network
//! (lookups read the last copy) and never hold more than `MAX_ABOUT_BYTES` of any answer.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use tokio::task::JoinHandle;

use crate::network::Routes;
use crate::{NodeId, Raft};

/// A member's own addresses by name (`http`, `kafka`).
pub type About = BTreeMap<String, String>;

/// The longest `/raft/about` answer read; a longer one is refused.
pub const MAX_ABOUT_BYTES: usize = 4096;

/// How often members are asked: an unknown member every `every`, a known one every tenth.
const REFRESH_EVERY: Duration = Duration::from_millis(500);

#[derive(Clone, Default)]
pub struct Directory(Arc<RwLock<BTreeMap<NodeId, About>>>);

impl Directory {
    /// The last copy of `id`'s entry (this member's own included).
    pub fn get(&self, id: NodeId) -> Option<About> {
        self.0.read().get(&id).cloned()
    }

    /// `name` in `id`'s entry.
    pub fn addr(&self, id: NodeId, name: &str) -> Option<String> {
        self.0.read().get(&id).and_then(|a| a.get(name).cloned())
    }

    pub fn all(&self) -> BTreeMap<NodeId, About> {
        self.0.read().clone()
    }

    pub(crate) fn set(&self, id: NodeId, about: About) {
        self.0.write().insert(id, about);
    }

    /// Asks every other member of the membership in effect, until `raft` stops.
    pub(crate) fn refresh(&self, me: NodeId, raft: Raft, routes: Routes) -> JoinHandle<()> {
        let dir = self.clone();
        tokio::spawn(async move {
            let client = reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(1))
                .timeout(Duration::from_secs(2))
                .build()
                .expect("a plain HTTP client builds");
            let mut round = 0u64;
            loop {
                let members: Vec<(NodeId, String)> = {
                    let m = raft.metrics().borrow().membership_config.clone();
                    m.membership().nodes().map(|(id, n)| (*id, n.addr.clone())).collect()
                };
                for (id, addr) in members.into_iter().filter(|(id, _)| *id != me) {
                    if dir.0.read().contains_key(&id) && !round.is_multiple_of(10) {
                        continue;
                    }
                    let addr = routes.read().get(&id).cloned().unwrap_or(addr);
                    match ask(&client, &addr).await {
                        Ok(about) => dir.set(id, about),
                        Err(e) => tracing::debug!(member = id, %addr, error = %e, "raft/about: no answer"),
                    }
                }
                round += 1;
                tokio::time::sleep(REFRESH_EVERY).await;
            }
        })
    }
}

async fn ask(client: &reqwest::Client, addr: &str) -> Result<About, String> {
    let r = client.get(format!("http://{addr}/raft/about")).send().await.map_err(|e| e.to_string())?;
    if !r.status().is_success() {
        return Err(format!("status {}", r.status()));
    }
    if r.content_length().is_some_and(|n| n > MAX_ABOUT_BYTES as u64) {
        return Err(format!("the answer is over {MAX_ABOUT_BYTES} bytes"));
    }
    // Read chunk by chunk: an undeclared (chunked) body is cut at the bound, never buffered whole.
    let mut r = r;
    let mut bytes = Vec::new();
    while let Some(chunk) = r.chunk().await.map_err(|e| e.to_string())? {
        if bytes.len() + chunk.len() > MAX_ABOUT_BYTES {
            return Err(format!("the answer is over {MAX_ABOUT_BYTES} bytes"));
        }
        bytes.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("the answer is not a map of strings: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A peer that answers `/raft/about` without a declared length: `body` whole, or (with
    /// `chunks` > 0) that many 64 KiB chunks of padding and then never the end.
    async fn peer(chunks: usize, body: &'static str) -> String {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).await;
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n").await;
            if chunks == 0 {
                let _ = s.write_all(format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len()).as_bytes()).await;
                return;
            }
            let chunk = vec![b' '; 64 << 10];
            for _ in 0..chunks {
                let head = format!("{:x}\r\n", chunk.len());
                if s.write_all(head.as_bytes()).await.is_err()
                    || s.write_all(&chunk).await.is_err()
                    || s.write_all(b"\r\n").await.is_err()
                {
                    return;
                }
            }
            tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        });
        addr
    }

    #[tokio::test]
    async fn an_undeclared_answer_over_the_bound_is_refused_unread() {
        let c = reqwest::Client::new();
        let addr = peer(0, r#"{"http":"127.0.0.1:6641"}"#).await;
        assert_eq!(ask(&c, &addr).await.unwrap().get("http").map(String::as_str), Some("127.0.0.1:6641"));
        // Past the bound, and the rest never comes: refused at the bound, not read to the end.
        let addr = peer(2, "").await;
        let e = tokio::time::timeout(std::time::Duration::from_secs(5), ask(&c, &addr))
            .await
            .expect("refused at the bound, without waiting for the end of the body")
            .unwrap_err();
        assert!(e.contains("over 4096 bytes"), "{e}");
    }
}
