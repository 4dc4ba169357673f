//! Bucket leases: which buckets this relay may publish, held as Baton locks
//! `relay-bucket-<N>` (owner = relay id) and spread fairly among the live
//! relays (members of the semaphore `relay-members`). Owns acquiring,
//! renewing and releasing them, and the guard each push must carry. Must
//! never let a push and a renewal of the same lease overlap (a renewal changes
//! the token, so a push carrying the old guard would be refused for nothing):
//! the delivery round holds `state` for reading, a renewal for writing.

use crate::metrics::Metrics;
use crate::targets::Targets;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::RwLock;

const MEMBERS: &str = "relay-members";
const MEMBER_SLOTS: u32 = 1024;
/// Baton takes at most 64 operations per locks call.
const CHUNK: usize = 64;

pub fn lock_name(bucket: u32) -> String {
    format!("relay-bucket-{bucket}")
}

/// One held lease: its token and the `kv` guard a transaction carries.
#[derive(Debug, Clone)]
pub struct Held {
    pub token: Value,
    pub slot: Value,
    pub guard: Value,
}

pub struct Leases {
    baton: Arc<Targets>,
    pub relay_id: String,
    pub buckets: u32,
    lease_secs: u64,
    m: Arc<Metrics>,
    /// bucket -> lease; read-locked by a delivery round for its whole length.
    pub state: RwLock<BTreeMap<u32, Held>>,
    member: tokio::sync::Mutex<Option<Held>>,
}

impl Leases {
    pub fn new(baton: Arc<Targets>, relay_id: String, buckets: u32, lease_secs: u64, m: Arc<Metrics>) -> Leases {
        Leases {
            baton,
            relay_id,
            buckets,
            lease_secs: lease_secs.max(1),
            m,
            state: RwLock::new(BTreeMap::new()),
            member: tokio::sync::Mutex::new(None),
        }
    }

    /// Renew, count the live relays, take up to a fair share, give back extras; every lease/3.
    pub async fn maintain(self: Arc<Self>) {
        let every = Duration::from_millis(self.lease_secs * 1000 / 3).max(Duration::from_millis(200));
        loop {
            if let Err(e) = self.tick().await {
                eprintln!("baton relay {}: leases: {e}", self.relay_id);
            }
            tokio::time::sleep(every).await;
        }
    }

    async fn ops(&self, ops: Vec<Value>) -> Result<Vec<Value>, crate::Error> {
        // The calls at once: a renewal of every bucket holds the round's lock (the tokens
        // change under it), so it costs one round trip, not one per chunk.
        let calls = ops.chunks(CHUNK).map(|c| async move {
            let v = self.baton.locks(&json!({ "operations": c })).await?;
            let r = v.get("results").and_then(Value::as_array).cloned().unwrap_or_default();
            if r.len() != c.len() {
                return Err::<_, crate::Error>(format!("locks: {} operations answered {}", c.len(), r.len()).into());
            }
            Ok(r)
        });
        Ok(futures_util::future::try_join_all(calls).await?.concat())
    }

