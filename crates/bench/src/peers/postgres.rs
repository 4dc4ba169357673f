//! PostgreSQL as a queue: a table per queue, `SELECT ... FOR UPDATE SKIP
//! LOCKED` to take rows, `DELETE` + `COMMIT` to ack them; and the pipeline
//! step as one SQL transaction ([`PipelineTarget`]).
//!
//! Mapping. A queue is one table (`bench_<queue>`) with a `part` column:
//! partitions are a column, not separate tables. Produce is one `INSERT` of
//! the batch (autocommit: one commit). Consume is the well-known SKIP LOCKED
//! pattern: `BEGIN; SELECT id ... ORDER BY id FOR UPDATE SKIP LOCKED LIMIT n`
//! on a connection that stays checked out (its open transaction holds the row
//! locks — the lease); ack is `DELETE ... WHERE id = ANY(..); COMMIT` on that
//! connection. A consumer that dies rolls back and its rows come back.
//! Consume polls (PostgreSQL has no blocking read here) every 5 ms up to the
//! wait time. Order: any, not FIFO per partition (SKIP LOCKED hands rows of
//! one partition to several consumers at once). No dedup by txid.
//!
//! Pipeline: tables `<name>_in`, `<name>_out` and `<name>_parts` (one row per
//! partition). A step is one transaction: lock one partition that has inputs
//! (`SELECT ... FROM _parts ... FOR UPDATE SKIP LOCKED LIMIT 1`), take its
//! oldest B inputs, INSERT their outputs, DELETE them, COMMIT. Holding the
//! partition row lock keeps one worker per partition, so outputs of a
//! partition are stored in feed order (FIFO per partition, like Baton's
//! partition lease), at the cost of at most one worker per partition.
//!
//! "ok": a COMMIT is answered after its WAL record is fsync'd (default
//! `fsync=on`, `synchronous_commit=on`; concurrent commits share a flush).

use crate::pipeline::{Output, PipelineTarget};
use crate::target::{BenchError, Delivery, Msg, Result, Target};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio_postgres::NoTls;

/// What scripts/peers/postgres.sh starts.
pub const DEFAULT_ADDR: &str = "host=127.0.0.1 port=55432 user=postgres dbname=postgres";

pub const ACK_MEANING: &str = "COMMIT (of the INSERT, of the DELETE) is answered after its WAL record is fsync'd \
     (fsync=on, synchronous_commit=on; concurrent commits share one flush); single node, not replicated";

pub struct Postgres {
    pool: Pool,
    wait: Duration,
    table: OnceLock<String>,
    pipe: OnceLock<PipeTables>,
    /// Connections whose open transaction holds consumed rows, by lease number.
    held: Mutex<HashMap<u64, Object>>,
    next_lease: AtomicU64,
    next_part: AtomicU64,
}

struct PipeTables {
    input: String,
    output: String,
    parts: String,
    partitions: u32,
}

fn pg_err(what: &str) -> impl Fn(tokio_postgres::Error) -> BenchError + '_ {
    move |e| {
        // The server's message is in the source (a DbError), not in Display.
        let detail = e.as_db_error().map(|d| format!(": {}", d.message())).unwrap_or_default();
        BenchError(format!("postgres {what}: {e}{detail}"))
    }
}

/// A table name from a queue name: letters, digits and `_`; quoted when used.
fn ident(prefix: &str, name: &str) -> Result<String> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) {
        return Err(BenchError(format!("queue name {name:?}: use letters, digits, '.', '_', '-'")));
    }
    let s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    // PostgreSQL truncates identifiers at 63 bytes; keep room for suffixes.
    Ok(format!("\"{prefix}{}\"", &s[..s.len().min(50)]))
}

fn suffixed(table: &str, suffix: &str) -> String {
    format!("{}{suffix}\"", table.trim_end_matches('"'))
}

/// Stay under PostgreSQL's default connection limit.
const MAX_CONNECTIONS: usize = 90;

