//! Kafka mode's bucket leases, kept in PostgreSQL (D58): there may be no Baton
//! at all (Apache Kafka), so ownership lives beside the outbox, in
//! `<table>_leases` (bucket, owner, expires_at) and `<table>_members`
//! (relay_id, expires_at). Owns joining, counting the live relays, taking a
//! fair share with a compare-and-set UPDATE, renewing every lease/3 and giving
//! back extras. Must never be what keeps two relays from publishing one bucket:
//! a lease here only spreads the work; the fence is the Kafka epoch of the
//! bucket's transactional id (kafka_out.rs), which a taker bumps.

use crate::metrics::Metrics;
use crate::schema::Names;
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, RwLock};

pub struct PgLeases {
    target: crate::pg::Pg,
    names: Names,
    pub relay_id: String,
    pub buckets: u32,
    lease_secs: u64,
    m: Arc<Metrics>,
    /// The buckets this relay holds, as of the last tick.
    pub state: RwLock<BTreeSet<u32>>,
    pg: Mutex<Option<tokio_postgres::Client>>,
}

impl PgLeases {
    pub fn new(
        target: crate::pg::Pg,
        names: Names,
        relay_id: String,
        buckets: u32,
        lease_secs: u64,
        m: Arc<Metrics>,
    ) -> PgLeases {
        PgLeases {
            target,
            names,
            relay_id,
            buckets,
            lease_secs: lease_secs.max(1),
            m,
            state: RwLock::new(BTreeSet::new()),
            pg: Mutex::new(None),
        }
    }

    /// Join, renew, take up to a fair share, give back extras; every lease/3.
    pub async fn maintain(self: Arc<Self>) {
        let every = Duration::from_millis(self.lease_secs * 1000 / 3).max(Duration::from_millis(200));
        loop {
            if let Err(e) = self.tick().await {
                eprintln!("baton relay {}: leases: {e}", self.relay_id);
                // A failed tick may have left the connection unusable: the next tick reconnects.
                *self.pg.lock().await = None;
            }
            tokio::time::sleep(every).await;
        }
    }

    async fn client(&self) -> Result<tokio::sync::MutexGuard<'_, Option<tokio_postgres::Client>>, crate::Error> {
        let mut g = self.pg.lock().await;
        if g.as_ref().is_none_or(|c| c.is_closed()) {
            *g = Some(self.target.connect().await?);
        }
        Ok(g)
    }

    async fn tick(&self) -> Result<(), crate::Error> {
        let g = self.client().await?;
        let pg = g.as_ref().ok_or("no postgres connection")?;
        let (l, mtab) = (self.names.leases(), self.names.members());
        let ttl = self.lease_secs as f64;
        pg.execute(
            &format!(
                "INSERT INTO {mtab} (relay_id, expires_at) VALUES ($1, now() + make_interval(secs => $2)) \
                 ON CONFLICT (relay_id) DO UPDATE SET expires_at = EXCLUDED.expires_at"
            ),
            &[&self.relay_id, &ttl],
        )
        .await?;
        let live: i64 =
            pg.query_one(&format!("SELECT count(*) FROM {mtab} WHERE expires_at > now()"), &[]).await?.get(0);
        // Renew what is still ours: a bucket someone took after our lease ran out is lost.
        let mut st = self.state.write().await;
        let owned: Vec<i32> = st.iter().map(|b| *b as i32).collect();
        let kept = pg
            .query(
                &format!(
                    "UPDATE {l} SET expires_at = now() + make_interval(secs => $2) \
                     WHERE owner = $1 AND bucket = ANY($3) RETURNING bucket"
                ),
                &[&self.relay_id, &ttl, &owned],
            )
            .await?;
        let kept: BTreeSet<u32> = kept.iter().map(|r| r.get::<_, i32>(0) as u32).collect();
        for b in st.difference(&kept) {
            eprintln!("baton relay {}: lost bucket {b}", self.relay_id);
        }
        *st = kept;
        let fair = self.buckets.div_ceil(live.max(1) as u32) as usize;
        if st.len() > fair {
            let extra: Vec<i32> = st.iter().skip(fair).map(|b| *b as i32).collect();
            pg.execute(
                &format!("UPDATE {l} SET owner = NULL, expires_at = '-infinity' WHERE owner = $1 AND bucket = ANY($2)"),
                &[&self.relay_id, &extra],
            )
            .await?;
            for b in extra {
                st.remove(&(b as u32));
            }
        } else if st.len() < fair {
            let want = (fair - st.len()) as i64;
            let kept_now: Vec<i32> = st.iter().map(|b| *b as i32).collect();
            // Compare-and-set: a bucket is taken only if it is free, its lease ran out, or it
            // is held under this relay's id (this relay before a restart: it takes its own
            // back at once, and the new producer epoch fences anything left of the old one),
            // checked again by the UPDATE itself (SKIP LOCKED keeps two takers apart).
            let got = pg
                .query(
                    &format!(
                        "UPDATE {l} SET owner = $1, expires_at = now() + make_interval(secs => $2) \
                         WHERE bucket IN (SELECT bucket FROM {l} WHERE (owner IS NULL OR expires_at < now() OR owner = $1) \
                           AND NOT bucket = ANY($4) ORDER BY bucket LIMIT $3 FOR UPDATE SKIP LOCKED) \
                         AND (owner IS NULL OR expires_at < now() OR owner = $1) RETURNING bucket"
                    ),
                    &[&self.relay_id, &ttl, &want, &kept_now],
                )
                .await?;
            st.extend(got.iter().map(|r| r.get::<_, i32>(0) as u32));
        }
        self.m.buckets_owned.store(st.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Give every bucket and the membership back (on SIGTERM / Ctrl-C).
    pub async fn release_all(&self) -> Result<(), crate::Error> {
        let g = self.client().await?;
        let pg = g.as_ref().ok_or("no postgres connection")?;
        pg.execute(
            &format!("UPDATE {} SET owner = NULL, expires_at = '-infinity' WHERE owner = $1", self.names.leases()),
            &[&self.relay_id],
        )
        .await?;
        pg.execute(&format!("DELETE FROM {} WHERE relay_id = $1", self.names.members()), &[&self.relay_id]).await?;
        self.state.write().await.clear();
        self.m.buckets_owned.store(0, Ordering::Relaxed);
        Ok(())
    }

    /// The live lease holders (bucket -> owner), for `baton relay status`.
    pub async fn holders(pg: &tokio_postgres::Client, names: &Names) -> Result<serde_json::Value, crate::Error> {
        let rows = pg
            .query(
                &format!(
                    "SELECT bucket, owner FROM {} WHERE owner IS NOT NULL AND expires_at > now() ORDER BY bucket",
                    names.leases()
                ),
                &[],
            )
            .await?;
        let mut out = serde_json::Map::new();
        for r in rows {
            out.insert(r.get::<_, i32>(0).to_string(), serde_json::json!(r.get::<_, String>(1)));
        }
        Ok(serde_json::Value::Object(out))
    }
}