    async fn tick(&self) -> Result<(), crate::Error> {
        let live = self.membership().await?;
        self.renew().await?;
        let fair = self.buckets.div_ceil(live.max(1) as u32) as usize;
        let owned: Vec<u32> = self.state.read().await.keys().copied().collect();
        if owned.len() > fair {
            self.release(&owned[fair..]).await?;
        } else if owned.len() < fair {
            self.acquire(fair - owned.len()).await?;
        }
        let n = self.state.read().await.len();
        self.m.buckets_owned.store(n as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Hold (or renew) a permit of `relay-members`; answer how many relays hold one.
    async fn membership(&self) -> Result<usize, crate::Error> {
        let mut me = self.member.lock().await;
        let ttl = self.lease_secs;
        if let Some(h) = me.as_ref() {
            let r = self
                .ops(vec![json!({"op": "renew", "name": MEMBERS, "token": h.token, "slot": h.slot,
                    "ttlSeconds": ttl, "owner": self.relay_id})])
                .await?;
            if r[0]["renewed"] == true {
                *me = Some(Held { token: r[0]["token"].clone(), slot: r[0]["slot"].clone(), guard: Value::Null });
            } else {
                *me = None;
            }
        }
        if me.is_none() {
            let r = self
                .ops(vec![json!({"op": "acquire", "name": MEMBERS, "ttlSeconds": ttl, "owner": self.relay_id,
                    "limit": MEMBER_SLOTS})])
                .await?;
            if r[0]["acquired"] == true {
                *me = Some(Held { token: r[0]["token"].clone(), slot: r[0]["slot"].clone(), guard: Value::Null });
            }
        }
        let r = self.ops(vec![json!({"op": "get", "name": MEMBERS})]).await?;
        let mut owners: Vec<String> = r[0]["holders"]
            .as_array()
            .map(|a| a.iter().filter_map(|h| h["owner"].as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        owners.push(self.relay_id.clone());
        owners.sort();
        owners.dedup();
        Ok(owners.len())
    }

    async fn renew(&self) -> Result<(), crate::Error> {
        let mut st = self.state.write().await;
        if st.is_empty() {
            return Ok(());
        }
        let ids: Vec<u32> = st.keys().copied().collect();
        let ops = ids
            .iter()
            .map(|b| {
                let h = &st[b];
                json!({"op": "renew", "name": lock_name(*b), "token": h.token, "slot": h.slot,
                    "ttlSeconds": self.lease_secs, "owner": self.relay_id})
            })
            .collect();
        let r = self.ops(ops).await?;
        for (b, a) in ids.iter().zip(r) {
            if a["renewed"] == true {
                st.insert(*b, Held { token: a["token"].clone(), slot: a["slot"].clone(), guard: a["guard"].clone() });
            } else {
                eprintln!("baton relay {}: lost bucket {b}", self.relay_id);
                st.remove(b);
            }
        }
        Ok(())
    }

    async fn release(&self, extra: &[u32]) -> Result<(), crate::Error> {
        let mut st = self.state.write().await;
        let ops = extra
            .iter()
            .filter_map(|b| {
                st.remove(b).map(|h| json!({"op": "release", "name": lock_name(*b), "token": h.token, "slot": h.slot}))
            })
            .collect();
        self.ops(ops).await?;
        Ok(())
    }

    /// Give every bucket and the membership back (on SIGTERM / Ctrl-C; the delivery round is stopped first).
    pub async fn release_all(&self) -> Result<(), crate::Error> {
        let owned: Vec<u32> = self.state.read().await.keys().copied().collect();
        self.release(&owned).await?;
        self.m.buckets_owned.store(0, Ordering::Relaxed);
        if let Some(h) = self.member.lock().await.take() {
            self.ops(vec![json!({"op": "release", "name": MEMBERS, "token": h.token, "slot": h.slot})]).await?;
        }
        Ok(())
    }

    /// Take up to `want` buckets nobody holds, starting at a place that depends on the relay
    /// id. A bucket held under this relay's own id is taken too: that is this relay before a
    /// restart (kill -9, then the service manager), and acquiring it again answers the same
    /// permit at once instead of after the lease. The relay id is the fencing identity:
    /// two live relays must not share one (docs/relay.md).
    async fn acquire(&self, want: usize) -> Result<(), crate::Error> {
        let start = self.relay_id.bytes().fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32)) % self.buckets;
        let owned: Vec<u32> = self.state.read().await.keys().copied().collect();
        let order: Vec<u32> =
            (0..self.buckets).map(|i| (start + i) % self.buckets).filter(|b| !owned.contains(b)).collect();
        let got = self.ops(order.iter().map(|b| json!({"op": "get", "name": lock_name(*b)})).collect()).await?;
        let mine = |g: &Value| {
            g["holders"].as_array().is_some_and(|h| !h.is_empty() && h.iter().all(|h| h["owner"] == self.relay_id))
        };
        let free: Vec<u32> =
            order.iter().zip(got).filter(|(_, g)| g["held"] != true || mine(g)).map(|(b, _)| *b).take(want).collect();
        if free.is_empty() {
            return Ok(());
        }
        let ops = free
            .iter()
            .map(|b| json!({"op": "acquire", "name": lock_name(*b), "ttlSeconds": self.lease_secs, "owner": self.relay_id}))
            .collect();
        let r = self.ops(ops).await?;
        let mut st = self.state.write().await;
        for (b, a) in free.iter().zip(r) {
            if a["acquired"] == true {
                st.insert(*b, Held { token: a["token"].clone(), slot: a["slot"].clone(), guard: a["guard"].clone() });
            }
        }
        Ok(())
    }

    /// The bucket lock holders, for `baton relay status`.
    pub async fn holders(baton: &Targets, buckets: u32) -> Result<Value, crate::Error> {
        let mut out = serde_json::Map::new();
        let names: Vec<Value> = (0..buckets).map(|b| json!({"op": "get", "name": lock_name(b)})).collect();
        for (i, c) in names.chunks(CHUNK).enumerate() {
            let v = baton.locks(&json!({ "operations": c })).await?;
            for (j, r) in v["results"].as_array().cloned().unwrap_or_default().into_iter().enumerate() {
                if let Some(o) = r["holders"].as_array().and_then(|h| h.first()).and_then(|h| h["owner"].as_str()) {
                    out.insert(((i * CHUNK + j) as u32).to_string(), json!(o));
                }
            }
        }
        Ok(Value::Object(out))
    }
}