impl Postgres {
    /// `addr`: a libpq-style connection string; `pool` = most connections.
    pub async fn connect(addr: &str, pool: usize, wait_ms: u64) -> Result<Postgres> {
        let cfg: tokio_postgres::Config = addr.parse().map_err(|e| BenchError(format!("--addr {addr:?}: {e}")))?;
        let mgr = Manager::from_config(cfg, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        // A consume holds its connection until its ack: room for every worker
        // holding one while the others produce, but never more than the
        // server's default `max_connections` (100, 3 kept for superusers)
        // allows; past it, callers wait for a free connection instead of
        // failing with "too many clients".
        let pool = Pool::builder(mgr)
            .max_size((pool.max(1) * 2).min(MAX_CONNECTIONS))
            .build()
            .map_err(|e| BenchError(format!("postgres pool: {e}")))?;
        let pg = Postgres {
            pool,
            wait: Duration::from_millis(wait_ms),
            table: OnceLock::new(),
            pipe: OnceLock::new(),
            held: Mutex::new(HashMap::new()),
            next_lease: AtomicU64::new(0),
            next_part: AtomicU64::new(0),
        };
        drop(
            pg.client()
                .await
                .map_err(|e| BenchError(format!("{e} (is it running? scripts/peers/postgres.sh start)")))?,
        );
        Ok(pg)
    }

    async fn client(&self) -> Result<Object> {
        self.pool.get().await.map_err(|e| BenchError(format!("postgres connection: {e}")))
    }

    fn table(&self) -> Result<&str> {
        self.table.get().map(|s| s.as_str()).ok_or_else(|| BenchError("setup() was not called".into()))
    }

    fn pipe(&self) -> Result<&PipeTables> {
        self.pipe.get().ok_or_else(|| BenchError("pipeline setup() was not called".into()))
    }

    /// INSERT a batch of one partition, keeping the batch order in `id`.
    async fn insert(&self, c: &Object, table: &str, batch: &[Msg]) -> Result<()> {
        let part = batch.first().map_or(0, |m| m.partition as i32);
        let txids: Vec<&str> = batch.iter().map(|m| m.txid.as_str()).collect();
        let payloads: Vec<&[u8]> = batch.iter().map(|m| &m.payload[..]).collect();
        let sql = format!(
            "INSERT INTO {table} (part, txid, payload) SELECT $1, t, p \
             FROM unnest($2::text[], $3::bytea[]) WITH ORDINALITY AS u(t, p, o) ORDER BY o"
        );
        let st = c.prepare_cached(&sql).await.map_err(pg_err("prepare insert"))?;
        let n = c.execute(&st, &[&part, &txids, &payloads]).await.map_err(pg_err("insert"))?;
        if n != batch.len() as u64 {
            return Err(BenchError(format!("postgres insert: {n} of {} rows", batch.len())));
        }
        Ok(())
    }
}

impl Target for Postgres {
    fn system(&self) -> &'static str {
        "postgres"
    }

