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
    let bytes = r.bytes().await.map_err(|e| e.to_string())?;
    if bytes.len() > MAX_ABOUT_BYTES {
        return Err(format!("the answer is over {MAX_ABOUT_BYTES} bytes"));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("the answer is not a map of strings: {e}"))
}