    async fn setup(&self, queue: &str, _partitions: u32) -> Result<()> {
        let table = ident("bench_", queue)?;
        let c = self.client().await?;
        c.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {table} (id bigserial PRIMARY KEY, part int NOT NULL, \
             txid text NOT NULL, payload bytea NOT NULL)"
        ))
        .await
        .map_err(pg_err("create table"))?;
        let _ = self.table.set(table);
        Ok(())
    }

    async fn produce(&self, batch: Vec<Msg>) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let table = self.table()?;
        let c = self.client().await?;
        self.insert(&c, table, &batch).await
    }

    async fn consume(&self, max: usize) -> Result<Vec<Delivery>> {
        let table = self.table()?;
        let c = self.client().await?;
        let sql = format!("SELECT id, part, txid FROM {table} ORDER BY id FOR UPDATE SKIP LOCKED LIMIT $1");
        let st = c.prepare_cached(&sql).await.map_err(pg_err("prepare select"))?;
        let deadline = Instant::now() + self.wait;
        loop {
            c.batch_execute("BEGIN").await.map_err(pg_err("begin"))?;
            let rows = match c.query(&st, &[&(max.max(1) as i64)]).await {
                Ok(r) => r,
                Err(e) => {
                    let _ = c.batch_execute("ROLLBACK").await;
                    return Err(pg_err("select for update")(e));
                }
            };
            if rows.is_empty() {
                c.batch_execute("ROLLBACK").await.map_err(pg_err("rollback"))?;
                if Instant::now() >= deadline {
                    return Ok(Vec::new());
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
            let lease = self.next_lease.fetch_add(1, Ordering::Relaxed);
            let out = rows
                .iter()
                .map(|r| Delivery {
                    partition: r.get::<_, i32>(1).to_string(),
                    txid: r.get(2),
                    lease: Some(format!("{lease}/{}", r.get::<_, i64>(0))),
                })
                .collect();
            self.held.lock().expect("held lock").insert(lease, c);
            return Ok(out);
        }
    }

    async fn ack(&self, deliveries: Vec<Delivery>) -> Result<()> {
        let table = self.table()?;
        let mut lease = None;
        let mut ids = Vec::with_capacity(deliveries.len());
        for d in &deliveries {
            let (l, id) = d
                .lease
                .as_deref()
                .and_then(|s| s.split_once('/'))
                .and_then(|(l, id)| Some((l.parse::<u64>().ok()?, id.parse::<i64>().ok()?)))
                .ok_or_else(|| BenchError(format!("postgres ack: bad lease {:?}", d.lease)))?;
            if *lease.get_or_insert(l) != l {
                return Err(BenchError("postgres ack: deliveries of several consumes in one ack".into()));
            }
            ids.push(id);
        }
        let Some(lease) = lease else { return Ok(()) };
        let c = self
            .held
            .lock()
            .expect("held lock")
            .remove(&lease)
            .ok_or_else(|| BenchError(format!("postgres ack: lease {lease} is not held")))?;
        let st = c
            .prepare_cached(&format!("DELETE FROM {table} WHERE id = ANY($1)"))
            .await
            .map_err(pg_err("prepare delete"))?;
        let n = match c.execute(&st, &[&ids]).await {
            Ok(n) => n,
            Err(e) => {
                let _ = c.batch_execute("ROLLBACK").await;
                return Err(pg_err("delete")(e));
            }
        };
        c.batch_execute("COMMIT").await.map_err(pg_err("commit"))?;
        if n != ids.len() as u64 {
            return Err(BenchError(format!("postgres ack: deleted {n} of {} rows", ids.len())));
        }
        Ok(())
    }

    fn ack_meaning(&self) -> &'static str {
        ACK_MEANING
    }
}

impl PipelineTarget for Postgres {
    fn system(&self) -> &'static str {
        "postgres"
    }

    fn ack_meaning(&self) -> &'static str {
        ACK_MEANING
    }

    fn fifo_per_partition(&self) -> bool {
        true
    }

    async fn setup(&self, name: &str, partitions: u32) -> Result<()> {
        let base = ident("pipe_", name)?;
        let t = PipeTables {
            input: suffixed(&base, "_in"),
            output: suffixed(&base, "_out"),
            parts: suffixed(&base, "_parts"),
            partitions: partitions.max(1),
        };
        let c = self.client().await?;
        c.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {i} (id bigserial PRIMARY KEY, part int NOT NULL, txid text NOT NULL, \
               payload bytea NOT NULL);
             CREATE INDEX IF NOT EXISTS {idx} ON {i} (part, id);
             CREATE TABLE IF NOT EXISTS {o} (id bigserial PRIMARY KEY, part int NOT NULL, txid text NOT NULL, \
               payload bytea NOT NULL);
             CREATE TABLE IF NOT EXISTS {p} (part int PRIMARY KEY);
             INSERT INTO {p} SELECT generate_series(0, {last}) ON CONFLICT DO NOTHING;",
            i = t.input,
            o = t.output,
            p = t.parts,
            idx = suffixed(&base, "_in_part"),
            last = t.partitions - 1,
        ))
        .await
        .map_err(pg_err("create pipeline tables"))?;
        let _ = self.pipe.set(t);
        Ok(())
    }

    async fn feed(&self, batch: Vec<Msg>) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let t = self.pipe()?;
        let c = self.client().await?;
        self.insert(&c, &t.input, &batch).await
    }

    async fn step(&self, max: usize) -> Result<usize> {
        let t = self.pipe()?;
        let c = self.client().await?;
        // Start the search at a rotating partition so workers spread out.
        let from = (self.next_part.fetch_add(1, Ordering::Relaxed) % t.partitions as u64) as i32;
        let lock_part = c
            .prepare_cached(&format!(
                "SELECT p.part FROM {p} p WHERE EXISTS (SELECT 1 FROM {i} i WHERE i.part = p.part) \
                 ORDER BY (p.part - $1 + {n}) % {n} FOR UPDATE OF p SKIP LOCKED LIMIT 1",
                p = t.parts,
                i = t.input,
                n = t.partitions
            ))
            .await
            .map_err(pg_err("prepare lock partition"))?;
        let take = c
            .prepare_cached(&format!("SELECT id, txid, payload FROM {} WHERE part = $1 ORDER BY id LIMIT $2", t.input))
            .await
            .map_err(pg_err("prepare take"))?;
        let put = c
            .prepare_cached(&format!(
                "INSERT INTO {} (part, txid, payload) SELECT $1, t, p \
                 FROM unnest($2::text[], $3::bytea[]) WITH ORDINALITY AS u(t, p, o) ORDER BY o",
                t.output
            ))
            .await
            .map_err(pg_err("prepare put"))?;
        let del = c
            .prepare_cached(&format!("DELETE FROM {} WHERE id = ANY($1)", t.input))
            .await
            .map_err(pg_err("prepare delete"))?;

        c.batch_execute("BEGIN").await.map_err(pg_err("begin"))?;
        let body = async {
            let Some(row) = c.query_opt(&lock_part, &[&from]).await.map_err(pg_err("lock partition"))? else {
                return Ok(0usize);
            };
            let part: i32 = row.get(0);
            // The partition lock makes this worker the only one taking from it.
            let rows = c.query(&take, &[&part, &(max.max(1) as i64)]).await.map_err(pg_err("take"))?;
            let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
            let txids: Vec<&str> = rows.iter().map(|r| r.get(1)).collect();
            let payloads: Vec<&[u8]> = rows.iter().map(|r| r.get(2)).collect();
            // Outputs and consumption go out together (tokio-postgres pipelines them).
            let (put_n, del_n) =
                futures_util::future::try_join(c.execute(&put, &[&part, &txids, &payloads]), c.execute(&del, &[&ids]))
                    .await
                    .map_err(pg_err("write outputs and delete inputs"))?;
            if put_n != ids.len() as u64 || del_n != ids.len() as u64 {
                return Err(BenchError(format!(
                    "postgres step: {put_n} outputs and {del_n} deletes for {} inputs",
                    ids.len()
                )));
            }
            Ok(ids.len())
        };
        match body.await {
            Ok(0) => {
                c.batch_execute("ROLLBACK").await.map_err(pg_err("rollback"))?;
                // Every partition with work is locked by another worker (or
                // none has work): do not spin on the server.
                tokio::time::sleep(Duration::from_millis(2)).await;
                Ok(0)
            }
            Ok(n) => {
                c.batch_execute("COMMIT").await.map_err(pg_err("commit"))?;
                Ok(n)
            }
            Err(e) => {
                let _ = c.batch_execute("ROLLBACK").await;
                Err(e)
            }
        }
    }

    async fn outputs(&self) -> Result<Vec<Output>> {
        let t = self.pipe()?;
        let c = self.client().await?;
        let rows = c
            .query(&format!("SELECT part, txid FROM {} ORDER BY part, id", t.output), &[])
            .await
            .map_err(pg_err("read outputs"))?;
        Ok(rows.iter().map(|r| Output { partition: r.get::<_, i32>(0) as u32, txid: r.get(1) }).collect())
    }

    async fn remaining_inputs(&self) -> Result<Vec<String>> {
        let t = self.pipe()?;
        let c = self.client().await?;
        let rows = c.query(&format!("SELECT txid FROM {}", t.input), &[]).await.map_err(pg_err("read inputs"))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }
}
